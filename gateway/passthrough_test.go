package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// twoWithResources are two servers with resources, a template and a
// prompt each, started eagerly (no cache).
func twoWithResources() map[string]any {
	spec := func(name string) fixture.Spec {
		return fixture.Spec{
			Tools:             []fixture.ToolSpec{tool("echo", "")},
			Resources:         []fixture.ResourceSpec{{URI: name + "://readme", Name: "readme", Text: "about " + name}},
			ResourceTemplates: []fixture.TemplateSpec{{URITemplate: name + "://notes/{id}", Name: "notes", Text: "a note of " + name}},
			Prompts:           []fixture.PromptSpec{{Name: "greet", Args: []string{"who"}, Text: "hello from " + name}},
			Subscriptions:     true,
		}
	}
	return map[string]any{"alpha": server(spec("alpha")), "beta": server(spec("beta"))}
}

func TestResourcesAndPrompts(t *testing.T) {
	g := start(t, setup{servers: twoWithResources()})
	cs := connect(t, g, legacy, nil)
	ctx := context.Background()
	// The servers start with the session; their listing waits for them.
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	if diff := cmp.Diff([]string{"alpha://readme", "beta://readme"}, uris); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tpl.ResourceTemplates) != 2 {
		t.Errorf("templates: %d, want 2", len(tpl.ResourceTemplates))
	}
	for uri, want := range map[string]string{"beta://readme": "about beta", "alpha://notes/7": "a note of alpha", "beta://notes/1": "a note of beta"} {
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Errorf("read %s: %v", uri, err)
			continue
		}
		if got := rr.Contents[0].Text; got != want {
			t.Errorf("read %s: %q, want %q (routed to its owner)", uri, got, want)
		}
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "gamma://x"})
	var we *jsonrpc.Error
	if !errors.As(err, &we) || we.Code != -32002 {
		t.Errorf("read of a resource no server has: %v, want -32002", err)
	}

	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var prompts []string
	for _, p := range pl.Prompts {
		prompts = append(prompts, p.Name)
	}
	if diff := cmp.Diff([]string{"mcp__alpha__greet", "mcp__beta__greet"}, prompts); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__beta__greet", Arguments: map[string]string{"who": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := gp.Messages[0].Content.(*mcp.TextContent).Text; got != "hello from beta who=Ada" {
		t.Errorf("prompt: %q", got)
	}
}

func TestResourceSubscription(t *testing.T) {
	servers := twoWithResources()
	servers["alpha"] = server(fixture.Spec{
		Tools:         []fixture.ToolSpec{tool("update", fixture.BehaviorUpdate)},
		Resources:     []fixture.ResourceSpec{{URI: "alpha://readme", Name: "readme", Text: "x"}},
		Subscriptions: true,
	})
	g := start(t, setup{servers: servers})
	updated := make(chan string, 10)
	cs := connect(t, g, legacy, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}})
	ctx := context.Background()
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "alpha://readme"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__alpha__update", Arguments: map[string]any{"uri": "alpha://readme"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "alpha://readme" {
			t.Errorf("updated %q", uri)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no notifications/resources/updated")
	}
}

// TestLoggingAndCancellation: a server's log message reaches the client
// (at the level it set, named after the server), and a client's
// notifications/cancelled reaches the server.
func TestLoggingAndCancellation(t *testing.T) {
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("log", fixture.BehaviorLog), tool("sleep", fixture.BehaviorSleep)}})}})
	logs := make(chan *mcp.LoggingMessageParams, 20)
	progress := make(chan struct{}, 1)
	cs := connect(t, g, legacy, &mcp.ClientOptions{
		LoggingMessageHandler:       func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params },
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { progress <- struct{}{} },
	})
	ctx := context.Background()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "log", Arguments: map[string]any{"level": "warning", "data": "careful"}}); err != nil {
		t.Fatal(err)
	}
	waitLog := func(want string) {
		t.Helper()
		for {
			select {
			case l := <-logs:
				if l.Data == want {
					if l.Logger != "alpha" {
						t.Errorf("log %q from logger %q, want the server's name", want, l.Logger)
					}
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("no log message %q", want)
			}
		}
	}
	waitLog("careful")

	cctx, cancel := context.WithCancel(ctx)
	p := &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 60000}}
	p.SetProgressToken("p")
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(cctx, p)
		errc <- err
	}()
	<-progress // the server is sleeping
	cancel()
	if err := <-errc; err == nil {
		t.Error("a cancelled call succeeded")
	}
	waitLog("cancelled sleep")
}

func TestSamplingAndRootsRelayed(t *testing.T) {
	for _, v := range []string{legacy, ""} {
		t.Run("protocol "+v, func(t *testing.T) { samplingAndRoots(t, v) })
	}
}

func samplingAndRoots(t *testing.T, version string) {
	g := start(t, setup{servers: map[string]any{"alpha": server(fixture.Spec{Tools: []fixture.ToolSpec{tool("sample", fixture.BehaviorSample), tool("roots", fixture.BehaviorRoots)}})}})
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- g.ServeStdio(ctx, st) }()
	c := mcp.NewClient(&mcp.Implementation{Name: "c"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}, RootsV2: &mcp.RootCapabilities{}},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "sampled " + r.Params.Messages[0].Content.(*mcp.TextContent).Text}}, nil
		},
	})
	c.AddRoots(&mcp.Root{URI: "file:///proj", Name: "proj"})
	cs, err := c.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cs.Close(); <-done }()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); !strings.Contains(got, "sampled hi") {
		t.Errorf("sample: %q", got)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); !strings.Contains(got, "file:///proj") {
		t.Errorf("roots: %q", got)
	}
}
