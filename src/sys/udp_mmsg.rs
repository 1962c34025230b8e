//! A non-blocking UDP socket for the QUIC stack (issue 47): datagrams read and written in
//! batches (`recvmmsg`/`sendmmsg`), with segmentation offload where the kernel has it (GSO:
//! one send of up to 64 equal datagrams with `UDP_SEGMENT`; GRO: one read of several,
//! their size in the `UDP_GRO` control message). The layers above see [`UdpSock`],
//! [`RecvBatch`] and [`Datagrams`], never a libc type.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::Duration;

/// include/uapi/linux/udp.h: the options of level SOL_UDP.
const UDP_SEGMENT: libc::c_int = 103;
const UDP_GRO: libc::c_int = 104;
/// Most datagrams one GSO send carries: the kernel takes 64 (UDP_MAX_SEGMENTS) but the
/// whole run must fit one 64 KiB IP packet, so 40 of QUIC's largest (1,452 bytes) at most.
pub const GSO_MAX_SEGMENTS: usize = 40;
/// Messages per recvmmsg/sendmmsg call.
pub const BATCH: usize = 32;
/// Each read buffer holds a GRO-coalesced run of datagrams (at most 64 KiB).
const RECV_BUF: usize = 64 * 1024;
/// Room for one control message of an int, aligned (CMSG_SPACE(4) is 24 on 64-bit).
const CMSG_LEN: usize = 64;

/// What this socket offers: GSO segments per send (1: none), GRO on reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offload {
    pub gso_segments: usize,
    pub gro: bool,
}

/// A bound, non-blocking UDP socket.
pub struct UdpSock {
    sock: std::net::UdpSocket,
    offload: Offload,
    dropped: u64,
}

/// One datagram run read: `len` bytes from `from`, cut in datagrams of `stride` bytes (the
/// last may be shorter; without GRO `stride == len`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvMeta {
    pub from: SocketAddr,
    pub len: usize,
    pub stride: usize,
}

/// The buffers one batched read fills.
pub struct RecvBatch {
    bufs: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
}

impl Default for RecvBatch {
    fn default() -> Self {
        RecvBatch {
            bufs: (0..BATCH).map(|_| vec![0u8; RECV_BUF]).collect(),
            meta: Vec::with_capacity(BATCH),
        }
    }
}

impl RecvBatch {
    /// A batch with no buffers, allocating nothing: a placeholder while a reader walks the
    /// real one and hands its datagrams to code that borrows the reader mutably.
    pub fn empty() -> RecvBatch {
        RecvBatch {
            bufs: Vec::new(),
            meta: Vec::new(),
        }
    }

    /// The runs the last read got: their meta and bytes.
    pub fn iter(&self) -> impl Iterator<Item = (RecvMeta, &[u8])> {
        self.meta
            .iter()
            .zip(&self.bufs)
            .map(|(m, b)| (*m, &b[..m.len]))
    }
}

/// One send: `data` to `to`, as datagrams of `segment` bytes when set (GSO), else one.
#[derive(Debug, Clone, Copy)]
pub struct Datagrams<'a> {
    pub to: SocketAddr,
    pub data: &'a [u8],
    pub segment: Option<usize>,
}

impl UdpSock {
    /// Binds `addr` (port 0: any free port), non-blocking, GRO turned on where the kernel has it.
    pub fn bind(addr: SocketAddr) -> io::Result<UdpSock> {
        let sock = std::net::UdpSocket::bind(addr)?;
        sock.set_nonblocking(true)?;
        let fd = sock.as_raw_fd();
        let gro = setsockopt_int(fd, libc::SOL_UDP, UDP_GRO, 1).is_ok();
        // The kernel has GSO when it knows the option (getsockopt answers, even with 0).
        let gso = getsockopt_int(fd, libc::SOL_UDP, UDP_SEGMENT).is_ok();
        Ok(UdpSock {
            sock,
            offload: Offload {
                gso_segments: if gso { GSO_MAX_SEGMENTS } else { 1 },
                gro,
            },
            dropped: 0,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.sock.local_addr()
    }

    pub fn offload(&self) -> Offload {
        self.offload
    }

    /// Takes datagrams one by one: a GSO run arriving whole is cut into its datagrams before
    /// it is queued, so a full receive buffer drops (and the kernel counts, in RcvbufErrors
    /// and the socket's drops) datagrams, not runs of up to 64 of them as one.
    pub fn gro_off(&mut self) -> io::Result<()> {
        setsockopt_int(self.sock.as_raw_fd(), libc::SOL_UDP, UDP_GRO, 0)?;
        self.offload.gro = false;
        Ok(())
    }

    /// Datagrams the kernel refused to send (see [`UdpSock::send`]).
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Sets SO_RCVBUF (the kernel doubles it and caps the request at net.core.rmem_max; as root
    /// SO_RCVBUFFORCE passes the cap) and returns the size the kernel keeps.
    pub fn set_rcvbuf(&self, bytes: u32) -> io::Result<u32> {
        let fd = self.sock.as_raw_fd();
        let v = bytes.min(i32::MAX as u32 / 2) as libc::c_int;
        if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v).is_err() {
            setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, v)?;
        }
        Ok(getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)? as u32)
    }

    /// Reads what is waiting, up to [`BATCH`] runs, into `batch`; 0 when nothing is.
    pub fn recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        batch.meta.clear();
        // SAFETY: every array below lives for the call; each msghdr points at its own iovec,
        // name and control buffer, and the lengths given are those of the buffers.
        unsafe {
            let mut names: [libc::sockaddr_storage; BATCH] = std::mem::zeroed();
            let mut ctrl = [[0u64; CMSG_LEN / 8]; BATCH];
            let mut iovs: [libc::iovec; BATCH] = std::mem::zeroed();
            let mut hdrs: [libc::mmsghdr; BATCH] = std::mem::zeroed();
            for i in 0..BATCH {
                iovs[i].iov_base = batch.bufs[i].as_mut_ptr().cast();
                iovs[i].iov_len = batch.bufs[i].len();
                let h = &mut hdrs[i].msg_hdr;
                h.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as u32;
                h.msg_iov = &mut iovs[i];
                h.msg_iovlen = 1;
                h.msg_control = ctrl[i].as_mut_ptr().cast();
                h.msg_controllen = CMSG_LEN;
            }
            let n = loop {
                let n = libc::recvmmsg(
                    self.sock.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    BATCH as u32,
                    libc::MSG_DONTWAIT,
                    std::ptr::null_mut(),
                );
                if n >= 0 {
                    break n as usize;
                }
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => return Ok(0),
                    _ => return Err(e),
                }
            };
            for i in 0..n {
                let len = hdrs[i].msg_len as usize;
                let h = &hdrs[i].msg_hdr;
                let mut stride = len;
                let mut c = libc::CMSG_FIRSTHDR(h);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == UDP_GRO {
                        let v = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::c_int);
                        if v > 0 {
                            stride = v as usize;
                        }
                    }
                    c = libc::CMSG_NXTHDR(h, c);
                }
                // An address of another family cannot come on an inet socket.
                let from = sockaddr_to_std(&names[i])
                    .unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
                batch.meta.push(RecvMeta { from, len, stride });
            }
        }
        Ok(batch.meta.len())
    }

    /// Sends `items` in one `sendmmsg` (or more while it takes some); returns how many are
    /// done. WouldBlock stops early (the rest is the caller's to send again). A GSO send
    /// the device refuses (EIO) turns GSO off for this socket, and the caller sends again.
    /// A datagram the kernel refuses for itself (too long, no route, a peer's ICMP error) is
    /// done too, dropped and counted in [`UdpSock::dropped`]: QUIC recovers it as a loss.
    pub fn send(&mut self, items: &[Datagrams<'_>]) -> io::Result<usize> {
        let mut sent = 0;
        while sent < items.len() {
            let chunk = &items[sent..items.len().min(sent + BATCH)];
            match self.send_some(chunk) {
                Ok(0) => break,
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.raw_os_error() == Some(libc::EIO) && self.offload.gso_segments > 1 => {
                    self.offload.gso_segments = 1;
                    break;
                }
                Err(e) if e.raw_os_error() == Some(libc::EBADF) => return Err(e),
                Err(_) => {
                    self.dropped += 1;
                    sent += 1;
                }
            }
        }
        Ok(sent)
    }

    fn send_some(&self, items: &[Datagrams<'_>]) -> io::Result<usize> {
        let n = items.len().min(BATCH);
        // SAFETY: as in `recv`: the arrays outlive the call; `data` is only read by the kernel.
        unsafe {
            let mut names: [libc::sockaddr_storage; BATCH] = std::mem::zeroed();
            let mut ctrl = [[0u64; CMSG_LEN / 8]; BATCH];
            let mut iovs: [libc::iovec; BATCH] = std::mem::zeroed();
            let mut hdrs: [libc::mmsghdr; BATCH] = std::mem::zeroed();
            for (i, d) in items[..n].iter().enumerate() {
                iovs[i].iov_base = d.data.as_ptr() as *mut libc::c_void;
                iovs[i].iov_len = d.data.len();
                let namelen = std_to_sockaddr(d.to, &mut names[i]);
                let h = &mut hdrs[i].msg_hdr;
                h.msg_name = (&mut names[i] as *mut libc::sockaddr_storage).cast();
                h.msg_namelen = namelen;
                h.msg_iov = &mut iovs[i];
                h.msg_iovlen = 1;
                if let Some(seg) = d.segment.filter(|s| *s < d.data.len()) {
                    h.msg_control = ctrl[i].as_mut_ptr().cast();
                    h.msg_controllen = libc::CMSG_SPACE(2) as usize;
                    let c = libc::CMSG_FIRSTHDR(h);
                    (*c).cmsg_level = libc::SOL_UDP;
                    (*c).cmsg_type = UDP_SEGMENT;
                    (*c).cmsg_len = libc::CMSG_LEN(2) as usize;
                    std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut u16, seg as u16);
                }
            }
            loop {
                let r = libc::sendmmsg(self.sock.as_raw_fd(), hdrs.as_mut_ptr(), n as u32, 0);
                if r >= 0 {
                    return Ok(r as usize);
                }
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }

    /// Waits until the socket has something to read, at most `timeout` (None: no limit);
    /// false on timeout.
    pub fn wait_readable(&self, timeout: Option<Duration>) -> io::Result<bool> {
        let mut p = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.map_or(-1, |t| {
            t.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
        });
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut p, 1, ms) };
        match r {
            r if r > 0 => Ok(true),
            0 => Ok(false),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    Ok(false)
                } else {
                    Err(e)
                }
            }
        }
    }
}

impl AsFd for UdpSock {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

fn setsockopt_int(fd: i32, level: i32, name: i32, v: libc::c_int) -> io::Result<()> {
    // SAFETY: an int option, its size given.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as u32,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn getsockopt_int(fd: i32, level: i32, name: i32) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as u32;
    // SAFETY: an int option into an int, its size given.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

fn sockaddr_to_std(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    // SAFETY: the family says which sockaddr the storage holds.
    unsafe {
        match s.ss_family as i32 {
            libc::AF_INET => {
                let a = &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                Some(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                )))
            }
            libc::AF_INET6 => {
                let a = &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

fn std_to_sockaddr(a: SocketAddr, s: &mut libc::sockaddr_storage) -> u32 {
    // SAFETY: sockaddr_storage is large and aligned enough for either.
    unsafe {
        match a {
            SocketAddr::V4(v4) => {
                let o = &mut *(s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in>();
                o.sin_family = libc::AF_INET as u16;
                o.sin_port = v4.port().to_be();
                o.sin_addr.s_addr = u32::from(*v4.ip()).to_be();
                std::mem::size_of::<libc::sockaddr_in>() as u32
            }
            SocketAddr::V6(v6) => {
                let o = &mut *(s as *mut libc::sockaddr_storage).cast::<libc::sockaddr_in6>();
                o.sin6_family = libc::AF_INET6 as u16;
                o.sin6_port = v6.port().to_be();
                o.sin6_addr.s6_addr = v6.ip().octets();
                o.sin6_flowinfo = v6.flowinfo();
                o.sin6_scope_id = v6.scope_id();
                std::mem::size_of::<libc::sockaddr_in6>() as u32
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With GRO off a GSO run arrives as its datagrams, each its own message; with GRO on it
    /// may arrive whole (one message, the kernel's one skb: dropped and counted as one).
    #[test]
    fn without_gro_a_gso_run_arrives_datagram_by_datagram() {
        let mut a = UdpSock::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        if a.offload().gso_segments < 2 {
            eprintln!("skipped: the kernel has no UDP GSO");
            return;
        }
        let mut b = UdpSock::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        b.gro_off().unwrap();
        assert!(!b.offload().gro);
        let (to, seg) = (b.local_addr().unwrap(), 1200);
        let run = vec![7u8; seg * 4];
        let item = Datagrams {
            to,
            data: &run,
            segment: Some(seg),
        };
        assert_eq!(a.send(&[item]).unwrap(), 1);
        let mut batch = RecvBatch::default();
        let mut messages = Vec::new();
        for _ in 0..4 {
            if messages.iter().sum::<usize>() == run.len() {
                break;
            }
            b.wait_readable(Some(Duration::from_secs(5))).unwrap();
            b.recv(&mut batch).unwrap();
            messages.extend(batch.iter().map(|(_, bytes)| bytes.len()));
        }
        assert_eq!(messages, vec![seg; 4], "one message per datagram");
    }

    /// Batched sends and reads over loopback, with GSO when the kernel has it: every datagram
    /// arrives with its bytes, and GRO runs are cut back into the sizes sent.
    #[test]
    fn batches_and_segments_round_trip_over_loopback() {
        let mut a = UdpSock::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let b = UdpSock::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let to = b.local_addr().unwrap();
        let seg = 1200;
        let big: Vec<u8> = (0..seg * 4).map(|i| (i / seg) as u8).collect();
        let small = b"hello".to_vec();
        let items = [
            Datagrams {
                to,
                data: &small,
                segment: None,
            },
            Datagrams {
                to,
                data: &big,
                segment: (a.offload().gso_segments > 1).then_some(seg),
            },
        ];
        let mut sent = a.send(&items).unwrap();
        if sent < items.len() {
            // GSO refused by the device: sent again one datagram per send.
            let per: Vec<_> = big
                .chunks(seg)
                .map(|d| Datagrams {
                    to,
                    data: d,
                    segment: None,
                })
                .collect();
            sent += usize::from(a.send(&per).unwrap() == per.len());
        }
        assert_eq!(sent, 2);
        let mut batch = RecvBatch::default();
        let mut got: Vec<Vec<u8>> = Vec::new();
        let mut tries = 0;
        while got.len() < 5 && tries < 100 {
            b.wait_readable(Some(Duration::from_secs(5))).unwrap();
            b.recv(&mut batch).unwrap();
            for (m, bytes) in batch.iter() {
                assert_eq!(m.from, a.local_addr().unwrap());
                got.extend(bytes.chunks(m.stride).map(|c| c.to_vec()));
            }
            tries += 1;
        }
        assert_eq!(got.len(), 5, "one small and four segments");
        assert_eq!(got[0], small);
        for (i, d) in got[1..].iter().enumerate() {
            assert_eq!(d.len(), seg);
            assert!(d.iter().all(|x| *x == i as u8));
        }
    }
}
