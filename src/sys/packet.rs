//! Frame I/O and timing primitives for the delay router: AF_PACKET sockets bound to one
//! interface, an absolute-deadline timerfd, an epoll set, the monotonic clock, timer slack.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// CLOCK_MONOTONIC in nanoseconds (the router's clock; timerfd deadlines use the same clock).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sets this thread's timer slack (default 50 us) so timer wake-ups are not batched.
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

/// Makes a file descriptor non-blocking.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a caller-owned fd.
    unsafe {
        let fl = cvt(libc::fcntl(fd, libc::F_GETFL))?;
        cvt(libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK))?;
    }
    Ok(())
}

/// Reads what is available on a non-blocking fd: Ok(None) = nothing now, Ok(Some(0)) = EOF.
pub fn read_nonblocking(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(n as usize))
}

/// An AF_PACKET socket that receives every frame arriving on one interface and sends frames
/// out of it unchanged.
pub struct PacketPort {
    fd: OwnedFd,
    pub dev: String,
}

const PACKET_IGNORE_OUTGOING: libc::c_int = 23;

impl PacketPort {
    pub fn open(dev: &str) -> io::Result<Self> {
        let cname = std::ffi::CString::new(dev).map_err(|_| io::ErrorKind::InvalidInput)?;
        // SAFETY: plain socket calls on values we own; structs are zero-initialised POD.
        unsafe {
            let ifindex = libc::if_nametoindex(cname.as_ptr());
            if ifindex == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("no interface `{dev}` in this netns"),
                ));
            }
            // Protocol 0 until bound, so no frame of another interface is ever queued.
            let raw = cvt(libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                0,
            ))?;
            let fd = OwnedFd::from_raw_fd(raw);
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = (libc::ETH_P_ALL as u16).to_be();
            sll.sll_ifindex = ifindex as i32;
            cvt(libc::bind(
                raw,
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ))?;
            let one: libc::c_int = 1;
            // Our own transmissions must not come back to us as input.
            cvt(libc::setsockopt(
                raw,
                libc::SOL_PACKET,
                PACKET_IGNORE_OUTGOING,
                (&one as *const libc::c_int).cast(),
                4,
            ))?;
            let big: libc::c_int = 8 << 20;
            for opt in [libc::SO_RCVBUFFORCE, libc::SO_SNDBUFFORCE] {
                libc::setsockopt(
                    raw,
                    libc::SOL_SOCKET,
                    opt,
                    (&big as *const libc::c_int).cast(),
                    4,
                );
            }
            Ok(PacketPort {
                fd,
                dev: dev.to_string(),
            })
        }
    }

    /// Receives up to `batch.capacity()` waiting frames in one recvmmsg call; returns how many
    /// (0 when none is waiting). Frames larger than a buffer (offload super-frames) are left
    /// out rather than relayed cut.
    pub fn recv_batch(&self, batch: &mut FrameBatch) -> io::Result<usize> {
        batch.len = 0;
        let cap = batch.bufs.len();
        batch.iov.clear();
        batch.msgs.clear();
        for b in batch.bufs.iter_mut() {
            batch.iov.push(libc::iovec {
                iov_base: b.as_mut_ptr().cast(),
                iov_len: b.len(),
            });
        }
        for (i, addr) in batch.addrs.iter_mut().enumerate() {
            // SAFETY: zeroed msghdr is a valid empty header; pointers set below stay valid
            // for the call (iov and addrs are not resized during it).
            let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
            h.msg_name = (addr as *mut libc::sockaddr_ll).cast();
            h.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            h.msg_iov = &mut batch.iov[i];
            h.msg_iovlen = 1;
            batch.msgs.push(libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            });
        }
        let n = loop {
            // SAFETY: msgs holds `cap` headers pointing into live buffers.
            let n = unsafe {
                libc::recvmmsg(
                    self.fd.as_raw_fd(),
                    batch.msgs.as_mut_ptr(),
                    cap as u32,
                    libc::MSG_TRUNC,
                    std::ptr::null_mut(),
                )
            };
            if n >= 0 {
                break n as usize;
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                io::ErrorKind::WouldBlock => return Ok(0),
                io::ErrorKind::Interrupted => continue,
                _ => return Err(e),
            }
        };
        batch.got = n;
        for i in 0..n {
            let m = &batch.msgs[i];
            let truncated = m.msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
            if batch.addrs[i].sll_pkttype == libc::PACKET_OUTGOING || truncated {
                continue;
            }
            batch.lens[batch.len] = (i, m.msg_len as usize);
            batch.len += 1;
        }
        Ok(n)
    }

    /// Sends frames out of the interface in one sendmmsg call per 1024; returns how many the
    /// kernel took (the rest failed: the first error stops a batch).
    pub fn send_batch(&self, frames: &[&[u8]]) -> usize {
        let mut sent = 0;
        for chunk in frames.chunks(1024) {
            let mut iov: Vec<libc::iovec> = chunk
                .iter()
                .map(|f| libc::iovec {
                    iov_base: f.as_ptr() as *mut libc::c_void,
                    iov_len: f.len(),
                })
                .collect();
            let mut msgs = mmsg_headers(&mut iov, None);
            let mut off = 0;
            while off < msgs.len() {
                // SAFETY: msgs[off..] point into frames that outlive the call.
                let n = unsafe {
                    libc::sendmmsg(
                        self.fd.as_raw_fd(),
                        msgs[off..].as_mut_ptr(),
                        (msgs.len() - off) as u32,
                        0,
                    )
                };
                if n <= 0 {
                    if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return sent;
                }
                off += n as usize;
                sent += n as usize;
            }
        }
        sent
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// One sendmmsg/recvmmsg header per iovec (one buffer each), all with the same optional
/// address (`msg_name`, its length). The headers point into `iov` (and the address): keep both
/// alive and unmoved until the call that uses them returns.
pub fn mmsg_headers(
    iov: &mut [libc::iovec],
    name: Option<(*mut libc::c_void, u32)>,
) -> Vec<libc::mmsghdr> {
    iov.iter_mut()
        .map(|v| {
            // SAFETY: a zeroed msghdr is a valid empty header.
            let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
            if let Some((ptr, len)) = name {
                h.msg_name = ptr;
                h.msg_namelen = len;
            }
            h.msg_iov = v;
            h.msg_iovlen = 1;
            libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            }
        })
        .collect()
}

/// Receive buffers for [`PacketPort::recv_batch`]: frame `k` of the last call is
/// `batch.frame(k)` for k < `batch.len()`.
pub struct FrameBatch {
    bufs: Vec<Vec<u8>>,
    addrs: Vec<libc::sockaddr_ll>,
    iov: Vec<libc::iovec>,
    msgs: Vec<libc::mmsghdr>,
    /// (buffer index, length) of each kept frame.
    lens: Vec<(usize, usize)>,
    len: usize,
    got: usize,
}

impl FrameBatch {
    /// `count` buffers of `size` bytes each.
    pub fn new(count: usize, size: usize) -> Self {
        FrameBatch {
            bufs: (0..count).map(|_| vec![0u8; size]).collect(),
            // SAFETY: sockaddr_ll is plain data; all-zero is valid.
            addrs: vec![unsafe { std::mem::zeroed() }; count],
            iov: Vec::with_capacity(count),
            msgs: Vec::with_capacity(count),
            lens: vec![(0, 0); count],
            len: 0,
            got: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.bufs.len()
    }

    /// Frames kept by the last receive.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the last receive filled every buffer (more may be waiting).
    pub fn was_full(&self) -> bool {
        self.got == self.bufs.len()
    }

    pub fn frame(&self, k: usize) -> &[u8] {
        let (i, n) = self.lens[k];
        &self.bufs[i][..n]
    }
}

/// A CLOCK_MONOTONIC timerfd armed at absolute deadlines.
pub struct Timer {
    fd: OwnedFd,
    armed_at: Option<u64>,
}

impl Timer {
    pub fn new() -> io::Result<Self> {
        // SAFETY: creates a new fd we own.
        let raw = cvt(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        Ok(Timer {
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
            armed_at: None,
        })
    }

    /// Arms at `deadline_ns` (mono_ns clock), or disarms with None. No syscall if unchanged.
    pub fn arm_at(&mut self, deadline_ns: Option<u64>) -> io::Result<()> {
        if self.armed_at == deadline_ns {
            return Ok(());
        }
        let d = deadline_ns
            .unwrap_or(0)
            .max(u64::from(deadline_ns.is_some()));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (d / 1_000_000_000) as libc::time_t,
                tv_nsec: (d % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid itimerspec; fd is ours.
        cvt(unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })?;
        self.armed_at = deadline_ns;
        Ok(())
    }

    /// Consumes an expiry (after epoll reported the timer readable).
    pub fn clear(&mut self) {
        let mut b = [0u8; 8];
        let _ = read_nonblocking(self.fd.as_raw_fd(), &mut b);
        self.armed_at = None;
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An epoll set of level-triggered read interests, each with a caller token.
pub struct Poller {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Poller {
    pub fn new() -> io::Result<Self> {
        // SAFETY: creates a new fd we own.
        let raw = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Poller {
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 64],
        })
    }

    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: valid epoll_event; fds are owned by the caller and outlive the poller's use.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Waits (blocking; -1 = forever) and returns the ready tokens.
    pub fn wait(&mut self, timeout_ms: i32, ready: &mut Vec<u64>) -> io::Result<()> {
        ready.clear();
        // SAFETY: events buffer is valid for its length.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(())
            } else {
                Err(e)
            };
        }
        ready.extend(self.events[..n as usize].iter().map(|e| e.u64));
        Ok(())
    }
}

/// CPU time (user + system) of this process so far, in microseconds.
pub fn cpu_us() -> u64 {
    // SAFETY: getrusage fills a zeroed struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(ru.ru_utime) + us(ru.ru_stime)
}

/// Asks for SCHED_FIFO at `prio` for this thread, so departures are not delayed behind
/// other runnable tasks on a busy host. The router blocks in epoll whenever nothing is due,
/// and the kernel's RT throttling bounds it anyway.
pub fn set_realtime(prio: i32) -> io::Result<()> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: valid sched_param; 0 = this thread.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) })?;
    Ok(())
}
