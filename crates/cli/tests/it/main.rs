//! End-to-end tests of the `etcdlat` binary: the real executable, run with `assert_cmd`
//! against real etcd servers from the testkit (or the throwaway etcd the binary starts
//! itself). Reports are read as JSON; numbers in the text output are never matched.
//!
//! - `put`: `etcdlat put`, in etcdlat's and etcd benchmark's argument orders; the server
//!   holds exactly what the report says was written; `--client-steps` reported step by
//!   step in the JSON, text, markdown and plots.
//! - `range`: `etcdlat range` with `--prefix`, a `key end` range and `--count-only`; the
//!   report counts exactly the keys the server holds under the range.
//! - `benchmark37`: etcd 3.7's benchmark tool's documented command lines and new flags
//!   (`range --stream`, `--paginate`, `--prefix` without a key, `--auto-sync-interval`,
//!   `--report-perfdash`, `mvcc put` refused) with `etcdlat` in its place against etcd 3.7.3,
//!   `--paginate`'s pages pinned to one revision under writes; `--stream` refused in one line
//!   by an older etcd.
//! - `run`: `etcdlat run` with shipped (`client-steps` on three members among them) and own
//!   scenario files, `etcdlat scenarios`, and the report files (`--json`, `--markdown`,
//!   `--csv`).
//! - `capacity`: a throwaway member with a small `--quota-backend-bytes` fills up mid-run:
//!   puts counted as ResourceExhausted with etcd's message, the NOSPACE alarm in the report.
//! - `check`: `check disk` on the machine's disk and a tmpfs (figures, the verdict line as
//!   the JSON says, no file left, also after Ctrl-C), bad directories exit 2 in one line;
//!   `check perf` shortened on a throwaway etcd and on the testkit's: every rule with its
//!   figure, a prefix with keys refused, the check's keys deleted, compacted after.
//! - `cluster`: `[matrix]` scenarios (one run and one markdown row per combination, then
//!   the runs side by side, a column each, in text and markdown), `--target`, and
//!   `etcdlat cluster`.
//! - `etcd`: etcd versions as a parameter of throwaway clusters: a matrix over
//!   `cluster.etcd` and `--etcd` run on the etcd asked for (the system's, v3.6.16 and v3.7.3,
//!   built by `.ci/deps --tests`), several on the command line (`--etcd a,b`, `--set
//!   'matrix."cluster.etcd"=[..]'`) a cell each, each report with its version and Go;
//!   unknown versions, bad paths and versions against `--endpoints` exit 2 in one line
//!   before anything starts.
//! - `bad_input`: a table of bad scenario files, flags, output paths and endpoints, each
//!   exit code 2 with one line naming the problem; more connections than clients warns.
//! - `fault`: scripted faults in a scenario run by the binary: the report's `faults`.
//! - `find_max`: `run --find-max` on real etcd: doubling while the SLOs are met, counts too
//!   large for the quota missed without a run, the answer and every run's report.
//! - `error`: exit code 2 and one `etcdlat: ` line on stderr for bad input, an unreachable
//!   endpoint and a missing etcd binary.
//! - `workload`: `txn-put`, `txn-mixed`, `lease-keepalive`, `stm`, and put's compaction and
//!   HashKV check; each report checked against the server.
//! - `jsonl`: `--jsonl` to a file and to standard output: a line per interval while the run
//!   goes, adding up to the summary line last and to the JSON report.
//! - `prometheus`: `--metrics-addr` scraped every second by a real Prometheus during a paced
//!   run, read back through its HTTP API against the run's report.
//! - `report_tool`: `etcdlat merge` and `etcdlat compare` (of two reports, and of three side
//!   by side) on reports of real runs, and
//!   thresholds (`--threshold`, a scenario's `thresholds`): exit 1 naming the threshold not
//!   met, exit 2 naming the file for bad input.
//! - `hostile`: the testkit's hostile proxy in front of etcd corrupts answers mid-run
//!   (frames, statuses, bodies, resets, GOAWAY, a stall): each counted under a gRPC code
//!   with a message, no panic, no hang, the report written, the rest of the run normal.
//! - `repeat`: `run --repeat 3` of a two-cell matrix on throwaway members: the runs
//!   interleaved, each figure of each cell with its repeats' values, mean, median and
//!   interval in the JSON, and `compare` of the report judging them by Welch's t-test.
//! - `heatmap`: `--heatmap` on a 2 × 2 matrix run twice per cell (each cell the median of
//!   its runs in the JSON report), `compare --heatmap` (each cell's change in percent), and
//!   a heatmap of anything but a two-axis matrix refused before anything starts.
//! - `html`: `--html` and `--plots` on a real run; the page opened in headless Chromium
//!   (which must be installed: the test fails without it) loads cleanly and shows the plots.
//! - `interrupt`: SIGINT, SIGTERM and SIGHUP during a run: exit code 130, the report
//!   written and marked interrupted, and a throwaway etcd killed and removed; after a
//!   `kill -9`, no member left running and the next start removing the dir.
//! - `security`: TLS, mutual TLS and auth against etcd started with them: runs that work,
//!   and an untrusted certificate, a missing or untrusted client certificate, plaintext
//!   against TLS, a wrong password and a missing user each exit 2 in one line; no password
//!   in the output, the logs or the report.
//! - `shard`: distributed runs: `--shard I/N` processes with `--barrier` or `--start-at`
//!   against one etcd add up to the scenario, and `etcdlat merge` of them is the whole.
//! - `audit`: `--audit` on real etcd (counts match the server) and against a keeping null
//!   server told to drop a write or answer linearizable reads late: exit 1, naming it.
//! - `soak`: two minutes of open-loop puts: the client's RSS grows less than 5% after the
//!   first 20 s, and the JSON and CSV interval series have every second.
//! - `network`: the emulated network's flags with `--local` and `run`, a scenario's
//!   `[network]` and a matrix over it; bad network input refused before anything starts.
//! - `kubernetes`: the Kubernetes example's manifests are a valid Indexed Job and ConfigMap
//!   (no cluster runs here), and the Dockerfile is multi-stage.
//! - `k8s_scenarios`: the shipped `k8s-*` scenarios scaled down on a throwaway 3-member etcd:
//!   every flow's requests succeed, conflicts only with several writers per pod, and the
//!   text's SLO verdicts as the JSON's p99 says.
//! - `setup`: the README's quick start against `.ci/deps`: no browser to run, every package
//!   named; `cargo run`, the examples and the tests build every dependency with the same
//!   features.

mod audit;
mod bad_input;
mod benchmark37;
mod capacity;
mod check;
mod cluster;
// A heatmap's cells read back from its SVG, as core's tests read them.
#[path = "../../../render/tests/it/drawn.rs"]
mod drawn;
mod error;
mod etcd;
mod fault;
mod find_max;
mod heatmap;
mod hostile;
mod html;
mod interrupt;
mod jsonl;
mod k8s_scenarios;
mod kubernetes;
mod network;
mod prometheus;
mod put;
mod range;
mod repeat;
mod report_tool;
mod run;
mod security;
mod setup;
mod shard;
mod soak;
mod workload;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// The binary under test, with a deadline so that a hang fails one test instead of stalling
/// the suite, and without `ETCDLAT_LOG` so stderr holds only what etcdlat always prints.
fn etcdlat() -> assert_cmd::Command {
    let mut cmd = assert_cmd::Command::cargo_bin("etcdlat").expect("the etcdlat binary is built");
    cmd.timeout(Duration::from_secs(60)).env_remove("ETCDLAT_LOG").env_remove("ETCDLAT_PASSWORD");
    cmd
}

/// The JSON report in `path`.
fn read_report(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    parse_report(&text)
}

/// A JSON report, which must be nothing but JSON.
fn parse_report(text: &[u8]) -> Value {
    serde_json::from_slice(text)
        .unwrap_or_else(|e| panic!("not a JSON report ({e}):\n{}", String::from_utf8_lossy(text)))
}

/// The single run of a report of one run.
fn only_run(report: &Value) -> &Value {
    let runs = report["runs"].as_array().unwrap_or_else(|| panic!("no runs in {report:#}"));
    assert_eq!(runs.len(), 1, "one run in {report:#}");
    &runs[0]
}

/// The count at a JSON pointer (`/ops/put/ok`).
fn count(v: &Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} is not a count in {v:#}"))
}

/// The text at a JSON pointer.
fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("{pointer} is not a string in {v:#}"))
}

/// The boolean at a JSON pointer.
fn flag(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer)
        .and_then(Value::as_bool)
        .unwrap_or_else(|| panic!("{pointer} is not a boolean in {v:#}"))
}
