//! Kernel calls of the built-in target server: a listener with an explicit backlog, epoll,
//! fork with PR_SET_PDEATHSIG (single-threaded callers only), process reaping, counters in a
//! MAP_SHARED memfd mapping (shared with the exec'd prefork manager and its forked workers),
//! lingering close and the calling thread's CPU clock.

use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use zerocopy::FromBytes;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Binds a TCP listener with SO_REUSEADDR and calls listen(2) with `backlog` (std's
/// TcpListener::bind always uses 128, and the backlog is one of the lab's knobs). The kernel
/// caps it at net.core.somaxconn.
pub fn bind_listener(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let domain = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    // SAFETY: plain socket calls on a descriptor we own; sockaddr structs are fully initialised.
    unsafe {
        let fd = cvt(libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
        ))?;
        let owned = OwnedFd::from_raw_fd(fd);
        let one: libc::c_int = 1;
        cvt(libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            &one as *const _ as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        ))?;
        match addr {
            SocketAddr::V4(a) => {
                let mut sa: libc::sockaddr_in = std::mem::zeroed();
                sa.sin_family = libc::AF_INET as libc::sa_family_t;
                sa.sin_port = a.port().to_be();
                sa.sin_addr.s_addr = u32::from_ne_bytes(a.ip().octets());
                cvt(libc::bind(
                    fd,
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                ))?;
            }
            SocketAddr::V6(a) => {
                let mut sa: libc::sockaddr_in6 = std::mem::zeroed();
                sa.sin6_family = libc::AF_INET6 as libc::sa_family_t;
                sa.sin6_port = a.port().to_be();
                sa.sin6_addr.s6_addr = a.ip().octets();
                sa.sin6_scope_id = a.scope_id();
                cvt(libc::bind(
                    fd,
                    &sa as *const _ as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                ))?;
            }
        }
        cvt(libc::listen(fd, backlog))?;
        Ok(TcpListener::from(owned))
    }
}

/// Wakes every thread blocked in accept(2) on this listener (Linux returns EINVAL to them):
/// how the threaded server stops without polling.
pub fn shutdown_listener(fd: RawFd) {
    // SAFETY: shutdown on a descriptor the caller keeps open; errors are irrelevant here.
    unsafe {
        libc::shutdown(fd, libc::SHUT_RDWR);
    }
}

/// Raises the soft RLIMIT_NOFILE to the hard limit (a server at overload holds many sockets);
/// returns (old soft, new soft).
pub fn raise_nofile() -> io::Result<(u64, u64)> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(io::Error::from)?;
    if soft < hard {
        setrlimit(Resource::RLIMIT_NOFILE, hard, hard).map_err(io::Error::from)?;
    }
    Ok((soft, hard.max(soft)))
}

/// CPU time consumed by the calling thread (CLOCK_THREAD_CPUTIME_ID), in nanoseconds; 0 if
/// the clock cannot be read. Not getrusage(RUSAGE_THREAD): that is tick-sampled here and
/// reads 0 for sub-ms work.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// epoll readiness bits used by the event server.
pub const EV_IN: u32 = libc::EPOLLIN as u32;
pub const EV_OUT: u32 = libc::EPOLLOUT as u32;
pub const EV_ERR: u32 = (libc::EPOLLERR | libc::EPOLLHUP | libc::EPOLLRDHUP) as u32;

/// A level-triggered epoll instance keyed by a u64 token.
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    pub fn new(capacity: usize) -> io::Result<Self> {
        // SAFETY: epoll_create1 returns a fresh descriptor that we own.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll {
            // SAFETY: fd was just returned by the kernel.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
        })
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev is valid for the call; fd validity is the kernel's to check.
        cvt(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
    }
    pub fn add(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, events, token)
    }
    pub fn modify(&self, fd: RawFd, events: u32, token: u64) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, events, token)
    }
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits up to `timeout_ms` (-1 = forever) and returns (token, events) pairs.
    pub fn wait(&mut self, timeout_ms: i32) -> io::Result<impl Iterator<Item = (u64, u32)> + '_> {
        // SAFETY: the buffer holds events.len() entries.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                timeout_ms,
            )
        };
        let n = if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                0
            } else {
                return Err(e);
            }
        } else {
            n as usize
        };
        Ok(self.events[..n].iter().map(|e| (e.u64, e.events)))
    }
}

/// A `T` in a MAP_SHARED mapping of a memfd: writes by other processes mapping the same memfd
/// (the prefork manager, its forked workers) are seen here. `T: FromBytes` (checked by
/// zerocopy's derive: every bit pattern is a valid `T`, so the zero-filled memfd and whatever
/// another process left in it are), `Sync` (it is reached through `&T` from several threads and
/// processes, so it changes only through atomics).
pub struct SharedMem<T> {
    ptr: *mut T,
}

// SAFETY: the mapping is reached only through `&T`, and `T: Sync`.
unsafe impl<T: FromBytes + Sync> Send for SharedMem<T> {}
// SAFETY: as above.
unsafe impl<T: FromBytes + Sync> Sync for SharedMem<T> {}

impl<T: FromBytes + Sync> SharedMem<T> {
    /// A new zeroed mapping and the memfd behind it (close-on-exec; hand it to a child with
    /// [`inherit_fd`]).
    pub fn new_memfd() -> io::Result<(Self, OwnedFd)> {
        // SAFETY: plain syscalls on a descriptor made here; any bytes are a valid T.
        unsafe {
            let fd = cvt(libc::memfd_create(
                c"synlab-counters".as_ptr(),
                libc::MFD_CLOEXEC,
            ))?;
            let fd = OwnedFd::from_raw_fd(fd);
            if libc::ftruncate(fd.as_raw_fd(), Self::len() as libc::off_t) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok((Self::map(fd.as_fd())?, fd))
        }
    }

    /// Maps a memfd made by [`SharedMem::new_memfd`] in another process (the descriptor may be
    /// closed afterwards; the mapping stays). One too small for a `T` is refused.
    pub fn from_fd(fd: BorrowedFd) -> io::Result<Self> {
        // SAFETY: fstat fills a zeroed stat; map checks nothing more is needed (any bytes are a
        // valid T, the size is checked here).
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            cvt(libc::fstat(fd.as_raw_fd(), &mut st))?;
            if (st.st_size as usize) < Self::len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "shared memory fd {} holds {} bytes, {} needed: not the server's counters",
                        fd.as_raw_fd(),
                        st.st_size,
                        Self::len()
                    ),
                ));
            }
            Self::map(fd)
        }
    }

    fn len() -> usize {
        std::mem::size_of::<T>().max(1)
    }

    /// # Safety
    /// `fd` must hold at least `len()` bytes.
    unsafe fn map(fd: BorrowedFd) -> io::Result<Self> {
        let p = libc::mmap(
            std::ptr::null_mut(),
            Self::len(),
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedMem { ptr: p as *mut T })
    }
}

impl<T> std::ops::Deref for SharedMem<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: ptr points to a live, zero-initialised mapping of size_of::<T>().
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for SharedMem<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping the region created in new_zeroed.
        unsafe {
            libc::munmap(
                self.ptr as *mut libc::c_void,
                std::mem::size_of::<T>().max(1),
            );
        }
    }
}

/// Forks a worker process that runs `body` and then `_exit`s; it never returns into the
/// parent's code. The child gets PR_SET_PDEATHSIG(SIGKILL) so it cannot outlive the parent.
/// The parent gets the child's pid.
///
/// Refuses to fork from a multithreaded process: another thread may hold a lock the child
/// needs (SQLite's, the environment's, stdio's) and the child would deadlock on it. The
/// prefork manager is exec'd for this reason and never starts a thread.
/// All descriptors other than 0-2 and `keep_fd` are closed in the child, so it holds no dup of
/// anything else the parent has open (other connections, pipes, a test harness's sockets).
pub fn fork_worker(keep_fd: RawFd, body: impl FnOnce()) -> io::Result<i32> {
    let threads = thread_count()?;
    if threads != 1 {
        return Err(io::Error::other(format!(
            "fork_worker called from a process with {threads} threads: a child forked while \
             another thread holds a lock can deadlock; fork only from a single-threaded process"
        )));
    }
    let parent = std::process::id() as i32;
    // SAFETY: fork; the child runs `body` and exits without unwinding into the parent's stack.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid > 0 {
        return Ok(pid);
    }
    // Child.
    // SAFETY: prctl/getppid/_exit are async-signal-safe.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(0);
        }
        if keep_fd > 3 {
            libc::syscall(libc::SYS_close_range, 3u32, (keep_fd - 1) as u32, 0u32);
        }
        libc::syscall(
            libc::SYS_close_range,
            (keep_fd.max(2) + 1) as u32,
            u32::MAX,
            0u32,
        );
    }
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
    // SAFETY: leaving the child without running the parent's destructors or atexit handlers.
    unsafe { libc::_exit(if r.is_ok() { 0 } else { 101 }) }
}

/// Threads of this process (the `Threads:` line of /proc/self/status).
pub fn thread_count() -> io::Result<usize> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::other("no Threads: line in /proc/self/status"))
}

/// Lets `fd` survive exec (clears FD_CLOEXEC). Async-signal-safe: usable between fork and exec.
pub fn inherit_fd(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller holds.
    unsafe {
        let flags = cvt(libc::fcntl(fd, libc::F_GETFD))?;
        cvt(libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC))?;
    }
    Ok(())
}

/// Marks `fd` close-on-exec (what a descriptor inherited from our parent should become).
pub fn set_cloexec(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor the caller holds.
    unsafe {
        let flags = cvt(libc::fcntl(fd, libc::F_GETFD))?;
        cvt(libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC))?;
    }
    Ok(())
}

/// Asks for SIGKILL when the thread that started us dies (async-signal-safe).
pub fn die_with_parent() {
    // SAFETY: prctl with plain integer arguments.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
    }
}

/// Our parent's pid now (1 or a subreaper once the parent is gone).
pub fn parent_pid() -> i32 {
    // SAFETY: getppid cannot fail.
    unsafe { libc::getppid() }
}

/// Ignores SIGINT in this process and the children it forks: a Ctrl-C at the terminal goes to
/// the whole process group, and the prefork manager stops when its server tells it to.
pub fn ignore_sigint() {
    // SAFETY: installing SIG_IGN has no handler code to be unsafe in.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_IGN);
    }
}

/// Sends `sig` to one process we started (by pid; an error, the process already gone, is
/// harmless).
pub fn kill_pid(pid: i32, sig: super::Signal) {
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig);
}

/// Lets `fds` survive into the child `cmd` starts (and has the child die with us): the
/// prefork manager gets the listener and the counters' memfd this way.
pub fn pass_fds(cmd: &mut std::process::Command, fds: [RawFd; 2]) {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (prctl, fcntl) between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            die_with_parent();
            for fd in fds {
                inherit_fd(fd)?;
            }
            Ok(())
        });
    }
}

/// Takes ownership of descriptor `fd`, inherited from our parent under this number: checked
/// open, marked close-on-exec.
pub fn adopt_fd(fd: RawFd) -> io::Result<OwnedFd> {
    set_cloexec(fd)?;
    // SAFETY: fcntl just showed `fd` open; our parent passed it to us and nothing else here
    // owns it (the caller adopts each inherited number once).
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Has this child of ours exited? Reaps it if so (never blocks, never touches other children).
pub fn try_reap(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    r == pid || (r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// Waits for one specific child (blocking).
pub fn wait_pid(pid: i32) {
    let mut status = 0;
    // SAFETY: status is a valid out-pointer.
    unsafe {
        libc::waitpid(pid, &mut status, 0);
    }
}
