//! A Rust harness of mcp-sidecar, as a harness author would write one: it
//! spawns the sidecar, configures two MCP servers (the example server the
//! sidecar binary embeds, once plain and once advertising the sandbox
//! capability), opens a session, lists and calls tools, sends a sandbox
//! policy through byte for byte, cancels a call, answers an elicitation, and
//! shuts everything down.
//!
//! Usage: rust-host <path/to/mcp-sidecar>
//! Prints a transcript (-> host to sidecar, <- sidecar to host) and one line
//! per check; exits 1 if any check failed.

use mcp_sidecar_client::protocol::{
    requests, ElicitParams, ElicitRequestParams, ElicitResult, InitializeParams, ServerConfig,
    SessionOpenParams, SessionOpenParamsStartup, SessionParams, ToolsCallParams, ToolsListParams,
};
use mcp_sidecar_client::{codes, Error, Options, RpcError, SidecarClient};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::process::{Command, ExitCode};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// How long to wait for a notification before calling it missing: a safety
/// net, far above what any step takes.
const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The policy of the sandboxed call, written with spaces on purpose: the
/// sidecar may compact it but must not change a byte of what is left: the
/// integer above 2^63, the `1.0` and the key nobody knows.
const POLICY: &str = r#"{"mode": "workspace-write", "budget": 12345678901234567890, "ratio": 1.0, "x-unknown": {"nested": [1, 2]}}"#;

fn main() -> ExitCode {
    let sidecar = match std::env::args().nth(1) {
        Some(sidecar) => sidecar,
        None => {
            eprintln!("usage: rust-host <path/to/mcp-sidecar>");
            return ExitCode::from(2);
        }
    };
    let sidecar = match std::fs::canonicalize(&sidecar) {
        Ok(p) => p.to_string_lossy().into_owned(),
        Err(e) => {
            eprintln!("rust-host: {sidecar}: {e}");
            return ExitCode::from(2);
        }
    };
    let mut checks = Checks::default();
    if let Err(e) = run(&sidecar, &mut checks) {
        checks.check(false, "the session ran to the end", &e.to_string());
    }
    println!("{} passed, {} failed", checks.passed, checks.failed);
    if checks.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[derive(Default)]
struct Checks {
    passed: usize,
    failed: usize,
}

impl Checks {
    /// Records a check; `detail` says what was seen when it failed.
    fn check(&mut self, ok: bool, what: &str, detail: &str) -> bool {
        if ok {
            self.passed += 1;
            println!("ok   {what}");
        } else {
            self.failed += 1;
            println!("FAIL {what}: {detail}");
        }
        ok
    }
}

/// Notifications, as the callback forwards them to the main thread.
struct Events {
    rx: mpsc::Receiver<(String, Value)>,
    seen: Vec<(String, Value)>,
}

impl Events {
    /// Waits for the first notification, not seen before, for which `pred` holds.
    fn wait_for(
        &mut self,
        what: &str,
        pred: impl Fn(&str, &Value) -> bool,
    ) -> Result<Value, String> {
        let deadline = Instant::now() + EVENT_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((method, params)) => {
                    let hit = pred(&method, &params);
                    self.seen.push((method, params.clone()));
                    if hit {
                        return Ok(params);
                    }
                }
                Err(_) => return Err(format!("no {what} within {}s", EVENT_TIMEOUT.as_secs())),
            }
        }
    }
}

/// What the elicitation handler was asked.
type Asked = Arc<Mutex<Vec<ElicitParams>>>;

fn run(sidecar: &str, checks: &mut Checks) -> Result<(), Box<dyn std::error::Error>> {
    println!("rust-host: a Rust harness spawns {sidecar} and runs two MCP servers through it.");
    println!("-> host to sidecar, <- sidecar to host\n");

    // Notifications: print them, and pass them on to the main thread.
    let (tx, rx) = mpsc::channel();
    let on_notification = Box::new(move |method: &str, params: Value| {
        print_notification(method, &params);
        let _ = tx.send((method.to_string(), params));
    });
    // Requests from the sidecar, typed: a server asks the user to fill in a
    // form. A real harness shows it; this one answers "blue".
    let asked: Asked = Arc::default();
    let asked_in_handler = Arc::clone(&asked);
    let on_elicit = move |p: ElicitParams, _cancelled| {
        let form = match &p.params {
            ElicitRequestParams::Form(form) => form,
            // A URL elicitation, or a mode a later MCP version adds.
            _ => return Ok(ElicitResult::decline()),
        };
        let fields: Vec<&String> = form.requested_schema.properties.keys().collect();
        println!(
            "<- mcp/elicit            server {} asks the user: {:?}, fields {fields:?}",
            p.server, form.message
        );
        println!("   (host answers)        accept, answer = \"blue\"");
        let answer = [("answer".to_string(), "blue".into())].into_iter().collect();
        asked_in_handler.lock().unwrap().push(p.clone());
        Ok::<_, RpcError>(ElicitResult::accept(answer))
    };

    let mut cmd = Command::new(sidecar);
    cmd.args(["serve", "--log-level", "error"]);
    let client = SidecarClient::spawn(
        cmd,
        Options {
            request_timeout: Duration::from_secs(30),
            on_notification: Some(on_notification),
            ..Options::default()
        }
        .on_elicit(on_elicit),
    )?;
    let mut events = Events {
        rx,
        seen: Vec::new(),
    };

    // initialize (typed): inline servers with Codex's config keys; the host
    // says it answers elicitation requests. The client checks the protocol
    // version and sends initialized.
    let server = |args: &[&str]| ServerConfig {
        command: Some(sidecar.to_string()),
        args: Some(args.iter().map(|a| a.to_string()).collect()),
        ..ServerConfig::default()
    };
    let mut servers = BTreeMap::new();
    servers.insert("example".to_string(), server(&["example-server"]));
    servers.insert("sandboxed".to_string(), server(&["example-server", "--sandbox"]));
    let init = client.initialize(&InitializeParams {
        client_info: Some(serde_json::from_value(json!({"name": "rust-host-example", "version": "1.0.0"}))?),
        capabilities: Some(serde_json::from_value(json!({"elicitation": true}))?),
        servers: Some(servers),
        ..InitializeParams::default()
    })?;
    println!(
        "-> initialize            {} {}; protocol {}; servers {:?}; launcher {}",
        init.server_info.name,
        init.server_info.version.as_deref().unwrap_or(""),
        init.protocol_version,
        init.servers,
        init.launcher.status.as_str()
    );
    checks.check(
        init.servers == ["example", "sandboxed"],
        "initialize lists both servers",
        &format!("{:?}", init.servers),
    );

    // session/open, eager: each server reports its startup.
    let open = client.call::<requests::SessionOpen>(&SessionOpenParams {
        startup: Some(SessionOpenParamsStartup::Eager),
        ..SessionOpenParams::default()
    })?;
    let session = open.session_id.clone();
    println!(
        "-> session/open          {{\"startup\":\"eager\"}} -> session {session:?}, servers {:?}",
        open.servers.iter().map(|s| format!("{} {}", s.name, s.state.as_str())).collect::<Vec<_>>()
    );
    checks.check(
        !session.is_empty(),
        "session/open gives a session id",
        &format!("{open:?}"),
    );

    let complete = events.wait_for("mcp/startupComplete for round 0", |m, p| {
        m == "mcp/startupComplete" && p["round"] == 0
    })?;
    let mut ready: Vec<String> = complete["ready"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    ready.sort();
    checks.check(
        ready == ["example", "sandboxed"] && complete["failed"] == json!([]),
        "both servers are ready in round 0",
        &complete.to_string(),
    );
    check_startup_order(&events.seen, checks);

    // The catalog (typed): qualified names mcp__<server>__<tool>.
    let list = client.call::<requests::ToolsList>(&ToolsListParams {
        session_id: session.clone(),
        ..ToolsListParams::default()
    })?;
    let names: Vec<&str> = list.tools.iter().map(|t| t.name.as_str()).collect();
    println!("-> tools/list            {} tools:", names.len());
    for t in &list.tools {
        println!("     {:30} server {}, tool {}", t.name, t.server, t.tool);
    }
    checks.check(
        names.len() == 12
            && names.contains(&"mcp__example__echo")
            && names.contains(&"mcp__sandboxed__sandbox_info"),
        "tools/list has both servers' six tools",
        &format!("{names:?}"),
    );

    // call_tool answers the server's CallToolResult (text() joins its text blocks).
    let call = |name: &str, arguments: Value| {
        client.call_tool(&ToolsCallParams {
            session_id: session.clone(),
            name: Some(name.to_string()),
            arguments: arguments.as_object().cloned(),
            ..ToolsCallParams::default()
        })
    };

    // A plain call.
    println!("-> tools/call            mcp__example__echo {{\"text\":\"hello from Rust\"}}");
    let echo = call("mcp__example__echo", json!({"text": "hello from Rust"}))?.text();
    println!("     {echo}");
    checks.check(echo == "hello from Rust", "echo answers with the text", &echo);

    // The sandbox policy: sent as exact bytes (a Box<RawValue> in the typed
    // params, not a serde_json::Value, which would sort keys and could round
    // numbers), and echoed back by the sandboxed server.
    let policy = RawValue::from_string(POLICY.to_string()).expect("POLICY is JSON");
    let compact = compact_json(POLICY);
    for (server, want) in [
        ("sandboxed", compact.as_str()),
        ("example", "no sandbox state"),
    ] {
        let name = format!("mcp__{server}__sandbox_info");
        println!("-> tools/call            {name} with sandboxState {POLICY}");
        let text = client
            .call_tool(&ToolsCallParams {
                session_id: session.clone(),
                name: Some(name.clone()),
                arguments: Some(serde_json::Map::new()),
                sandbox_state: Some(policy.clone()),
                ..ToolsCallParams::default()
            })?
            .text();
        println!("     {text}");
        // The launcher object, when there is one, follows on the next line.
        let state = text.split('\n').next().unwrap_or("");
        let what = if server == "sandboxed" {
            "the sandboxed server got the policy byte for byte (compacted at most)"
        } else {
            "the server without the sandbox capability got no policy"
        };
        checks.check(
            state == want || (server == "sandboxed" && state == POLICY),
            what,
            &format!("want {want:?}, got {state:?}"),
        );
    }

    // Cancellation: a slow call with a progress token; once its first
    // $/progress arrives, $/cancelRequest; the sidecar answers -32800.
    println!("-> tools/call            mcp__example__slow {{\"seconds\":30,\"steps\":30}} with meta.progressToken \"slow-1\"");
    let slow = client.start(
        "tools/call",
        with_session(
            &session,
            json!({"name": "mcp__example__slow", "arguments": {"seconds": 30, "steps": 30}, "meta": {"progressToken": "slow-1"}}),
        ),
    )?;
    let progress = events.wait_for("$/progress for slow-1", |m, p| {
        m == "$/progress" && p["token"] == "slow-1"
    });
    checks.check(
        progress.is_ok(),
        "the slow call reports progress",
        progress.as_ref().err().map_or("", |e| e),
    );
    println!("-> $/cancelRequest       {{\"id\":{}}}", slow.id());
    let cancelled_at = Instant::now();
    slow.cancel()?;
    match slow.wait() {
        Err(Error::Rpc(e)) => {
            println!(
                "     error: {e} after {} ms",
                cancelled_at.elapsed().as_millis()
            );
            checks.check(
                e.code == codes::REQUEST_CANCELLED && e.kind() == Some("cancelled"),
                "the cancelled call gets -32800 (cancelled)",
                &e.to_string(),
            );
        }
        other => {
            checks.check(
                false,
                "the cancelled call gets -32800 (cancelled)",
                &format!("{other:?}"),
            );
        }
    }
    let again = call("mcp__example__echo", json!({"text": "still here"}))?.text();
    checks.check(
        again == "still here",
        "the server answers after the cancellation",
        &again,
    );

    // Elicitation: the server asks the user through the host (on_elicit above).
    println!("-> tools/call            mcp__example__ask {{\"question\":\"Favourite colour?\"}}");
    let ask = call("mcp__example__ask", json!({"question": "Favourite colour?"}))?.text();
    println!("     {ask}");
    let asked = asked.lock().unwrap().clone();
    let asked_form = |p: &ElicitParams| match &p.params {
        ElicitRequestParams::Form(f) => f.message == "Favourite colour?",
        _ => false,
    };
    checks.check(
        asked.len() == 1
            && asked[0].server == "example"
            && asked[0].session_id == session
            && asked_form(&asked[0]),
        "the host was asked once, by example, with the question",
        &format!("{asked:?}"),
    );
    checks.check(ask == "blue", "the host's answer is the tool's result", &ask);

    // Shut down: note the servers' pids first, to see them gone after.
    let status = client.call::<requests::ServersStatus>(&SessionParams {
        session_id: session.clone(),
    })?;
    let pids: Vec<u64> = status
        .servers
        .iter()
        .filter_map(|s| s.pid.map(|p| p as u64))
        .collect();
    for s in &status.servers {
        println!(
            "-> servers/status        {}: {} over {}, pid {:?}, sandbox {}",
            s.name,
            s.state.as_str(),
            s.transport.as_str(),
            s.pid,
            s.sandbox.as_ref().map_or("", |c| c.as_str())
        );
    }
    checks.check(
        pids.len() == 2,
        "both stdio servers have a pid",
        &format!("{status:?}"),
    );

    println!("-> shutdown, exit");
    let exit = client.shutdown(Duration::from_secs(30))?;
    println!("     the sidecar exited: {exit}");
    checks.check(
        exit.code() == Some(0),
        "the sidecar exits 0 after shutdown and exit",
        &exit.to_string(),
    );
    let left: Vec<u64> = pids.iter().copied().filter(|&pid| !gone(pid)).collect();
    checks.check(
        left.is_empty(),
        "no server process is left",
        &format!("still running: {left:?}"),
    );
    Ok(())
}

/// In round 0, every server reports `starting` before any server reports a
/// terminal status, and each ends `ready`.
fn check_startup_order(seen: &[(String, Value)], checks: &mut Checks) {
    let statuses: Vec<(String, String)> = seen
        .iter()
        .filter(|(m, p)| m == "mcp/startupStatus" && p["round"] == 0)
        .map(|(_, p)| {
            (
                p["server"].as_str().unwrap_or("").into(),
                p["status"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    let first_terminal = statuses
        .iter()
        .position(|(_, s)| s != "starting")
        .unwrap_or(statuses.len());
    let starting_after = statuses[first_terminal..]
        .iter()
        .any(|(_, s)| s == "starting");
    let mut ready: Vec<&str> = statuses
        .iter()
        .filter(|(_, s)| s == "ready")
        .map(|(n, _)| n.as_str())
        .collect();
    ready.sort();
    checks.check(
        first_terminal == 2 && !starting_after && ready == ["example", "sandboxed"],
        "startup statuses: both starting, then both ready",
        &format!("{statuses:?}"),
    );
}

fn print_notification(method: &str, p: &Value) {
    match method {
        "mcp/startupStatus" => {
            let mut line = format!(
                "<- mcp/startupStatus     {} is {} (round {})",
                txt(&p["server"]),
                txt(&p["status"]),
                p["round"]
            );
            if let Some(n) = p["tools"].as_u64() {
                line += &format!(", {n} tools");
            }
            if let Some(e) = p["error"].as_str() {
                line += &format!(": {e}");
            }
            println!("{line}");
        }
        "mcp/startupComplete" => println!(
            "<- mcp/startupComplete   round {}: ready {}, failed {}, cancelled {}",
            p["round"], p["ready"], p["failed"], p["cancelled"]
        ),
        "$/progress" => println!(
            "<- $/progress            token {}: {}/{} {}",
            p["token"],
            p["value"]["progress"],
            p["value"]["total"],
            txt(&p["value"]["message"])
        ),
        "mcp/log" => println!(
            "<- mcp/log                [{}] {}: {}",
            txt(&p["server"]),
            txt(&p["level"]),
            p["data"]
        ),
        _ => println!("<- {method:22} {p}"),
    }
}

/// A JSON string without its quotes; anything else as JSON.
fn txt(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

fn with_session(session: &str, mut params: Value) -> Value {
    params["sessionId"] = json!(session);
    params
}

/// Drops the whitespace between JSON tokens and nothing else (strings are
/// kept as they are), without parsing numbers.
fn compact_json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            out.push(c);
        }
    }
    out
}

/// Whether a process has ended (a zombie counts as ended). Waits up to 5 s:
/// the sidecar ends its servers' process groups before it exits, so this
/// is normally true at once.
fn gone(pid: u64) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let alive = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state is the field after the parenthesised command name.
            Ok(stat) => {
                !matches!(stat.rsplit(')').next().map(str::trim_start), Some(s) if s.starts_with(['Z', 'X']))
            }
            Err(_) => false,
        };
        if !alive {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::compact_json;

    #[test]
    fn compact_keeps_strings_and_numbers() {
        let cases = [
            (
                super::POLICY,
                r#"{"mode":"workspace-write","budget":12345678901234567890,"ratio":1.0,"x-unknown":{"nested":[1,2]}}"#,
            ),
            (
                "{ \"a b\" : \"x \\\" y\" ,\n\t\"c\" : [ 1e400 ] }",
                r#"{"a b":"x \" y","c":[1e400]}"#,
            ),
            (r#"["\\", " "]"#, r#"["\\"," "]"#),
        ];
        for (input, want) in cases {
            assert_eq!(compact_json(input), want, "{input}");
        }
    }
}
