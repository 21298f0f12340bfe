package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/gateway"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// waitFor bounds a wait for an event that must come.
const waitFor = 30 * time.Second

// httpClient connects an MCP client of protocol version to the gateway's
// HTTP endpoint; it closes at cleanup.
func httpClient(t *testing.T, url, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if opts.Capabilities == nil {
		opts.Capabilities = &mcp.ClientCapabilities{}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client-" + version}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// serverPIDs are the distinct processes that answered a handshake, from
// a fixture's InitCountFile ("initialize <pid> <version>").
func serverPIDs(path string) []string {
	var pids []string
	for _, l := range fixture.ReadLines(path) {
		if f := strings.Fields(l); len(f) >= 2 && !slices.Contains(pids, f[1]) {
			pids = append(pids, f[1])
		}
	}
	return pids
}

// httpGateway serves alpha (a fixture with the given tools, its
// handshakes counted) over HTTP.
func httpGateway(t *testing.T, tools ...fixture.ToolSpec) (g *gateway.Gateway, url, inits, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	inits, pidFile = filepath.Join(dir, "inits"), filepath.Join(dir, "pid")
	g = start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{InitCountFile: inits, PIDFile: pidFile, Tools: tools})}})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	return g, srv.URL, inits, pidFile
}

// TestHTTPOneProcessForAllClients: two clients of 2025-11-25 and one of
// 2026-07-28 list and call the same stdio server over HTTP: it runs
// once; a client that leaves does not stop it; the gateway's Close
// does.
func TestHTTPOneProcessForAllClients(t *testing.T) {
	g, url, inits, pidFile := httpGateway(t, tool("echo", ""))
	ctx := context.Background()
	var clients []*mcp.ClientSession
	for _, v := range []string{legacy, legacy, "2026-07-28"} {
		cs := httpClient(t, url, v, nil)
		clients = append(clients, cs)
		if diff := cmp.Diff([]string{"echo"}, toolNames(t, cs)); diff != "" {
			t.Fatalf("protocol %s: tools (-want +got):\n%s", v, diff)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"v": v}})
		if err != nil {
			t.Fatal(err)
		}
		if got := text(t, res); got != `{"v":"`+v+`"}` {
			t.Errorf("protocol %s: echo %q", v, got)
		}
	}
	if pids := serverPIDs(inits); len(pids) != 1 {
		t.Fatalf("server processes %v for 3 clients, want 1: %q", pids, fixture.ReadLines(inits))
	}
	pid := fixture.ReadPID(t, pidFile)

	// The first client leaves; the server goes on for the others.
	if err := clients[0].Close(); err != nil {
		t.Fatal(err)
	}
	for _, cs := range clients[1:] {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
	}
	// A client that comes later uses it too.
	late := httpClient(t, url, legacy, nil)
	if _, err := late.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if pids := serverPIDs(inits); len(pids) != 1 || !alive(pid) {
		t.Fatalf("server processes %v (first %d alive: %v) after a client left and one came, want the first only", pids, pid, alive(pid))
	}

	// Close returns once the sidecar has ended the session's processes.
	if err := g.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if alive(pid) {
		t.Errorf("server process %d still runs after the gateway closed", pid)
	}
}

// TestHTTPDisconnectCancelsOwnCall: a client that ends its session
// mid-call cancels its call, not another client's call of the same server
// process, which goes on running for the others.
func TestHTTPDisconnectCancelsOwnCall(t *testing.T) {
	_, url, inits, _ := httpGateway(t, tool("sleep", fixture.BehaviorSleep), tool("echo", ""))
	ctx := context.Background()
	logs := make(chan string, 10)
	started := make(chan any, 2)
	progress := func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { started <- r.Params.ProgressToken }
	a := httpClient(t, url, legacy, &mcp.ClientOptions{ProgressNotificationHandler: progress})
	b := httpClient(t, url, legacy, &mcp.ClientOptions{
		ProgressNotificationHandler: progress,
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			if s, ok := r.Params.Data.(string); ok {
				logs <- s
			}
		},
	})
	if err := b.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	calls := map[string]chan error{}
	bctx, cancelB := context.WithCancel(ctx)
	defer cancelB()
	for _, c := range []struct {
		tag string
		cs  *mcp.ClientSession
		ctx context.Context
	}{{"a", a, ctx}, {"b", b, bctx}} {
		done := make(chan error, 1)
		calls[c.tag] = done
		p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"tag": c.tag}}
		p.SetProgressToken(c.tag)
		go func() {
			_, err := c.cs.CallTool(c.ctx, p)
			done <- err
		}()
		// The call has reached the server.
		select {
		case <-started:
		case <-time.After(waitFor):
			t.Fatalf("call %s did not start", c.tag)
		}
	}
	// a ends its session (HTTP DELETE) mid-call. (go-sdk's own Close
	// waits for the calls in flight first.)
	del, err := http.NewRequest(http.MethodDelete, url+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("Mcp-Session-Id", a.ID())
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %s", resp.Status)
	}
	// The server's log of the cancellation reaches b: it is a client of
	// the same server process.
	select {
	case got := <-logs:
		if got != "cancelled sleep a" {
			t.Fatalf("b got log %q, want a's call cancelled first", got)
		}
	case <-time.After(waitFor):
		t.Fatal("a's call was not cancelled at the server (or b did not hear of it)")
	}
	// b's call is still in flight, and the server serves b.
	select {
	case err := <-calls["b"]:
		t.Fatalf("b's call ended when a left: %v", err)
	default:
	}
	if _, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	cancelB()
	select {
	case got := <-logs:
		if got != "cancelled sleep b" {
			t.Errorf("b got log %q, want its own call cancelled", got)
		}
	case <-time.After(waitFor):
		t.Fatal("b's cancelled call was not cancelled at the server")
	}
	if pids := serverPIDs(inits); len(pids) != 1 {
		t.Errorf("server processes %v, want 1", pids)
	}
}

// TestHTTPServerRequestReachesCaller: a server's elicitation during
// client B's call reaches B, not client A, whose own call of the same
// server is in flight; for a client of 2026-07-28 too, as an
// input-required round.
func TestHTTPServerRequestReachesCaller(t *testing.T) {
	_, url, inits, _ := httpGateway(t, tool("sleep", fixture.BehaviorSleep), tool("ask", fixture.BehaviorElicit))
	ctx := context.Background()
	elicitation := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}}
	answer := func(who string, asked chan<- string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if asked != nil {
				asked <- r.Params.Message
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": who}}, nil
		}
	}
	askedA := make(chan string, 10)
	started := make(chan struct{}, 1)
	a := httpClient(t, url, legacy, &mcp.ClientOptions{
		Capabilities:       elicitation,
		ElicitationHandler: answer("a", askedA),
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			started <- struct{}{}
		},
	})
	actx, cancelA := context.WithCancel(ctx)
	defer cancelA()
	p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"tag": "a"}}
	p.SetProgressToken("a")
	aDone := make(chan struct{})
	go func() {
		defer close(aDone)
		a.CallTool(actx, p)
	}()
	select {
	case <-started:
	case <-time.After(waitFor):
		t.Fatal("a's call did not start")
	}
	for _, v := range []string{legacy, "2026-07-28"} {
		t.Run(v, func(t *testing.T) {
			b := httpClient(t, url, v, &mcp.ClientOptions{Capabilities: elicitation, ElicitationHandler: answer("b", nil)})
			res, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"message": "b asks"}})
			if err != nil {
				t.Fatal(err)
			}
			if got := text(t, res); !strings.Contains(got, `"answer":"b"`) {
				t.Errorf("b's call got %q, want b's answer", got)
			}
		})
	}
	select {
	case m := <-askedA:
		t.Errorf("a was asked %q, a question of b's call", m)
	default:
	}
	cancelA()
	<-aDone
	if pids := serverPIDs(inits); len(pids) != 1 {
		t.Errorf("server processes %v, want 1", pids)
	}
}

// TestHTTPSubscriptionsShared: two clients subscribed to a resource of
// the server they share make one subscription at the server; an update
// reaches both; the subscription ends at the server when the last
// subscriber leaves, not before.
func TestHTTPSubscriptionsShared(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events")
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{
		EventsFile:    events,
		Tools:         []fixture.ToolSpec{tool("update", fixture.BehaviorUpdate)},
		Resources:     []fixture.ResourceSpec{{URI: "alpha://readme", Name: "readme", Text: "x"}},
		Subscriptions: true,
	})}})
	srv := httptest.NewServer(g.Handler(gateway.HTTPOptions{}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	updated := map[string]chan string{}
	clients := map[string]*mcp.ClientSession{}
	for _, name := range []string{"a", "b"} {
		ch := make(chan string, 10)
		updated[name] = ch
		clients[name] = httpClient(t, srv.URL, legacy, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			ch <- r.Params.URI
		}})
		if _, err := clients[name].ListResources(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if err := clients[name].Subscribe(ctx, &mcp.SubscribeParams{URI: "alpha://readme"}); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"subscribe alpha://readme"}, fixture.ReadLines(events)); diff != "" {
		t.Errorf("server events after two subscriptions (-want +got):\n%s", diff)
	}
	if _, err := clients["a"].CallTool(ctx, &mcp.CallToolParams{Name: "update", Arguments: map[string]any{"uri": "alpha://readme"}}); err != nil {
		t.Fatal(err)
	}
	for name, ch := range updated {
		select {
		case uri := <-ch:
			if uri != "alpha://readme" {
				t.Errorf("%s: updated %q", name, uri)
			}
		case <-time.After(waitFor):
			t.Fatalf("%s got no notifications/resources/updated", name)
		}
	}
	if err := clients["a"].Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "alpha://readme"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"subscribe alpha://readme"}, fixture.ReadLines(events)); diff != "" {
		t.Errorf("server events after one unsubscribed (-want +got):\n%s", diff)
	}
	// b, the last subscriber, ends its session: the gateway answers its
	// DELETE once its subscriptions are gone.
	del, err := http.NewRequest(http.MethodDelete, srv.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	del.Header.Set("Mcp-Session-Id", clients["b"].ID())
	resp, err := http.DefaultClient.Do(del)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{"subscribe alpha://readme", "unsubscribe alpha://readme"}, fixture.ReadLines(events)); diff != "" {
		t.Errorf("server events after the last subscriber left (-want +got):\n%s", diff)
	}
}
