//! The TLS security layer: a rustls client connection over the engine's own socket, its
//! handshake non-blocking in the engine's edge-triggered loop (`read_tls` /
//! `process_new_packets` / `write_tls`), resumed or full as the worker's schedule planned, then
//! the requests' plaintext through it.

use super::{SecError, SecRead, Security, Wire};
use crate::sys::client_io::{Errno, TcpSocket};
use crate::tls::client::{classify, failure_words, HandshakeFailure, TlsClient};
use crate::tls::schedule::Plan;
use rustls::ClientConnection;
use std::cell::RefCell;
use std::io::{ErrorKind, Read, Write};
use std::rc::Rc;

/// One connection's TLS.
pub struct TlsLayer {
    conn: ClientConnection,
    /// Whether the schedule meant it to resume.
    plan: Plan,
    client: Rc<RefCell<TlsClient>>,
    /// The handshake was reported done or abandoned to the schedule.
    settled: bool,
}

impl TlsLayer {
    /// Begins a connection's TLS (its ClientHello is ready to go out).
    pub fn start(client: &Rc<RefCell<TlsClient>>) -> Result<TlsLayer, SecError> {
        let (conn, plan) = client
            .borrow_mut()
            .start()
            // rustls refused to build a ClientHello from our own config: counted, not hidden.
            .map_err(|e| SecError::Protocol {
                kind: HandshakeFailure::Protocol,
                words: Some(failure_words(&e)),
            })?;
        Ok(TlsLayer {
            conn,
            plan,
            client: Rc::clone(client),
            settled: false,
        })
    }

    /// Reads records from the socket and processes them: Ok(None) when some came, else what
    /// stopped the read. A TLS error is sent to the server as its alert first (best effort).
    fn read_records(
        &mut self,
        sock: &TcpSocket,
        wire: &mut Wire,
    ) -> Result<Option<SecRead>, SecError> {
        let mut s = sock;
        match self.conn.read_tls(&mut s) {
            Ok(0) => return Ok(Some(SecRead::Eof)),
            Ok(n) => wire.bytes_in += n as u64,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(Some(SecRead::WouldBlock)),
            Err(e) if e.kind() == ErrorKind::Interrupted => return Ok(None),
            Err(e) => return Err(SecError::Sys(Errno::of_io(&e))),
        }
        if let Err(e) = self.conn.process_new_packets() {
            let _ = self.conn.write_tls(&mut s);
            return Err(SecError::Protocol {
                kind: classify(&e),
                words: Some(failure_words(&e)),
            });
        }
        Ok(None)
    }
}

impl Security for TlsLayer {
    fn handshake(&mut self, sock: &TcpSocket, wire: &mut Wire) -> Result<Option<bool>, SecError> {
        loop {
            if !self.conn.is_handshaking() {
                // Done: our Finished goes out with the first request (or at once, for a
                // connection that waits for one: the driver flushes it).
                self.settled = true;
                let resumed = self.client.borrow_mut().completed(self.plan, &self.conn);
                return Ok(Some(resumed));
            }
            self.flush(sock, wire).map_err(SecError::Sys)?;
            match self.read_records(sock, wire)? {
                None => {}
                Some(SecRead::WouldBlock) => return Ok(None),
                // Closed before the handshake was done, without an alert.
                Some(_) => {
                    return Err(SecError::Protocol {
                        kind: HandshakeFailure::Protocol,
                        words: None,
                    })
                }
            }
        }
    }

    fn send(&mut self, sock: &TcpSocket, plain: &[u8], wire: &mut Wire) -> Result<bool, Errno> {
        if !plain.is_empty() {
            self.conn
                .writer()
                .write_all(plain)
                .map_err(|e| Errno::of_io(&e))?;
        }
        self.flush(sock, wire)
    }

    fn flush(&mut self, sock: &TcpSocket, wire: &mut Wire) -> Result<bool, Errno> {
        let mut s = sock;
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut s) {
                Ok(n) => wire.bytes_out += n as u64,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Errno::of_io(&e)),
            }
        }
        Ok(true)
    }

    fn recv(
        &mut self,
        sock: &TcpSocket,
        buf: &mut [u8],
        wire: &mut Wire,
    ) -> Result<SecRead, SecError> {
        loop {
            // Whatever the records held comes first, also when the server closed after them.
            match self.conn.reader().read(buf) {
                Ok(0) => return Ok(SecRead::Eof),
                Ok(n) => return Ok(SecRead::Data(n)),
                // Closed without close_notify: the end of the stream all the same (HTTP/1.0
                // servers often do; the response's length says whether it was complete).
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(SecRead::Eof),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(_) => return Err(SecError::BadStream),
            }
            match self.read_records(sock, wire)? {
                None => {}
                Some(SecRead::Eof) => {
                    // rustls now answers the plaintext read with what is left, then the end.
                    if let Ok(n @ 1..) = self.conn.reader().read(buf) {
                        return Ok(SecRead::Data(n));
                    }
                    return Ok(SecRead::Eof);
                }
                Some(other) => return Ok(other),
            }
        }
    }

    fn abandon(&mut self) {
        if !self.settled {
            self.settled = true;
            self.client.borrow_mut().failed(self.plan);
        }
    }

    fn alpn(&self) -> Option<Vec<u8>> {
        self.conn.alpn_protocol().map(<[u8]>::to_vec)
    }
}
