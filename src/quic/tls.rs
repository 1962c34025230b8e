//! The client's TLS 1.3 for QUIC: three configs over TLS's own session store
//! ([`SessionStore`]; full: offers no session; resume: offers one; early: offers one and
//! sends 0-RTT data), picked per connection
//! by the same exact-share schedule as TLS over TCP ([`crate::tls::schedule`]). Which
//! handshakes were full is known exactly: only they verify a certificate, and the verifier
//! counts. The store counts the tickets it is given and hands out, so the client knows
//! which connection received tickets (see `QuicClient`'s wait for them before a close).

use crate::tls::client::SessionStore;
use crate::tls::schedule::{Plan, ResumeSchedule};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionStore, Resumption};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, NamedGroup, SignatureScheme};
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

/// A view of the ticket store that counts the TLS 1.3 tickets put in and taken out.
#[derive(Debug)]
struct CountingStore {
    inner: Arc<dyn ClientSessionStore>,
    tickets: Arc<TicketCounts>,
}

/// Tickets the server sent (stored) and tickets offered (taken), over every config.
#[derive(Debug, Default)]
struct TicketCounts {
    stored: AtomicU64,
    taken: AtomicU64,
}

impl ClientSessionStore for CountingStore {
    fn set_kx_hint(&self, n: ServerName<'static>, g: NamedGroup) {
        self.inner.set_kx_hint(n, g)
    }
    fn kx_hint(&self, n: &ServerName<'_>) -> Option<NamedGroup> {
        self.inner.kx_hint(n)
    }
    fn set_tls12_session(
        &self,
        n: ServerName<'static>,
        v: rustls::client::Tls12ClientSessionValue,
    ) {
        self.inner.set_tls12_session(n, v)
    }
    fn tls12_session(&self, n: &ServerName<'_>) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.inner.tls12_session(n)
    }
    fn remove_tls12_session(&self, n: &ServerName<'static>) {
        self.inner.remove_tls12_session(n)
    }
    fn insert_tls13_ticket(
        &self,
        n: ServerName<'static>,
        v: rustls::client::Tls13ClientSessionValue,
    ) {
        self.tickets.stored.fetch_add(1, Relaxed);
        self.inner.insert_tls13_ticket(n, v)
    }
    fn take_tls13_ticket(
        &self,
        n: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        let t = self.inner.take_tls13_ticket(n);
        if t.is_some() {
            self.tickets.taken.fetch_add(1, Relaxed);
        }
        t
    }
}

/// The client's configs, ticket store and schedules.
pub struct ClientTlsSet {
    full: quinn_proto::ClientConfig,
    resume: quinn_proto::ClientConfig,
    early: quinn_proto::ClientConfig,
    tickets: Arc<SessionStore>,
    counts: Arc<TicketCounts>,
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
        let counts = Arc::new(TicketCounts::default());
        let mut transport = quinn_proto::TransportConfig::default();
        transport.max_idle_timeout(Some(
            quinn_proto::IdleTimeout::try_from(idle_timeout)
                .map_err(|_| anyhow::anyhow!("idle timeout {idle_timeout:?} is too long"))?,
        ));
        let transport = Arc::new(transport);
        // One config cloned three times: rustls resumes a ticket only under a config with the
        // same verifier and client-certificate resolver (the same Arcs) as the one it came
        // with, and each `with_no_client_auth()` makes a resolver of its own. Built apart,
        // the tickets of full handshakes were silently not offered by the resuming configs
        // (taken, then dropped: a full handshake counted as declined, a third of the 0-RTT
        // offers with one slot).
        let mut base = rustls::ClientConfig::builder_with_provider(crate::tls::provider(None))
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        base.alpn_protocols = vec![b"h3".to_vec()];
        let config = |offers: bool, early: bool| -> anyhow::Result<quinn_proto::ClientConfig> {
            let mut c = base.clone();
            c.enable_early_data = early;
            c.resumption = Resumption::store(Arc::new(CountingStore {
                inner: tickets.view(offers),
                tickets: counts.clone(),
            }));
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
            counts,
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

    /// TLS 1.3 session tickets the server sent so far (each stored, usable once).
    pub fn tickets_stored(&self) -> u64 {
        self.counts.stored.load(Relaxed)
    }

    /// Tickets offered to the server so far (each taken out of the store).
    pub fn tickets_taken(&self) -> u64 {
        self.counts.taken.load(Relaxed)
    }

    /// Whether handshakes are to resume at all (tickets are worth waiting for).
    pub fn resumes(&self) -> bool {
        self.resumed.share() > 0.0
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
