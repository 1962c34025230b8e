//! One connection's state machine: its slab entry (`Conn`, `Phase`), the attempt (socket, bind,
//! connect, the request sent with the connect when the handshake is already done), its
//! readiness events, its errors counted, and its end.

use super::Engine;
use crate::load::http::ResponseParser;
use crate::metrics::hist::record;
use crate::sys::client_io::{self as io, ConnectStart};
use std::os::fd::RawFd;

/// Pause before retrying after the kernel refused a socket or a port (EMFILE, EADDRNOTAVAIL).
const RESOURCE_BACKOFF_NS: u64 = 1_000_000;

pub const PORTS_NOTICE: &str =
    "ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or add client addresses";
pub const FDS_NOTICE: &str =
    "out of file descriptors: raise the hard RLIMIT_NOFILE (ulimit -Hn) or lower sockets/clients";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    Free,
    Connecting,
    Sending,
    Receiving,
    /// HTTP/1.0 response complete; waiting for the server's FIN so TIME_WAIT stays on its side.
    Draining,
    /// Keep-alive closed client thinking before its next request on this connection.
    Idle,
}

/// Readiness a connection waits for once its request is out; `EV_OUT` is added while a request
/// still has bytes to send.
pub(super) const EV_RESPONSE: u32 = io::EV_IN | io::EV_RDHUP | io::EV_ET;

/// Whether to send the request right after connect(): kept up while it works (loopback), and
/// on a path where handshakes take a round trip (the lab's), tried only every 64th attempt,
/// so a send that finds SYN_SENT costs almost nothing.
#[derive(Debug)]
pub(super) struct EarlySend {
    score: i32,
    attempts: u32,
}

impl Default for EarlySend {
    fn default() -> Self {
        EarlySend {
            score: 4,
            attempts: 0,
        }
    }
}

impl EarlySend {
    fn try_now(&mut self) -> bool {
        self.attempts = self.attempts.wrapping_add(1);
        self.score > 0 || self.attempts.is_multiple_of(64)
    }
    fn hit(&mut self) {
        self.score = (self.score + 1).min(16);
    }
    fn missed(&mut self) {
        self.score = (self.score - 4).max(0);
    }
}

#[derive(Clone, Copy)]
pub(super) struct Conn {
    pub(super) fd: RawFd,
    pub(super) gen: u32,
    pub(super) phase: Phase,
    /// Belongs to a closed-mode client (which wakes again when this connection ends).
    pub(super) client: bool,
    pub(super) saw_first_byte: bool,
    /// Scheduled start of the current request (the attempt's for the first one), ns.
    pub(super) sched_ns: u64,
    pub(super) deadline_ns: u64,
    pub(super) req: u16,
    pub(super) sent: u32,
    pub(super) requests: u32,
    /// Registered for EPOLLOUT (not when the request went out with the connect).
    pub(super) out_armed: bool,
    pub(super) parser: ResponseParser,
}

impl Conn {
    pub(super) const FREE: Conn = Conn {
        fd: -1,
        gen: 0,
        phase: Phase::Free,
        client: false,
        saw_first_byte: false,
        sched_ns: 0,
        deadline_ns: 0,
        req: 0,
        sent: 0,
        requests: 0,
        out_armed: false,
        parser: ResponseParser::DEFAULT,
    };
}

impl Engine {
    /// Opens a socket and starts a non-blocking connect whose scheduled start was `sched`.
    pub(super) fn start_attempt(&mut self, sched: u64, now: u64, client: bool) {
        self.stats.counts.attempts += 1;
        let fd = match io::tcp_socket(self.target.family()) {
            Ok(fd) => fd,
            Err(e) => return self.attempt_failed(e, now, client),
        };
        if !self.cfg.bind_addrs.is_empty() {
            let ip = self.cfg.bind_addrs[self.bind_next % self.cfg.bind_addrs.len()];
            self.bind_next = self.bind_next.wrapping_add(1);
            if let Err(e) = io::bind_source(fd, ip) {
                io::close(fd);
                if e == libc::EADDRNOTAVAIL {
                    // Not a port shortage: the source address is not on this host.
                    self.stats.counts.other_errors += 1;
                    if !self.told_bind {
                        self.told_bind = true;
                        self.notices.push(format!(
                            "cannot bind source address {ip}: it is not configured on this host (check bind_addrs)"
                        ));
                    }
                    return self.attempt_failed(0, now, client);
                }
                return self.attempt_failed(e, now, client);
            }
        }
        let started = match io::connect(fd, &self.target) {
            Ok(s) => s,
            Err(e) => {
                io::close(fd);
                return self.attempt_failed(e, now, client);
            }
        };
        let idx = self.alloc();
        let key = self.key(idx);
        let c = &mut self.slab[idx];
        c.fd = fd;
        c.client = client;
        c.sched_ns = sched;
        c.deadline_ns = now;
        c.saw_first_byte = false;
        c.requests = 0;
        c.phase = Phase::Connecting;
        self.connecting += 1;
        if started == ConnectStart::InProgress
            && self.early.try_now()
            && self.send_with_connect(idx, now)
        {
            return;
        }
        // Edge-triggered and registered once: no epoll_ctl MOD between connect, send and receive.
        if let Err(e) = self.epoll.add(fd, EV_RESPONSE | io::EV_OUT, key) {
            io::close(fd);
            self.connecting -= 1;
            self.slab[idx].phase = Phase::Free;
            self.release(idx);
            return self.attempt_failed(e, now, client);
        }
        self.slab[idx].out_armed = true;
        if started == ConnectStart::Connected {
            self.on_established(idx, now);
        } else {
            // A simple client (seed 000 §3) has no short timeout T: it waits out the kernel's
            // own SYN retransmissions (exponential backoff), bounded by the response timeout.
            // That is why closed-loop load cannot push past the server's capacity.
            let wait = if client {
                self.cfg.response_timeout_s
            } else {
                self.cfg.timeout_s
            };
            let deadline = now + (wait * 1e9) as u64;
            self.arm(idx, deadline);
        }
    }

    /// A socket, bind or connect call failed before the connection existed.
    /// `e` = 0: already counted by the caller.
    pub(super) fn attempt_failed(&mut self, e: io::Errno, now: u64, client: bool) {
        if e != 0 {
            self.count_error(e);
        }
        if matches!(
            e,
            libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS | libc::ENOMEM
        ) {
            self.backoff_until_ns = now + RESOURCE_BACKOFF_NS;
        }
        if client {
            self.client_done(now.max(self.backoff_until_ns));
        }
    }

    pub(super) fn count_error(&mut self, e: io::Errno) {
        let s = &mut self.stats.counts;
        match e {
            libc::ECONNREFUSED => s.refused += 1,
            libc::ECONNRESET | libc::EPIPE => s.resets += 1,
            libc::EADDRNOTAVAIL => {
                s.addr_not_avail += 1;
                if !self.told_ports {
                    self.told_ports = true;
                    self.notices.push(PORTS_NOTICE.into());
                }
            }
            libc::EMFILE | libc::ENFILE => {
                s.out_of_fds += 1;
                if !self.told_fds {
                    self.told_fds = true;
                    self.notices.push(FDS_NOTICE.into());
                }
            }
            libc::ETIMEDOUT => s.connect_timeouts += 1,
            _ => s.other_errors += 1,
        }
    }

    pub(super) fn on_event(&mut self, key: u64, bits: u32, buf: &mut [u8]) {
        let idx = (key & 0xffff_ffff) as usize;
        if idx >= self.slab.len() || self.slab[idx].gen as u64 != key >> 32 {
            return; // the connection ended earlier in this batch
        }
        let now = self.now_ns();
        if self.slab[idx].phase == Phase::Connecting {
            if bits & (io::EV_ERR | io::EV_HUP) != 0 {
                let fd = self.slab[idx].fd;
                let e = io::socket_error(fd);
                self.count_error(if e == 0 { libc::ECONNRESET } else { e });
                self.finish(idx, now);
                return;
            }
            if bits & io::EV_OUT == 0 {
                return;
            }
            self.on_established(idx, now);
            if self.slab[idx].gen as u64 != key >> 32 {
                return;
            }
        } else if self.slab[idx].phase == Phase::Sending && bits & (io::EV_OUT | io::EV_ERR) != 0 {
            self.send_more(idx, now);
            if self.slab[idx].gen as u64 != key >> 32 {
                return;
            }
        }
        let phase = self.slab[idx].phase;
        if matches!(phase, Phase::Receiving | Phase::Draining | Phase::Idle)
            && bits & (io::EV_IN | io::EV_RDHUP | io::EV_HUP | io::EV_ERR) != 0
        {
            self.read_ready(idx, bits, now, buf);
        }
    }

    pub(super) fn on_established(&mut self, idx: usize, now: u64) {
        self.count_established(idx, now);
        self.begin_request(idx, now);
    }

    pub(super) fn count_established(&mut self, idx: usize, now: u64) {
        self.connecting -= 1;
        self.slot_freed(idx, now);
        self.active += 1;
        self.stats.counts.established += 1;
        let sched = self.slab[idx].sched_ns;
        record(&mut self.hists.connect, now.saturating_sub(sched) / 1000);
    }

    /// Where the handshake completes inside connect() (loopback: the SYN-ACK is processed
    /// before connect returns), sends the first request at once and registers the socket
    /// without EPOLLOUT: one readiness event and its wake-up less per connection. A socket
    /// still in SYN_SENT answers EAGAIN and takes the usual path (false); true when the
    /// connection was dealt with here (its request sent, or it failed and is finished).
    pub(super) fn send_with_connect(&mut self, idx: usize, now: u64) -> bool {
        let req = self.pick_request();
        let fd = self.slab[idx].fd;
        let n = match io::send(fd, &self.requests[req]) {
            Ok(n) => n,
            Err(libc::EAGAIN) => {
                self.early.missed();
                return false;
            }
            Err(e) => {
                // Refused or reset during the handshake: the same count as from an epoll error.
                self.count_error(e);
                self.finish(idx, now);
                return true;
            }
        };
        self.early.hit();
        let whole = n == self.requests[req].len();
        let mask = if whole {
            EV_RESPONSE
        } else {
            EV_RESPONSE | io::EV_OUT
        };
        if let Err(e) = self.epoll.add(fd, mask, self.key(idx)) {
            self.count_error(e);
            self.finish(idx, now);
            return true;
        }
        self.slab[idx].out_armed = !whole;
        // Established when connect() returned, which is after `now` (taken before socket()).
        let t = self.now_ns();
        self.count_established(idx, t);
        self.setup_request(idx, req, t);
        self.request_bytes_sent(idx, n);
        true
    }

    /// Closes a connection and frees its slot; a closed client then thinks and goes again.
    pub(super) fn finish(&mut self, idx: usize, now: u64) {
        let c = self.slab[idx];
        match c.phase {
            Phase::Connecting => {
                self.connecting -= 1;
                // A timed-out slot was due to reconnect at its deadline, not when we noticed.
                self.slot_freed(idx, c.deadline_ns.min(now));
            }
            Phase::Free => return,
            _ => self.active -= 1,
        }
        io::close(c.fd);
        self.slab[idx].phase = Phase::Free;
        self.release(idx);
        if c.client {
            let at = now + (self.cfg.think_s * 1e9) as u64;
            self.client_done(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::EarlySend;

    #[test]
    fn early_send_stays_on_while_it_works_and_backs_off_to_one_try_in_64() {
        let mut e = EarlySend::default();
        for _ in 0..100 {
            assert!(e.try_now());
            e.hit();
        }
        // A path with a real round trip: every try misses.
        let mut tries = 0;
        for _ in 0..640 {
            if e.try_now() {
                tries += 1;
                e.missed();
            }
        }
        assert!(tries <= 4 + 10, "{tries} tries in 640 attempts");
        // Back on a fast path, the periodic try finds it working again.
        for _ in 0..64 {
            if e.try_now() {
                e.hit();
            }
        }
        assert!(e.try_now());
    }
}
