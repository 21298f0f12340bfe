//! What the generated types make of answers whose type is a union: serde
//! tries an untagged enum's variants in order, and a CallToolResult (every
//! member optional, the rest kept in `extra`) would take any object, so a
//! task's answer must be tried as CreateTaskResult first.
use mcp_sidecar_client::protocol::*;

#[test]
fn tools_call_result_is_create_task_result_only_with_a_task() {
    // The answer to a tools/call with task (docs/protocol.md, "tools/call").
    let task = r#"{"task":{"taskId":"4f1c","status":"working","ttl":60000,"pollInterval":1000}}"#;
    match serde_json::from_str::<ToolsCallResult>(task).expect("a task's answer") {
        ToolsCallResult::CreateTaskResult(r) => {
            assert_eq!(r.task.task_id, "4f1c");
            assert_eq!(r.task.status, "working");
            assert_eq!(r.task.extra["ttl"], 60000);
        }
        other => panic!("a task's answer decoded as {other:?}"),
    }
    let call = r#"{"content":[{"type":"text","text":"42"}],"structuredContent":{"sum":42}}"#;
    match serde_json::from_str::<ToolsCallResult>(call).expect("a call's answer") {
        ToolsCallResult::CallToolResult(r) => assert_eq!(r.content.unwrap()[0]["text"], "42"),
        other => panic!("a call's answer decoded as {other:?}"),
    }
    // A CallToolResult that has a member named task, but not a task's
    // shape, stays a CallToolResult.
    let odd = r#"{"content":[],"task":"not a task"}"#;
    assert!(matches!(serde_json::from_str::<ToolsCallResult>(odd).unwrap(), ToolsCallResult::CallToolResult(_)));
}
