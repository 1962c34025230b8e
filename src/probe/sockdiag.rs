//! What the probe keeps of the sockets of the server's port: the listening sockets' accept
//! queues and per-state counts, folded from the sock_diag dump that `sys::sockdiag` asks the
//! kernel for (the wire format lives there, with the socket). The kernel filters by state and
//! port itself, so only matching sockets cross into user space; but any state other than
//! LISTEN makes the kernel walk the established hash, TIME_WAIT included (its cost grows with
//! the table).

pub use crate::sys::sockdiag::{parse_replies, state, states_mask, DiagSocket};

/// The states the probe counts each sample: everything of the server's port except TIME_WAIT
/// (the namespace's is read from /proc/net/sockstat; `synlab probe` adds the port's own to the
/// walk) and the client-side SYN_SENT.
pub const SERVER_STATES: [u8; 8] = [
    state::LISTEN,
    state::SYN_RECV,
    state::ESTABLISHED,
    state::FIN_WAIT1,
    state::FIN_WAIT2,
    state::CLOSE_WAIT,
    state::LAST_ACK,
    state::CLOSING,
];

/// One listening socket's accept queue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ListenQueue {
    pub local: String,
    pub port: u16,
    pub queued: u32,
    pub limit: u32,
}

/// What a sample keeps of the sockets of the server's port.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiagSummary {
    pub listeners: Vec<ListenQueue>,
    pub syn_recv: u64,
    pub established: u64,
    pub fin_wait: u64,
    pub close_wait: u64,
    pub last_ack: u64,
    pub closing: u64,
    /// Only filled when TIME_WAIT was asked for (`time_wait_walked`).
    pub time_wait: u64,
    /// TIME_WAIT was among the states walked.
    pub time_wait_walked: bool,
    /// The state counts were walked for this sample. When not (with many sockets the walk runs
    /// less often than the samples), only the listeners were asked for and the counts mean
    /// nothing.
    pub states_fresh: bool,
}

impl DiagSummary {
    /// Folds sockets (of both families) into counts.
    pub fn add(&mut self, socks: &[DiagSocket]) {
        for s in socks {
            match s.state {
                state::LISTEN => self.listeners.push(ListenQueue {
                    local: s.local.to_string(),
                    port: s.sport,
                    queued: s.rqueue,
                    limit: s.wqueue,
                }),
                state::SYN_RECV => self.syn_recv += 1,
                state::ESTABLISHED => self.established += 1,
                state::FIN_WAIT1 | state::FIN_WAIT2 => self.fin_wait += 1,
                state::CLOSE_WAIT => self.close_wait += 1,
                state::LAST_ACK => self.last_ack += 1,
                state::CLOSING => self.closing += 1,
                state::TIME_WAIT => self.time_wait += 1,
                _ => {}
            }
        }
    }

    /// Accept-queue length summed over the port's listeners (several with SO_REUSEPORT).
    pub fn accept_queue(&self) -> u64 {
        self.listeners.iter().map(|l| l.queued as u64).sum()
    }

    pub fn accept_queue_limit(&self) -> u64 {
        self.listeners.iter().map(|l| l.limit as u64).sum()
    }
}
