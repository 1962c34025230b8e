//! What the probe keeps of the sockets of the server's port: the listening sockets' accept
//! queues and per-state counts, folded from the sock_diag dump that `sys::sockdiag` asks the
//! kernel for (the wire format lives there, with the socket). The kernel filters by state and
//! port itself, so only matching sockets cross into user space; but any state other than
//! LISTEN makes the kernel walk the established hash, TIME_WAIT included (its cost grows with
//! the table).

use crate::sys::procfs::{self, NetnsTarget};
use crate::sys::sockdiag::SockDiag;
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
    /// The SYNs and handshakes it dropped since it began listening (its `sk_drops`; None
    /// where the kernel did not say).
    pub drops: Option<u32>,
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
    /// The established connections' queues and retransmissions (walked with the states).
    pub conns: Option<crate::sys::conn_queues::ConnQueues>,
    /// The connections waiting in the port's accept queues (walked with the states): their
    /// ages, Some(None) when none waits.
    pub waiting: Option<Option<crate::model::acceptq::QueueAges>>,
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
                    drops: s.drops,
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

    /// The port's listen drops: its listeners' own counts summed (None without listeners, or
    /// when one of them did not say). The namespace's ListenDrops counts every port's.
    pub fn listen_drops(&self) -> Option<u64> {
        if self.listeners.is_empty() {
            return None;
        }
        self.listeners.iter().map(|l| l.drops.map(u64::from)).sum()
    }
}

/// A listening socket of a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub port: u16,
    pub inode: u64,
    /// The owner's uid.
    pub uid: u32,
}

/// Why the listening sockets of a namespace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ListenersError {
    #[error("cannot enter {path}: {1}", path = .0.path().display())]
    Enter(NetnsTarget, std::io::Error),
    #[error("sock_diag: {0}")]
    Diag(std::io::Error),
    #[error("the listener lookup thread panicked")]
    Panicked,
}

/// Listening sockets in `target`'s netns (None: this process's), any port: a LISTEN-only
/// dump is cheap. On a thread of its own, which enters the namespace.
pub fn listeners_in(target: Option<NetnsTarget>) -> Result<Vec<Listener>, ListenersError> {
    std::thread::spawn(move || {
        if let Some(t) = &target {
            procfs::enter_netns(t).map_err(|e| ListenersError::Enter(t.clone(), e))?;
        }
        let socks = SockDiag::open()
            .and_then(|mut d| d.dump(states_mask(&[state::LISTEN]), 0))
            .map_err(ListenersError::Diag)?;
        Ok(socks
            .iter()
            .map(|s| Listener {
                port: s.sport,
                inode: s.inode as u64,
                uid: s.uid,
            })
            .collect())
    })
    .join()
    .map_err(|_| ListenersError::Panicked)?
}

/// The process serving a port, as far as this process may see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortOwner {
    /// The lowest pid holding one of the port's listening sockets (a master process before
    /// its workers).
    Pid(u32),
    NothingListens(u16),
    /// Its listening socket belongs to another user (`uid`, with its name where known), whose
    /// processes' descriptors only root may read.
    NotVisible {
        port: u16,
        owner: String,
    },
}

impl std::fmt::Display for PortOwner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PortOwner::Pid(p) => write!(f, "pid {p} holds its listening socket"),
            PortOwner::NothingListens(port) => write!(
                f,
                "nothing listens on port {port}, so no server process is known"
            ),
            PortOwner::NotVisible { port, owner } => write!(
                f,
                "port {port}'s socket belongs to {owner}, and which process holds a \
                 socket is read from /proc/PID/fd, which only root may read for another \
                 user's process"
            ),
        }
    }
}

/// Who serves `port` among `listeners` (the namespace's, from [`listeners_in`]).
pub fn port_owner(listeners: &[Listener], port: u16) -> PortOwner {
    let on_port: Vec<&Listener> = listeners.iter().filter(|l| l.port == port).collect();
    let inodes: Vec<u64> = on_port.iter().map(|l| l.inode).collect();
    match (procfs::pids_holding(&inodes).first(), on_port.first()) {
        (Some(&pid), _) => PortOwner::Pid(pid),
        (None, None) => PortOwner::NothingListens(port),
        (None, Some(l)) => PortOwner::NotVisible {
            port,
            owner: match crate::sys::privilege::user_name(l.uid) {
                Some(name) => format!("uid {} ({name})", l.uid),
                None => format!("uid {}", l.uid),
            },
        },
    }
}

/// Why a pid named as the server's cannot be followed.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("target.pid {0} is not running (no /proc/{0}): start the server first, or correct target.pid (`ss -ltnp 'sport = :PORT'` shows which process listens on a port), or remove the key to let synlab find it from the port")]
pub struct NotRunning(pub u32);

/// `pid` as the server's, if it is a running process.
pub fn running(pid: u32) -> Result<u32, NotRunning> {
    // A zombie has exited: nothing of it runs or listens any more.
    match crate::sys::pidstat::PidStat::read(pid) {
        Some(p) if !p.is_zombie() => Ok(pid),
        _ => Err(NotRunning(pid)),
    }
}
