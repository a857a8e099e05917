//! etcd versions as a parameter of throwaway local clusters: a matrix over `cluster.etcd`
//! and `--etcd` (one etcd, or several: a cell each) run each on the etcd asked for (the
//! system's, v3.6.16 and v3.7.3, which `.ci/deps --tests` builds into
//! `~/.cache/etcdlat/etcd`), as each report's version from Status and Go from `/metrics`
//! show; and bad versions, paths and `cluster.etcd` against `--endpoints` are
//! refused before anything starts: exit 2, one line naming the problem, no etcd run, no temp
//! dir left.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use crate::bad_input::error_line;
use crate::{count, etcdlat, only_run, parse_report, read_report, text};

/// The built version the tests run beside the system's etcd.
const BUILT: &str = "v3.6.16";

/// The version the system's etcd (`ETCD_BIN`, or `etcd` on `PATH`) says it is: `3.4.23`.
fn system_version() -> String {
    let said = etcdlat_testkit::etcd_version();
    let version = said.strip_prefix("etcd ").and_then(|s| s.split(' ').next());
    match version {
        Some(v) if v.starts_with(|c: char| c.is_ascii_digit()) => v.to_owned(),
        _ => panic!("the system's etcd does not say its version: {said}"),
    }
}

/// The etcd version a run's members said they are (from Status).
fn ran_on(run: &Value) -> &str {
    text(run, "/target/etcd_version")
}

/// The Go a run's members' etcd was built with (from their `/metrics`).
fn built_by(run: &Value) -> &str {
    text(run, "/target/go_version")
}

/// A version's binary in the cache of etcd versions (`.ci/deps --tests` builds them).
fn cached(version: &str) -> std::path::PathBuf {
    let cache = std::env::var_os("ETCD_CACHE").filter(|c| !c.is_empty()).map_or_else(
        || Path::new(&std::env::var_os("HOME").expect("HOME")).join(".cache/etcdlat/etcd"),
        std::path::PathBuf::from,
    );
    cache.join(version).join("etcd")
}

/// etcdlat run with `args` in `dir`, which must succeed: its text, and its JSON report.
fn run_in(dir: &Path, args: &[&str]) -> (String, Value) {
    let out = etcdlat().current_dir(dir).args(args).args(["--json", "r.json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8_lossy(&out.stdout).into_owned(), read_report(&dir.join("r.json")))
}

/// The Go `bin` says it was built with: `Go Version: go1.26.8` of its `--version`.
fn go_of(bin: &Path) -> String {
    let out = std::process::Command::new(bin).arg("--version").output();
    let out = out.unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let go = said.lines().find_map(|l| l.strip_prefix("Go Version: "));
    go.unwrap_or_else(|| panic!("{} --version says no Go version: {said}", bin.display()))
        .to_owned()
}

#[test]
fn a_matrix_over_versions_runs_each_on_the_etcd_asked_for() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("v.toml"),
        format!(
            "name = \"v\"\n[load]\ntotal = 20\n[op.put]\nkey-space-size = 20\n\
             [matrix]\n\"cluster.etcd\" = [\"debian\", \"{BUILT}\"]\n"
        ),
    )
    .unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["run", "v.toml", "--json", "r.json", "--markdown", "t.md"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr:\n{stderr}");
    let report = read_report(&dir.path().join("r.json"));
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let system = system_version();
    for (run, (name, asked, version)) in runs.iter().zip([
        ("v [etcd=debian]", "system", system.as_str()),
        ("v [etcd=v3.6.16]", BUILT, "3.6.16"),
    ]) {
        assert_eq!(text(run, "/name"), name);
        assert!(run["target"]["local"].as_bool().unwrap(), "{name}: a throwaway cluster");
        assert_eq!(text(run, "/scenario/cluster/etcd"), asked, "{name}: what was asked for");
        assert_eq!(ran_on(run), version, "{name}: what ran");
        assert_eq!(count(run, "/ops/put/ok"), 20, "{name}");
    }
    // The text says which run is which, and on which etcd; the table has a column for the
    // versions when they differ (not when ETCD_BIN is v3.6.16 itself).
    // Each beside the Go its etcd was built with, as its `--version` says.
    let system_go = go_of(&which(&etcdlat_testkit::etcd_bin()));
    let built_go = go_of(&cached(BUILT));
    assert_eq!(built_by(&runs[0]), system_go);
    assert_eq!(built_by(&runs[1]), built_go);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in [
        format!("Run 1 of 2: v [etcd=debian] (etcd {system} ({system_go}))"),
        format!("Run 2 of 2: v [etcd=v3.6.16] (etcd 3.6.16 ({built_go}))"),
    ] {
        assert!(stdout.contains(&line), "{line:?} in:\n{stdout}");
    }
    let table = std::fs::read_to_string(dir.path().join("t.md")).unwrap();
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert!(rows[1].starts_with("| v [etcd=v3.6.16] |"), "{table}");
    if (system.as_str(), system_go.as_str()) != ("3.6.16", built_go.as_str()) {
        assert!(table.lines().next().unwrap().contains("| etcd |"), "{table}");
        assert!(rows[0].contains(&format!("| {system} ({system_go}) |")), "{table}");
        assert!(rows[1].contains(&format!("| 3.6.16 ({built_go}) |")), "{table}");
    }
}

#[test]
fn the_etcd_flag_starts_a_throwaway_cluster_of_that_etcd_and_overrides_the_file() {
    if etcdlat_testkit::skip() {
        return;
    }
    let out = etcdlat().args(["--etcd", BUILT, "put", "--total=10", "--json=-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = parse_report(&out.stdout);
    let run = only_run(&report);
    assert!(run["target"]["local"].as_bool().unwrap(), "--etcd alone: a throwaway cluster");
    assert_eq!(ran_on(run), "3.6.16");
    assert_eq!(text(run, "/scenario/cluster/etcd"), BUILT);
    assert_eq!(count(run, "/ops/put/ok"), 10);

    // A file's etcd, replaced by the flag's: the system's, by path.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, format!("[cluster]\netcd = \"{BUILT}\"\n[load]\ntotal = 5\n[op.put]\n"))
        .unwrap();
    let system = which(&etcdlat_testkit::etcd_bin());
    let out = etcdlat().arg("run").arg(&file).arg("--etcd").arg(&system).arg("--json=-").output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report = parse_report(&out.stdout);
    let run = only_run(&report);
    assert_eq!(ran_on(run), system_version());
    assert_eq!(text(run, "/scenario/cluster/etcd"), system.display().to_string());
}

/// `bin` as a path: itself when it has a `/`, else where it is on `PATH`.
fn which(bin: &Path) -> std::path::PathBuf {
    if bin.components().count() > 1 {
        return bin.to_owned();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(bin))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{} is not on PATH", bin.display()))
}

#[test]
fn unknown_versions_bad_paths_and_versions_against_endpoints_start_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // The system's etcd: a spy that leaves a mark if anything runs it.
    let ran = dir.path().join("ran");
    let spy = dir.path().join("etcd");
    std::fs::write(&spy, format!("#!/bin/sh\ntouch '{}'\nexit 1\n", ran.display())).unwrap();
    std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A cache that holds v3.6.16 (any file that can be run will do: nothing runs it).
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(cache.join(BUILT)).unwrap();
    std::fs::copy(&spy, cache.join(BUILT).join("etcd")).unwrap();
    let write = |name: &str, text: String| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let put = "[load]\ntotal = 10\n[op.put]\n";
    let matrix = |axis: &str| format!("name = \"m\"\n{put}[matrix]\n\"cluster.etcd\" = {axis}\n");
    // The first run's etcd is there; the last's is not.
    let missing_last = write("missing-last.toml", matrix("[\"debian\", \"v3.6.16\", \"v3.5.9\"]"));
    let versions = write("versions.toml", matrix("[\"debian\", \"v3.6.16\"]"));
    let relative = write("relative.toml", format!("[cluster]\netcd = \"bin/etcd\"\n{put}"));
    let short = write("short.toml", format!("[cluster]\netcd = \"v3.6\"\n{put}"));
    let not_a_file = dir.path().display().to_string();
    let endpoints = "--endpoints=127.0.0.1:9";
    let cache_dir = cache.display().to_string();
    let v359 = cache.join("v3.5.9/etcd").display().to_string();
    let cases: Vec<(&str, Vec<&str>, Vec<String>)> = vec![
        (
            "a matrix whose last version is not there",
            vec!["run", &missing_last],
            vec![
                format!("m [etcd=v3.5.9]: cluster.etcd: etcd v3.5.9: {v359}: no such file"),
                format!("{cache_dir} holds v3.6.16"),
                format!(
                    "go get go.etcd.io/etcd/server/v3@v3.5.9 && CGO_ENABLED=0 go build -o {v359}"
                ),
                ".ci/deps --tests".to_owned(),
            ],
        ),
        (
            "--etcd of a version not there",
            vec!["--etcd=v3.5.9", "put", "--total=10"],
            vec![format!("--etcd: etcd v3.5.9: {v359}: no such file")],
        ),
        (
            "etcdlat cluster --etcd of a version not there",
            vec!["cluster", "--etcd=v3.5.9"],
            vec![format!("--etcd: etcd v3.5.9: {v359}: no such file")],
        ),
        (
            "--etcd not a version",
            vec!["--etcd=3.6.16", "put"],
            vec!["--etcd: etcd version \"3.6.16\": a version starts with v".to_owned()],
        ),
        (
            "cluster.etcd not a version",
            vec!["run", &short],
            vec!["line 2, column 8: cluster.etcd: etcd version \"v3.6\"".to_owned()],
        ),
        (
            "--etcd of a path to nothing",
            vec!["--etcd=./no/such/etcd", "put"],
            vec!["--etcd: ./no/such/etcd: no such file".to_owned()],
        ),
        (
            "--etcd of a directory",
            vec!["--etcd", &not_a_file, "put"],
            vec![format!("--etcd: {not_a_file}: not a file")],
        ),
        (
            "cluster.etcd of a path to nothing, read from the file's directory",
            vec!["run", &relative],
            vec![format!("put: cluster.etcd: {}/bin/etcd: no such file", dir.path().display())],
        ),
        (
            "a matrix over versions against --endpoints",
            vec![endpoints, "run", &versions],
            vec![
                "m [etcd=debian]: cluster.etcd system asks for a throwaway local cluster"
                    .to_owned(),
                "--endpoints".to_owned(),
            ],
        ),
        (
            "--etcd with --endpoints",
            vec![endpoints, "--etcd=v3.6.16", "put"],
            vec![
                "--etcd applies to a throwaway local cluster; it cannot be used with --endpoints"
                    .to_owned(),
            ],
        ),
    ];
    for (what, args, needles) in &cases {
        let out = etcdlat()
            .env("ETCD_BIN", &spy)
            .env("ETCD_CACHE", &cache)
            .env("TMPDIR", tmp.path())
            .args(args)
            .output()
            .unwrap();
        let line = error_line(what, &out);
        for needle in needles {
            assert!(line.contains(needle.as_str()), "{what}: {needle:?} in {line:?}");
        }
        assert!(!ran.exists(), "{what}: an etcd was started");
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "{what}: nothing left in TMPDIR: {left:?}");
    }
}

/// The shipped `dbtester-write-1m`, scaled down: one run per etcd version of its matrix
/// (3.5.21 and 3.6.16, built by `.ci/deps --tests`), each on the version asked for, every
/// one of dbtester's figures known (the members were started here, so their /proc and disk
/// are read), and the text ending with dbtester's table: a column per version.
#[test]
fn dbtester_write_1m_prints_dbtesters_table_with_a_column_per_version() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (stdout, report) = run_in(dir.path(), &["run", "dbtester-write-1m", "--scale", "0.02"]);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for (run, version) in runs.iter().zip(["3.5.21", "3.6.16"]) {
        assert_eq!(ran_on(run), version);
        assert_eq!(count(run, "/ops/put/ok"), 20_000, "every write of the scaled run");
        let study = run["study"].as_object().unwrap();
        let unknown: Vec<&String> =
            study.iter().filter(|(_, v)| v.is_null()).map(|(k, _)| k).collect();
        assert!(unknown.is_empty(), "{version}: unknown figures {unknown:?}: {}", study["unknown"]);
        assert!(count(run, "/study/total_requests") == 20_000);
        assert!(count(run, "/study/server_disk_sectors_written") > 0);
        assert!(count(run, "/study/client_network_sent_bytes") >= 20_000 * (256 + 1024));
    }
    // A dbtester scenario: each run's own text has dbtester's rows too.
    let end = stdout.rfind("2 runs side by side").expect("the side-by-side table");
    for run in stdout[..end].split("\nRun ").skip(1) {
        assert!(run.contains("\n  SERVER-MAX-CPU-USAGE:\t"), "dbtester's rows in:\n{run}");
    }
    assert_eq!(stdout[..end].matches("SERVER-MAX-CPU-USAGE").count(), 2, "{stdout}");
    // One box table after the runs, its header a column per version, no figure unknown.
    let table = &stdout[end..];
    assert_eq!(table.matches('┌').count(), 1);
    let header = table.lines().find(|l| l.contains("dbtester-write-1m")).unwrap();
    assert!(header.contains("etcd=v3.5.21") && header.contains("etcd=v3.6.16"), "{header}");
    for label in ["TOTAL-SECONDS", "AVG-THROUGHPUT", "Latency p99.9", "SERVER-MAX-CPU-USAGE"] {
        assert!(table.lines().any(|l| l.contains(label)), "no {label} row:\n{table}");
    }
    assert!(!table.contains("n/a"), "{table}");
}

/// `--etcd v3.6.16,v3.7.3` on a scenario with its own matrix and `--repeat 2`: one cell per
/// version and clients, each repeated, in rotation, each run on the etcd asked for and
/// reporting its version and the Go it was built with (as `etcd --version` says); the
/// runs' own text without dbtester's upper-case rows, the runs side by side with them and a
/// header per version with its Go. `--set 'matrix."cluster.etcd"=[...]'` makes the same axis,
/// and etcd benchmark's `put` takes several etcds too.
#[test]
fn several_etcds_on_the_command_line_run_a_cell_each() {
    if etcdlat_testkit::skip() {
        return;
    }
    let versions = [("v3.6.16", "3.6.16"), ("v3.7.3", "3.7.3")];
    let go: Vec<String> = versions.iter().map(|(v, _)| go_of(&cached(v))).collect();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("c.toml"),
        "name = \"c\"\n[load]\ntotal = 10\n[op.put]\nkey-space-size = 10\n\
         [matrix]\nload.clients = [1, 2]\n",
    )
    .unwrap();
    let (stdout, report) =
        run_in(dir.path(), &["run", "c.toml", "--etcd", "v3.6.16,v3.7.3", "--repeat", "2"]);
    let runs = report["runs"].as_array().unwrap();
    // The file's axis, then the flag's (the file has none of etcd), the first varying
    // slowest; every cell once per repetition, in rotation.
    let mut expected = Vec::new();
    for repetition in 1..=2 {
        for clients in [1, 2] {
            for (i, (asked, version)) in versions.iter().enumerate() {
                expected.push((
                    format!("c [clients={clients}, etcd={asked}] #{repetition}"),
                    *asked,
                    *version,
                    go[i].as_str(),
                ));
            }
        }
    }
    let names: Vec<&str> = runs.iter().map(|r| text(r, "/name")).collect();
    let wanted: Vec<&str> = expected.iter().map(|(n, ..)| n.as_str()).collect();
    assert_eq!(names, wanted);
    for (run, (name, asked, version, go)) in runs.iter().zip(&expected) {
        assert_eq!(text(run, "/scenario/cluster/etcd"), *asked, "{name}");
        assert_eq!(text(run, "/matrix/axes/cluster.etcd"), *asked, "{name}");
        assert_eq!(ran_on(run), *version, "{name}: what ran");
        assert_eq!(built_by(run), *go, "{name}: its Go");
        assert_eq!(count(run, "/ops/put/ok"), 10, "{name}");
        assert!(run["target"]["local"].as_bool().unwrap(), "{name}: a throwaway cluster");
    }
    assert_eq!(text(&report, "/repeats/order"), "interleaved");

    // Each run's own text: etcd's layout and its members, no dbtester rows; they are in
    // the runs side by side, under a header per cell that says its etcd and Go.
    let (each, side_by_side) = stdout.split_once("8 runs side by side").expect("the table");
    assert!(
        each.contains(&format!(
            "Run 2 of 8: c [clients=1, etcd=v3.7.3] #1 (etcd 3.7.3 ({}))",
            go[1]
        )),
        "{each}"
    );
    assert!(each.contains("Server and client resources:"), "{each}");
    for row in ["SERVER-MAX-CPU-USAGE", "MAX-THROUGHPUT", "CLIENT-MAX-MEMORY-USAGE"] {
        assert!(!each.contains(row), "{row} in a run's own text:\n{each}");
        assert!(side_by_side.contains(row), "no {row} side by side:\n{side_by_side}");
    }
    let header: String = side_by_side.lines().take(6).collect::<Vec<_>>().join("\n");
    for (i, (_, version)) in versions.iter().enumerate() {
        let server = format!("etcd {version} ({})", go[i]);
        assert!(header.contains(&server), "{server} in the header:\n{header}");
    }

    // --set addresses the axis as the file would write it; `put` takes several etcds.
    let out = etcdlat()
        .current_dir(dir.path())
        .args(["run", "c.toml", "--set", "matrix.\"cluster.etcd\"=[\"v3.7.3\"]"])
        .args(["--set", "matrix.load.clients=[3]", "--json=-", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    let report = parse_report(&out.stdout);
    let run = only_run(&report);
    assert_eq!(text(run, "/name"), "c [clients=3, etcd=v3.7.3]");
    assert_eq!((ran_on(run), built_by(run)), ("3.7.3", go[1].as_str()));
    let out = etcdlat()
        .args(["--etcd", "v3.7.3,v3.6.16", "put", "--total=10", "--json=-", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr:\n{}", String::from_utf8_lossy(&out.stderr));
    let report = parse_report(&out.stdout);
    let runs = report["runs"].as_array().unwrap();
    let ran: Vec<(&str, &str)> = runs.iter().map(|r| (ran_on(r), built_by(r))).collect();
    assert_eq!(ran, [("3.7.3", go[1].as_str()), ("3.6.16", go[0].as_str())]);
}
