//! The TUI's terminal as the kernel sees it: whether input is waiting or the terminal has gone
//! away (a hangup: the window or the emulator was closed), and detaching from a dead one.
//!
//! When a pseudo-terminal's master closes, the kernel hangs the terminal up: reads return end
//! of file, writes fail with EIO, poll(2) reports POLLHUP, and only the session leader gets
//! SIGHUP (a program started by a shell in the window gets none). A terminal library that reads
//! until "would block" then spins on the end of file; so the TUI asks here first, and never
//! hands a hung-up terminal to it.

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

/// What the terminal has for us.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// Input is waiting to be read.
    Input,
    /// Nothing came within the timeout.
    Quiet,
    /// The terminal hung up (or its descriptor is no longer valid): nothing more will come.
    Gone,
}

/// The terminal the TUI reads keys from: stdin when it is a terminal, else /dev/tty (as the
/// terminal library picks it).
pub struct Tty {
    /// Set when we opened /dev/tty ourselves.
    owned: Option<File>,
}

impl Tty {
    /// The input terminal, or an error when there is none.
    pub fn open() -> io::Result<Self> {
        if nix::unistd::isatty(io::stdin().as_raw_fd()).unwrap_or(false) {
            return Ok(Tty { owned: None });
        }
        let f = File::options().read(true).write(true).open("/dev/tty")?;
        Ok(Tty { owned: Some(f) })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        match &self.owned {
            Some(f) => f.as_fd(),
            // SAFETY: fd 0 stays open for the life of the process (only ever replaced by dup2).
            None => unsafe { BorrowedFd::borrow_raw(0) },
        }
    }

    /// Waits up to `timeout` for input; `Gone` as soon as the terminal has hung up.
    pub fn wait(&self, timeout: Duration) -> io::Result<Readiness> {
        wait_fd(self.fd(), timeout)
    }

    /// Whether the terminal has hung up, without waiting.
    pub fn hung_up(&self) -> bool {
        matches!(
            wait_fd(self.fd(), Duration::ZERO),
            Ok(Readiness::Gone) | Err(_)
        )
    }
}

/// poll(2) on one descriptor for input, with the hangup and error conditions told apart.
fn wait_fd(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<Readiness> {
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    loop {
        match poll(
            &mut fds,
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(0) => return Ok(Readiness::Quiet),
            Ok(_) => break,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    let r = fds[0].revents().unwrap_or(PollFlags::empty());
    if r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL) {
        Ok(Readiness::Gone)
    } else if r.contains(PollFlags::POLLIN) {
        Ok(Readiness::Input)
    } else {
        Ok(Readiness::Quiet)
    }
}

/// Whether an error writing to the terminal means it has gone away (EIO after a hangup,
/// ENXIO, a closed pipe or descriptor).
pub fn is_gone_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO) | Some(libc::ENXIO) | Some(libc::EPIPE) | Some(libc::EBADF)
    ) || e.kind() == io::ErrorKind::BrokenPipe
}

/// Points stdin, stdout and stderr (where they are terminals) away from a terminal that has
/// gone: writes then go to /dev/null (every later line, the terminal restore included, is
/// dropped instead of failing), and reads find an empty pipe that is never written ("would
/// block", so a reader that was spinning on the hung-up terminal returns). The run itself
/// goes on to write its folder. Idempotent.
pub fn detach_from_terminal() -> io::Result<()> {
    use std::sync::OnceLock;
    // The pipe's write end is kept open for the life of the process, so reads never see EOF.
    static INERT: OnceLock<(OwnedFd, OwnedFd)> = OnceLock::new();
    let (read_end, _) = match INERT.get() {
        Some(p) => p,
        None => {
            let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
            let flags = nix::fcntl::fcntl(r.as_raw_fd(), nix::fcntl::F_GETFL)?;
            let flags =
                nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
            nix::fcntl::fcntl(r.as_raw_fd(), nix::fcntl::F_SETFL(flags))?;
            let _ = INERT.set((r, w));
            INERT.get().expect("just set")
        }
    };
    let null = File::options().write(true).open("/dev/null")?;
    let targets: [(RawFd, RawFd); 3] = [
        (read_end.as_raw_fd(), 0),
        (null.as_raw_fd(), 1),
        (null.as_raw_fd(), 2),
    ];
    for (from, to) in targets {
        // SAFETY: `to` is a standard descriptor number, open for the life of the process.
        let to_fd = unsafe { BorrowedFd::borrow_raw(to) };
        if !nix::unistd::isatty(to).unwrap_or(false) && !hung_up_fd(to_fd) {
            continue;
        }
        // SAFETY: dup2 onto a standard descriptor: it replaces what fd `to` refers to; no
        // Rust object owns fds 0-2 exclusively.
        if unsafe { libc::dup2(from, to) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A descriptor whose terminal hung up (isatty may already say no for it).
fn hung_up_fd(fd: BorrowedFd<'_>) -> bool {
    matches!(wait_fd(fd, Duration::ZERO), Ok(Readiness::Gone))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;

    #[test]
    fn a_pty_says_quiet_then_input_then_gone_when_its_master_closes() {
        // Both ends opened close-on-exec: tests run on threads, and a child another test
        // starts meanwhile (insta runs `cargo metadata`) would hold an inherited master open,
        // so the slave never hangs up (openpty(3) sets no O_CLOEXEC).
        use nix::fcntl::OFlag;
        let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
            .expect("a pseudo-terminal");
        nix::pty::grantpt(&master).unwrap();
        nix::pty::unlockpt(&master).unwrap();
        let name = nix::pty::ptsname_r(&master).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open(&name)
            .map(OwnedFd::from)
            .expect("the pseudo-terminal's slave");
        assert_eq!(
            wait_fd(slave.as_fd(), Duration::from_millis(10)).unwrap(),
            Readiness::Quiet
        );
        // SAFETY: the PtyMaster's descriptor, whose ownership into_raw_fd hands over.
        let mut master = File::from(unsafe {
            <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(std::os::fd::IntoRawFd::into_raw_fd(
                master,
            ))
        });
        master.write_all(b"q\n").unwrap();
        assert_eq!(
            wait_fd(slave.as_fd(), Duration::from_secs(5)).unwrap(),
            Readiness::Input
        );
        drop(master);
        // The kernel hangs the slave up once its master is gone.
        assert_eq!(
            wait_fd(slave.as_fd(), Duration::from_secs(5)).unwrap(),
            Readiness::Gone
        );
        // And a write to it fails the way the TUI treats as "gone".
        let mut s = File::from(slave);
        let e = s
            .write_all(b"x")
            .expect_err("writes to a hung-up terminal fail");
        assert!(is_gone_error(&e), "{e:?}");
    }
}
