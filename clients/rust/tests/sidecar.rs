//! The typed client against the real sidecar ($MCP_SIDECAR_BIN; run.sh
//! builds it) and the example MCP server the binary embeds.
use mcp_sidecar_client::protocol::*;
use mcp_sidecar_client::{codes, CancelFlag, Error, Options, RpcError, SidecarClient};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
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
fn setup(capabilities: HostCapabilities, on_host_request: Option<mcp_sidecar_client::HostRequestHandler>) -> Setup {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let mut options = Options::default().with_notifications(move |n| {
        let _ = tx.lock().unwrap().send(n);
    });
    options.on_host_request = on_host_request;
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
    assert_eq!(init.servers, vec!["example".to_string()]);
    let open = client
        .call::<requests::SessionOpen>(&SessionOpenParams { startup: Some(SessionOpenParamsStartup::Eager), ..Default::default() })
        .expect("session/open");
    assert_eq!(open.servers[0].state, State::Starting);
    // Round 0: starting, then ready, then the summary.
    let mut seen = Vec::new();
    loop {
        match rx.recv_timeout(WAIT).expect("round 0 notifications") {
            Notification::StartupStatus(s) => seen.push(s.status.as_str().to_string()),
            Notification::StartupComplete(c) => {
                assert_eq!(c.ready, vec!["example".to_string()]);
                break;
            }
            _ => {}
        }
    }
    assert_eq!(seen, vec!["starting", "ready"]);
    Setup { client, session: open.session_id, notes: rx }
}

#[test]
fn typed_catalog_call_progress_and_shutdown() {
    let s = setup(HostCapabilities::default(), None);
    let list = s
        .client
        .call::<requests::ToolsList>(&ToolsListParams { session_id: s.session.clone(), ..Default::default() })
        .expect("tools/list");
    let add = list.tools.iter().find(|t| t.name == "mcp__example__add").expect("add is listed");
    assert_eq!(add.tool, "add");
    assert_eq!(list.servers[0].catalog, ServerCatalogCatalog::Live);

    let result = s
        .client
        .call::<requests::ToolsCall>(&ToolsCallParams {
            session_id: s.session.clone(),
            name: Some("mcp__example__add".into()),
            arguments: args(json!({"a": 2, "b": 40})),
            ..Default::default()
        })
        .expect("tools/call");
    match result {
        ToolsCallResult::CallToolResult(r) => assert_eq!(r.structured_content, args(json!({"sum": 42}))),
        other => panic!("want a CallToolResult, got {other:?}"),
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
    let echoed = s
        .client
        .call::<requests::ToolsCall>(&ToolsCallParams {
            session_id: s.session.clone(),
            server: Some("example".into()),
            tool: Some("sandbox_info".into()),
            sandbox_state: Some(policy),
            ..Default::default()
        })
        .expect("sandbox_info");
    let text = match echoed {
        ToolsCallResult::CallToolResult(r) => r.content.unwrap()[0]["text"].as_str().unwrap().to_string(),
        other => panic!("{other:?}"),
    };
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
    let s = setup(HostCapabilities::default(), None);
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
    let handler: mcp_sidecar_client::HostRequestHandler = Arc::new(move |req: HostRequest, flag: CancelFlag| match req {
        HostRequest::Elicit(p) => {
            let message = p.params["message"].as_str().unwrap_or("").to_string();
            asked_tx.lock().unwrap().send(message.clone()).unwrap();
            if message == "never answered" {
                // Wait for the sidecar to say the server gave up.
                cancelled_tx.lock().unwrap().send(flag.wait(WAIT)).unwrap();
                return Err(RpcError::new(codes::REQUEST_CANCELLED, "cancelled"));
            }
            Ok(serde_json::to_value(ElicitResult {
                action: ElicitResultAction::Accept,
                content: args(json!({"answer": "blue"})),
                meta: None,
                extra: Map::new(),
            })
            .unwrap())
        }
        other => Err(RpcError::new(codes::METHOD_NOT_FOUND, format!("not handled: {other:?}"))),
    });
    let s = setup(
        HostCapabilities { elicitation: Some(ElicitationCapability::Bool(true)), ..Default::default() },
        Some(handler),
    );
    let ask = |q: &str| ToolsCallParams {
        session_id: s.session.clone(),
        name: Some("mcp__example__ask".into()),
        arguments: args(json!({ "question": q })),
        ..Default::default()
    };
    match s.client.call::<requests::ToolsCall>(&ask("Favourite colour?")).unwrap() {
        ToolsCallResult::CallToolResult(r) => assert_eq!(r.content.unwrap()[0]["text"], "blue"),
        other => panic!("{other:?}"),
    }
    assert_eq!(asked_rx.recv_timeout(WAIT).unwrap(), "Favourite colour?");

    // The host cancels the call; the server gives up its elicitation; the
    // sidecar sends $/cancelRequest; the handler's flag is set.
    let pending = s.client.start_call::<requests::ToolsCall>(&ask("never answered")).unwrap();
    assert_eq!(asked_rx.recv_timeout(WAIT).unwrap(), "never answered");
    pending.cancel().unwrap();
    assert_eq!(pending.wait().unwrap_err().code(), Some(codes::REQUEST_CANCELLED));
    assert!(cancelled_rx.recv_timeout(WAIT).unwrap(), "the handler saw the cancellation");
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
