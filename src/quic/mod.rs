//! QUIC and HTTP/3 (issue 47): quinn-proto's sans-IO state machines driven by synlab's own UDP
//! sockets and timers, a minimal HTTP/3 (control stream, SETTINGS, QPACK's static table,
//! HEADERS and DATA), the client ([`client::QuicClient`]) and its figures ([`stats`]). The
//! built-in server's side is `target::h3`, on the same [`h3`] codec.

pub mod client;
pub mod h3;
pub mod stats;
pub mod tls;

pub use client::{run_closed, ClientEvent, ClientOptions, ConnId, QuicClient};
pub use stats::{ConnError, HandshakeKind, QuicStats};
