//! The typed client against the real sidecar ($MCP_SIDECAR_BIN; run.sh
//! builds it), the example MCP server the binary embeds, and the clients'
//! test server (clients/testdata/mcp-test-server.mjs, run with node) for
//! every kind of content, tasks and URL elicitation.
use mcp_sidecar_client::protocol::*;
use mcp_sidecar_client::{codes, Error, Options, RpcError, SidecarClient};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Mutex};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn binary() -> String {
    std::env::var("MCP_SIDECAR_BIN").expect("set MCP_SIDECAR_BIN to the mcp-sidecar binary (run.sh does)")
}

fn args(v: Value) -> Option<Map<String, Value>> {
    v.as_object().cloned()
}

struct Setup {
    client: SidecarClient,
    session: String,
    notes: mpsc::Receiver<Notification>,
}

/// A sidecar with the example server, a session, and its round 0 done.
fn setup(capabilities: HostCapabilities, configure: impl FnOnce(Options) -> Options) -> Setup {
    setup_with(capabilities, false, configure)
}

/// setup, with the clients' test server too (as "t") when `test_server`.
fn setup_with(capabilities: HostCapabilities, test_server: bool, configure: impl FnOnce(Options) -> Options) -> Setup {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let options = configure(Options::default().with_notifications(move |n| {
        let _ = tx.lock().unwrap().send(n);
    }));
    let mut cmd = Command::new(binary());
    cmd.stderr(Stdio::null());
    let client = SidecarClient::spawn(cmd, options).expect("spawn");
    let cache = std::env::temp_dir().join(format!("mcp-sidecar-rust-test-{}", std::process::id()));
    let mut servers = BTreeMap::new();
    servers.insert(
        "example".to_string(),
        ServerConfig {
            command: Some(binary()),
            args: Some(vec!["example-server".into(), "--sandbox".into()]),
            ..Default::default()
        },
    );
    if test_server {
        servers.insert(
            "t".to_string(),
            ServerConfig {
                command: Some("node".into()),
                args: Some(vec![concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/mcp-test-server.mjs").into()]),
                ..Default::default()
            },
        );
    }
    let names: Vec<String> = servers.keys().cloned().collect();
    let init = client
        .initialize(&InitializeParams {
            client_info: Some(Implementation { name: "rust-client-test".into(), version: None }),
            capabilities: Some(capabilities),
            cache_dir: Some(cache.to_string_lossy().into_owned()),
            servers: Some(servers),
            ..Default::default()
        })
        .expect("initialize");
    assert_eq!(init.protocol_version, PROTOCOL_VERSION);
    assert_eq!(init.servers, names);
    let open = client
        .call::<requests::SessionOpen>(&SessionOpenParams { startup: Some(SessionOpenParamsStartup::Eager), ..Default::default() })
        .expect("session/open");
    assert_eq!(open.servers[0].state, State::Starting);
    // Round 0: each server starting, then ready, then the summary.
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    loop {
        match rx.recv_timeout(WAIT).expect("round 0 notifications") {
            Notification::StartupStatus(s) => seen.entry(s.server).or_default().push(s.status.as_str().to_string()),
            Notification::StartupComplete(c) => {
                let mut ready = c.ready.clone();
                ready.sort();
                assert_eq!(ready, names, "{c:?}");
                break;
            }
            _ => {}
        }
    }
    for (server, statuses) in &seen {
        assert_eq!(statuses, &vec!["starting", "ready"], "{server}");
    }
    Setup { client, session: open.session_id, notes: rx }
}

#[test]
fn typed_catalog_call_progress_and_shutdown() {
    let s = setup(HostCapabilities::default(), |o| o);
    let list = s
        .client
        .call::<requests::ToolsList>(&ToolsListParams { session_id: s.session.clone(), ..Default::default() })
        .expect("tools/list");
    let add = list.tools.iter().find(|t| t.name == "mcp__example__add").expect("add is listed");
    assert_eq!(add.tool, "add");
    assert_eq!(list.servers[0].catalog, ServerCatalogCatalog::Live);

    let add_params = ToolsCallParams {
        session_id: s.session.clone(),
        name: Some("mcp__example__add".into()),
        arguments: args(json!({"a": 2, "b": 40})),
        ..Default::default()
    };
    // The common case needs no match: call_tool answers the CallToolResult.
    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Sum {
        sum: f64,
    }
    let result = s.client.call_tool(&add_params).expect("tools/call");
    assert_eq!(result.text(), "42");
    assert_eq!(result.structured::<Sum>().unwrap(), Some(Sum { sum: 42.0 }));
    assert!(!result.is_error());
    // call::<requests::ToolsCall> answers the schema's union.
    match s.client.call::<requests::ToolsCall>(&add_params).expect("tools/call") {
        ToolsCallResult::CallToolResult(r) => assert_eq!(r.structured_content, args(json!({"sum": 42}))),
        other => panic!("want a CallToolResult, got {other:?}"),
    }
    // A call with a task would be answered a CreateTaskResult: call_tool
    // refuses it before sending anything.
    let with_task = ToolsCallParams { task: Some(Default::default()), ..add_params.clone() };
    match s.client.call_tool(&with_task) {
        Err(Error::Usage(why)) => assert!(why.contains("call_tool_task"), "{why}"),
        other => panic!("want Error::Usage, got {other:?}"),
    }

    // Progress with an integer token.
    s.client
        .call::<requests::ToolsCall>(&ToolsCallParams {
            session_id: s.session.clone(),
            name: Some("mcp__example__slow".into()),
            arguments: args(json!({"seconds": 0.1, "steps": 2})),
            meta: Some(ToolsCallParamsMeta { progress_token: Some(ProgressToken::Integer(7)), ..Default::default() }),
            ..Default::default()
        })
        .expect("slow");
    // The sidecar writes both progress notifications before the answer,
    // but the client hands notifications to their handler on its dispatcher
    // thread while the answer returns to this one: wait for them rather
    // than read what has arrived so far.
    let mut progress: Vec<f64> = Vec::new();
    while progress.len() < 2 {
        match s.notes.recv_timeout(WAIT).expect("two progress notifications") {
            Notification::Progress(p) if p.token == ProgressToken::Integer(7) => progress.push(p.value.progress),
            _ => {}
        }
    }
    assert_eq!(progress, vec![1.0, 2.0]);

    // The sandbox policy goes as written: the example server echoes it.
    let policy = RawValue::from_string(r#"{"mode": "workspace-write", "budget": 12345678901234567890, "ratio": 1.0}"#.into()).unwrap();
    let text = s
        .client
        .call_tool(&ToolsCallParams {
            session_id: s.session.clone(),
            server: Some("example".into()),
            tool: Some("sandbox_info".into()),
            sandbox_state: Some(policy),
            ..Default::default()
        })
        .expect("sandbox_info")
        .text();
    // The server opted in (--sandbox): it got the policy with the bytes
    // written, whitespace aside.
    assert_eq!(text, r#"{"mode":"workspace-write","budget":12345678901234567890,"ratio":1.0}"#);

    let status = s.client.call::<requests::ServersStatus>(&SessionParams { session_id: s.session.clone() }).expect("servers/status");
    let pid = status.servers[0].pid.expect("a pid");
    let exit = s.client.shutdown(WAIT).expect("shutdown");
    assert!(exit.success(), "{exit}");
    assert!(!alive(pid), "server process {pid} is gone");
}

#[test]
fn errors_and_cancellation() {
    let s = setup(HostCapabilities::default(), |o| o);
    let err = s
        .client
        .call::<requests::ToolsCall>(&ToolsCallParams { session_id: s.session.clone(), name: Some("mcp__example__nope".into()), ..Default::default() })
        .unwrap_err();
    match &err {
        Error::Rpc(e) => {
            assert_eq!(e.code, codes::UNKNOWN_TOOL);
            assert_eq!(e.kind(), Some("unknown_tool"));
            let data: ErrorData = serde_json::from_value(e.data.clone().unwrap()).unwrap();
            assert!(!data.retryable);
        }
        other => panic!("want an RPC error, got {other}"),
    }

    let pending = s
        .client
        .start_call::<requests::ToolsCall>(&ToolsCallParams {
            session_id: s.session.clone(),
            name: Some("mcp__example__slow".into()),
            arguments: args(json!({"seconds": 60, "steps": 600})),
            meta: Some(ToolsCallParamsMeta { progress_token: Some(ProgressToken::String("c".into())), ..Default::default() }),
            ..Default::default()
        })
        .unwrap();
    // Cancel once the tool runs (its first progress).
    loop {
        if let Notification::Progress(p) = s.notes.recv_timeout(WAIT).unwrap() {
            if p.token == ProgressToken::String("c".into()) {
                break;
            }
        }
    }
    pending.cancel().unwrap();
    let err = pending.wait().unwrap_err();
    assert_eq!(err.code(), Some(codes::REQUEST_CANCELLED), "{err}");
}

#[test]
fn host_requests_are_typed_and_cancellable() {
    let (asked_tx, asked_rx) = mpsc::channel::<String>();
    let (cancelled_tx, cancelled_rx) = mpsc::channel::<bool>();
    let asked_tx = Mutex::new(asked_tx);
    let cancelled_tx = Mutex::new(cancelled_tx);
    let s = setup(HostCapabilities { elicitation: Some(ElicitationCapability::Bool(true)), ..Default::default() }, move |o| {
        // The handler gets the form typed and answers an ElicitResult.
        o.on_elicit(move |p, flag| {
            let form = match p.params {
                ElicitRequestParams::Form(form) => form,
                other => return Err(RpcError::new(codes::INVALID_PARAMS, format!("want a form, got {other:?}"))),
            };
            let field = &form.requested_schema.properties["answer"];
            assert_eq!(field.r#type, PrimitiveSchemaDefinitionType::String);
            asked_tx.lock().unwrap().send(form.message.clone()).unwrap();
            if form.message == "never answered" {
                // Wait for the sidecar to say the server gave up.
                cancelled_tx.lock().unwrap().send(flag.wait(WAIT)).unwrap();
                return Ok(ElicitResult::cancel());
            }
            Ok(ElicitResult::accept([("answer".to_string(), "blue".into())].into_iter().collect()))
        })
    });
    let ask = |q: &str| ToolsCallParams {
        session_id: s.session.clone(),
        name: Some("mcp__example__ask".into()),
        arguments: args(json!({ "question": q })),
        ..Default::default()
    };
    assert_eq!(s.client.call_tool(&ask("Favourite colour?")).unwrap().text(), "blue");
    assert_eq!(asked_rx.recv_timeout(WAIT).unwrap(), "Favourite colour?");

    // The host cancels the call; the server gives up its elicitation; the
    // sidecar sends $/cancelRequest; the handler's flag is set.
    let pending = s.client.start_call::<requests::ToolsCall>(&ask("never answered")).unwrap();
    assert_eq!(asked_rx.recv_timeout(WAIT).unwrap(), "never answered");
    pending.cancel().unwrap();
    assert_eq!(pending.wait().unwrap_err().code(), Some(codes::REQUEST_CANCELLED));
    assert!(cancelled_rx.recv_timeout(WAIT).unwrap(), "the handler saw the cancellation");
}

/// on_input answers mcp/input: a server of a VS Code file that uses
/// `${input:ID}` comes up ready once the host answered.
#[test]
fn inputs_are_answered_with_on_input() {
    let dir = std::env::temp_dir().join(format!("mcp-sidecar-rust-inputs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mcp.json");
    let config = json!({
        "inputs": [{"type": "promptString", "id": "token", "description": "API token", "password": true}],
        "servers": {"example": {"type": "stdio", "command": binary(), "args": ["example-server"], "env": {"INPUT_TOKEN": "${input:token}"}}},
    });
    std::fs::write(&file, config.to_string()).unwrap();
    let (asked_tx, asked_rx) = mpsc::channel::<InputParams>();
    let asked_tx = Mutex::new(asked_tx);
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let options = Options::default()
        .with_notifications(move |n| {
            let _ = tx.lock().unwrap().send(n);
        })
        .on_input(move |p, _| {
            asked_tx.lock().unwrap().send(p).unwrap();
            Ok(InputResult { value: Some("tok-from-the-host".into()), cancelled: None })
        });
    let mut cmd = Command::new(binary());
    cmd.stderr(Stdio::null());
    let client = SidecarClient::spawn(cmd, options).expect("spawn");
    client
        .initialize(&InitializeParams {
            client_info: Some(Implementation { name: "rust-client-test".into(), version: None }),
            capabilities: Some(HostCapabilities { inputs: Some(true), ..Default::default() }),
            cache_dir: Some(dir.join("cache").to_string_lossy().into_owned()),
            config_files: Some(vec![file.to_string_lossy().into_owned()]),
            ..Default::default()
        })
        .expect("initialize");
    let open = client
        .call::<requests::SessionOpen>(&SessionOpenParams { startup: Some(SessionOpenParamsStartup::Eager), ..Default::default() })
        .expect("session/open");
    let complete = loop {
        if let Notification::StartupComplete(c) = rx.recv_timeout(WAIT).expect("round 0 notifications") {
            break c;
        }
    };
    assert_eq!(complete.ready, vec!["example".to_string()], "{complete:?}");
    let asked = asked_rx.recv_timeout(WAIT).expect("mcp/input");
    assert_eq!((asked.session_id.as_str(), asked.server.as_str(), asked.id.as_str()), (open.session_id.as_str(), "example", "token"));
    assert_eq!(asked.password, Some(true));
    client.shutdown(WAIT).expect("shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn url_elicitation_is_typed() {
    let (asked_tx, asked_rx) = mpsc::channel::<ElicitRequestURLParams>();
    let asked_tx = Mutex::new(asked_tx);
    let both = ElicitationCapability::Object(ElicitationCapabilityObject { form: Some(Map::new()), url: Some(Map::new()) });
    let s = setup_with(HostCapabilities { elicitation: Some(both), ..Default::default() }, true, move |o| {
        o.on_elicit(move |p, _| match p.params {
            ElicitRequestParams::Url(u) => {
                asked_tx.lock().unwrap().send(u).unwrap();
                // The user consented and the URL is open: accept, no content.
                Ok(ElicitResult::accept(BTreeMap::new()))
            }
            _ => Ok(ElicitResult::decline()),
        })
    });
    let result = s
        .client
        .call_tool(&ToolsCallParams { session_id: s.session.clone(), name: Some("mcp__t__ask_url".into()), ..Default::default() })
        .unwrap();
    assert_eq!(result.text(), "accept");
    let asked = asked_rx.recv_timeout(WAIT).unwrap();
    assert_eq!(
        (asked.message.as_str(), asked.elicitation_id.as_str(), asked.url.as_str()),
        ("Authorize the payment", "e-42", "https://example.com/consent?e=42")
    );
}

#[test]
fn content_blocks_are_typed_and_lose_nothing() {
    let s = setup_with(HostCapabilities::default(), true, |o| o);
    let params = ToolsCallParams { session_id: s.session.clone(), name: Some("mcp__t__blocks".into()), ..Default::default() };
    let result = s.client.call_tool(&params).unwrap();
    let content = result.content.clone().expect("content");
    let kinds: Vec<Option<&str>> = content.iter().map(ContentBlock::kind).collect();
    assert_eq!(
        kinds,
        vec![Some("text"), Some("image"), Some("audio"), Some("resource_link"), Some("resource"), Some("resource"), Some("video"), Some("text")]
    );
    match &content[0] {
        ContentBlock::Text(t) => {
            assert_eq!(t.text, "first line");
            let a = t.annotations.as_ref().expect("annotations");
            assert_eq!((a.audience.clone(), a.priority), (Some(vec![Role::User]), Some(0.5)));
            assert_eq!(t.extra["x-extra"], 1, "a member MCP does not define is kept");
        }
        other => panic!("{other:?}"),
    }
    match &content[1] {
        ContentBlock::Image(i) => assert_eq!((i.data.as_str(), i.mime_type.as_str()), ("iVBORw0KGgo=", "image/png")),
        other => panic!("{other:?}"),
    }
    match &content[2] {
        ContentBlock::Audio(a) => assert_eq!(a.mime_type, "audio/wav"),
        other => panic!("{other:?}"),
    }
    match &content[3] {
        ContentBlock::ResourceLink(l) => assert_eq!((l.uri.as_str(), l.name.as_str(), l.size), ("file:///tmp/report.md", "report.md", Some(2048))),
        other => panic!("{other:?}"),
    }
    match (&content[4], &content[5]) {
        (ContentBlock::Resource(text), ContentBlock::Resource(blob)) => {
            assert!(matches!(&text.resource, ResourceContents::TextResourceContents(r) if r.text == "embedded text"), "{text:?}");
            assert!(matches!(&blob.resource, ResourceContents::BlobResourceContents(r) if r.blob == "AAEC"), "{blob:?}");
        }
        other => panic!("{other:?}"),
    }
    // A kind a later MCP version adds: Unknown, with the block as received.
    assert_eq!(content[6], ContentBlock::Unknown(json!({"type": "video", "url": "https://example.com/v.mp4", "durationMs": 1200})));
    assert_eq!(result.text(), "first line\nsecond line");
    assert_eq!(result.structured::<Value>().unwrap(), Some(json!({"kinds": 8})));

    // Encoded again, the typed result is what the sidecar sent.
    let raw = s.client.start("tools/call", serde_json::to_value(&params).unwrap()).unwrap().wait().unwrap();
    assert_eq!(serde_json::to_value(&result).unwrap(), raw);
}

#[test]
fn tasks_are_typed() {
    let s = setup_with(HostCapabilities::default(), true, |o| o);
    let research = |topic: &str| ToolsCallParams {
        session_id: s.session.clone(),
        name: Some("mcp__t__research".into()),
        arguments: args(json!({ "topic": topic })),
        ..Default::default()
    };
    // call_tool_task gives the call a task ({} here) and answers the CreateTaskResult.
    let created = s.client.call_tool_task(&research("tides")).unwrap();
    let id = created.task.task_id.clone();
    assert_eq!((created.task.status.clone(), created.task.ttl, created.task.poll_interval), (TaskStatus::Working, Some(60000), Some(1000)));
    assert!(!created.task.status.is_final());
    // The server's notifications/tasks/status, typed.
    loop {
        if let Notification::TaskStatus(p) = s.notes.recv_timeout(WAIT).expect("mcp/taskStatus") {
            assert_eq!((p.server.as_str(), p.params.task_id.as_str()), ("t", id.as_str()));
            assert_eq!(p.params.status, TaskStatus::Completed);
            assert_eq!(p.params.status_message.as_deref(), Some("done"));
            assert!(p.params.status.is_final());
            break;
        }
    }
    let task = |task_id: &str| TaskParams { session_id: s.session.clone(), server: "t".into(), task_id: task_id.into() };
    let got = s.client.call::<requests::TasksGet>(&task(&id)).unwrap();
    assert_eq!((got.task_id.as_str(), got.status), (id.as_str(), TaskStatus::Completed));
    let result = s.client.call::<requests::TasksResult>(&task(&id)).unwrap();
    assert_eq!(result.text(), "# Report: tides");
    assert_eq!(result.meta.unwrap()["io.modelcontextprotocol/related-task"], json!({"taskId": id}));

    let slow = s.client.call_tool_task(&research("never")).unwrap().task.task_id;
    let list = s
        .client
        .call::<requests::TasksList>(&TasksListParams { session_id: s.session.clone(), server: "t".into(), cursor: None })
        .unwrap();
    let listed: Vec<(&str, &TaskStatus)> = list.tasks.iter().map(|t| (t.task_id.as_str(), &t.status)).collect();
    assert_eq!(listed, vec![(id.as_str(), &TaskStatus::Completed), (slow.as_str(), &TaskStatus::Working)]);
    let cancelled = s.client.call::<requests::TasksCancel>(&task(&slow)).unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
}

/// Whether a process still runs (a zombie counts as gone).
fn alive(pid: i64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start().chars().next();
            !matches!(state, Some('Z') | Some('X'))
        }
        Err(_) => false,
    }
}
