//! Time in the accept queue, sampled (issue 48 item 3): the connections of a port that wait
//! in its accept queue, from sock_diag. A connection not yet accepted is ESTABLISHED with
//! inode 0 (no file holds it); its age is tcp_info's `tcpi_last_data_sent`: the server cannot
//! send before accept, and the kernel stamps `lsndtime` when it makes the child socket at
//! handshake completion (tcp_create_openreq_child), so that field is the time since the
//! handshake completed (ms, jiffies). `last_data_recv` is not: a client's request resets it.
//! A waiting connection whose client gave up and closed is CLOSE_WAIT, still in the queue
//! until accepted (measured: a flood whose clients close after 1.5 s left 2.4 of 16.6 queued
//! connections in CLOSE_WAIT; counting ESTABLISHED alone made Little's law 16.5 % off).

use super::sockdiag::{INET_DIAG_MSG_LEN, NLMSG_DONE, NLMSG_HDR};

use super::sockdiag::{request_v2, states_mask, SockDiag, EXT_SKMEMINFO, SOCK_DIAG_BY_FAMILY};
use std::io;

/// INET_DIAG_INFO: the tcp_info attribute, asked by its bit in `idiag_ext`.
const INET_DIAG_INFO: u16 = 2;
/// Offset of `tcpi_last_data_sent` in struct tcp_info (8 bytes of u8 fields, then u32s:
/// rto, ato, snd_mss, rcv_mss, unacked, sacked, lost, retrans, fackets, last_data_sent).
const LAST_DATA_SENT: usize = 44;

/// The states a connection in an accept queue can be in: the server has not accepted it, so
/// it cannot have closed; its client may have (a FIN makes it CLOSE_WAIT).
pub const WAITING_STATES: [u8; 2] = [
    super::sockdiag::state::ESTABLISHED,
    super::sockdiag::state::CLOSE_WAIT,
];

/// The ages (ms) of the connections waiting in the accept queues of `port` (IPv4 and IPv6),
/// one dump each family.
pub fn waiting_ages_ms(diag: &mut SockDiag, port: u16) -> io::Result<Vec<u32>> {
    let mut ages = Vec::new();
    for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
        // The memory counters as every probe request asks them, and tcp_info too.
        let ext = EXT_SKMEMINFO | 1 << (INET_DIAG_INFO - 1);
        let waiting = states_mask(&WAITING_STATES);
        let raw = diag.exchange_request(|seq| {
            request_v2(family, libc::IPPROTO_TCP as u8, ext, waiting, port, seq)
        })?;
        ages.extend(parse_waiting(&raw));
    }
    Ok(ages)
}

/// How long a connection just accepted waited in the accept queue, ms: its tcp_info
/// `last_data_sent` before the server sent anything, the time since the kernel made it at
/// handshake completion (jiffies, so 1 ms steps on a HZ=1000 kernel). None when the socket
/// says no (not TCP, closed).
pub fn accepted_wait_ms(fd: std::os::fd::BorrowedFd<'_>) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut info = [0u8; LAST_DATA_SENT + 4];
    let mut len = info.len() as libc::socklen_t;
    // SAFETY: info is ours, its length passed; the kernel writes at most that much.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    (r == 0 && len as usize >= info.len())
        .then(|| u32::from_ne_bytes(info[LAST_DATA_SENT..].try_into().unwrap()))
}

/// The ages of the inode-0 sockets of a dump's replies (those with a tcp_info attribute).
pub fn parse_waiting(bytes: &[u8]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + NLMSG_HDR <= bytes.len() {
        let len = u32::from_ne_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes(bytes[off + 4..off + 6].try_into().unwrap());
        if len < NLMSG_HDR || off + len > bytes.len() || kind == NLMSG_DONE {
            break;
        }
        let m = &bytes[off + NLMSG_HDR..off + len];
        if kind == SOCK_DIAG_BY_FAMILY && m.len() >= INET_DIAG_MSG_LEN {
            let inode = u32::from_ne_bytes(m[68..72].try_into().unwrap());
            if inode == 0 {
                out.extend(last_data_sent(&m[INET_DIAG_MSG_LEN..]));
            }
        }
        off += (len + 3) & !3;
    }
    out
}

/// `tcpi_last_data_sent` from the attributes after an inet_diag_msg.
fn last_data_sent(mut attrs: &[u8]) -> Option<u32> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == INET_DIAG_INFO {
            let at = 4 + LAST_DATA_SENT;
            return (at + 4 <= len)
                .then(|| u32::from_ne_bytes(attrs[at..at + 4].try_into().unwrap()));
        }
        attrs = attrs.get((len + 3) & !3..).unwrap_or_default();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One reply message: an inet_diag_msg with `inode` and a tcp_info saying `age` ms.
    fn msg(inode: u32, age: u32) -> Vec<u8> {
        let mut m = vec![0u8; INET_DIAG_MSG_LEN];
        m[1] = 1;
        m[68..72].copy_from_slice(&inode.to_ne_bytes());
        let mut info = vec![0u8; 104];
        info[LAST_DATA_SENT..LAST_DATA_SENT + 4].copy_from_slice(&age.to_ne_bytes());
        m.extend_from_slice(&((4 + info.len()) as u16).to_ne_bytes());
        m.extend_from_slice(&INET_DIAG_INFO.to_ne_bytes());
        m.extend_from_slice(&info);
        let mut b = Vec::new();
        b.extend_from_slice(&((NLMSG_HDR + m.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        b.extend_from_slice(&[0u8; 10]);
        b.extend_from_slice(&m);
        b
    }

    #[test]
    fn only_the_sockets_no_file_holds_are_waiting_with_their_age() {
        let mut b = msg(0, 120);
        b.extend(msg(4711, 9999));
        b.extend(msg(0, 7));
        let mut done = vec![0u8; NLMSG_HDR];
        done[..4].copy_from_slice(&(NLMSG_HDR as u32).to_ne_bytes());
        done[4..6].copy_from_slice(&NLMSG_DONE.to_ne_bytes());
        b.extend(done);
        assert_eq!(parse_waiting(&b), [120, 7]);
    }
}
