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

/// Why a handshake failed, in words a user acts on: which check failed and what to do
/// (rustls' certificate errors and webpki's kinds named, not their Debug text).
pub fn failure_words(e: &rustls::Error) -> String {
    use rustls::CertificateError as C;
    let cert = |c: &C| -> String {
        match c {
            C::UnknownIssuer => "the server's certificate is not signed by a CA in the trusted roots (the lab's CA, or load.tls.ca): set load.tls.ca to the CA that issued it, or verify = false".into(),
            C::NotValidForName | C::NotValidForNameContext { .. } => "the server's certificate is not for the name the clients verify (load.tls.sni, or the address without one): set sni to a name the certificate holds, or verify = false".into(),
            C::Expired | C::ExpiredContext { .. } => "the server's certificate has expired: renew it, or set verify = false".into(),
            C::NotValidYet | C::NotValidYetContext { .. } => "the server's certificate is not valid yet (its notBefore is in the future: check the clock), or set verify = false".into(),
            C::Revoked => "the server's certificate is revoked: replace it".into(),
            C::BadSignature => "the server's certificate chain has a signature that does not verify: the certificate and its CA do not match".into(),
            C::InvalidPurpose | C::InvalidPurposeContext { .. } => "the server's certificate is not for TLS servers (its extended key usage lacks serverAuth): make a server certificate".into(),
            C::BadEncoding => "the server's certificate cannot be parsed (bad DER): check the file the server is given".into(),
            C::Other(o) => webpki_words(&o.to_string()),
            other => format!("the server's certificate failed verification ({other}): fix the certificate, or set verify = false"),
        }
    };
    match e {
        rustls::Error::InvalidCertificate(c) => cert(c),
        rustls::Error::NoCertificatesPresented => "the server presented no certificate".into(),
        rustls::Error::AlertReceived(a) => format!("the server refused the handshake with a {a:?} alert: check the version (load.tls.version), the group and the SNI it accepts"),
        other => format!("the handshake broke: {other}"),
    }
}

/// webpki's verification errors (rustls passes them as `OtherError`, whose text is the kind's
/// name) in words.
fn webpki_words(kind: &str) -> String {
    match kind {
        "CaUsedAsEndEntity" => "the CA file holds a CA certificate used as the server's own: make a CA and a leaf (the server presents the leaf, load.tls.ca holds the CA), or set verify = false".into(),
        "EndEntityUsedAsCa" => "the chain uses a server certificate as a CA: load.tls.ca must hold the CA that issued the server's certificate, or set verify = false".into(),
        "UnsupportedCertVersion" => "the server's certificate is not X.509 v3: make it again (openssl req -x509 makes v3)".into(),
        "MissingOrMalformedExtensions" | "ExtensionValueInvalid" => "the server's certificate has missing or malformed extensions: make it again with a CA and a leaf".into(),
        other => format!("the server's certificate failed verification ({other}): fix the certificate, or set verify = false"),
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

    /// The store as one config sees it: every view keeps what the server sends; only an
    /// offering one hands a session out (TLS over TCP and QUIC alike).
    pub fn view(self: &Arc<Self>, offers: bool) -> Arc<dyn ClientSessionStore> {
        Arc::new(StoreView {
            store: self.clone(),
            offers,
        })
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
        // One config, cloned for each plan: rustls offers a stored session only under a
        // config with the same verifier and client-certificate resolver as the one it came
        // from, and each `with_no_client_auth()` makes a resolver of its own, so tickets from
        // full handshakes were never offered (the QUIC client had the same defect).
        let mut base = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[s.version.rustls()])?
            .dangerous()
            .with_custom_certificate_verifier(verifier.clone())
            .with_no_client_auth();
        base.alpn_protocols = if s.offer_h2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        base.enable_sni = !s.sni.is_empty();
        let config = |offers: bool| -> anyhow::Result<Arc<ClientConfig>> {
            let mut c = base.clone();
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
    let (mut s, mut conn) = handshake(addr, settings, &[b"http/1.1"], timeout)?;
    conn.send_close_notify();
    let _ = conn.complete_io(&mut s);
    Ok(agreed(&conn))
}

/// One full handshake with the server at `addr` offering the ALPN protocols `alpn`, blocking,
/// within `timeout`: the socket and the connection, ready for application data, or why not.
pub fn handshake(
    addr: std::net::SocketAddr,
    settings: &ClientTls,
    alpn: &[&[u8]],
    timeout: std::time::Duration,
) -> anyhow::Result<(std::net::TcpStream, ClientConnection)> {
    use anyhow::Context;
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout)
        .with_context(|| format!("connecting to {addr}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let mut full = settings.clone();
    full.resumed = 0.0;
    let client = TlsClient::new(&full, addr.ip())?;
    let mut config = (*client.full).clone();
    config.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
    let mut conn = ClientConnection::new(Arc::new(config), client.name.clone())?;
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
    Ok((s, conn))
}

/// What a handshake agreed: "TLS 1.3, X25519, TLS13_AES_256_GCM_SHA384, ALPN h2".
pub fn agreed(conn: &ClientConnection) -> String {
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
    format!("{version}, {group}, {suite}, ALPN {alpn}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A self-signed certificate for `name`: with `ca` as `openssl req -x509` makes it
    /// (CA:TRUE), else a leaf.
    fn self_signed(name: &str, ca: bool) -> CertificateDer<'static> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut p = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        // Names of their own: a leaf whose issuer names the CA would be checked against its
        // key (a bad signature), not reported as from an unknown issuer.
        let cn = if ca { "a CA" } else { "a leaf" };
        p.distinguished_name.push(rcgen::DnType::CommonName, cn);
        if ca {
            p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        p.self_signed(&key).unwrap().der().clone()
    }

    fn verify(cert: &CertificateDer<'static>, root: &CertificateDer<'static>) -> rustls::Error {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(root.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let v = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .unwrap();
        let name = ServerName::try_from("synlab.test").unwrap();
        v.verify_server_cert(cert, &[], &name, &[], UnixTime::now())
            .unwrap_err()
    }

    #[test]
    fn certificate_failures_are_said_in_words_with_what_to_do() {
        let ca = self_signed("synlab.test", true);
        let e = verify(&ca, &ca);
        let words = failure_words(&e);
        assert!(
            words.starts_with(
                "the CA file holds a CA certificate used as the server's own: make a CA and a leaf"
            ) && words.contains("or set verify = false"),
            "{words} ({e:?})"
        );
        assert!(!words.contains("OtherError"), "{words}");
        let other = self_signed("synlab.test", false);
        let words = failure_words(&verify(&other, &ca));
        assert!(
            words.contains("not signed by a CA in the trusted roots"),
            "{words}"
        );
        assert_eq!(
            classify(&verify(&other, &ca)),
            HandshakeFailure::BadCertificate
        );
    }
}
