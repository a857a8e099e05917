//! Throwaway certificates for tests that run etcd over TLS.
//!
//! ```no_run
//! let pki = etcdlat_testkit::Pki::new();
//! let flags = [
//!     format!("--cert-file={}", pki.server_cert().display()),
//!     format!("--key-file={}", pki.server_key().display()),
//!     format!("--trusted-ca-file={}", pki.ca().display()),
//!     "--client-cert-auth".to_owned(),
//! ];
//! // ... and the client trusts `pki.ca()` and presents `pki.client_cert()` / `pki.client_key()`.
//! ```
//!
//! Every certificate is valid from a day before it was made, so that a clock a little behind
//! does not reject it, for ten years. Keys are ECDSA P-256 in PKCS#8 PEM
//! (`BEGIN PRIVATE KEY`), which etcd (Go) reads.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;
use time::{Duration, OffsetDateTime};

const CA: &str = "ca.pem";
const SERVER_CERT: &str = "server.pem";
const SERVER_KEY: &str = "server-key.pem";
const CLIENT_CERT: &str = "client.pem";
const CLIENT_KEY: &str = "client-key.pem";
const ROOT_CLIENT_CERT: &str = "root.pem";
const ROOT_CLIENT_KEY: &str = "root-key.pem";
const OTHER_CA: &str = "other-ca.pem";
const UNTRUSTED_CLIENT_CERT: &str = "untrusted-client.pem";
const UNTRUSTED_CLIENT_KEY: &str = "untrusted-client-key.pem";
const JWT_KEY: &str = "jwt-key.pem";
const JWT_PUBLIC_KEY: &str = "jwt-pub.pem";

/// The names the server certificate is valid for: every way a test reaches a local member.
const SERVER_NAMES: [&str; 3] = ["127.0.0.1", "::1", "localhost"];

/// The common name of [`Pki::client_cert`], which etcd takes as the user name when
/// authentication is enabled.
pub const CLIENT_COMMON_NAME: &str = "etcdlat-client";

/// A test PKI in a temp dir that is removed on drop, as PEM files:
///
/// - a CA ([`Pki::ca`]);
/// - a server certificate signed by it for 127.0.0.1, ::1 and localhost, usable for both
///   server and client authentication, since etcd members present the same certificate
///   for peer traffic and for the gateway's connection to their own client port;
/// - client certificates signed by it, with common names `etcdlat-client` and `root` (etcd's
///   user names when authentication is on);
/// - a second, unrelated CA ([`Pki::other_ca`]) with a client certificate of its own, which a
///   server trusting only [`Pki::ca`] rejects;
/// - a key pair for etcd's JWT auth tokens ([`Pki::jwt_keys`]).
#[derive(Debug)]
pub struct Pki {
    dir: TempDir,
}

impl Pki {
    /// Generates every key and certificate and writes them into a new temp dir.
    ///
    /// # Panics
    /// When the temp dir cannot be created or written, or rcgen fails.
    #[must_use]
    pub fn new() -> Self {
        use ExtendedKeyUsagePurpose::{ClientAuth, ServerAuth};

        let dir = tempfile::Builder::new()
            .prefix("etcdlat-pki-")
            .tempdir()
            .expect("creating a temp dir for the test PKI");
        let pki = Self { dir };
        let now = OffsetDateTime::now_utc();

        let ca = pki.authority("etcdlat test CA", CA, now);
        pki.issue(
            &ca,
            "etcdlat test server",
            &SERVER_NAMES,
            &[ServerAuth, ClientAuth],
            (SERVER_CERT, SERVER_KEY),
            now,
        );
        pki.issue(&ca, CLIENT_COMMON_NAME, &[], &[ClientAuth], (CLIENT_CERT, CLIENT_KEY), now);
        pki.issue(&ca, "root", &[], &[ClientAuth], (ROOT_CLIENT_CERT, ROOT_CLIENT_KEY), now);

        let other_ca = pki.authority("etcdlat untrusted CA", OTHER_CA, now);
        pki.issue(
            &other_ca,
            CLIENT_COMMON_NAME,
            &[],
            &[ClientAuth],
            (UNTRUSTED_CLIENT_CERT, UNTRUSTED_CLIENT_KEY),
            now,
        );

        let jwt = KeyPair::generate().expect("generating a JWT key");
        pki.write(JWT_KEY, &jwt.serialize_pem());
        pki.write(JWT_PUBLIC_KEY, &jwt.public_key_pem());
        pki
    }

    /// The CA that signed the server and client certificates (`ca.pem`).
    #[must_use]
    pub fn ca(&self) -> PathBuf {
        self.path(CA)
    }

    /// The server certificate (`server.pem`), for 127.0.0.1, ::1 and localhost.
    #[must_use]
    pub fn server_cert(&self) -> PathBuf {
        self.path(SERVER_CERT)
    }

    /// The server certificate's key (`server-key.pem`).
    #[must_use]
    pub fn server_key(&self) -> PathBuf {
        self.path(SERVER_KEY)
    }

    /// A client certificate signed by [`Pki::ca`] (`client.pem`), common name
    /// [`CLIENT_COMMON_NAME`].
    #[must_use]
    pub fn client_cert(&self) -> PathBuf {
        self.path(CLIENT_CERT)
    }

    /// The key of [`Pki::client_cert`] (`client-key.pem`).
    #[must_use]
    pub fn client_key(&self) -> PathBuf {
        self.path(CLIENT_KEY)
    }

    /// A client certificate signed by [`Pki::ca`] with common name `root` (`root.pem`): etcd's
    /// root user when authentication is on.
    #[must_use]
    pub fn root_client_cert(&self) -> PathBuf {
        self.path(ROOT_CLIENT_CERT)
    }

    /// The key of [`Pki::root_client_cert`] (`root-key.pem`).
    #[must_use]
    pub fn root_client_key(&self) -> PathBuf {
        self.path(ROOT_CLIENT_KEY)
    }

    /// A CA unrelated to [`Pki::ca`] (`other-ca.pem`).
    #[must_use]
    pub fn other_ca(&self) -> PathBuf {
        self.path(OTHER_CA)
    }

    /// A client certificate signed by [`Pki::other_ca`] (`untrusted-client.pem`), so a server
    /// trusting [`Pki::ca`] rejects it. Its common name is [`CLIENT_COMMON_NAME`], so the
    /// issuer is the only thing wrong with it.
    #[must_use]
    pub fn untrusted_client_cert(&self) -> PathBuf {
        self.path(UNTRUSTED_CLIENT_CERT)
    }

    /// The key of [`Pki::untrusted_client_cert`] (`untrusted-client-key.pem`).
    #[must_use]
    pub fn untrusted_client_key(&self) -> PathBuf {
        self.path(UNTRUSTED_CLIENT_KEY)
    }

    /// The private and public keys (ES256) etcd signs and checks JWT auth tokens with:
    /// `--auth-token=jwt,priv-key=...,pub-key=...,sign-method=ES256`.
    #[must_use]
    pub fn jwt_keys(&self) -> (PathBuf, PathBuf) {
        (self.path(JWT_KEY), self.path(JWT_PUBLIC_KEY))
    }

    /// The directory holding every file.
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
    }

    fn write(&self, file: &str, pem: &str) {
        let path = self.path(file);
        if let Err(e) = std::fs::write(&path, pem) {
            panic!("writing {}: {e}", path.display());
        }
    }

    /// A self-signed CA, written to `file`.
    fn authority(
        &self,
        common_name: &str,
        file: &str,
        now: OffsetDateTime,
    ) -> CertifiedIssuer<'static, KeyPair> {
        let mut params = params(common_name, &[], now);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("generating a CA key");
        let ca = CertifiedIssuer::self_signed(params, key).expect("self-signing a CA");
        self.write(file, &ca.pem());
        ca
    }

    /// A certificate and a fresh key signed by `issuer`, written to `(cert, key)`.
    fn issue(
        &self,
        issuer: &Issuer<'_, KeyPair>,
        common_name: &str,
        names: &[&str],
        usages: &[ExtendedKeyUsagePurpose],
        (cert_file, key_file): (&str, &str),
        now: OffsetDateTime,
    ) {
        let mut params = params(common_name, names, now);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = usages.to_vec();
        let key = KeyPair::generate().expect("generating a key");
        let cert = params.signed_by(&key, issuer).expect("signing a certificate");
        self.write(cert_file, &cert.pem());
        self.write(key_file, &key.serialize_pem());
    }
}

impl Default for Pki {
    /// Same as [`Pki::new`].
    fn default() -> Self {
        Self::new()
    }
}

/// Parameters shared by every certificate: subject, alternative names (IP addresses or DNS
/// names) and validity.
fn params(common_name: &str, names: &[&str], now: OffsetDateTime) -> CertificateParams {
    let names: Vec<String> = names.iter().map(|&n| n.to_owned()).collect();
    let mut params = CertificateParams::new(names).expect("valid subject alternative names");
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, common_name);
    params.not_before = now - Duration::days(1);
    params.not_after = now + Duration::days(10 * 365);
    params
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use x509_parser::pem::{Pem, parse_x509_pem};
    use x509_parser::prelude::{ASN1Time, GeneralName, X509Certificate};

    use super::*;

    /// The PEM block in `path`, which must hold exactly one certificate.
    fn pem(path: &Path) -> Pem {
        let bytes = std::fs::read(path).unwrap();
        let (rest, pem) = parse_x509_pem(&bytes).unwrap();
        assert_eq!(pem.label, "CERTIFICATE", "{}", path.display());
        assert!(rest.iter().all(u8::is_ascii_whitespace), "{} holds one block", path.display());
        pem
    }

    fn common_name(cert: &X509Certificate<'_>) -> String {
        let names: Vec<_> =
            cert.subject().iter_common_name().map(|cn| cn.as_str().unwrap().to_owned()).collect();
        assert_eq!(names.len(), 1, "one common name");
        names.into_iter().next().unwrap()
    }

    /// Asserts that `cert` was issued and signed by `ca`.
    fn assert_signed_by(cert: &X509Certificate<'_>, ca: &X509Certificate<'_>) {
        assert_eq!(cert.issuer(), ca.subject());
        cert.verify_signature(Some(ca.public_key())).expect("signature by the CA");
    }

    #[test]
    fn authorities_are_distinct_self_signed_unconstrained_cas() {
        let pki = Pki::new();
        let (ca, other) = (pem(&pki.ca()), pem(&pki.other_ca()));
        let (ca, other) = (ca.parse_x509().unwrap(), other.parse_x509().unwrap());
        for ca in [&ca, &other] {
            assert_signed_by(ca, ca);
            let constraints = ca.basic_constraints().unwrap().expect("basic constraints");
            assert!(constraints.value.ca);
            assert_eq!(constraints.value.path_len_constraint, None);
            let usage = ca.key_usage().unwrap().expect("key usage").value;
            assert!(usage.key_cert_sign() && usage.crl_sign() && usage.digital_signature());
        }
        assert_ne!(ca.subject(), other.subject());
        assert!(ca.verify_signature(Some(other.public_key())).is_err());
    }

    #[test]
    fn server_certificate_names_loopback_and_authenticates_both_ways() {
        let pki = Pki::new();
        let (ca, server) = (pem(&pki.ca()), pem(&pki.server_cert()));
        let (ca, server) = (ca.parse_x509().unwrap(), server.parse_x509().unwrap());
        assert_signed_by(&server, &ca);
        assert!(!server.is_ca());

        let usage = server.extended_key_usage().unwrap().expect("extended key usage").value;
        assert!(usage.server_auth && usage.client_auth);

        let san = server.subject_alternative_name().unwrap().expect("alternative names").value;
        let mut names: Vec<String> = san
            .general_names
            .iter()
            .map(|name| match name {
                &GeneralName::IPAddress(&[a, b, c, d]) => IpAddr::from([a, b, c, d]).to_string(),
                &GeneralName::IPAddress(octets) => {
                    IpAddr::from(<[u8; 16]>::try_from(octets).unwrap()).to_string()
                }
                &GeneralName::DNSName(dns) => dns.to_owned(),
                other => panic!("unexpected alternative name {other:?}"),
            })
            .collect();
        names.sort();
        assert_eq!(names, ["127.0.0.1", "::1", "localhost"]);
    }

    #[test]
    fn client_certificates_carry_their_user_names() {
        let pki = Pki::new();
        let ca = pem(&pki.ca());
        let ca = ca.parse_x509().unwrap();
        for (path, user) in
            [(pki.client_cert(), CLIENT_COMMON_NAME), (pki.root_client_cert(), "root")]
        {
            let client = pem(&path);
            let client = client.parse_x509().unwrap();
            assert_signed_by(&client, &ca);
            assert_eq!(common_name(&client), user);
            assert!(!client.is_ca());
            let usage = client.extended_key_usage().unwrap().expect("extended key usage").value;
            assert!(usage.client_auth && !usage.server_auth);
        }
    }

    #[test]
    fn untrusted_client_is_signed_by_the_other_ca_only() {
        let pki = Pki::new();
        let (ca, other, client) =
            (pem(&pki.ca()), pem(&pki.other_ca()), pem(&pki.untrusted_client_cert()));
        let (ca, other, client) =
            (ca.parse_x509().unwrap(), other.parse_x509().unwrap(), client.parse_x509().unwrap());
        assert_signed_by(&client, &other);
        assert_ne!(client.issuer(), ca.subject());
        assert!(client.verify_signature(Some(ca.public_key())).is_err());
        assert_eq!(common_name(&client), CLIENT_COMMON_NAME);
    }

    #[test]
    fn certificates_are_valid_from_yesterday_for_ten_years() {
        let pki = Pki::new();
        let now = ASN1Time::now().timestamp();
        let day = 24 * 60 * 60;
        for path in [
            pki.ca(),
            pki.server_cert(),
            pki.client_cert(),
            pki.root_client_cert(),
            pki.other_ca(),
            pki.untrusted_client_cert(),
        ] {
            let pem = pem(&path);
            let validity = pem.parse_x509().unwrap().validity().clone();
            let (from, to) = (validity.not_before.timestamp(), validity.not_after.timestamp());
            // A minute of slack for the time between making the PKI and reading the clock.
            assert!(
                (now - day - 60..=now - day).contains(&from),
                "{}: from {from}",
                path.display()
            );
            assert!(
                (now + 3650 * day - 60..=now + 3650 * day).contains(&to),
                "{}: to {to}",
                path.display()
            );
        }
    }

    #[test]
    fn keys_are_pkcs8_and_belong_to_their_certificates() {
        let pki = Pki::new();
        for (cert, key) in [
            (pki.server_cert(), pki.server_key()),
            (pki.client_cert(), pki.client_key()),
            (pki.root_client_cert(), pki.root_client_key()),
            (pki.untrusted_client_cert(), pki.untrusted_client_key()),
        ] {
            let text = std::fs::read_to_string(&key).unwrap();
            assert!(text.starts_with("-----BEGIN PRIVATE KEY-----\n"), "{}", key.display());
            let key = KeyPair::from_pem(&text).unwrap();
            assert_eq!(key.algorithm(), &rcgen::PKCS_ECDSA_P256_SHA256);
            let cert = pem(&cert);
            let cert = cert.parse_x509().unwrap();
            assert_eq!(&*cert.public_key().subject_public_key.data, key.public_key_raw());
        }
    }

    #[test]
    fn files_go_away_with_the_pki() {
        let pki = Pki::new();
        let dir = pki.dir().to_owned();
        assert!(pki.server_key().starts_with(&dir) && pki.server_key().is_file());
        drop(pki);
        assert!(!dir.exists());
    }
}
