//! Runs that cannot happen: exit code 2 and one line on stderr that says why, starting with
//! `etcdlat: ` (clap's own message, for a flag it does not know, on one line too), and never
//! a panic.
//! Bad input is rejected before anything is dialled or started.

use std::net::TcpListener;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::etcdlat;

/// The one line etcdlat printed on stderr, after checking that it failed with exit code 2.
fn error_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "exit code 2; stderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("etcdlat: "),
        "one `etcdlat: ` line on stderr, got:\n{stderr}"
    );
    lines[0].to_owned()
}

/// Names of the entries of `dir`.
fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn bad_input_is_one_line_naming_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let malformed = file("malformed.toml", "name = \"x\"\n[load\nclients = 1\n");
    let unknown_key = file("unknown-key.toml", "name = \"x\"\n\n[load]\nconn = 1\n\n[op.put]\n");
    let no_clients = file("no-clients.toml", "name = \"x\"\n\n[load]\nclients = 0\n\n[op.put]\n");
    let missing = dir.path().join("missing.toml").display().to_string();
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let no_dir_json = dir.path().join("a-file/sub/r.json").display().to_string();
    let here = dir.path().display().to_string();

    // (what, arguments, what the message must contain)
    let cases: &[(&str, Vec<&str>, &[&str])] = &[
        ("malformed TOML", vec!["run", &malformed], &["malformed.toml", "line 2, column 6"]),
        (
            "unknown key",
            vec!["run", &unknown_key],
            &["unknown-key.toml", "line 4, column 1", "unknown field `conn`"],
        ),
        ("clients = 0", vec!["run", &no_clients], &["no-clients.toml", "line 4", "load.clients"]),
        ("missing scenario file", vec!["run", &missing], &["missing.toml", "no such file"]),
        ("scenario is a directory", vec!["run", &here], &["not a file"]),
        (
            "--json under a file, where no directory can be made",
            vec!["--json", &no_dir_json, "put"],
            &["--json", "cannot create directory"],
        ),
        ("--json is a directory", vec!["put", "--json", &here], &["--json", "is a directory"]),
        (
            "endpoint without a port",
            vec!["--endpoints=127.0.0.1", "put"],
            &["--endpoints", "127.0.0.1", "no port"],
        ),
        ("--key-space-size=0", vec!["put", "--key-space-size=0"], &["--key-space-size"]),
        ("--total=0", vec!["put", "--total=0"], &["--total"]),
        ("--clients=0", vec!["--clients=0", "put"], &["--clients"]),
        ("bad --val-size", vec!["put", "--val-size=lots"], &["--val-size"]),
        ("bad --dial-timeout", vec!["--dial-timeout=soon", "put"], &["--dial-timeout"]),
        ("bad --consistency", vec!["range", "k", "--consistency=x"], &["--consistency", "\"x\""]),
        ("--user", vec!["--user=root", "put"], &["--user root: no password"]),
        (
            "--local with --endpoints",
            vec!["--local", "--endpoints=127.0.0.1:2379", "put"],
            &["--local", "--endpoints"],
        ),
    ];
    for (what, args, needles) in cases {
        // Should a case get past validation, it finds no etcd to start instead of starting one.
        let out = etcdlat().env("ETCD_BIN", "/nonexistent/etcd").args(args).output().unwrap();
        let line = error_line(&out);
        for needle in *needles {
            assert!(line.contains(needle), "{what}: {needle:?} in {line:?}");
        }
        assert!(out.stdout.is_empty(), "{what}: nothing on stdout");
    }
}

#[test]
fn unknown_flags_are_named_by_clap_in_one_line() {
    for args in [
        &["put", "--bogus-flag"][..],
        &["--bogus-flag", "range", "k"],
        &["run", "put-1mb", "--conn=2"],
    ] {
        let out = etcdlat().args(args).output().unwrap();
        let line = error_line(&out);
        assert!(
            line.starts_with("etcdlat: unexpected argument '"),
            "{args:?}: clap's message: {line}"
        );
        let flag =
            args.iter().find_map(|a| a.split('=').next().filter(|f| f.starts_with("--"))).unwrap();
        assert!(line.contains(&format!("'{flag}'")), "{args:?}: names {flag}: {line}");
    }
}

#[test]
fn unreachable_endpoint_fails_fast_and_names_it() {
    let endpoint = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("127.0.0.1:{}", listener.local_addr().unwrap().port())
    };
    let started = Instant::now();
    let out = etcdlat()
        .arg(format!("--endpoints={endpoint}"))
        .args(["--dial-timeout=2s", "put", "--total=10"])
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let line = error_line(&out);
    assert!(line.contains(&endpoint), "names {endpoint}: {line}");
    assert!(elapsed < Duration::from_secs(5), "gave up after {elapsed:?}");
}

#[test]
fn missing_etcd_binary_says_how_to_get_one_and_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = etcdlat()
        .env("ETCD_BIN", "/nonexistent/etcd")
        .env("TMPDIR", tmp.path())
        .args(["run", "scenarios/put-1mb.toml", "--total=1"])
        .output()
        .unwrap();
    let line = error_line(&out);
    for needle in ["/nonexistent/etcd", "apt-get install etcd-server", "ETCD_BIN", "--endpoints"] {
        assert!(line.contains(needle), "{needle:?} in {line}");
    }
    assert_eq!(entries(tmp.path()), Vec::<String>::new(), "no temp dir left in TMPDIR");
}
