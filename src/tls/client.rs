//! The client side of a load worker's TLS: two configs over one session store (one that
//! offers a stored session, one that does not, so the schedule decides per handshake), the
//! store itself (sessions of this worker's handshakes, full and resumed ones refilling it),
//! the schedule of which handshakes resume, and what a failed handshake counts as.

use super::schedule::{Plan, ResumeSchedule};
use super::settings::{ClientTls, ResumeBy, TlsVersion};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{ClientSessionStore, Resumption, Tls12Resumption, WebPkiServerVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, NamedGroup, SignatureScheme};
use std::collections::VecDeque;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// TLS 1.3 tickets kept (each is used once; servers send one or two per handshake).
const TICKETS_KEPT: usize = 256;
/// TLS 1.2 sessions kept (reusable).
const SESSIONS_KEPT: usize = 16;

/// Why a handshake failed, as the load counts it (a connection error each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandshakeFailure {
    /// The server sent an alert (it refused the handshake).
    Alert,
    /// The server's certificate did not verify (verification on).
    BadCertificate,
    /// Anything else the peer got wrong: not TLS, a message out of place, a bad signature,
    /// the connection closed mid-handshake.
    Protocol,
}

/// What a TLS error in a handshake counts as.
pub fn classify(e: &rustls::Error) -> HandshakeFailure {
    match e {
        rustls::Error::AlertReceived(_) => HandshakeFailure::Alert,
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
            HandshakeFailure::BadCertificate
        }
        _ => HandshakeFailure::Protocol,
    }
}

#[derive(Debug, Default)]
struct Sessions {
    tls13: VecDeque<rustls::client::Tls13ClientSessionValue>,
    tls12: VecDeque<rustls::client::Tls12ClientSessionValue>,
    kx_hint: Option<NamedGroup>,
}

/// One worker's sessions, for one server (a worker loads one target).
#[derive(Debug, Default)]
pub struct SessionStore(Mutex<Sessions>);

impl SessionStore {
    fn lock(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A session is stored that a handshake could resume.
    pub fn has_session(&self) -> bool {
        let s = self.lock();
        !s.tls13.is_empty() || !s.tls12.is_empty()
    }
}

/// The store as one of the two configs sees it: both keep what the server sends; only the
/// resuming one hands a session out.
#[derive(Debug)]
struct StoreView {
    store: Arc<SessionStore>,
    offers: bool,
}

impl ClientSessionStore for StoreView {
    fn set_kx_hint(&self, _: ServerName<'static>, group: NamedGroup) {
        self.store.lock().kx_hint = Some(group);
    }
    fn kx_hint(&self, _: &ServerName<'_>) -> Option<NamedGroup> {
        self.store.lock().kx_hint
    }
    fn set_tls12_session(
        &self,
        _: ServerName<'static>,
        v: rustls::client::Tls12ClientSessionValue,
    ) {
        let mut s = self.store.lock();
        if s.tls12.len() >= SESSIONS_KEPT {
            s.tls12.pop_front();
        }
        s.tls12.push_back(v);
    }
    fn tls12_session(&self, _: &ServerName<'_>) -> Option<rustls::client::Tls12ClientSessionValue> {
        if !self.offers {
            return None;
        }
        self.store.lock().tls12.back().cloned()
    }
    fn remove_tls12_session(&self, _: &ServerName<'static>) {
        self.store.lock().tls12.clear();
    }
    fn insert_tls13_ticket(
        &self,
        _: ServerName<'static>,
        v: rustls::client::Tls13ClientSessionValue,
    ) {
        let mut s = self.store.lock();
        if s.tls13.len() >= TICKETS_KEPT {
            s.tls13.pop_front();
        }
        s.tls13.push_back(v);
    }
    fn take_tls13_ticket(
        &self,
        _: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        if !self.offers {
            return None;
        }
        // The newest: the least likely to have expired.
        self.store.lock().tls13.pop_back()
    }
}

/// Accepts any certificate but still checks the handshake's signatures with it (what a
/// client that does not verify certificates does: `openssl s_time`, h2load).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A verifier that trusts the roots in `ca_pem`.
pub fn verifier_for(ca_pem: &str) -> anyhow::Result<Arc<WebPkiServerVerifier>> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.map_err(|e| anyhow::anyhow!("reading the trusted CA certificates: {e:?}"))?)?;
    }
    anyhow::ensure!(
        !roots.is_empty(),
        "no CA certificate to verify the server against"
    );
    Ok(
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), super::provider(None))
            .build()?,
    )
}

/// A worker's TLS: its configs, sessions and resumption schedule.
pub struct TlsClient {
    full: Arc<ClientConfig>,
    resume: Arc<ClientConfig>,
    store: Arc<SessionStore>,
    schedule: ResumeSchedule,
    name: ServerName<'static>,
}

impl TlsClient {
    /// From the worker's settings; `target` is verified when no SNI is set.
    pub fn new(s: &ClientTls, target: IpAddr) -> anyhow::Result<TlsClient> {
        let provider = super::provider(Some(s.group));
        if s.version == TlsVersion::V12 && s.group == super::KxGroup::X25519Mlkem768 {
            anyhow::bail!("the group X25519MLKEM768 exists only in TLS 1.3");
        }
        let verifier: Arc<dyn ServerCertVerifier> = if s.verify {
            verifier_for(&s.ca_pem)?
        } else {
            Arc::new(AnyCertificate(provider.clone()))
        };
        let store = Arc::new(SessionStore::default());
        let config = |offers: bool| -> anyhow::Result<Arc<ClientConfig>> {
            let mut c = ClientConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&[s.version.rustls()])?
                .dangerous()
                .with_custom_certificate_verifier(verifier.clone())
                .with_no_client_auth();
            c.alpn_protocols = vec![b"http/1.1".to_vec()];
            c.enable_sni = !s.sni.is_empty();
            c.resumption = Resumption::store(Arc::new(StoreView {
                store: store.clone(),
                offers,
            }))
            .tls12_resumption(match s.resume_by {
                ResumeBy::Tickets => Tls12Resumption::SessionIdOrTickets,
                ResumeBy::Ids => Tls12Resumption::SessionIdOnly,
            });
            Ok(Arc::new(c))
        };
        let name = if s.sni.is_empty() {
            ServerName::IpAddress(target.into())
        } else {
            ServerName::try_from(s.sni.clone())
                .map_err(|_| anyhow::anyhow!("`{}` is not a server name for SNI", s.sni))?
        };
        Ok(TlsClient {
            full: config(false)?,
            resume: config(true)?,
            store,
            schedule: ResumeSchedule::new(s.resumed),
            name,
        })
    }

    /// A new handshake's connection, resuming or not as the schedule says.
    pub fn start(&mut self) -> Result<(ClientConnection, Plan), rustls::Error> {
        let plan = self.schedule.next(self.store.has_session());
        let config = match plan {
            Plan::Resume => &self.resume,
            Plan::Full => &self.full,
        };
        Ok((
            ClientConnection::new(config.clone(), self.name.clone())?,
            plan,
        ))
    }

    /// A handshake completed: true when it resumed a session.
    pub fn completed(&mut self, plan: Plan, conn: &ClientConnection) -> bool {
        let resumed = conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
        self.schedule.completed(plan, resumed);
        resumed
    }

    /// A handshake failed: it leaves the schedule.
    pub fn failed(&mut self, plan: Plan) {
        self.schedule.failed(plan);
    }

    /// The share of handshakes to resume from now on.
    pub fn set_resumed(&mut self, share: f64) {
        self.schedule.set_share(share);
    }
}

/// One full handshake with the server at `addr` with these settings, blocking, within
/// `timeout`: what was agreed ("TLS 1.3, X25519, ..."), or why it failed (a plain-HTTP server
/// answers a ClientHello with something that is not TLS).
pub fn check_handshake(
    addr: std::net::SocketAddr,
    settings: &ClientTls,
    timeout: std::time::Duration,
) -> anyhow::Result<String> {
    use anyhow::Context;
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let mut full = settings.clone();
    full.resumed = 0.0;
    let mut client = TlsClient::new(&full, addr.ip())?;
    let (mut conn, _) = client.start()?;
    while conn.is_handshaking() {
        match conn.complete_io(&mut s) {
            Ok((0, 0)) => anyhow::bail!("the server closed the connection during the handshake"),
            Ok(_) => {}
            Err(e) => {
                return Err(
                    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                        Some(tls) => anyhow::anyhow!("{tls}"),
                        None if e.kind() == std::io::ErrorKind::WouldBlock
                            || e.kind() == std::io::ErrorKind::TimedOut =>
                        {
                            anyhow::anyhow!(
                                "no answer to the ClientHello within {} s",
                                timeout.as_secs()
                            )
                        }
                        None => anyhow::anyhow!("{e}"),
                    },
                )
            }
        }
    }
    conn.send_close_notify();
    let _ = conn.complete_io(&mut s);
    let version = match conn.protocol_version() {
        Some(rustls::ProtocolVersion::TLSv1_3) => "TLS 1.3".to_string(),
        Some(rustls::ProtocolVersion::TLSv1_2) => "TLS 1.2".to_string(),
        v => format!("{v:?}"),
    };
    let group = conn
        .negotiated_key_exchange_group()
        .map(|g| format!("{:?}", g.name()))
        .unwrap_or_default();
    let suite = conn
        .negotiated_cipher_suite()
        .map(|c| format!("{:?}", c.suite()))
        .unwrap_or_default();
    let alpn = conn
        .alpn_protocol()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .unwrap_or_else(|| "none".into());
    Ok(format!("{version}, {group}, {suite}, ALPN {alpn}"))
}
