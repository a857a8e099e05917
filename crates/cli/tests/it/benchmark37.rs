//! etcd 3.7's `benchmark` tool (go.etcd.io/etcd/v3 v3.7.1, tools/benchmark) with `etcdlat`
//! in its place: the command lines its repository documents (tools/local-tester's Procfile,
//! tools/rw-heatmaps' script, the README's `--help`) and its flags new in 3.7 (`range
//! --stream`, `--paginate`, `--prefix` without a key, `--auto-sync-interval`,
//! `--report-perfdash`, `mvcc put` refused), run against a real etcd 3.7.3 (built by
//! `.ci/deps --tests`), each checked against what the server then holds or answered. Totals
//! are scaled down from the documented ones; the flags are theirs, written as they are.
//!
//! `--paginate` under concurrent writes reads each key once per request, every page at the
//! first page's revision (without the pin, its check fails the requests).
//!
//! And against the tests' own etcd (`ETCD_BIN`, Debian's 3.4 by default), `range --stream`
//! is refused in one line naming 3.7 when that etcd is older, and streams when it is not.

use std::path::PathBuf;

use etcdlat_testkit::Etcd;
use serde_json::Value;

use crate::bad_input::error_line;
use crate::{count, etcdlat, only_run, parse_report};

/// The etcd release the 3.7 tool's command lines run against.
const VERSION: &str = "v3.7.3";
/// Keys the documented puts write (100,000 in the Procfile and the heatmap script).
const KEYS: u64 = 1000;
/// The heatmap script's value size here.
const VALUE_BYTES: u64 = 100;

/// etcd 3.7.3 from the cache `.ci/deps --tests` builds it into; `None`, with the reason
/// printed, when it is not there (`.ci/run` builds it first, so CI always runs these).
fn etcd_3_7() -> Option<PathBuf> {
    if etcdlat_testkit::skip() {
        return None;
    }
    let bin = etcdlat_testkit::built_etcd(VERSION);
    if bin.is_none() {
        eprintln!(
            "skipping: etcd {VERSION} is not in ${{ETCD_CACHE:-~/.cache/etcdlat/etcd}} (`.ci/deps --tests` builds it)"
        );
    }
    bin
}

/// Runs `etcdlat` with `args` (etcd's tool's, then `--json -`) and returns its one run.
fn run(args: &[&str]) -> Value {
    let out = etcdlat().args(args).args(["--json", "-"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: stderr:\n{stderr}");
    only_run(&parse_report(&out.stdout)).clone()
}

/// The 3.7 tool's documented command lines and its new flags, in order on one cluster of
/// three members: the puts fill it, the ranges read it back, the rest use it.
#[tokio::test]
async fn the_3_7_tools_command_lines_run_with_etcdlat_in_its_place() {
    let Some(bin) = etcd_3_7() else { return };
    let etcd = Etcd::start_bin(&bin, 3).await;
    let eps = etcd.endpoints();
    let all = format!("--endpoints={}", eps.join(","));
    let first = eps[0].clone();

    // tools/local-tester/Procfile's stress-put (--key-space-size and --total 100000).
    let before = etcd.revision().await;
    let put = run(&[
        &all,
        "--clients=27",
        "--conns=3",
        "put",
        "--sequential-keys",
        "--key-space-size=1000",
        "--total=1000",
    ]);
    assert_eq!(count(&put, "/ops/put/ok"), KEYS);
    assert_eq!(etcd.revision().await - before, KEYS as i64, "every put written once");
    assert_eq!(etcd.key_count().await, KEYS as i64);

    // tools/rw-heatmaps/rw-benchmark.sh: its fill (--endpoints with a space, then a URL) ...
    let before = etcd.revision().await;
    let fill = run(&[
        "put",
        "--sequential-keys",
        "--key-space-size=1000",
        "--val-size=100",
        "--key-size=8",
        "--endpoints",
        &first,
        "--total=1000",
    ]);
    assert_eq!(count(&fill, "/ops/put/ok"), KEYS);
    assert_eq!(etcd.revision().await - before, KEYS as i64);
    assert_eq!(etcd.key_count().await, KEYS as i64, "the same keys, rewritten");

    // ... and its mixed load: txn-mixed "" (every key) at a read/write ratio.
    let before = etcd.revision().await;
    let mixed = run(&[
        "txn-mixed",
        "",
        "--conns=4",
        "--clients=4",
        "--total=200",
        "--endpoints",
        &first,
        "--rw-ratio",
        "1",
        "--limit",
        "1000",
        "--val-size",
        "100",
    ]);
    let (reads, writes) = (count(&mixed, "/ops/txn-read/ok"), count(&mixed, "/ops/txn-write/ok"));
    assert_eq!(reads + writes, 200);
    assert!(reads > 0 && writes > 0, "both kinds at ratio 1: {reads} reads, {writes} writes");
    assert_eq!(etcd.revision().await - before, writes as i64, "a revision per write");
    assert_eq!(count(&mixed, "/ops/txn-read/keys"), reads * KEYS, "each read every key");

    // range --stream, and --prefix without a key: every key, in a stream of messages.
    let stream = run(&[&all, "range", "--prefix", "--stream", "--total=10"]);
    assert_eq!(count(&stream, "/ops/range/ok"), 10);
    assert_eq!(count(&stream, "/ops/range/keys"), 10 * KEYS);
    assert_eq!(count(&stream, "/ops/range/value_bytes"), 10 * KEYS * VALUE_BYTES);
    assert_eq!(count(&stream, "/ops/range-first/ok"), 10, "the first message of each");
    let (first_p50, last_p50) = (
        count(&stream, "/ops/range-first/latency_us/p50"),
        count(&stream, "/ops/range/latency_us/p50"),
    );
    assert!(first_p50 <= last_p50, "the first message before the last: {first_p50} > {last_p50}");
    let stream = run(&[&all, "range", "--stream", "--count-only", "--prefix", "--total=3"]);
    assert_eq!(count(&stream, "/ops/range/keys"), 3 * KEYS, "the count of the last message");

    // range --paginate: 10,000-key pages (one here), and etcdlat's --page-size (16 pages).
    let before = etcd.revision().await;
    for page in [None, Some("--page-size=64")] {
        let mut args = vec![all.as_str(), "range", "--prefix", "--paginate", "--total=5"];
        args.extend(page);
        let paged = run(&args);
        assert_eq!(count(&paged, "/ops/range/ok"), 5, "{page:?}: all the pages one sample");
        assert_eq!(count(&paged, "/ops/range/errors_total"), 0, "{page:?}");
        assert_eq!(count(&paged, "/ops/range/keys"), 5 * KEYS, "{page:?}: every key once");
        assert_eq!(count(&paged, "/ops/range/value_bytes"), 5 * KEYS * VALUE_BYTES);
    }
    let unary = run(&[&all, "range", "--prefix", "--total=3", "--consistency=s"]);
    assert_eq!(count(&unary, "/ops/range/keys"), 3 * KEYS);
    assert_eq!(etcd.revision().await, before, "reads write nothing");

    // --auto-sync-interval: given one member, the load moves to the member list's three.
    let synced = run(&[
        &format!("--endpoints={first}"),
        "--auto-sync-interval=500ms",
        "--conns=3",
        "--clients=3",
        "range",
        "k",
        "--duration=3s",
        "--total=100000000",
        "--consistency=s",
    ]);
    let members: Vec<&Value> = synced["members"].as_array().unwrap().iter().collect();
    let answered = members.iter().filter(|m| m["ok"].as_u64().unwrap_or(0) > 0).count();
    assert_eq!(answered, 3, "every member answered once the list was synced: {members:#?}");

    // --report-perfdash: into $ARTIFACTS, named as etcd's tool names it.
    let artifacts = tempfile::tempdir().unwrap();
    let out = etcdlat()
        .env("ARTIFACTS", artifacts.path())
        .args([&all, "--report-perfdash", "range", "--prefix", "--total=5", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let files: Vec<_> = std::fs::read_dir(artifacts.path()).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().into_string().unwrap();
    let time = name.strip_prefix("EtcdAPI_benchmark_range_").and_then(|t| t.strip_suffix(".json"));
    let time = time.unwrap_or_else(|| panic!("{name}"));
    assert!(humantime::parse_rfc3339(time).is_ok(), "RFC 3339: {name}");
    let perfdash: Value = serde_json::from_slice(&std::fs::read(files[0].path()).unwrap()).unwrap();
    assert_eq!(perfdash["version"], "v1");
    assert_eq!(perfdash["dataItems"][0]["labels"]["Operation"], "RANGE");
    assert_eq!(perfdash["dataItems"][0]["unit"], "ms");
    // Without $ARTIFACTS: ./_artifacts, made in the current directory.
    let out = etcdlat()
        .current_dir(artifacts.path())
        .env_remove("ARTIFACTS")
        .args([&all, "--report-perfdash", "put", "--total=5", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let made: Vec<_> =
        std::fs::read_dir(artifacts.path().join("_artifacts")).unwrap().flatten().collect();
    assert_eq!(made.len(), 1, "{made:?}");
    let name = made[0].file_name().into_string().unwrap();
    assert!(name.starts_with("EtcdAPI_benchmark_put_") && name.ends_with("Z.json"), "{name}");

    // mvcc put: refused in one line, nothing sent.
    let before = etcd.revision().await;
    let out = etcdlat()
        .args([&all, "mvcc", "put", "--total=10", "--batch-interval=100", "--batch-limit=10"])
        .output()
        .unwrap();
    let line = error_line("mvcc put", &out);
    assert!(line.contains("in-process, in Go"), "{line}");
    assert_eq!(etcd.revision().await, before);

    // The README's `benchmark --help`, and range's flags in its help.
    let help = etcdlat().arg("--help").output().unwrap();
    assert_eq!(help.status.code(), Some(0));
    let help = etcdlat().args(["range", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--stream", "--paginate", "--prefix", "--auto-sync-interval", "--report-perfdash"]
    {
        assert!(help.contains(flag), "range --help lacks {flag}:\n{help}");
    }
}

/// `range --stream` on the tests' own etcd: an etcd before 3.7 has no RangeStream, and the
/// run is refused in one line naming 3.7 and the cluster's version before anything is sent;
/// on 3.7 or later it streams.
#[tokio::test]
async fn stream_needs_etcd_3_7() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let mut client = etcd.client().await;
    client.put("k", "v", None).await.unwrap();
    let said = etcdlat_testkit::etcd_version();
    let version = said.strip_prefix("etcd ").and_then(|s| s.split(' ').next()).unwrap_or("");
    let mut parts = version.split('.').map(|p| p.parse::<u64>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let out = etcdlat()
        .args([&format!("--endpoints={}", etcd.endpoint()), "range", "k", "--stream", "--total=3"])
        .args(["--json", "-"])
        .output()
        .unwrap();
    if (major, minor) < (3, 7) {
        let line = error_line("--stream before 3.7", &out);
        assert!(
            line.contains("RangeStream") && line.contains("etcd 3.7 or later"),
            "names the version that has it: {line}"
        );
        assert!(line.ends_with(&format!("the cluster runs etcd {version}")), "{line}");
    } else {
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let run = only_run(&parse_report(&out.stdout)).clone();
        assert_eq!(count(&run, "/ops/range/keys"), 3);
    }
}

/// `range --paginate` under writes: every page is read at the first page's revision, so a
/// key rewritten while the pages go is read as it was then; a page showing a later write
/// would fail the request (etcdlat checks each page's keys against the pinned revision).
#[tokio::test]
async fn paginate_pins_its_pages_to_the_first_pages_revision_under_writes() {
    let Some(bin) = etcd_3_7() else { return };
    let etcd = Etcd::start_bin(&bin, 1).await;
    let endpoints = format!("--endpoints={}", etcd.endpoint());
    let keys = ["put", "--prefix=p/", "--sequential-keys", "--key-space-size=1000"];
    run(&[&endpoints, keys[0], keys[1], keys[2], keys[3], "--total=1000"]);
    // The same keys rewritten as fast as one client goes, while the pages are read.
    let mut writer = std::process::Command::new(env!("CARGO_BIN_EXE_etcdlat"))
        .args([&endpoints, keys[0], keys[1], keys[2], keys[3], "--duration=20s", "--quiet"])
        .spawn()
        .unwrap();
    let before = etcd.revision().await;
    let paged = run(&[&endpoints, "range", "p/", "--prefix", "--paginate", "--page-size=10"]
        .into_iter()
        .chain(["--total=20"])
        .collect::<Vec<_>>());
    let written = etcd.revision().await - before;
    let _ = writer.kill();
    let _ = writer.wait();
    assert!(written > 100, "the keys were rewritten while the pages went: {written}");
    assert_eq!(count(&paged, "/ops/range/errors_total"), 0, "{paged:#}");
    assert_eq!(count(&paged, "/ops/range/keys"), 20 * 1000, "each key once per request");
}
