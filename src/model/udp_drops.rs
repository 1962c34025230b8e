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

/// Over HTTP/3, the clients' completed QUIC handshakes against the server's own count. Each
/// side counts one when the other's Finished arrives, so a client's Finished that the server's
/// kernel dropped at its full socket counts at the client only: the two are judged only when
/// the drops identity holds and says nothing was dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QuicHandshakes {
    pub client: u64,
    /// The start-up check's left out.
    pub server: u64,
    /// The run's drops identity (None: not measured).
    pub drops: Option<UdpDrops>,
    /// How far apart they may be when judged, in % of the clients' count (the cross-checks'
    /// tolerance); the identity's counting noise (datagrams) is allowed besides.
    pub tol_pct: f64,
}

impl QuicHandshakes {
    /// Agree (true) or not, or why it is not judged.
    pub fn verdict(&self) -> Result<bool, String> {
        let Some(d) = &self.drops else {
            return Err("the server's socket drops were not counted".into());
        };
        match d.verdict() {
            _ if d.lossy => {
                return Err("the paths lose packets, a client's Finished among them".into())
            }
            Verdict::NotJudged => {
                return Err("no probes: what the server's socket dropped is unknown".into())
            }
            Verdict::Disagree => {
                return Err("the drops identity does not hold: what was dropped is unknown".into())
            }
            Verdict::Agree => {}
        }
        let dropped = [d.port_drops, d.rcvbuf_errors].into_iter().flatten().max();
        if let Some(n) = dropped.filter(|&n| n > 0) {
            return Err(format!(
                "the kernel dropped {n} datagrams at the server's socket, and a client's Finished dropped there counts at the client only"
            ));
        }
        let allowed = (self.client as f64 * self.tol_pct / 100.0).max(d.noise as f64);
        Ok(self.client.abs_diff(self.server) as f64 <= allowed)
    }
}

/// The run.log line: "cross-check: client completed N QUIC handshakes, server M (+x%): ...".
impl fmt::Display for QuicHandshakes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (c, s) = (self.client, self.server);
        write!(
            f,
            "cross-check: client completed {c} QUIC handshakes, server {s}"
        )?;
        if c > 0 {
            write!(f, " ({:+.1}%)", (s as f64 - c as f64) / c as f64 * 100.0)?;
        }
        let tol = self.tol_pct;
        match self.verdict() {
            Ok(true) => write!(f, ": agree (nothing dropped; within {tol} %)"),
            Ok(false) => write!(
                f,
                ": DISAGREE (nothing dropped, yet more than {tol} % apart)"
            ),
            Err(why) => write!(f, ": not judged ({why})"),
        }
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

    fn handshakes(client: u64, server: u64, drops: UdpDrops) -> QuicHandshakes {
        QuicHandshakes {
            client,
            server,
            drops: Some(drops),
            tol_pct: 2.0,
        }
    }

    /// A run that dropped nothing: the two counts are judged, within the tolerance.
    #[test]
    fn quic_handshakes_are_judged_only_when_nothing_was_dropped() {
        let clean = UdpDrops {
            read: 10_000,
            port_drops: Some(0),
            rcvbuf_errors: Some(0),
            initials_in: Some(3_700),
            ..flood()
        };
        assert_eq!(clean.verdict(), Verdict::Agree);
        let h = handshakes(1000, 990, clean);
        assert_eq!(h.verdict(), Ok(true));
        assert_eq!(
            h.to_string(),
            "cross-check: client completed 1000 QUIC handshakes, server 990 (-1.0%): agree (nothing dropped; within 2 %)"
        );
        let h = handshakes(1000, 900, clean);
        assert_eq!(h.verdict(), Ok(false));
        assert!(
            h.to_string()
                .ends_with(": DISAGREE (nothing dropped, yet more than 2 % apart)"),
            "{h}"
        );
        // The flood: the kernel dropped 3002 datagrams at the socket, Finished flights among
        // them; the server counting 17.9 % fewer is no fault.
        let h = handshakes(33_610, 27_598, flood());
        assert_eq!(
            h.to_string(),
            "cross-check: client completed 33610 QUIC handshakes, server 27598 (-17.9%): not judged (the kernel dropped 3002 datagrams at the server's socket, and a client's Finished dropped there counts at the client only)"
        );
        // No probes, lossy paths, an identity that does not hold, no identity: not judged.
        let no_probes = UdpDrops {
            port_drops: None,
            rcvbuf_errors: None,
            ..clean
        };
        let lossy = UdpDrops {
            lossy: true,
            ..clean
        };
        let broken = UdpDrops {
            rcvbuf_errors: Some(500),
            ..clean
        };
        for d in [no_probes, lossy, broken] {
            assert!(handshakes(1000, 1000, d).verdict().is_err(), "{d}");
        }
        let none = QuicHandshakes {
            drops: None,
            ..handshakes(1000, 1000, clean)
        };
        assert!(
            none.to_string()
                .ends_with(": not judged (the server's socket drops were not counted)"),
            "{none}"
        );
    }
}
