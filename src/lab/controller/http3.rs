//! `load.http = "3"` at start-up: the target must answer QUIC on its port (UDP) and serve
//! HTTP/3 there, else the run stops with the reason (exit 2) rather than count every
//! connection as a handshake timeout.

use super::Controller;
use crate::quic::{run_closed, ClientOptions};
use crate::scenario::{HttpVersion, TargetKind};
use anyhow::bail;
use std::time::{Duration, Instant};

/// How long the target has to complete a QUIC handshake.
const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

impl Controller {
    /// Over HTTP/3: one QUIC handshake (ALPN h3) with the target (from the first client
    /// namespace, as the load would), said in run.log; a target that does not answer is
    /// refused with what happened (a real server that exited meanwhile, with its own start-up
    /// errors). Nothing over TCP.
    pub(super) fn check_http3(&mut self) -> anyhow::Result<()> {
        if self.scenario.load.http != HttpVersion::Http3 {
            return Ok(());
        }
        self.quic_handshake_check()
            .map_err(|e| self.exited_at_start(e))
    }

    fn quic_handshake_check(&mut self) -> anyhow::Result<()> {
        let addr = self.target_addr;
        let Some(tls) = self.client_tls()? else {
            bail!("load.http = \"3\": HTTP/3 is always over TLS: set tls = true in [target]");
        };
        let target = self.scenario.target.kind.name();
        // The QUIC clients verify the server's certificate always (`load.tls.verify` is TLS
        // over TCP's): a target whose certificate the lab did not make needs its CA.
        if tls.ca_pem.trim().is_empty() {
            bail!(
                "load.http = \"3\": the QUIC clients always verify the target's certificate ({target} at {addr}) and have no CA to verify it against: set load.tls.ca to the file of the CA that signed it"
            );
        }
        let name = if tls.sni.is_empty() {
            addr.ip().to_string()
        } else {
            tls.sni.clone()
        };
        let mut o = ClientOptions::new(addr, &name, &tls.ca_pem);
        o.handshake_timeout = CHECK_TIMEOUT;
        // A handshake and no request: the server's request count stays the load's own.
        let check = move || run_closed(o, 1, 0, 1, "/", Instant::now() + CHECK_TIMEOUT * 2);
        let r = match self.first_client_netns() {
            Some(ns) => crate::sys::netns::in_netns(ns, check)
                .map_err(|e| anyhow::anyhow!("entering the client namespace: {e:#}"))?,
            None => check(),
        };
        let run = match r {
            Ok(run) => run,
            Err(e) => bail!(
                "load.http = \"3\": checking the target ({target} at {addr}) over QUIC: {e:#}"
            ),
        };
        let s = &run.stats;
        if s.handshakes_total() == 0 {
            let why = match s.errors.keys().next() {
                Some(e) => e.to_string(),
                None => "no answer".to_string(),
            };
            let how = match self.scenario.target.kind {
                TargetKind::Builtin | TargetKind::Caddy => {
                    "serve HTTP/3 there (built-in: http3 = true; Caddy: tls = true)"
                }
                // A server synlab does not configure: whether it serves HTTP/3 is its own.
                _ => "the server there must serve HTTP/3 (QUIC) on that UDP port itself",
            };
            bail!(
                "load.http = \"3\": the target ({target} at {addr}) does not answer QUIC on UDP port {} ({why} within {:?}): {how}",
                addr.port(),
                CHECK_TIMEOUT
            );
        }
        self.log(&format!(
            "http3: the target ({target} at {addr}) answers QUIC with ALPN h3 (a handshake in {:?})",
            s.handshake_time_max
        ));
        // The server reads these too: the drops identity counts them as sent, and the
        // handshakes cross-check leaves the check's out.
        self.core
            .h3_check(s.datagrams_sent, s.initials_sent, s.handshakes_total());
        Ok(())
    }
}
