//! Raw calls for the load worker's event loop: non-blocking TCP client sockets (socket, bind with
//! IP_BIND_ADDRESS_NO_PORT, connect, send, recv, close), epoll with nanosecond timeouts
//! (epoll_pwait2), an eventfd for wake-ups, getrusage and RLIMIT_NOFILE. Errors are raw errnos
//! (no allocation on the hot path); the caller classifies them.

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// An errno value.
pub type Errno = i32;

fn errno() -> Errno {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
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

    pub fn family(&self) -> libc::c_int {
        self.storage.ss_family as libc::c_int
    }

    fn ptr(&self) -> *const libc::sockaddr {
        &self.storage as *const _ as *const libc::sockaddr
    }
}

/// A non-blocking, close-on-exec TCP socket of `family`.
pub fn tcp_socket(family: libc::c_int) -> Result<RawFd, Errno> {
    // SAFETY: plain syscall.
    let fd = unsafe {
        libc::socket(
            family,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

/// Binds `fd` to `ip` with the port left to connect() (IP_BIND_ADDRESS_NO_PORT), so ports are
/// chosen per 4-tuple and a source address is not limited to one ephemeral range per target.
pub fn bind_source(fd: RawFd, ip: IpAddr) -> Result<(), Errno> {
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
        return Err(errno());
    }
    Ok(())
}

/// How a non-blocking connect began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectStart {
    Connected,
    InProgress,
}

pub fn connect(fd: RawFd, addr: &RawAddr) -> Result<ConnectStart, Errno> {
    // SAFETY: addr holds a valid sockaddr of addr.len bytes.
    if unsafe { libc::connect(fd, addr.ptr(), addr.len) } == 0 {
        return Ok(ConnectStart::Connected);
    }
    match errno() {
        libc::EINPROGRESS | libc::EINTR => Ok(ConnectStart::InProgress),
        e => Err(e),
    }
}

/// The pending error of a socket (SO_ERROR), 0 if none.
pub fn socket_error(fd: RawFd) -> Errno {
    let mut err: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: valid buffers for getsockopt.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            &mut err as *mut _ as *mut libc::c_void,
            &mut len,
        )
    };
    if r != 0 {
        errno()
    } else {
        err
    }
}

/// send() without SIGPIPE.
pub fn send(fd: RawFd, buf: &[u8]) -> Result<usize, Errno> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe {
        libc::send(
            fd,
            buf.as_ptr() as *const libc::c_void,
            buf.len(),
            libc::MSG_NOSIGNAL,
        )
    };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

pub fn recv(fd: RawFd, buf: &mut [u8]) -> Result<usize, Errno> {
    // SAFETY: buf is valid for writes of buf.len() bytes.
    let n = unsafe { libc::recv(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

pub fn close(fd: RawFd) {
    // SAFETY: the caller owns fd and never uses it again.
    unsafe { libc::close(fd) };
}

/// An epoll instance.
pub struct Epoll {
    fd: RawFd,
}

pub const EV_IN: u32 = libc::EPOLLIN as u32;
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
pub const EV_ERR: u32 = libc::EPOLLERR as u32;
pub const EV_HUP: u32 = libc::EPOLLHUP as u32;
pub const EV_RDHUP: u32 = libc::EPOLLRDHUP as u32;
pub const EV_ET: u32 = libc::EPOLLET as u32;

/// One epoll event: readiness bits and the registered data word.
pub type Event = libc::epoll_event;

pub fn empty_events(n: usize) -> Vec<Event> {
    vec![Event { events: 0, u64: 0 }; n]
}

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Epoll { fd })
    }

    pub fn add(&self, fd: RawFd, events: u32, data: u64) -> Result<(), Errno> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, data)
    }

    pub fn modify(&self, fd: RawFd, events: u32, data: u64) -> Result<(), Errno> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, data)
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> Result<(), Errno> {
        let mut ev = Event { events, u64: data };
        // SAFETY: valid epoll fd and event.
        if unsafe { libc::epoll_ctl(self.fd, op, fd, &mut ev) } != 0 {
            return Err(errno());
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
        // SAFETY: events is a valid buffer of events.len() entries; tsp is null or valid.
        let n = unsafe {
            libc::epoll_pwait2(
                self.fd,
                events.as_mut_ptr(),
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

impl Drop for Epoll {
    fn drop(&mut self) {
        close(self.fd);
    }
}

/// An eventfd another thread uses to wake the event loop.
pub struct EventFd {
    pub fd: RawFd,
}

impl EventFd {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(EventFd { fd })
    }

    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64.
        unsafe { libc::write(self.fd, &one as *const u64 as *const libc::c_void, 8) };
    }

    /// Another handle on the same eventfd, for a thread that wakes the loop (the duplicate is
    /// closed on its own).
    pub fn notifier(&self) -> io::Result<Notifier> {
        // SAFETY: fd is this EventFd's, open until it drops; dup makes a descriptor of our own.
        let fd = unsafe { libc::dup(self.fd) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: dup just returned it, and nothing else owns it.
        Ok(Notifier(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn drain(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64.
        unsafe { libc::read(self.fd, &mut v as *mut u64 as *mut libc::c_void, 8) };
    }
}

/// Wakes the event loop of an [`EventFd`] from another thread.
pub struct Notifier(OwnedFd);

impl Notifier {
    pub fn notify(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64 to the eventfd this handle owns.
        unsafe {
            libc::write(
                self.0.as_raw_fd(),
                &one as *const u64 as *const libc::c_void,
                8,
            )
        };
    }
}

impl Drop for EventFd {
    fn drop(&mut self) {
        close(self.fd);
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
        let nr_open = std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(rl.rlim_max);
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
