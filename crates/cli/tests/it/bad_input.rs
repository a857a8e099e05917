//! Every kind of bad input, table-driven: scenario files (malformed TOML, unknown keys, wrong
//! types, zero and negative counts, values over the request limit, no stop condition, bad
//! fault steps), command-line flags (clap's own errors included), output paths, and endpoints
//! (no port, a bad port or scheme, a host that does not resolve, nothing listening, TLS and
//! auth). Each exits 2 with exactly one line on stderr that names the problem, nothing on
//! stdout, and no panic; none starts an etcd (`ETCD_BIN` points nowhere).
//!
//! And the one odd input that is valid: more connections than clients, as in etcd's tool,
//! runs and warns in one line that some connections stay idle.

use std::net::TcpListener;
use std::process::Output;
use std::time::{Duration, Instant};

use etcdlat_testkit::Etcd;

use crate::{count, etcdlat, only_run, parse_report};

/// The one line on stderr, after checking exit code 2, no panic and nothing on stdout.
pub(crate) fn error_line(what: &str, out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: exit code 2; stderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.len() == 1 && lines[0].starts_with("etcdlat: "),
        "{what}: one `etcdlat: ` line on stderr, got:\n{stderr}"
    );
    assert!(out.stdout.is_empty(), "{what}: nothing on stdout");
    lines[0].to_owned()
}

/// A put scenario's text with `load` (the `[load]` table's lines) and `rest` after the op.
fn scenario(load: &str, rest: &str) -> String {
    format!("name = \"bad\"\n\n[load]\n{load}\n\n[op.put]\nkey-space-size = 10\n{rest}")
}

/// A scenario of a Kubernetes model, `model` its `[kubernetes]` table.
fn k8s(model: &str) -> String {
    format!("name = \"k8s\"\n[load]\nduration = \"1s\"\n[kubernetes]\n{model}\n")
}

#[test]
fn bad_input_exits_2_with_one_line_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let total = "total = 10";
    let files = [
        ("malformed", file("malformed.toml", "name = \"x\n[load]\n")),
        (
            "unknown-top",
            file("unknown-top.toml", &format!("nmae = \"x\"\n{}", scenario(total, ""))),
        ),
        ("unknown-op-key", file("unknown-op-key.toml", &scenario(total, "val_size = 8\n"))),
        ("clients-text", file("clients-text.toml", &scenario("clients = \"ten\"\ntotal = 1", ""))),
        ("duration-int", file("duration-int.toml", &scenario("duration = 30", ""))),
        ("total-negative", file("total-negative.toml", &scenario("total = -5", ""))),
        ("conns-zero", file("conns-zero.toml", &scenario("conns = 0\ntotal = 1", ""))),
        ("rate-only", file("rate-only.toml", &scenario("rate = 100", ""))),
        ("too-big", file("too-big.toml", &scenario(total, "val-size = \"2MiB\"\n"))),
        ("no-op", file("no-op.toml", "name = \"x\"\n[load]\ntotal = 1\n")),
        (
            "k8s-too-big",
            file(
                "k8s-too-big.toml",
                "name = \"pods\"\n[load]\ntotal = 1\n[op.k8s-update]\nobject-size = \"1600KiB\"\n",
            ),
        ),
        ("k8s-no-nodes", file("k8s-no-nodes.toml", &k8s("nodes = 0"))),
        ("k8s-big-pods", file("k8s-big-pods.toml", &k8s("nodes = 10\npod-size = \"2MiB\""))),
        ("k8s-100-nodes", file("k8s-100-nodes.toml", &k8s("nodes = 100"))),
        (
            "k8s-pod-range",
            file(
                "k8s-pod-range.toml",
                &k8s("nodes = 10\npod-size = [{ min = \"15KB\", max = \"4KB\" }]"),
            ),
        ),
        (
            "k8s-pod-tail",
            file(
                "k8s-pod-tail.toml",
                &k8s(
                    "nodes = 10\npod-size = [{ min = \"4KB\", max = \"15KB\", weight = 99 }, { min = \"70KB\", max = \"2MiB\" }]",
                ),
            ),
        ),
        (
            "no-port",
            file(
                "no-port.toml",
                &format!("{}[cluster]\nendpoints = [\"localhost\"]\n", scenario(total, "")),
            ),
        ),
        (
            "kill-no-member",
            file(
                "kill-no-member.toml",
                &scenario("duration = \"5s\"", "[[faults]]\nat = \"1s\"\naction = \"kill\"\n"),
            ),
        ),
        (
            "explode",
            file(
                "explode.toml",
                &scenario("duration = \"5s\"", "[[faults]]\nat = \"1s\"\naction = \"explode\"\n"),
            ),
        ),
        (
            "fault-late",
            file(
                "fault-late.toml",
                &scenario("duration = \"5s\"", "[[faults]]\nat = \"9s\"\naction = \"compact\"\n"),
            ),
        ),
        (
            "kill-remote",
            file(
                "kill-remote.toml",
                &format!(
                    "{}[cluster]\nendpoints = [\"127.0.0.1:2379\"]\n",
                    scenario(
                        "duration = \"5s\"",
                        "[[faults]]\nat = \"1s\"\naction = \"kill\"\nmember = \"leader\"\n"
                    )
                ),
            ),
        ),
        (
            "kill",
            file(
                "kill.toml",
                &scenario(
                    "duration = \"5s\"",
                    "[[faults]]\nat = \"1s\"\naction = \"kill\"\nmember = \"follower\"\n",
                ),
            ),
        ),
    ];
    let path =
        |name: &str| files.iter().find(|(n, _)| *n == name).map(|(_, p)| p.as_str()).unwrap();
    let missing = dir.path().join("missing.toml").display().to_string();
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let no_dir = dir.path().join("a-file/sub/r.csv").display().to_string();
    let nothing_listening = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("--endpoints=127.0.0.1:{}", listener.local_addr().unwrap().port())
    };

    // (what, arguments, what the one line must contain)
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        // Scenario files.
        ("malformed TOML", vec!["run", path("malformed")], vec!["malformed.toml", "line 1"]),
        (
            "unknown top-level key",
            vec!["run", path("unknown-top")],
            vec!["line 1, column 1", "unknown field `nmae`"],
        ),
        (
            "unknown key in an op",
            vec!["run", path("unknown-op-key")],
            vec!["unknown field `val_size`"],
        ),
        ("clients is text", vec!["run", path("clients-text")], vec!["line 4", "invalid type"]),
        ("duration is a number", vec!["run", path("duration-int")], vec!["line 4", "invalid type"]),
        ("negative total", vec!["run", path("total-negative")], vec!["line 4", "-5"]),
        ("conns = 0", vec!["run", path("conns-zero")], vec!["line 4", "load.conns"]),
        (
            "rate with neither total nor duration",
            vec!["run", path("rate-only")],
            vec!["load: needs total (requests) or duration"],
        ),
        (
            "value over a local etcd's request limit",
            vec!["run", path("too-big")],
            vec!["bad:", "2097160 bytes", "request limit", "--max-request-bytes"],
        ),
        ("no operation", vec!["run", path("no-op")], vec!["op: missing"]),
        (
            "an apiserver object over a local etcd's request limit",
            vec!["run", path("k8s-too-big")],
            vec!["pods:", "a k8s object of 1638400 bytes", "request limit"],
        ),
        (
            "a Kubernetes model of no nodes",
            vec!["run", path("k8s-no-nodes")],
            vec!["kubernetes.nodes: must be more than 0"],
        ),
        (
            "a Kubernetes model's pods over etcd's request limit",
            vec!["run", path("k8s-big-pods")],
            vec!["kubernetes.pod-size", "2097152 bytes", "request limit"],
        ),
        (
            "a Kubernetes model's pod size range upside down",
            vec!["run", path("k8s-pod-range")],
            vec!["kubernetes.pod-size.0.min", "15000 bytes is more than max (4000 bytes)"],
        ),
        (
            "a Kubernetes model's pod size tail over etcd's request limit",
            vec!["run", path("k8s-pod-tail")],
            vec!["kubernetes.pod-size", "its largest size, 2097152 bytes", "request limit"],
        ),
        (
            "a Kubernetes model's preload over the quota",
            vec!["--local", "--quota-backend-bytes=16MiB", "run", path("k8s-100-nodes")],
            vec!["kubernetes.nodes", "preload of", "quota of 16777216 bytes"],
        ),
        (
            "endpoint without a port in a file",
            vec!["run", path("no-port")],
            vec!["\"localhost\"", "no port"],
        ),
        (
            "kill without a member",
            vec!["run", path("kill-no-member")],
            vec!["faults.0.member", "needs a member"],
        ),
        ("unknown fault action", vec!["run", path("explode")], vec!["unknown variant `explode`"]),
        ("fault after the run", vec!["run", path("fault-late")], vec!["faults.0.at", "run ends"]),
        (
            "kill against the file's endpoints",
            vec!["run", path("kill-remote")],
            vec!["faults.0.action", "throwaway local cluster"],
        ),
        (
            "kill against --endpoints",
            vec!["run", path("kill"), "--endpoints=127.0.0.1:2379"],
            vec!["faults.0: kill", "--endpoints"],
        ),
        ("missing scenario", vec!["run", &missing], vec!["missing.toml", "no such file"]),
        // Flags.
        ("--clients not a number", vec!["--clients=abc", "put"], vec!["'abc'", "--clients"]),
        ("negative --conns", vec!["--conns=-1", "put"], vec!["'-1'", "--conns"]),
        ("--total=0", vec!["put", "--total=0"], vec!["--total"]),
        ("--key-space-size=-3", vec!["put", "--key-space-size=-3"], vec!["--key-space-size", "-3"]),
        ("bad --duration", vec!["put", "--duration=soon"], vec!["--duration", "soon"]),
        ("malformed --threshold", vec!["--threshold", "p99 <", "put"], vec!["--threshold"]),
        (
            "a threshold on an operation the run does not have",
            vec!["--local", "--threshold", "range.p99 < \"20ms\"", "put"],
            vec!["--threshold", "range.p99", "range, which this run does not measure", "put"],
        ),
        ("--members=0", vec!["--local", "--members=0", "put"], vec!["--members", "got 0"]),
        ("--workers=0", vec!["--workers=0", "put"], vec!["--workers"]),
        (
            "--quota-backend-bytes not a size",
            vec!["--local", "--quota-backend-bytes=lots", "put"],
            vec!["--quota-backend-bytes", "lots"],
        ),
        (
            "--quota-backend-bytes with --endpoints",
            vec!["--endpoints=127.0.0.1:2379", "--quota-backend-bytes=1MiB", "put"],
            vec!["--quota-backend-bytes", "--endpoints"],
        ),
        (
            "--target=follower:0",
            vec!["--target=follower:0", "put"],
            vec!["--target", "counts from 1"],
        ),
        (
            "--val-size over a local etcd's request limit",
            vec!["--local", "put", "--val-size=2MiB"],
            vec!["request limit"],
        ),
        ("unknown subcommand", vec!["frobnicate"], vec!["unrecognized subcommand 'frobnicate'"]),
        ("range without a key", vec!["range"], vec!["required", "<KEY>"]),
        (
            "range --key-starts without a key space",
            vec!["range", "k", "--key-starts=5"],
            vec!["--key-starts applies to keys read one per request"],
        ),
        ("run without a scenario", vec!["run"], vec!["run needs a scenario", "etcdlat scenarios"]),
        ("misspelt flag", vec!["run", "put-1mb", "--conn=2"], vec!["'--conn'", "'--conns'"]),
        // Output paths.
        (
            "unwritable --json",
            vec!["--json=/proc/etcdlat-r.json", "put"],
            vec!["--json", "cannot write"],
        ),
        (
            "--csv under a file, where no directory can be made",
            vec!["--csv", &no_dir, "put"],
            vec!["--csv", "cannot create directory"],
        ),
        // Endpoints.
        (
            "endpoint without a port",
            vec!["--endpoints=localhost", "put"],
            vec!["localhost", "no port"],
        ),
        (
            "endpoint with a bad port",
            vec!["--endpoints=127.0.0.1:99999", "put"],
            vec!["invalid port"],
        ),
        (
            "unix socket endpoint",
            vec!["--endpoints=unix:///run/etcd:1", "put"],
            vec!["only http://"],
        ),
        (
            "unresolvable host",
            vec!["--endpoints=no-such-host.invalid:2379", "--dial-timeout=2s", "put", "--total=1"],
            vec!["no-such-host.invalid:2379"],
        ),
        (
            "nothing listening",
            vec![&nothing_listening, "--dial-timeout=2s", "put", "--total=1"],
            vec![nothing_listening.trim_start_matches("--endpoints="), "cannot connect"],
        ),
        // TLS and auth options that cannot work whatever the server (mismatches with real
        // servers are in `security`); the secret never echoed.
        (
            "--cacert missing",
            vec!["--cacert=/nonexistent/ca.pem", "put"],
            vec!["--cacert /nonexistent/ca.pem", "no such file"],
        ),
        (
            "--cacert not PEM",
            vec!["--endpoints=https://127.0.0.1:1", "--cacert=/etc/hostname", "put"],
            vec!["--cacert /etc/hostname", "no PEM certificate"],
        ),
        ("--cert without --key", vec!["--cert=/etc/hostname", "put"], vec!["--cert and --key"]),
        (
            "--user without a password, off a terminal",
            vec!["--user=root", "put"],
            vec!["--user root: no password", "ETCDLAT_PASSWORD"],
        ),
        (
            "--user with a password, nothing listening",
            vec!["--user=root:s3cret", &nothing_listening, "--dial-timeout=2s", "put"],
            vec!["cannot connect"],
        ),
    ];
    assert!(cases.len() >= 25);
    for (what, args, needles) in &cases {
        let started = Instant::now();
        let out = etcdlat().env("ETCD_BIN", "/nonexistent/etcd").args(args).output().unwrap();
        let line = error_line(what, &out);
        for needle in needles {
            assert!(line.contains(needle), "{what}: {needle:?} in {line:?}");
        }
        assert!(!line.contains("s3cret"), "{what}: the password is not echoed: {line}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{what}: took {:?}",
            started.elapsed()
        );
    }
}

#[tokio::test]
async fn more_connections_than_clients_runs_and_warns_once() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let endpoints = format!("--endpoints={}", etcd.endpoint());
    let out = etcdlat()
        .args([&endpoints, "--conns=4", "--clients=2", "put", "--total=20", "--json=-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    assert_eq!(
        stderr.lines().collect::<Vec<_>>(),
        [
            "etcdlat: warning: 4 connections for 2 clients: 2 connections stay idle (client i uses connection i % conns)"
        ]
    );
    let report = parse_report(&out.stdout);
    let run = only_run(&report);
    assert_eq!(count(run, "/params/conns"), 4);
    assert_eq!(count(run, "/ops/put/ok"), 20);
}

/// More connections than the open-file limit allows, even raised to its hard limit, are
/// refused before anything is dialled (nothing listens at the endpoint, and the error is
/// not a dial's), with the limit and `ulimit -n` named.
#[test]
fn more_connections_than_the_file_limit_are_refused_before_dialling() {
    let bin = assert_cmd::cargo::cargo_bin("etcdlat");
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(r#"ulimit -n 256 && exec "$0" --endpoints 127.0.0.1:9 --conns 1000 --clients 1000 put --total 10"#)
        .arg(&bin)
        .env("ETCD_BIN", "/nonexistent/etcd")
        .output()
        .unwrap();
    let line = error_line("--conns 1000 under ulimit -n 256", &out);
    assert!(line.contains("1000 connections need about"), "{line}");
    assert!(line.contains("the limit is 256"), "{line}");
    assert!(line.contains("ulimit -n"), "{line}");
}
