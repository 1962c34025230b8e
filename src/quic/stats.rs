//! What the QUIC client counts: handshakes by kind, Retry / version negotiation / stateless
//! resets seen, datagrams and bytes both ways, the stack's own loss figures, requests and
//! responses, and connection errors by kind.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

/// How a handshake ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HandshakeKind {
    /// The server's certificate was sent and verified.
    Full,
    /// A stored session was resumed (no certificate), without early data.
    Resumed,
    /// Resumed with 0-RTT data the server accepted.
    ZeroRtt,
}

impl fmt::Display for HandshakeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            HandshakeKind::Full => "full",
            HandshakeKind::Resumed => "resumed",
            HandshakeKind::ZeroRtt => "0-RTT",
        })
    }
}

/// Why a connection ended other than by the client's own close after its work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ConnError {
    /// Not established within the client's handshake timeout (nothing, or not enough, came
    /// back: the Initials dropped in the server's kernel look like this).
    HandshakeTimeout,
    /// Established, then silent past the idle timeout.
    IdleTimeout,
    /// The server refused it (CONNECTION_REFUSED, 0x2).
    Refused,
    /// The server closed it with another QUIC transport error code.
    Transport(u64),
    /// The server closed it with an HTTP/3 application error code.
    Application(u64),
    /// A stateless reset: the server no longer knows the connection.
    StatelessReset,
    /// The server speaks no version the client offered.
    VersionMismatch,
    /// The client's own stack found a protocol error in what the server sent.
    Local(u64),
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnError::HandshakeTimeout => f.write_str("handshake timeout"),
            ConnError::IdleTimeout => f.write_str("idle timeout"),
            ConnError::Refused => f.write_str("refused (CONNECTION_REFUSED)"),
            ConnError::Transport(c) => write!(f, "closed by the server, transport error {c:#x}"),
            ConnError::Application(c) => {
                write!(f, "closed by the server, application error {c:#x}")
            }
            ConnError::StatelessReset => f.write_str("stateless reset"),
            ConnError::VersionMismatch => f.write_str("no QUIC version in common"),
            ConnError::Local(c) => write!(f, "protocol error found by the client ({c:#x})"),
        }
    }
}

/// The client's totals since it started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuicStats {
    /// Connections started (each sends a first Initial).
    pub attempts: u64,
    pub handshakes: BTreeMap<HandshakeKind, u64>,
    /// Sum and largest of the handshake times (connect to established).
    pub handshake_time_sum: Duration,
    pub handshake_time_max: Duration,
    /// Resumptions offered (a session and, for 0-RTT, early data sent) that the server
    /// answered with a full handshake, or declined the early data of.
    pub resume_declined: u64,
    pub zero_rtt_declined: u64,
    pub retry_received: u64,
    pub version_negotiation: u64,
    pub stateless_resets: u64,
    /// UDP datagrams and bytes, as the QUIC stack counts them (GSO runs counted per datagram).
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Packets the stack declared lost (their frames are sent again), their bytes, and the
    /// congestion events they caused.
    pub lost_packets: u64,
    pub lost_bytes: u64,
    pub congestion_events: u64,
    pub requests: u64,
    pub responses: u64,
    /// Responses by status class (index 1..=5 for 1xx..5xx).
    pub status_classes: [u64; 6],
    pub body_bytes: u64,
    pub errors: BTreeMap<ConnError, u64>,
}

impl QuicStats {
    pub fn handshakes_of(&self, k: HandshakeKind) -> u64 {
        self.handshakes.get(&k).copied().unwrap_or(0)
    }

    /// Handshakes completed, every kind.
    pub fn handshakes_total(&self) -> u64 {
        self.handshakes.values().sum()
    }

    pub fn errors_total(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The mean handshake time.
    pub fn handshake_time_mean(&self) -> Option<Duration> {
        let n = self.handshakes_total();
        (n > 0).then(|| self.handshake_time_sum / n as u32)
    }
}
