package servermeta_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/sandbox"
	"github.com/mcp-sidecar/mcp-sidecar/sandbox/servermeta"
)

// seen is what the fixture tool read from its request.
type seen struct {
	State    string `json:"state"`
	StateKey string `json:"stateKey"`
	Launcher string `json:"launcher"`
	Exact    bool   `json:"exact"`
	Err      string `json:"err"`
}

// connect runs a go-sdk server whose "inspect" tool reports
// servermeta.FromRequest, over pipes so that a wrapper sees real bytes.
func connect(t *testing.T, wrap bool, opts servermeta.Options) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c2sR, c2sW := io.Pipe()
	s2cR, s2cW := io.Pipe()

	server := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1"}, &mcp.ServerOptions{
		Capabilities: &mcp.ServerCapabilities{Experimental: map[string]any{sandbox.KeyState: map[string]any{}}},
	})
	server.AddTool(&mcp.Tool{Name: "inspect", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var s seen
			a, err := servermeta.FromRequest(req, opts)
			if err != nil {
				s.Err = err.Error()
			} else {
				s = seen{State: string(a.State), StateKey: a.StateKey, Launcher: a.Launcher, Exact: a.Exact}
			}
			out, _ := json.Marshal(s)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, nil
		})
	var st mcp.Transport = &mcp.IOTransport{Reader: c2sR, Writer: s2cW}
	if wrap {
		st = servermeta.Transport(st)
	}
	ss, err := server.Connect(ctx, st, nil)
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
	return cs
}

func inspect(t *testing.T, cs *mcp.ClientSession, meta map[string]any) seen {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "inspect", Meta: meta, Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	var s seen
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

const hostPolicy = `{"zeta": 1, "limits": {"bytes": 12345678901234567890, "one": 1.0, "exp": 2e10}, "s": "\u00e9", "html": "<&>", "unknown": [null]}`
const wirePolicy = `{"zeta":1,"limits":{"bytes":12345678901234567890,"one":1.0,"exp":2e10},"s":"\u00e9","html":"<&>","unknown":[null]}`

func sidecarMeta(t *testing.T, policy, launcher string, host map[string]json.RawMessage) map[string]any {
	t.Helper()
	meta, _ := sandbox.BuildMeta(sandbox.Injection{
		Capability: sandbox.CapPreferred, State: json.RawMessage(policy), Launcher: launcher,
		Transport: sandbox.TransportStdio, HostMeta: host,
	})
	return meta
}

func TestFromRequestOverTheWire(t *testing.T) {
	wrapped := connect(t, true, servermeta.Options{})
	bare := connect(t, false, servermeta.Options{})

	tests := []struct {
		name string
		cs   *mcp.ClientSession
		meta map[string]any
		want seen
	}{
		{
			name: "wrapper keeps the policy bytes",
			cs:   wrapped,
			meta: sidecarMeta(t, hostPolicy, "/opt/codex/bin/codex", nil),
			want: seen{State: wirePolicy, StateKey: servermeta.KeyState, Launcher: "/opt/codex/bin/codex", Exact: true},
		},
		{
			name: "without the wrapper: decoded map, keys sorted, big number rounded",
			cs:   bare,
			meta: sidecarMeta(t, hostPolicy, "/opt/codex/bin/codex", nil),
			want: seen{
				State:    `{"html":"<&>","limits":{"bytes":12345678901234567000,"exp":20000000000,"one":1},"s":"é","unknown":[null],"zeta":1}`,
				StateKey: servermeta.KeyState, Launcher: "/opt/codex/bin/codex", Exact: false,
			},
		},
		{
			name: "only the deprecated key",
			cs:   wrapped,
			meta: map[string]any{servermeta.KeyStateMeta: json.RawMessage(`{"n":12345678901234567890}`)},
			want: seen{State: `{"n":12345678901234567890}`, StateKey: servermeta.KeyStateMeta, Exact: true},
		},
		{
			name: "no authority",
			cs:   wrapped,
			meta: map[string]any{"progressToken": 3},
			want: seen{Exact: false},
		},
		{
			name: "a client-sent raw key is replaced by the wrapper",
			cs:   wrapped,
			meta: map[string]any{
				servermeta.KeyState:   json.RawMessage(`{"a":12345678901234567890}`),
				servermeta.RawMetaKey: `{"codex/sandbox-state":{"a":1}}`,
			},
			want: seen{State: `{"a":12345678901234567890}`, StateKey: servermeta.KeyState, Exact: true},
		},
		{
			name: "a client-sent raw key without sandbox keys is removed by the wrapper",
			cs:   wrapped,
			meta: map[string]any{servermeta.RawMetaKey: `{"codex/sandbox-state":{"a":1}}`},
			want: seen{},
		},
		{
			name: "without the wrapper a raw key that disagrees is refused",
			cs:   bare,
			meta: map[string]any{
				servermeta.KeyState:   json.RawMessage(`{"a":2}`),
				servermeta.RawMetaKey: `{"codex/sandbox-state":{"a":1}}`,
			},
			want: seen{Err: "invalid sandbox metadata in request _meta: io.github.mcp-sidecar/servermeta-raw disagrees with codex/sandbox-state"},
		},
		{
			name: "the two state keys disagree",
			cs:   wrapped,
			meta: map[string]any{servermeta.KeyState: json.RawMessage(`{"a":1}`), servermeta.KeyStateMeta: json.RawMessage(`{"a":2}`)},
			want: seen{Err: "invalid sandbox metadata in request _meta: codex/sandbox-state and codex/sandbox-state-meta differ"},
		},
		{
			name: "relative launcher",
			cs:   wrapped,
			meta: map[string]any{servermeta.KeyState: json.RawMessage(`{}`), servermeta.KeyLauncher: json.RawMessage(`{"codexExecutable":"codex"}`)},
			want: seen{Err: `invalid sandbox metadata in request _meta: codex/sandbox-launcher.codexExecutable "codex" is not an absolute path`},
		},
		{
			name: "malformed launcher",
			cs:   wrapped,
			meta: map[string]any{servermeta.KeyState: json.RawMessage(`{}`), servermeta.KeyLauncher: json.RawMessage(`"/opt/codex"`)},
			want: seen{Err: `invalid sandbox metadata in request _meta: codex/sandbox-launcher must be {"codexExecutable": "/abs/path"}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inspect(t, tt.cs, tt.meta)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequireLauncher(t *testing.T) {
	strict := connect(t, true, servermeta.Options{RequireLauncher: true})
	optOut := connect(t, true, servermeta.Options{RequireLauncher: true, AllowMissingLauncher: true})

	withBoth := map[string]any{
		servermeta.KeyState:    json.RawMessage(`{"p":1}`),
		servermeta.KeyLauncher: json.RawMessage(`{"codexExecutable":"/opt/codex"}`),
	}
	stateOnly := map[string]any{servermeta.KeyState: json.RawMessage(`{"p":1}`)}
	launcherOnly := map[string]any{servermeta.KeyLauncher: json.RawMessage(`{"codexExecutable":"/opt/codex"}`)}

	tests := []struct {
		name    string
		cs      *mcp.ClientSession
		meta    map[string]any
		wantErr string
	}{
		{"strict, both present", strict, withBoth, ""},
		{"strict, no launcher", strict, stateOnly, "no sandbox launcher in request _meta: the host did not provide one, and this tool runs only sandboxed"},
		{"strict, nothing", strict, nil, "no sandbox launcher in request _meta: the host did not provide one, and this tool runs only sandboxed"},
		{"strict, launcher without policy", strict, launcherOnly, "no sandbox state in request _meta: a launcher came without a policy, and this tool runs only sandboxed"},
		{"operator opt-out, no launcher", optOut, stateOnly, ""},
		{"operator opt-out, nothing", optOut, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inspect(t, tt.cs, tt.meta)
			if got.Err != tt.wantErr {
				t.Errorf("error = %q, want %q", got.Err, tt.wantErr)
			}
		})
	}
}

func TestFromMetaErrors(t *testing.T) {
	_, err := servermeta.FromMeta(nil, servermeta.Options{RequireLauncher: true})
	if !errors.Is(err, servermeta.ErrMissingLauncher) {
		t.Errorf("FromMeta(nil, RequireLauncher) = %v, want ErrMissingLauncher", err)
	}
	_, err = servermeta.FromMeta(map[string]any{servermeta.RawMetaKey: 7}, servermeta.Options{})
	if !errors.Is(err, servermeta.ErrInvalid) {
		t.Errorf("non-string raw key: %v, want ErrInvalid", err)
	}
	a, err := servermeta.FromRequest(nil, servermeta.Options{})
	if err != nil || a.HasState() || a.Launcher != "" {
		t.Errorf("FromRequest(nil) = %+v, %v; want empty authority", a, err)
	}
}

func TestEqual(t *testing.T) {
	mk := func(state, launcher string) *servermeta.Authority {
		a := &servermeta.Authority{Launcher: launcher}
		if state != "" {
			a.State = json.RawMessage(state)
		}
		return a
	}
	tests := []struct {
		name string
		a, b *servermeta.Authority
		want bool
	}{
		{"identical", mk(`{"a":1}`, "/x"), mk(`{"a":1}`, "/x"), true},
		{"key order and whitespace", mk(`{"a":1,"b":[1,2]}`, "/x"), mk(`{ "b": [1, 2], "a": 1 }`, "/x"), true},
		{"number spelling", mk(`{"a":1.0,"b":2e10,"c":-0}`, ""), mk(`{"a":1,"b":20000000000,"c":0.0}`, ""), true},
		{"big integers compared exactly", mk(`{"n":12345678901234567890}`, ""), mk(`{"n":12345678901234567000}`, ""), false},
		{"big integers equal", mk(`{"n":12345678901234567890}`, ""), mk(`{"n":1.234567890123456789e19}`, ""), true},
		{"escapes", mk(`{"s":"\u00e9<&>"}`, ""), mk(`{"s":"é\u003c\u0026\u003e"}`, ""), true},
		{"different launcher", mk(`{"a":1}`, "/x"), mk(`{"a":1}`, "/y"), false},
		{"different policy", mk(`{"a":1}`, "/x"), mk(`{"a":2}`, "/x"), false},
		{"extra field", mk(`{"a":1}`, ""), mk(`{"a":1,"b":null}`, ""), false},
		{"array order matters", mk(`[1,2]`, ""), mk(`[2,1]`, ""), false},
		{"type matters", mk(`{"a":"1"}`, ""), mk(`{"a":1}`, ""), false},
		{"none and none", mk("", ""), nil, true},
		{"policy and none", mk(`{}`, ""), mk("", ""), false},
		{"huge exponents", mk(`1e999999999999`, ""), mk(`10e999999999998`, ""), true},
		{"invalid JSON equals nothing", mk(`{`, ""), mk(`{`, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Equal(tt.b); got != tt.want {
				t.Errorf("Equal = %v, want %v", got, tt.want)
			}
			if got := tt.b.Equal(tt.a); got != tt.want {
				t.Errorf("Equal (reversed) = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	a := &servermeta.Authority{State: json.RawMessage(`{"n":12345678901234567890}`), Launcher: "/opt/codex"}
	got, err := a.Command([]string{"ls", "-l"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/opt/codex", "sandbox", "--sandbox-state-json", `{"n":12345678901234567890}`, "--", "ls", "-l"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Command mismatch (-want +got):\n%s", diff)
	}
	if _, err := (&servermeta.Authority{State: a.State}).Command([]string{"ls"}); !errors.Is(err, servermeta.ErrMissingLauncher) {
		t.Errorf("no launcher: %v", err)
	}
	if _, err := (&servermeta.Authority{Launcher: "/opt/codex"}).Command([]string{"ls"}); !errors.Is(err, servermeta.ErrMissingState) {
		t.Errorf("no state: %v", err)
	}
	if _, err := a.Command(nil); err == nil {
		t.Error("empty command accepted")
	}
}
