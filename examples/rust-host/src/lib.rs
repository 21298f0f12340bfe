//! The harness side of mcp-sidecar's host protocol, as a library: copy
//! `sidecar_client.rs` into a harness, or depend on this crate by path.
pub mod sidecar_client;
