package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/mcp-sidecar/mcp-sidecar/config"
	"github.com/mcp-sidecar/mcp-sidecar/internal/ctxsleep"
)

// Tasks. A legacy server (2025-11-25) takes tools/call's task parameter and
// tasks/get, tasks/result, tasks/list and tasks/cancel, which the caller
// sends with CallToolTask and Request as they are. A modern server has
// tasks as an extension (io.modelcontextprotocol/tasks; see the ext-tasks
// repository of modelcontextprotocol): the client declares it in the
// request's capabilities, the server decides whether a tools/call becomes a
// task (a CreateTaskResult with resultType "task", returned as sent), the
// client polls tasks/get, answers a task's input requests with
// tasks/update, and may tasks/cancel; there is no tasks/list and no
// blocking tasks/result. For the caller's one surface, on a modern
// connection:
//
//   - CallToolTask declares the extension on that call (the task
//     parameter itself is not sent: the protocol has none);
//   - Request("tasks/get" | "tasks/cancel" | "tasks/update") declares it
//     too, and over HTTP names the task in Mcp-Name;
//   - Request("tasks/result") polls tasks/get at the server's
//     pollIntervalMs until the task ends, answering its input requests
//     through the handlers (tasks/update), and returns its result (or its
//     error);
//   - Request("tasks/list") is refused: such a server keeps no list.

// TasksExtension is the id of MCP's tasks extension.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Bounds of tasks/result's polling of a modern server: the pause between
// two tasks/get when the server names none, and the range a server's
// pollIntervalMs is kept in.
const (
	defaultPoll = time.Second
	minPoll     = 50 * time.Millisecond
	maxPoll     = 30 * time.Second
)

// modernTaskRequest sends a task method to a modern server.
func (c *Conn) modernTaskRequest(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	switch method {
	case "tasks/list":
		return nil, &ServerError{Server: c.name, Method: method, Code: -32601,
			Message: "tasks/list does not exist for this server: it speaks MCP " + c.protocol + ", whose tasks extension keeps no list of tasks"}
	case "tasks/result":
		return c.taskResult(ctx, params)
	}
	return c.taskCall(ctx, method, params)
}

// taskCall sends a tasks/* request with the extension declared, naming the
// task in Mcp-Name over HTTP (which go-sdk does not know to do).
func (c *Conn) taskCall(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(params, &p)
	if c.transport == config.TransportHTTP && p.TaskID != "" {
		ctx = withParamHeaders(ctx, http.Header{nameHeader: {p.TaskID}})
	}
	select {
	case <-c.done:
		return nil, c.Err()
	default:
	}
	if c.proc == nil {
		var stop func()
		ctx, stop = c.bindLife(ctx)
		defer stop()
	}
	return c.w.call(ctx, method, c.withMetaOf(params, c.taskMeta))
}

// taskResult waits for the end of a modern server's task, as tasks/result
// does on a legacy one.
func (c *Conn) taskResult(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return nil, fmt.Errorf("server %q: tasks/result: no taskId", c.name)
	}
	get := append(append([]byte(`{"taskId":`), jsonString(p.TaskID)...), '}')
	var lastStatus string
	for {
		raw, err := c.taskCall(ctx, "tasks/get", get)
		if err != nil {
			return nil, err
		}
		lastStatus = c.polledStatus(raw, lastStatus)
		var t struct {
			Status         string          `json:"status"`
			PollIntervalMs *float64        `json:"pollIntervalMs"`
			Result         json.RawMessage `json:"result"`
			Error          json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("server %q answered tasks/get with %s: %w", c.name, clipJSON(raw), ErrMalformedResult)
		}
		switch t.Status {
		case "completed":
			if err := c.checkResult("tasks/get", t.Result); err != nil {
				return nil, err
			}
			return t.Result, nil
		case "failed":
			_, err := c.response("tasks/result", nil, t.Error, nil)
			if err == nil {
				err = fmt.Errorf("server %q: task %q failed", c.name, p.TaskID)
			}
			return nil, err
		case "cancelled":
			return nil, &ServerError{Server: c.name, Method: "tasks/result", Code: -32800, Message: fmt.Sprintf("task %q was cancelled", p.TaskID)}
		case "input_required":
			ir, err := c.parseInputRequired("tasks/get", raw)
			if err != nil {
				return nil, err
			}
			if len(ir.requests) > 0 {
				responses, err := c.fulfil(ctx, "tasks/get", ir)
				if err != nil {
					return nil, err
				}
				update := fmt.Appendf(nil, `{"inputResponses":%s,"taskId":%s}`, responses, jsonString(p.TaskID))
				if _, err := c.taskCall(ctx, "tasks/update", update); err != nil {
					return nil, err
				}
				continue
			}
		case "working":
		default:
			return nil, fmt.Errorf("server %q answered tasks/get with status %q: %w", c.name, t.Status, ErrMalformedResult)
		}
		wait := defaultPoll
		if t.PollIntervalMs != nil {
			wait = min(max(time.Duration(*t.PollIntervalMs)*time.Millisecond, minPoll), maxPoll)
		}
		if err := ctxsleep.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// polledStatus tells the TaskStatus handler of a status this client's own
// polling saw change (a modern server's task, whose statuses this client
// learns by tasks/get rather than by the server's notifications), so that
// the caller hears of "working", "input_required" and the end as it does
// from a server that notifies them. The task goes out as the server
// described it, without its result, input requests or request state
// (which belong to the tasks/result answer and its rounds, not to a
// status). It returns the status seen.
func (c *Conn) polledStatus(raw json.RawMessage, last string) string {
	h := c.opts.Handlers.TaskStatus
	var task map[string]json.RawMessage
	if json.Unmarshal(raw, &task) != nil {
		return last
	}
	var status string
	if json.Unmarshal(task["status"], &status) != nil || status == last {
		return last
	}
	if h != nil {
		for _, k := range []string{"result", "error", "inputRequests", "requestState", "resultType"} {
			delete(task, k)
		}
		if params, err := json.Marshal(task); err == nil {
			h(params)
		}
	}
	return status
}
