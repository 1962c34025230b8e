//! TLS for the S-Client and the lab's servers: the settings a scenario names (version, group,
//! resumption, key), the lab's certificates made at start (`cert`), the client side (`client`:
//! configs, the per-worker session store, which handshakes resume, what a failure counts as)
//! and the server side (`server`: the built-in server's config and its handshake counts).
//!
//! One crypto provider, aws-lc-rs, for both sides (see `provider`).

pub mod cert;
pub mod client;
pub mod schedule;
pub mod server;
pub mod settings;

pub use schedule::ResumeSchedule;
pub use settings::{ClientTls, KeyKind, KxGroup, ResumeBy, ServerTls, TlsVersion};

use std::sync::Arc;

/// The crypto provider both sides use, with only `group` offered for key exchange (None: the
/// provider's defaults).
pub fn provider(group: Option<KxGroup>) -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::aws_lc_rs::default_provider();
    if let Some(g) = group {
        p.kx_groups = vec![g.kx()];
    }
    Arc::new(p)
}
