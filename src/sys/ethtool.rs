//! Offloads off through the SIOCETHTOOL ioctl (no `ethtool` binary): TSO, GSO, GRO,
//! scatter-gather and tx checksum, so AF_PACKET sees wire-sized frames with final checksums.

use std::io;

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_SSG: u32 = 0x19;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

fn ethtool(dev: &str, cmd: u32, data: u32) -> io::Result<u32> {
    if dev.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{dev}` is longer than 15 chars"),
        ));
    }
    let mut val = EthtoolValue { cmd, data };
    // SAFETY: ifreq is zeroed POD; ifru_data points at `val`, alive across the ioctl; the
    // socket is closed before returning.
    unsafe {
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (d, s) in ifr.ifr_name.iter_mut().zip(dev.bytes()) {
            *d = s as libc::c_char;
        }
        ifr.ifr_ifru.ifru_data = (&mut val as *mut EthtoolValue).cast();
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return Err(io::Error::last_os_error());
        }
        let r = libc::ioctl(sock, SIOCETHTOOL as _, &mut ifr);
        let e = io::Error::last_os_error();
        libc::close(sock);
        if r < 0 {
            return Err(e);
        }
    }
    Ok(val.data)
}

/// Turns the offloads off on `dev` in the calling thread's netns. Tx checksum must go off;
/// the others are skipped where the driver does not have them.
pub fn offloads_off(dev: &str) -> io::Result<()> {
    ethtool(dev, ETHTOOL_STXCSUM, 0)
        .map_err(|e| io::Error::new(e.kind(), format!("tx checksum offload off on {dev}: {e}")))?;
    for cmd in [ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO, ETHTOOL_SSG] {
        match ethtool(dev, cmd, 0) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("offload {cmd:#x} off on {dev}: {e}"),
                ))
            }
        }
    }
    Ok(())
}

/// Whether tx checksum offload is on for `dev` (calling thread's netns).
pub fn tx_checksum_on(dev: &str) -> io::Result<bool> {
    ethtool(dev, ETHTOOL_GTXCSUM, 0).map(|v| v != 0)
}
