package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	fixture.Main()
	code := m.Run()
	if code == 0 {
		// Idle keep-alive connections of http.DefaultTransport (the HTTP
		// tests' default client) belong to the transport, not to a test:
		// close them so that only goroutines a test really left behind
		// are reported.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: goroutines left after the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testCtx is a safety net, never the thing under test.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func connect(t testing.TB, opts Options) *Conn {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "fx"
	}
	c, err := Connect(testCtx(t), opts)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func compact(t testing.TB, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestConnectRawInitialize(t *testing.T) {
	exp := `{"z": 1, "a": 12345678901234567890, "s": "\u00e9", "t": "é"}`
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{
		Name:         "raw-init",
		Experimental: map[string]json.RawMessage{"codex/x": json.RawMessage(exp)},
	})})
	if got, want := string(c.Experimental()["codex/x"]), compact(t, exp); got != want {
		t.Errorf("Experimental()[codex/x] = %s, want %s", got, want)
	}
	if !bytes.Contains(c.InitializeResult(), []byte(compact(t, exp))) {
		t.Errorf("InitializeResult() lacks the raw experimental value: %s", c.InitializeResult())
	}
	if !bytes.Contains(c.Capabilities(), []byte(`"experimental"`)) {
		t.Errorf("Capabilities() = %s", c.Capabilities())
	}
	// A go-sdk v1.8 server speaks the modern protocol: the connection is
	// opened by its DiscoverResult.
	if c.ProtocolVersion() != ModernProtocolVersion || c.Era() != EraModern {
		t.Errorf("ProtocolVersion() = %q, Era() = %q", c.ProtocolVersion(), c.Era())
	}
	if c.ServerInfo() == nil || c.ServerInfo().Name != "raw-init" {
		t.Errorf("ServerInfo() = %+v", c.ServerInfo())
	}
	if c.Transport() != "stdio" || c.PID() <= 0 {
		t.Errorf("Transport() = %q, PID() = %d", c.Transport(), c.PID())
	}
}

func TestListToolsRawSchema(t *testing.T) {
	def := `{"name":"big","inputSchema":{"type":"object","x-unknown":{"z":1,"a":2},"properties":{"n":{"type":"integer","maximum":12345678901234567890}}},"annotations":{"title":"\u00e9 é"}}`
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{
		Tools: []fixture.ToolSpec{{Def: json.RawMessage(def)}},
	})})
	raw, err := c.ListToolsPage(testCtx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(def)) {
		t.Errorf("tools/list result does not carry the definition verbatim:\n got %s\nwant %s", raw, def)
	}
}

func TestCallToolMetaBytesReachServer(t *testing.T) {
	dir := t.TempDir()
	rawLog := filepath.Join(dir, "raw.log")
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{
		Tools:      []fixture.ToolSpec{{Name: "echo"}},
		RawLogFile: rawLog,
	})})
	policy := `{"z":{"y":1,"b":2},"a":12345678901234567890,"s":"\u00e9","h":"<&>"}`
	args := `{"k":"v","big":98765432109876543210}`
	res, err := c.CallTool(testCtx(t), "echo", json.RawMessage(args), map[string]any{
		"codex/sandbox-state": json.RawMessage(policy),
		"progressToken":       "tok",
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res, []byte(`"content"`)) {
		t.Errorf("result = %s", res)
	}
	var line string
	for _, l := range fixture.ReadLines(rawLog) {
		if strings.Contains(l, `"tools/call"`) {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no tools/call line in %s", rawLog)
	}
	for _, want := range []string{`"codex/sandbox-state":` + policy, `"arguments":` + args} {
		if !strings.Contains(line, want) {
			t.Errorf("tools/call line lacks %s:\n%s", want, line)
		}
	}
}

func TestNonJSONStdoutSkipped(t *testing.T) {
	var mu sync.Mutex
	var skipped []string
	c := connect(t, Options{
		Config: fixture.Config("fx", fixture.Spec{
			ToolCount:   1,
			BannerLines: []string{"Server ready on stdio!", "{not json"},
			JunkBetween: "debug: listing tools",
		}),
		Handlers: Handlers{SkippedLine: func(l string) {
			mu.Lock()
			skipped = append(skipped, l)
			mu.Unlock()
		}},
	})
	for range 2 {
		raw, err := c.ListToolsPage(testCtx(t), "")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(raw, []byte(`"tool_0"`)) {
			t.Errorf("tools/list = %s", raw)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"Server ready on stdio!", "{not json", "debug: listing tools", "debug: listing tools"}
	if diff := cmp.Diff(want, skipped); diff != "" {
		t.Errorf("skipped lines (-want +got):\n%s", diff)
	}
}

func TestStartupErrors(t *testing.T) {
	fx := func(spec fixture.Spec) *config.ServerConfig { return fixture.Config("fx", spec) }
	for _, tc := range []struct {
		name string
		cfg  *config.ServerConfig
		want []string
		is   error
	}{
		{"missing command", &config.ServerConfig{Command: "no-such-command-xyz"}, []string{`server "fx"`, `command "no-such-command-xyz" not found`}, nil},
		{"missing cwd", &config.ServerConfig{Command: "sh", Cwd: "/no/such/dir"}, []string{`cwd "/no/such/dir" does not exist`}, nil},
		{"exit at start", fx(fixture.Spec{ExitAtStart: true, StderrLines: []string{"boom: bad config"}}), []string{"exited during startup", "exit status 1", "boom: bad config", "exiting at start"}, ErrConnectionLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Connect(testCtx(t), Options{Name: "fx", Config: tc.cfg})
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
}

func TestCancelReachesServer(t *testing.T) {
	progressed := make(chan struct{}, 1)
	logs := make(chan string, 10)
	c := connect(t, Options{
		Config: fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "slow", Behavior: fixture.BehaviorSleep}}}),
		Handlers: Handlers{
			Progress: func(*mcp.ProgressNotificationParams) {
				select {
				case progressed <- struct{}{}:
				default:
				}
			},
			Log: func(p *mcp.LoggingMessageParams) {
				b, _ := json.Marshal(p.Data)
				logs <- string(b)
			},
		},
	})
	ctx, cancel := context.WithCancel(testCtx(t))
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, "slow", json.RawMessage(`{"tag":"t1"}`), map[string]any{"progressToken": "p1"})
		errc <- err
	}()
	<-progressed // the server is sleeping in the call
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	select {
	case l := <-logs:
		if l != `"cancelled slow t1"` {
			t.Errorf("server log = %s", l)
		}
	case <-testCtx(t).Done():
		t.Fatal("the server never saw notifications/cancelled")
	}
	// The connection is still usable.
	if _, err := c.ListToolsPage(testCtx(t), ""); err != nil {
		t.Fatal(err)
	}
}

func TestProgress(t *testing.T) {
	progress := make(chan string, 10)
	c := connect(t, Options{
		Config: fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "p", Behavior: fixture.BehaviorProgress}}}),
		Handlers: Handlers{Progress: func(p *mcp.ProgressNotificationParams) {
			progress <- fmt.Sprintf("%v %s", p.ProgressToken, p.Message)
		}},
	})
	if _, err := c.CallTool(testCtx(t), "p", json.RawMessage(`{"count":3}`), map[string]any{"progressToken": 7}); err != nil {
		t.Fatal(err)
	}
	// Notifications are handled apart from responses: they may trail the result.
	var got []string
	for len(got) < 3 {
		select {
		case m := <-progress:
			got = append(got, m)
		case <-testCtx(t).Done():
			t.Fatalf("progress so far: %q", got)
		}
	}
	if diff := cmp.Diff([]string{"7 step 1", "7 step 2", "7 step 3"}, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

func TestElicitationAndRootsRelayed(t *testing.T) {
	var gotParams json.RawMessage
	c := connect(t, Options{
		Config:      fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "ask", Behavior: fixture.BehaviorElicit}, {Name: "roots", Behavior: fixture.BehaviorRoots}}}),
		Elicitation: true,
		Roots:       true,
		Handlers: Handlers{
			Elicit: func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
				gotParams = params
				return json.RawMessage(`{"action":"accept","content":{"answer":"forty-two"}}`), nil
			},
			ListRoots: func(context.Context) (json.RawMessage, error) {
				return json.RawMessage(`{"roots":[{"uri":"file:///work","name":"work"}]}`), nil
			},
		},
	})
	res, err := c.CallTool(testCtx(t), "ask", json.RawMessage(`{"message":"what?"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res, []byte("forty-two")) {
		t.Errorf("elicit result = %s", res)
	}
	if !bytes.Contains(gotParams, []byte(`"message":"what?"`)) || !bytes.Contains(gotParams, []byte(`"requestedSchema"`)) {
		t.Errorf("host got params %s", gotParams)
	}
	res, err = c.CallTool(testCtx(t), "roots", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(res, []byte("file:///work")) {
		t.Errorf("roots result = %s", res)
	}
}

func TestCapabilitiesAdvertised(t *testing.T) {
	for _, tc := range []struct {
		name        string
		legacy      bool // the server speaks 2025-11-25 only
		elicit      bool
		roots       bool
		wantCapsRaw string
	}{
		{"none", false, false, false, `"io.modelcontextprotocol/clientCapabilities":{}`},
		{"both", false, true, true, `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"roots":{}}`},
		{"legacy none", true, false, false, `"capabilities":{}`},
		{"legacy both", true, true, true, `"capabilities":{"elicitation":{"form":{}},"roots":{}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawLog := filepath.Join(t.TempDir(), "raw.log")
			c := connect(t, Options{
				Config:      fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "ask", Behavior: fixture.BehaviorElicit}}, RawLogFile: rawLog, Legacy: tc.legacy}),
				Elicitation: tc.elicit,
				Roots:       tc.roots,
				Handlers: Handlers{
					Elicit: func(context.Context, json.RawMessage) (json.RawMessage, error) {
						return json.RawMessage(`{"action":"decline"}`), nil
					},
					ListRoots: func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{"roots":[]}`), nil },
				},
			})
			lines := fixture.ReadLines(rawLog)
			// Every connection starts with the modern probe; a legacy
			// server's refusal of it is followed by initialize.
			if len(lines) == 0 || !strings.Contains(lines[0], `"server/discover"`) || !strings.Contains(lines[0], `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`) {
				t.Fatalf("first line the server read: %q", lines)
			}
			handshake := lines[0]
			if tc.legacy {
				if len(lines) < 2 || !strings.Contains(lines[1], `"initialize"`) || !strings.Contains(lines[1], `"protocolVersion":"2025-11-25"`) {
					t.Fatalf("lines the server read: %q, want initialize 2025-11-25 after the probe", lines)
				}
				handshake = lines[1]
			}
			if !strings.Contains(handshake, tc.wantCapsRaw) {
				t.Errorf("handshake %s lacks %s", handshake, tc.wantCapsRaw)
			}
			if !tc.elicit {
				res, err := c.CallTool(testCtx(t), "ask", nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Contains(res, []byte(`"isError":true`)) {
					t.Errorf("elicitation without the capability: %s", res)
				}
			}
		})
	}
}

func TestServerError(t *testing.T) {
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{ToolCount: 1})})
	_, err := c.CallTool(testCtx(t), "no_such_tool", nil, nil)
	var se *ServerError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *ServerError", err)
	}
	if se.Code != -32602 || se.Server != "fx" {
		t.Errorf("ServerError = %+v", se)
	}
	if _, err := c.CallTool(testCtx(t), "tool_0", json.RawMessage(`{bad`), nil); err == nil {
		t.Error("invalid arguments accepted")
	}
}

func BenchmarkCallToolEcho(b *testing.B) {
	cfg := fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}})
	args := json.RawMessage(`{"x":"hello"}`)
	b.Run("mcpclient", func(b *testing.B) {
		c := connect(b, Options{Config: cfg})
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.CallTool(ctx, "echo", args, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("go-sdk", func(b *testing.B) {
		cmd := execCommand(cfg)
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		cs, err := client.Connect(testCtx(b), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: DefaultProtocolVersion})
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestOversizedLineIsFatal(t *testing.T) {
	c := connect(t, Options{
		Config:       fixture.Config("fx", fixture.Spec{Raw: &fixture.RawSpec{OversizeLineBytes: 200 << 10}}),
		MaxLineBytes: 100 << 10,
	})
	_, err := c.ListToolsPage(testCtx(t), "")
	if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "line of more than 102400 bytes") {
		t.Fatalf("err = %v", err)
	}
	<-c.Done()
}
