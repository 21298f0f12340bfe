package sidecar_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/hostclient"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/mcp-sidecar/mcp-sidecar/launcherprobe"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// newProcessHarness is a harness whose sidecar is a real child process.
func newProcessHarness(t *testing.T) *harness {
	t.Helper()
	p := startSidecarProcess(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	t.Cleanup(cancel)
	h := &harness{t: t, ctx: ctx, exit: make(chan int, 1), cacheDir: t.TempDir()}
	h.cond = sync.NewCond(&h.mu)
	h.client = hostclient.New(ctx, p.stdout, p.stdin, hostclient.Options{Checker: schemaChecker(t), OnNotification: h.record})
	t.Cleanup(func() {
		h.client.Close()
		p.wait(t)
	})
	return h
}

// launcherScript is a launcher that passes the probe.
const launcherScript = "#!/bin/sh\nif [ \"$1\" = sandbox ] && [ \"$2\" = --help ]; then echo 'Usage: codex sandbox --sandbox-state-json <JSON> -- <COMMAND>'; exit 0; fi\nexit 1\n"

// installLauncher puts a launcher script at path by rename, as installers
// do, with mode.
func installLauncher(t *testing.T, path, script string, mode os.FileMode) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tmp, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// sandboxedServer is a fixture server that opted in to the sandbox
// metadata and logs every line it reads.
func sandboxedServer(t *testing.T) (cfg *config.ServerConfig, rawLog string) {
	rawLog = tempFile(t, "raw.log")
	return fixture.Config("s", fixture.Spec{
		RawLogFile:   rawLog,
		Experimental: map[string]json.RawMessage{"codex/sandbox-state": json.RawMessage(`{}`)},
		Tools:        []fixture.ToolSpec{tool("run", "echo")},
	}), rawLog
}

// launcherSent makes one sandboxed call to server s and returns the
// codexExecutable the server received with it, or "".
func launcherSent(t *testing.T, h *harness, sid, rawLog string) string {
	t.Helper()
	if _, err := h.callTool(map[string]any{"sessionId": sid, "name": "mcp__s__run", "sandboxState": map[string]any{"mode": "workspace-write"}}); err != nil {
		t.Fatalf("tools/call: %v", err)
	}
	metas, _ := toolsCallMeta(t, fixture.ReadLines(rawLog))
	if len(metas) == 0 {
		t.Fatal("the server received no tools/call")
	}
	last := metas[len(metas)-1]
	if _, ok := last["codex/sandbox-state"]; !ok {
		t.Fatalf("the call carried no policy: %v", last)
	}
	raw, ok := last["codex/sandbox-launcher"]
	if !ok {
		return ""
	}
	var l struct {
		CodexExecutable string `json:"codexExecutable"`
	}
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("codex/sandbox-launcher %s: %v", raw, err)
	}
	return l.CodexExecutable
}

func describeLauncher(l protocol.LauncherStatus) string {
	if l.Status == "verified" {
		return "verified " + l.Path
	}
	return l.Status + ": " + l.Reason
}

// launcherStatus returns servers/status's launcher verdict, after checking
// that the stdio server's entry says the same.
func launcherStatus(t *testing.T, h *harness, sid string) string {
	t.Helper()
	var st protocol.ServersStatusResult
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": sid}, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Servers) != 1 || st.Servers[0].Launcher == nil || *st.Servers[0].Launcher != st.Launcher {
		t.Errorf("servers/status: server launcher %+v differs from %+v", st.Servers, st.Launcher)
	}
	return describeLauncher(st.Launcher)
}

// waitLauncherLog waits for an mcp/log of the sidecar's own (no session,
// no server) that contains text, among the notifications from index from on.
func waitLauncherLog(h *harness, from int, text string) {
	h.t.Helper()
	seen := 0
	h.waitFor("mcp/log containing "+text, func(n hostclient.Notification) bool {
		seen++
		if seen <= from || n.Method != protocol.NotifyLog {
			return false
		}
		var p protocol.LogParams
		var msg string
		return json.Unmarshal(n.Params, &p) == nil && p.SessionID == "" && p.Server == "" &&
			json.Unmarshal(p.Data, &msg) == nil && strings.Contains(msg, text)
	})
}

// TestLauncherReverifiedOnEveryCall: the launcher's file is checked each
// time a call would carry it, through a real sidecar process and a real
// server. A call after a change carries no launcher; servers/status and
// mcp/log say why; once a probe verifies the file again, calls carry it
// again.
func TestLauncherReverifiedOnEveryCall(t *testing.T) {
	dir := t.TempDir()
	binDir := filepath.Join(dir, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(binDir, "codex")
	installLauncher(t, target, launcherScript, 0o755)
	// npm installs codex as a symlink: the host names the link.
	link := filepath.Join(dir, "codex")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	otherDir := filepath.Join(dir, "other")
	os.Mkdir(otherDir, 0o755)
	other := filepath.Join(otherDir, "codex")
	installLauncher(t, other, launcherScript, 0o755)
	noFlag := "#!/bin/sh\necho 'Usage: codex sandbox -- CMD'\n"

	cfg, rawLog := sandboxedServer(t)
	h := newProcessHarness(t)
	init := h.initialize(map[string]*config.ServerConfig{"s": cfg}, map[string]any{"launcher": map[string]any{"codexExecutable": link}})
	if got, want := describeLauncher(init.Launcher), "verified "+target; got != want {
		t.Fatalf("initialize launcher = %q, want %q", got, want)
	}
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.toolsList(sid)
	if got := launcherSent(t, h, sid, rawLog); got != target {
		t.Fatalf("launcher sent = %q, want the resolved %q", got, target)
	}

	steps := []struct {
		name   string
		change func(t *testing.T)
		// now is the verdict right after the change; a probe runs when it
		// is ReasonProbing, and after is the verdict it reaches.
		now, after string
	}{
		{"replaced by a 0777 script without the flag", func(t *testing.T) { installLauncher(t, target, noFlag, 0o777) },
			"unavailable: writable by group or others", ""},
		{"the same script made 0755", func(t *testing.T) { os.Chmod(target, 0o755) },
			"unavailable: " + launcherprobe.ReasonProbing, "unavailable: help output does not mention --sandbox-state-json"},
		{"a good launcher installed", func(t *testing.T) { installLauncher(t, target, launcherScript, 0o755) },
			"unavailable: " + launcherprobe.ReasonProbing, "verified " + target},
		{"deleted", func(t *testing.T) { os.Remove(target) },
			"unavailable: not found", ""},
		{"installed again after a negative verdict", func(t *testing.T) { installLauncher(t, target, launcherScript, 0o755) },
			"unavailable: " + launcherprobe.ReasonProbing, "verified " + target},
		{"its directory made writable by others", func(t *testing.T) { os.Chmod(binDir, 0o757) },
			"unavailable: its directory " + binDir + " is writable by group or others", ""},
		{"its directory fixed", func(t *testing.T) { os.Chmod(binDir, 0o755) },
			"verified " + target, ""},
		{"the link re-pointed", func(t *testing.T) {
			os.Remove(link)
			os.Symlink(other, link)
		}, "unavailable: " + launcherprobe.ReasonProbing, "verified " + other},
	}
	for _, st := range steps {
		from := len(h.notifications())
		st.change(t)
		final := st.now
		if st.after != "" {
			final = st.after
		}
		want := ""
		if p, ok := strings.CutPrefix(st.now, "verified "); ok {
			want = p
		}
		if got := launcherSent(t, h, sid, rawLog); got != want {
			t.Fatalf("%s: the next call carried launcher %q, want %q", st.name, got, want)
		}
		if st.now != "verified "+target { // a change the host is told of
			text, _ := strings.CutPrefix(final, "unavailable: ")
			if p, ok := strings.CutPrefix(final, "verified "); ok {
				text = p + " verified"
			}
			waitLauncherLog(h, from, text)
		}
		if got := launcherStatus(t, h, sid); got != final {
			t.Fatalf("%s: servers/status launcher = %q, want %q", st.name, got, final)
		}
		want = ""
		if p, ok := strings.CutPrefix(final, "verified "); ok {
			want = p
		}
		if got := launcherSent(t, h, sid, rawLog); got != want {
			t.Fatalf("%s: a call after the verdict carried launcher %q, want %q", st.name, got, want)
		}
	}
}

// TestLauncherPathNotRepresentable: a candidate JSON cannot carry as UTF-8
// (a raw 0xFF byte in the frame, a lone surrogate escape) is refused with
// that reason, not replaced by the path with U+FFFD in it, although a good
// launcher waits at that other path. The bytes go through a real sidecar
// process.
func TestLauncherPathNotRepresentable(t *testing.T) {
	dir := t.TempDir()
	decoy := filepath.Join(dir, "codex\uFFFD")
	installLauncher(t, decoy, launcherScript, 0o755)
	prefix, _ := json.Marshal(filepath.Join(dir, "codex"))
	quoted := string(prefix[:len(prefix)-1]) // without the closing quote

	for _, tt := range []struct{ name, candidate string }{
		{"raw 0xFF byte", quoted + "\xff\""},
		{"lone surrogate escape", quoted + `\udcff"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, rawLog := sandboxedServer(t)
			servers, _ := json.Marshal(map[string]*config.ServerConfig{"s": cfg})
			p := startSidecarProcess(t)
			h := newRawHostOn(t, p.stdout, p.stdin)
			res, errData := h.call("initialize", fmt.Sprintf(`{"clientInfo":{"name":"t"},"cacheDir":%q,"servers":%s,"launcher":{"codexExecutable":%s}}`, t.TempDir(), servers, tt.candidate))
			if errData != nil {
				t.Fatalf("initialize: %+v", errData)
			}
			var init protocol.InitializeResult
			json.Unmarshal(res, &init)
			want := protocol.LauncherStatus{Status: "unavailable", Reason: "not representable as UTF-8"}
			if diff := cmp.Diff(want, init.Launcher); diff != "" {
				t.Fatalf("initialize launcher (-want +got):\n%s", diff)
			}
			res, _ = h.call("session/open", `{"startup":"eager"}`)
			var open protocol.SessionOpenResult
			json.Unmarshal(res, &open)
			if _, errData := h.call("tools/call", fmt.Sprintf(`{"sessionId":%q,"name":"mcp__s__run","sandboxState":{"mode":"x"}}`, open.SessionID)); errData != nil {
				t.Fatalf("tools/call: %+v", errData)
			}
			metas, _ := toolsCallMeta(t, fixture.ReadLines(rawLog))
			if len(metas) != 1 || metas[0]["codex/sandbox-state"] == nil {
				t.Fatalf("server received %v", metas)
			}
			if l, ok := metas[0]["codex/sandbox-launcher"]; ok {
				t.Errorf("the server received launcher %s", l)
			}
			res, _ = h.call("servers/status", fmt.Sprintf(`{"sessionId":%q}`, open.SessionID))
			var st protocol.ServersStatusResult
			json.Unmarshal(res, &st)
			if diff := cmp.Diff(want, st.Launcher); diff != "" {
				t.Errorf("servers/status launcher (-want +got):\n%s", diff)
			}
			p.stdin.Close()
			p.wait(t)
		})
	}
}

// TestInitializeIsNotCancellable: a $/cancelRequest for initialize is
// ignored. initialize is answered normally once its launcher probe ends,
// with the verdict applied, and the sidecar serves sessions; a host never
// sees a -32800 for an initialize that took effect anyway. The launcher
// blocks until the test releases it, through a real sidecar process.
func TestInitializeIsNotCancellable(t *testing.T) {
	dir := t.TempDir()
	started := filepath.Join(dir, "started")
	gate := filepath.Join(dir, "gate")
	for _, fifo := range []string{started, gate} {
		if err := mkfifo(fifo); err != nil {
			t.Fatal(err)
		}
	}
	binDir := filepath.Join(dir, "bin")
	os.Mkdir(binDir, 0o755)
	launcher := filepath.Join(binDir, "codex")
	installLauncher(t, launcher, fmt.Sprintf("#!/bin/sh\necho up > '%s'\nread line < '%s'\n", started, gate)+strings.TrimPrefix(launcherScript, "#!/bin/sh\n"), 0o755)

	cfg, rawLog := sandboxedServer(t)
	h := newProcessHarness(t)
	ctx, cancel := context.WithTimeout(h.ctx, testTimeout)
	defer cancel()
	id, waiter, err := h.client.Dispatch(ctx, protocol.MethodInitialize, map[string]any{
		"clientInfo": map[string]any{"name": "test"},
		"cacheDir":   h.cacheDir,
		"servers":    map[string]*config.ServerConfig{"s": cfg},
		"launcher":   map[string]any{"codexExecutable": launcher},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The probe is running: cancel initialize.
	if _, err := os.ReadFile(started); err != nil {
		t.Fatal(err)
	}
	if err := h.client.Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	// The sidecar handles its input in order: once a later request is
	// answered, the cancel was handled. (Before initialize is answered it
	// is -32002; an initialize that ended early would make it -32001.)
	if err := h.call(protocol.MethodServersStatus, map[string]any{"sessionId": "none"}, nil); err == nil {
		t.Fatal("servers/status of no session succeeded")
	}
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var init protocol.InitializeResult
	if err := waiter.Wait(ctx, &init); err != nil {
		t.Fatalf("cancelled initialize: %v, want it answered normally", err)
	}
	if got, want := describeLauncher(init.Launcher), "verified "+launcher; got != want {
		t.Errorf("initialize launcher = %q, want %q", got, want)
	}
	h.client.Notify(ctx, protocol.MethodInitialized, map[string]any{})
	sid := h.open(map[string]any{"startup": "eager"}).SessionID
	h.toolsList(sid)
	if got := launcherSent(t, h, sid, rawLog); got != launcher {
		t.Errorf("launcher sent = %q, want %q", got, launcher)
	}
	h.wantCode(h.call(protocol.MethodInitialize, map[string]any{"clientInfo": map[string]any{"name": "test"}}, nil), protocol.CodeInvalidRequest)
}
