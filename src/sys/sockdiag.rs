//! A NETLINK_SOCK_DIAG socket in the calling thread's network namespace: sends inet_diag dump
//! requests (built by `probe::sockdiag`) and returns the raw replies for the pure parser.

use crate::probe::sockdiag::{build_request, parse_replies, DiagSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An open sock_diag socket; bound to the netns of the thread that opened it.
#[derive(Debug)]
pub struct SockDiag {
    fd: OwnedFd,
    buf: Vec<u8>,
    seq: u32,
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
        })
    }

    /// One dump, as the concatenated bytes of every reply datagram up to NLMSG_DONE.
    pub fn dump_raw(&mut self, family: u8, states: u32, sport: u16) -> std::io::Result<Vec<u8>> {
        self.seq = self.seq.wrapping_add(1);
        let req = build_request(family, states, sport, self.seq);
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

    /// TCP sockets of both families in `states` with local port `sport` (0: any).
    pub fn dump(&mut self, states: u32, sport: u16) -> std::io::Result<Vec<DiagSocket>> {
        let mut out = Vec::new();
        for fam in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
            let raw = self.dump_raw(fam, states, sport)?;
            let (socks, _) = parse_replies(&raw).map_err(std::io::Error::other)?;
            out.extend(socks);
        }
        Ok(out)
    }
}
