//! What the QUIC client counts: handshakes by kind, Retry / version negotiation / stateless
//! resets seen, datagrams and bytes both ways, the stack's own loss figures, requests and
//! responses, and connection errors by kind.

use serde::{Deserialize, Serialize};
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
            ConnError::Transport(c) => {
                write!(f, "closed by the server, transport error {}", code(*c))
            }
            ConnError::Application(c) => {
                write!(f, "closed by the server, application error {c:#x}")
            }
            ConnError::StatelessReset => f.write_str("stateless reset"),
            ConnError::VersionMismatch => f.write_str("no QUIC version in common"),
            ConnError::Local(c) => write!(f, "protocol error found by the client ({})", code(*c)),
        }
    }
}

/// A QUIC transport error code with its name where RFC 9000 gives one (quinn-proto's):
/// "0x9 CONNECTION_ID_LIMIT_ERROR"; a TLS alert (0x100-0x1ff) as such.
fn code(c: u64) -> String {
    use quinn_proto::TransportErrorCode as T;
    const NAMED: [T; 17] = [
        T::NO_ERROR,
        T::INTERNAL_ERROR,
        T::CONNECTION_REFUSED,
        T::FLOW_CONTROL_ERROR,
        T::STREAM_LIMIT_ERROR,
        T::STREAM_STATE_ERROR,
        T::FINAL_SIZE_ERROR,
        T::FRAME_ENCODING_ERROR,
        T::TRANSPORT_PARAMETER_ERROR,
        T::CONNECTION_ID_LIMIT_ERROR,
        T::PROTOCOL_VIOLATION,
        T::INVALID_TOKEN,
        T::APPLICATION_ERROR,
        T::CRYPTO_BUFFER_EXCEEDED,
        T::KEY_UPDATE_ERROR,
        T::AEAD_LIMIT_REACHED,
        T::NO_VIABLE_PATH,
    ];
    match NAMED.iter().find(|k| u64::from(**k) == c) {
        Some(k) => format!("{c:#x} {k:?}"),
        None if (0x100..0x200).contains(&c) => format!("{c:#x} (TLS alert {})", c & 0xff),
        None => format!("{c:#x}"),
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
    /// Connections whose wait for their session tickets ran out before one came
    /// ([`crate::quic::client::ticket_wait`]): the next resumption may find no ticket and go full.
    pub ticket_waits_expired: u64,
    /// Connections started, resumption asked, before any session ticket had come: they can
    /// only go full (an S-Client slot reconnects at once, while its last connection still
    /// waits for the server's tickets).
    pub before_first_ticket: u64,
    pub retry_received: u64,
    pub version_negotiation: u64,
    pub stateless_resets: u64,
    /// UDP datagrams and bytes, as the QUIC stack counts them (GSO runs counted per datagram).
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Of the datagrams sent, those whose first packet is an Initial (first and later ones,
    /// `sys::quic_packets::initial_version`'s rule): what the capture and the server count.
    pub initials_sent: u64,
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

/// The client's counts over one report interval, as a worker sends them (the lab sums them
/// over workers and intervals).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct QuicDelta {
    /// Connections started (each a first Initial).
    pub attempts: u64,
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// Resumed with 0-RTT data the server accepted (not among `handshakes_resumed`).
    pub handshakes_0rtt: u64,
    /// Their handshake times summed, us.
    pub handshake_us_sum: u64,
    pub retry_received: u64,
    pub version_negotiation: u64,
    pub stateless_resets: u64,
    pub resume_declined: u64,
    pub zero_rtt_declined: u64,
    #[serde(default)]
    pub ticket_waits_expired: u64,
    #[serde(default)]
    pub before_first_ticket: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Packets (and their bytes) the client's stack declared lost and sent again.
    pub lost_packets: u64,
    pub lost_bytes: u64,
    /// Connection errors by kind.
    pub err_handshake_timeout: u64,
    pub err_idle_timeout: u64,
    pub err_refused: u64,
    /// Closed by the server with a transport or an HTTP/3 error code.
    pub err_transport: u64,
    pub err_application: u64,
    /// Stateless resets, no version in common, errors the client's stack found.
    pub err_other: u64,
}

impl QuicDelta {
    /// What happened between two totals of the same client.
    pub fn between(a: &QuicStats, b: &QuicStats) -> QuicDelta {
        let d = |x: u64, y: u64| y.saturating_sub(x);
        let hs = |k| d(a.handshakes_of(k), b.handshakes_of(k));
        let err = |f: fn(&ConnError) -> bool| {
            let n = |s: &QuicStats| s.errors.iter().filter(|(e, _)| f(e)).map(|(_, n)| n).sum();
            d(n(a), n(b))
        };
        QuicDelta {
            attempts: d(a.attempts, b.attempts),
            handshakes_full: hs(HandshakeKind::Full),
            handshakes_resumed: hs(HandshakeKind::Resumed),
            handshakes_0rtt: hs(HandshakeKind::ZeroRtt),
            handshake_us_sum: d(
                a.handshake_time_sum.as_micros() as u64,
                b.handshake_time_sum.as_micros() as u64,
            ),
            retry_received: d(a.retry_received, b.retry_received),
            version_negotiation: d(a.version_negotiation, b.version_negotiation),
            stateless_resets: d(a.stateless_resets, b.stateless_resets),
            resume_declined: d(a.resume_declined, b.resume_declined),
            zero_rtt_declined: d(a.zero_rtt_declined, b.zero_rtt_declined),
            ticket_waits_expired: d(a.ticket_waits_expired, b.ticket_waits_expired),
            before_first_ticket: d(a.before_first_ticket, b.before_first_ticket),
            datagrams_sent: d(a.datagrams_sent, b.datagrams_sent),
            datagrams_received: d(a.datagrams_received, b.datagrams_received),
            bytes_sent: d(a.bytes_sent, b.bytes_sent),
            bytes_received: d(a.bytes_received, b.bytes_received),
            lost_packets: d(a.lost_packets, b.lost_packets),
            lost_bytes: d(a.lost_bytes, b.lost_bytes),
            err_handshake_timeout: err(|e| *e == ConnError::HandshakeTimeout),
            err_idle_timeout: err(|e| *e == ConnError::IdleTimeout),
            err_refused: err(|e| *e == ConnError::Refused),
            err_transport: err(|e| matches!(e, ConnError::Transport(_))),
            err_application: err(|e| matches!(e, ConnError::Application(_))),
            err_other: err(|e| {
                matches!(
                    e,
                    ConnError::StatelessReset | ConnError::VersionMismatch | ConnError::Local(_)
                )
            }),
        }
    }

    /// Adds another interval's (or worker's) counts.
    pub fn add(&mut self, o: &QuicDelta) {
        let QuicDelta {
            attempts,
            handshakes_full,
            handshakes_resumed,
            handshakes_0rtt,
            handshake_us_sum,
            retry_received,
            version_negotiation,
            stateless_resets,
            resume_declined,
            zero_rtt_declined,
            ticket_waits_expired,
            before_first_ticket,
            datagrams_sent,
            datagrams_received,
            bytes_sent,
            bytes_received,
            lost_packets,
            lost_bytes,
            err_handshake_timeout,
            err_idle_timeout,
            err_refused,
            err_transport,
            err_application,
            err_other,
        } = *o;
        self.attempts += attempts;
        self.handshakes_full += handshakes_full;
        self.handshakes_resumed += handshakes_resumed;
        self.handshakes_0rtt += handshakes_0rtt;
        self.handshake_us_sum += handshake_us_sum;
        self.retry_received += retry_received;
        self.version_negotiation += version_negotiation;
        self.stateless_resets += stateless_resets;
        self.resume_declined += resume_declined;
        self.zero_rtt_declined += zero_rtt_declined;
        self.ticket_waits_expired += ticket_waits_expired;
        self.before_first_ticket += before_first_ticket;
        self.datagrams_sent += datagrams_sent;
        self.datagrams_received += datagrams_received;
        self.bytes_sent += bytes_sent;
        self.bytes_received += bytes_received;
        self.lost_packets += lost_packets;
        self.lost_bytes += lost_bytes;
        self.err_handshake_timeout += err_handshake_timeout;
        self.err_idle_timeout += err_idle_timeout;
        self.err_refused += err_refused;
        self.err_transport += err_transport;
        self.err_application += err_application;
        self.err_other += err_other;
    }

    /// Handshakes completed, every kind.
    pub fn handshakes(&self) -> u64 {
        self.handshakes_full + self.handshakes_resumed + self.handshakes_0rtt
    }

    /// Connection errors, every kind.
    pub fn errors(&self) -> u64 {
        self.err_handshake_timeout
            + self.err_idle_timeout
            + self.err_refused
            + self.err_transport
            + self.err_application
            + self.err_other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lesson's run.log said "transport error 0x9", which a reader took for a stream limit.
    #[test]
    fn transport_errors_are_named() {
        assert_eq!(
            ConnError::Transport(0x9).to_string(),
            "closed by the server, transport error 0x9 CONNECTION_ID_LIMIT_ERROR"
        );
        assert_eq!(
            ConnError::Local(0xa).to_string(),
            "protocol error found by the client (0xa PROTOCOL_VIOLATION)"
        );
        assert_eq!(code(0x12a), "0x12a (TLS alert 42)");
        assert_eq!(code(0x99), "0x99");
    }
}
