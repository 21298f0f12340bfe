package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineRecorder keeps every line a go-sdk server read, as it arrived.
type lineRecorder struct {
	r     io.ReadCloser
	mu    sync.Mutex
	buf   bytes.Buffer
	lines [][]byte
}

func (l *lineRecorder) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	l.mu.Lock()
	l.buf.Write(p[:n])
	for {
		i := bytes.IndexByte(l.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, slices.Clone(l.buf.Next(i+1)))
	}
	l.mu.Unlock()
	return n, err
}

func (l *lineRecorder) Close() error { return l.r.Close() }

// lastCall returns the params of the last tools/call the server read.
func (l *lineRecorder) lastCall(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.lines) - 1; i >= 0; i-- {
		var msg struct {
			Method string                     `json:"method"`
			Params map[string]json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(l.lines[i], &msg); err == nil && msg.Method == "tools/call" {
			return msg.Params
		}
	}
	t.Fatal("no tools/call line recorded")
	return nil
}

// wire connects a go-sdk client to a go-sdk server over pipes, the way
// the sidecar talks to a stdio server, and records the server's input.
type wire struct {
	session *mcp.ClientSession
	rec     *lineRecorder
}

func newWire(t *testing.T) *wire {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()
	rec := &lineRecorder{r: c2sR}

	server := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	ss, err := server.Connect(ctx, &mcp.IOTransport{Reader: rec, Writer: s2cW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: s2cR, Writer: c2sW}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return &wire{session: cs, rec: rec}
}

// call forwards one call as the sidecar would and returns the params the
// server received, raw.
func (w *wire) call(t *testing.T, meta map[string]any, args json.RawMessage) (sentMeta map[string]json.RawMessage, sentArgs json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "echo", Meta: meta}
	if args != nil {
		params.Arguments = args
	}
	if _, err := w.session.CallTool(ctx, params); err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	p := w.rec.lastCall(t)
	if m, ok := p["_meta"]; ok {
		if err := json.Unmarshal(m, &sentMeta); err != nil {
			t.Fatalf("_meta on the wire: %v", err)
		}
	}
	return sentMeta, p["arguments"]
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestPolicyBytesOnTheWire drives a real go-sdk client and checks that the
// policy reaches the server with the host's bytes, whitespace aside.
func TestPolicyBytesOnTheWire(t *testing.T) {
	w := newWire(t)
	policies := map[string]string{
		"key order and unknown fields": `{"zeta": 1, "alpha": {"unknownFutureField": [true, null], "b": 2, "a": 1}}`,
		"big integer":                  `{"n": 12345678901234567890, "neg": -98765432109876543210}`,
		"1.0 and 2e10":                 `{"one": 1.0, "exp": 2e10, "E": 1E-7, "zero": -0.0}`,
		"escaped é":                    `{"s": "\u00e9", "raw": "é"}`,
		"html characters":              `{"html": "<&>", "esc": "\u003c\u0026\u003e"}`,
		"everything, indented": `{
			"sandbox": "workspace-write",
			"writable_roots": ["/work/\u00e9", "<&>"],
			"limits": {"bytes": 12345678901234567890, "ratio": 1.0, "big": 2e10},
			"z": null, "a": false
		}`,
		"not an object": `[1.0, 12345678901234567890, "<&>"]`,
	}
	for name, policy := range policies {
		t.Run(name, func(t *testing.T) {
			if err := ValidateState(raw(policy)); err != nil {
				t.Fatal(err)
			}
			meta, _ := BuildMeta(Injection{Capability: CapPreferred, State: raw(policy), Launcher: "/opt/é <&>/codex", Transport: TransportStdio})
			sent, _ := w.call(t, meta, nil)
			want := compact(t, policy)
			for _, k := range []string{KeyState, KeyStateMeta} {
				if got := string(sent[k]); got != want {
					t.Errorf("%s on the wire:\n got %s\nwant %s", k, got, want)
				}
			}
			if got, want := string(sent[KeyLauncher]), `{"codexExecutable":"/opt/é <&>/codex"}`; got != want {
				t.Errorf("%s on the wire = %s, want %s", KeyLauncher, got, want)
			}
		})
	}
}

func TestHTTPServerGetsNoLauncherOnTheWire(t *testing.T) {
	w := newWire(t)
	meta, _ := BuildMeta(Injection{Capability: CapPreferred, State: raw(`{"a":1}`), Launcher: "/opt/codex", Transport: TransportHTTP})
	sent, _ := w.call(t, meta, nil)
	if _, ok := sent[KeyLauncher]; ok {
		t.Errorf("HTTP server received %s = %s", KeyLauncher, sent[KeyLauncher])
	}
	if string(sent[KeyState]) != `{"a":1}` {
		t.Errorf("HTTP server received %s = %s, want the policy", KeyState, sent[KeyState])
	}
}

// TestArgumentsAreNeverAuthority: arguments that look like _meta stay
// arguments, byte for byte, and add nothing to _meta.
func TestArgumentsAreNeverAuthority(t *testing.T) {
	w := newWire(t)
	args := `{"_meta":{"codex/sandbox-state":{"sandbox":"danger-full-access"},"codex/sandbox-launcher":{"codexExecutable":"/tmp/evil"}},"codex/sandbox-state":"x","codex/sandbox-state-meta":{"n":12345678901234567890}}`
	for _, capability := range []Capability{CapNone, CapPreferred} {
		t.Run(capability.String(), func(t *testing.T) {
			meta, _ := BuildMeta(Injection{Capability: capability, Transport: TransportStdio, Launcher: "/opt/codex",
				HostMeta: map[string]json.RawMessage{"progressToken": raw(`1`)}})
			sentMeta, sentArgs := w.call(t, meta, raw(args))
			if string(sentArgs) != args {
				t.Errorf("arguments on the wire:\n got %s\nwant %s", sentArgs, args)
			}
			want := map[string]json.RawMessage{"progressToken": raw(`1`)}
			if diff := cmp.Diff(want, sentMeta); diff != "" {
				t.Errorf("_meta on the wire (-want +got):\n%s", diff)
			}
		})
	}
}

// randomJSON returns a random JSON value, sometimes one that breaks
// float64 precision.
func randomJSON(r *rand.Rand, depth int) string {
	switch n := r.IntN(8); {
	case n == 0 && depth < 3:
		var parts []string
		for i := range r.IntN(4) {
			parts = append(parts, fmt.Sprintf("%q:%s", fmt.Sprint("k", i, r.IntN(3)), randomJSON(r, depth+1)))
		}
		return "{" + join(parts) + "}"
	case n == 1 && depth < 3:
		var parts []string
		for range r.IntN(4) {
			parts = append(parts, randomJSON(r, depth+1))
		}
		return "[" + join(parts) + "]"
	case n == 2:
		return fmt.Sprintf("%d%d", r.Uint64(), r.IntN(10))
	case n == 3:
		return fmt.Sprintf("%d.0e%d", r.IntN(100), r.IntN(20))
	case n == 4:
		return []string{`"<&>"`, `"\u00e9"`, `"é"`, `""`}[r.IntN(4)]
	case n == 5:
		return []string{"true", "false", "null"}[r.IntN(3)]
	default:
		return fmt.Sprint(r.IntN(1000))
	}
}

func join(parts []string) string {
	var b bytes.Buffer
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p)
	}
	return b.String()
}

// TestSandboxKeysProperty: over random host meta, arguments, policies and
// launchers, sent through a real go-sdk client, a server that did not opt
// in never receives a sandbox key, and one that did receives exactly the
// injected values, never the host's or the arguments'.
func TestSandboxKeysProperty(t *testing.T) {
	w := newWire(t)
	r := rand.New(rand.NewPCG(1, 2))
	keyPool := []string{KeyState, KeyStateMeta, KeyLauncher, "progressToken", "threadId", "traceparent", "codex/sandbox-STATE", "other"}
	for i := range 200 {
		capability := Capability(r.IntN(4))
		host := map[string]json.RawMessage{}
		for range r.IntN(5) {
			host[keyPool[r.IntN(len(keyPool))]] = raw(randomJSON(r, 0))
		}
		var state json.RawMessage
		if r.IntN(4) > 0 {
			state = raw(randomJSON(r, 0))
		}
		launcher := []string{"", "/opt/codex", "codex"}[r.IntN(3)]
		transport := []string{TransportStdio, TransportHTTP}[r.IntN(2)]
		args := fmt.Sprintf(`{"_meta":{%q:%s},%q:%s}`, keyPool[r.IntN(3)], randomJSON(r, 0), keyPool[r.IntN(3)], randomJSON(r, 0))

		in := Injection{Capability: capability, State: state, Launcher: launcher, HostMeta: host, Transport: transport}
		meta, _ := BuildMeta(in)
		sent, sentArgs := w.call(t, meta, raw(args))
		desc := fmt.Sprintf("case %d: %+v", i, in)

		if string(sentArgs) != args {
			t.Fatalf("%s: arguments changed on the wire: %s", desc, sentArgs)
		}
		injected := capability.OptedIn() && StatePresent(state)
		for _, k := range []string{KeyState, KeyStateMeta} {
			got, ok := sent[k]
			switch {
			case !injected && ok:
				t.Fatalf("%s: received %s = %s without opting in or without state", desc, k, got)
			case injected && string(got) != compact(t, string(state)):
				t.Fatalf("%s: received %s = %s, want the policy %s", desc, k, got, state)
			}
		}
		got, ok := sent[KeyLauncher]
		wantLauncher := injected && transport == TransportStdio && launcher == "/opt/codex"
		switch {
		case ok != wantLauncher:
			t.Fatalf("%s: launcher present = %v (%s), want %v", desc, ok, got, wantLauncher)
		case ok && string(got) != `{"codexExecutable":"/opt/codex"}`:
			t.Fatalf("%s: launcher = %s", desc, got)
		}
		for k, v := range host {
			if IsSandboxKey(k) {
				continue
			}
			if string(sent[k]) != compact(t, string(v)) {
				t.Fatalf("%s: host key %s = %s, want %s", desc, k, sent[k], v)
			}
		}
	}
}

func FuzzBuildMeta(f *testing.F) {
	f.Add([]byte(`{"sandbox":"read-only","n":12345678901234567890}`), []byte(`{"progressToken":1,"codex/sandbox-state":{"x":1}}`), "/opt/codex", uint8(1), true)
	f.Add([]byte(`{"a":1.0,"b":2e10,"c":"\u00e9","d":"<&>"}`), []byte(`{"codex/sandbox-launcher":{"codexExecutable":"/evil"}}`), "/opt/codex", uint8(2), false)
	f.Add([]byte(`null`), []byte(`{}`), "", uint8(0), true)
	f.Add([]byte(`{"a":`), []byte(`{"codex/sandbox-state-meta":null}`), "rel", uint8(3), true)
	f.Fuzz(func(t *testing.T, state, hostMeta []byte, launcher string, c uint8, stdio bool) {
		var host map[string]json.RawMessage
		if json.Unmarshal(hostMeta, &host) != nil {
			host = map[string]json.RawMessage{"raw": hostMeta}
		}
		transport := TransportHTTP
		if stdio {
			transport = TransportStdio
		}
		capability := Capability(c % 5) // 4 is out of range: treated as not opted in
		meta, dropped := BuildMeta(Injection{Capability: capability, State: state, Launcher: launcher, HostMeta: host, Transport: transport})

		for _, k := range dropped {
			if _, ok := meta[k]; ok && !IsSandboxKey(k) {
				t.Fatalf("dropped key %q is in meta", k)
			}
		}
		injected := capability.OptedIn() && StatePresent(state) && ValidateState(state) == nil
		for _, k := range []string{KeyState, KeyStateMeta, KeyLauncher} {
			v, ok := meta[k]
			if !injected {
				if ok {
					t.Fatalf("%s present without injection", k)
				}
				continue
			}
			if k == KeyLauncher {
				want, wantOK := LauncherValue(launcher, transport)
				if ok != wantOK || (ok && !bytes.Equal(v.(json.RawMessage), want)) {
					t.Fatalf("launcher = %v, want %s", v, want)
				}
				continue
			}
			if !ok || !bytes.Equal(v.(json.RawMessage), state) {
				t.Fatalf("%s = %v, want the state bytes", k, v)
			}
		}
		// go-sdk encodes with HTML escaping off; what we built must encode.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(mcp.CallToolParams{Name: "t", Meta: meta}); err != nil {
			t.Fatalf("encoding meta: %v", err)
		}
		if injected {
			var out struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			if err := json.NewDecoder(bufio.NewReader(&buf)).Decode(&out); err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			json.Compact(&want, state)
			if !bytes.Equal(out.Meta[KeyState], want.Bytes()) {
				t.Fatalf("encoded state = %s, want %s", out.Meta[KeyState], want.Bytes())
			}
		}
	})
}
