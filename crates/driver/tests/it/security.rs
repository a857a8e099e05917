//! TLS, mutual TLS and authentication against real etcd servers started with them, and the
//! failures each must name.

use etcdlat_core::OpKind;
use etcdlat_driver::{Credentials, Driver, DriverError, Security, TlsOptions};
use etcdlat_testkit::{Etcd, Pki, grpc_handled, skip};

use crate::{run_on, scenario};

const PUTS: &str = "[load]\nclients = 8\ntotal = 400\n[op.put]\nval-size = 64\nkey-space-size = 400\nsequential-keys = true\n";

async fn connect(etcd: &Etcd, security: Security) -> Result<Driver, DriverError> {
    Driver::builder()
        .endpoints(etcd.endpoints())
        .security(security)
        .conns(2)
        .dial_timeout(std::time::Duration::from_secs(3))
        .connect()
        .await
}

#[tokio::test]
async fn puts_over_tls_and_mutual_tls_reach_the_store() {
    if skip() {
        return;
    }
    let pki = Pki::new();
    for mtls in [false, true] {
        let etcd = Etcd::start_tls(&pki, mtls).await;
        assert!(etcd.endpoint().starts_with("https://"));
        let driver = connect(&etcd, etcd.security().clone()).await.unwrap();
        let report = driver.run(&scenario(PUTS)).await.unwrap();
        let put = report.op(OpKind::Put);
        assert_eq!((put.ok, put.errors_total), (400, 0), "mtls={mtls}: {:?}", put.errors);
        assert_eq!(etcd.key_count().await, 400, "mtls={mtls}");
        // The members' /metrics are scraped over the same TLS.
        let server = &report.server[0];
        assert!(server.url.starts_with("https://"), "{server:?}");
        assert!(server.samples >= 2 && server.last_error.is_none(), "{server:?}");
    }
}

#[tokio::test]
async fn bare_endpoints_use_tls_when_options_are_given_and_insecure_skips_verification() {
    if skip() {
        return;
    }
    let pki = Pki::new();
    let etcd = Etcd::start_tls(&pki, false).await;
    let bare: Vec<String> =
        etcd.endpoints().iter().map(|e| e.trim_start_matches("https://").to_owned()).collect();
    let insecure = Security {
        tls: TlsOptions { insecure_skip_verify: true, ..TlsOptions::default() },
        credentials: None,
    };
    let driver = Driver::builder().endpoints(bare).security(insecure).connect().await.unwrap();
    let report = driver.run(&scenario(PUTS)).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 400);
}

#[tokio::test]
async fn tls_failures_are_named() {
    if skip() {
        return;
    }
    let pki = Pki::new();
    let etcd = Etcd::start_tls(&pki, true).await;
    let tls = |ca, identity: Option<(std::path::PathBuf, std::path::PathBuf)>| Security {
        tls: TlsOptions {
            ca: Some(ca),
            cert: identity.as_ref().map(|i| i.0.clone()),
            key: identity.map(|i| i.1),
            insecure_skip_verify: false,
        },
        credentials: None,
    };
    let client = Some((pki.client_cert(), pki.client_key()));

    // The server's certificate is signed by an authority the client does not trust.
    let e = connect(&etcd, tls(pki.other_ca(), client.clone())).await.unwrap_err();
    assert!(matches!(e, DriverError::Tls { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("UnknownIssuer") && text.contains("--cacert"), "{text}");
    // The cause is rustls' error, inside the handshake's io::Error.
    let io = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>());
    let rustls =
        io.and_then(std::io::Error::get_ref).and_then(|e| e.downcast_ref::<rustls::Error>());
    assert!(
        matches!(
            rustls,
            Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer))
        ),
        "{e:?}"
    );

    // The server asks for a client certificate and gets none, or one it does not trust.
    for identity in [None, Some((pki.untrusted_client_cert(), pki.untrusted_client_key()))] {
        let e = connect(&etcd, tls(pki.ca(), identity)).await.unwrap_err().to_string();
        assert!(e.contains("certificate"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    // A plaintext client against the TLS port.
    let plain: Vec<String> =
        etcd.endpoints().iter().map(|e| e.replace("https://", "http://")).collect();
    let e = Driver::builder()
        .endpoints(plain)
        .dial_timeout(std::time::Duration::from_secs(3))
        .connect()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("TLS"), "names TLS as the likely cause: {e}");

    // TLS (asked for by the options: the endpoint has no scheme) against a plaintext server.
    let plain_etcd = Etcd::start().await;
    let bare = plain_etcd.endpoint().trim_start_matches("http://").to_owned();
    let e = Driver::builder()
        .endpoints([bare])
        .security(tls(pki.ca(), None))
        .connect()
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("TLS on this port"), "{e}");
}

#[tokio::test]
async fn auth_one_token_per_run_and_failures_named() {
    if skip() {
        return;
    }
    let mut etcd = Etcd::start().await;
    etcd.enable_auth("s3cret-pw").await;
    let url = etcd.endpoint();
    let authenticated_before = grpc_handled(&url, "Authenticate");

    let driver = connect(&etcd, etcd.security().clone()).await.unwrap();
    let report = driver.run(&scenario(PUTS)).await.unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 400, "{:?}", report.op(OpKind::Put).errors);
    let report_text = serde_json::to_string(&report).unwrap();
    assert!(!report_text.contains("s3cret-pw"), "no secret in the report");
    // The load's connections share one token: bcrypt once, not once per connection.
    let authenticated = grpc_handled(&url, "Authenticate") - authenticated_before;
    assert!(authenticated <= 3, "{authenticated} Authenticate calls for 2 connections");

    let wrong =
        Security { credentials: Some(Credentials::new("root", "nope")), ..Security::default() };
    let e = connect(&etcd, wrong).await.unwrap_err();
    assert!(matches!(e, DriverError::Auth { .. }), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("wrong user name or password"), "{text}");
    assert!(!text.contains("nope"), "no password in errors: {text}");

    let e = connect(&etcd, Security::default()).await.unwrap_err().to_string();
    assert!(e.contains("requires authentication; pass --user"), "{e}");
}

#[tokio::test]
async fn a_token_lost_in_a_restart_is_renewed() {
    if skip() {
        return;
    }
    let mut etcd = Etcd::start().await;
    etcd.enable_auth("pw").await;
    // etcd keeps simple tokens in memory: the restart forgets the run's token, and the
    // requests after it must authenticate again to succeed.
    let report = run_on(
        &etcd,
        2,
        "[load]\nclients = 4\nduration = \"5s\"\n[op.put]\nkey-space-size = 100\n\
         [[faults]]\nat = \"1s\"\naction = \"restart\"\nmember = \"m0\"\n",
    )
    .await;
    let put = report.op(OpKind::Put);
    let restart = &report.faults[0];
    assert_eq!(restart.error, None, "{restart:#?}");
    assert!(restart.after.ok > 0, "puts succeed after the restart: {restart:#?} {:?}", put.errors);
    assert_eq!(put.errors_of(etcdlat_core::ErrorCode::Unauthenticated), 0, "{:?}", put.errors);
    // The restart costs the requests in flight their connection, and nothing else: a
    // request resent with the renewed token carries its whole body again (an empty one
    // fails as Unknown "EOF").
    let unavailable = put.errors_of(etcdlat_core::ErrorCode::Unavailable);
    assert_eq!(put.errors.values().sum::<u64>(), unavailable, "{:?}", put.error_messages);
}

#[tokio::test]
async fn an_expired_jwt_is_renewed() {
    if skip() {
        return;
    }
    let pki = Pki::new();
    let mut etcd = Etcd::start_jwt(&pki, "2s").await;
    etcd.enable_auth("pw").await;
    let before = grpc_handled(&etcd.endpoint(), "Authenticate");
    // The run's token expires every 2 s: each time, the first request to be refused renews
    // it and is sent again, and no request fails.
    let report = run_on(
        &etcd,
        2,
        "[load]\nclients = 4\nduration = \"7s\"\n[op.put]\nkey-space-size = 100\n",
    )
    .await;
    let put = report.op(OpKind::Put);
    assert!(put.ok > 100, "{put:?}");
    assert!(put.errors.is_empty(), "{:?}", put.error_messages);
    let authenticated = grpc_handled(&etcd.endpoint(), "Authenticate") - before;
    assert!((3..=12).contains(&authenticated), "renewed about every 2 s: {authenticated}");
}
