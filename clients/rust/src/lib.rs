//! A host of mcp-sidecar for Rust harnesses: spawn the sidecar, speak its
//! host protocol (docs/protocol.md in the mcp-sidecar repository) over
//! stdio, with serde types generated from the protocol's schema.
//!
//! ```ignore
//! use mcp_sidecar_client::{protocol::*, Options, SidecarClient};
//! let client = SidecarClient::spawn(Command::new("mcp-sidecar"), Options::default()
//!     .with_notifications(|n| if let Notification::StartupStatus(s) = n { println!("{} {}", s.server, s.status.as_str()) })
//!     .on_elicit(|p, _cancelled| Ok(ElicitResult::decline())))?;
//! client.initialize(&InitializeParams { servers: Some(servers), ..Default::default() })?;
//! let open = client.call::<requests::SessionOpen>(&SessionOpenParams::default())?;
//! let list = client.call::<requests::ToolsList>(&ToolsListParams { session_id: open.session_id.clone(), ..Default::default() })?;
//! let result = client.call_tool(&ToolsCallParams { session_id: open.session_id, name: Some(name), ..Default::default() })?;
//! println!("{}", result.text());
//! ```
//!
//! Threads: one reader thread owns the child's stdout. It hands responses to
//! the callers waiting for them, notifications to one dispatcher thread (so
//! the notification callback sees them in arrival order and may block
//! without holding up responses), and each sidecar -> host request to a
//! thread of its own, so a handler that waits for the user, or calls the
//! sidecar itself, never deadlocks the connection. A message it cannot read
//! fails alone (`Error::Malformed`); the connection goes on.
pub mod client;
pub mod protocol;
mod results;

pub use client::{
    codes, object_with_raw, read_frame, write_frame, CancelFlag, Error, FrameError, FrameReader,
    HostHandlers, MalformedHandler, NotificationHandler, Options, PendingRequest, RequestHandler,
    RpcError, SidecarClient, TypedRequest, DEFAULT_MAX_FRAME_BYTES,
};
