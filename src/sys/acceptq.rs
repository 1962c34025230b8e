//! Time in the accept queue, sampled (issue 48 item 3): the connections of a port that wait
//! in its accept queue, from sock_diag. A connection not yet accepted is ESTABLISHED with
//! inode 0 (no file holds it); its age is tcp_info's `tcpi_last_data_sent`: the server cannot
//! send before accept, and the kernel stamps `lsndtime` when it makes the child socket at
//! handshake completion (tcp_create_openreq_child), so that field is the time since the
//! handshake completed (ms, jiffies). `last_data_recv` is not: a client's request resets it.
//! A waiting connection whose client gave up and closed is CLOSE_WAIT, still in the queue
//! until accepted (measured: a flood whose clients close after 1.5 s left 2.4 of 16.6 queued
//! connections in CLOSE_WAIT; counting ESTABLISHED alone made Little's law 16.5 % off).

use super::sockdiag::{states_mask, DiagSocket, SockDiag, TCPI_LAST_DATA_SENT};
use std::io;

/// The states a connection in an accept queue can be in: the server has not accepted it, so
/// it cannot have closed; its client may have (a FIN makes it CLOSE_WAIT).
pub const WAITING_STATES: [u8; 2] = [
    super::sockdiag::state::ESTABLISHED,
    super::sockdiag::state::CLOSE_WAIT,
];

/// The ages (ms) of the connections waiting in the accept queues of `port` (IPv4 and IPv6).
pub fn waiting_ages_ms(diag: &mut SockDiag, port: u16) -> io::Result<Vec<u32>> {
    let socks = diag.dump_with_info(states_mask(&WAITING_STATES), port)?;
    Ok(waiting_ages(&socks))
}

/// The ages of the sockets of a dump (one asked with tcp_info) that wait in an accept queue:
/// in a waiting state, held by no file (inode 0).
pub fn waiting_ages(socks: &[DiagSocket]) -> Vec<u32> {
    socks
        .iter()
        .filter(|s| s.inode == 0 && WAITING_STATES.contains(&s.state))
        .filter_map(|s| s.last_data_sent_ms)
        .collect()
}

/// How long a connection just accepted waited in the accept queue, ms: its tcp_info
/// `last_data_sent` before the server sent anything, the time since the kernel made it at
/// handshake completion (jiffies, so 1 ms steps on a HZ=1000 kernel). None when the socket
/// says no (not TCP, closed).
pub fn accepted_wait_ms(fd: std::os::fd::BorrowedFd<'_>) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut info = [0u8; TCPI_LAST_DATA_SENT + 4];
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
        .then(|| u32::from_ne_bytes(info[TCPI_LAST_DATA_SENT..].try_into().unwrap()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::sockdiag::{
        parse_replies, state, INET_DIAG_INFO, INET_DIAG_MSG_LEN, NLMSG_HDR, SOCK_DIAG_BY_FAMILY,
    };

    /// One reply message: an inet_diag_msg in `state` with `inode`, and a tcp_info saying
    /// `age` ms where the kernel gives one.
    fn msg(state: u8, inode: u32, age: Option<u32>) -> Vec<u8> {
        let mut m = vec![0u8; INET_DIAG_MSG_LEN];
        m[1] = state;
        m[68..72].copy_from_slice(&inode.to_ne_bytes());
        if let Some(age) = age {
            let mut info = vec![0u8; 104];
            info[TCPI_LAST_DATA_SENT..TCPI_LAST_DATA_SENT + 4].copy_from_slice(&age.to_ne_bytes());
            m.extend_from_slice(&((4 + info.len()) as u16).to_ne_bytes());
            m.extend_from_slice(&INET_DIAG_INFO.to_ne_bytes());
            m.extend_from_slice(&info);
        }
        let mut b = Vec::new();
        b.extend_from_slice(&((NLMSG_HDR + m.len()) as u32).to_ne_bytes());
        b.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        b.extend_from_slice(&[0u8; 10]);
        b.extend_from_slice(&m);
        b
    }

    #[test]
    fn only_the_sockets_no_file_holds_are_waiting_with_their_age() {
        let mut b = msg(state::ESTABLISHED, 0, Some(120));
        b.extend(msg(state::ESTABLISHED, 4711, Some(9999)));
        b.extend(msg(state::CLOSE_WAIT, 0, Some(7)));
        // Of one walk of every state: inode 0 too, but not waiting to be accepted.
        b.extend(msg(state::TIME_WAIT, 0, None));
        b.extend(msg(state::SYN_RECV, 0, None));
        b.extend(msg(state::FIN_WAIT1, 0, Some(3)));
        let (socks, _) = parse_replies(&b).unwrap();
        assert_eq!(waiting_ages(&socks), [120, 7]);
    }
}
