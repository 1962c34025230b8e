//! Issue 47's drops identity over HTTP/3: between two instants with nothing in flight (the
//! server's start, the run's end after its drain) every datagram the clients sent to the
//! server's port was either read by the server or dropped by the server's kernel at its
//! socket's full receive buffer, a drop counted twice there: in the namespace's Udp
//! RcvbufErrors and in the socket's own drops (sock_diag). pcap's Initials less those the
//! server read are the Initials among the drops. Pure: the lab fills it at the end of a run.

use serde::Serialize;
use std::fmt;

/// The run's UDP datagrams to the server's port, sent, read and dropped, as each side counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct UdpDrops {
    /// Datagrams the clients sent to the port: the load's (their QUIC stacks' count) and the
    /// start-up check's.
    pub sent: u64,
    /// Datagrams the server read from its socket (the built-in server's own count).
    pub read: u64,
    /// The port's sockets' drops since they were opened (sock_diag SK_MEMINFO_DROPS).
    pub port_drops: Option<u64>,
    /// The namespace's Udp RcvbufErrors since the probes started (after the start-up check).
    pub rcvbuf_errors: Option<u64>,
    /// QUIC Initials that arrived at the port (pcap, since the probes started) and that the
    /// server read since then (its count less the start-up check's, sent before the capture).
    pub initials_in: Option<u64>,
    pub initials_read: u64,
    /// How far each kernel count may lie from `sent - read` (datagrams), see [`noise`].
    pub noise: u64,
    /// The paths lose packets as configured: what they lost is missing too, not judged.
    pub lossy: bool,
}

/// The counting noise between `sent - read` and the kernel's counts, in datagrams. Both ends
/// are drained instants, so what is in flight there is nothing, and the identity is exact in a
/// lab that loses nothing on the way, save for:
/// - the start-up check's datagrams (`check_sent`): sent before the probes started, so a drop
///   among them is in the socket's drops and not in RcvbufErrors;
/// - the connections the clients still had open when they stopped (`open_at_end`): each may
///   have had its closing datagram counted by its stack and never sent.
///
/// The clients' own count of what they sent is exact: their stacks' datagrams plus the
/// endpoint's own answers (stateless resets to packets for connections already gone, which
/// were the 0.1-0.2 % once missing under a flood).
pub fn noise(check_sent: u64, open_at_end: u64) -> u64 {
    check_sent + open_at_end
}

/// What the identity says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every kernel count measured equals `sent - read` within the noise.
    Agree,
    /// One of them does not.
    Disagree,
    /// Not judged: the kernel's counts were not read (no probes), or the paths lose packets.
    NotJudged,
}

impl UdpDrops {
    /// Datagrams sent that the server did not read (negative: it read more than was counted
    /// as sent).
    pub fn missing(&self) -> i64 {
        self.sent as i64 - self.read as i64
    }

    /// Initials that arrived and that the server did not read: the kernel dropped them.
    pub fn initials_dropped(&self) -> Option<i64> {
        self.initials_in
            .map(|i| i as i64 - self.initials_read as i64)
    }

    pub fn verdict(&self) -> Verdict {
        let counts: Vec<u64> = [self.port_drops, self.rcvbuf_errors]
            .into_iter()
            .flatten()
            .collect();
        if self.lossy || counts.is_empty() {
            return Verdict::NotJudged;
        }
        let off = |k: u64| (k as i64 - self.missing()).unsigned_abs() > self.noise;
        if counts.into_iter().any(off) {
            Verdict::Disagree
        } else {
            Verdict::Agree
        }
    }
}

/// The run.log line: "cross-check: UDP to the server's port: ...".
impl fmt::Display for UdpDrops {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        write!(
            f,
            "cross-check: UDP to the server's port: clients sent {} datagrams, the server read {}, {} missing; the kernel dropped {} (the port's socket, sock_diag) and {} (Udp RcvbufErrors)",
            self.sent,
            self.read,
            self.missing(),
            n(self.port_drops),
            n(self.rcvbuf_errors),
        )?;
        match self.verdict() {
            Verdict::Agree => write!(f, ": agree (within {})", self.noise)?,
            Verdict::Disagree => write!(f, ": DISAGREE (by more than {})", self.noise)?,
            Verdict::NotJudged if self.lossy => {
                f.write_str(": not judged (the paths lose packets: their losses are missing too)")?
            }
            Verdict::NotJudged => f.write_str(": not judged (no probes)")?,
        }
        if let (Some(i), Some(d)) = (self.initials_in, self.initials_dropped()) {
            write!(
                f,
                "; Initials: {i} arrived (pcap), the server read {}, {d} of the drops",
                self.initials_read
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flood() -> UdpDrops {
        UdpDrops {
            sent: 10_000,
            read: 7_000,
            port_drops: Some(3_002),
            rcvbuf_errors: Some(2_998),
            initials_in: Some(6_000),
            initials_read: 3_700,
            noise: noise(4, 0),
            lossy: false,
        }
    }

    #[test]
    fn the_kernels_drops_are_the_datagrams_sent_the_server_did_not_read() {
        let d = flood();
        assert_eq!((d.missing(), d.initials_dropped()), (3_000, Some(2_300)));
        assert_eq!(d.verdict(), Verdict::Agree);
        assert_eq!(
            d.to_string(),
            "cross-check: UDP to the server's port: clients sent 10000 datagrams, the server read 7000, 3000 missing; the kernel dropped 3002 (the port's socket, sock_diag) and 2998 (Udp RcvbufErrors): agree (within 4); Initials: 6000 arrived (pcap), the server read 3700, 2300 of the drops"
        );
    }

    #[test]
    fn one_count_past_the_noise_disagrees() {
        let d = UdpDrops {
            rcvbuf_errors: Some(2_995),
            ..flood()
        };
        assert_eq!(d.verdict(), Verdict::Disagree);
        assert!(
            d.to_string().contains(": DISAGREE (by more than 4);"),
            "{d}"
        );
        // More read than sent is as wrong as more missing than dropped.
        let d = UdpDrops {
            sent: 6_990,
            port_drops: Some(0),
            rcvbuf_errors: Some(0),
            ..flood()
        };
        assert_eq!((d.missing(), d.verdict()), (-10, Verdict::Disagree));
    }

    #[test]
    fn without_the_kernels_counts_or_on_lossy_paths_nothing_is_judged() {
        let d = UdpDrops {
            port_drops: None,
            rcvbuf_errors: None,
            initials_in: None,
            ..flood()
        };
        assert_eq!(d.verdict(), Verdict::NotJudged);
        assert!(
            d.to_string()
                .ends_with("(Udp RcvbufErrors): not judged (no probes)"),
            "{d}"
        );
        let d = UdpDrops {
            lossy: true,
            ..flood()
        };
        assert_eq!(d.verdict(), Verdict::NotJudged);
        assert!(
            d.to_string().contains("not judged (the paths lose packets"),
            "{d}"
        );
    }
}
