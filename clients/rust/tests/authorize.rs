//! Options::on_authorize against the real sidecar ($MCP_SIDECAR_BIN) and a
//! real OAuth-protected Streamable HTTP MCP server: internal/testing/oauthtest's
//! authorization server and MCP server, served on loopback by
//! $MCP_SIDECAR_OAUTH_SERVE (run.sh builds both). The handler does what a
//! host does: it opens the authorization URL in a "browser" (an HTTP GET
//! that follows the redirects to the sidecar's loopback listener), or
//! catches the redirect and answers with it (docs/protocol.md,
//! "mcp/authorize").
use mcp_sidecar_client::protocol::*;
use mcp_sidecar_client::{codes, CancelFlag, Options, RpcError, SidecarClient};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

fn env(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("set {name} (run.sh does)"))
}

/// The protected server: `oauthtest serve`. Dropping it kills it if the
/// test did not stop it.
struct Protected {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: BufReader<ChildStdout>,
    url: String,
    issuer: String,
}

impl Protected {
    fn start() -> Protected {
        let mut child = Command::new(env("MCP_SIDECAR_OAUTH_SERVE"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start oauthtest serve");
        let stdin = child.stdin.take();
        let mut lines = BufReader::new(child.stdout.take().unwrap());
        let mut first = String::new();
        lines.read_line(&mut first).expect("oauthtest serve prints its URLs");
        let v: Value = serde_json::from_str(&first).unwrap_or_else(|e| panic!("first line {first:?}: {e}"));
        let url = v["url"].as_str().unwrap().to_string();
        let issuer = v["issuer"].as_str().unwrap().to_string();
        Protected { child, stdin, lines, url, issuer }
    }

    /// Ends it (stdin EOF) and returns what its servers saw.
    fn stop(mut self) -> Value {
        self.stdin.take();
        let mut last = String::new();
        self.lines.read_line(&mut last).expect("the second line");
        let status = self.child.wait().expect("wait for oauthtest serve");
        assert!(status.success(), "oauthtest serve: {status}");
        serde_json::from_str(&last).unwrap_or_else(|e| panic!("second line {last:?}: {e}"))
    }
}

impl Drop for Protected {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// An HTTP/1.1 GET of a plain-http URL: status and Location.
fn get(url: &str) -> (u16, Option<String>) {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("not an http URL: {url}"));
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let mut conn = TcpStream::connect(host).unwrap_or_else(|e| panic!("connect {host}: {e}"));
    conn.set_read_timeout(Some(WAIT)).unwrap();
    write!(conn, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).unwrap_or_else(|e| panic!("GET {url}: {e}"));
    let head = response.split("\r\n\r\n").next().unwrap_or("");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("GET {url}: no status line in {head:?}"));
    let location = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("location"))
        .map(|(_, v)| v.trim().to_string());
    (status, location)
}

/// What a browser does when the user approves at once: follows the
/// redirects. Returns the last URL and its status.
fn browse(url: &str) -> (String, u16) {
    let mut url = url.to_string();
    for _ in 0..10 {
        match get(&url) {
            (status, Some(next)) if (300..400).contains(&status) => url = next,
            (status, _) => return (url, status),
        }
    }
    panic!("too many redirects, the last to {url}");
}

struct Session {
    client: SidecarClient,
    session: String,
    complete: StartupCompleteParams,
}

/// A sidecar with the protected server and the given authorization
/// capability, an eager session and its round 0 done.
fn authorized_session(server: &Protected, authorization: AuthorizationCapability, handler: impl Fn(AuthorizeParams, CancelFlag) -> Result<AuthorizeResult, RpcError> + Send + Sync + 'static) -> Session {
    let (tx, rx) = mpsc::channel();
    let tx = Mutex::new(tx);
    let options = Options::default()
        .with_notifications(move |n| {
            if let Notification::StartupComplete(c) = n {
                let _ = tx.lock().unwrap().send(c);
            }
        })
        .on_authorize(handler);
    let mut cmd = Command::new(env("MCP_SIDECAR_BIN"));
    cmd.stderr(Stdio::null());
    let client = SidecarClient::spawn(cmd, options).expect("spawn");
    let dir = |what: &str| {
        static N: AtomicUsize = AtomicUsize::new(0);
        let d = std::env::temp_dir().join(format!("mcp-sidecar-rust-authorize-{}-{}-{what}", std::process::id(), N.fetch_add(1, Ordering::SeqCst)));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        // The sidecar refuses a credentials folder others can read.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        d.to_string_lossy().into_owned()
    };
    let mut servers = BTreeMap::new();
    servers.insert("protected".to_string(), ServerConfig { url: Some(server.url.clone()), ..Default::default() });
    client
        .initialize(&InitializeParams {
            client_info: Some(Implementation { name: "rust-client-authorize-test".into(), version: None }),
            capabilities: Some(HostCapabilities { authorization: Some(authorization), ..Default::default() }),
            cache_dir: Some(dir("cache")),
            // A folder of this test's own: no tokens from elsewhere, none
            // left in the user's.
            credentials_dir: Some(dir("creds")),
            servers: Some(servers),
            ..Default::default()
        })
        .expect("initialize");
    let open = client
        .call::<requests::SessionOpen>(&SessionOpenParams { startup: Some(SessionOpenParamsStartup::Eager), ..Default::default() })
        .expect("session/open");
    let complete = loop {
        let c = rx.recv_timeout(WAIT).expect("round 0 complete");
        if c.round == 0 {
            break c;
        }
    };
    Session { client, session: open.session_id, complete }
}

/// The call only a token the authorization server issued gets through.
fn echo_through(s: &Session) {
    let result = s
        .client
        .call_tool(&ToolsCallParams {
            session_id: s.session.clone(),
            name: Some("mcp__protected__echo".into()),
            arguments: json!({"text": "authorized"}).as_object().cloned(),
            ..Default::default()
        })
        .expect("tools/call through the token");
    assert_eq!(result.text(), "authorized");
}

#[test]
fn authorize_opens_the_url_and_the_server_starts_with_a_token() {
    let server = Protected::start();
    let (asked_tx, asked_rx) = mpsc::channel::<AuthorizeParams>();
    let (landed_tx, landed_rx) = mpsc::channel::<(String, u16)>();
    let (asked_tx, landed_tx) = (Mutex::new(asked_tx), Mutex::new(landed_tx));
    let s = authorized_session(&server, AuthorizationCapability::default(), move |p, _| {
        asked_tx.lock().unwrap().send(p.clone()).unwrap();
        // The "browser" opens the URL while the host answers {}.
        let landed = landed_tx.lock().unwrap().clone();
        thread::spawn(move || landed.send(browse(&p.authorization_url)).unwrap());
        Ok(AuthorizeResult::default())
    });
    assert_eq!(s.complete.ready, vec!["protected".to_string()], "{:?}", s.complete);
    let asked = asked_rx.recv_timeout(WAIT).expect("mcp/authorize");
    assert_eq!(asked.server, "protected");
    assert_eq!(asked.session_id, s.session);
    assert!(asked.authorization_url.starts_with(&format!("{}/authorize?", server.issuer)), "{}", asked.authorization_url);
    assert_eq!(asked.redirect_uri, None, "redirectUri goes only to a host with authorization.redirect");
    assert!(asked_rx.try_recv().is_err(), "one mcp/authorize");
    let (last, status) = landed_rx.recv_timeout(WAIT).expect("the browser landed");
    assert!(last.starts_with("http://127.0.0.1:") && last.contains("/callback?"), "{last}");
    assert_eq!(status, 200, "the sidecar's loopback listener took the redirect");

    echo_through(&s);
    assert!(s.client.shutdown(WAIT).expect("shutdown").success());
    let seen = server.stop();
    assert_eq!(seen["counts"], json!({"Registrations": 1, "Authorizations": 1, "CodeExchanges": 1, "Refreshes": 0, "RefreshDenied": 0}));
    assert!(seen["accepted"].as_i64().unwrap() > 0, "the MCP server served requests with the token: {seen}");
}

#[test]
fn authorize_with_redirect_answers_the_caught_redirect_url() {
    let server = Protected::start();
    let (asked_tx, asked_rx) = mpsc::channel::<AuthorizeParams>();
    let asked_tx = Mutex::new(asked_tx);
    let s = authorized_session(&server, AuthorizationCapability { redirect: Some(true) }, move |p, _| {
        asked_tx.lock().unwrap().send(p.clone()).unwrap();
        let redirect_uri = p.redirect_uri.clone().unwrap_or_default();
        match get(&p.authorization_url) {
            (302, Some(location)) if location.starts_with(&format!("{redirect_uri}?")) => {
                Ok(AuthorizeResult { redirect_url: Some(location), ..Default::default() })
            }
            other => Err(RpcError::new(codes::INTERNAL_ERROR, format!("the authorization server answered {other:?}, not a redirect to {redirect_uri}"))),
        }
    });
    assert_eq!(s.complete.ready, vec!["protected".to_string()], "{:?}", s.complete);
    let asked = asked_rx.recv_timeout(WAIT).expect("mcp/authorize");
    let redirect_uri = asked.redirect_uri.expect("redirectUri for a host with authorization.redirect");
    assert!(redirect_uri.starts_with("http://127.0.0.1:") && redirect_uri.ends_with("/callback"), "{redirect_uri}");

    echo_through(&s);
    assert!(s.client.shutdown(WAIT).expect("shutdown").success());
    assert_eq!(server.stop()["counts"]["CodeExchanges"], 1);
}
