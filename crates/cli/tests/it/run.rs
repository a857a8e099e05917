//! `etcdlat run` with shipped scenarios (on the throwaway etcd the binary starts) and with
//! scenario files of our own (against the testkit's etcd), `etcdlat scenarios`, and the
//! report files a run writes.

use etcdlat_testkit::Etcd;

use crate::{count, etcdlat, flag, only_run, read_report, text};

#[tokio::test]
async fn shipped_scenario_runs_on_a_throwaway_etcd_from_any_directory() {
    if etcdlat_testkit::skip() {
        return;
    }
    // Neither the scenarios directory nor a running etcd is at hand in this directory: the
    // scenario is built in and the etcd is started, in TMPDIR, and removed.
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    etcdlat()
        .current_dir(dir.path())
        .env("TMPDIR", tmp.path())
        .args(["run", "scenarios/range-serializable.toml", "--total=200"])
        .args(["--json", "r.json", "--markdown", "r.md", "--csv", "r.csv"])
        .assert()
        .success();

    let report = read_report(&dir.path().join("r.json"));
    let run = only_run(&report);
    assert_eq!(text(run, "/name"), "range-serializable");
    assert!(flag(run, "/target/local"));
    assert_eq!(count(run, "/target/members"), 1);
    assert_eq!(count(run, "/ops/range/ok"), 200);
    assert_eq!(count(run, "/ops/range/errors_total"), 0);
    // The setup wrote one 256 B key under the prefix; every read returns it.
    assert_eq!(count(run, "/ops/range/keys"), 200);
    assert_eq!(count(run, "/ops/range/value_bytes"), 200 * 256);

    let markdown = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    assert!(markdown.contains("| range-serializable |"), "a row for the run:\n{markdown}");
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap_or_default();
    assert!(header.starts_with("op,"), "a header first:\n{csv}");
    assert!(
        lines.next().is_some_and(|row| row.starts_with("range,")),
        "then the intervals of the run:\n{csv}"
    );

    let left: Vec<_> =
        std::fs::read_dir(tmp.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "the throwaway etcd's directory is removed: {left:?}");
}

#[tokio::test]
async fn shipped_client_steps_run_each_step_on_three_members() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // dbtester's eight steps of 1 to 1,000 clients, 125 writes each.
    etcdlat()
        .args(["run", "client-steps", "--scale=0.01", "--quiet", "--json"])
        .arg(&json)
        .assert()
        .success();
    let report = read_report(&json);
    let run = only_run(&report);
    assert_eq!(count(run, "/target/members"), 3);
    let steps = run["steps"].as_array().expect("a step list");
    let clients: Vec<u64> = steps.iter().map(|s| count(s, "/clients")).collect();
    assert_eq!(clients, [1, 10, 50, 100, 300, 500, 700, 1000]);
    for s in steps {
        assert_eq!((count(s, "/ok"), count(s, "/errors_total")), (125, 0), "{s}");
        // Never more than the step's clients, and a step of 125 requests has no work for
        // some of 300 or more.
        let (clients, active) = (count(s, "/clients"), count(s, "/active_clients"));
        assert!(active > 0 && active <= clients.min(125), "{s}");
        if clients <= 10 {
            assert_eq!(active, clients, "{s}");
        }
    }
    assert_eq!(count(run, "/ops/put/ok"), 1000);
}

#[tokio::test]
async fn own_scenario_file_runs_against_its_endpoints() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let dir = tempfile::tempdir().unwrap();
    let scenario = format!(
        r#"name = "own-put"
description = "puts to the testkit's etcd"

[cluster]
endpoints = ["{}"]

[load]
conns = 2
clients = 8
total = 300

[op.put]
key-size = 8
val-size = 64
key-space-size = 300
sequential-keys = true
"#,
        etcd.endpoint()
    );
    std::fs::write(dir.path().join("own.toml"), scenario).unwrap();
    let before = etcd.revision().await;

    etcdlat()
        .current_dir(dir.path())
        .args(["run", "own.toml", "--quiet", "--json", "r.json"])
        .assert()
        .success();

    let report = read_report(&dir.path().join("r.json"));
    let run = only_run(&report);
    assert_eq!(text(run, "/name"), "own-put");
    assert!(!flag(run, "/target/local"));
    assert_eq!(run["target"]["endpoints"], serde_json::json!([etcd.endpoint()]));
    assert_eq!(count(run, "/ops/put/ok"), 300);
    assert_eq!(count(run, "/ops/put/errors_total"), 0);
    assert_eq!(etcd.revision().await - before, 300, "one revision per put");
    assert_eq!(etcd.key_count().await, 300);
}

#[test]
fn scenarios_lists_every_shipped_scenario() {
    let assert = etcdlat().arg("scenarios").assert().success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).into_owned();
    let listed: Vec<&str> = stdout.lines().filter_map(|l| l.split_whitespace().next()).collect();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../configs/scenarios");
    let mut shipped: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".toml").to_owned())
        .collect();
    shipped.sort();
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, shipped, "every file of configs/scenarios is listed:\n{stdout}");
    for line in stdout.lines() {
        assert!(
            line.split_whitespace().nth(1).is_some(),
            "every scenario has a description: {line:?}"
        );
    }
}

#[test]
fn a_reader_that_goes_away_is_no_panic() {
    // `true` has exited long before etcdlat writes: its stdout is a pipe with no reader.
    let bin = assert_cmd::cargo::cargo_bin("etcdlat");
    let script = format!("(sleep 0.3; '{}' scenarios; echo \"rc=$?\" >&2) | true", bin.display());
    let out = std::process::Command::new("bash").arg("-c").arg(&script).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("rc=0"), "a closed pipe is not a failure: {stderr}");
}

#[test]
fn report_files_get_a_normal_mode_and_missing_directories_are_made() {
    if etcdlat_testkit::skip() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // In directories that do not exist yet: they are made, as `-o`-style flags do.
    let json = dir.path().join("reports/today/r.json");
    let plots = dir.path().join("plots/today");
    let bin = assert_cmd::cargo::cargo_bin("etcdlat");
    let script = format!(
        "umask 022 && exec '{}' --local --quiet --json '{}' --plots '{}' put --total 5",
        bin.display(),
        json.display(),
        plots.display()
    );
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .env("ETCD_BIN", etcdlat_testkit::etcd_bin())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mode = std::fs::metadata(&json).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "{mode:o}: as any file created under umask 022, not 0600");
    assert!(plots.join("1-throughput.svg").is_file(), "the plots directory was made and filled");
}

#[test]
fn reports_go_through_a_fifo_and_a_symlink_and_replace_neither() {
    if etcdlat_testkit::skip() {
        return;
    }
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    // A FIFO a reader waits on (as `--json /dev/stdout` or `<(...)` give), and a symlink to
    // where the markdown lives: a report renamed onto either would replace it.
    let fifo = dir.path().join("report.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let real = dir.path().join("real.md");
    let link = dir.path().join("table.md");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let reader = std::thread::spawn({
        let fifo = fifo.clone();
        move || std::fs::read(fifo).unwrap()
    });
    etcdlat()
        .env("ETCD_BIN", etcdlat_testkit::etcd_bin())
        .args(["--local", "--quiet", "--json"])
        .arg(&fifo)
        .arg("--markdown")
        .arg(&link)
        .args(["put", "--total", "5"])
        .assert()
        .success();
    let report = crate::parse_report(&reader.join().unwrap());
    assert_eq!(crate::count(crate::only_run(&report), "/ops/put/ok"), 5);
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo(), "still a FIFO");
    assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink(), "still a link");
    assert!(std::fs::read_to_string(&real).unwrap().starts_with('|'), "the link's file");
}

#[test]
fn each_run_of_several_starts_with_its_name_and_matrix_label() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("two.toml");
    std::fs::write(
        &scenario,
        "name = \"two\"\n[load]\ntotal = 5\n[op.put]\n[matrix]\n\"load.clients\" = [1, 2]\n",
    )
    .unwrap();
    let out = etcdlat()
        .env("ETCD_BIN", etcdlat_testkit::etcd_bin())
        .arg("run")
        .arg(&scenario)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.find("Run 1 of 2: two [").expect(&stdout);
    let second = stdout.find("Run 2 of 2: two [").expect(&stdout);
    let summaries: Vec<usize> = stdout.match_indices("Summary:").map(|(i, _)| i).collect();
    assert_eq!(summaries.len(), 2, "{stdout}");
    assert!(first < summaries[0] && summaries[0] < second && second < summaries[1], "{stdout}");
}

/// One run reads as one run: the shipped `put-1mb` prints etcd's tool's layout and a line
/// per member, none of dbtester's upper-case rows, which `--dbtester-rows` asks for.
#[test]
fn a_single_run_reads_as_one_run_unless_dbtesters_rows_are_asked_for() {
    if etcdlat_testkit::skip() {
        return;
    }
    let upper_case_rows = |text: &str| -> Vec<String> {
        let rows = etcdlat_core::report::Row::ALL.map(|r| format!("  {}:\t", r.label()));
        text.lines().filter(|l| rows.iter().any(|r| l.starts_with(r))).map(str::to_owned).collect()
    };
    let run = |extra: &[&str]| {
        let out = etcdlat()
            .env("ETCD_BIN", etcdlat_testkit::etcd_bin())
            .args(["run", "put-1mb", "--total=20"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let plain = run(&[]);
    assert!(plain.starts_with("\nSummary:\n"), "etcd's layout:\n{plain}");
    let resources = plain.split_once("\nServer and client resources:\n").expect(&plain).1;
    assert!(resources.starts_with("  m0:\t"), "a line per member:\n{plain}");
    assert_eq!(upper_case_rows(&plain), Vec::<String>::new(), "{plain}");
    assert!(!plain.contains("side by side"), "{plain}");

    let asked = run(&["--dbtester-rows"]);
    let rows = upper_case_rows(&asked);
    assert!(rows.iter().any(|r| r.starts_with("  SERVER-MAX-CPU-USAGE:\t")), "{asked}");
    assert!(rows.iter().any(|r| r.starts_with("  MAX-THROUGHPUT:\t")), "{asked}");
}

#[test]
fn help_puts_global_flags_apart_and_ends_with_examples() {
    let out = etcdlat().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(help.contains("Global flags (before or after the command):"), "{help}");
    assert!(help.contains("Emulated network (local clusters):"), "{help}");
    assert!(help.contains("[default: 1, or the scenario's]"), "{help}");
    assert!(help.trim_end().lines().rev().any(|l| l.starts_with("Examples:")), "{help}");
    let put = etcdlat().args(["put", "--help"]).output().unwrap();
    let put = String::from_utf8_lossy(&put.stdout);
    let own = put.find("--val-size").expect("put's own flags");
    let global = put.find("Global flags").expect("the global flags, apart");
    assert!(own < global, "put's own flags come first:\n{put}");
}

#[test]
fn scaled_runs_say_so_and_markdown_columns_each_mean_one_thing() {
    if etcdlat_testkit::skip() {
        return;
    }
    // The performance guide's shape: a write row and a read row of the same total.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("guide.toml"),
        r#"name = "guide"
[load]
total = 1000
[setup]
total = 1
[setup.put]
prefix = "foo"
key-size = 5
val-size = 16
[[matrix.case]]
label = "write"
op = { put = { key-size = 8, val-size = 16, sequential-keys = true } }
[[matrix.case]]
label = "read"
op = { range = { key = "foo", prefix = true } }
"#,
    )
    .unwrap();
    let out = etcdlat()
        .current_dir(dir.path())
        .env("ETCD_BIN", etcdlat_testkit::etcd_bin())
        .args(["run", "guide.toml", "--scale", "0.1", "--json", "r.json", "--markdown", "r.md"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("Scaled run (--scale 0.1)").count(), 2, "{stdout}");

    let report = read_report(&dir.path().join("r.json"));
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        assert_eq!(run["scale"].as_f64(), Some(0.1), "{run:#}");
    }
    let (write, read) = (&runs[0], &runs[1]);
    assert_eq!(count(write, "/ops/put/ok"), 100);
    assert_eq!(count(write, "/ops/put/keys"), 100);
    assert_eq!(count(read, "/ops/range/ok"), 100);

    // One column per meaning: keys written (writes only) and requests (every row).
    let markdown = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    let rows: Vec<Vec<&str>> =
        markdown.lines().map(|l| l.trim_matches('|').split('|').map(str::trim).collect()).collect();
    let column = |title: &str| {
        rows[0].iter().position(|t| *t == title).unwrap_or_else(|| panic!("{title}: {markdown}"))
    };
    let (written, requests, scale) = (column("Keys written"), column("Requests"), column("Scale"));
    assert!(!rows[0].contains(&"Number of keys"), "{markdown}");
    assert_eq!((rows[2][written], rows[2][requests], rows[2][scale]), ("100", "100", "0.1"));
    assert_eq!((rows[3][written], rows[3][requests], rows[3][scale]), ("-", "100", "0.1"));
}
