//! The TLS security layer: a rustls client connection over the engine's own socket, its
//! handshake non-blocking in the engine's edge-triggered loop (`read_tls` /
//! `process_new_packets` / `write_tls`), resumed or full as the worker's schedule planned, then
//! the requests' plaintext through it.

use super::{SecError, SecRead, Security, Wire};
use crate::sys::client_io::{Errno, SockError, TcpSocket};
use crate::tls::client::{classify, failure_words, HandshakeFailure, TlsClient};
use crate::tls::schedule::Plan;
use rustls::ClientConnection;
use std::cell::RefCell;
use std::io::{ErrorKind, Read, Write};
use std::rc::Rc;

/// Room kept in front of a batched read's wire bytes for the plaintext they and a record
/// rustls holds from before decrypt to: a TLS record on the wire is at most 18,437 bytes
/// (rustls' MAX_WIRE_SIZE), its plaintext no longer than it.
const RECORD_ROOM: usize = 20 * 1024;
/// The smallest socket read worth batching (rustls reads 4 KiB at a time on its own).
const MIN_BATCH: usize = 8 * 1024;

/// One connection's TLS.
pub struct TlsLayer {
    conn: ClientConnection,
    /// Whether the schedule meant it to resume.
    plan: Plan,
    client: Rc<RefCell<TlsClient>>,
    /// The handshake was reported done or abandoned to the schedule.
    settled: bool,
    /// The last `recv` emptied the socket (a short read).
    drained: bool,
}

/// What the plaintext reader gave.
enum Plain {
    Got(usize),
    None,
    /// The session ended (close_notify, or the connection's end seen).
    End,
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
            drained: false,
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
            return Err(self.alert(sock, e));
        }
        Ok(None)
    }

    /// The plaintext decrypted so far, into `buf`.
    fn plaintext(&mut self, buf: &mut [u8]) -> Result<Plain, SecError> {
        if buf.is_empty() {
            return Ok(Plain::None);
        }
        match self.conn.reader().read(buf) {
            Ok(0) => Ok(Plain::End),
            Ok(n) => Ok(Plain::Got(n)),
            // Closed without close_notify: the end of the stream all the same (HTTP/1.0
            // servers often do; the response's length says whether it was complete).
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => Ok(Plain::End),
            Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(Plain::None),
            Err(_) => Err(SecError::BadStream),
        }
    }

    /// Hands `wire` (read from the socket) to rustls, its records decrypted into
    /// `buf[*filled..]` as they complete (rustls takes 4 KiB a call and holds 16 KiB of
    /// plaintext at most, so the two alternate).
    fn decrypt(
        &mut self,
        sock: &TcpSocket,
        buf: &mut [u8],
        wire_at: usize,
        wire_len: usize,
        filled: &mut usize,
    ) -> Result<bool, SecError> {
        let mut at = wire_at;
        let end = wire_at + wire_len;
        while at < end {
            let mut rest = &buf[at..end];
            let took = self
                .conn
                .read_tls(&mut rest)
                .map_err(|_| SecError::BadStream)?;
            if took == 0 {
                return Ok(true); // after close_notify rustls takes no more
            }
            at += took;
            if let Err(e) = self.conn.process_new_packets() {
                return Err(self.alert(sock, e));
            }
            // The plaintext stays in front of the wire bytes not yet taken (RECORD_ROOM).
            loop {
                match self.plaintext(&mut buf[*filled..at])? {
                    Plain::Got(n) => *filled += n,
                    Plain::None => break,
                    Plain::End => return Ok(true),
                }
            }
        }
        Ok(false)
    }

    /// A TLS error: sent to the server as its alert first (best effort).
    fn alert(&mut self, sock: &TcpSocket, e: rustls::Error) -> SecError {
        let mut s = sock;
        let _ = self.conn.write_tls(&mut s);
        SecError::Protocol {
            kind: classify(&e),
            words: Some(failure_words(&e)),
        }
    }

    /// One socket read for many records, into the back of `buf` (the plaintext goes to its
    /// front): what it gave, None when `buf` has no room to batch in.
    fn batched_read(
        &mut self,
        sock: &TcpSocket,
        buf: &mut [u8],
        filled: &mut usize,
        wire: &mut Wire,
    ) -> Result<Option<SecRead>, SecError> {
        let at = *filled + RECORD_ROOM;
        if buf.len() < at + MIN_BATCH {
            return Ok(None);
        }
        let want = buf.len() - at;
        let n = match sock.recv(&mut buf[at..]) {
            Ok(0) => {
                // The connection's end: rustls is told, what it holds comes out, then the end.
                let _ = self.conn.read_tls(&mut &b""[..]);
                return Ok(Some(SecRead::Eof));
            }
            Ok(n) => n,
            Err(e) if e.kind() == SockError::WouldBlock => {
                self.drained = true;
                return Ok(Some(SecRead::WouldBlock));
            }
            Err(e) => return Err(SecError::Sys(e)),
        };
        wire.bytes_in += n as u64;
        // A short read emptied the socket: what arrives later is a new edge (epoll ET).
        self.drained = n < want;
        if self.decrypt(sock, buf, at, n, filled)? {
            return Ok(Some(SecRead::Eof));
        }
        Ok(Some(SecRead::Data(*filled)))
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
        self.drained = false;
        let mut filled = match self.plaintext(buf)? {
            Plain::Got(n) => n,
            Plain::None => 0,
            Plain::End => return Ok(SecRead::Eof),
        };
        // Read batching: one read of the socket for all its records, decrypted at once.
        loop {
            match self.batched_read(sock, buf, &mut filled, wire)? {
                None => break,
                Some(SecRead::Eof) => {
                    // What came before the end first; the next call says the end.
                    if filled == 0 {
                        if let Plain::Got(n) = self.plaintext(buf)? {
                            return Ok(SecRead::Data(n));
                        }
                        return Ok(SecRead::Eof);
                    }
                    return Ok(SecRead::Data(filled));
                }
                Some(SecRead::WouldBlock) if filled == 0 => return Ok(SecRead::WouldBlock),
                Some(_) if filled > 0 => return Ok(SecRead::Data(filled)),
                // Only part of a record came: read on, unless the socket is empty.
                Some(_) if self.drained => return Ok(SecRead::WouldBlock),
                Some(_) => {}
            }
        }
        if filled > 0 {
            return Ok(SecRead::Data(filled));
        }
        // `buf` too small to batch in: rustls reads the socket on its own.
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

    fn drained(&self) -> bool {
        self.drained
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::client_io::RawAddr;
    use crate::tls::cert::LabCert;
    use crate::tls::{ClientTls, KeyKind, ServerTls};
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::mpsc;

    /// A TLS 1.3 server on loopback that, once its handshake is done, sends `records` records
    /// of `len` bytes, says so on the channel, waits for the word to close (close_notify).
    fn server(
        records: usize,
        len: usize,
    ) -> (std::net::SocketAddr, mpsc::Receiver<()>, mpsc::Sender<()>) {
        let dir = tempfile::tempdir().unwrap();
        let files = LabCert::generate(KeyKind::EcdsaP256, None)
            .unwrap()
            .write(dir.path())
            .unwrap();
        let config = crate::tls::server::config(&ServerTls {
            cert: files.cert,
            key: files.key,
            session_cache: false,
            tickets: false,
        })
        .unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (sent_tx, sent_rx) = mpsc::channel();
        let (close_tx, close_rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            let _dir = dir;
            let (tcp, _) = listener.accept().unwrap();
            // Each record leaves at once (no Nagle delay behind an unacknowledged one).
            tcp.set_nodelay(true).unwrap();
            let conn = rustls::ServerConnection::new(config).unwrap();
            let mut s = rustls::StreamOwned::new(conn, tcp);
            for _ in 0..records {
                // One write, one record.
                s.write_all(&vec![b'x'; len]).unwrap();
                s.flush().unwrap();
            }
            sent_tx.send(()).unwrap();
            let _ = close_rx.recv();
            s.conn.send_close_notify();
            let _ = s.flush();
            sent_tx.send(()).unwrap();
        });
        (addr, sent_rx, close_tx)
    }

    fn client(addr: std::net::SocketAddr) -> (TcpSocket, TlsLayer) {
        let settings = ClientTls {
            version: crate::tls::TlsVersion::V13,
            group: crate::tls::KxGroup::X25519,
            resumed: 0.0,
            resume_by: crate::tls::ResumeBy::Tickets,
            sni: String::new(),
            verify: false,
            ca_pem: String::new(),
            handshake_timeout_s: 5.0,
            offer_h2: false,
            early_data: 0.0,
        };
        let tls = Rc::new(RefCell::new(TlsClient::new(&settings, addr.ip()).unwrap()));
        let (sock, _) = super::super::tcp::open(&RawAddr::new(addr), None).unwrap();
        let mut layer = TlsLayer::start(&tls).unwrap_or_else(|_| panic!("no ClientHello"));
        let mut wire = Wire::default();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // The connect and the handshake, polled (the socket is non-blocking).
        loop {
            match layer.handshake(&sock, &mut wire) {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(SecError::Sys(e)) if e.kind() == SockError::WouldBlock => {}
                Err(SecError::Sys(_)) => {} // still connecting
                Err(_) => panic!("the handshake failed"),
            }
            assert!(std::time::Instant::now() < deadline, "no handshake in 10 s");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // Our Finished.
        while !layer.flush(&sock, &mut wire).unwrap() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        (sock, layer)
    }

    #[test]
    fn one_read_takes_every_record_the_socket_holds_then_the_end() {
        // 12 records of 1,000 bytes: rustls alone reads 4 KiB a time, so 3+ reads and 3+
        // plaintext pieces; batched, one.
        let (addr, sent, close) = server(12, 1000);
        let (sock, mut layer) = client(addr);
        sent.recv().unwrap(); // on loopback the bytes are in our socket once sent
        let mut buf = vec![0u8; 64 * 1024];
        let mut wire = Wire::default();
        let r = layer.recv(&sock, &mut buf, &mut wire).unwrap();
        assert_eq!(r, SecRead::Data(12_000), "one call, every record");
        assert!(buf[..12_000].iter().all(|&b| b == b'x'));
        assert!(layer.drained(), "a short read: the socket is empty");
        assert!(wire.bytes_in > 12_000);
        assert_eq!(
            layer.recv(&sock, &mut buf, &mut wire).unwrap(),
            SecRead::WouldBlock
        );
        close.send(()).unwrap();
        sent.recv().unwrap();
        assert_eq!(
            layer.recv(&sock, &mut buf, &mut wire).unwrap(),
            SecRead::Eof
        );
    }

    #[test]
    fn more_than_a_buffer_comes_out_whole_over_several_reads() {
        // 200 KB: more than a 64 KiB buffer holds, records across the reads' edges.
        let (addr, sent, close) = server(50, 4000);
        let (sock, mut layer) = client(addr);
        let mut buf = vec![0u8; 64 * 1024];
        let mut wire = Wire::default();
        let mut got = 0;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while got < 200_000 {
            match layer.recv(&sock, &mut buf, &mut wire).unwrap() {
                SecRead::Data(n) => {
                    assert!(buf[..n].iter().all(|&b| b == b'x'));
                    got += n;
                }
                SecRead::WouldBlock => std::thread::sleep(std::time::Duration::from_millis(1)),
                SecRead::Eof => panic!("the end before the data"),
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{got} of 200,000 bytes"
            );
        }
        assert_eq!(got, 200_000);
        sent.recv().unwrap();
        close.send(()).unwrap();
        sent.recv().unwrap();
        let mut last = layer.recv(&sock, &mut buf, &mut wire).unwrap();
        while last == SecRead::WouldBlock {
            std::thread::sleep(std::time::Duration::from_millis(1));
            last = layer.recv(&sock, &mut buf, &mut wire).unwrap();
        }
        assert_eq!(last, SecRead::Eof);
    }
}
