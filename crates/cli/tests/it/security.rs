//! `etcdlat` against etcd started with TLS, mutual TLS and auth: runs that work, and every
//! mismatch failing fast with exit code 2 and one line naming the cause; passwords never
//! in the output, the logs or the report.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use etcdlat_testkit::{Etcd, Pki};

use crate::{count, etcdlat, only_run, read_report};

const SECRET: &str = "s3cret-Pa55";

fn put(endpoint: &str, json: &Path) -> assert_cmd::Command {
    let mut cmd = etcdlat();
    cmd.arg(format!("--endpoints={endpoint}"))
        .args(["--conns=2", "--clients=8", "--dial-timeout=3s", "put", "--total=200"])
        .args(["--key-space-size=200", "--sequential-keys", "--json"])
        .arg(json);
    cmd
}

/// The one `etcdlat: ` line of a run that failed fast with exit code 2.
fn refused(what: &str, cmd: &mut assert_cmd::Command) -> String {
    let started = Instant::now();
    let out: Output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{what}: exit code 2; stderr:\n{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("etcdlat: "),
        "{what}: one line, got:\n{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{what}: fails fast");
    assert!(!stderr.contains(SECRET), "{what}: no password in {stderr}");
    lines[0].to_owned()
}

#[tokio::test]
async fn mutual_tls_runs_and_its_mismatches_are_named() {
    if etcdlat_testkit::skip() {
        return;
    }
    let pki = Pki::new();
    let etcd = Etcd::start_tls(&pki, true).await;
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let endpoint = etcd.endpoint();
    let bare = endpoint.trim_start_matches("https://");

    // With the CA and a client certificate, an endpoint without a scheme uses TLS.
    put(bare, &json)
        .arg(format!("--cacert={}", pki.ca().display()))
        .arg(format!("--cert={}", pki.client_cert().display()))
        .arg(format!("--key={}", pki.client_key().display()))
        .assert()
        .success();
    assert_eq!(count(only_run(&read_report(&json)), "/ops/put/ok"), 200);
    assert_eq!(etcd.key_count().await, 200);

    let ca = format!("--cacert={}", pki.ca().display());
    let identity = [
        format!("--cert={}", pki.client_cert().display()),
        format!("--key={}", pki.client_key().display()),
    ];
    let line = refused(
        "untrusted server certificate",
        put(&endpoint, &json).arg(format!("--cacert={}", pki.other_ca().display())).args(&identity),
    );
    assert!(line.contains("UnknownIssuer"), "{line}");
    let line = refused("no client certificate", put(&endpoint, &json).arg(&ca));
    assert!(line.contains("certificate"), "{line}");
    let line = refused(
        "untrusted client certificate",
        put(&endpoint, &json)
            .arg(&ca)
            .arg(format!("--cert={}", pki.untrusted_client_cert().display()))
            .arg(format!("--key={}", pki.untrusted_client_key().display())),
    );
    assert!(line.contains("certificate"), "{line}");
    let plain = endpoint.replace("https://", "http://");
    let line = refused("plaintext client, TLS server", &mut put(&plain, &json));
    assert!(line.contains("TLS"), "{line}");

    // A scenario file carries the same settings, its paths relative to the file, and a TLS
    // flag replaces them all.
    let scenario = pki.dir().join("mtls.toml");
    std::fs::write(
        &scenario,
        format!(
            "[cluster]\nendpoints = [\"{bare}\"]\ncacert = \"ca.pem\"\ncert = \"client.pem\"\n\
             key = \"client-key.pem\"\n[load]\nconns = 2\nclients = 8\ntotal = 200\n\
             [op.put]\nkey-space-size = 200\nsequential-keys = true\n"
        ),
    )
    .unwrap();
    let run = || {
        let mut cmd = etcdlat();
        cmd.current_dir(dir.path()).args(["run", "--json"]).arg(&json).arg(&scenario);
        cmd
    };
    run().assert().success();
    let report = read_report(&json);
    assert_eq!(count(only_run(&report), "/ops/put/ok"), 200);
    let errors = only_run(&report).pointer("/ops/put/errors").and_then(|e| e.as_object());
    assert!(errors.is_none_or(serde_json::Map::is_empty), "{errors:?}");
    let other = format!("--cacert={}", pki.other_ca().display());
    let line = refused("a TLS flag replaces the scenario's", run().arg(&other));
    assert!(line.contains("UnknownIssuer"), "{line}");
    let missing = dir.path().join("missing-ca.toml");
    std::fs::write(&missing, "[cluster]\nendpoints = [\"127.0.0.1:1\"]\ncacert = \"nope.pem\"\n[load]\ntotal = 10\n[op.put]\n")
        .unwrap();
    let line = refused("a scenario's missing CA file", etcdlat().arg("run").arg(&missing));
    assert!(line.contains("cluster.cacert") && line.contains("nope.pem"), "{line}");
}

#[tokio::test]
async fn auth_runs_with_a_password_from_the_flag_or_the_environment() {
    if etcdlat_testkit::skip() {
        return;
    }
    let mut etcd = Etcd::start().await;
    etcd.enable_auth(SECRET).await;
    let dir = tempfile::tempdir().unwrap();
    let endpoint = etcd.endpoint();

    let json = dir.path().join("flag.json");
    let out = put(&endpoint, &json)
        .arg(format!("--user=root:{SECRET}"))
        .env("ETCDLAT_LOG", "debug")
        .assert()
        .success();
    let output = out.get_output();
    for stream in [&output.stdout, &output.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(SECRET), "no password in the output");
    }
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(!text.contains(SECRET), "no password in the report");
    assert_eq!(count(only_run(&read_report(&json)), "/ops/put/ok"), 200);

    let json = dir.path().join("env.json");
    put(&endpoint, &json).arg("--user=root").env("ETCDLAT_PASSWORD", SECRET).assert().success();
    assert_eq!(count(only_run(&read_report(&json)), "/ops/put/ok"), 200);

    // Watch streams (the client's own, not etcd-client's) carry the token too.
    let json = dir.path().join("watch.json");
    etcdlat()
        .arg(format!("--endpoints={endpoint}"))
        .args(["--conns=2", "--user=root", "watch", "--streams=2", "--watch-per-stream=3"])
        .args(["--put-total=10", "--json"])
        .arg(&json)
        .env("ETCDLAT_PASSWORD", SECRET)
        .assert()
        .success();
    let report = read_report(&json);
    assert_eq!(count(only_run(&report), "/ops/watch-create/ok"), 6);
    assert_eq!(count(only_run(&report), "/watch/received"), 60, "10 puts reach 6 watchers");
    assert_eq!(count(only_run(&report), "/watch/missing"), 0);

    let line = refused(
        "wrong password",
        put(&endpoint, &json).arg("--user=root").env("ETCDLAT_PASSWORD", "wrong-pw"),
    );
    assert!(line.contains("wrong user name or password"), "{line}");
    assert!(!line.contains("wrong-pw"), "{line}");
    let line = refused("no user", &mut put(&endpoint, &json));
    assert!(line.contains("pass --user"), "{line}");

    // A scenario names the user; the password comes from the environment, never the file.
    let scenario = dir.path().join("auth.toml");
    let body = "[load]\nconns = 2\nclients = 8\ntotal = 200\n[op.put]\nkey-space-size = 200\n";
    let cluster = format!("[cluster]\nendpoints = [\"{endpoint}\"]\n");
    std::fs::write(&scenario, format!("{cluster}user = \"root\"\n{body}")).unwrap();
    let json = dir.path().join("scenario.json");
    let run = |scenario: &Path| {
        let mut cmd = etcdlat();
        cmd.args(["run", "--json"]).arg(&json).arg(scenario);
        cmd
    };
    run(&scenario).env("ETCDLAT_PASSWORD", SECRET).assert().success();
    assert_eq!(count(only_run(&read_report(&json)), "/ops/put/ok"), 200);
    let line = refused("a scenario's user without a password", &mut run(&scenario));
    assert!(line.contains("cluster.user root: no password"), "{line}");
    let with_password = dir.path().join("password.toml");
    std::fs::write(&with_password, format!("{cluster}user = \"root:{SECRET}\"\n{body}")).unwrap();
    let line = refused("a password in a scenario", &mut run(&with_password));
    assert!(line.contains("cluster.user") && line.contains("never from a scenario file"), "{line}");
}
