//! How to reach a secured cluster: TLS (server verification and client certificates) and
//! etcd's user/password authentication.
//!
//! A [`Security`] is given once to the driver and used by every connection it opens: the
//! load's own connections, the control connections (status, member list, compaction,
//! faults, barrier) and the metrics scrapes.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

pub use crate::error::TlsConfigError;

/// TLS options, as etcd's tools name them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// PEM file with the certificate authorities that sign the servers' certificates
    /// (`--cacert`); the system's roots when `None`.
    pub ca: Option<PathBuf>,
    /// PEM file with this client's certificate (`--cert`), for servers that ask for one.
    pub cert: Option<PathBuf>,
    /// PEM file with this client's private key (`--key`).
    pub key: Option<PathBuf>,
    /// Accept any server certificate (`--insecure-skip-tls-verify`): the connection is
    /// encrypted but not authenticated.
    pub insecure_skip_verify: bool,
}

impl TlsOptions {
    /// Whether any option is set: then endpoints without a scheme are dialled with TLS,
    /// as etcd's tools do.
    pub fn is_set(&self) -> bool {
        self.ca.is_some() || self.cert.is_some() || self.key.is_some() || self.insecure_skip_verify
    }

    /// The rustls configuration these options describe: roots, client certificate, ALPN
    /// `h2`.
    pub(crate) fn client_config(&self) -> Result<Arc<ClientConfig>, TlsConfigError> {
        match (&self.cert, &self.key) {
            (Some(_), None) => return Err(TlsConfigError::CertWithoutKey),
            (None, Some(_)) => return Err(TlsConfigError::KeyWithoutCert),
            _ => {}
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(TlsConfigError::Versions)?;
        let builder = if self.insecure_skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyServer { provider }))
        } else {
            builder.with_root_certificates(self.roots()?)
        };
        let mut config = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => {
                let chain = read_certs(cert, "--cert")?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .map_err(|source| TlsConfigError::Key { path: key.clone(), source })?;
                builder.with_client_auth_cert(chain, key).map_err(TlsConfigError::Identity)?
            }
            _ => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Arc::new(config))
    }

    fn roots(&self) -> Result<RootCertStore, TlsConfigError> {
        let mut roots = RootCertStore::empty();
        match &self.ca {
            Some(ca) => {
                for cert in read_certs(ca, "--cacert")? {
                    roots
                        .add(cert)
                        .map_err(|source| TlsConfigError::CaCert { path: ca.clone(), source })?;
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                let (added, _) = roots.add_parsable_certificates(found.certs);
                if added == 0 {
                    return Err(TlsConfigError::NoSystemRoots);
                }
            }
        }
        Ok(roots)
    }
}

fn read_certs(
    path: &Path,
    flag: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .and_then(|iter| iter.collect::<Result<_, _>>())
        .map_err(|source| TlsConfigError::ReadCerts { flag, path: path.to_owned(), source })?;
    if certs.is_empty() {
        return Err(TlsConfigError::NoCerts { flag, path: path.to_owned() });
    }
    Ok(certs)
}

/// `--insecure-skip-tls-verify`: any certificate is accepted, but the handshake's
/// signatures are still checked, so the peer holds the key of the certificate it shows.
#[derive(Debug)]
struct AcceptAnyServer {
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

/// etcd user credentials. The password is never printed: `Debug` hides it, and nothing
/// else in etcdlat formats it.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    user: String,
    password: String,
}

impl Credentials {
    /// A user and its password.
    pub fn new(user: impl Into<String>, password: impl Into<String>) -> Self {
        Self { user: user.into(), password: password.into() }
    }

    /// The user name.
    pub fn user(&self) -> &str {
        &self.user
    }

    pub(crate) fn password(&self) -> &str {
        &self.password
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &"<hidden>")
            .finish()
    }
}

/// TLS and authentication for every connection of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Security {
    /// TLS options; endpoints with `https://` use TLS even when none is set.
    pub tls: TlsOptions,
    /// etcd user and password, when the cluster has authentication enabled.
    pub credentials: Option<Credentials>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_password() {
        let c = Credentials::new("root", "s3cret-pa55");
        let shown =
            format!("{c:?} {:?}", Security { credentials: Some(c.clone()), ..Default::default() });
        assert!(shown.contains("root"));
        assert!(!shown.contains("s3cret-pa55"), "{shown}");
    }

    #[test]
    fn half_a_client_identity_is_an_error() {
        let only_cert = TlsOptions { cert: Some("c.pem".into()), ..TlsOptions::default() };
        let e = only_cert.client_config().unwrap_err().to_string();
        assert!(e.contains("--cert needs --key"), "{e}");
        let missing =
            TlsOptions { ca: Some("/nonexistent/ca.pem".into()), ..TlsOptions::default() };
        let e = missing.client_config().unwrap_err().to_string();
        assert!(e.contains("--cacert /nonexistent/ca.pem"), "{e}");
    }
}
