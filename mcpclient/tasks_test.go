package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcp-sidecar/mcp-sidecar/config"
)

// modernTaskServer is a Streamable HTTP server of MCP 2026-07-28 with the
// tasks extension: tools/call makes task t1, which asks for an elicitation
// (tasks/update answers it) and then completes.
type modernTaskServer struct {
	mu      sync.Mutex
	seen    []string // "method Mcp-Name tasks-declared"
	updates []string // the inputResponses of tasks/update
	polls   int
}

func (s *modernTaskServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta struct {
				Caps struct {
					Extensions map[string]json.RawMessage `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
			InputResponses json.RawMessage `json:"inputResponses"`
		} `json:"params"`
	}
	if r.Method != http.MethodPost || json.Unmarshal(body, &msg) != nil {
		http.Error(w, "no", http.StatusMethodNotAllowed)
		return
	}
	_, declared := msg.Params.Meta.Caps.Extensions[TasksExtension]
	s.mu.Lock()
	s.seen = append(s.seen, strings.TrimSpace(msg.Method+" "+r.Header.Get("Mcp-Name")+" "+map[bool]string{true: "tasks"}[declared]))
	var result string
	switch msg.Method {
	case "server/discover":
		result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	case "tools/list":
		result = `{"tools":[{"name":"slow","inputSchema":{"type":"object"}}]}`
	case "tools/call":
		result = `{"resultType":"task","taskId":"t1","status":"working","createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","ttlMs":60000,"pollIntervalMs":1}`
	case "tasks/get":
		s.polls++
		switch {
		case len(s.updates) == 0:
			result = `{"taskId":"t1","status":"input_required","pollIntervalMs":1,"inputRequests":{"ok":{"method":"elicitation/create","params":{"message":"go on?","requestedSchema":{"type":"object","properties":{}}}}}}`
		case s.polls < 4:
			result = `{"taskId":"t1","status":"working","pollIntervalMs":1}`
		default:
			result = `{"taskId":"t1","status":"completed","result":{"content":[{"type":"text","text":"done"}],"z":12345678901234567890}}`
		}
	case "tasks/update":
		s.updates = append(s.updates, string(msg.Params.InputResponses))
		result = `{"resultType":"complete"}`
	case "tasks/cancel":
		result = `{"resultType":"complete"}`
	default:
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32601,"message":"no"}}`)
		return
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":`+result+`}`)
}

// TestModernTasks: on a server of the tasks extension a task call declares
// the extension and returns the server's CreateTaskResult; tasks/result
// waits for the end by tasks/get, answering the task's input through the
// handlers (tasks/update); tasks/get names the task in Mcp-Name; tasks/list,
// which the extension has not, is refused without reaching the server.
func TestModernTasks(t *testing.T) {
	s := &modernTaskServer{}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var statusMu sync.Mutex
	var statuses []string
	c := connect(t, Options{
		Config:      &config.ServerConfig{URL: srv.URL},
		Elicitation: true,
		Handlers: Handlers{
			Elicit: func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"action":"accept","content":{}}`), nil
			},
			TaskStatus: func(params json.RawMessage) {
				statusMu.Lock()
				defer statusMu.Unlock()
				statuses = append(statuses, string(params))
			},
		},
	})
	ctx := testCtx(t)
	created, err := c.CallToolTask(ctx, "slow", nil, nil, json.RawMessage(`{}`))
	if err != nil || !strings.Contains(string(created), `"resultType":"task","taskId":"t1"`) {
		t.Fatalf("CallToolTask: %s, %v", created, err)
	}
	res, err := c.Request(ctx, "tasks/result", json.RawMessage(`{"taskId":"t1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"content":[{"type":"text","text":"done"}],"z":12345678901234567890}`; string(res) != want {
		t.Errorf("tasks/result: %s, want the task's result as sent, %s", res, want)
	}
	if _, err := c.Request(ctx, "tasks/cancel", json.RawMessage(`{"taskId":"t1"}`)); err != nil {
		t.Errorf("tasks/cancel: %v", err)
	}
	_, err = c.Request(ctx, "tasks/list", nil)
	var se *ServerError
	if !errors.As(err, &se) || se.Code != -32601 || !strings.Contains(se.Message, "keeps no list of tasks") {
		t.Errorf("tasks/list: %v, want -32601 saying why", err)
	}
	// The statuses this client's polling saw reach the handler once each,
	// as a server's notifications would, without the task's result or
	// input requests.
	statusMu.Lock()
	wantStatuses := []string{
		`{"pollIntervalMs":1,"status":"input_required","taskId":"t1"}`,
		`{"pollIntervalMs":1,"status":"working","taskId":"t1"}`,
		`{"status":"completed","taskId":"t1"}`,
	}
	if diff := cmp.Diff(wantStatuses, statuses); diff != "" {
		t.Errorf("task statuses told (-want +got):\n%s", diff)
	}
	statusMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if diff := cmp.Diff([]string{`{"ok":{"action":"accept","content":{}}}`}, s.updates); diff != "" {
		t.Errorf("tasks/update input (-want +got):\n%s", diff)
	}
	want := []string{"server/discover", "tools/call slow tasks", "tasks/get t1 tasks", "tasks/update t1 tasks", "tasks/get t1 tasks", "tasks/get t1 tasks", "tasks/get t1 tasks", "tasks/cancel t1 tasks"}
	if diff := cmp.Diff(want, s.seen); diff != "" {
		t.Errorf("requests the server got (-want +got):\n%s", diff)
	}
}
