//! The connection to the sidecar: spawns it, frames JSON-RPC messages with
//! `Content-Length` headers (as LSP) over the child's stdin/stdout, and
//! routes what the sidecar sends back. Requests go typed (`call`, with the
//! types of `protocol`) or as `serde_json::Value` (`request`).

use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::protocol::{
    requests, HostRequest, InitializeParams, InitializeResult, Notification, Request,
    PROTOCOL_VERSION,
};

/// The sidecar's own default frame limit; frames it sends are far smaller.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 64 << 20;

/// Header lines longer than this are not headers.
const MAX_HEADER_LINE: usize = 8 << 10;

/// JSON-RPC error codes of the host protocol that a harness acts on.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const REQUEST_CANCELLED: i64 = -32800;
    pub const SERVER_NOT_READY: i64 = -32011;
    pub const UNKNOWN_TOOL: i64 = -32013;
    pub const TOOL_TIMEOUT: i64 = -32014;
    pub const CONNECTION_LOST: i64 = -32015;
}

// ---------------------------------------------------------------- framing

/// Why a frame could not be read. Any of these ends the connection: after a
/// bad frame there is no telling where the next one starts.
#[derive(Debug)]
pub enum FrameError {
    Io(io::Error),
    /// A header line that is not `Name: value` ending in CRLF, or a
    /// `Content-Length` that is not a number.
    BadHeader(String),
    MissingContentLength,
    TooLarge {
        length: usize,
        limit: usize,
    },
    /// The stream ended inside a frame.
    Truncated(String),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Io(e) => write!(f, "reading a frame: {e}"),
            FrameError::BadHeader(m) => write!(f, "bad frame header: {m}"),
            FrameError::MissingContentLength => write!(f, "frame header has no Content-Length"),
            FrameError::TooLarge { length, limit } => {
                write!(f, "frame of {length} bytes is over the limit of {limit}")
            }
            FrameError::Truncated(m) => write!(f, "truncated frame: {m}"),
        }
    }
}

impl std::error::Error for FrameError {}

impl From<io::Error> for FrameError {
    fn from(e: io::Error) -> Self {
        FrameError::Io(e)
    }
}

/// Reads one `Content-Length` framed message body. `Ok(None)` is a clean end
/// of stream (EOF before the first byte of a frame).
pub fn read_frame<R: BufRead>(r: &mut R, max_bytes: usize) -> Result<Option<Vec<u8>>, FrameError> {
    let mut length: Option<usize> = None;
    let mut line = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let n = r
            .by_ref()
            .take(MAX_HEADER_LINE as u64 + 1)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            if first {
                return Ok(None);
            }
            return Err(FrameError::Truncated(
                "the stream ended inside the header".into(),
            ));
        }
        first = false;
        if !line.ends_with(b"\n") {
            if line.len() > MAX_HEADER_LINE {
                return Err(FrameError::BadHeader(format!(
                    "header line longer than {MAX_HEADER_LINE} bytes"
                )));
            }
            return Err(FrameError::Truncated(
                "the stream ended inside the header".into(),
            ));
        }
        if !line.ends_with(b"\r\n") {
            return Err(FrameError::BadHeader(format!(
                "header line {:?} does not end with CRLF",
                String::from_utf8_lossy(&line)
            )));
        }
        let text = &line[..line.len() - 2];
        if text.is_empty() {
            break;
        }
        let text = std::str::from_utf8(text)
            .map_err(|_| FrameError::BadHeader("header line is not UTF-8".into()))?;
        let (name, value) = text
            .split_once(':')
            .ok_or_else(|| FrameError::BadHeader(format!("header line {text:?} has no colon")))?;
        // Content-Type and any other header are allowed and ignored, as in LSP.
        if name.trim().eq_ignore_ascii_case("content-length") {
            let n = value.trim().parse::<usize>().map_err(|_| {
                FrameError::BadHeader(format!("Content-Length {:?} is not a number", value.trim()))
            })?;
            length = Some(n);
        }
    }
    let length = length.ok_or(FrameError::MissingContentLength)?;
    if length > max_bytes {
        return Err(FrameError::TooLarge {
            length,
            limit: max_bytes,
        });
    }
    let mut body = vec![0u8; length];
    let mut got = 0;
    while got < length {
        match r.read(&mut body[got..]) {
            Ok(0) => {
                return Err(FrameError::Truncated(format!(
                    "short body: the stream ended after {got} of {length} bytes"
                )))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Some(body))
}

/// Writes one framed message, header and body in one write.
pub fn write_frame<W: Write>(w: &mut W, body: &[u8]) -> io::Result<()> {
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(body);
    w.write_all(&frame)?;
    w.flush()
}

// ----------------------------------------------------------------- errors

/// A JSON-RPC error object, as the sidecar sends it (`data` carries
/// `{kind, server?, tool?, retryable}`) or as a request handler returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `data.kind`, the error's name in the host protocol (e.g. `cancelled`).
    pub fn kind(&self) -> Option<&str> {
        self.data.as_ref()?.get("kind")?.as_str()
    }

    fn to_json(&self) -> Value {
        let mut v = json!({"code": self.code, "message": self.message});
        if let Some(d) = &self.data {
            v["data"] = d.clone();
        }
        v
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {}", self.message, self.code)?;
        if let Some(kind) = self.kind() {
            write!(f, ", {kind}")?;
        }
        write!(f, ")")
    }
}

/// What can go wrong talking to the sidecar.
#[derive(Debug, Clone)]
pub enum Error {
    /// The sidecar answered the request with a JSON-RPC error.
    Rpc(RpcError),
    /// The connection is gone: the sidecar exited or closed its stdout. Says
    /// how, with the exit status when there is one.
    Closed(String),
    /// The sidecar sent something that is not a framed JSON-RPC message. The
    /// connection is closed, as there is no finding the next frame, and the
    /// sidecar is told to exit (its stdin is closed).
    Malformed(String),
    /// No answer within the client's request timeout.
    Timeout { method: String, after: Duration },
    /// Spawning the sidecar or writing to it failed.
    Io(String),
    /// The sidecar speaks another protocol version than this crate
    /// (docs/protocol.md, "Versioning").
    Incompatible(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Rpc(e) => write!(f, "sidecar error: {e}"),
            Error::Closed(why) => write!(f, "sidecar connection closed: {why}"),
            Error::Malformed(why) => write!(f, "malformed message from the sidecar: {why}"),
            Error::Timeout { method, after } => {
                write!(
                    f,
                    "no answer to {method} within {:.1}s",
                    after.as_secs_f64()
                )
            }
            Error::Io(why) => write!(f, "{why}"),
            Error::Incompatible(why) => write!(f, "{why}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// The JSON-RPC error code, when the sidecar answered with an error.
    pub fn code(&self) -> Option<i64> {
        match self {
            Error::Rpc(e) => Some(e.code),
            _ => None,
        }
    }
}

// ----------------------------------------------------------------- client

/// Called with each notification's method and params, in arrival order, on
/// the client's dispatcher thread.
pub type NotificationHandler = Box<dyn Fn(&str, Value) + Send>;

/// Answers a sidecar -> host request (`mcp/elicit`, `mcp/roots`, `mcp/sample`).
/// Runs on a thread of its own per request, so it may block (ask the user)
/// for long.
pub type RequestHandler = Arc<dyn Fn(&str, Value) -> Result<Value, RpcError> + Send + Sync>;

/// Answers a sidecar -> host request, parsed. The flag says when the server
/// gave up on it (the sidecar sent `$/cancelRequest`): the handler may stop
/// asking its user, and its answer is dropped.
pub type HostRequestHandler =
    Arc<dyn Fn(HostRequest, CancelFlag) -> Result<Value, RpcError> + Send + Sync>;

/// Set when the sidecar cancelled the request a handler answers.
#[derive(Clone, Default)]
pub struct CancelFlag(Arc<(Mutex<bool>, Condvar)>);

impl CancelFlag {
    pub fn is_cancelled(&self) -> bool {
        *self.0 .0.lock().unwrap()
    }

    /// Waits up to `timeout` for the cancellation; true when it came.
    pub fn wait(&self, timeout: Duration) -> bool {
        let (lock, cond) = &*self.0;
        let guard = lock.lock().unwrap();
        let (guard, _) = cond.wait_timeout_while(guard, timeout, |cancelled| !*cancelled).unwrap();
        *guard
    }

    fn cancel(&self) {
        let (lock, cond) = &*self.0;
        *lock.lock().unwrap() = true;
        cond.notify_all();
    }
}

pub struct Options {
    /// How long `request` waits for an answer. A safety net: the sidecar
    /// answers every request, if only with an error.
    pub request_timeout: Duration,
    pub max_frame_bytes: usize,
    pub on_notification: Option<NotificationHandler>,
    /// Without one (and without `on_host_request`), sidecar requests are
    /// answered with -32601.
    pub on_request: Option<RequestHandler>,
    /// The typed form of `on_request`; it takes precedence.
    pub on_host_request: Option<HostRequestHandler>,
}

impl Options {
    /// Sets `on_notification` to a handler of parsed notifications; one
    /// whose params do not parse comes as `Notification::Other`.
    pub fn with_notifications(mut self, f: impl Fn(Notification) + Send + 'static) -> Self {
        self.on_notification = Some(Box::new(move |method, params| {
            let n = Notification::parse(method, params.clone()).unwrap_or(Notification::Other {
                method: method.to_string(),
                params,
            });
            f(n)
        }));
        self
    }

    /// Sets `on_host_request`.
    pub fn with_host_requests(
        mut self,
        f: impl Fn(HostRequest, CancelFlag) -> Result<Value, RpcError> + Send + Sync + 'static,
    ) -> Self {
        self.on_host_request = Some(Arc::new(f));
        self
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            request_timeout: Duration::from_secs(60),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            on_notification: None,
            on_request: None,
            on_host_request: None,
        }
    }
}

type Reply = Result<Box<RawValue>, Error>;

/// What the reader thread and the callers share.
struct Shared {
    /// `None` once stdin is closed (after `exit`).
    stdin: Mutex<Option<ChildStdin>>,
    child: Mutex<Child>,
    pending: Mutex<Pending>,
    /// The sidecar's requests being answered, by id text.
    host_requests: Mutex<HashMap<String, CancelFlag>>,
}

struct Pending {
    waiters: HashMap<u64, mpsc::Sender<Reply>>,
    /// Why the connection ended; set once, by the reader thread.
    closed: Option<Error>,
}

impl Shared {
    fn write(&self, body: &str) -> Result<(), Error> {
        let mut stdin = self.stdin.lock().unwrap();
        let w = match stdin.as_mut() {
            Some(w) => w,
            None => {
                return Err(Error::Closed(
                    "the client already closed the sidecar's stdin".into(),
                ));
            }
        };
        write_frame(w, body.as_bytes()).map_err(|e| {
            if e.kind() == io::ErrorKind::BrokenPipe {
                // The reader thread will say why; this is the usual first sign.
                self.closed_reason().unwrap_or_else(|| {
                    Error::Closed("the sidecar's stdin is closed (broken pipe)".into())
                })
            } else {
                Error::Io(format!("writing to the sidecar: {e}"))
            }
        })
    }

    fn closed_reason(&self) -> Option<Error> {
        self.pending.lock().unwrap().closed.clone()
    }

    /// Fails every waiting request with `why` and refuses new ones.
    fn close(&self, why: Error) {
        let mut p = self.pending.lock().unwrap();
        if p.closed.is_none() {
            p.closed = Some(why.clone());
        }
        for (_, tx) in p.waiters.drain() {
            let _ = tx.send(Err(why.clone()));
        }
    }

    /// The exit status, if the child has exited within `grace`.
    fn exit_status_within(&self, grace: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + grace;
        loop {
            if let Ok(Some(st)) = self.child.lock().unwrap().try_wait() {
                return Some(st);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// A running sidecar and the JSON-RPC connection to it.
pub struct SidecarClient {
    shared: Arc<Shared>,
    next_id: AtomicU64,
    request_timeout: Duration,
    pid: u32,
}

/// A request that was sent and not yet answered: its id is what
/// `$/cancelRequest` names.
pub struct PendingRequest<'a> {
    client: &'a SidecarClient,
    id: u64,
    method: String,
    rx: mpsc::Receiver<Reply>,
}

impl SidecarClient {
    /// Spawns `command` (the sidecar, e.g. `mcp-sidecar serve`) with its
    /// stdin and stdout piped for the protocol; stderr is left as the command
    /// sets it (inherited by default), since the sidecar logs there.
    pub fn spawn(mut command: Command, options: Options) -> Result<SidecarClient, Error> {
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = command.spawn().map_err(|e| {
            Error::Io(format!(
                "starting the sidecar {:?}: {e}",
                command.get_program()
            ))
        })?;
        let pid = child.id();
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let shared = Arc::new(Shared {
            stdin: Mutex::new(Some(stdin)),
            child: Mutex::new(child),
            pending: Mutex::new(Pending {
                waiters: HashMap::new(),
                closed: None,
            }),
            host_requests: Mutex::new(HashMap::new()),
        });

        let (note_tx, note_rx) = mpsc::channel::<(String, Value)>();
        let on_notification = options.on_notification;
        thread::Builder::new()
            .name("sidecar-notifications".into())
            .spawn(move || {
                // Ends when the reader thread drops note_tx.
                for (method, params) in note_rx {
                    if let Some(f) = &on_notification {
                        f(&method, params);
                    }
                }
            })
            .map_err(|e| Error::Io(format!("starting the notification thread: {e}")))?;

        let reader_shared = Arc::clone(&shared);
        let on_request = Handlers {
            raw: options.on_request,
            typed: options.on_host_request,
        };
        let max = options.max_frame_bytes;
        thread::Builder::new()
            .name("sidecar-reader".into())
            .spawn(move || {
                let mut r = BufReader::new(stdout);
                let why = read_loop(&mut r, max, &reader_shared, &note_tx, on_request);
                drop(note_tx);
                let malformed = matches!(why, Error::Malformed(_));
                reader_shared.close(why);
                if malformed {
                    // A sidecar that sends garbage is broken. EOF on its stdin
                    // tells it to end its servers and exit; its stdout is
                    // drained meanwhile so that it never blocks on a write.
                    reader_shared.stdin.lock().unwrap().take();
                    let _ = io::copy(&mut r, &mut io::sink());
                }
            })
            .map_err(|e| Error::Io(format!("starting the reader thread: {e}")))?;

        Ok(SidecarClient {
            shared,
            next_id: AtomicU64::new(1),
            request_timeout: options.request_timeout,
            pid,
        })
    }

    /// The sidecar's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Sends a request and waits for its result.
    pub fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        self.start(method, params)?.wait()
    }

    /// Sends a request without waiting: the caller can cancel it, or wait.
    pub fn start(&self, method: &str, params: Value) -> Result<PendingRequest<'_>, Error> {
        let params = if params.is_null() {
            None
        } else {
            Some(params.to_string())
        };
        self.start_text(method, params.as_deref())
    }

    /// Sends a request whose params are exact JSON text (see `object_with_raw`):
    /// nothing is re-encoded, so big numbers and key order go as written.
    pub fn start_raw(&self, method: &str, params: &RawValue) -> Result<PendingRequest<'_>, Error> {
        self.start_text(method, Some(params.get()))
    }

    fn start_text(&self, method: &str, params: Option<&str>) -> Result<PendingRequest<'_>, Error> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        {
            let mut p = self.shared.pending.lock().unwrap();
            if let Some(why) = &p.closed {
                return Err(why.clone());
            }
            p.waiters.insert(id, tx);
        }
        let mut body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":{}"#, json!(method));
        if let Some(params) = params {
            body.push_str(r#","params":"#);
            body.push_str(params);
        }
        body.push('}');
        if let Err(e) = self.shared.write(&body) {
            self.shared.pending.lock().unwrap().waiters.remove(&id);
            return Err(e);
        }
        Ok(PendingRequest {
            client: self,
            id,
            method: method.to_string(),
            rx,
        })
    }

    /// Sends request `R` and waits for its result, both typed.
    pub fn call<R: Request>(&self, params: &R::Params) -> Result<R::Result, Error> {
        self.start_call::<R>(params)?.wait()
    }

    /// Sends request `R` without waiting: the caller can cancel it, or wait.
    /// Params are encoded once: `Box<RawValue>` members (`sandboxState`) go
    /// as written.
    pub fn start_call<R: Request>(&self, params: &R::Params) -> Result<TypedRequest<'_, R>, Error> {
        let text = serde_json::to_string(params)
            .map_err(|e| Error::Io(format!("encoding the params of {}: {e}", R::METHOD)))?;
        let text = if text == "null" { None } else { Some(text) };
        Ok(TypedRequest {
            pending: self.start_text(R::METHOD, text.as_deref())?,
            _request: PhantomData,
        })
    }

    /// `initialize`, then `initialized`. Fails with `Error::Incompatible`
    /// when the sidecar speaks another protocol version than this crate.
    pub fn initialize(&self, params: &InitializeParams) -> Result<InitializeResult, Error> {
        let result = self.call::<requests::Initialize>(params)?;
        if result.protocol_version != PROTOCOL_VERSION {
            return Err(Error::Incompatible(format!(
                "mcp-sidecar {} speaks host protocol version {}; this client speaks {}",
                result.server_info.version.as_deref().unwrap_or(""),
                result.protocol_version,
                PROTOCOL_VERSION
            )));
        }
        self.notify("initialized", json!({}))?;
        Ok(result)
    }

    /// Sends a notification (no answer comes).
    pub fn notify(&self, method: &str, params: Value) -> Result<(), Error> {
        let mut body = format!(r#"{{"jsonrpc":"2.0","method":{}"#, json!(method));
        if !params.is_null() {
            body.push_str(r#","params":"#);
            body.push_str(&params.to_string());
        }
        body.push('}');
        self.shared.write(&body)
    }

    /// `$/cancelRequest` for a request sent earlier; the sidecar answers that
    /// request with -32800.
    pub fn cancel(&self, id: u64) -> Result<(), Error> {
        self.notify("$/cancelRequest", json!({ "id": id }))
    }

    /// `shutdown`, then `exit`, then waits up to `timeout` for the sidecar to
    /// exit, and returns its exit status (0 after a clean shutdown).
    pub fn shutdown(&self, timeout: Duration) -> Result<ExitStatus, Error> {
        self.request("shutdown", Value::Null)?;
        self.notify("exit", Value::Null)?;
        // EOF on stdin is also exit to the sidecar; closing it makes sure.
        self.shared.stdin.lock().unwrap().take();
        self.wait_exit(timeout)
    }

    /// Waits up to `timeout` for the sidecar to exit.
    pub fn wait_exit(&self, timeout: Duration) -> Result<ExitStatus, Error> {
        self.shared
            .exit_status_within(timeout)
            .ok_or_else(|| Error::Timeout {
                method: "exit (the sidecar process to end)".into(),
                after: timeout,
            })
    }

    /// Kills the sidecar at once (SIGKILL). Its servers are then left to
    /// notice their stdin closing; `shutdown`, or dropping the client, which
    /// closes the sidecar's stdin first, lets the sidecar end them itself.
    pub fn kill(&self) {
        let mut child = self.shared.child.lock().unwrap();
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for SidecarClient {
    /// Never leaves the sidecar running behind the harness: EOF on its stdin
    /// is exit to the sidecar (it ends every server's process group); if it
    /// has not exited within two seconds it is killed.
    fn drop(&mut self) {
        self.shared.stdin.lock().unwrap().take();
        if self
            .shared
            .exit_status_within(Duration::from_secs(2))
            .is_none()
        {
            self.kill();
        }
    }
}

impl PendingRequest<'_> {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Sends `$/cancelRequest` for this request; `wait` still returns its
    /// answer (-32800 from the sidecar).
    pub fn cancel(&self) -> Result<(), Error> {
        self.client.cancel(self.id)
    }

    /// Waits for the result.
    pub fn wait(self) -> Result<Value, Error> {
        let raw = self.wait_raw()?;
        serde_json::from_str(raw.get())
            .map_err(|e| Error::Malformed(format!("result is not JSON: {e}")))
    }

    /// Waits for the result as the exact JSON text the sidecar sent.
    pub fn wait_raw(self) -> Result<Box<RawValue>, Error> {
        match self.rx.recv_timeout(self.client.request_timeout) {
            Ok(reply) => reply,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                self.client
                    .shared
                    .pending
                    .lock()
                    .unwrap()
                    .waiters
                    .remove(&self.id);
                Err(Error::Timeout {
                    method: self.method,
                    after: self.client.request_timeout,
                })
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(self
                .client
                .shared
                .closed_reason()
                .unwrap_or_else(|| Error::Closed("the reader thread ended".into()))),
        }
    }
}

/// A typed request that was sent and not yet answered.
pub struct TypedRequest<'a, R: Request> {
    pending: PendingRequest<'a>,
    _request: PhantomData<R>,
}

impl<R: Request> TypedRequest<'_, R> {
    pub fn id(&self) -> u64 {
        self.pending.id()
    }

    /// Sends `$/cancelRequest`; `wait` then returns -32800 (kind `cancelled`).
    pub fn cancel(&self) -> Result<(), Error> {
        self.pending.cancel()
    }

    /// Waits for the result, decoded from the bytes the sidecar sent.
    pub fn wait(self) -> Result<R::Result, Error> {
        let raw = self.pending.wait_raw()?;
        serde_json::from_str(raw.get())
            .map_err(|e| Error::Malformed(format!("the result of {}: {e}", R::METHOD)))
    }
}

/// Builds a JSON object from `fields` plus fields whose values are exact JSON
/// text, e.g. a `sandboxState` policy that must reach the server byte for byte.
pub fn object_with_raw(
    fields: &Value,
    raw_fields: &[(&str, &RawValue)],
) -> Result<Box<RawValue>, Error> {
    let map = match fields.as_object() {
        Some(map) => map,
        None => {
            return Err(Error::Io(
                "object_with_raw: fields must be a JSON object".into(),
            ));
        }
    };
    let mut parts: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}:{}", json!(k), v))
        .collect();
    for (k, v) in raw_fields {
        parts.push(format!("{}:{}", json!(k), v.get()));
    }
    RawValue::from_string(format!("{{{}}}", parts.join(",")))
        .map_err(|e| Error::Io(format!("object_with_raw: {e}")))
}

// ------------------------------------------------------------ reader side

/// The handlers of the sidecar's requests.
#[derive(Clone)]
struct Handlers {
    raw: Option<RequestHandler>,
    typed: Option<HostRequestHandler>,
}

/// Reads frames until the stream ends or breaks, and says why it ended.
fn read_loop<R: BufRead>(
    r: &mut R,
    max: usize,
    shared: &Arc<Shared>,
    notes: &mpsc::Sender<(String, Value)>,
    on_request: Handlers,
) -> Error {
    loop {
        let body = match read_frame(r, max) {
            Ok(Some(body)) => body,
            Ok(None) => {
                // Exit and EOF arrive together; give the status a moment.
                return match shared.exit_status_within(Duration::from_secs(2)) {
                    Some(st) => Error::Closed(format!("the sidecar exited ({st})")),
                    None => Error::Closed("the sidecar closed its stdout".into()),
                };
            }
            Err(FrameError::Io(e)) => {
                return Error::Closed(format!("reading from the sidecar: {e}"))
            }
            Err(e) => return Error::Malformed(e.to_string()),
        };
        if let Err(why) = route(&body, shared, notes, &on_request) {
            return why;
        }
    }
}

/// Hands one message to whoever waits for it.
fn route(
    body: &[u8],
    shared: &Arc<Shared>,
    notes: &mpsc::Sender<(String, Value)>,
    on_request: &Handlers,
) -> Result<(), Error> {
    let malformed = |why: String| {
        Error::Malformed(format!(
            "{why}: {}",
            String::from_utf8_lossy(&body[..body.len().min(200)])
        ))
    };
    // Fields stay raw so a result reaches the caller as the sidecar wrote it.
    let msg: HashMap<String, Box<RawValue>> =
        serde_json::from_slice(body).map_err(|e| malformed(format!("not a JSON object ({e})")))?;
    let id = msg.get("id").filter(|id| id.get() != "null");
    let parse = |raw: Option<&Box<RawValue>>| -> Value {
        raw.and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or(Value::Null)
    };

    if let Some(method) = msg.get("method") {
        let method: String = serde_json::from_str(method.get())
            .map_err(|_| malformed("method is not a string".into()))?;
        let params = parse(msg.get("params"));
        match id {
            None => {
                if method == "$/cancelRequest" {
                    // The server gave up on a request the sidecar relayed.
                    if let Some(id) = params.get("id") {
                        if let Some(flag) = shared.host_requests.lock().unwrap().get(&id.to_string()) {
                            flag.cancel();
                        }
                    }
                }
                let _ = notes.send((method, params));
            }
            Some(id) => {
                let id = id.get().to_string();
                let flag = CancelFlag::default();
                shared.host_requests.lock().unwrap().insert(id.clone(), flag.clone());
                let handlers = on_request.clone();
                let shared = Arc::clone(shared);
                thread::spawn(move || {
                    // A handler that panics still gets the sidecar an answer,
                    // which would otherwise wait for it.
                    let panicked = |_| {
                        Err(RpcError::new(
                            codes::INTERNAL_ERROR,
                            format!("the host's handler for {method} panicked"),
                        ))
                    };
                    let answer = match (&handlers.typed, &handlers.raw) {
                        (Some(h), _) => match HostRequest::parse(&method, params) {
                            Ok(req) => panic::catch_unwind(AssertUnwindSafe(|| h(req, flag)))
                                .unwrap_or_else(panicked),
                            Err(e) => Err(RpcError::new(
                                codes::INVALID_PARAMS,
                                format!("{method}: params the host cannot read: {e}"),
                            )),
                        },
                        (None, Some(h)) => panic::catch_unwind(AssertUnwindSafe(|| h(&method, params)))
                            .unwrap_or_else(panicked),
                        (None, None) => Err(RpcError::new(
                            codes::METHOD_NOT_FOUND,
                            format!("this host does not handle {method}"),
                        )),
                    };
                    shared.host_requests.lock().unwrap().remove(&id);
                    let body = match answer {
                        Ok(result) => format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
                        Err(e) => {
                            format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#, e.to_json())
                        }
                    };
                    // If the sidecar is gone, the reader thread reports it.
                    let _ = shared.write(&body);
                });
            }
        }
        return Ok(());
    }

    let id = match id {
        Some(id) => id,
        None if !msg.contains_key("error") => {
            return Err(malformed(
                "neither a request, a notification nor a response".into(),
            ))
        }
        None => {
            // An error for a message the sidecar could not read far enough to
            // find its id: nobody waits for it, and the connection goes on.
            eprintln!(
                "sidecar-client: the sidecar reported an error with no id: {}",
                String::from_utf8_lossy(body)
            );
            return Ok(());
        }
    };
    let id: u64 = serde_json::from_str(id.get()).map_err(|_| {
        malformed(format!(
            "response id {} is not one this client sent",
            id.get()
        ))
    })?;
    let reply: Reply = if let Some(err) = msg.get("error") {
        let err = parse(Some(err));
        Err(Error::Rpc(RpcError {
            code: err.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            data: err.get("data").cloned(),
        }))
    } else {
        match msg.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(malformed("response has neither result nor error".into())),
        }
    };
    // A waiter that timed out is gone; its late answer is dropped.
    if let Some(tx) = shared.pending.lock().unwrap().waiters.remove(&id) {
        let _ = tx.send(reply);
    }
    Ok(())
}

// ------------------------------------------------------------------ tests

#[cfg(test)]
mod tests {
    use super::*;

    /// What successive `read_frame` calls return, up to the first that is
    /// not a frame.
    type Reads = Vec<Result<Option<Vec<u8>>, String>>;

    fn read_all(input: &[u8]) -> Reads {
        let mut r = io::BufReader::new(input);
        let mut out = Vec::new();
        loop {
            let res = read_frame(&mut r, 64).map_err(|e| e.to_string());
            let stop = !matches!(res, Ok(Some(_)));
            out.push(res);
            if stop {
                return out;
            }
        }
    }

    #[test]
    fn frames() {
        let ok = |s: &str| Ok(Some(s.as_bytes().to_vec()));
        let cases: Vec<(&str, &[u8], Reads)> = vec![
            ("empty stream", b"", vec![Ok(None)]),
            (
                "two frames, Content-Type ignored, any header case",
                b"Content-Length: 2\r\n\r\n{}content-length:3\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1]",
                vec![ok("{}"), ok("[1]"), Ok(None)],
            ),
            (
                "header without colon",
                b"Content-Length 2\r\n\r\n{}",
                vec![Err(r#"bad frame header: header line "Content-Length 2" has no colon"#.into())],
            ),
            (
                "bare LF",
                b"Content-Length: 2\n\n{}",
                vec![Err(r#"bad frame header: header line "Content-Length: 2\n" does not end with CRLF"#.into())],
            ),
            (
                "length not a number",
                b"Content-Length: -1\r\n\r\n",
                vec![Err(r#"bad frame header: Content-Length "-1" is not a number"#.into())],
            ),
            ("no length", b"Content-Type: x\r\n\r\n{}", vec![Err("frame header has no Content-Length".into())]),
            (
                "over the limit",
                b"Content-Length: 65\r\n\r\n",
                vec![Err("frame of 65 bytes is over the limit of 64".into())],
            ),
            (
                "short body",
                b"Content-Length: 10\r\n\r\n{\"a\":",
                vec![Err("truncated frame: short body: the stream ended after 5 of 10 bytes".into())],
            ),
            (
                "eof in header",
                b"Content-Length: 10\r\n",
                vec![Err("truncated frame: the stream ended inside the header".into())],
            ),
        ];
        for (name, input, want) in cases {
            assert_eq!(read_all(input), want, "{name}");
        }
    }

    #[test]
    fn write_then_read() {
        let mut buf = Vec::new();
        write_frame(&mut buf, "{\"é\":1}".as_bytes()).unwrap();
        assert_eq!(buf, b"Content-Length: 8\r\n\r\n{\"\xc3\xa9\":1}".to_vec());
        assert_eq!(
            read_all(&buf),
            vec![Ok(Some("{\"é\":1}".as_bytes().to_vec())), Ok(None)]
        );
    }

    #[test]
    fn object_with_raw_keeps_bytes() {
        let raw = RawValue::from_string("{\"n\":123456789012345678901234567890, \"f\":1.0}".into())
            .unwrap();
        let got = object_with_raw(&json!({"a": "x"}), &[("state", &raw)]).unwrap();
        assert_eq!(
            got.get(),
            r#"{"a":"x","state":{"n":123456789012345678901234567890, "f":1.0}}"#
        );
    }

    fn sh(script: &str) -> SidecarClient {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]);
        let opts = Options {
            request_timeout: Duration::from_secs(20),
            ..Options::default()
        };
        SidecarClient::spawn(cmd, opts).unwrap()
    }

    #[test]
    fn sidecar_that_dies_gives_closed_with_status() {
        // Reads the request, then exits with 3 without answering.
        let client = sh("head -c 1 >/dev/null; exit 3");
        match client.request("initialize", json!({})) {
            Err(Error::Closed(why)) => assert!(why.contains("exit status: 3"), "{why}"),
            other => panic!("want Closed, got {other:?}"),
        }
        // Later requests fail at once with the same reason.
        assert!(matches!(
            client.request("tools/list", json!({})),
            Err(Error::Closed(_))
        ));
    }

    #[test]
    fn malformed_frame_closes_the_connection() {
        let client = sh(r#"printf 'Content-Length: 2\r\nbogus\r\n\r\n{}'; exec cat >/dev/null"#);
        match client.request("initialize", json!({})) {
            Err(Error::Malformed(why)) => assert!(why.contains(r#""bogus" has no colon"#), "{why}"),
            other => panic!("want Malformed, got {other:?}"),
        }
    }

    #[test]
    fn answers_errors_and_sidecar_requests() {
        let frame = |body: &str| format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let dir = std::env::temp_dir().join(format!("sidecar-client-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // What the scripted peer sends once it has read our two requests: a
        // request of its own, then the answers, the second one first.
        let peer_out = dir.join("peer-out");
        let peer_in = dir.join("peer-in");
        std::fs::write(
            &peer_out,
            [
                frame(r#"{"jsonrpc":"2.0","id":"q","method":"mcp/roots","params":{}}"#),
                frame(r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"cancelled","data":{"kind":"cancelled"}}}"#),
                frame(r#"{"jsonrpc":"2.0","id":1,"result":{"n":1.0, "big":123456789012345678901234567890}}"#),
            ]
            .concat(),
        )
        .unwrap();
        let requests = frame(r#"{"jsonrpc":"2.0","id":1,"method":"a","params":{}}"#)
            + &frame(r#"{"jsonrpc":"2.0","id":2,"method":"b"}"#);
        let answer =
            frame(r#"{"jsonrpc":"2.0","id":"q","result":{"method":"mcp/roots","roots":[]}}"#);
        let script = format!(
            "head -c {} >/dev/null && cat '{}' && head -c {} > '{}'",
            requests.len(),
            peer_out.display(),
            answer.len(),
            peer_in.display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        let handler: RequestHandler =
            Arc::new(|method, _| Ok(json!({"roots": [], "method": method})));
        let opts = Options {
            on_request: Some(handler),
            request_timeout: Duration::from_secs(20),
            ..Options::default()
        };
        let client = SidecarClient::spawn(cmd, opts).unwrap();

        let first = client.start("a", json!({})).unwrap();
        let second = client.start("b", Value::Null).unwrap();
        assert_eq!((first.id(), second.id()), (1, 2));
        let err = second.wait().unwrap_err();
        assert_eq!(err.code(), Some(codes::REQUEST_CANCELLED), "{err}");
        match &err {
            Error::Rpc(e) => assert_eq!(e.kind(), Some("cancelled")),
            other => panic!("want Rpc, got {other:?}"),
        }
        assert_eq!(
            first.wait_raw().unwrap().get(),
            r#"{"n":1.0, "big":123456789012345678901234567890}"#
        );
        // The peer exits once it has read the host's whole answer to "q".
        let status = client.wait_exit(Duration::from_secs(20)).unwrap();
        assert!(status.success(), "peer: {status}");
        assert_eq!(std::fs::read_to_string(&peer_in).unwrap(), answer);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
