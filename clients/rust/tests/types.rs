//! What the generated types make of answers: unions told apart by a member
//! (content blocks, elicitation modes) with an `Unknown` for kinds a later
//! version adds, untagged unions (a tools/call answer), and values that
//! must encode back as they came.
use mcp_sidecar_client::protocol::*;
use serde_json::{json, Value};

fn decode<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

#[test]
fn tools_call_result_is_create_task_result_only_with_a_task() {
    // The answer to a tools/call with task (docs/protocol.md, "tools/call").
    let task = r#"{"task":{"taskId":"4f1c","status":"working","ttl":60000,"pollInterval":1000}}"#;
    match serde_json::from_str::<ToolsCallResult>(task).expect("a task's answer") {
        ToolsCallResult::CreateTaskResult(r) => {
            assert_eq!(r.task.task_id, "4f1c");
            assert_eq!(r.task.status, TaskStatus::Working);
            assert_eq!((r.task.ttl, r.task.poll_interval), (Some(60000), Some(1000)));
        }
        other => panic!("a task's answer decoded as {other:?}"),
    }
    let call = r#"{"content":[{"type":"text","text":"42"}],"structuredContent":{"sum":42}}"#;
    match serde_json::from_str::<ToolsCallResult>(call).expect("a call's answer") {
        ToolsCallResult::CallToolResult(r) => assert_eq!(r.text(), "42"),
        other => panic!("a call's answer decoded as {other:?}"),
    }
    // A CallToolResult that has a member named task, but not a task's
    // shape, stays a CallToolResult.
    let odd = r#"{"content":[],"task":"not a task"}"#;
    assert!(matches!(serde_json::from_str::<ToolsCallResult>(odd).unwrap(), ToolsCallResult::CallToolResult(_)));
}

#[test]
fn tools_call_result_is_input_required_only_when_it_says_so() {
    // A 2026-07-28 server's complete result names its resultType: it is
    // a CallToolResult, not an InputRequiredResult.
    let complete = r#"{"resultType":"complete","content":[{"type":"text","text":"42"}]}"#;
    match serde_json::from_str::<ToolsCallResult>(complete).expect("a complete answer") {
        ToolsCallResult::CallToolResult(r) => assert_eq!(r.text(), "42"),
        other => panic!("a complete answer decoded as {other:?}"),
    }
    // For a host that declared capabilities.inputRequired: the server's
    // input requests and requestState, as it sent them.
    let input = r#"{"resultType":"input_required","inputRequests":{"user_name":{"method":"elicitation/create","params":{"message":"Name?"}}},"requestState":"s-1"}"#;
    match serde_json::from_str::<ToolsCallResult>(input).expect("an input-required answer") {
        ToolsCallResult::InputRequiredResult(r) => {
            assert_eq!(r.request_state.as_deref(), Some("s-1"));
            let requests = r.input_requests.expect("input requests");
            assert_eq!(requests["user_name"].method, "elicitation/create");
        }
        other => panic!("an input-required answer decoded as {other:?}"),
    }
}

#[test]
fn content_blocks_by_type_and_unknown_as_received() {
    let cases: Vec<(&str, Value, &str)> = vec![
        ("text", json!({"type": "text", "text": "hi", "_meta": {"k": 1}}), "Text"),
        ("image", json!({"type": "image", "data": "AAAA", "mimeType": "image/png", "annotations": {"audience": ["assistant", "robot"]}}), "Image"),
        ("audio", json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}), "Audio"),
        ("resource link", json!({"type": "resource_link", "uri": "file:///a", "name": "a", "icons": [{"src": "data:,", "theme": "dark"}]}), "ResourceLink"),
        ("embedded text", json!({"type": "resource", "resource": {"uri": "file:///a", "text": "t"}}), "Resource"),
        ("embedded blob", json!({"type": "resource", "resource": {"uri": "file:///a", "blob": "AA=="}}), "Resource"),
        ("a later version's kind", json!({"type": "video", "url": "https://example.com/v"}), "Unknown"),
        ("a text block without text", json!({"type": "text", "value": "hi"}), "Unknown"),
        ("an embedded resource of neither kind", json!({"type": "resource", "resource": {"uri": "file:///a"}}), "Unknown"),
        ("a type that is not a string", json!({"type": 7}), "Unknown"),
        ("no type", json!({"text": "hi"}), "Unknown"),
        ("not an object", json!("hi"), "Unknown"),
    ];
    for (name, raw, want) in cases {
        let block: ContentBlock = decode(&raw);
        let got = match &block {
            ContentBlock::Text(_) => "Text",
            ContentBlock::Image(_) => "Image",
            ContentBlock::Audio(_) => "Audio",
            ContentBlock::ResourceLink(_) => "ResourceLink",
            ContentBlock::Resource(_) => "Resource",
            ContentBlock::Unknown(v) => {
                assert_eq!(v, &raw, "{name}: Unknown holds the block as received");
                "Unknown"
            }
        };
        assert_eq!(got, want, "{name}");
        assert_eq!(serde_json::to_value(&block).unwrap(), raw, "{name}: encoded back");
    }
    // Enum values a later version adds parse as Other.
    let image: ContentBlock = decode(&json!({"type": "image", "data": "", "mimeType": "", "annotations": {"audience": ["robot"]}}));
    match image {
        ContentBlock::Image(i) => assert_eq!(i.annotations.unwrap().audience, Some(vec![Role::Other("robot".into())])),
        other => panic!("{other:?}"),
    }
}

#[test]
fn call_tool_result_text_and_structured() {
    let r: CallToolResult = decode(&json!({
        "content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "video"},
            {"type": "text", "text": "two"}
        ],
        "structuredContent": {"sum": 3},
        "isError": true
    }));
    assert_eq!(r.text(), "one\ntwo");
    assert_eq!(r.structured::<Value>().unwrap(), Some(json!({"sum": 3})));
    assert!(r.structured::<Vec<String>>().is_err(), "structuredContent that is not the type asked for");
    assert!(r.is_error());
    let empty: CallToolResult = decode(&json!({}));
    assert_eq!((empty.text(), empty.structured::<Value>().unwrap(), empty.is_error()), (String::new(), None, false));
}

#[test]
fn elicitation_params_by_mode() {
    let form = json!({"message": "Name?", "requestedSchema": {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "default": "Ada"},
        "size": {"type": "string", "oneOf": [{"const": "s", "title": "Small"}, {"const": "l", "title": "Large"}]},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "maxItems": 2},
        "age": {"type": "integer", "minimum": 0.5}
    }, "required": ["name"]}});
    match decode::<ElicitRequestParams>(&form) {
        ElicitRequestParams::Form(f) => {
            assert_eq!(f.message, "Name?");
            let p = &f.requested_schema.properties;
            assert_eq!((p["name"].min_length, p["name"].default.clone()), (Some(1), Some(json!("Ada"))));
            let options: Vec<(String, String)> = p["size"].one_of.clone().unwrap().into_iter().map(|o| (o.r#const, o.title)).collect();
            assert_eq!(options, vec![("s".into(), "Small".into()), ("l".into(), "Large".into())]);
            assert_eq!(p["tags"].items.as_ref().unwrap().r#enum, Some(vec!["a".to_string(), "b".to_string()]));
            assert_eq!(p["age"].r#type, PrimitiveSchemaDefinitionType::Integer);
            assert_eq!(f.requested_schema.required, Some(vec!["name".to_string()]));
        }
        other => panic!("a form without mode decoded as {other:?}"),
    }
    // Encoded with the mode MCP gives a form without one.
    let mut with_mode = form.clone();
    with_mode["mode"] = json!("form");
    assert_eq!(serde_json::to_value(decode::<ElicitRequestParams>(&form)).unwrap(), with_mode);

    let url = json!({"mode": "url", "message": "Pay", "elicitationId": "e-1", "url": "https://example.com/pay"});
    assert!(matches!(decode::<ElicitRequestParams>(&url), ElicitRequestParams::Url(u) if u.elicitation_id == "e-1"));
    for unknown in [
        json!({"mode": "voice", "message": "Say it"}),
        json!({"mode": "url", "message": "no url"}),
        json!({"message": "a form without its schema"}),
    ] {
        let p: ElicitRequestParams = decode(&unknown);
        assert_eq!(p, ElicitRequestParams::Unknown(unknown.clone()));
        assert_eq!(serde_json::to_value(&p).unwrap(), unknown);
    }
}

#[test]
fn elicit_result_values_keep_their_kind() {
    let answer = json!({"action": "accept", "content": {"name": "Ada", "age": 36, "score": 95.5, "ok": true, "tags": ["a"]}});
    let r: ElicitResult = decode(&answer);
    let content = r.content.clone().unwrap();
    assert_eq!(content["age"], ElicitValue::Integer(36));
    assert_eq!(content["score"], ElicitValue::Number(95.5));
    // An integer goes back as an integer, not 36.0.
    assert_eq!(serde_json::to_string(&r).unwrap(), r#"{"action":"accept","content":{"age":36,"name":"Ada","ok":true,"score":95.5,"tags":["a"]}}"#);
    let built = ElicitResult::accept([("age".to_string(), 36i64.into()), ("name".to_string(), "Ada".into())].into_iter().collect());
    assert_eq!(serde_json::to_value(built).unwrap(), json!({"action": "accept", "content": {"age": 36, "name": "Ada"}}));
    assert_eq!(serde_json::to_value(ElicitResult::decline()).unwrap(), json!({"action": "decline"}));
}

#[test]
fn task_status_of_a_later_version() {
    let t: Task = decode(&json!({"taskId": "t", "status": "paused", "ttl": null}));
    assert_eq!((t.status.clone(), t.ttl), (TaskStatus::Other("paused".into()), None));
    assert!(!t.status.is_final());
    assert!(TaskStatus::Failed.is_final());
}
