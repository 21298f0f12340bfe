package sidecar

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-sidecar/mcp-sidecar/catalog"
	"github.com/mcp-sidecar/mcp-sidecar/mcpclient"
	"github.com/mcp-sidecar/mcp-sidecar/protocol"
)

// Tasks (server side): a tools/call with task is forwarded with it and
// answered with the server's CreateTaskResult; the task is then reached
// with tasks/get, tasks/result, tasks/list and tasks/cancel on the same
// server. Sandbox metadata and the binding check apply to a task-augmented
// call as to any call (toolsCall).

// taskMethod forwards tasks/get, tasks/result and tasks/cancel.
func (s *Server) taskMethod(method string) handlerFunc {
	return func(ctx context.Context, rq *request) (result, error) {
		var p protocol.TaskParams
		if err := decodeParams(rq.params, &p); err != nil {
			return result{}, err
		}
		if p.TaskID == "" {
			return result{}, protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "taskId is required")
		}
		body, _ := json.Marshal(map[string]string{"taskId": p.TaskID})
		res, err := s.forward(ctx, rq, method, p.SessionID, p.Server, func(ctx context.Context, conn *mcpclient.Conn) (json.RawMessage, error) {
			return conn.Request(ctx, method, body)
		})
		if raw, ok := res.value.(json.RawMessage); ok && err == nil && method == protocol.MethodTasksResult {
			raw = scrubErrorResult(s.serverSecrets(s.environment(), p.Server), raw)
			res.value = s.limitTaskResult(p.SessionID, p.Server, raw)
		}
		return res, err
	}
}

func (s *Server) tasksList(ctx context.Context, rq *request) (result, error) {
	var p protocol.TasksListParams
	if err := decodeParams(rq.params, &p); err != nil {
		return result{}, err
	}
	body := json.RawMessage(`{}`)
	if p.Cursor != "" {
		body, _ = json.Marshal(map[string]string{"cursor": p.Cursor})
	}
	return s.forward(ctx, rq, protocol.MethodTasksList, p.SessionID, p.Server, func(ctx context.Context, conn *mcpclient.Conn) (json.RawMessage, error) {
		return conn.Request(ctx, protocol.MethodTasksList, body)
	})
}

// checkTaskMode refuses a call whose use of task does not match what the
// server and the tool declared (MCP 2025-11-25, tasks, "Tool-Level
// Negotiation"): a server whose capabilities lack tasks.requests.tools.call
// takes no task, whatever its tools say, and its tools' taskSupport is not
// considered; otherwise "required" needs task, and a tool that does not say
// "optional" or "required" takes none.
func checkTaskMode(sc *serverConn, conn *mcpclient.Conn, t catalog.Tool, task json.RawMessage) error {
	support := t.TaskSupport
	withTask := hasTask(task)
	if conn.Era() == mcpclient.EraModern {
		// MCP 2026-07-28: tasks are an extension the server declares, and
		// the server decides per call whether it becomes one; tools say
		// nothing of it.
		switch {
		case withTask && !modernTasks(conn.Capabilities()):
			return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams,
				fmt.Sprintf("server %q does not take task-augmented calls (its capabilities have no extensions[%q]): call tool %q without task", sc.name, mcpclient.TasksExtension, t.Name)).WithServer(sc.name, t.Name)
		case withTask && !isJSONObject(task):
			return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "task must be a JSON object ({} or {\"ttl\": milliseconds})")
		}
		return nil
	}
	if (withTask || support == "required") && !taskToolCalls(conn.Capabilities()) {
		if !withTask {
			return nil
		}
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams,
			fmt.Sprintf("server %q does not take task-augmented calls (its capabilities have no tasks.requests.tools.call): call tool %q without task", sc.name, t.Name)).WithServer(sc.name, t.Name)
	}
	switch {
	case support == "required" && !withTask:
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams,
			fmt.Sprintf("tool %q of server %q must be called as a task (execution.taskSupport is \"required\"): give tools/call a task, e.g. {\"task\": {}}", t.Name, sc.name)).WithServer(sc.name, t.Name)
	case withTask && support != "required" && support != "optional":
		if support == "" {
			support = "forbidden"
		}
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams,
			fmt.Sprintf("tool %q of server %q cannot be called as a task (execution.taskSupport is %q): call it without task", t.Name, sc.name, support)).WithServer(sc.name, t.Name)
	case withTask && !isJSONObject(task):
		return protocol.NewError(protocol.CodeInvalidParams, protocol.KindInvalidParams, "task must be a JSON object ({} or {\"ttl\": milliseconds})")
	}
	return nil
}

// taskToolCalls reports whether server capabilities declare
// tasks.requests.tools.call.
func taskToolCalls(caps json.RawMessage) bool {
	var c struct {
		Tasks struct {
			Requests struct {
				Tools struct {
					Call json.RawMessage `json:"call"`
				} `json:"tools"`
			} `json:"requests"`
		} `json:"tasks"`
	}
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	call := c.Tasks.Requests.Tools.Call
	return len(call) > 0 && string(call) != "null"
}

// modernTasks reports whether server capabilities declare the tasks
// extension (MCP 2026-07-28).
func modernTasks(caps json.RawMessage) bool {
	var c struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(caps, &c) != nil {
		return false
	}
	ext, ok := c.Extensions[mcpclient.TasksExtension]
	return ok && string(ext) != "null"
}

// hasTask reports whether a tools/call's task member asks for a task
// (absent and null do not).
func hasTask(task json.RawMessage) bool {
	return len(task) > 0 && string(task) != "null"
}

// onTaskStatus forwards a server's notifications/tasks/status.
func (sc *serverConn) onTaskStatus(params json.RawMessage) {
	sc.sess.srv.notify(protocol.NotifyTaskStatus, protocol.TaskStatusParams{SessionID: sc.sess.id, Server: sc.name, Params: params})
}
