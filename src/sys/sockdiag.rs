//! A NETLINK_SOCK_DIAG socket in the calling thread's network namespace, and the inet_diag
//! wire format as bytes: the dump request for a set of TCP states on one local port, and the
//! pure parser of the replies (tested without a socket).

use std::net::IpAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// TCP states as numbered in include/net/tcp_states.h.
pub mod state {
    pub const ESTABLISHED: u8 = 1;
    pub const SYN_SENT: u8 = 2;
    pub const SYN_RECV: u8 = 3;
    pub const FIN_WAIT1: u8 = 4;
    pub const FIN_WAIT2: u8 = 5;
    pub const TIME_WAIT: u8 = 6;
    pub const CLOSE: u8 = 7;
    pub const CLOSE_WAIT: u8 = 8;
    pub const LAST_ACK: u8 = 9;
    pub const LISTEN: u8 = 10;
    pub const CLOSING: u8 = 11;
}

/// A bit mask of TCP states for the request (`1 << state`).
pub fn states_mask(states: &[u8]) -> u32 {
    states.iter().fold(0, |m, s| m | 1u32 << s)
}

pub(super) const NLMSG_HDR: usize = 16;
pub(super) const NLMSG_ERROR: u16 = 2;
pub(super) const NLMSG_DONE: u16 = 3;
/// SOCK_DIAG_BY_FAMILY.
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// TCPDIAG_GETSOCK: the older inet_diag request, whose dump covers both families in one walk.
pub const TCPDIAG_GETSOCK: u16 = 18;
pub(super) const NLM_F_REQUEST: u16 = 1;
pub(super) const NLM_F_DUMP: u16 = 0x300;
const IPPROTO_TCP: u8 = 6;
pub(super) const INET_DIAG_MSG_LEN: usize = 72;
/// The reply attribute of a socket's memory counters (`enum inet_diag_attrs`), and its bit in
/// the request's `idiag_ext` (1 << (attribute - 1)).
pub(super) const INET_DIAG_SKMEMINFO: u16 = 7;
pub(super) const EXT_SKMEMINFO: u8 = 1 << (INET_DIAG_SKMEMINFO - 1);
/// The index of `sk_drops` in the SKMEMINFO array (`SK_MEMINFO_DROPS`, include/uapi/linux/sock_diag.h).
pub(super) const SK_MEMINFO_DROPS: usize = 8;
/// The reply attribute holding struct tcp_info (`INET_DIAG_INFO`), and its request bit.
pub(super) const INET_DIAG_INFO: u16 = 2;
const EXT_INFO: u8 = 1 << (INET_DIAG_INFO - 1);
/// Offsets in struct tcp_info (include/uapi/linux/tcp.h): 8 bytes of u8 fields, then u32s:
/// rto, ato, snd_mss, rcv_mss, unacked, sacked, lost, retrans, fackets, `last_data_sent`
/// (44), ..., `total_retrans` (100, the 24th u32).
pub(super) const TCPI_LAST_DATA_SENT: usize = 44;
const TCPI_TOTAL_RETRANS: usize = 100;

/// The bytes of one dump request (nlmsghdr + inet_diag_req_v2): TCP sockets of `family`
/// (AF_INET or AF_INET6) in `states` whose local port is `sport` (0: any port).
pub fn build_request(family: u8, states: u32, sport: u16, seq: u32) -> Vec<u8> {
    request_v2(family, IPPROTO_TCP, ext(false), states, sport, seq)
}

/// What a dump asks of each socket besides its `inet_diag_msg`: the memory counters always
/// (a listener's `sk_drops` is its listen drops), and tcp_info when `info` (the connections'
/// queues, retransmissions and accept-queue ages; the kernel fills it for full sockets only).
fn ext(info: bool) -> u8 {
    EXT_SKMEMINFO | if info { EXT_INFO } else { 0 }
}

/// One SOCK_DIAG_BY_FAMILY dump request (nlmsghdr + inet_diag_req_v2): sockets of `family`
/// and `protocol` in `states` whose local port is `sport`, with the attributes `ext` asks.
pub(super) fn request_v2(
    family: u8,
    protocol: u8,
    ext: u8,
    states: u32,
    sport: u16,
    seq: u32,
) -> Vec<u8> {
    let len = NLMSG_HDR + 56;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&[family, protocol, ext, 0]);
    b.extend_from_slice(&states.to_ne_bytes());
    b.extend_from_slice(&sport.to_be_bytes()); // idiag_sport, network order
    b.resize(len, 0); // dport, addresses, interface, cookie: any
    b
}

/// The bytes of one dump request in the older format (nlmsghdr + inet_diag_req, message type
/// TCPDIAG_GETSOCK): TCP sockets of both families in `states` whose local port is `sport`.
/// The kernel answers it with family AF_UNSPEC, so one walk of its socket hash covers IPv4 and
/// IPv6, where a SOCK_DIAG_BY_FAMILY request per family walks the hash once for each. The
/// walk is of the whole hash, shared by every namespace: halving the walks halves the cost.
pub fn build_request_both(states: u32, sport: u16, seq: u32) -> Vec<u8> {
    request_both(ext(false), states, sport, seq)
}

/// The older request of [`build_request_both`] with the attributes `ext` asks.
pub(super) fn request_both(ext: u8, states: u32, sport: u16, seq: u32) -> Vec<u8> {
    let len = NLMSG_HDR + 60;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&TCPDIAG_GETSOCK.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    // family (ignored), src_len, dst_len, ext
    b.extend_from_slice(&[0, 0, 0, ext]);
    b.extend_from_slice(&sport.to_be_bytes()); // id.idiag_sport, network order
    b.resize(NLMSG_HDR + 4 + 48, 0); // dport, addresses, interface, cookie: any
    b.extend_from_slice(&states.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes()); // dbs
    b
}

/// One socket of a reply (the part of struct inet_diag_msg the probe uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiagSocket {
    pub state: u8,
    pub local: IpAddr,
    pub sport: u16,
    pub dport: u16,
    /// LISTEN: accept-queue length; others: bytes unread.
    pub rqueue: u32,
    /// LISTEN: accept-queue limit (the backlog after the somaxconn cap); others: bytes unsent.
    pub wqueue: u32,
    /// The owner's uid (as the probed namespace's user namespace sees it).
    pub uid: u32,
    pub inode: u32,
    /// The socket's `sk_drops` (SK_MEMINFO_DROPS): on a listener, the SYNs and handshakes it
    /// dropped (`tcp_listendrop()`: its own share of the namespace's ListenDrops, overflows
    /// included), since it began listening. None where the kernel sent no memory counters
    /// (TIME_WAIT and SYN-RCVD sockets have none).
    pub drops: Option<u32>,
    /// From tcp_info, where the dump asked for it and the kernel gave it (full sockets, not
    /// TIME_WAIT or SYN-RCVD): ms since the socket last sent data (on a socket not yet
    /// accepted, since the handshake completed: `sys::acceptq`), and the segments it
    /// retransmitted over its life.
    pub last_data_sent_ms: Option<u32>,
    pub total_retrans: Option<u32>,
}

/// A reply the kernel refused or cut short.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DiagError {
    #[error("sock_diag: kernel answered errno {0} ({e})", e = std::io::Error::from_raw_os_error(*.0))]
    Kernel(i32),
    #[error("sock_diag: truncated reply ({0} bytes left, message claims {1})")]
    Truncated(usize, usize),
    #[error("sock_diag: reply ended without NLMSG_DONE")]
    NoDone,
}

/// Result of parsing a whole dump: the sockets, and whether NLMSG_DONE was seen.
pub fn parse_replies(bytes: &[u8]) -> Result<(Vec<DiagSocket>, bool), DiagError> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + NLMSG_HDR <= bytes.len() {
        let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
        let len = u32_at(off) as usize;
        let kind = u16::from_ne_bytes(bytes[off + 4..off + 6].try_into().unwrap());
        if len < NLMSG_HDR || off + len > bytes.len() {
            return Err(DiagError::Truncated(bytes.len() - off, len));
        }
        let body = &bytes[off + NLMSG_HDR..off + len];
        match kind {
            NLMSG_DONE => return Ok((out, true)),
            NLMSG_ERROR => {
                let errno = body
                    .get(..4)
                    .map(|e| i32::from_ne_bytes(e.try_into().unwrap()))
                    .unwrap_or(0);
                if errno != 0 {
                    return Err(DiagError::Kernel(-errno));
                }
            }
            SOCK_DIAG_BY_FAMILY | TCPDIAG_GETSOCK if body.len() >= INET_DIAG_MSG_LEN => {
                out.push(parse_msg(body))
            }
            _ => {}
        }
        off += (len + 3) & !3;
    }
    Ok((out, false))
}

fn parse_msg(m: &[u8]) -> DiagSocket {
    let family = m[0];
    let attrs = &m[INET_DIAG_MSG_LEN..];
    let be16 = |o: usize| u16::from_be_bytes([m[o], m[o + 1]]);
    let ne32 = |o: usize| u32::from_ne_bytes(m[o..o + 4].try_into().unwrap());
    let local = if family == libc::AF_INET6 as u8 {
        let a: [u8; 16] = m[8..24].try_into().unwrap();
        IpAddr::from(a)
    } else {
        let a: [u8; 4] = m[8..12].try_into().unwrap();
        IpAddr::from(a)
    };
    DiagSocket {
        state: m[1],
        local,
        sport: be16(4),
        dport: be16(6),
        rqueue: ne32(56),
        wqueue: ne32(60),
        uid: ne32(64),
        inode: ne32(68),
        drops: attr_u32(attrs, INET_DIAG_SKMEMINFO, SK_MEMINFO_DROPS * 4),
        last_data_sent_ms: attr_u32(attrs, INET_DIAG_INFO, TCPI_LAST_DATA_SENT),
        total_retrans: attr_u32(attrs, INET_DIAG_INFO, TCPI_TOTAL_RETRANS),
    }
}

/// The u32 at byte `at` of attribute `want`'s payload, from the attributes after an
/// inet_diag_msg (rtattrs: u16 length, u16 type, payload padded to 4); None without that
/// attribute, or one too short to hold it (an older kernel's shorter tcp_info).
fn attr_u32(mut attrs: &[u8], want: u16, at: usize) -> Option<u32> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == want {
            let at = 4 + at;
            return (at + 4 <= len)
                .then(|| u32::from_ne_bytes(attrs[at..at + 4].try_into().unwrap()));
        }
        attrs = attrs.get((len + 3) & !3..).unwrap_or_default();
    }
    None
}

/// An open sock_diag socket; bound to the netns of the thread that opened it.
#[derive(Debug)]
pub struct SockDiag {
    fd: OwnedFd,
    buf: Vec<u8>,
    seq: u32,
    /// Whether the kernel answers the one-walk request (None: not asked yet).
    both_in_one: Option<bool>,
}

impl SockDiag {
    pub fn open() -> std::io::Result<Self> {
        // SAFETY: plain socket(2); the fd is owned right away.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(SockDiag {
            fd,
            buf: vec![0; 64 * 1024],
            seq: 0,
            both_in_one: None,
        })
    }

    /// One dump, as the concatenated bytes of every reply datagram up to NLMSG_DONE.
    pub fn dump_raw(&mut self, family: u8, states: u32, sport: u16) -> std::io::Result<Vec<u8>> {
        self.dump_raw_ext(family, ext(false), states, sport)
    }

    fn dump_raw_ext(
        &mut self,
        family: u8,
        ext: u8,
        states: u32,
        sport: u16,
    ) -> std::io::Result<Vec<u8>> {
        let req = request_v2(family, IPPROTO_TCP, ext, states, sport, self.next_seq());
        self.exchange(&req)
    }

    /// One dump of both families in one walk (the older request), as [`Self::dump_raw`].
    pub fn dump_raw_both(&mut self, states: u32, sport: u16) -> std::io::Result<Vec<u8>> {
        let req = build_request_both(states, sport, self.next_seq());
        self.exchange(&req)
    }

    /// One dump of a request another file builds (`conn_queues`) from the next sequence number.
    pub fn exchange_request(
        &mut self,
        req: impl FnOnce(u32) -> Vec<u8>,
    ) -> std::io::Result<Vec<u8>> {
        let req = req(self.next_seq());
        self.exchange(&req)
    }

    /// The next request's sequence number.
    pub(super) fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Sends a request and gathers its replies up to NLMSG_DONE.
    pub(super) fn exchange(&mut self, req: &[u8]) -> std::io::Result<Vec<u8>> {
        // SAFETY: req is a valid buffer; the kernel is the destination (zeroed sockaddr_nl).
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                req.as_ptr().cast(),
                req.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if sent < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut all = Vec::new();
        loop {
            // SAFETY: buf is ours and its length is passed.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    self.buf.as_mut_ptr().cast(),
                    self.buf.len(),
                    0,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let chunk = &self.buf[..n as usize];
            all.extend_from_slice(chunk);
            match parse_replies(chunk) {
                Ok((_, true)) => return Ok(all),
                Ok((_, false)) if n > 0 => continue,
                Ok(_) => return Ok(all),
                Err(e) => return Err(std::io::Error::other(e)),
            }
        }
    }

    /// TCP sockets of both families in `states` with local port `sport` (0: any): one walk of
    /// the kernel's socket hash where the kernel takes the older request, else one per family.
    pub fn dump(&mut self, states: u32, sport: u16) -> std::io::Result<Vec<DiagSocket>> {
        self.dump_ext(false, states, sport)
    }

    /// [`Self::dump`] with each full socket's tcp_info fields (`DiagSocket::last_data_sent_ms`,
    /// `total_retrans`): what the probe's walk of the port's states, its connections' queues
    /// and its accept queue's ages reads in one walk of the kernel's hash instead of four.
    pub fn dump_with_info(&mut self, states: u32, sport: u16) -> std::io::Result<Vec<DiagSocket>> {
        self.dump_ext(true, states, sport)
    }

    fn dump_ext(
        &mut self,
        info: bool,
        states: u32,
        sport: u16,
    ) -> std::io::Result<Vec<DiagSocket>> {
        if self.both_in_one != Some(false) {
            let req = request_both(ext(info), states, sport, self.next_seq());
            match self
                .exchange(&req)
                .and_then(|raw| parse_replies(&raw).map_err(std::io::Error::other))
            {
                Ok((socks, _)) => {
                    self.both_in_one = Some(true);
                    return Ok(socks);
                }
                // A kernel without the older request: per family from now on.
                Err(_) if self.both_in_one.is_none() => self.both_in_one = Some(false),
                Err(e) => return Err(e),
            }
        }
        self.dump_per_family_ext(info, states, sport)
    }

    /// Whether [`Self::dump`] walks both families at once (None before its first dump).
    pub fn one_walk(&self) -> Option<bool> {
        self.both_in_one
    }

    /// [`Self::dump`] with one request per family (two walks).
    pub fn dump_per_family(&mut self, states: u32, sport: u16) -> std::io::Result<Vec<DiagSocket>> {
        self.dump_per_family_ext(false, states, sport)
    }

    fn dump_per_family_ext(
        &mut self,
        info: bool,
        states: u32,
        sport: u16,
    ) -> std::io::Result<Vec<DiagSocket>> {
        let mut out = Vec::new();
        for fam in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
            let raw = self.dump_raw_ext(fam, ext(info), states, sport)?;
            let (socks, _) = parse_replies(&raw).map_err(std::io::Error::other)?;
            out.extend(socks);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_layout() {
        let r = build_request(libc::AF_INET as u8, states_mask(&[state::LISTEN]), 8080, 7);
        assert_eq!(r.len(), 72);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 72);
        assert_eq!(u16::from_ne_bytes(r[4..6].try_into().unwrap()), 20);
        assert_eq!(u16::from_ne_bytes(r[6..8].try_into().unwrap()), 0x301);
        assert_eq!(&r[16..20], &[2, 6, 1 << 6, 0]);
        assert_eq!(u32::from_ne_bytes(r[20..24].try_into().unwrap()), 1 << 10);
        assert_eq!(&r[24..26], &8080u16.to_be_bytes());
    }

    #[test]
    fn the_one_walk_request_is_inet_diag_req() {
        let r = build_request_both(states_mask(&[state::LISTEN]), 8080, 7);
        assert_eq!(r.len(), 76);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 76);
        assert_eq!(u16::from_ne_bytes(r[4..6].try_into().unwrap()), 18);
        assert_eq!(&r[16..20], &[0, 0, 0, 1 << 6]);
        assert_eq!(&r[20..22], &8080u16.to_be_bytes());
        assert_eq!(u32::from_ne_bytes(r[68..72].try_into().unwrap()), 1 << 10);
    }

    /// A reply of one listener with its memory counters (drops = 7) after an attribute the
    /// parser does not use, then NLMSG_DONE.
    #[test]
    fn a_listeners_drops_come_from_its_skmeminfo() {
        let mut msg = vec![0u8; INET_DIAG_MSG_LEN];
        msg[0] = libc::AF_INET as u8;
        msg[1] = state::LISTEN;
        msg[4..6].copy_from_slice(&8080u16.to_be_bytes());
        msg[56..60].copy_from_slice(&3u32.to_ne_bytes());
        // An attribute of another type (INET_DIAG_TOS, one byte, padded to 8).
        msg.extend_from_slice(&5u16.to_ne_bytes());
        msg.extend_from_slice(&8u16.to_ne_bytes());
        msg.extend_from_slice(&[0, 0, 0, 0]);
        let mut mem = [0u32; 9];
        mem[SK_MEMINFO_DROPS] = 7;
        msg.extend_from_slice(&(4 + 36u16).to_ne_bytes());
        msg.extend_from_slice(&INET_DIAG_SKMEMINFO.to_ne_bytes());
        for v in mem {
            msg.extend_from_slice(&v.to_ne_bytes());
        }
        let mut b = Vec::new();
        b.extend_from_slice(&((NLMSG_HDR + msg.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        b.extend_from_slice(&[0; 10]);
        b.extend_from_slice(&msg);
        b.extend_from_slice(&(NLMSG_HDR as u32).to_ne_bytes());
        b.extend_from_slice(&NLMSG_DONE.to_ne_bytes());
        b.extend_from_slice(&[0; 10]);
        let (socks, done) = parse_replies(&b).unwrap();
        assert!(done);
        assert_eq!((socks[0].sport, socks[0].rqueue), (8080, 3));
        assert_eq!(socks[0].drops, Some(7));
        // Without the attribute (a TIME_WAIT socket's reply): no drops.
        assert_eq!(
            attr_u32(&[], INET_DIAG_SKMEMINFO, SK_MEMINFO_DROPS * 4),
            None
        );
        // Cut short before the drops: none either, not a neighbour's value.
        let mut short = Vec::new();
        short.extend_from_slice(&(4 + 8u16).to_ne_bytes());
        short.extend_from_slice(&INET_DIAG_SKMEMINFO.to_ne_bytes());
        short.extend_from_slice(&[0; 8]);
        assert_eq!(
            attr_u32(&short, INET_DIAG_SKMEMINFO, SK_MEMINFO_DROPS * 4),
            None
        );
    }

    #[test]
    fn kernel_error_is_reported() {
        let mut b = Vec::new();
        b.extend_from_slice(&36u32.to_ne_bytes());
        b.extend_from_slice(&NLMSG_ERROR.to_ne_bytes());
        b.extend_from_slice(&[0; 10]);
        b.extend_from_slice(&(-libc::EPERM).to_ne_bytes());
        b.resize(36, 0);
        assert_eq!(parse_replies(&b), Err(DiagError::Kernel(libc::EPERM)));
    }

    #[test]
    fn truncated_reply_is_an_error() {
        let mut b = Vec::new();
        b.extend_from_slice(&200u32.to_ne_bytes());
        b.extend_from_slice(&[0; 12]);
        assert!(matches!(
            parse_replies(&b),
            Err(DiagError::Truncated(16, 200))
        ));
    }
}
