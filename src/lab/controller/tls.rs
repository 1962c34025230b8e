//! TLS at the lab: the certificate made at start for the servers the lab configures (built-in,
//! nginx, Apache), what the workers are told, and the start-up check that the target speaks
//! TLS at all (a plain-HTTP server with `tls = true` is refused before any load).

use super::*;
use crate::tls::cert::{CertFiles, LabCert};
use crate::tls::{ClientTls, ServerTls};

/// The lab's certificate and where its files are.
pub(super) struct LabTls {
    pub(super) cert: LabCert,
    pub(super) files: CertFiles,
    /// A folder made for the files outside a run folder (tests), removed with the lab.
    owned: Option<PathBuf>,
}

impl Drop for LabTls {
    fn drop(&mut self) {
        if let Some(d) = &self.owned {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// How long the start-up handshake may take.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

impl Controller {
    /// A target the lab configures for TLS gets its certificate now: made for the server's
    /// address and written to the run folder's `tls/` (key 0600).
    pub(super) fn make_certificate(&mut self, server_ip: IpAddr) -> anyhow::Result<()> {
        let t = &self.scenario.target;
        let lab_configured = t.kind == TargetKind::Builtin || t.kind.is_real_server();
        if !t.tls || !lab_configured {
            return Ok(());
        }
        let cert = LabCert::generate(t.tls_key, Some(server_ip))?;
        let (dir, owned) = match self.recorder.dir() {
            Some(d) => (d.join("tls"), None),
            None => {
                static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let d = std::env::temp_dir().join(format!(
                    "synlab-tls-{}-{}",
                    std::process::id(),
                    N.fetch_add(1, Ordering::Relaxed)
                ));
                (d.clone(), Some(d))
            }
        };
        let files = cert.write(&dir)?;
        self.log(&format!(
            "tls: a {} certificate for {} made at start, in {}",
            cert.key,
            crate::tls::settings::LAB_NAME,
            dir.display()
        ));
        self.tls = Some(LabTls { cert, files, owned });
        Ok(())
    }

    /// The built-in server's TLS (None: plain HTTP).
    pub(super) fn server_tls(&self) -> Option<ServerTls> {
        let lab = self.tls.as_ref()?;
        let t = &self.scenario.target;
        Some(ServerTls {
            cert: lab.files.cert.clone(),
            key: lab.files.key.clone(),
            session_cache: t.tls_session_cache,
            tickets: t.tls_tickets,
        })
    }

    /// What the workers do over TLS (None: plain HTTP): `[load.tls]`, or its defaults, with
    /// the CA they verify against (the lab's, or the scenario's `ca` file).
    pub(super) fn client_tls(&self) -> anyhow::Result<Option<ClientTls>> {
        if !self.scenario.target.tls {
            return Ok(None);
        }
        let spec = self.scenario.load.tls.clone().unwrap_or_default();
        let ca_pem = if !spec.ca.is_empty() {
            std::fs::read_to_string(&spec.ca).with_context(|| {
                format!("load.tls.ca: cannot read the CA certificates {}", spec.ca)
            })?
        } else {
            self.tls
                .as_ref()
                .map(|l| l.cert.ca_pem.clone())
                .unwrap_or_default()
        };
        Ok(Some(ClientTls {
            version: spec.version,
            group: spec.group,
            resumed: self.core.state().knobs.resumed.unwrap_or(spec.resumed),
            resume_by: spec.resumption,
            sni: spec.sni,
            verify: spec.verify,
            ca_pem,
            handshake_timeout_s: spec.handshake_timeout.secs(),
            offer_h2: self.scenario.load.http == crate::scenario::HttpVersion::Http2,
            early_data: spec.early_data,
        }))
    }

    /// The target answers a TLS handshake with the workers' settings (the certificate not
    /// verified here: a run with verification on counts a bad certificate as such). A server
    /// that does not speak TLS is refused with what it answered.
    pub(super) fn check_target_tls(&mut self) -> anyhow::Result<()> {
        let Some(mut tls) = self.client_tls()? else {
            return Ok(());
        };
        let verify = tls.verify;
        self.fold_msg(Input::Tls(crate::lab::core::TlsSpoken {
            version: tls.version,
            group: tls.group,
            resume_by: tls.resume_by,
            verify,
        }));
        tls.verify = false;
        let addr = self.target_addr;
        let check = move || crate::tls::client::check_handshake(addr, &tls, CHECK_TIMEOUT);
        let r = match self.client_netns() {
            Some(ns) => crate::sys::netns::in_netns(&ns, check)
                .unwrap_or_else(|e| Err(anyhow::anyhow!("entering the client namespace: {e}"))),
            None => check(),
        };
        match r {
            Ok(line) => {
                let note = if verify {
                    " (the certificate is verified by the workers)"
                } else {
                    ""
                };
                self.log(&format!("tls: the target answered: {line}{note}"));
                // The built-in server counts handshakes (an access log counts requests, and
                // the check sent none): this one is not the load's.
                if self.scenario.target.kind == TargetKind::Builtin {
                    self.core.server_handshakes_not_load(1);
                }
                Ok(())
            }
            Err(e) => bail!(
                "the target at {addr} does not speak TLS as [load.tls] asks: {e:#}; with tls = true synlab sends TLS handshakes: is the server serving HTTPS on this port?"
            ),
        }
    }
}
