//! `load.http = "2"` at start-up: the target must speak HTTP/2 (ALPN h2 over TLS, h2c in the
//! clear), else the run stops with the reason (exit 2) rather than count every connection as
//! the workers' ALPN or protocol error.

use super::Controller;
use crate::scenario::HttpVersion;
use anyhow::bail;
use std::time::Duration;

/// How long the target has to answer the HTTP/2 preface.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

impl Controller {
    /// Over HTTP/2: asks the target (from the first client namespace, as the load would)
    /// whether it speaks HTTP/2 and says its SETTINGS in run.log; a target that does not is
    /// refused with what it answered. Nothing over HTTP/1.x.
    pub(super) fn check_http2(&mut self) -> anyhow::Result<()> {
        if self.scenario.load.http != HttpVersion::Http2 {
            return Ok(());
        }
        let addr = self.target_addr;
        let tls = self.client_tls()?;
        let check = move || crate::probe::speaks_h2::check(addr, tls.as_ref(), CHECK_TIMEOUT);
        let r = match self.first_client_netns() {
            Some(ns) => crate::sys::netns::in_netns(ns, check)
                .map_err(|e| anyhow::anyhow!("entering the client namespace: {e:#}"))?,
            None => check(),
        };
        let target = self.scenario.target.kind.name();
        match r {
            Ok(h2) => {
                self.log(&format!(
                    "http2: the target ({target} at {addr}) speaks {h2}"
                ));
                Ok(())
            }
            Err(e) => bail!(
                "load.http = \"2\": the target ({target} at {addr}) does not speak HTTP/2: {e}"
            ),
        }
    }
}
