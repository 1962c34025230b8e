//! The TCP transport: a non-blocking socket, bound to a source address when asked, its connect
//! begun. The engine registers it with epoll and reads and writes it (or hands it to the
//! security layer); a UDP transport for QUIC is the next one beside it.

use crate::sys::client_io::{ConnectStart, Errno, RawAddr, TcpSocket};
use std::net::IpAddr;

/// Which step of opening a connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    Socket(Errno),
    Bind(Errno),
    Connect(Errno),
}

/// Opens a socket (bound to `source` if given) and begins its connect to `target`.
pub fn open(
    target: &RawAddr,
    source: Option<IpAddr>,
) -> Result<(TcpSocket, ConnectStart), OpenError> {
    let sock = TcpSocket::for_addr(target).map_err(OpenError::Socket)?;
    if let Some(ip) = source {
        sock.bind_source(ip).map_err(OpenError::Bind)?;
    }
    let started = sock.connect(target).map_err(OpenError::Connect)?;
    Ok((sock, started))
}
