package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
	"github.com/mcp-sidecar/mcp-sidecar/schema"
	"github.com/mcp-sidecar/mcp-sidecar/sidecar"
)

// safety is the bound of every wait: a net against hangs, never measured.
const safety = 2 * time.Minute

// caller is what the measurements need of a host connection.
type caller interface {
	Call(ctx context.Context, method string, params, result any) error
}

// host is a host connected to one sidecar (in process over io.Pipe, or a
// real child process over OS pipes); framing included either way.
type host struct {
	tb   testing.TB
	c    caller
	hc   *hostclient.Client
	pid  int // the sidecar process; 0 in process
	stop func()
	// cacheDir is initialize's default cache folder. It is made before
	// stop is registered, so that cleanup (last in, first out) stops the
	// sidecar before it removes the folder a background refresh may still
	// be writing to.
	cacheDir string

	toolsChanged atomic.Int64 // mcp/toolsChanged notifications seen
	// completes receives one value per mcp/startupComplete.
	completes chan struct{}
}

type hostOptions struct {
	// process runs the sidecar as a child process (the test binary
	// re-executed) instead of in process.
	process bool
	// bigFrames lifts the host's frame limit (64 MiB in hostclient) for
	// catalogs larger than that.
	bigFrames bool
}

// startHost starts a sidecar and connects a host to it. Cleanup closes the
// host's end (EOF: the sidecar ends every child) and waits for the sidecar.
func startHost(tb testing.TB, o hostOptions) *host {
	tb.Helper()
	h := &host{tb: tb, completes: make(chan struct{}, 1024), cacheDir: tb.TempDir()}
	var r io.ReadCloser
	var w io.WriteCloser
	var wait func()
	if o.process {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), sidecarEnv+"=1")
		cmd.Stderr = os.Stderr
		var err error
		if w, err = cmd.StdinPipe(); err != nil {
			tb.Fatal(err)
		}
		if r, err = cmd.StdoutPipe(); err != nil {
			tb.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		h.pid = cmd.Process.Pid
		wait = func() {
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(safety):
				cmd.Process.Kill()
				<-done
				tb.Error("sidecar process did not exit after EOF")
			}
		}
	} else {
		hostR, sidecarW := io.Pipe()
		sidecarR, hostW := io.Pipe()
		r, w = hostR, hostW
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			sidecar.Serve(context.Background(), sidecarR, sidecarW, sidecar.Options{Env: os.LookupEnv, Logger: slog.New(slog.DiscardHandler)})
			sidecarW.Close()
			sidecarR.Close()
		}()
		wait = func() {
			select {
			case <-exited:
			case <-time.After(safety):
				tb.Error("in-process sidecar did not stop after EOF")
			}
		}
	}
	onNote := func(method string) {
		switch method {
		case protocol.NotifyToolsChanged:
			h.toolsChanged.Add(1)
		case protocol.NotifyStartupComplete:
			select {
			case h.completes <- struct{}{}:
			default:
			}
		}
	}
	maxFrame := int64(0)
	if o.bigFrames {
		maxFrame = 1 << 30
	}
	h.hc = hostclient.New(context.Background(), r, w, hostclient.Options{
		Checker:        smokeChecker(tb),
		MaxFrameBytes:  maxFrame,
		OnNotification: func(n hostclient.Notification) { onNote(n.Method) },
	})
	h.c = h.hc
	closeConn := h.hc.Close
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			closeConn()
			w.Close()
			wait()
		})
	}
	tb.Cleanup(h.stop)
	return h
}

func (h *host) call(method string, params, result any) error {
	return callOn(h.c, method, params, result)
}

func callOn(c caller, method string, params, result any) error {
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	return c.Call(ctx, method, params, result)
}

func (h *host) mustCall(method string, params, result any) {
	h.tb.Helper()
	if err := h.call(method, params, result); err != nil {
		h.tb.Fatalf("%s: %v", method, err)
	}
}

// initialize sends initialize (and initialized) with servers and features.
func (h *host) initialize(servers map[string]*config.ServerConfig, features map[string]bool, cacheDir string) {
	h.tb.Helper()
	if cacheDir == "" {
		cacheDir = h.cacheDir
	}
	params := map[string]any{
		"clientInfo": map[string]any{"name": "bench"},
		"servers":    servers,
		"cacheDir":   cacheDir,
		"features":   features,
	}
	h.mustCall(protocol.MethodInitialize, params, nil)
	_ = h.hc.Notify(context.Background(), protocol.MethodInitialized, map[string]any{})
}

// open opens a session (startup "eager" or "lazy") and lists its tools,
// which waits for every startup in flight; it fails unless every server's
// catalog is served.
func (h *host) open(startup string, scope any) (string, protocol.ToolsListResult) {
	h.tb.Helper()
	var open protocol.SessionOpenResult
	h.mustCall(protocol.MethodSessionOpen, map[string]any{"startup": startup, "scope": scope}, &open)
	list := h.list(open.SessionID)
	return open.SessionID, list
}

// waitComplete waits for the next mcp/startupComplete.
func (h *host) waitComplete() {
	h.tb.Helper()
	select {
	case <-h.completes:
	case <-time.After(safety):
		h.tb.Fatal("no mcp/startupComplete")
	}
}

func (h *host) list(session string) protocol.ToolsListResult {
	h.tb.Helper()
	var list protocol.ToolsListResult
	h.mustCall(protocol.MethodToolsList, map[string]any{"sessionId": session}, &list)
	for _, s := range list.Servers {
		if s.Catalog == protocol.CatalogNone {
			h.tb.Fatalf("server %q has no catalog: state %s, error %q", s.Name, s.State, s.Error)
		}
	}
	return list
}

// callTool calls a tool by its qualified name and returns the raw result.
func (h *host) callTool(session, name string, args json.RawMessage) (json.RawMessage, error) {
	var res json.RawMessage
	err := h.call(protocol.MethodToolsCall, map[string]any{"sessionId": session, "name": name, "arguments": args}, &res)
	return res, err
}

// direct is a go-sdk client connected straight to a stdio server: the
// baseline every sidecar figure is compared with.
type direct struct {
	session *mcp.ClientSession
}

func startDirect(tb testing.TB, cfg *config.ServerConfig) *direct {
	tb.Helper()
	return startDirectAt(tb, cfg, legacyVersion)
}

// startDirectAt is startDirect asking the server for MCP version; it
// fails unless the server agrees to it.
func startDirectAt(tb testing.TB, cfg *config.ServerConfig, version string) *direct {
	tb.Helper()
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Env = os.Environ()
	for k, v := range cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench-direct", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		tb.Fatalf("direct client of %s: %v", cfg.Name, err)
	}
	if got := session.InitializeResult().ProtocolVersion; got != version {
		session.Close()
		tb.Fatalf("direct client of %s: the server agreed to %s, not %s", cfg.Name, got, version)
	}
	tb.Cleanup(func() { session.Close() })
	return &direct{session: session}
}

func (d *direct) callTool(name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	return d.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func (d *direct) listTools() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	res, err := d.session.ListTools(ctx, &mcp.ListToolsParams{})
	if err != nil {
		return 0, err
	}
	return len(res.Tools), nil
}

// smokeChecker returns a checker of the protocol schema in the benchmark
// smoke run (-benchtime=1x), where every message a benchmark exchanges is
// checked as the tests' are, and nil otherwise: checking costs more than
// some of the operations measured, so it would distort the figures of a
// real run and of TestReport. Its cleanup runs after the host's, which is
// registered later.
func smokeChecker(tb testing.TB) *schema.Checker {
	if !smokeRun() {
		return nil
	}
	c, err := schema.NewChecker()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := c.Err(); err != nil {
			tb.Errorf("messages that do not match schema/protocol.schema.json:\n%v", err)
		}
	})
	return c
}

// replayHost is a host whose peer answers every request with the same
// result bytes at once: the floor of the host protocol (framing, the
// host's encoding and decoding, the pipe) for a given payload, with no
// sidecar work at all.
func startReplayHost(tb testing.TB, result json.RawMessage, bigFrames bool) caller {
	tb.Helper()
	hostR, peerW := io.Pipe()
	peerR, hostW := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(peerR, 64<<10)
		for {
			body, err := readFrame(br)
			if err != nil {
				peerW.Close()
				return
			}
			var m struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(body, &m) != nil || len(m.ID) == 0 {
				continue
			}
			n := len(`{"jsonrpc":"2.0","id":,"result":}`) + len(m.ID) + len(result)
			var b bytes.Buffer
			b.Grow(n + 40)
			fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", n)
			b.WriteString(`{"jsonrpc":"2.0","id":`)
			b.Write(m.ID)
			b.WriteString(`,"result":`)
			b.Write(result)
			b.WriteString(`}`)
			if _, err := peerW.Write(b.Bytes()); err != nil {
				return
			}
		}
	}()
	maxFrame := int64(0)
	if bigFrames {
		maxFrame = 1 << 30
	}
	hc := hostclient.New(context.Background(), hostR, hostW, hostclient.Options{MaxFrameBytes: maxFrame})
	tb.Cleanup(func() {
		hc.Close()
		hostW.Close()
		peerR.Close()
	})
	return hc
}

func readFrame(br *bufio.Reader) ([]byte, error) {
	n := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			if n, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("bad Content-Length %q", v)
			}
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("frame without Content-Length")
	}
	body := make([]byte, n)
	_, err := io.ReadFull(br, body)
	return body, err
}

// sample times op reps times.
func sample(reps int, op func() error) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, reps)
	for range reps {
		t0 := time.Now()
		if err := op(); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
	}
	return ds, nil
}

// quantile of samples (nearest rank); q in [0, 1].
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// throughput runs total calls of op on conc workers and returns calls/s.
func throughput(conc, total int, op func() error) (float64, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	t0 := time.Now()
	for range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				if err := op(); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return float64(total) / time.Since(t0).Seconds(), firstErr
}

// allocated returns the bytes allocated by this process while op ran,
// per op.
func allocated(reps int, op func() error) (float64, error) {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	for range reps {
		if err := op(); err != nil {
			return 0, err
		}
	}
	runtime.ReadMemStats(&b)
	return float64(b.TotalAlloc-a.TotalAlloc) / float64(reps), nil
}

// procStatus reads VmRSS and VmHWM (bytes) of pid.
func procStatus(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n << 10
		case "VmHWM":
			hwm = n << 10
		}
	}
	return rss, hwm, nil
}

// resetHWM resets pid's VmHWM to its current RSS (Linux: write 5 to
// clear_refs), so that a peak can be measured around one operation.
func resetHWM(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// children returns the pids of this process's live children.
func children() []int {
	self := os.Getpid()
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == self {
			out = append(out, pid)
		}
	}
	return out
}

const mib = 1 << 20

func ms(d time.Duration) string { return fmt.Sprintf("%.3g ms", float64(d.Microseconds())/1000) }
