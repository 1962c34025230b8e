//! The established connections of one local port as the kernel holds them (sock_diag with
//! tcp_info): the bytes waiting in each one's receive queue (read by no one yet) and send
//! queue (not yet acknowledged), and its retransmissions. Over HTTP/2 a few connections carry
//! every request, so overload queues there, not in the accept queue.

use super::sockdiag::{state, states_mask, DiagSocket, SockDiag};

/// The port's established connections, summed up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnQueues {
    pub conns: u64,
    /// Bytes in the receive queues (the server has not read), summed and the largest.
    pub recvq_sum: u64,
    pub recvq_max: u64,
    /// Bytes in the send queues (sent or not, not acknowledged), summed and the largest.
    pub sendq_sum: u64,
    pub sendq_max: u64,
    /// Segments retransmitted over the connections' lives (tcp_info `total_retrans`), summed.
    pub retrans: u64,
}

impl ConnQueues {
    /// The ESTABLISHED sockets of a dump (one asked with tcp_info, for the retransmissions).
    pub fn of(socks: &[DiagSocket]) -> Self {
        let mut q = ConnQueues::default();
        for s in socks.iter().filter(|s| s.state == state::ESTABLISHED) {
            q.add(s.rqueue, s.wqueue, s.total_retrans);
        }
        q
    }

    /// The mean bytes waiting per connection in the receive and send queues (0 without any).
    pub fn means(&self) -> (f64, f64) {
        let n = self.conns.max(1) as f64;
        (self.recvq_sum as f64 / n, self.sendq_sum as f64 / n)
    }

    fn add(&mut self, rq: u32, wq: u32, retrans: Option<u32>) {
        self.conns += 1;
        self.recvq_sum += rq as u64;
        self.recvq_max = self.recvq_max.max(rq as u64);
        self.sendq_sum += wq as u64;
        self.sendq_max = self.sendq_max.max(wq as u64);
        self.retrans += retrans.unwrap_or(0) as u64;
    }
}

/// The established connections of local port `sport` in the namespace `d` was opened in.
pub fn conn_queues(d: &mut SockDiag, sport: u16) -> std::io::Result<ConnQueues> {
    let socks = d.dump_with_info(states_mask(&[state::ESTABLISHED]), sport)?;
    Ok(ConnQueues::of(&socks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_connections_queues_and_retransmissions_are_read_from_the_kernel() {
        // A loopback connection whose server side has 5,000 bytes it has not read.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&[7u8; 5000]).unwrap();
        let mut d = SockDiag::open().unwrap();
        let t0 = std::time::Instant::now();
        let q = loop {
            let q = conn_queues(&mut d, port).unwrap();
            if q.recvq_sum == 5000 || t0.elapsed().as_secs() > 5 {
                break q;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        assert_eq!(
            (q.conns, q.recvq_sum, q.recvq_max),
            (1, 5000, 5000),
            "{q:?}"
        );
        assert_eq!((q.sendq_sum, q.retrans), (0, 0), "{q:?}");
        assert_eq!(q.means(), (5000.0, 0.0));
        let mut buf = vec![0u8; 5000];
        s.read_exact(&mut buf).unwrap();
        assert_eq!(conn_queues(&mut d, port).unwrap().recvq_sum, 0);
    }
}
