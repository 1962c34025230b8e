//! Kernel calls of the load worker's event loop: non-blocking TCP client sockets (socket, bind
//! with IP_BIND_ADDRESS_NO_PORT, connect, send, recv) as owned descriptors, epoll with
//! nanosecond timeouts (epoll_pwait2), an eventfd for wake-ups, getrusage and RLIMIT_NOFILE.
//! Failures are an [`Errno`] (no allocation on the hot path) whose [`SockError`] is what the
//! engine counts; no errno constant leaves this module.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The errno a system call failed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(i32);

/// What a failed socket call means to the load engine (how it is counted, whether to back off).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SockError {
    /// EAGAIN: nothing to read, no room to write, or the handshake is not done yet.
    WouldBlock,
    /// ECONNREFUSED: an RST answered the SYN.
    Refused,
    /// ECONNRESET, EPIPE: the peer reset or closed the connection.
    Reset,
    /// EADDRNOTAVAIL: no ephemeral port left (or the source address is not on this host).
    AddrNotAvail,
    /// EMFILE, ENFILE: out of descriptors.
    OutOfFds,
    /// ENOBUFS, ENOMEM: the kernel is short of memory.
    OutOfMemory,
    /// ETIMEDOUT: the kernel gave up (SYN or data retransmissions).
    TimedOut,
    Other,
}

impl Errno {
    fn last() -> Errno {
        Errno(
            io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO),
        )
    }

    pub fn kind(self) -> SockError {
        match self.0 {
            libc::EAGAIN => SockError::WouldBlock,
            libc::ECONNREFUSED => SockError::Refused,
            libc::ECONNRESET | libc::EPIPE => SockError::Reset,
            libc::EADDRNOTAVAIL => SockError::AddrNotAvail,
            libc::EMFILE | libc::ENFILE => SockError::OutOfFds,
            libc::ENOBUFS | libc::ENOMEM => SockError::OutOfMemory,
            libc::ETIMEDOUT => SockError::TimedOut,
            _ => SockError::Other,
        }
    }

    /// A peer that hung up without saying why (EPOLLHUP with no pending error).
    pub const HANGUP: Errno = Errno(libc::ECONNRESET);

    /// The errno of an I/O error that came from a socket call (EIO if it has none).
    pub fn of_io(e: &io::Error) -> Errno {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

impl std::fmt::Display for Errno {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        io::Error::from_raw_os_error(self.0).fmt(f)
    }
}

/// A socket address in the kernel's layout.
#[derive(Clone, Copy)]
pub struct RawAddr {
    storage: libc::sockaddr_storage,
    len: libc::socklen_t,
}

impl RawAddr {
    pub fn new(addr: SocketAddr) -> Self {
        // SAFETY: sockaddr_storage is plain data; zeroed is a valid value.
        let mut storage: libc::sockaddr_storage = unsafe { zeroed() };
        let len = match addr {
            SocketAddr::V4(a) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: a.port().to_be(),
                    sin_addr: libc::in_addr {
                        s_addr: u32::from_ne_bytes(a.ip().octets()),
                    },
                    sin_zero: [0; 8],
                };
                // SAFETY: sockaddr_storage is large enough and suitably aligned for sockaddr_in.
                unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in, sin) };
                size_of::<libc::sockaddr_in>()
            }
            SocketAddr::V6(a) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: a.port().to_be(),
                    sin6_flowinfo: a.flowinfo(),
                    sin6_addr: libc::in6_addr {
                        s6_addr: a.ip().octets(),
                    },
                    sin6_scope_id: a.scope_id(),
                };
                // SAFETY: as above, for sockaddr_in6.
                unsafe { std::ptr::write(&mut storage as *mut _ as *mut libc::sockaddr_in6, sin6) };
                size_of::<libc::sockaddr_in6>()
            }
        };
        RawAddr {
            storage,
            len: len as libc::socklen_t,
        }
    }

    fn family(&self) -> libc::c_int {
        self.storage.ss_family as libc::c_int
    }

    fn ptr(&self) -> *const libc::sockaddr {
        &self.storage as *const _ as *const libc::sockaddr
    }
}

/// How a non-blocking connect began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectStart {
    Connected,
    InProgress,
}

/// A non-blocking, close-on-exec TCP client socket; closed when dropped.
#[derive(Debug)]
pub struct TcpSocket(OwnedFd);

impl TcpSocket {
    /// A socket of the family of `to` (the address it will connect to).
    pub fn for_addr(to: &RawAddr) -> Result<TcpSocket, Errno> {
        // SAFETY: plain syscall.
        let fd = unsafe {
            libc::socket(
                to.family(),
                libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            )
        };
        if fd < 0 {
            return Err(Errno::last());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Ok(TcpSocket(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Binds to `ip` with the port left to connect() (IP_BIND_ADDRESS_NO_PORT), so ports are
    /// chosen per 4-tuple and a source address is not limited to one ephemeral range per target.
    pub fn bind_source(&self, ip: IpAddr) -> Result<(), Errno> {
        let fd = self.0.as_raw_fd();
        let one: libc::c_int = 1;
        // SAFETY: valid fd and option buffer.
        unsafe {
            libc::setsockopt(
                fd,
                libc::IPPROTO_IP,
                libc::IP_BIND_ADDRESS_NO_PORT,
                &one as *const _ as *const libc::c_void,
                size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        let a = RawAddr::new(SocketAddr::new(ip, 0));
        // SAFETY: a holds a valid sockaddr of a.len bytes.
        if unsafe { libc::bind(fd, a.ptr(), a.len) } != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }

    /// TCP_NODELAY: small writes go at once, not held until earlier bytes are acknowledged.
    pub fn set_nodelay(&self) -> Result<(), Errno> {
        let one: libc::c_int = 1;
        // SAFETY: valid fd and option buffer.
        let r = unsafe {
            libc::setsockopt(
                self.0.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                &one as *const _ as *const libc::c_void,
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }

    pub fn connect(&self, addr: &RawAddr) -> Result<ConnectStart, Errno> {
        // SAFETY: addr holds a valid sockaddr of addr.len bytes.
        if unsafe { libc::connect(self.0.as_raw_fd(), addr.ptr(), addr.len) } == 0 {
            return Ok(ConnectStart::Connected);
        }
        match Errno::last() {
            Errno(libc::EINPROGRESS | libc::EINTR) => Ok(ConnectStart::InProgress),
            e => Err(e),
        }
    }

    /// The socket's pending error (SO_ERROR), None if there is none.
    pub fn pending_error(&self) -> Option<Errno> {
        let mut err: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: valid buffers for getsockopt.
        let r = unsafe {
            libc::getsockopt(
                self.0.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                &mut err as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        match (r, err) {
            (0, 0) => None,
            (0, e) => Some(Errno(e)),
            _ => Some(Errno::last()),
        }
    }

    /// send() without SIGPIPE.
    pub fn send(&self, buf: &[u8]) -> Result<usize, Errno> {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe {
            libc::send(
                self.0.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n < 0 {
            Err(Errno::last())
        } else {
            Ok(n as usize)
        }
    }

    /// sendmsg() of several buffers in one call, without SIGPIPE.
    pub fn send_vectored(&self, bufs: &[io::IoSlice<'_>]) -> Result<usize, Errno> {
        // SAFETY: msghdr is plain data; zeroed is a valid empty header.
        let mut msg: libc::msghdr = unsafe { zeroed() };
        // IoSlice is ABI-compatible with iovec on Unix.
        msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
        // IOV_MAX on Linux.
        msg.msg_iovlen = bufs.len().min(1024) as _;
        // SAFETY: msg points at bufs, valid for the call.
        let n = unsafe { libc::sendmsg(self.0.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n < 0 {
            Err(Errno::last())
        } else {
            Ok(n as usize)
        }
    }

    pub fn recv(&self, buf: &mut [u8]) -> Result<usize, Errno> {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        let n = unsafe {
            libc::recv(
                self.0.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                0,
            )
        };
        if n < 0 {
            Err(Errno::last())
        } else {
            Ok(n as usize)
        }
    }
}

/// The socket as a byte stream, for a TLS library that reads and writes records through
/// `io::Read` / `io::Write` (errno as `io::Error`; EAGAIN is `WouldBlock`).
impl io::Read for &TcpSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.recv(buf)
            .map_err(|e| io::Error::from_raw_os_error(e.0))
    }
}

impl io::Write for &TcpSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.send(buf)
            .map_err(|e| io::Error::from_raw_os_error(e.0))
    }
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.send_vectored(bufs)
            .map_err(|e| io::Error::from_raw_os_error(e.0))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsFd for TcpSocket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// An epoll instance.
pub struct Epoll {
    fd: OwnedFd,
}

pub const EV_IN: u32 = libc::EPOLLIN as u32;
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
pub const EV_ERR: u32 = libc::EPOLLERR as u32;
pub const EV_HUP: u32 = libc::EPOLLHUP as u32;
pub const EV_RDHUP: u32 = libc::EPOLLRDHUP as u32;
pub const EV_ET: u32 = libc::EPOLLET as u32;

/// One epoll event: readiness bits and the registered data word.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Event(libc::epoll_event);

impl Event {
    /// The readiness bits (`EV_*`).
    pub fn bits(&self) -> u32 {
        self.0.events
    }
    /// The data word given to [`Epoll::add`].
    pub fn key(&self) -> u64 {
        self.0.u64
    }
}

pub fn empty_events(n: usize) -> Vec<Event> {
    vec![Event(libc::epoll_event { events: 0, u64: 0 }); n]
}

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Ok(Epoll {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub fn add(&self, fd: BorrowedFd<'_>, events: u32, data: u64) -> Result<(), Errno> {
        self.ctl(libc::EPOLL_CTL_ADD, fd.as_raw_fd(), events, data)
    }

    pub fn modify(&self, fd: BorrowedFd<'_>, events: u32, data: u64) -> Result<(), Errno> {
        self.ctl(libc::EPOLL_CTL_MOD, fd.as_raw_fd(), events, data)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> Result<(), Errno> {
        let mut ev = libc::epoll_event { events, u64: data };
        // SAFETY: valid epoll fd and event.
        if unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) } != 0 {
            return Err(Errno::last());
        }
        Ok(())
    }

    /// Waits for events; `timeout` None blocks. Nanosecond resolution (epoll_pwait2).
    pub fn wait(&self, events: &mut [Event], timeout: Option<Duration>) -> io::Result<usize> {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: events is a valid buffer of events.len() entries (Event is a transparent
        // epoll_event); tsp is null or valid.
        let n = unsafe {
            libc::epoll_pwait2(
                self.fd.as_raw_fd(),
                events.as_mut_ptr() as *mut libc::epoll_event,
                events.len() as libc::c_int,
                tsp,
                std::ptr::null(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(n as usize)
    }
}

/// An eventfd another thread uses to wake the event loop (share it in an `Arc`).
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor nothing else owns.
        Ok(EventFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64.
        unsafe {
            libc::write(
                self.fd.as_raw_fd(),
                &one as *const u64 as *const libc::c_void,
                8,
            )
        };
    }

    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64.
        unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                &mut v as *mut u64 as *mut libc::c_void,
                8,
            )
        };
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// This process's user and system CPU time so far, seconds.
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: rusage is plain data filled by the kernel.
    let mut ru: libc::rusage = unsafe { zeroed() };
    // SAFETY: valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// Result of raising RLIMIT_NOFILE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NofileChange {
    pub old_soft: u64,
    pub new_soft: u64,
    pub hard: u64,
}

/// Raises the soft RLIMIT_NOFILE to `want`, raising the hard limit too when privileged (bounded
/// by fs.nr_open); otherwise stops at the hard limit.
pub fn raise_nofile(want: u64) -> io::Result<NofileChange> {
    // SAFETY: rlimit is plain data.
    let mut rl: libc::rlimit = unsafe { zeroed() };
    // SAFETY: valid pointer.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let old_soft = rl.rlim_cur;
    if want <= old_soft {
        return Ok(NofileChange {
            old_soft,
            new_soft: old_soft,
            hard: rl.rlim_max,
        });
    }
    if want > rl.rlim_max {
        let nr_open = super::procfs::nr_open().unwrap_or(rl.rlim_max);
        let try_hard = want.min(nr_open).max(rl.rlim_max);
        let up = libc::rlimit {
            rlim_cur: try_hard,
            rlim_max: try_hard,
        };
        // SAFETY: valid pointer; failure (no CAP_SYS_RESOURCE) is fine, we fall back.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &up) } == 0 {
            return Ok(NofileChange {
                old_soft,
                new_soft: try_hard,
                hard: try_hard,
            });
        }
    }
    let new = libc::rlimit {
        rlim_cur: want.min(rl.rlim_max),
        rlim_max: rl.rlim_max,
    };
    // SAFETY: valid pointer.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(NofileChange {
        old_soft,
        new_soft: new.rlim_cur,
        hard: rl.rlim_max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errnos_mean_what_the_engine_counts() {
        assert_eq!(Errno(libc::EAGAIN).kind(), SockError::WouldBlock);
        assert_eq!(Errno(libc::ECONNREFUSED).kind(), SockError::Refused);
        assert_eq!(Errno(libc::EPIPE).kind(), SockError::Reset);
        assert_eq!(Errno::HANGUP.kind(), SockError::Reset);
        assert_eq!(Errno(libc::ENFILE).kind(), SockError::OutOfFds);
        assert_eq!(Errno(libc::ENETUNREACH).kind(), SockError::Other);
        assert_eq!(
            Errno(libc::ECONNREFUSED).to_string(),
            "Connection refused (os error 111)"
        );
    }

    #[test]
    fn a_connect_to_a_closed_port_is_refused() {
        // A port just released by a listener: nothing listens there now.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let to = RawAddr::new(SocketAddr::from(([127, 0, 0, 1], port)));
        let sock = TcpSocket::for_addr(&to).unwrap();
        let refused = match sock.connect(&to) {
            Err(e) => e.kind() == SockError::Refused,
            Ok(_) => {
                // Loopback answers the SYN with an RST at once: the error is pending.
                let epoll = Epoll::new().unwrap();
                epoll.add(sock.as_fd(), EV_OUT, 7).unwrap();
                let mut ev = empty_events(1);
                let n = epoll.wait(&mut ev, Some(Duration::from_secs(2))).unwrap();
                assert_eq!((n, ev[0].key()), (1, 7));
                assert_ne!(ev[0].bits() & (EV_ERR | EV_HUP), 0);
                sock.pending_error().map(Errno::kind) == Some(SockError::Refused)
            }
        };
        assert!(refused);
    }
}
