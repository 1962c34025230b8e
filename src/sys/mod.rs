//! The one boundary to the kernel: every call into nix, libc sockets, pcap, netlink and live
//! /proc lives below this module, behind small functions and traits, so the logic above it
//! (scheduling, router timing, parsing, UI) is tested without root.

pub mod acceptq;
pub mod client_io;
pub mod control_packets;
pub mod ethtool;
pub mod files;
pub mod netns;
pub mod packet;
pub mod pidstat;
pub mod privilege;
pub mod process;
pub mod server_io;
pub mod sysctl;
pub mod tracepoint;
pub mod tty;

/// An errno, named (`Errno::EMFILE`): how the layers above tell one kernel refusal from another.
pub use nix::errno::Errno;
/// A signal, named (`Signal::SIGTERM`).
pub use nix::sys::signal::Signal;

/// The errno an I/O error carries, if it came from the kernel.
pub fn errno_of(e: &std::io::Error) -> Option<Errno> {
    e.raw_os_error().map(Errno::from_raw)
}

/// Enters the named netns (/run/netns/NAME) in the calling thread. Used between fork and exec,
/// so it only makes raw, async-signal-safe calls.
pub fn netns_enter_raw(name: &str) -> std::io::Result<()> {
    let mut path = [0u8; 256];
    let prefix = b"/run/netns/";
    let n = name.as_bytes();
    if prefix.len() + n.len() + 1 > path.len() {
        return Err(std::io::Error::from_raw_os_error(libc::ENAMETOOLONG));
    }
    path[..prefix.len()].copy_from_slice(prefix);
    path[prefix.len()..prefix.len() + n.len()].copy_from_slice(n);
    // SAFETY: path is NUL-terminated (zeroed buffer); fd is closed on every path.
    unsafe {
        let fd = libc::open(
            path.as_ptr() as *const libc::c_char,
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let r = libc::setns(fd, libc::CLONE_NEWNET);
        libc::close(fd);
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
pub mod cgi_spawn;
pub mod conn_queues;
pub mod machine;
pub mod pcap;
pub mod procfs;
pub mod quic_packets;
pub mod route;
pub mod seen_table;
pub mod sockdiag;
pub mod udp_mmsg;
pub mod udpdiag;
pub mod userns;
