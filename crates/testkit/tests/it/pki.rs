//! `Pki` against a real etcd member serving clients over TLS with `--client-cert-auth`: it
//! answers a client presenting `client_cert`, under every name the server certificate
//! carries that reaches it; it rejects a client presenting no certificate or one from the
//! other CA; and a client that does not trust `ca` rejects the member.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use etcdlat_testkit::{Pki, eventually};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{AlertDescription, CertificateError, ClientConfig, RootCertStore};
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

const LOCALHOST: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

#[tokio::test]
async fn etcd_accepts_the_client_certificate_and_rejects_the_others() {
    if etcdlat_testkit::skip() {
        return;
    }
    let pki = Pki::new();
    let mut etcd = TlsEtcd::start(&pki);
    let trusted = client_config(&pki.ca(), Some((&pki.client_cert(), &pki.client_key())));
    etcd.wait_ready(&trusted).await;

    for name in [ServerName::from(LOCALHOST), ServerName::try_from("localhost").unwrap()] {
        let answer = get_version(etcd.client_addr, name.clone(), &trusted).await;
        let answer = answer.unwrap_or_else(|e| panic!("GET /version as {name:?}: {e}"));
        assert!(answer.starts_with("HTTP/1.0 200 "), "{answer}");
        assert!(answer.contains("\"etcdserver\":\""), "{answer}");
    }

    let untrusted =
        client_config(&pki.ca(), Some((&pki.untrusted_client_cert(), &pki.untrusted_client_key())));
    let anonymous = client_config(&pki.ca(), None);
    for (who, config) in [("the other CA's client", &untrusted), ("no certificate", &anonymous)] {
        let err = get_version(etcd.client_addr, LOCALHOST.into(), config)
            .await
            .expect_err("etcd answered a client it should reject");
        // With TLS 1.3 the client's half of the handshake completes before the server has
        // checked the client's certificate, so the rejection arrives as an alert on read.
        assert!(
            matches!(
                tls_error(&err),
                Some(rustls::Error::AlertReceived(
                    AlertDescription::BadCertificate
                        | AlertDescription::UnknownCA
                        | AlertDescription::CertificateRequired
                ))
            ),
            "{who}: expected a certificate alert from etcd, got {err:?}\n{}",
            etcd.log_tail()
        );
    }

    let distrustful = client_config(&pki.other_ca(), Some((&pki.client_cert(), &pki.client_key())));
    let err = get_version(etcd.client_addr, LOCALHOST.into(), &distrustful)
        .await
        .expect_err("a client trusting only the other CA accepted etcd's certificate");
    assert!(
        matches!(
            tls_error(&err),
            Some(rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer))
        ),
        "expected the client to reject etcd's certificate, got {err:?}"
    );
}

/// A single etcd member whose client URL is HTTPS with `--client-cert-auth`, its data dir
/// and log in a temp dir; killed on drop, also when the test panics.
struct TlsEtcd {
    child: Child,
    client_addr: SocketAddr,
    dir: TempDir,
}

impl TlsEtcd {
    fn start(pki: &Pki) -> Self {
        let dir = tempfile::Builder::new().prefix("etcdlat-tls-etcd-").tempdir().unwrap();
        let log = std::fs::File::create(dir.path().join("etcd.log")).unwrap();
        let [client_port, peer_port] = free_ports();
        let client_url = format!("https://127.0.0.1:{client_port}");
        let peer_url = format!("http://127.0.0.1:{peer_port}");
        let bin = etcdlat_testkit::etcd_bin();
        let child = Command::new(&bin)
            .arg("--name=t")
            .arg(format!("--data-dir={}", dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=t={peer_url}"))
            .arg(format!("--cert-file={}", pki.server_cert().display()))
            .arg(format!("--key-file={}", pki.server_key().display()))
            .arg(format!("--trusted-ca-file={}", pki.ca().display()))
            .arg("--client-cert-auth")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "starting {}: {e}\n(these tests need a real etcd >= 3.4: `apt-get install \
                     etcd-server`, or set ETCD_BIN; ETCDLAT_SKIP_ETCD=1 skips them deliberately)",
                    bin.display()
                )
            });
        Self { child, client_addr: SocketAddr::new(LOCALHOST, client_port), dir }
    }

    /// Retries a TLS request until etcd answers it, for up to 10 s.
    async fn wait_ready(&mut self, config: &Arc<ClientConfig>) {
        let answer = eventually(
            Duration::from_secs(10),
            async || {
                let answer = get_version(self.client_addr, LOCALHOST.into(), config).await;
                if answer.is_err()
                    && let Some(status) = self.child.try_wait().unwrap()
                {
                    panic!("etcd exited while starting ({status})\n{}", self.log_tail());
                }
                answer
            },
            Result::is_ok,
        )
        .await;
        if let Err(err) = answer {
            panic!(
                "etcd did not answer over TLS within 10 s (last error: {err:?})\n{}",
                self.log_tail()
            );
        }
    }

    /// The last lines of etcd's log, for panic messages.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        format!("--- etcd log (tail) ---\n{}", lines[lines.len().saturating_sub(30)..].join("\n"))
    }
}

impl Drop for TlsEtcd {
    fn drop(&mut self) {
        // Errors mean it has already exited and been reaped; nothing is left to clean up.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Two distinct loopback ports that were free a moment ago: both are bound at once, so they
/// differ, then released for etcd to bind.
fn free_ports() -> [u16; 2] {
    let listeners = [(); 2].map(|()| TcpListener::bind((LOCALHOST, 0)).unwrap());
    listeners.map(|l| l.local_addr().unwrap().port())
}

/// A TLS client config trusting only the CA in `ca`, presenting `(cert, key)` if given.
fn client_config(ca: &Path, identity: Option<(&Path, &Path)>) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from_pem_file(ca).unwrap()).unwrap();
    // The provider is named rather than taken from the process default, which is ambiguous
    // when a dependency also enables another provider.
    let builder =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_file(cert).unwrap()],
                PrivateKeyDer::from_pem_file(key).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    Arc::new(config)
}

/// `GET /version` over TLS to `addr`, verifying the server as `name`; the whole response.
async fn get_version(
    addr: SocketAddr,
    name: ServerName<'static>,
    config: &Arc<ClientConfig>,
) -> io::Result<String> {
    let tcp = TcpStream::connect(addr).await?;
    let mut tls = TlsConnector::from(Arc::clone(config)).connect(name, tcp).await?;
    tls.write_all(b"GET /version HTTP/1.0\r\n\r\n").await?;
    let mut answer = String::new();
    tls.read_to_string(&mut answer).await?;
    Ok(answer)
}

/// The TLS error inside an I/O error from tokio-rustls, if that is what it is.
fn tls_error(err: &io::Error) -> Option<&rustls::Error> {
    err.get_ref().and_then(|inner| inner.downcast_ref())
}
