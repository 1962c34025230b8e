//! Starts one CGI child the way a CGI server does: fork + exec (not posix_spawn/vfork, so the
//! kernel copies the server's page tables as Apache's fork does), stdout on a pipe, stdin and
//! stderr on /dev/null, PR_SET_PDEATHSIG so a killed server leaves no CGI behind.

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// What one CGI child did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiRun {
    pub pid: u32,
    pub stdout: Vec<u8>,
    /// Exited with status 0.
    pub ok: bool,
}

/// Runs `exe args...` to completion and returns its stdout (at most `max_out` bytes are kept;
/// the rest is read and dropped so the child never blocks on a full pipe).
pub fn fork_exec_capture(exe: &Path, args: &[String], max_out: usize) -> io::Result<CgiRun> {
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: prctl is async-signal-safe. Having a pre_exec hook also makes std use fork+exec
    // rather than posix_spawn, which is the cost model of a CGI server.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let mut out = Vec::with_capacity(1024);
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut chunk = [0u8; 4096];
    let read = loop {
        match stdout.read(&mut chunk) {
            Ok(0) => break Ok(()),
            Ok(n) => {
                let keep = n.min(max_out.saturating_sub(out.len()));
                out.extend_from_slice(&chunk[..keep]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    drop(stdout);
    if read.is_err() {
        let _ = child.kill();
    }
    let status = child.wait()?;
    read?;
    Ok(CgiRun {
        pid,
        stdout: out,
        ok: status.success(),
    })
}
