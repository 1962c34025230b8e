//! The run's drops identity over HTTP/3 (issue 47, `model::udp_drops`): the clients'
//! datagrams against the built-in server's own count of what it read and the server kernel's
//! drops, once the run has drained.

use super::LabCore;
use crate::model::col;
use crate::model::udp_drops::{noise, UdpDrops};

impl LabCore {
    /// What the start-up QUIC check sent to the server (datagrams, and the Initials among
    /// them) and the handshakes it completed: not the load's, but the server read them (or its
    /// kernel dropped them) and counted the handshakes all the same. The check comes before
    /// the capture: its Initials are in the server's count and not in pcap's.
    pub fn h3_check(&mut self, datagrams: u64, initials: u64, handshakes: u64) {
        self.h3_check_sent += datagrams;
        self.h3_check_initials += initials;
        self.h3_check_handshakes += handshakes;
    }

    /// The drops identity over the run, from `last_probe` (the sample after the drain; else
    /// the last row's figures). `lossy`: the paths lose packets as configured. None unless
    /// the load was HTTP/3 against a server that counts what it reads (the built-in one).
    pub fn udp_drops(
        &self,
        last_probe: Option<&crate::probe::ProbeSample>,
        lossy: bool,
    ) -> Option<UdpDrops> {
        let q = self.run_quic.as_ref()?;
        let st = self.server_last.as_ref().filter(|_| self.server_reports)?;
        let store = &self.state.store;
        let get = |c| {
            last_probe
                .map_or_else(|| store.last(c), |p| p.m.get(c))
                .map(|v| v as u64)
        };
        let sent = q.datagrams_sent + self.h3_check_sent;
        Some(UdpDrops {
            sent,
            read: st.h3_datagrams_in,
            port_drops: get(col::PORT_UDP_DROPS),
            rcvbuf_errors: get(col::UDP_RCVBUF_ERRORS_TOTAL),
            initials_in: get(col::QUIC_INITIAL_IN_TOTAL),
            // Since the capture started, as pcap's count: the check's came before it.
            initials_read: st.h3_initials_in.saturating_sub(self.h3_check_initials),
            noise: noise(self.h3_check_sent, self.run.in_flight_at_end()),
            lossy,
        })
    }
}
