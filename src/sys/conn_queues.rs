//! The established connections of one local port as the kernel holds them (sock_diag with
//! tcp_info): the bytes waiting in each one's receive queue (read by no one yet) and send
//! queue (not yet acknowledged), and its retransmissions. Over HTTP/2 a few connections carry
//! every request, so overload queues there, not in the accept queue.

use super::sockdiag::{INET_DIAG_MSG_LEN, NLMSG_DONE, NLMSG_ERROR, NLMSG_HDR};

use super::sockdiag::{state, states_mask, SockDiag, TCPDIAG_GETSOCK};

/// The reply attribute holding struct tcp_info (`INET_DIAG_INFO`), and its request bit.
const INET_DIAG_INFO: u16 = 2;
const EXT_INFO: u8 = 1 << (INET_DIAG_INFO - 1);
/// `tcpi_total_retrans`'s offset in struct tcp_info (include/uapi/linux/tcp.h): 8 bytes of
/// u8 fields, then 23 u32s up to it.
const TCPI_TOTAL_RETRANS: usize = 100;

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

/// The request (inet_diag_req, both families in one walk): ESTABLISHED sockets whose local
/// port is `sport`, with tcp_info.
pub fn build_request(sport: u16, seq: u32) -> Vec<u8> {
    super::sockdiag::request_both(EXT_INFO, states_mask(&[state::ESTABLISHED]), sport, seq)
}

/// Folds a dump's replies into `q`; Err(errno) when the kernel refused the request.
pub fn parse(bytes: &[u8], q: &mut ConnQueues) -> Result<(), i32> {
    let mut off = 0;
    while off + NLMSG_HDR <= bytes.len() {
        let len = u32::from_ne_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        let kind = u16::from_ne_bytes([bytes[off + 4], bytes[off + 5]]);
        if len < NLMSG_HDR || off + len > bytes.len() {
            break;
        }
        let m = &bytes[off + NLMSG_HDR..off + len];
        match kind {
            NLMSG_DONE => break,
            NLMSG_ERROR => {
                let errno = m
                    .get(..4)
                    .map_or(0, |e| i32::from_ne_bytes(e.try_into().unwrap()));
                if errno != 0 {
                    return Err(-errno);
                }
            }
            TCPDIAG_GETSOCK if m.len() >= INET_DIAG_MSG_LEN && m[1] == state::ESTABLISHED => {
                let ne32 = |o: usize| u32::from_ne_bytes(m[o..o + 4].try_into().unwrap());
                q.add(ne32(56), ne32(60), total_retrans(&m[INET_DIAG_MSG_LEN..]));
            }
            _ => {}
        }
        off += (len + 3) & !3;
    }
    Ok(())
}

/// `tcpi_total_retrans` from the attributes after an inet_diag_msg.
fn total_retrans(mut attrs: &[u8]) -> Option<u32> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            return None;
        }
        if kind == INET_DIAG_INFO {
            let at = 4 + TCPI_TOTAL_RETRANS;
            return attrs
                .get(at..at + 4)
                .filter(|_| at + 4 <= len)
                .map(|b| u32::from_ne_bytes(b.try_into().unwrap()));
        }
        attrs = attrs.get((len + 3) & !3..).unwrap_or_default();
    }
    None
}

/// The established connections of local port `sport` in the namespace `d` was opened in.
pub fn conn_queues(d: &mut SockDiag, sport: u16) -> std::io::Result<ConnQueues> {
    let raw = d.exchange_request(|seq| build_request(sport, seq))?;
    let mut q = ConnQueues::default();
    parse(&raw, &mut q).map_err(std::io::Error::from_raw_os_error)?;
    Ok(q)
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
