package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/internal/inputrounds"
	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/fixture"
)

// modernDiscover is a DiscoverResult of a 2026-07-28 server, for the raw
// fixture.
const modernDiscover = `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`

// rawModern is a raw fixture that passes for a 2026-07-28 server (its
// server/discover answers a DiscoverResult) and answers as results says.
func rawModern(rawLog string, results map[string]json.RawMessage) fixture.Spec {
	r := map[string]json.RawMessage{"server/discover": json.RawMessage(modernDiscover)}
	for k, v := range results {
		r[k] = v
	}
	return fixture.Spec{RawLogFile: rawLog, Raw: &fixture.RawSpec{Results: r}}
}

// calls counts the requests of method the server read.
func calls(rawLog, method string) int {
	n := 0
	for _, l := range fixture.ReadLines(rawLog) {
		if strings.Contains(l, `"method":"`+method+`"`) {
			n++
		}
	}
	return n
}

// TestDiscoverAnsweredWithGarbage: a server that answers server/discover
// with something that is not a DiscoverResult fails the startup with an
// error that says so; it is not taken for a legacy server either. (An
// object without supportedVersions is: some legacy servers answer any
// method they do not know with {}; see TestNegotiation.)
func TestDiscoverAnsweredWithGarbage(t *testing.T) {
	for _, tc := range []struct {
		name, result, want string
	}{
		{"an array", `[1,2]`, "answered server/discover with an array as its result"},
		{"versions of the wrong kind", `{"supportedVersions":"2026-07-28"}`, "not a DiscoverResult"},
		{"no version this client speaks", `{"supportedVersions":["2031-01-01"],"capabilities":{}}`, `supports protocol versions ["2031-01-01"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawLog := filepath.Join(t.TempDir(), "raw.log")
			spec := fixture.Spec{RawLogFile: rawLog, Raw: &fixture.RawSpec{Results: map[string]json.RawMessage{"server/discover": json.RawMessage(tc.result)}}}
			c, err := Connect(testCtx(t), Options{Name: "fx", Config: fixture.Config("fx", spec)})
			if err == nil {
				c.Close()
				t.Fatal("Connect succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `server "fx"`) {
				t.Errorf("error %q, want it to name the server and say %q", err, tc.want)
			}
			if n := calls(rawLog, "initialize"); n != 0 {
				t.Errorf("%d initialize after a garbled server/discover: the server was taken for a legacy one", n)
			}
		})
	}
}

// TestServerLiesAboutItsVersion: a server that says it is modern and then
// answers like a legacy one fails the requests it refuses, each with its
// error, and the connection goes on; one that falls back to initialize and
// then names 2026-07-28 (which has no initialize) fails the startup.
func TestServerLiesAboutItsVersion(t *testing.T) {
	t.Run("modern, then legacy answers", func(t *testing.T) {
		spec := rawModern("", nil)
		spec.Raw.Errors = map[string]json.RawMessage{"tools/list": json.RawMessage(`{"code":-32002,"message":"Server not initialized"}`)}
		c := connect(t, Options{Config: fixture.Config("fx", spec)})
		if c.Era() != EraModern {
			t.Fatalf("Era() = %q", c.Era())
		}
		_, err := c.ListToolsPage(testCtx(t), "")
		var se *ServerError
		if !errors.As(err, &se) || se.Code != -32002 || se.Method != "tools/list" || se.Server != "fx" {
			t.Fatalf("tools/list: %v, want the server's error", err)
		}
		if _, err := c.CallTool(testCtx(t), "echo", nil, nil); err != nil {
			t.Errorf("a call after the refusal: %v", err)
		}
	})
	t.Run("legacy, then initialize names 2026-07-28", func(t *testing.T) {
		spec := fixture.Spec{Raw: &fixture.RawSpec{Results: map[string]json.RawMessage{
			"initialize": json.RawMessage(`{"protocolVersion":"2026-07-28","capabilities":{},"serverInfo":{"name":"raw","version":"1"}}`),
		}}}
		_, err := Connect(testCtx(t), Options{Name: "fx", Config: fixture.Config("fx", spec)})
		if err == nil || !strings.Contains(err.Error(), `answered initialize with protocol version "2026-07-28", which has no initialize handshake`) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestInputRequestsBadInput: results that ask for input wrongly, or
// forever, fail their call with an error that says why, the server is not
// sent what it asked for, and the connection goes on.
func TestInputRequestsBadInput(t *testing.T) {
	defer func(d time.Duration) { sheddingWait = d }(sheddingWait)
	sheddingWait = time.Millisecond
	ask := func(requests, state string) string {
		r := `{"resultType":"input_required"`
		if requests != "" {
			r += `,"inputRequests":` + requests
		}
		if state != "" {
			r += `,"requestState":` + state
		}
		return r + `}`
	}
	elicit := `{"q":{"method":"elicitation/create","params":{"message":"again?","requestedSchema":{"type":"object","properties":{}}}}}`
	for _, tc := range []struct {
		name     string
		result   string
		elicit   bool // the client declares elicitation
		want     string
		is       error
		requests int // tools/call the server reads
	}{
		{"requestState not a string", ask(elicit, `7`), true, "requestState that is not a string", ErrMalformedResult, 1},
		{"inputRequests not an object", ask(`[1]`, ""), true, "wrong kind", ErrMalformedResult, 1},
		{"input request without a method", ask(`{"q":{"params":{}}}`, ""), true, `input request "q" that is not {method, params}`, ErrMalformedResult, 1},
		{"input request params not an object", ask(`{"q":{"method":"roots/list","params":7}}`, ""), true, `params are not an object`, ErrMalformedResult, 1},
		{"a method no server asks a client", ask(`{"q":{"method":"tools/list","params":{}}}`, ""), true, `"tools/list" is not a request a server may ask of a client`, nil, 1},
		{"a capability not declared", ask(elicit, ""), false, "client does not support elicitation", nil, 1},
		{"input asked forever", ask(elicit, `"s"`), true, "still asked for input after 10 requests", ErrTooManyRounds, inputrounds.MaxRequests},
		{"nothing asked, ever", ask(`{}`, ""), true, "3 times in a row that it needs input without asking for any", ErrTooManyRounds, inputrounds.MaxShedding},
		{"more inputs at once than may wait on the host", ask(`{"a":{"method":"roots/list"},"b":{"method":"roots/list"},"c":{"method":"roots/list"}}`, ""), true, "asks for 3 inputs at once, more than the 2", ErrTooManyRounds, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rawLog := filepath.Join(t.TempDir(), "raw.log")
			c := connect(t, Options{
				Config:            fixture.Config("fx", rawModern(rawLog, map[string]json.RawMessage{"tools/call": json.RawMessage(tc.result)})),
				MaxServerRequests: 2,
				Roots:             true,
				Elicitation:       tc.elicit,
				Handlers: Handlers{
					Elicit: func(context.Context, json.RawMessage) (json.RawMessage, error) {
						return json.RawMessage(`{"action":"accept","content":{}}`), nil
					},
					ListRoots: func(context.Context) (json.RawMessage, error) { return json.RawMessage(`{"roots":[]}`), nil },
				},
			})
			// Both ways a call goes: waited for, and started from a read
			// loop (its rounds on a goroutine of the connection).
			_, err := c.CallTool(testCtx(t), "echo", nil, nil)
			ch := make(answerChan, 1)
			if _, serr := c.StartToolCall(ToolCall{Name: "echo"}, ch); serr != nil {
				t.Fatal(serr)
			}
			started := <-ch
			for i, err := range []error{err, started.err} {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `server "fx"`) {
					t.Errorf("call %d: %v, want an error naming the server and saying %q", i, err, tc.want)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("call %d: %v is not %v", i, err, tc.is)
				}
			}
			if n := calls(rawLog, "tools/call"); n != 2*tc.requests {
				t.Errorf("the server read %d tools/call, want %d for each of the two calls", n, tc.requests)
			}
			if _, err := c.ListToolsPage(testCtx(t), ""); err != nil {
				t.Errorf("the connection after the call: %v", err)
			}
		})
	}
}

// TestUnknownResultType: a modern server's result whose resultType this
// client does not know (nor a string) fails its request with
// ErrMalformedResult, naming the server and the value, whatever the
// request and however it was sent; it is not taken for a complete result,
// and the connection goes on.
func TestUnknownResultType(t *testing.T) {
	for _, tc := range []struct {
		name, resultType, want string
	}{
		{"a word of a later revision", `"deferred"`, `resultType "deferred"`},
		{"not a string", `7`, `resultType 7`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			result := json.RawMessage(`{"content":[{"type":"text","text":"x"}],"resultType":` + tc.resultType + `}`)
			c := connect(t, Options{Config: fixture.Config("fx", rawModern("", map[string]json.RawMessage{
				"tools/call":     result,
				"resources/read": result,
				"prompts/list":   result,
			}))})
			ctx := testCtx(t)
			_, callErr := c.CallTool(ctx, "echo", nil, nil)
			ch := make(answerChan, 1)
			if _, err := c.StartToolCall(ToolCall{Name: "echo"}, ch); err != nil {
				t.Fatal(err)
			}
			started := <-ch
			_, readErr := c.ReadResource(ctx, "file:///x")
			_, listErr := c.ListPromptsPage(ctx, "")
			for i, err := range []error{callErr, started.err, readErr, listErr} {
				if !errors.Is(err, ErrMalformedResult) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `server "fx"`) {
					t.Errorf("request %d: %v, want ErrMalformedResult naming the server and %s", i, err, tc.want)
				}
			}
			if _, err := c.ListToolsPage(ctx, ""); err != nil {
				t.Errorf("the connection after the refusals: %v", err)
			}
		})
	}
}

// TestListenRefusalDoesNotStick: a modern server that refuses
// subscriptions/listen fails that Subscribe; a later Subscribe of the same
// resource asks the server again rather than repeat the old refusal.
func TestListenRefusalDoesNotStick(t *testing.T) {
	rawLog := filepath.Join(t.TempDir(), "raw.log")
	spec := rawModern(rawLog, map[string]json.RawMessage{
		"server/discover": json.RawMessage(`{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"resources":{"subscribe":true}},"serverInfo":{"name":"raw","version":"1"}}`),
	})
	spec.Raw.Errors = map[string]json.RawMessage{"subscriptions/listen": json.RawMessage(`{"code":-32603,"message":"listening is down"}`)}
	c := connect(t, Options{Config: fixture.Config("fx", spec)})
	if err := c.ListenRefused(); err != nil {
		t.Errorf("ListenRefused() = %v before any stream", err)
	}
	for i := range 2 {
		err := c.Subscribe(testCtx(t), "file:///watched")
		var se *ServerError
		if !errors.As(err, &se) || se.Code != -32603 {
			t.Errorf("Subscribe %d: %v, want the server's refusal", i, err)
		}
		// Reported for servers/status.
		if !errors.As(c.ListenRefused(), &se) || se.Code != -32603 {
			t.Errorf("ListenRefused() = %v after Subscribe %d, want the server's refusal", c.ListenRefused(), i)
		}
	}
	if n := calls(rawLog, "subscriptions/listen"); n != 2 {
		t.Errorf("the server read %d subscriptions/listen, want one per Subscribe (2)", n)
	}
}

// TestModernServerRequestRefused: a 2026-07-28 server has no requests of
// its own (input goes in an input_required result): one it sends anyway
// is answered -32601, and the host is not asked.
func TestModernServerRequestRefused(t *testing.T) {
	spec := rawModern("", nil)
	spec.Raw.AskOnCall = json.RawMessage(`{"jsonrpc":"2.0","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}`)
	asked := make(chan struct{}, 1)
	c := connect(t, Options{
		Config:      fixture.Config("fx", spec),
		Elicitation: true,
		Handlers: Handlers{Elicit: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			asked <- struct{}{}
			return json.RawMessage(`{"action":"decline"}`), nil
		}},
	})
	res, err := c.CallTool(testCtx(t), "echo", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The raw server answers the call with the client's answer to its
	// request.
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s", res)
	}
	var answer struct {
		Error *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.Content[0].Text), &answer); err != nil || answer.Error == nil || answer.Error.Code != -32601 {
		t.Errorf("the server's request was answered %s, want -32601", r.Content[0].Text)
	}
	select {
	case <-asked:
		t.Error("the host was asked")
	default:
	}
}
