//! QUIC Initials as the capture (`sys::pcap`) sees them arriving at the server's UDP port: the
//! QUIC counterpart of a TCP server's SYNs (issue 47). A client's Initial is a long-header
//! packet (RFC 9000 17.2) of type Initial: type 0 in QUIC version 1, type 1 in version 2 (RFC
//! 9369). Its source connection ID, chosen by the client, stays the same on every Initial of
//! that connection attempt (the destination ID changes once the server answers), so a client's
//! first Initial is told from its later ones (retransmissions, a ClientHello's second packet,
//! ACKs) by the 4-tuple and that ID together. Unlike TCP, one client UDP socket (one 4-tuple)
//! carries many attempts at once: the ID is part of the key, not a value the 4-tuple's latest
//! attempt replaces. Pure, tested on byte frames.

use super::control_packets::{ip_payload, SynTracker};
use std::net::IpAddr;

/// QUIC version 1 (RFC 9000) and version 2 (RFC 9369).
pub const QUIC_V1: u32 = 1;
pub const QUIC_V2: u32 = 0x6b33_43cf;

/// The BPF part that passes QUIC long-header packets to `port` (IPv4, and IPv6 without
/// extension headers: its UDP payload at byte 48): handshakes only, never the 1-RTT data.
pub fn bpf_filter(port: u16) -> String {
    format!(
        "(udp dst port {port} and ((ip and udp[8] & 0x80 != 0) or \
         (ip6 and ip6[6] == 17 and ip6[48] & 0x80 != 0)))"
    )
}

/// A client's Initial arriving at the port: who sent it and the connection ID it chose, as
/// the key [`InitialTracker`] remembers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InitialIn {
    pub version: u32,
    /// The 4-tuple and the client's source connection ID as one 64-bit hash.
    key: u64,
    /// A second, independent hash of the ID: a false repeat needs both to collide.
    id: u32,
}

/// The Initial a frame of `linktype` carries to `port`, if it does: a UDP datagram whose first
/// packet is a long-header QUIC v1 or v2 Initial (fixed bit set). Other long-header packets
/// (Handshake, 0-RTT, Retry, a version negotiation) are not Initials.
pub fn parse_initial(linktype: i32, frame: &[u8], port: u16) -> Option<InitialIn> {
    let (src, dst, udp) = ip_payload(linktype, frame, 17)?;
    let dport = u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]);
    if dport != port {
        return None;
    }
    let q = udp.get(8..)?;
    let version = initial_version(q)?;
    let dcid_len = *q.get(5)? as usize;
    let scid_len = *q.get(6 + dcid_len)? as usize;
    // A capture cut short (snaplen) still counts the Initial; the ID is then what was caught.
    let scid = q.get(7 + dcid_len..).unwrap_or_default();
    let scid = &scid[..scid_len.min(scid.len())];
    let sport = u16::from_be_bytes([udp[0], udp[1]]);
    Some(InitialIn {
        version,
        key: attempt_key(src, sport, dst, dport, scid),
        id: id_hash(scid),
    })
}

/// The QUIC version of a UDP payload whose first packet is a long-header v1 or v2 Initial
/// (fixed bit set), None for any other datagram: the one rule the capture and the built-in
/// server's own count of the Initials it reads share.
pub fn initial_version(q: &[u8]) -> Option<u32> {
    let first = *q.first()?;
    if first & 0xc0 != 0xc0 {
        return None;
    }
    let version = u32::from_be_bytes(q.get(1..5)?.try_into().ok()?);
    let kind = (first >> 4) & 0x03;
    let initial = match version {
        QUIC_V1 => kind == 0,
        QUIC_V2 => kind == 1,
        _ => false,
    };
    initial.then_some(version)
}

/// The attempt's key: the 4-tuple and the whole connection ID (SipHash with fixed keys).
fn attempt_key(src: IpAddr, sport: u16, dst: IpAddr, dport: u16, scid: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut st = std::hash::DefaultHasher::new();
    (src, sport, dst, dport, scid).hash(&mut st);
    st.finish()
}

/// 32 bits of a connection ID (FNV-1a): with the 4-tuple, the attempt's key.
fn id_hash(id: &[u8]) -> u32 {
    id.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// Remembers connection attempts to tell a client's first Initial from its later ones, with
/// the SYN tracker's bounded memory (two generations).
#[derive(Debug, Default)]
pub struct InitialTracker(SynTracker);

impl InitialTracker {
    /// Records an Initial; true when its attempt was seen before (not a first Initial).
    pub fn is_repeat(&mut self, i: &InitialIn) -> bool {
        self.0.is_seen(i.key, i.id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::control_packets::DLT_EN10MB;
    use super::*;

    /// An Ethernet + IPv4 + UDP frame to `dport` whose payload is `quic`.
    fn frame(sport: u16, dport: u16, quic: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0];
        ip.extend_from_slice(&[198, 18, 0, 2, 198, 18, 0, 1]);
        f.extend_from_slice(&ip);
        f.extend_from_slice(&sport.to_be_bytes());
        f.extend_from_slice(&dport.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0, 0]);
        f.extend_from_slice(quic);
        f
    }

    /// A long-header packet: first byte, version, DCID, SCID, then some bytes.
    fn long(first: u8, version: u32, dcid: &[u8], scid: &[u8]) -> Vec<u8> {
        let mut q = vec![first];
        q.extend_from_slice(&version.to_be_bytes());
        q.push(dcid.len() as u8);
        q.extend_from_slice(dcid);
        q.push(scid.len() as u8);
        q.extend_from_slice(scid);
        q.extend_from_slice(&[0; 32]);
        q
    }

    #[test]
    fn initials_of_v1_and_v2_are_told_from_other_packets() {
        let ok = |q: &[u8]| parse_initial(DLT_EN10MB, &frame(40000, 8443, q), 8443);
        let v1 = ok(&long(0xc3, QUIC_V1, &[1; 8], &[2; 8])).expect("v1 Initial");
        assert_eq!(v1.version, QUIC_V1);
        assert_eq!(
            ok(&long(0xd3, QUIC_V2, &[1; 8], &[2; 8])).map(|i| i.version),
            Some(QUIC_V2)
        );
        for (what, q) in [
            ("v1 Handshake", long(0xe3, QUIC_V1, &[1; 8], &[2; 8])),
            ("v1 0-RTT", long(0xd3, QUIC_V1, &[1; 8], &[2; 8])),
            ("v2 Handshake", long(0xf3, QUIC_V2, &[1; 8], &[2; 8])),
            ("v2 type 0 (Retry)", long(0xc3, QUIC_V2, &[1; 8], &[2; 8])),
            ("version negotiation", long(0xc3, 0, &[1; 8], &[2; 8])),
            ("short header", vec![0x43; 40]),
            ("fixed bit clear", long(0x83, QUIC_V1, &[1; 8], &[2; 8])),
        ] {
            assert_eq!(ok(&q), None, "{what}");
        }
        // To another port, or TCP: not the server's Initial.
        let q = long(0xc3, QUIC_V1, &[1; 8], &[2; 8]);
        assert_eq!(
            parse_initial(DLT_EN10MB, &frame(40000, 9999, &q), 8443),
            None
        );
        let mut tcp = frame(40000, 8443, &q);
        tcp[14 + 9] = 6;
        assert_eq!(parse_initial(DLT_EN10MB, &tcp, 8443), None);
    }

    #[test]
    fn a_clients_later_initials_are_repeats_of_its_first() {
        let mut t = InitialTracker::default();
        let at = |sport, dcid: &[u8], scid: &[u8]| {
            parse_initial(
                DLT_EN10MB,
                &frame(sport, 8443, &long(0xc0, QUIC_V1, dcid, scid)),
                8443,
            )
            .unwrap()
        };
        assert!(!t.is_repeat(&at(40000, &[1; 8], &[2; 8])), "first");
        assert!(t.is_repeat(&at(40000, &[1; 8], &[2; 8])), "retransmitted");
        // After the server's answer the client addresses the server's chosen ID: same attempt.
        assert!(
            t.is_repeat(&at(40000, &[9; 4], &[2; 8])),
            "ACK in an Initial"
        );
        assert!(
            !t.is_repeat(&at(40000, &[1; 8], &[3; 8])),
            "a new connection ID"
        );
        assert!(
            !t.is_repeat(&at(40001, &[1; 8], &[2; 8])),
            "another client port"
        );
        // One client socket, many attempts at once: a later Initial of the first attempt after
        // another attempt's first one on the same 4-tuple is still a repeat, and vice versa.
        assert!(t.is_repeat(&at(40000, &[9; 4], &[2; 8])), "interleaved 2nd");
        assert!(t.is_repeat(&at(40000, &[7; 4], &[3; 8])), "interleaved 3rd");
        assert!(!t.is_repeat(&at(40000, &[1; 8], &[4; 8])), "a third ID");
        assert!(
            t.is_repeat(&at(40000, &[9; 4], &[2; 8])),
            "first attempt again"
        );
        // An Initial without a source ID (allowed): the 4-tuple alone.
        assert!(!t.is_repeat(&at(40002, &[1; 8], &[])));
        assert!(t.is_repeat(&at(40002, &[5; 8], &[])));
    }

    #[test]
    fn the_filter_passes_long_headers_to_the_port() {
        let f = bpf_filter(443);
        assert!(f.starts_with("(udp dst port 443 and"), "{f}");
        assert!(f.contains("udp[8] & 0x80 != 0") && f.contains("ip6[48] & 0x80"));
    }
}
