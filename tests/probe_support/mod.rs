//! Helpers shared by the probe tests: a private netns per test (removed on drop), running a
//! closure inside it, raw listening sockets with a chosen backlog, privilege checks.
#![allow(dead_code)]

use std::net::SocketAddrV4;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// Skips (returns false) or fails when not root, as HELPERS.md asks.
pub fn privileged(what: &str) -> bool {
    let p = synlab::sys::privilege::Privileges::current();
    if p.net_admin && p.sys_admin && p.net_raw {
        return true;
    }
    if synlab::sys::privilege::require_privileged() {
        panic!("{what} needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW)");
    }
    synlab::sys::privilege::say_skipped(&format!(
        "skipping {what}: needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_NET_RAW)"
    ));
    false
}

/// A fresh network namespace with lo up; deleted on drop.
pub struct Netns(pub String);

impl Netns {
    pub fn new() -> Self {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "synlab-t{}-p{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .expect("run ip")
            .success();
        assert!(ok, "ip netns add {name} failed");
        let ns = Netns(name);
        let ok = Command::new("ip")
            .args(["-n", &ns.0, "link", "set", "lo", "up"])
            .status()
            .unwrap()
            .success();
        assert!(ok, "cannot set lo up in {}", ns.0);
        ns
    }

    /// Runs `f` on a new thread inside this netns.
    pub fn spawn<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> std::thread::JoinHandle<T> {
        let name = self.0.clone();
        std::thread::spawn(move || {
            synlab::sys::netns_enter_raw(&name).expect("enter test netns");
            f()
        })
    }

    pub fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        self.spawn(f).join().expect("netns thread panicked")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// A TCP listener on 127.0.0.1:0 with `backlog`, made with libc (std fixes the backlog at 128).
pub struct RawListener {
    pub fd: i32,
    pub port: u16,
}

impl RawListener {
    pub fn new(backlog: i32) -> Self {
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            assert!(fd >= 0);
            let mut sa: libc::sockaddr_in = std::mem::zeroed();
            sa.sin_family = libc::AF_INET as u16;
            sa.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
            let len = std::mem::size_of::<libc::sockaddr_in>() as u32;
            assert_eq!(
                libc::bind(fd, (&sa as *const libc::sockaddr_in).cast(), len),
                0
            );
            assert_eq!(libc::listen(fd, backlog), 0);
            let mut got: libc::sockaddr_in = std::mem::zeroed();
            let mut l = len;
            libc::getsockname(fd, (&mut got as *mut libc::sockaddr_in).cast(), &mut l);
            RawListener {
                fd,
                port: u16::from_be(got.sin_port),
            }
        }
    }
}

impl Drop for RawListener {
    fn drop(&mut self) {
        unsafe { libc::close(self.fd) };
    }
}

/// Starts a non-blocking connect to `to`; Some(fd) if the SYN went out (EINPROGRESS or done).
pub fn connect_nonblocking(to: SocketAddrV4) -> Option<i32> {
    unsafe {
        let fd = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return None;
        }
        let mut sa: libc::sockaddr_in = std::mem::zeroed();
        sa.sin_family = libc::AF_INET as u16;
        sa.sin_port = to.port().to_be();
        sa.sin_addr.s_addr = u32::from_ne_bytes(to.ip().octets());
        let r = libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as u32,
        );
        let err = std::io::Error::last_os_error().raw_os_error();
        if r == 0 || err == Some(libc::EINPROGRESS) {
            Some(fd)
        } else {
            libc::close(fd);
            None
        }
    }
}
