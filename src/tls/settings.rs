//! The TLS settings a scenario names, one type each, and what the worker and the server are
//! told (`ClientTls`, `ServerTls`).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::PathBuf;

/// The protocol version the clients speak (the servers accept both).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum TlsVersion {
    #[default]
    #[serde(rename = "1.3")]
    V13,
    #[serde(rename = "1.2")]
    V12,
}

impl TlsVersion {
    pub fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            TlsVersion::V13 => &rustls::version::TLS13,
            TlsVersion::V12 => &rustls::version::TLS12,
        }
    }
}

impl fmt::Display for TlsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TlsVersion::V13 => "TLS 1.3",
            TlsVersion::V12 => "TLS 1.2",
        })
    }
}

/// The key-exchange group the clients offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum KxGroup {
    #[default]
    X25519,
    /// NIST P-256 (secp256r1).
    P256,
    /// The hybrid post-quantum group (X25519 + ML-KEM-768); TLS 1.3 only.
    X25519Mlkem768,
}

impl KxGroup {
    pub fn kx(self) -> &'static dyn rustls::crypto::SupportedKxGroup {
        use rustls::crypto::aws_lc_rs::kx_group;
        match self {
            KxGroup::X25519 => kx_group::X25519,
            KxGroup::P256 => kx_group::SECP256R1,
            KxGroup::X25519Mlkem768 => kx_group::X25519MLKEM768,
        }
    }
}

impl fmt::Display for KxGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KxGroup::X25519 => "X25519",
            KxGroup::P256 => "P-256",
            KxGroup::X25519Mlkem768 => "X25519MLKEM768",
        })
    }
}

/// How a resumed handshake finds its session: a ticket the server sealed (stateless), or an
/// id into the server's session cache. TLS 1.3 resumes only by tickets on the wire; a server
/// without ticket keys issues tickets that are ids into its cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum ResumeBy {
    #[default]
    Tickets,
    Ids,
}

impl fmt::Display for ResumeBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResumeBy::Tickets => "tickets",
            ResumeBy::Ids => "session ids",
        })
    }
}

/// The lab certificate's key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum KeyKind {
    #[default]
    #[serde(rename = "ecdsa-p256")]
    EcdsaP256,
    #[serde(rename = "rsa-2048")]
    Rsa2048,
}

impl fmt::Display for KeyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KeyKind::EcdsaP256 => "ECDSA P-256",
            KeyKind::Rsa2048 => "RSA-2048",
        })
    }
}

/// The name the lab's certificate is for, and the SNI the clients send by default.
pub const LAB_NAME: &str = "synlab.test";

/// What a load worker does over TLS (part of its config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientTls {
    pub version: TlsVersion,
    pub group: KxGroup,
    /// The share of handshakes that resume a session (0..=1), by schedule.
    pub resumed: f64,
    pub resume_by: ResumeBy,
    /// The server name sent (SNI) and verified; empty: none sent, the address is verified.
    pub sni: String,
    /// Verify the server's certificate against `ca_pem` (else only the handshake's signature
    /// is checked, as `openssl s_time` and h2load do).
    pub verify: bool,
    /// Trusted roots, PEM (the lab's CA unless the scenario names another).
    #[serde(default)]
    pub ca_pem: String,
    /// A handshake not done after this long is a handshake timeout.
    pub handshake_timeout_s: f64,
    /// Offer ALPN h2 before http/1.1 (the load speaks HTTP/2; set by the engine's layers).
    #[serde(default)]
    pub offer_h2: bool,
    /// Over QUIC (HTTP/3), the share of the resumed handshakes that send their first requests
    /// as 0-RTT early data (0..=1, by schedule).
    #[serde(default)]
    pub early_data: f64,
}

/// What the built-in server does over TLS (part of its config).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTls {
    /// The certificate chain and its key, PEM files.
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Keep sessions in a cache (resumption by id; TLS 1.3 tickets that are ids into it).
    pub session_cache: bool,
    /// Issue stateless session tickets.
    pub tickets: bool,
}
