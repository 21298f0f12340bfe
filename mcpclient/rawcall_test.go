package mcpclient

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/fixture"
)

// TestRawCallLine checks the tools/call line the stdio path writes, as the
// server read it: ids from the connection's one table (the server/discover
// probe took 1, initialize 2: the raw fixture is a legacy server), _meta keys sorted with their values' bytes,
// whitespace between tokens compacted (a newline in the host's arguments
// would otherwise end the line), the task member, and the result returned
// as the server wrote it.
func TestRawCallLine(t *testing.T) {
	rawLog := filepath.Join(t.TempDir(), "raw.log")
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{
		Raw:        &fixture.RawSpec{},
		RawLogFile: rawLog,
	})})
	if !c.CanStartToolCall() {
		t.Fatal("a stdio connection cannot start calls")
	}
	args := "{\"text\": \"a b\",\n \"n\":\t12345678901234567890}"
	meta := map[string]any{
		"progressToken":       json.RawMessage(`"p-1"`),
		"codex/sandbox-state": json.RawMessage("{\"h\":\"<&>\", \"e\":\"\\u00e9\"}"),
		"a-first":             "plain <value>",
	}
	res, err := c.callTool(testCtx(t), ToolCall{Name: "echo", Arguments: json.RawMessage(args), Meta: meta, Task: json.RawMessage(`{ "ttl": 5 }`)})
	if err != nil {
		t.Fatal(err)
	}
	// The raw fixture answers with the arguments it got as text.
	wantArgs := `{"text":"a b","n":12345678901234567890}`
	wantRes, _ := json.Marshal(wantArgs)
	if got, want := string(res), `{"content":[{"type":"text","text":`+string(wantRes)+`}]}`; got != want {
		t.Errorf("result:\n got %s\nwant %s", got, want)
	}
	if _, err := c.CallTool(testCtx(t), "echo", nil, nil); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range fixture.ReadLines(rawLog) {
		if strings.Contains(l, `"tools/call"`) {
			lines = append(lines, l)
		}
	}
	want := []string{
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"a-first":"plain <value>","codex/sandbox-state":{"h":"<&>","e":"\u00e9"},"progressToken":"p-1"},"name":"echo","arguments":` + wantArgs + `,"task":{"ttl":5}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{}}}`,
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("tools/call lines the server read (-want +got):\n%s", diff)
	}
}

// TestRawCallLargeArguments: arguments over the in-place threshold are
// written in three parts, and arrive whole.
func TestRawCallLargeArguments(t *testing.T) {
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{Raw: &fixture.RawSpec{}})})
	big := `{"data":"` + strings.Repeat("z", 3*rawWriteInPlace) + `"}`
	res, err := c.CallTool(testCtx(t), "echo", json.RawMessage(big), map[string]any{"k": json.RawMessage(`1`)})
	if err != nil {
		t.Fatal(err)
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	if tc, ok := r.Content[0].(*mcp.TextContent); !ok || tc.Text != big {
		t.Errorf("the server did not get the arguments whole (%d bytes back)", len(res))
	}
}

// TestRawCallErrors: a JSON-RPC error answer is a *ServerError naming the
// server, as on go-sdk's path.
func TestRawCallErrors(t *testing.T) {
	c := connect(t, Options{Config: fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{{Name: "echo"}}})})
	_, err := c.CallTool(testCtx(t), "no-such-tool", nil, nil)
	var se *ServerError
	if !errors.As(err, &se) || se.Code != -32602 || se.Server != "fx" || se.Method != "tools/call" {
		t.Fatalf("err = %#v, want a -32602 ServerError of server fx", err)
	}
}

func TestResponseMembers(t *testing.T) {
	tests := []struct {
		line             string
		id, result, errv string
		ok               bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"a":[1,{"b":"}"}]}}`, `1`, `{"a":[1,{"b":"}"}]}`, "", true},
		{`{"result":{},"jsonrpc":"2.0","id":7}`, `7`, `{}`, "", true},
		{`{"jsonrpc":"2.0","id":"r2","error":{"code":-1,"message":"m"}}`, `"r2"`, "", `{"code":-1,"message":"m"}`, true},
		{`{"jsonrpc":"2.0","id":"r3","method":"x"}`, "", "", "", false},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, "", "", "", false},
		{`{"jsonrpc":"2.0","id":"r4","error":null}`, "", "", "", false},
		{`[{"jsonrpc":"2.0","id":"r5","result":1}]`, "", "", "", false},
		// Names are compared unescaped, and the last of a name counts,
		// as encoding/json (and go-sdk's decoder) has them.
		{`{"jsonrpc":"2.0","\u0069d":8,"result":{}}`, `8`, `{}`, "", true},
		{`{"jsonrpc":"2.0","id":9,"result":1,"\u0072esult":2}`, `9`, `2`, "", true},
		{`{"jsonrpc":"2.0","id":10,"m\u0065thod":"x"}`, "", "", "", false},
	}
	for _, tt := range tests {
		id, result, errv, ok := responseMembers([]byte(tt.line))
		if ok != tt.ok || (ok && (string(id) != tt.id || string(result) != tt.result || string(errv) != tt.errv)) {
			t.Errorf("responseMembers(%s) = %s, %s, %s, %v; want %s, %s, %s, %v", tt.line, id, result, errv, ok, tt.id, tt.result, tt.errv, tt.ok)
		}
	}
}

// answers collects what StartToolCall's done callbacks get, by call.
type answers struct {
	mu  sync.Mutex
	got map[string][]error // nil error: a result
	ch  chan string
}

func newAnswers() *answers { return &answers{got: map[string][]error{}, ch: make(chan string, 16)} }

// receiverFunc is a function as a CallReceiver.
type receiverFunc func(json.RawMessage, error)

func (f receiverFunc) CallEnded(res json.RawMessage, err error) { f(res, err) }

func (a *answers) done(name string) CallReceiver {
	return receiverFunc(func(res json.RawMessage, err error) {
		a.mu.Lock()
		a.got[name] = append(a.got[name], err)
		a.mu.Unlock()
		a.ch <- name
	})
}

func (a *answers) wait(t *testing.T, name string) error {
	t.Helper()
	select {
	case got := <-a.ch:
		if got != name {
			t.Fatalf("answer of %s, want %s", got, name)
		}
	case <-testCtx(t).Done():
		t.Fatalf("no answer of %s", name)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.got[name][len(a.got[name])-1]
}

// TestStartToolCall: a call started without waiting ends exactly once:
// by its answer, by Cancel (then done is never called and the server is
// told), or by the connection's end (with the connection's error, stderr
// included); no call starts on a connection that ended.
func TestStartToolCall(t *testing.T) {
	running, logs := make(chan struct{}, 4), make(chan string, 16)
	c := connect(t, Options{
		Config: fixture.Config("fx", fixture.Spec{Tools: []fixture.ToolSpec{
			{Name: "echo"}, {Name: "sleep", Behavior: fixture.BehaviorSleep}, {Name: "crash", Behavior: fixture.BehaviorCrash},
		}}),
		Handlers: Handlers{
			Progress: func(*mcp.ProgressNotificationParams) { running <- struct{}{} },
			Log: func(p *mcp.LoggingMessageParams) {
				if s, ok := p.Data.(string); ok {
					logs <- s
				}
			},
		},
	})
	if !c.CanStartToolCall() {
		t.Fatal("a stdio connection cannot start calls")
	}
	a := newAnswers()
	start := func(name, tool, args string, meta map[string]any) PendingCall {
		t.Helper()
		p, err := c.StartToolCall(ToolCall{Name: tool, Arguments: json.RawMessage(args), Meta: meta}, a.done(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return p
	}
	echo := start("echo", "echo", `{"x":1}`, nil)
	if err := a.wait(t, "echo"); err != nil {
		t.Fatalf("echo: %v", err)
	}
	if echo.Cancel(errors.New("too late")) {
		t.Error("Cancel took back a call that was answered")
	}

	// The sleep tool reports progress once it runs: cancel then.
	dropped := start("dropped", "sleep", `{"tag":"dropped"}`, map[string]any{"progressToken": "p"})
	<-running
	if !dropped.Cancel(errors.New("the caller gave up")) {
		t.Fatal("Cancel of a call in flight reported it ended")
	}
	for told := false; !told; {
		select {
		case l := <-logs:
			told = l == "cancelled sleep dropped"
		case <-testCtx(t).Done():
			t.Fatal("the server never learnt of the cancellation")
		}
	}

	start("waiting", "sleep", `{"tag":"waiting"}`, nil)
	start("crash", "crash", `{}`, nil)
	for _, name := range []string{"waiting", "crash"} {
		var err error
		select {
		case got := <-a.ch:
			a.mu.Lock()
			err = a.got[got][0]
			a.mu.Unlock()
		case <-testCtx(t).Done():
			t.Fatalf("%s never ended", name)
		}
		if !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "crashing in crash") {
			t.Errorf("call ended with %v, want the connection's loss with its stderr", err)
		}
	}
	if _, err := c.StartToolCall(ToolCall{Name: "echo"}, a.done("after")); !errors.Is(err, ErrConnectionLost) {
		t.Errorf("start after the end: %v, want the connection's error", err)
	}
	c.Close() // every goroutine of the connection has ended
	a.mu.Lock()
	defer a.mu.Unlock()
	want := map[string]int{"echo": 1, "waiting": 1, "crash": 1}
	got := map[string]int{}
	for name, errs := range a.got {
		got[name] = len(errs)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("done calls per call (-want +got):\n%s", diff)
	}
}

// gatedWriter is a server's input that takes nothing until its gate
// opens, and keeps what it was written.
type gatedWriter struct {
	entered chan struct{} // a write is waiting at the gate
	gate    chan struct{} // closed: writes go through
	mu      sync.Mutex
	buf     strings.Builder
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	select {
	case w.entered <- struct{}{}:
	default:
	}
	<-w.gate
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *gatedWriter) Close() error { return nil }

// TestWritesKeepTheirOrder: messages reach the server's input in the order
// they were sent, however they were sent (go-sdk's blocking write, a raw
// call that does not wait, large arguments in parts, a cancellation), also
// when the input is busy: a notifications/cancelled never overtakes the
// request it cancels, and no call overtakes an earlier one.
func TestWritesKeepTheirOrder(t *testing.T) {
	w := &gatedWriter{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	c := newConn(Options{Name: "fx", Config: &config.ServerConfig{Command: "fx"}, MaxServerRequests: 1})
	c.lc = &lineConn{w: w}
	c.w.use(c.lc)
	first := make(chan error, 1)
	go func() { first <- c.lc.writeParts([]byte(`{"first":true}` + "\n")) }()
	<-w.entered // the first write holds the input
	a := newAnswers()
	start := func(name string, args json.RawMessage) PendingCall {
		t.Helper()
		p, err := c.w.start(ToolCall{Name: name, Arguments: args}, a.done(name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	callA := start("a", json.RawMessage(`{}`))
	big := `{"data":"` + strings.Repeat("z", 2*rawWriteInPlace) + `"}`
	start("b", json.RawMessage(big))
	if !callA.Cancel(errors.New("given up")) {
		t.Fatal("call a had ended already")
	}
	start("c", json.RawMessage(`{}`))
	close(w.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	c.w.bg.Wait()
	var got []string
	for line := range strings.SplitSeq(strings.TrimSuffix(w.buf.String(), "\n"), "\n") {
		switch {
		case strings.Contains(line, `"first"`):
			got = append(got, "first")
		case strings.Contains(line, `"notifications/cancelled"`) && strings.Contains(line, `"requestId":1`):
			got = append(got, "cancel a")
		case strings.Contains(line, `"name":"a"`):
			got = append(got, "call a")
		case strings.Contains(line, `"name":"b"`) && strings.Contains(line, big):
			got = append(got, "call b")
		case strings.Contains(line, `"name":"c"`):
			got = append(got, "call c")
		default:
			got = append(got, "unexpected: "+line[:min(len(line), 80)])
		}
	}
	want := []string{"first", "call a", "call b", "cancel a", "call c"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what the server read, in order (-want +got):\n%s", diff)
	}
}

// TestServerRequestsAnsweredWithoutWaiting: the answers the read loop
// gives a server itself (a ping, a refusal) do not wait for the server to
// read them: a server that sends requests and does not read its stdin
// cannot stop the connection's read loop. They reach the server, in order,
// once it reads.
func TestServerRequestsAnsweredWithoutWaiting(t *testing.T) {
	w := &gatedWriter{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	c := newConn(Options{Name: "fx", Config: &config.ServerConfig{Command: "fx"}, MaxServerRequests: 1})
	c.lc = &lineConn{w: w}
	c.w.use(c.lc)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		for i, method := range []string{"ping", "roots/list", "no/such"} {
			id, _ := jsonrpc.MakeID(float64(i + 1))
			c.serverRequest(&jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(`{}`)})
		}
	}()
	select {
	case <-answered:
	case <-testCtx(t).Done():
		t.Fatal("answering the server's requests waited for the server to read")
	}
	close(w.gate)
	c.w.bg.Wait()
	want := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"roots are not supported by this client"}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"method \"no/such\" not found"}}` + "\n"
	if diff := cmp.Diff(want, w.buf.String()); diff != "" {
		t.Errorf("what the server read (-want +got):\n%s", diff)
	}
}

// TestCheckCallParams: a tools/call's arguments and task are checked
// unless the caller checked them (ToolCall.Checked: the sidecar's come
// from a host frame protocol checked whole), and then only the task's
// kind is: the arguments are not read a second time.
func TestCheckCallParams(t *testing.T) {
	c := &Conn{name: "s"}
	for _, tc := range []struct {
		call    ToolCall
		wantErr bool
		args    string
	}{
		{ToolCall{Name: "t"}, false, `{}`},
		{ToolCall{Name: "t", Arguments: json.RawMessage(`{"a":1}`)}, false, `{"a":1}`},
		{ToolCall{Name: "t", Arguments: json.RawMessage(`{"a":`)}, true, ""},
		{ToolCall{Name: "t", Task: json.RawMessage(`{"ttl":`)}, true, ""},
		{ToolCall{Name: "t", Task: json.RawMessage(`[]`), Checked: true}, true, ""},
		// Not checked again: the caller vouches for the bytes.
		{ToolCall{Name: "t", Arguments: json.RawMessage(`{"a":`), Checked: true}, false, `{"a":`},
		{ToolCall{Name: "t", Checked: true}, false, `{}`},
	} {
		call := tc.call
		err := c.checkCallParams(&call)
		if (err != nil) != tc.wantErr || err == nil && string(call.Arguments) != tc.args {
			t.Errorf("checkCallParams(%+v) = %v, arguments %s; want error %v, arguments %s", tc.call, err, call.Arguments, tc.wantErr, tc.args)
		}
	}
}
