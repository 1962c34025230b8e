//! The lab's certificates, made at start: a CA of its own and a server certificate it signs
//! (ECDSA P-256 by default, RSA-2048 on request) for the lab's name, `localhost` and the
//! server's address. Written as PEM files that the built-in server, nginx and Apache read, and
//! that a client verifying certificates trusts (the CA).

use super::settings::{KeyKind, LAB_NAME};
use anyhow::Context;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// A CA and a server certificate it signed, PEM.
#[derive(Clone)]
pub struct LabCert {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub key: KeyKind,
}

impl std::fmt::Debug for LabCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LabCert({})", self.key)
    }
}

/// Where a written [`LabCert`] is.
#[derive(Debug, Clone, PartialEq)]
pub struct CertFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl LabCert {
    /// A fresh CA and a certificate for the lab's name, `localhost` and `addr`, with a `key`
    /// key.
    pub fn generate(key: KeyKind, addr: Option<IpAddr>) -> anyhow::Result<LabCert> {
        let ca_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name
            .push(DnType::CommonName, "synlab lab CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca.self_signed(&ca_key).context("making the lab's CA")?;
        let issuer = Issuer::new(ca, ca_key);
        let leaf_key = match key {
            KeyKind::EcdsaP256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?,
            KeyKind::Rsa2048 => {
                KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048)?
            }
        };
        let mut names = vec![LAB_NAME.to_string(), "localhost".to_string()];
        if let Some(a) = addr {
            names.push(a.to_string());
        }
        let mut leaf = CertificateParams::new(names)?;
        leaf.distinguished_name.push(DnType::CommonName, LAB_NAME);
        let cert = leaf
            .signed_by(&leaf_key, &issuer)
            .context("signing the lab's server certificate")?;
        Ok(LabCert {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: leaf_key.serialize_pem(),
            key,
        })
    }

    /// Writes `ca.pem`, `cert.pem` and `key.pem` into `dir`, the key 0600 (nginx and Apache
    /// read it as root, before their workers switch users).
    pub fn write(&self, dir: &Path) -> anyhow::Result<CertFiles> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        // Absolute: a server resolves a relative path against its own prefix.
        let dir = &dir
            .canonicalize()
            .with_context(|| format!("resolving {}", dir.display()))?;
        let files = CertFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        };
        for (path, text, mode) in [
            (&files.ca, &self.ca_pem, 0o644),
            (&files.cert, &self.cert_pem, 0o644),
            (&files.key, &self.key_pem, 0o600),
        ] {
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(mode)
                .open(path)
                .with_context(|| format!("writing {}", path.display()))?;
            f.write_all(text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::client::danger::ServerCertVerifier;

    #[test]
    fn a_lab_certificate_is_signed_by_its_ca_and_names_the_lab() {
        for key in [KeyKind::EcdsaP256, KeyKind::Rsa2048] {
            let c = LabCert::generate(key, Some("198.18.0.1".parse().unwrap())).unwrap();
            assert!(c.cert_pem.starts_with("-----BEGIN CERTIFICATE-----"));
            assert!(c.key_pem.contains("PRIVATE KEY"));
            let dir = tempfile::tempdir().unwrap();
            let f = c.write(dir.path()).unwrap();
            assert!(f.key.exists() && f.ca.exists());
            // The certificate verifies against the CA for each of its names.
            let v = crate::tls::client::verifier_for(&c.ca_pem).unwrap();
            let cert = crate::tls::server::read_certs(&f.cert).unwrap();
            for name in [LAB_NAME, "localhost", "198.18.0.1"] {
                let sn = rustls::pki_types::ServerName::try_from(name.to_string()).unwrap();
                v.verify_server_cert(&cert[0], &[], &sn, &[], rustls::pki_types::UnixTime::now())
                    .unwrap_or_else(|e| panic!("{key}: {name}: {e}"));
            }
            let other = rustls::pki_types::ServerName::try_from("other.test").unwrap();
            assert!(v
                .verify_server_cert(
                    &cert[0],
                    &[],
                    &other,
                    &[],
                    rustls::pki_types::UnixTime::now()
                )
                .is_err());
        }
    }
}
