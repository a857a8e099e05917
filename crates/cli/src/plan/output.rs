//! Where a run's reports go: the report files (`--json`, `--markdown`, ..., etcd
//! benchmark's `--report-perfdash`), checked before anything runs, and the one metrics
//! endpoint the scenarios ask for.

use std::path::PathBuf;

use anyhow::{Result, bail};
use etcdlat_core::Scenario;

use crate::command_line::{Command, Global};
use crate::output::{Heatmaps, Outputs, check_dir, targets};

/// A run's report files (`--json`, `--markdown`, `--csv`, `--html`, `--perfdash`,
/// `--jsonl`, `--plots`, `--heatmap`), checked.
pub(super) fn outputs(g: &Global, command: &str) -> Result<Outputs> {
    let report_perfdash = g.report_perfdash.then(|| {
        perfdash_path(std::env::var_os("ARTIFACTS"), command, std::time::SystemTime::now())
    });
    let [json, markdown, csv, html, perfdash, jsonl] = targets([
        ("--json", g.json.as_deref()),
        ("--markdown", g.markdown.as_deref()),
        ("--csv", g.csv.as_deref()),
        ("--html", g.html.as_deref()),
        ("--perfdash", g.perfdash.as_deref().or(report_perfdash.as_deref())),
        ("--jsonl", g.jsonl.as_deref()),
    ])?;
    if let Some(dir) = &g.plots {
        check_dir(dir, "--plots")?;
    }
    let heatmap = g.heatmap.as_deref().map(Heatmaps::new).transpose()?;
    Ok(Outputs { json, markdown, csv, html, perfdash, jsonl, plots: g.plots.clone(), heatmap })
}

/// The file etcd benchmark's `--report-perfdash` writes for `command` at `now`: in
/// `artifacts` (`$ARTIFACTS`) unless it is unset or empty, else in `./_artifacts`,
/// `EtcdAPI_benchmark_<command>_<RFC 3339 time, UTC, in seconds>.json`.
fn perfdash_path(
    artifacts: Option<std::ffi::OsString>,
    command: &str,
    now: std::time::SystemTime,
) -> PathBuf {
    let dir = artifacts
        .filter(|d| !d.is_empty())
        .map_or_else(|| PathBuf::from("./_artifacts"), PathBuf::from);
    let time = humantime::format_rfc3339_seconds(now);
    dir.join(format!("EtcdAPI_benchmark_{command}_{time}.json"))
}

/// The name of the command that runs load, as etcd benchmark names it (`txn-put`), for
/// `--report-perfdash`'s file.
pub(super) fn command_name(command: &Command) -> &'static str {
    match command {
        Command::Put(_) => "put",
        Command::Range(_) => "range",
        Command::TxnPut(_) => "txn-put",
        Command::TxnMixed(_) => "txn-mixed",
        Command::Watch(_) => "watch",
        Command::WatchGet(_) => "watch-get",
        Command::WatchLatency(_) => "watch-latency",
        Command::LeaseKeepalive(_) => "lease-keepalive",
        Command::Stm(_) => "stm",
        Command::Check(_) => "check-perf",
        _ => "run",
    }
}

/// The one address the scenarios' `[report] metrics-addr` give (the endpoint serves every
/// run of the plan); several different ones are refused.
pub(super) fn metrics_addr(scenarios: &[Scenario]) -> Result<Option<String>> {
    let mut asked = scenarios.iter().filter_map(|s| s.report.metrics_addr.as_deref());
    let Some(first) = asked.next() else { return Ok(None) };
    if let Some(other) = asked.find(|a| *a != first) {
        bail!(
            "report.metrics-addr: the scenarios ask for {first} and {other}; one endpoint serves every run: give one address, or --metrics-addr"
        );
    }
    Ok(Some(first.to_owned()))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::plan::tests::plan;

    #[test]
    fn report_perfdash_names_its_file_as_etcds_tool_does() {
        // (Not through a plan, which would make ./_artifacts here: the integration test
        // benchmark37 runs the binary in a directory of its own.)
        let at = std::time::UNIX_EPOCH + Duration::from_secs(1_764_187_200);
        let name = "EtcdAPI_benchmark_txn-put_2025-11-26T20:00:00Z.json";
        let path =
            |artifacts: Option<&str>| perfdash_path(artifacts.map(Into::into), "txn-put", at);
        assert_eq!(path(None), PathBuf::from("./_artifacts").join(name));
        assert_eq!(path(Some("")), PathBuf::from("./_artifacts").join(name), "empty: unset");
        assert_eq!(path(Some("/ci/out")), PathBuf::from("/ci/out").join(name));
        let err = plan(&["--report-perfdash", "--perfdash=p.json", "put"]).unwrap_err();
        assert!(err.to_string().contains("cannot be used with"), "{err}");
    }
}
