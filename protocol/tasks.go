package protocol

import "encoding/json"

// Tasks (MCP 2025-11-25, server side): tools/call with task answers the
// server's CreateTaskResult; these methods reach the task on its server,
// and the server's notifications/tasks/status reach the host as
// mcp/taskStatus.
const (
	MethodTasksGet    = "tasks/get"
	MethodTasksResult = "tasks/result"
	MethodTasksList   = "tasks/list"
	MethodTasksCancel = "tasks/cancel"
	NotifyTaskStatus  = "mcp/taskStatus"
)

// TaskParams are the params of tasks/get, tasks/result and tasks/cancel.
// The result is the server's, as received.
type TaskParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	TaskID    string `json:"taskId"`
}

// TasksListParams are the params of tasks/list.
type TasksListParams struct {
	SessionID string `json:"sessionId"`
	Server    string `json:"server"`
	Cursor    string `json:"cursor,omitempty"`
}

// TaskStatusParams are the params of mcp/taskStatus: Params are the
// server's notifications/tasks/status params as received.
type TaskStatusParams struct {
	SessionID string          `json:"sessionId"`
	Server    string          `json:"server"`
	Params    json.RawMessage `json:"params"`
}
