//! The UDP sockets of one local port by sock_diag (issue 47): for each, the bytes waiting in its
//! receive queue, its receive buffer's size (SO_RCVBUF as the kernel keeps it) and the
//! datagrams it dropped (`sk_drops`, SK_MEMINFO_DROPS: a full buffer, a bad checksum), in the
//! calling thread's network namespace. The wire format as bytes and its parser are pure.

use super::sockdiag::{
    EXT_SKMEMINFO, INET_DIAG_MSG_LEN, INET_DIAG_SKMEMINFO, NLMSG_DONE, NLMSG_ERROR, NLMSG_HDR,
    SK_MEMINFO_DROPS, SOCK_DIAG_BY_FAMILY,
};

use super::sockdiag::SockDiag;
use std::net::IpAddr;

const IPPROTO_UDP: u8 = 17;
/// Indexes in the SKMEMINFO array (include/uapi/linux/sock_diag.h).
const SK_MEMINFO_RMEM_ALLOC: usize = 0;
const SK_MEMINFO_RCVBUF: usize = 1;

/// One UDP socket of the port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpSock {
    pub local: IpAddr,
    pub sport: u16,
    /// Bytes of datagrams waiting to be read (with the kernel's per-datagram overhead, as
    /// `sk_rmem_alloc` counts them against the buffer).
    pub rqueue: u32,
    /// The receive buffer's size: SO_RCVBUF doubled by the kernel, capped by net.core.rmem_max
    /// for an unprivileged setsockopt.
    pub rcvbuf: u32,
    /// Datagrams the socket dropped since it was opened.
    pub drops: u32,
    pub inode: u32,
}

/// The bytes of one dump request: UDP sockets of `family` (AF_INET or AF_INET6), every state
/// (unconnected sockets are TCP_CLOSE, connected ones ESTABLISHED), local port `sport`.
pub fn build_request(family: u8, sport: u16, seq: u32) -> Vec<u8> {
    super::sockdiag::request_v2(family, IPPROTO_UDP, EXT_SKMEMINFO, u32::MAX, sport, seq)
}

/// A refused or malformed reply.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UdpDiagError {
    #[error("sock_diag (UDP): kernel answered errno {0} ({e})", e = std::io::Error::from_raw_os_error(*.0))]
    Kernel(i32),
    #[error("sock_diag (UDP): truncated reply ({0} bytes left, message claims {1})")]
    Truncated(usize, usize),
}

/// The sockets of a whole dump's replies (messages without the memory counters are left out:
/// the kernel sends them with every UDP socket when asked).
pub fn parse_replies(bytes: &[u8]) -> Result<Vec<UdpSock>, UdpDiagError> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + NLMSG_HDR <= bytes.len() {
        let len = u32::from_ne_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(bytes[off + 4..off + 6].try_into().unwrap());
        if len < NLMSG_HDR || off + len > bytes.len() {
            return Err(UdpDiagError::Truncated(bytes.len() - off, len));
        }
        let body = &bytes[off + NLMSG_HDR..off + len];
        match kind {
            NLMSG_DONE => break,
            NLMSG_ERROR => {
                let errno = body
                    .get(..4)
                    .map_or(0, |e| i32::from_ne_bytes(e.try_into().unwrap()));
                if errno != 0 {
                    return Err(UdpDiagError::Kernel(-errno));
                }
            }
            SOCK_DIAG_BY_FAMILY if body.len() >= INET_DIAG_MSG_LEN => {
                out.extend(parse_msg(body));
            }
            _ => {}
        }
        off += (len + 3) & !3;
    }
    Ok(out)
}

fn parse_msg(m: &[u8]) -> Option<UdpSock> {
    let ne32 = |o: usize| u32::from_ne_bytes(m[o..o + 4].try_into().unwrap());
    let local = if m[0] == libc::AF_INET6 as u8 {
        IpAddr::from(<[u8; 16]>::try_from(&m[8..24]).unwrap())
    } else {
        IpAddr::from(<[u8; 4]>::try_from(&m[8..12]).unwrap())
    };
    let mem = skmeminfo(&m[INET_DIAG_MSG_LEN..])?;
    Some(UdpSock {
        local,
        sport: u16::from_be_bytes([m[4], m[5]]),
        rqueue: mem.get(SK_MEMINFO_RMEM_ALLOC).copied().unwrap_or(ne32(56)),
        rcvbuf: *mem.get(SK_MEMINFO_RCVBUF)?,
        drops: *mem.get(SK_MEMINFO_DROPS)?,
        inode: ne32(68),
    })
}

/// The SKMEMINFO array from the attributes after an inet_diag_msg.
fn skmeminfo(mut attrs: &[u8]) -> Option<Vec<u32>> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == INET_DIAG_SKMEMINFO {
            return Some(
                attrs[4..len]
                    .chunks_exact(4)
                    .map(|b| u32::from_ne_bytes(b.try_into().unwrap()))
                    .collect(),
            );
        }
        attrs = attrs.get((len + 3) & !3..).unwrap_or_default();
    }
    None
}

impl SockDiag {
    /// The UDP sockets of both families whose local port is `sport`.
    pub fn udp_sockets(&mut self, sport: u16) -> std::io::Result<Vec<UdpSock>> {
        let mut out = Vec::new();
        for fam in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
            let req = build_request(fam, sport, self.next_seq());
            let raw = self.exchange(&req)?;
            out.extend(parse_replies(&raw).map_err(std::io::Error::other)?);
        }
        Ok(out)
    }
}

/// Asks for a receive buffer of `bytes` (SO_RCVBUF; the kernel doubles it and caps the ask at
/// net.core.rmem_max).
pub fn set_rcvbuf(sock: &impl std::os::fd::AsFd, bytes: usize) -> std::io::Result<()> {
    nix::sys::socket::setsockopt(sock, nix::sys::socket::sockopt::RcvBuf, &bytes)
        .map_err(std::io::Error::from)
}

/// net.core.rmem_max: the largest receive buffer an unprivileged SO_RCVBUF may ask for
/// (machine-wide; read through a kept-open `ProcFile` each sample).
pub const RMEM_MAX: &str = "/proc/sys/net/core/rmem_max";

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply as the kernel sends it: one socket with its memory counters, then DONE.
    fn reply(port: u16, mem: &[u32]) -> Vec<u8> {
        let mut msg = vec![0u8; INET_DIAG_MSG_LEN];
        msg[0] = libc::AF_INET as u8;
        msg[1] = 7; // TCP_CLOSE: an unconnected UDP socket
        msg[4..6].copy_from_slice(&port.to_be_bytes());
        msg[8..12].copy_from_slice(&[198, 18, 0, 1]);
        msg[56..60].copy_from_slice(&999u32.to_ne_bytes());
        msg[68..72].copy_from_slice(&4242u32.to_ne_bytes());
        msg.extend_from_slice(&((4 + mem.len() * 4) as u16).to_ne_bytes());
        msg.extend_from_slice(&INET_DIAG_SKMEMINFO.to_ne_bytes());
        for v in mem {
            msg.extend_from_slice(&v.to_ne_bytes());
        }
        let mut b = Vec::new();
        b.extend_from_slice(&((NLMSG_HDR + msg.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        b.extend_from_slice(&[0; 10]);
        b.extend_from_slice(&msg);
        b.extend_from_slice(&(NLMSG_HDR as u32 + 4).to_ne_bytes());
        b.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        b.extend_from_slice(&[0; 14]);
        b
    }

    #[test]
    fn a_udp_sockets_queue_buffer_and_drops_come_from_its_skmeminfo() {
        let socks = parse_replies(&reply(8080, &[2304, 212992, 0, 0, 0, 0, 0, 0, 17])).unwrap();
        assert_eq!(
            socks,
            [UdpSock {
                local: "198.18.0.1".parse().unwrap(),
                sport: 8080,
                rqueue: 2304,
                rcvbuf: 212992,
                drops: 17,
                inode: 4242,
            }]
        );
        // A kernel whose array stops before the drops: no socket rather than a made-up count.
        assert!(parse_replies(&reply(8080, &[1, 2, 3])).unwrap().is_empty());
    }

    #[test]
    fn the_request_asks_for_udp_on_the_port_with_memory_counters() {
        let r = build_request(libc::AF_INET6 as u8, 8443, 9);
        assert_eq!(r.len(), 72);
        assert_eq!(
            &r[16..20],
            &[libc::AF_INET6 as u8, IPPROTO_UDP, EXT_SKMEMINFO, 0]
        );
        assert_eq!(&r[20..24], &u32::MAX.to_ne_bytes());
        assert_eq!(&r[24..26], &8443u16.to_be_bytes());
    }

    /// A socket of our own with a small buffer and datagrams it never reads: sock_diag sees its
    /// queue, its buffer and, past the buffer, its drops, as many as were not queued.
    #[test]
    fn a_real_socket_that_does_not_read_drops_what_its_buffer_cannot_hold() {
        let rx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let port = rx.local_addr().unwrap().port();
        set_rcvbuf(&rx, 4096).unwrap();
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let sent = 200;
        for _ in 0..sent {
            tx.send_to(&[0u8; 1200], ("127.0.0.1", port)).unwrap();
        }
        let mut d = SockDiag::open().unwrap();
        let socks = d.udp_sockets(port).unwrap();
        let s = socks.iter().find(|s| s.sport == port).expect("our socket");
        assert_eq!(
            s.rcvbuf,
            2 * 4096,
            "SO_RCVBUF as the kernel keeps it, doubled"
        );
        assert!(s.rqueue > 0 && s.rqueue <= s.rcvbuf + 4096, "{s:?}");
        // Read what was queued: the rest were dropped.
        rx.set_nonblocking(true).unwrap();
        let mut got = 0;
        let mut buf = [0u8; 2048];
        while rx.recv(&mut buf).is_ok() {
            got += 1;
        }
        assert!(got > 0 && got < sent, "received {got} of {sent}");
        assert_eq!(s.drops, sent - got, "{s:?}, received {got}");
    }
}
