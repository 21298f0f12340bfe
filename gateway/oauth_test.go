package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-sidecar/mcp-sidecar/internal/testing/oauthtest"
)

// TestAuthorization: a server that needs OAuth is authorized through a
// client that supports URL-mode elicitation (the client opens the URL,
// the sidecar gets the redirect); for any other client its calls are tool
// errors naming 'mcp-sidecar login SERVER'.
func TestAuthorization(t *testing.T) {
	t.Run("URL elicitation", func(t *testing.T) {
		as := oauthtest.NewAuthServer(t, oauthtest.Config{})
		srv := oauthtest.NewServer(t, as, oauthtest.ServerConfig{})
		g := start(t, setup{servers: map[string]any{"remote": map[string]any{"url": srv.URL()}}})
		asked := make(chan string, 1)
		cs := connect(t, g, legacy, &mcp.ClientOptions{
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
			ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked <- r.Params.Message
				// The user's browser: the authorization server redirects
				// at once to the sidecar's loopback listener.
				resp, err := http.Get(r.Params.URL)
				if err != nil {
					return nil, err
				}
				resp.Body.Close()
				return &mcp.ElicitResult{Action: "accept"}, nil
			},
		})
		if diff := cmp.Diff([]string{"echo"}, toolNames(t, cs)); diff != "" {
			t.Errorf("tools after authorization (-want +got):\n%s", diff)
		}
		select {
		case msg := <-asked:
			if !strings.Contains(msg, `"remote"`) {
				t.Errorf("elicitation message %q does not name the server", msg)
			}
		default:
			t.Error("the client was not asked to open the authorization URL")
		}
	})
	t.Run("no URL elicitation", func(t *testing.T) {
		as := oauthtest.NewAuthServer(t, oauthtest.Config{})
		srv := oauthtest.NewServer(t, as, oauthtest.ServerConfig{})
		g := start(t, setup{servers: map[string]any{"remote": map[string]any{"url": srv.URL()}}})
		cs := connect(t, g, legacy, nil)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(text(t, res), "mcp-sidecar login remote") {
			t.Errorf("call of a server that needs authorization: isError %v, %q; want a tool error naming mcp-sidecar login remote", res.IsError, text(t, res))
		}
	})
}
