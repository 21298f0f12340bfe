//! The connection to the sidecar: spawns it, frames JSON-RPC messages with
//! `Content-Length` headers (as LSP) over the child's stdin/stdout, and
//! routes what the sidecar sends back. Requests go typed (`call`, with the
//! types of `protocol`) or as `serde_json::Value` (`request`).

use serde::de::DeserializeOwned;
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
    host_requests, requests, AuthorizeParams, AuthorizeResult, CallToolResult,
    CreateMessageResult, CreateTaskResult, ElicitParams, ElicitResult, HostMethod,
    InitializeParams, InitializeResult, InputParams, InputResult, Notification, Request, RootsParams, RootsResult,
    SampleParams, ToolsCallParams, PROTOCOL_VERSION,
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

/// Why a frame could not be read. `Io` and `Truncated` end the stream; after
/// any other, `FrameReader` goes on with the next frame.
#[derive(Debug)]
pub enum FrameError {
    Io(io::Error),
    /// A header line that is not `Name: value` ending in a line break, or a
    /// `Content-Length` that is not a number.
    BadHeader(String),
    MissingContentLength,
    /// A body over the limit; its bytes were skipped, not kept.
    TooLarge {
        length: usize,
        limit: usize,
    },
    /// The stream ended inside a frame.
    Truncated(String),
}

impl FrameError {
    /// Whether the stream is over: nothing can be read after this error.
    pub fn is_fatal(&self) -> bool {
        matches!(self, FrameError::Io(_) | FrameError::Truncated(_))
    }
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
/// of stream (EOF before the first byte of a frame). A body over `max_bytes`
/// is skipped (`TooLarge`), so the next call reads the next frame; after a
/// bad header the position in the stream is unknown: `FrameReader` finds the
/// next frame.
pub fn read_frame<R: BufRead>(r: &mut R, max_bytes: usize) -> Result<Option<Vec<u8>>, FrameError> {
    read_frame_from(r, max_bytes, None)
}

/// Reads a frame whose first header line, when given, was read already.
fn read_frame_from<R: BufRead>(
    r: &mut R,
    max_bytes: usize,
    mut first_line: Option<Vec<u8>>,
) -> Result<Option<Vec<u8>>, FrameError> {
    let mut length: Option<usize> = None;
    let mut line = Vec::new();
    let mut first = first_line.is_none();
    loop {
        line.clear();
        let n = match first_line.take() {
            Some(given) => {
                line = given;
                line.len()
            }
            None => r
                .by_ref()
                .take(MAX_HEADER_LINE as u64 + 1)
                .read_until(b'\n', &mut line)?,
        };
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
        // CRLF as LSP says, or LF alone.
        let text = line
            .strip_suffix(b"\r\n")
            .or_else(|| line.strip_suffix(b"\n"))
            .unwrap_or(&line);
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
        // Skipped without being held, so that the next frame can be read.
        io::copy(&mut r.by_ref().take(length as u64), &mut io::sink())?;
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

/// Reads frame after frame. A frame that cannot be read fails alone: after
/// a bad header the reader looks for the next `Content-Length` header (as
/// the sidecar does with what a host sends), and a body over the limit is
/// skipped. Only the end of the stream, or a read error, ends it.
pub struct FrameReader<R> {
    r: R,
    max_bytes: usize,
    /// The last frame's header was bad: look for the next one first.
    resync: bool,
}

impl<R: BufRead> FrameReader<R> {
    pub fn new(r: R, max_bytes: usize) -> Self {
        FrameReader {
            r,
            max_bytes,
            resync: false,
        }
    }

    /// The next frame's body; `Ok(None)` at the end of the stream. After an
    /// error that `is_fatal` says is not, call again for the next frame.
    pub fn next_frame(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        let first = if self.resync {
            self.resync = false;
            match self.next_header()? {
                Some(line) => Some(line),
                None => return Ok(None),
            }
        } else {
            None
        };
        let res = read_frame_from(&mut self.r, self.max_bytes, first);
        if matches!(
            res,
            Err(FrameError::BadHeader(_)) | Err(FrameError::MissingContentLength)
        ) {
            self.resync = true;
        }
        res
    }

    /// Skips to the next `Content-Length` header, wherever it starts (a bad
    /// frame's body may run into it), and returns its line. `None` at the end
    /// of the stream.
    fn next_header(&mut self) -> Result<Option<Vec<u8>>, FrameError> {
        const NEEDLE: &[u8] = b"content-length";
        // The end of a piece of a long line, in case the header starts there.
        let mut carry: Vec<u8> = Vec::new();
        loop {
            let mut piece = std::mem::take(&mut carry);
            let n = self
                .r
                .by_ref()
                .take(MAX_HEADER_LINE as u64)
                .read_until(b'\n', &mut piece)?;
            if n == 0 {
                return Ok(None);
            }
            if let Some(at) = find_ignore_case(&piece, NEEDLE) {
                let mut line = piece.split_off(at);
                if !line.ends_with(b"\n") {
                    // The header line goes on past this piece.
                    self.r
                        .by_ref()
                        .take(MAX_HEADER_LINE as u64)
                        .read_until(b'\n', &mut line)?;
                }
                return Ok(Some(line));
            }
            if !piece.ends_with(b"\n") {
                let from = piece.len().saturating_sub(NEEDLE.len() - 1);
                carry = piece.split_off(from);
            }
        }
    }
}

/// Where `needle` (lowercase ASCII) first occurs in `hay`, in any case.
fn find_ignore_case(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
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
    /// Something the sidecar sent that this client cannot read: a frame that
    /// does not parse, a body that is not JSON or not UTF-8, a result that
    /// does not decode into its type. That message alone is lost: the
    /// request it answers (when its id can be read) fails with this error,
    /// `Options::on_malformed` is told, and the connection goes on.
    Malformed(String),
    /// No answer within the client's request timeout.
    Timeout { method: String, after: Duration },
    /// Spawning the sidecar or writing to it failed.
    Io(String),
    /// The sidecar speaks another protocol version than this crate
    /// (docs/protocol.md, "Versioning").
    Incompatible(String),
    /// A call the client refuses before sending it; the message says why.
    Usage(String),
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
            Error::Usage(why) => write!(f, "{why}"),
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

/// Called with each message of the sidecar this client could not read
/// (`Error::Malformed`), on the dispatcher thread, in order with the
/// notifications.
pub type MalformedHandler = Box<dyn Fn(&Error) + Send>;

/// Answers a sidecar -> host request (`mcp/elicit`, `mcp/roots`, `mcp/sample`,
/// `mcp/authorize`, or one a later version adds) untyped, by method. Runs on
/// a thread of its own per request, so it may block (ask the user) for long.
pub type RequestHandler = Arc<dyn Fn(&str, Value) -> Result<Value, RpcError> + Send + Sync>;

/// One typed handler with its params decoded and its result encoded.
type TypedHandler = Arc<dyn Fn(Value, CancelFlag) -> Result<Value, RpcError> + Send + Sync>;

/// The typed handlers of the sidecar's requests, by method: set them with
/// `Options::on_elicit`, `on_roots`, `on_sample`, `on_authorize`, `on_input`
/// or `on`.
#[derive(Clone, Default)]
pub struct HostHandlers(HashMap<&'static str, TypedHandler>);

impl HostHandlers {
    /// Whether a handler of `method` is set.
    pub fn handles(&self, method: &str) -> bool {
        self.0.contains_key(method)
    }
}

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
    /// Without one, what the client cannot read is written to stderr.
    pub on_malformed: Option<MalformedHandler>,
    /// The typed handlers of sidecar requests; they take precedence over
    /// `on_request`.
    pub host_handlers: HostHandlers,
    /// Answers the sidecar requests no typed handler takes; without one,
    /// they are answered -32601.
    pub on_request: Option<RequestHandler>,
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

    /// Sets `on_malformed`.
    pub fn with_malformed(mut self, f: impl Fn(&Error) + Send + 'static) -> Self {
        self.on_malformed = Some(Box::new(f));
        self
    }

    /// Answers the sidecar's request `R` (see `protocol::host_requests`) with
    /// `f`, on a thread of its own per request, so `f` may wait for the user.
    /// The flag says when the server gave up on the request (the sidecar sent
    /// `$/cancelRequest`): `f` may stop asking its user, and its answer is
    /// dropped. Params that do not decode are answered -32602 without
    /// calling `f`. A later handler of the same method replaces this one.
    pub fn on<R: HostMethod>(
        mut self,
        f: impl Fn(R::Params, CancelFlag) -> Result<R::Result, RpcError> + Send + Sync + 'static,
    ) -> Self {
        let typed: TypedHandler = Arc::new(move |params: Value, flag: CancelFlag| {
            let params: R::Params = serde_json::from_value(params).map_err(|e| {
                RpcError::new(
                    codes::INVALID_PARAMS,
                    format!("{}: params the host cannot read: {e}", R::METHOD),
                )
            })?;
            let result = f(params, flag)?;
            serde_json::to_value(result).map_err(|e| {
                RpcError::new(
                    codes::INTERNAL_ERROR,
                    format!("{}: encoding the host's answer: {e}", R::METHOD),
                )
            })
        });
        self.host_handlers.0.insert(R::METHOD, typed);
        self
    }

    /// Answers `mcp/elicit` (declare `capabilities.elicitation` in
    /// `initialize`): `p.params` is a form, a URL elicitation, or a mode this
    /// version does not know; `ElicitResult::accept`, `decline`, `cancel`.
    pub fn on_elicit(
        self,
        f: impl Fn(ElicitParams, CancelFlag) -> Result<ElicitResult, RpcError> + Send + Sync + 'static,
    ) -> Self {
        self.on::<host_requests::Elicit>(f)
    }

    /// Answers `mcp/roots` (declare `capabilities.roots`).
    pub fn on_roots(
        self,
        f: impl Fn(RootsParams, CancelFlag) -> Result<RootsResult, RpcError> + Send + Sync + 'static,
    ) -> Self {
        self.on::<host_requests::Roots>(f)
    }

    /// Answers `mcp/sample` (declare `capabilities.sampling`).
    pub fn on_sample(
        self,
        f: impl Fn(SampleParams, CancelFlag) -> Result<CreateMessageResult, RpcError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.on::<host_requests::Sample>(f)
    }

    /// Answers `mcp/authorize` (declare `capabilities.authorization`): open
    /// `p.authorization_url` for the user, then answer `AuthorizeResult`
    /// (`Default` once it is open; `cancelled` when the user declined;
    /// `redirect_url` from a host that catches the redirect).
    pub fn on_authorize(
        self,
        f: impl Fn(AuthorizeParams, CancelFlag) -> Result<AuthorizeResult, RpcError>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.on::<host_requests::Authorize>(f)
    }

    /// Answers `mcp/input` (declare `capabilities.inputs`): a server of a
    /// VS Code file uses `${input:ID}`; ask the user `p.description` (hide
    /// the answer when `p.password`, offer `p.default`) and answer
    /// `InputResult { value: Some(..), .. }`, or `cancelled: Some(true)`
    /// when the user declined. The sidecar asks once per input and keeps
    /// the answer for as long as it runs.
    pub fn on_input(
        self,
        f: impl Fn(InputParams, CancelFlag) -> Result<InputResult, RpcError> + Send + Sync + 'static,
    ) -> Self {
        self.on::<host_requests::Input>(f)
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            request_timeout: Duration::from_secs(60),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            on_notification: None,
            on_malformed: None,
            host_handlers: HostHandlers::default(),
            on_request: None,
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

    /// Why the connection ended when the sidecar's stdout did (`what`): its
    /// exit status, when it exits at once, as it does.
    fn ended(&self, what: &str) -> Error {
        match self.exit_status_within(Duration::from_secs(2)) {
            Some(st) => Error::Closed(format!("the sidecar exited ({st})")),
            None => Error::Closed(format!("the sidecar {what}")),
        }
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

        let (event_tx, event_rx) = mpsc::channel::<Event>();
        let on_notification = options.on_notification;
        let on_malformed = options.on_malformed;
        thread::Builder::new()
            .name("sidecar-notifications".into())
            .spawn(move || {
                // Ends when the reader thread drops event_tx.
                for event in event_rx {
                    match event {
                        Event::Notification(method, params) => {
                            if let Some(f) = &on_notification {
                                f(&method, params);
                            }
                        }
                        Event::Malformed(e) => match &on_malformed {
                            Some(f) => f(&e),
                            None => eprintln!("mcp-sidecar-client: {e}"),
                        },
                    }
                }
            })
            .map_err(|e| Error::Io(format!("starting the notification thread: {e}")))?;

        let reader_shared = Arc::clone(&shared);
        let handlers = Handlers {
            typed: options.host_handlers,
            raw: options.on_request,
        };
        let max = options.max_frame_bytes;
        thread::Builder::new()
            .name("sidecar-reader".into())
            .spawn(move || {
                let mut frames = FrameReader::new(BufReader::new(stdout), max);
                let why = read_loop(&mut frames, &reader_shared, &event_tx, &handlers);
                drop(event_tx);
                reader_shared.close(why);
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

    /// `tools/call` without a task: the server's `CallToolResult`, with no
    /// enum to match (`text()`, `structured()`). Params with a `task` are
    /// refused (`Error::Usage`): call those with `call_tool_task`.
    pub fn call_tool(&self, params: &ToolsCallParams) -> Result<CallToolResult, Error> {
        if params.task.is_some() {
            return Err(Error::Usage(
                "call_tool: the params have a task, whose answer is a CreateTaskResult: use call_tool_task".into(),
            ));
        }
        self.start_call::<requests::ToolsCall>(params)?.wait_as()
    }

    /// `tools/call` as a task (MCP tasks): with `params.task`, or `{}` when it
    /// has none. The answer is the server's `CreateTaskResult`; follow the
    /// task with `tasks/get`, `tasks/result` (`call::<requests::TasksResult>`)
    /// and `mcp/taskStatus`.
    pub fn call_tool_task(&self, params: &ToolsCallParams) -> Result<CreateTaskResult, Error> {
        let with_task;
        let params = if params.task.is_some() {
            params
        } else {
            with_task = ToolsCallParams {
                task: Some(Default::default()),
                ..params.clone()
            };
            &with_task
        };
        self.start_call::<requests::ToolsCall>(params)?.wait_as()
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
        self.wait_as()
    }

    /// Waits for the result and decodes it as `T`: one type of a result
    /// that may be several (`CallToolResult` of a `tools/call` without a
    /// task).
    pub fn wait_as<T: DeserializeOwned>(self) -> Result<T, Error> {
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

/// What the reader thread hands the dispatcher thread, in arrival order.
enum Event {
    Notification(String, Value),
    Malformed(Error),
}

/// The handlers of the sidecar's requests.
#[derive(Clone)]
struct Handlers {
    typed: HostHandlers,
    raw: Option<RequestHandler>,
}

/// Reads frames until the stream ends, and says why it ended. A frame or a
/// message that cannot be read fails alone: it is reported, and the next
/// one is read.
fn read_loop<R: BufRead>(
    frames: &mut FrameReader<R>,
    shared: &Arc<Shared>,
    events: &mpsc::Sender<Event>,
    handlers: &Handlers,
) -> Error {
    loop {
        match frames.next_frame() {
            Ok(Some(body)) => route(&body, shared, events, handlers),
            Ok(None) => return shared.ended("closed its stdout"),
            Err(FrameError::Io(e)) => {
                return Error::Closed(format!("reading from the sidecar: {e}"))
            }
            Err(e @ FrameError::Truncated(_)) => {
                return shared.ended(&format!("closed its stdout inside a frame ({e})"))
            }
            Err(e) => {
                let _ = events.send(Event::Malformed(Error::Malformed(e.to_string())));
            }
        }
    }
}

/// Hands one message to whoever waits for it.
fn route(body: &[u8], shared: &Arc<Shared>, events: &mpsc::Sender<Event>, handlers: &Handlers) {
    // Fields stay raw so a result reaches the caller as the sidecar wrote it.
    let msg: HashMap<String, Box<RawValue>> = match serde_json::from_slice(body) {
        Ok(msg) => msg,
        Err(e) => {
            let why = match std::str::from_utf8(body) {
                Err(u) => format!("a message that is not UTF-8 (byte {})", u.valid_up_to()),
                Ok(_) => format!("a message that is not a JSON object ({e})"),
            };
            let (id, is_request) = recover_id(&String::from_utf8_lossy(body));
            return fail(body, id, is_request, &why, shared, events);
        }
    };
    let id = msg
        .get("id")
        .map(|id| id.get().to_string())
        .filter(|id| id != "null");
    let parse = |raw: Option<&Box<RawValue>>| -> Value {
        raw.and_then(|r| serde_json::from_str(r.get()).ok())
            .unwrap_or(Value::Null)
    };

    if let Some(method) = msg.get("method") {
        let method: String = match serde_json::from_str(method.get()) {
            Ok(m) => m,
            Err(_) => {
                let is_request = id.is_some();
                return fail(body, id, is_request, "a method that is not a string", shared, events);
            }
        };
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
                let _ = events.send(Event::Notification(method, params));
            }
            Some(id) => answer_host_request(id, method, params, shared, handlers),
        }
        return;
    }

    let id = match id {
        Some(id) => id,
        None if !msg.contains_key("error") => {
            return fail(body, None, false, "neither a request, a notification nor a response", shared, events);
        }
        None => {
            // An error for a message the sidecar could not read far enough to
            // find its id: nobody waits for it, and the connection goes on.
            eprintln!(
                "mcp-sidecar-client: the sidecar reported an error with no id: {}",
                excerpt(body)
            );
            return;
        }
    };
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
            None => {
                return fail(body, Some(id), false, "a response with neither result nor error", shared, events);
            }
        }
    };
    let waiter = id
        .parse::<u64>()
        .ok()
        .and_then(|n| shared.pending.lock().unwrap().waiters.remove(&n));
    match waiter {
        // A waiter that timed out is gone; its late answer is dropped.
        Some(tx) => {
            let _ = tx.send(reply);
        }
        None if id.parse::<u64>().is_err() => {
            fail(body, None, false, &format!("a response to id {id}, which this client never sends"), shared, events);
        }
        None => {}
    }
}

/// Answers a request of the sidecar on a thread of its own, so that a
/// handler that waits for its user holds up nothing else.
fn answer_host_request(id: String, method: String, params: Value, shared: &Arc<Shared>, handlers: &Handlers) {
    let flag = CancelFlag::default();
    shared.host_requests.lock().unwrap().insert(id.clone(), flag.clone());
    let handlers = handlers.clone();
    let shared = Arc::clone(shared);
    thread::spawn(move || {
        // A handler that panics still gets the sidecar an answer, which
        // would otherwise wait for it.
        let panicked = |_| {
            Err(RpcError::new(
                codes::INTERNAL_ERROR,
                format!("the host's handler for {method} panicked"),
            ))
        };
        let answer = match (handlers.typed.0.get(method.as_str()), &handlers.raw) {
            (Some(h), _) => panic::catch_unwind(AssertUnwindSafe(|| h(params, flag)))
                .unwrap_or_else(panicked),
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
            Err(e) => format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#, e.to_json()),
        };
        // If the sidecar is gone, the reader thread reports it.
        let _ = shared.write(&body);
    });
}

/// Fails one message this client cannot read: the request it answers (id
/// known, not a request) gets `Error::Malformed`, a request of the sidecar
/// (id known) is answered -32700 so that its server is not left waiting, and
/// the app is told.
fn fail(
    body: &[u8],
    id: Option<String>,
    is_request: bool,
    why: &str,
    shared: &Arc<Shared>,
    events: &mpsc::Sender<Event>,
) {
    let err = Error::Malformed(format!("the sidecar sent {why}: {}", excerpt(body)));
    match id {
        Some(id) if is_request => {
            let e = RpcError::new(
                codes::PARSE_ERROR,
                format!("the host could not read the request: it is {why}"),
            );
            let _ = shared.write(&format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#, e.to_json()));
        }
        Some(id) => {
            let waiter = id
                .parse::<u64>()
                .ok()
                .and_then(|n| shared.pending.lock().unwrap().waiters.remove(&n));
            if let Some(tx) = waiter {
                let _ = tx.send(Err(err.clone()));
            }
        }
        None => {}
    }
    let _ = events.send(Event::Malformed(err));
}

/// The start of a message, for an error that quotes it.
fn excerpt(body: &[u8]) -> String {
    const MAX: usize = 200;
    let text = String::from_utf8_lossy(&body[..body.len().min(MAX)]);
    if body.len() > MAX {
        format!("{text}...")
    } else {
        text.into_owned()
    }
}

/// The id of a message that does not decode (its JSON text, `None` when it
/// has none or it cannot be found), and whether it has a method (a request
/// of the sidecar). The text parses when only its UTF-8 was bad (it is
/// lossy); otherwise its top-level members are read up to the first error.
fn recover_id(text: &str) -> (Option<String>, bool) {
    if let Ok(msg) = serde_json::from_str::<HashMap<String, Box<RawValue>>>(text) {
        let id = msg
            .get("id")
            .map(|id| id.get().to_string())
            .filter(|id| is_id(id));
        return (id, msg.contains_key("method"));
    }
    let mut s = Scanner {
        b: text.as_bytes(),
        i: 0,
    };
    let (mut id, mut method) = (None, false);
    if !s.eat(b'{') {
        return (None, false);
    }
    loop {
        let key = match s.string() {
            Some(k) => k,
            None => break,
        };
        if !s.eat(b':') {
            break;
        }
        let value = match s.value() {
            Some(v) => v,
            None => break,
        };
        match key {
            "\"id\"" if is_id(value) => id = Some(value.to_string()),
            "\"method\"" => method = true,
            _ => {}
        }
        if !s.eat(b',') {
            break;
        }
    }
    (id, method)
}

/// Whether JSON text is an id: a number or a string.
fn is_id(text: &str) -> bool {
    matches!(text.as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// Reads JSON tokens from the start of a text that may break off anywhere.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while self.i < self.b.len() && self.b[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }

    /// Skips whitespace and `c`; false when `c` is not next.
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.b.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn text(&self, from: usize) -> &'a str {
        std::str::from_utf8(&self.b[from..self.i]).unwrap_or("")
    }

    /// A string token, quotes included.
    fn string(&mut self) -> Option<&'a str> {
        self.ws();
        let from = self.i;
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        while self.i < self.b.len() {
            match self.b[self.i] {
                b'\\' => self.i += 2,
                b'"' => {
                    self.i += 1;
                    return Some(self.text(from));
                }
                _ => self.i += 1,
            }
        }
        None
    }

    /// One value's text: a string, a scalar, or an object or array skipped
    /// to its end.
    fn value(&mut self) -> Option<&'a str> {
        self.ws();
        let from = self.i;
        match *self.b.get(self.i)? {
            b'"' => return self.string(),
            b'{' | b'[' => {
                let mut depth = 0usize;
                while self.i < self.b.len() {
                    match self.b[self.i] {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Some(self.text(from));
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                None
            }
            _ => {
                while self.i < self.b.len()
                    && !matches!(self.b[self.i], b',' | b'}' | b']')
                    && !self.b[self.i].is_ascii_whitespace()
                {
                    self.i += 1;
                }
                (self.i > from && self.i < self.b.len()).then(|| self.text(from))
            }
        }
    }
}

// ------------------------------------------------------------------ tests

#[cfg(test)]
mod tests {
    use super::*;

    /// What successive `FrameReader::next_frame` calls return, up to the
    /// end of the stream or an error that ends it.
    type Reads = Vec<Result<Option<Vec<u8>>, String>>;

    fn read_all(input: &[u8]) -> Reads {
        let mut frames = FrameReader::new(io::BufReader::new(input), 64);
        let mut out = Vec::new();
        loop {
            let res = frames.next_frame();
            let stop = match &res {
                Ok(None) => true,
                Err(e) => e.is_fatal(),
                Ok(Some(_)) => false,
            };
            out.push(res.map_err(|e| e.to_string()));
            if stop {
                return out;
            }
        }
    }

    #[test]
    fn frames() {
        let ok = |s: &str| Ok(Some(s.as_bytes().to_vec()));
        let long_then_frame = [vec![b'a'; 9000], b"Content-Length: 2\r\n\r\n{}".to_vec()].concat();
        // The next header starts 2 bytes before the end of the first piece
        // the search for it reads (the bad line's first 8193 bytes, then
        // 8192 at a time).
        let header_across_pieces =
            [vec![b'a'; 8193 + 8190], b"Content-Length: 2\r\n\r\n[]".to_vec()].concat();
        let too_large = [
            b"Content-Length: 65\r\n\r\n".to_vec(),
            vec![b'x'; 65],
            b"Content-Length: 2\r\n\r\n{}".to_vec(),
        ]
        .concat();
        let cases: Vec<(&str, &[u8], Reads)> = vec![
            ("empty stream", b"", vec![Ok(None)]),
            (
                "two frames, Content-Type ignored, any header case",
                b"Content-Length: 2\r\n\r\n{}content-length:3\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[1]",
                vec![ok("{}"), ok("[1]"), Ok(None)],
            ),
            ("LF alone", b"Content-Length: 2\n\n{}", vec![ok("{}"), Ok(None)]),
            (
                "header without colon, then a frame",
                b"Content-Length 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]",
                vec![
                    Err(r#"bad frame header: header line "Content-Length 2" has no colon"#.into()),
                    ok("[1]"),
                    Ok(None),
                ],
            ),
            (
                "a bad frame's body runs into the next header",
                b"Content-Length: 2\r\nbogus\r\n\r\n{}Content-Length: 2\r\n\r\n[]",
                vec![
                    Err(r#"bad frame header: header line "bogus" has no colon"#.into()),
                    ok("[]"),
                    Ok(None),
                ],
            ),
            (
                "length not a number",
                b"Content-Length: -1\r\n\r\nContent-Length: 2\r\n\r\n{}",
                vec![
                    Err(r#"bad frame header: Content-Length "-1" is not a number"#.into()),
                    ok("{}"),
                    Ok(None),
                ],
            ),
            (
                "no length",
                b"Content-Type: x\r\n\r\n{}Content-Length: 2\r\n\r\n[]",
                vec![Err("frame header has no Content-Length".into()), ok("[]"), Ok(None)],
            ),
            (
                "over the limit: skipped",
                &too_large,
                vec![Err("frame of 65 bytes is over the limit of 64".into()), ok("{}"), Ok(None)],
            ),
            (
                "header line over the limit",
                &long_then_frame,
                vec![
                    Err("bad frame header: header line longer than 8192 bytes".into()),
                    ok("{}"),
                    Ok(None),
                ],
            ),
            (
                "the next header across two pieces of a long line",
                &header_across_pieces,
                vec![
                    Err("bad frame header: header line longer than 8192 bytes".into()),
                    ok("[]"),
                    Ok(None),
                ],
            ),
            (
                "garbage, then the end",
                b"hello\r\nworld",
                vec![Err(r#"bad frame header: header line "hello" has no colon"#.into()), Ok(None)],
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
    fn recovers_ids_of_messages_that_do_not_decode() {
        let cases: Vec<(&str, &str, Option<&str>, bool)> = vec![
            ("lossy text that parses", r#"{"jsonrpc":"2.0","id":7,"result":{"t":"�"}}"#, Some("7"), false),
            ("a request", r#"{"id":"q","jsonrpc":"2.0","method":"mcp/roots","params":{"#, Some(r#""q""#), true),
            ("broken after the id", r#"{"jsonrpc":"2.0","id":12,"result":{"a":[1,{"b":"}"}],"c":"#, Some("12"), false),
            ("id after a nested member", r#"{"result":{"id":1,"x":"]"},"id":3,"jsonrpc":"2.0","bad"#, Some("3"), false),
            ("only a nested id", r#"{"result":{"id":1,"x":2"#, None, false),
            ("an id cut short", r#"{"jsonrpc":"2.0","id":12"#, None, false),
            ("a null id", r#"{"jsonrpc":"2.0","id":null,"error":"#, None, false),
            ("not an object", r#"[{"id":1}"#, None, false),
            ("escapes in strings", r#"{"a":"\"id\":9","id":-4,"#, Some("-4"), false),
        ];
        for (name, text, id, is_request) in cases {
            assert_eq!(recover_id(text), (id.map(String::from), is_request), "{name}");
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

    /// A raw byte stream with a message of each kind the client cannot
    /// read, each followed by good ones: every bad message fails alone (the
    /// request it answers fails, a request of the sidecar is answered
    /// -32700, the app is told), and the connection goes on.
    #[test]
    fn bad_messages_fail_alone() {
        let frame = |body: &[u8]| [format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes(), body.to_vec()].concat();
        let dir = std::env::temp_dir().join(format!("sidecar-client-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bad_response = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"\xff\"}}".to_vec();
        let bad_request = b"{\"id\":\"q\",\"jsonrpc\":\"2.0\",\"method\":\"mcp/roots\",\"params\":{\"x\":\"\xfe\"}}".to_vec();
        let bad_note = b"{\"jsonrpc\":\"2.0\",\"method\":\"mcp/log\",\"params\":{\"data\":\"\xff\"}}".to_vec();
        let bad_at = |body: &[u8]| std::str::from_utf8(body).unwrap_err().valid_up_to();
        let stream = [
            frame(&bad_response),
            frame(&bad_request),
            b"Content-Length: 5\r\nbogus\r\n\r\nhello".to_vec(),
            frame(&vec![b'x'; 5000]),
            frame(br#"{"jsonrpc":"2.0","id":2,"result":{"a":"#),
            frame(&bad_note),
            frame(br#"{"jsonrpc":"2.0","method":"mcp/log","params":{"server":"s","level":"info","data":"after"}}"#),
            frame(br#"{"jsonrpc":"2.0","id":3,"result":{"ok":true}}"#),
        ]
        .concat();
        let peer_out = dir.join("peer-out");
        let peer_in = dir.join("peer-in");
        std::fs::write(&peer_out, &stream).unwrap();
        let requests: Vec<u8> = (1..=3)
            .flat_map(|i| frame(format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"m","params":{{}}}}"#).as_bytes()))
            .collect();
        let byte = bad_at(&bad_request);
        let answer = String::from_utf8(frame(
            format!(
                r#"{{"jsonrpc":"2.0","id":"q","error":{{"code":-32700,"message":"the host could not read the request: it is a message that is not UTF-8 (byte {byte})"}}}}"#
            )
            .as_bytes(),
        ))
        .unwrap();
        let script = format!(
            "head -c {} >/dev/null && cat '{}' && head -c {} > '{}'",
            requests.len(),
            peer_out.display(),
            answer.len(),
            peer_in.display()
        );
        let mut cmd = Command::new("sh");
        cmd.args(["-c", &script]);
        let (malformed_tx, malformed_rx) = mpsc::channel::<String>();
        let (note_tx, note_rx) = mpsc::channel::<Value>();
        let options = Options {
            request_timeout: Duration::from_secs(20),
            max_frame_bytes: 4096,
            on_notification: Some(Box::new(move |_, params| {
                let _ = note_tx.send(params);
            })),
            ..Options::default()
        }
        .with_malformed(move |e| {
            let _ = malformed_tx.send(e.to_string());
        });
        let client = SidecarClient::spawn(cmd, options).unwrap();
        let pending: Vec<PendingRequest<'_>> = (0..3).map(|_| client.start("m", json!({})).unwrap()).collect();
        let mut results = pending.into_iter().map(|p| p.wait());
        let want_malformed = |r: Option<Result<Value, Error>>, what: &str| match r {
            Some(Err(Error::Malformed(why))) => assert!(why.contains(what), "{why}"),
            other => panic!("want Malformed ({what}), got {other:?}"),
        };
        want_malformed(results.next(), &format!("not UTF-8 (byte {})", bad_at(&bad_response)));
        want_malformed(results.next(), "not a JSON object (EOF while parsing");
        assert_eq!(results.next().unwrap().unwrap(), json!({"ok": true}));

        let wait = Duration::from_secs(20);
        let reported: Vec<String> = (0..6).map(|_| malformed_rx.recv_timeout(wait).expect("six reports")).collect();
        let want = [
            format!("the sidecar sent a message that is not UTF-8 (byte {}): {{\"jsonrpc\":\"2.0\",\"id\":1,", bad_at(&bad_response)),
            format!("the sidecar sent a message that is not UTF-8 (byte {byte}): {{\"id\":\"q\""),
            r#"bad frame header: header line "bogus" has no colon"#.to_string(),
            "frame of 5000 bytes is over the limit of 4096".to_string(),
            "the sidecar sent a message that is not a JSON object (EOF while parsing".to_string(),
            format!("the sidecar sent a message that is not UTF-8 (byte {}): {{\"jsonrpc\":\"2.0\",\"method\":\"mcp/log\"", bad_at(&bad_note)),
        ];
        for (got, want) in reported.iter().zip(&want) {
            assert!(got.contains(want), "report {got:?} does not say {want:?}");
        }
        assert_eq!(note_rx.recv_timeout(wait).unwrap()["data"], "after", "the good notification after the bad one");
        // The peer exits once it has read the host's whole answer to "q".
        let status = client.wait_exit(wait).unwrap();
        assert!(status.success(), "peer: {status}");
        assert_eq!(std::fs::read_to_string(&peer_in).unwrap(), answer);
        let _ = std::fs::remove_dir_all(&dir);
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
