//! The client's TLS 1.3 for QUIC: three configs over TLS's own session store
//! ([`SessionStore`]; full: offers no session; resume: offers one; early: offers one and
//! sends 0-RTT data), picked per connection
//! by the same exact-share schedule as TLS over TCP ([`crate::tls::schedule`]). Which
//! handshakes were full is known exactly: only they verify a certificate, and the verifier
//! counts.

use crate::tls::client::SessionStore;
use crate::tls::schedule::{Plan, ResumeSchedule};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// What a connection offers the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    Full,
    Resume,
    /// Resume, with the first requests as 0-RTT data.
    EarlyData,
}

/// A verifier that counts the certificates it verified (one per full handshake).
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn ServerCertVerifier>,
    verified: Arc<AtomicU64>,
}

impl ServerCertVerifier for Counting {
    fn verify_server_cert(
        &self,
        end: &CertificateDer<'_>,
        inter: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verified.fetch_add(1, Relaxed);
        self.inner.verify_server_cert(end, inter, name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(m, c, d)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(m, c, d)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// The client's configs, ticket store and schedules.
pub struct ClientTlsSet {
    full: quinn_proto::ClientConfig,
    resume: quinn_proto::ClientConfig,
    early: quinn_proto::ClientConfig,
    tickets: Arc<SessionStore>,
    verified: Arc<AtomicU64>,
    resumed: ResumeSchedule,
    /// Among resumptions, which send early data (the same accumulator, over resumptions).
    early_share: ResumeSchedule,
}

impl ClientTlsSet {
    /// Verifying against `ca_pem`; `resumed` of the handshakes resume, `early_data` of those
    /// send 0-RTT data; connections idle past `idle_timeout` end.
    pub fn new(
        ca_pem: &str,
        resumed: f64,
        early_data: f64,
        idle_timeout: std::time::Duration,
    ) -> anyhow::Result<ClientTlsSet> {
        let verified = Arc::new(AtomicU64::new(0));
        let verifier: Arc<dyn ServerCertVerifier> = Arc::new(Counting {
            inner: crate::tls::client::verifier_for(ca_pem)?,
            verified: verified.clone(),
        });
        let tickets = Arc::new(SessionStore::default());
        let mut transport = quinn_proto::TransportConfig::default();
        transport.max_idle_timeout(Some(
            quinn_proto::IdleTimeout::try_from(idle_timeout)
                .map_err(|_| anyhow::anyhow!("idle timeout {idle_timeout:?} is too long"))?,
        ));
        let transport = Arc::new(transport);
        let config = |offers: bool, early: bool| -> anyhow::Result<quinn_proto::ClientConfig> {
            let mut c = rustls::ClientConfig::builder_with_provider(crate::tls::provider(None))
                .with_protocol_versions(&[&rustls::version::TLS13])?
                .dangerous()
                .with_custom_certificate_verifier(verifier.clone())
                .with_no_client_auth();
            c.alpn_protocols = vec![b"h3".to_vec()];
            c.enable_early_data = early;
            c.resumption = Resumption::store(tickets.view(offers));
            let quic = quinn_proto::crypto::rustls::QuicClientConfig::try_from(Arc::new(c))
                .map_err(|e| anyhow::anyhow!("the TLS config does not suit QUIC: {e}"))?;
            let mut q = quinn_proto::ClientConfig::new(Arc::new(quic));
            q.transport_config(transport.clone());
            Ok(q)
        };
        Ok(ClientTlsSet {
            full: config(false, false)?,
            resume: config(true, false)?,
            early: config(true, true)?,
            tickets,
            verified,
            resumed: ResumeSchedule::new(resumed),
            early_share: ResumeSchedule::new(early_data),
        })
    }

    fn have_ticket(&self) -> bool {
        self.tickets.has_session()
    }

    /// The config for the next connection, as the schedules say.
    pub fn next_config(&mut self) -> (quinn_proto::ClientConfig, Offer) {
        match self.resumed.next(self.have_ticket()) {
            Plan::Full => (self.full.clone(), Offer::Full),
            Plan::Resume => match self.early_share.next(true) {
                Plan::Resume => (self.early.clone(), Offer::EarlyData),
                Plan::Full => (self.resume.clone(), Offer::Resume),
            },
        }
    }

    /// A new resumed share from the next handshake on.
    pub fn set_resumed(&mut self, share: f64) {
        self.resumed.set_share(share);
    }

    /// Certificates verified so far.
    pub fn verified(&self) -> u64 {
        self.verified.load(Relaxed)
    }

    pub fn completed(&mut self, offer: Offer, resumed: bool) {
        let plan = if offer == Offer::Full {
            Plan::Full
        } else {
            Plan::Resume
        };
        self.resumed.completed(plan, resumed);
    }

    pub fn failed(&mut self, offer: Offer) {
        let plan = if offer == Offer::Full {
            Plan::Full
        } else {
            Plan::Resume
        };
        self.resumed.failed(plan);
    }
}
