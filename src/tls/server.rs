//! The server side: the built-in server's TLS config from the lab's certificate files, with
//! its session cache and tickets on or off. It accepts TLS 1.2 and 1.3 and every group the
//! provider has, so the client's settings decide.

use super::settings::ServerTls;
use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache};
use rustls::ServerConfig;
use std::path::Path;
use std::sync::Arc;

/// Sessions the built-in server's cache holds (nginx's 10 MB shared cache holds ~40,000).
const CACHE_SESSIONS: usize = 40_000;

/// Reads a PEM certificate chain.
pub fn read_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading the certificate {}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("reading the certificate {}: {e:?}", path.display()))?;
    anyhow::ensure!(!certs.is_empty(), "no certificate in {}", path.display());
    Ok(certs)
}

/// The server's config: its certificate, cache and tickets as `s` says.
pub fn config(s: &ServerTls) -> anyhow::Result<Arc<ServerConfig>> {
    let certs = read_certs(&s.cert)?;
    let key = PrivateKeyDer::from_pem_file(&s.key)
        .map_err(|e| anyhow::anyhow!("reading the key {}: {e:?}", s.key.display()))?;
    let mut c = ServerConfig::builder_with_provider(super::provider(None))
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("the certificate and its key do not go together")?;
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    c.session_storage = if s.session_cache {
        ServerSessionMemoryCache::new(CACHE_SESSIONS)
    } else {
        Arc::new(NoServerSessionStorage {})
    };
    if s.tickets {
        c.ticketer = rustls::crypto::aws_lc_rs::Ticketer::new()?;
    }
    // Neither: no resumption at all, and no ticket is sent that could not be used.
    if !s.session_cache && !s.tickets {
        c.send_tls13_tickets = 0;
    }
    Ok(Arc::new(c))
}

/// How a server handshake ended, for its counters.
pub fn resumed(conn: &rustls::ServerConnection) -> bool {
    conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}
