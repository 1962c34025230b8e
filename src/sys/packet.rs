//! Frame I/O and timing primitives for the delay router: AF_PACKET sockets bound to one
//! interface with a memory-mapped receive ring, an absolute-deadline timerfd, an epoll set, the
//! monotonic clock.

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
    ring: RxRing,
    pub dev: String,
    ifindex: u32,
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
            // The ring before bind, so no frame is ever queued outside it.
            let ring = RxRing::map(raw)?;
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
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_SNDBUFFORCE,
                (&big as *const libc::c_int).cast(),
                4,
            );
            Ok(PacketPort {
                fd,
                ring,
                dev: dev.to_string(),
                ifindex,
            })
        }
    }

    /// Calls `f(frame, arrival_ns)` for up to `max` frames waiting in the receive ring, in
    /// arrival order, without a syscall; returns how many ring slots it consumed (0 = none
    /// waiting). `arrival_ns` is the kernel's receive time on the mono_ns clock, so time a
    /// frame spent waiting for the router counts towards its delay. Frames cut by the slot
    /// size (offload super-frames) are left out rather than relayed cut.
    pub fn recv_each(&mut self, max: usize, mut f: impl FnMut(&[u8], u64)) -> usize {
        let now = mono_ns();
        let real_minus_mono = real_ns().wrapping_sub(now);
        let mut n = 0;
        while n < max {
            let Some(slot) = self.ring.ready() else { break };
            n += 1;
            let h = slot.header();
            let keep = h.tp_snaplen == h.tp_len && slot.pkttype() != libc::PACKET_OUTGOING;
            if keep {
                let stamp = h.tp_sec as u64 * 1_000_000_000 + h.tp_nsec as u64;
                f(slot.frame(&h), arrival_mono(stamp, real_minus_mono, now));
            }
            self.ring.release(slot);
        }
        n
    }

    /// Frames the kernel dropped because the receive ring was full, since the last call.
    pub fn take_drops(&self) -> u64 {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: valid out-buffer and length; PACKET_STATISTICS resets the kernel's counters.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        };
        if r == 0 {
            u64::from(st.tp_drops)
        } else {
            0
        }
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

    /// Why the interface is gone, if it is: a pending socket error (the kernel sets ENETDOWN
    /// when a bound interface is unregistered, and epoll then reports the socket ready for
    /// ever), or its name no longer naming the index it had. None while it is there.
    pub fn gone(&self) -> Option<String> {
        let mut err: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: valid out-buffer and length.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_ERROR,
                (&mut err as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if r == 0 && matches!(err, libc::ENETDOWN | libc::ENXIO | libc::ENODEV) {
            return Some(format!(
                "interface {} went away ({})",
                self.dev,
                io::Error::from_raw_os_error(err)
            ));
        }
        let cname = std::ffi::CString::new(self.dev.as_str()).ok()?;
        // SAFETY: NUL-terminated name.
        let now = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        (now != self.ifindex).then(|| format!("interface {} no longer exists", self.dev))
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

/// CLOCK_REALTIME in nanoseconds (the clock of the ring's software timestamps).
fn real_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer to a timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A ring timestamp (CLOCK_REALTIME ns) on the mono_ns clock, given REALTIME - MONOTONIC and
/// the mono time `now` it was read at. A stamp in the future or over a second old (a clock
/// step, or a frame stamped on another clock) gives `now`.
pub fn arrival_mono(stamp_real: u64, real_minus_mono: u64, now: u64) -> u64 {
    let t = stamp_real.wrapping_sub(real_minus_mono);
    if t <= now && now - t < 1_000_000_000 {
        t
    } else {
        now
    }
}

/// Slots of the receive ring: 2 KiB holds a 1,514-byte frame, its tpacket2 header and the
/// link address. 4,096 slots (8 MiB) buffer ~16 ms at 250,000 frames/s.
const RING_SLOT: usize = 2048;
const RING_SLOTS: usize = 4096;
const RING_BLOCK: usize = 64 << 10;

/// A PACKET_RX_RING (TPACKET_V2) mapped into this process: the kernel writes each frame into
/// the next free slot and flips its status to USER; we read it and flip it back to KERNEL.
struct RxRing {
    base: *mut u8,
    next: usize,
}

/// A slot holding a frame for us.
struct Slot(*mut u8);

impl Slot {
    fn header(&self) -> libc::tpacket2_hdr {
        // SAFETY: the slot starts with a tpacket2_hdr the kernel filled before setting
        // TP_STATUS_USER (read with acquire ordering in `ready`).
        unsafe { std::ptr::read_volatile(self.0 as *const libc::tpacket2_hdr) }
    }

    fn pkttype(&self) -> u8 {
        let off = (std::mem::size_of::<libc::tpacket2_hdr>() + 15) & !15;
        // SAFETY: the kernel writes a sockaddr_ll right after the aligned header.
        unsafe { (*(self.0.add(off) as *const libc::sockaddr_ll)).sll_pkttype }
    }

    /// The frame bytes described by this slot's header `h` (read once by the caller).
    fn frame(&self, h: &libc::tpacket2_hdr) -> &[u8] {
        let len = (h.tp_snaplen as usize).min(RING_SLOT - h.tp_mac as usize);
        // SAFETY: tp_mac and tp_snaplen describe bytes inside this slot (bounded above).
        unsafe { std::slice::from_raw_parts(self.0.add(h.tp_mac as usize), len) }
    }
}

impl RxRing {
    /// Sets TPACKET_V2 and an RX ring on AF_PACKET socket `fd` and maps it.
    fn map(fd: RawFd) -> io::Result<Self> {
        let v2 = libc::tpacket_versions::TPACKET_V2 as libc::c_int;
        let req = libc::tpacket_req {
            tp_block_size: RING_BLOCK as u32,
            tp_block_nr: (RING_SLOTS * RING_SLOT / RING_BLOCK) as u32,
            tp_frame_size: RING_SLOT as u32,
            tp_frame_nr: RING_SLOTS as u32,
        };
        // SAFETY: option buffers are valid for their lengths; the mapping is checked.
        unsafe {
            cvt(libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                libc::PACKET_VERSION,
                (&v2 as *const libc::c_int).cast(),
                4,
            ))?;
            cvt(libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                libc::PACKET_RX_RING,
                (&req as *const libc::tpacket_req).cast(),
                std::mem::size_of::<libc::tpacket_req>() as u32,
            ))?;
            let base = libc::mmap(
                std::ptr::null_mut(),
                RING_SLOTS * RING_SLOT,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            Ok(RxRing {
                base: base.cast(),
                next: 0,
            })
        }
    }

    /// The next slot, if the kernel has handed it to us.
    fn ready(&self) -> Option<Slot> {
        // SAFETY: `next` < RING_SLOTS, so the slot lies inside the mapping.
        let p = unsafe { self.base.add(self.next * RING_SLOT) };
        // SAFETY: tp_status is the slot's first field, shared with the kernel.
        let status = unsafe { std::ptr::read_volatile(p as *const u32) };
        if status & libc::TP_STATUS_USER == 0 {
            return None;
        }
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
        Some(Slot(p))
    }

    /// Gives the slot back to the kernel and moves on.
    fn release(&mut self, slot: Slot) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        // SAFETY: as in `ready`.
        unsafe { std::ptr::write_volatile(slot.0 as *mut u32, libc::TP_STATUS_KERNEL) };
        self.next = (self.next + 1) % RING_SLOTS;
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `map`.
        unsafe { libc::munmap(self.base.cast(), RING_SLOTS * RING_SLOT) };
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

    /// The deadline the timer is armed for.
    pub fn armed_at(&self) -> Option<u64> {
        self.armed_at
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

#[cfg(test)]
mod tests {
    use super::arrival_mono;

    #[test]
    fn ring_stamps_move_to_the_monotonic_clock() {
        let offset = 1_700_000_000_000_000_000; // REALTIME - MONOTONIC
        let now = 5_000_000_000;
        // Stamped 300 us before now.
        assert_eq!(
            arrival_mono(offset + now - 300_000, offset, now),
            now - 300_000
        );
    }

    #[test]
    fn implausible_stamps_fall_back_to_now() {
        let offset = 1_700_000_000_000_000_000;
        let now = 5_000_000_000;
        assert_eq!(arrival_mono(offset + now + 10, offset, now), now, "future");
        assert_eq!(
            arrival_mono(offset + now - 2_000_000_000, offset, now),
            now,
            "two seconds old"
        );
        // A stamp on the monotonic clock read as realtime.
        assert_eq!(arrival_mono(now - 1_000, offset, now), now);
    }
}
