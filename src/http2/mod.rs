//! HTTP/2 (RFC 9113) as a sans-IO codec, client and server roles: bytes in with
//! `feed(bytes, now)`, bytes out from `pending_output()`, events out by `poll_event()`. No
//! sockets, no clock reads: the caller owns both. Frames are ours ([`frame`]); HPACK's encoder is
//! `loona-hpack`'s (chosen by measurement: benches/hpack.rs and the commit that added it), but for
//! the client's request blocks, encoded once per head and reused ([`request_block`]); its decoder
//! is ours ([`hpack`]: the dynamic table in one arena, no allocation per field).

pub mod client;
pub mod conn;
pub mod frame;
pub mod hpack;
pub mod request_block;
pub mod server;
pub mod unhuffman;

pub use client::{Client, ClientOptions, Event, Request, StartError};
pub use conn::{ConnError, Stats};
pub use frame::{ErrorCode, Settings};
pub use server::{RequestHead, Server, ServerEvent, ServerOptions};

#[cfg(test)]
mod tests;
