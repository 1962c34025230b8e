//! The kernel's route to an address, asked without sending anything: a UDP socket's connect
//! looks the route up and picks the source address, and puts nothing on the wire.

use std::net::{IpAddr, SocketAddr, UdpSocket};

/// The source address this namespace's routing would send from to `to`.
pub fn source_for(to: SocketAddr) -> std::io::Result<IpAddr> {
    let any: SocketAddr = if to.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let s = UdpSocket::bind(any)?;
    s.connect(to)?;
    Ok(s.local_addr()?.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_reached_from_loopback() {
        let src = source_for("127.0.0.1:9".parse().unwrap()).unwrap();
        assert!(src.is_loopback(), "{src}");
    }
}
