package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
)

// The call-path measurements compare three contenders, each a way for a
// host to call a tool of one stdio server:
//
//   - direct: a go-sdk client of the server in the test process (no host
//     protocol, no process in between);
//   - floor: the Go host (hostclient, the host protocol's framing) through
//     the floor relay process (floorrelay/: frames in, lines out): the
//     least any process between host and server costs;
//   - sidecar: the same Go host through a sidecar process with the server
//     configured.
//
// The sidecar's goals are ratios to the floor measured in the same run,
// with every contender speaking the same MCP version to the server (the
// one the sidecar agrees on with it): the modern protocol costs more per
// call (each request's _meta, larger results), whoever speaks it.
var contenderNames = []string{"direct", "floor", "sidecar"}

// The MCP versions of the call path's rows.
const (
	modernVersion = "2026-07-28"
	legacyVersion = "2025-11-25"
)

// contender calls tools of one server.
type contender interface {
	// callTool calls the tool by its name on the server and returns the
	// result as the host received it (direct: nil).
	callTool(tool string, args json.RawMessage) (json.RawMessage, error)
	// pid is the process between host and server; 0 for direct.
	pid() int
	// stop ends the contender and its server (also done at cleanup).
	stop()
}

// startContender starts the named contender for the server cfg, speaking
// MCP version to it (the sidecar: as cfg says, which must come to the
// same version).
func startContender(tb testing.TB, name string, cfg *config.ServerConfig, version string) contender {
	tb.Helper()
	switch name {
	case "direct":
		return directContender{startDirectAt(tb, cfg, version)}
	case "floor":
		return startFloor(tb, cfg, version)
	case "sidecar":
		h := startHost(tb, hostOptions{process: true})
		// The other contenders relay results whole: so does this one (a
		// result over the tool output limit would otherwise be cut and
		// written to a file, which is not relaying).
		h.initialize(map[string]*config.ServerConfig{cfg.Name: cfg}, map[string]bool{"mcp_tool_output_limit": false}, "")
		sess, _ := h.open("eager", nil)
		var status struct {
			Servers []struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"servers"`
		}
		h.mustCall("servers/status", map[string]any{"sessionId": sess}, &status)
		for _, s := range status.Servers {
			if s.Name == cfg.Name && s.ProtocolVersion != version {
				tb.Fatalf("the sidecar speaks %s to %s, not %s: the contenders would not compare like with like", s.ProtocolVersion, cfg.Name, version)
			}
		}
		return sidecarContender{h: h, sess: sess, server: cfg.Name}
	}
	panic("unknown contender " + name)
}

type directContender struct{ d *direct }

func (c directContender) callTool(tool string, args json.RawMessage) (json.RawMessage, error) {
	res, err := c.d.callTool(tool, args)
	if err == nil && res.IsError {
		err = fmt.Errorf("%s: isError", tool)
	}
	return nil, err
}

func (directContender) pid() int { return 0 }

func (c directContender) stop() { c.d.session.Close() }

type sidecarContender struct {
	h      *host
	sess   string
	server string
}

func (c sidecarContender) callTool(tool string, args json.RawMessage) (json.RawMessage, error) {
	return c.h.callTool(c.sess, "mcp__"+c.server+"__"+tool, args)
}

func (c sidecarContender) pid() int { return c.h.pid }

func (c sidecarContender) stop() { c.h.stop() }

// floorContender is the Go host speaking MCP itself through the floor relay.
type floorContender struct {
	hc    *hostclient.Client
	proc  int
	close func()
	// meta is the _meta of every request at 2026-07-28 (nil at an older
	// version, which has the initialize handshake instead).
	meta map[string]any
}

func (c floorContender) callTool(tool string, args json.RawMessage) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	var res json.RawMessage
	params := map[string]any{"name": tool, "arguments": args}
	if c.meta != nil {
		params["_meta"] = c.meta
	}
	err := c.hc.Call(ctx, "tools/call", params, &res)
	return res, err
}

// modernMeta is the _meta of a 2026-07-28 request (SEP-2575) with the
// members the sidecar sends (mcpclient/handshake.go, modernMeta), so that
// the server does the same work for each contender: the protocol version,
// the client's identity and capabilities, and the log level.
func modernMeta(client string) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": client, "version": "1"},
		"io.modelcontextprotocol/logLevel":           "debug",
		"io.modelcontextprotocol/protocolVersion":    modernVersion,
	}
}

func (c floorContender) pid() int { return c.proc }

func (c floorContender) stop() { c.close() }

// startFloor starts the floor relay with the server cfg behind it and
// opens MCP version through it: server/discover at 2026-07-28 (which has
// no handshake: each request carries _meta), initialize before.
func startFloor(tb testing.TB, cfg *config.ServerConfig, version string) floorContender {
	tb.Helper()
	cmd := exec.Command(floorRelay(tb), append([]string{cfg.Command}, cfg.Args...)...)
	cmd.Env = os.Environ()
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	hc := hostclient.New(context.Background(), r, w, hostclient.Options{})
	var once sync.Once
	stop := func() {
		once.Do(func() {
			hc.Close() // the relay sees EOF, closes the server's stdin, waits
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(safety):
				cmd.Process.Kill()
				<-done
				tb.Error("floor relay did not exit after EOF")
			}
		})
	}
	tb.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	if version >= modernVersion {
		meta := modernMeta("bench-floor")
		var disc struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		if err := hc.Call(ctx, "server/discover", map[string]any{"_meta": meta}, &disc); err != nil {
			tb.Fatalf("server/discover through the floor relay: %v", err)
		}
		if !slices.Contains(disc.SupportedVersions, version) {
			tb.Fatalf("server/discover through the floor relay: the server supports %q, not %s", disc.SupportedVersions, version)
		}
		return floorContender{hc: hc, proc: cmd.Process.Pid, close: stop, meta: meta}
	}
	init := map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "bench-floor", "version": "1"},
	}
	if err := hc.Call(ctx, "initialize", init, nil); err != nil {
		tb.Fatalf("initialize through the floor relay: %v", err)
	}
	if err := hc.Notify(ctx, "notifications/initialized", map[string]any{}); err != nil {
		tb.Fatal(err)
	}
	return floorContender{hc: hc, proc: cmd.Process.Pid, close: stop}
}

var floorBuild struct {
	once sync.Once
	path string
	err  error
}

// floorRelay builds floorrelay/ once per test process and returns the
// binary's path.
func floorRelay(tb testing.TB) string {
	tb.Helper()
	floorBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-sidecar-bench-floor")
		if err != nil {
			floorBuild.err = err
			return
		}
		buildDirs = append(buildDirs, dir)
		floorBuild.path = filepath.Join(dir, "floorrelay")
		out, err := exec.Command("go", "build", "-o", floorBuild.path, "./floorrelay").CombinedOutput()
		if err != nil {
			floorBuild.err = fmt.Errorf("go build ./floorrelay: %v\n%s", err, out)
		}
	})
	if floorBuild.err != nil {
		tb.Fatal(floorBuild.err)
	}
	return floorBuild.path
}

// buildDirs are removed when the test binary ends (TestMain).
var buildDirs []string

// callKinds are the servers of the call path's rows: the go-sdk fixture
// at the version the sidecar picks by default (2026-07-28) and pinned to
// 2025-11-25, and server-everything (which answers 2025-11-25 whatever it
// is asked).
var callKinds = []string{"fixture", "fixture-2025-11-25", "everything"}

// echoServer is a stdio server with an echo tool, the echo's arguments,
// and the MCP version every contender speaks to it: "fixture" (go-sdk,
// internal/fixture; no protocol_version, so the sidecar reaches it at
// 2026-07-28), "fixture-2025-11-25" (the same, protocol_version
// 2025-11-25) or "everything" (server-everything on node; skips when
// setup.sh did not install it).
func echoServer(tb testing.TB, kind string) (*config.ServerConfig, json.RawMessage, string) {
	tb.Helper()
	switch kind {
	case "everything":
		node, entry, why := everythingEntry()
		if why != "" {
			tb.Skip(why)
		}
		return &config.ServerConfig{Name: "s", Command: node, Args: []string{entry}}, json.RawMessage(`{"message":"hello"}`), legacyVersion
	case "fixture":
		return fixtureEcho(), echoArgs, modernVersion
	case "fixture-2025-11-25":
		cfg := fixtureEcho()
		cfg.ProtocolVersion = legacyVersion
		return cfg, echoArgs, legacyVersion
	}
	panic("unknown server " + kind)
}

// procUsage is what the threads of a process have used so far: context
// switches (voluntary and involuntary) and time on a CPU. Threads that
// ended are not counted (the Go runtime keeps its threads).
type procUsage struct {
	switches int64
	cpu      time.Duration
}

func (u procUsage) sub(v procUsage) procUsage {
	return procUsage{switches: u.switches - v.switches, cpu: u.cpu - v.cpu}
}

func usageOf(pid int) (procUsage, error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return procUsage{}, err
	}
	var u procUsage
	for _, task := range tasks {
		dir := fmt.Sprintf("/proc/%d/task/%s/", pid, task.Name())
		b, err := os.ReadFile(dir + "status")
		if err != nil {
			continue // the thread ended
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "voluntary_ctxt_switches" || k == "nonvoluntary_ctxt_switches") {
				x, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				u.switches += x
			}
		}
		// schedstat: nanoseconds on a CPU, then waiting, then timeslices.
		if b, err := os.ReadFile(dir + "schedstat"); err == nil {
			if f := strings.Fields(string(b)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				u.cpu += time.Duration(ns)
			}
		}
	}
	return u, nil
}

// checkedCall wraps a contender's echo call: an error result fails it.
func checkedCall(c contender, tool string, args json.RawMessage) func() error {
	return func() error {
		res, err := c.callTool(tool, args)
		if err != nil {
			return err
		}
		if res != nil {
			var r struct {
				IsError bool `json:"isError"`
			}
			if err := json.Unmarshal(res, &r); err != nil {
				return fmt.Errorf("%s result: %w", tool, err)
			}
			if r.IsError {
				return errors.New(tool + ": isError")
			}
		}
		return nil
	}
}
