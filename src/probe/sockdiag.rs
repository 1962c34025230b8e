//! NETLINK_SOCK_DIAG (inet_diag) requests and replies as bytes: builds the dump request for a
//! set of TCP states on one local port, and parses the replies into the listening sockets'
//! accept queues and per-state counts. The kernel filters by state and port itself, so only
//! matching sockets cross into user space; but any state other than LISTEN makes the kernel
//! walk the established hash, TIME_WAIT included (its cost grows with the table).

use std::net::IpAddr;

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

/// The states the probe counts each sample: everything of the server's port except TIME_WAIT
/// (read from /proc/net/sockstat instead) and the client-side SYN_SENT.
pub const SERVER_STATES: [u8; 8] = [
    state::LISTEN,
    state::SYN_RECV,
    state::ESTABLISHED,
    state::FIN_WAIT1,
    state::FIN_WAIT2,
    state::CLOSE_WAIT,
    state::LAST_ACK,
    state::CLOSING,
];

const NLMSG_HDR: usize = 16;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
/// SOCK_DIAG_BY_FAMILY.
pub const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const IPPROTO_TCP: u8 = 6;
const INET_DIAG_MSG_LEN: usize = 72;

/// The bytes of one dump request (nlmsghdr + inet_diag_req_v2): TCP sockets of `family`
/// (AF_INET or AF_INET6) in `states` whose local port is `sport` (0: any port).
pub fn build_request(family: u8, states: u32, sport: u16, seq: u32) -> Vec<u8> {
    let len = NLMSG_HDR + 56;
    let mut b = Vec::with_capacity(len);
    b.extend_from_slice(&(len as u32).to_ne_bytes());
    b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    b.extend_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
    b.extend_from_slice(&seq.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    b.extend_from_slice(&[family, IPPROTO_TCP, 0, 0]);
    b.extend_from_slice(&states.to_ne_bytes());
    b.extend_from_slice(&sport.to_be_bytes()); // idiag_sport, network order
    b.resize(len, 0); // dport, addresses, interface, cookie: any
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
    pub inode: u32,
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
            SOCK_DIAG_BY_FAMILY if body.len() >= INET_DIAG_MSG_LEN => out.push(parse_msg(body)),
            _ => {}
        }
        off += (len + 3) & !3;
    }
    Ok((out, false))
}

fn parse_msg(m: &[u8]) -> DiagSocket {
    let family = m[0];
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
        inode: ne32(68),
    }
}

/// One listening socket's accept queue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ListenQueue {
    pub local: String,
    pub port: u16,
    pub queued: u32,
    pub limit: u32,
}

/// What a sample keeps of the sockets of the server's port.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiagSummary {
    pub listeners: Vec<ListenQueue>,
    pub syn_recv: u64,
    pub established: u64,
    pub fin_wait: u64,
    pub close_wait: u64,
    pub last_ack: u64,
    pub closing: u64,
    /// Only filled when TIME_WAIT was asked for.
    pub time_wait: u64,
    /// The state counts were walked for this sample. When not (with many sockets the walk runs
    /// less often than the samples), only the listeners were asked for and the counts mean
    /// nothing.
    pub states_fresh: bool,
}

impl DiagSummary {
    /// Folds sockets (of both families) into counts.
    pub fn add(&mut self, socks: &[DiagSocket]) {
        for s in socks {
            match s.state {
                state::LISTEN => self.listeners.push(ListenQueue {
                    local: s.local.to_string(),
                    port: s.sport,
                    queued: s.rqueue,
                    limit: s.wqueue,
                }),
                state::SYN_RECV => self.syn_recv += 1,
                state::ESTABLISHED => self.established += 1,
                state::FIN_WAIT1 | state::FIN_WAIT2 => self.fin_wait += 1,
                state::CLOSE_WAIT => self.close_wait += 1,
                state::LAST_ACK => self.last_ack += 1,
                state::CLOSING => self.closing += 1,
                state::TIME_WAIT => self.time_wait += 1,
                _ => {}
            }
        }
    }

    /// Accept-queue length summed over the port's listeners (several with SO_REUSEPORT).
    pub fn accept_queue(&self) -> u64 {
        self.listeners.iter().map(|l| l.queued as u64).sum()
    }

    pub fn accept_queue_limit(&self) -> u64 {
        self.listeners.iter().map(|l| l.limit as u64).sum()
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
        assert_eq!(&r[16..20], &[2, 6, 0, 0]);
        assert_eq!(u32::from_ne_bytes(r[20..24].try_into().unwrap()), 1 << 10);
        assert_eq!(&r[24..26], &8080u16.to_be_bytes());
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
