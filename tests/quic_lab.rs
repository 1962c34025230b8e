//! issue 47: what the kernel allows for a QUIC server's socket buffer. net.core.rmem_max is
//! not per network namespace on this kernel: a fresh namespace shows it read-only, so the
//! scenario key `network.sysctl.server.rmem_max` is refused (src/net/spec.rs,
//! RMEM_MAX_REFUSED) and the built-in server's `target.rcvbuf` forces its own buffer instead.

use std::process::Command;

/// Root only (a new network namespace): writing rmem_max's own value in a fresh namespace
/// fails, so it cannot be set there; the host's value is never touched (the write happens in
/// the new namespace, and would write the same value).
#[test]
fn rmem_max_is_read_only_in_a_new_network_namespace() {
    if !synlab::sys::privilege::effective_root() {
        synlab::sys::privilege::skip_unless_required("rmem_max in a new network namespace");
        return;
    }
    let out = Command::new("unshare")
        .args([
            "-n",
            "sh",
            "-c",
            "v=$(cat /proc/sys/net/core/rmem_max); echo $v > /proc/sys/net/core/rmem_max \
             && echo writable || echo read-only",
        ])
        .output()
        .expect("unshare runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.trim(), "read-only", "{said} {:?}", out.stderr);
}

/// The built-in server's rcvbuf is forced past rmem_max (SO_RCVBUFFORCE, as root) and the
/// kernel keeps double the asked (its bookkeeping share).
#[test]
fn rcvbuf_is_forced_past_rmem_max_as_root() {
    let s = synlab::sys::udp_mmsg::UdpSock::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let rmem_max: u32 = std::fs::read_to_string("/proc/sys/net/core/rmem_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let asked = rmem_max.saturating_mul(2).min(256 << 20);
    let kept = s.set_rcvbuf(asked).unwrap();
    if synlab::sys::privilege::effective_root() {
        assert_eq!(kept, asked * 2);
    } else {
        assert_eq!(kept, rmem_max * 2, "capped at rmem_max without privilege");
    }
}
