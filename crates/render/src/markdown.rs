//! A GitHub markdown table of runs, with the columns of the tables in etcd's performance
//! guide ("Understanding performance"), to paste into documents and issues.

use std::fmt::Write;

use etcdlat_core::op::OpKind;
use etcdlat_core::report::{OpReport, Report, TargetInfo};
use etcdlat_core::unit::{group_digits, thousands};
use etcdlat_core::workload::kubernetes::Verb;

/// Column titles, and whether each holds numbers (right-aligned).
const COLUMNS: [(&str, bool); 17] = [
    ("Test", false),
    ("Operation", false),
    ("Keys written", true),
    ("Requests", true),
    ("Key size", true),
    ("Value size", true),
    ("Number of connections", true),
    ("Number of clients", true),
    ("Target", false),
    ("Consistency", false),
    ("Average QPS", true),
    ("Average latency", true),
    ("p50", true),
    ("p99", true),
    ("p99.9", true),
    ("Server RSS", true),
    ("Errors", true),
];

/// Shown where a column has no value for a row.
const MISSING: &str = "-";

/// Renders `runs` as one markdown table with a row per run and operation kind.
///
/// - *Keys written* is the keys the successful requests wrote (put, txn-put and txn-mixed's
///   writes; `-` for other kinds), and *Requests* the requests sent (ok plus errors). The
///   guide's one column "Number of keys" is the first in its write table (10,000 and
///   100,000 puts of one key each) and the second in its read table.
/// - *Key size* and *Value size* (bytes) are shown for puts, *Consistency* for ranges.
/// - Sizes and counts have thousands separators.
/// - *Target* is `local (N members)` for a throwaway local cluster, else the endpoints.
/// - *Average QPS* is successful requests per second with one decimal (`44,341.0`).
/// - Latencies are milliseconds with three decimals below one second (`0.815ms`), seconds
///   with three decimals from one second on (`4.000s`); `-` when no request succeeded.
/// - *Server RSS* is the largest resident memory of any member during the run, in decimal
///   megabytes with one decimal (`33.6 MB`); `-` when the members' metrics were not scraped.
/// - *Network* (after *Target*) appears only when the runs' networks differ: the summary
///   of each run's `[network]` ([`etcdlat_core::Network::summary`]), `loopback` for none.
/// - *etcd* (after *Target* and *Network*) appears only when the runs' servers differ (a
///   matrix over `cluster.etcd`): each run's version, as its members said, and the Go its
///   etcd was built with when known (`3.7.3 (go1.26.8)`).
/// - *Scale* (last) appears only when a run was scaled (`--scale`): its factor, `1` for a
///   run as written.
///
/// When a run had client steps, a table of them follows, a row per step: its clients,
/// requests, errors, throughput and latency p50, p90, p99 and p99.9.
///
/// When a run had findings ([`Report::findings`]), a last table lists them, a row each: the
/// member, the figure, etcd's guidance it crossed, and what it means.
///
/// When a run was audited, another table follows, a row per audited run: requests audited,
/// writes acknowledged, lost writes, order violations, duplicate revisions, stale
/// linearizable reads, and serializable staleness p99 in revisions and milliseconds.
#[must_use]
pub fn markdown(runs: &[Report]) -> String {
    let network = |run: &Report| {
        run.target.network.as_ref().map_or_else(|| "loopback".to_owned(), |n| n.summary.clone())
    };
    let networks_differ = runs.windows(2).any(|w| network(&w[0]) != network(&w[1]));
    let versions_differ = runs.windows(2).any(|w| w[0].target.other_server(&w[1].target));
    let scaled = runs.iter().any(|r| r.scale.is_some());
    let mut columns = COLUMNS.to_vec();
    if versions_differ {
        columns.insert(NETWORK_AT, ("etcd", false));
    }
    if networks_differ {
        columns.insert(NETWORK_AT, ("Network", false));
    }
    if scaled {
        columns.push(("Scale", true));
    }
    let mut out = String::new();
    out.push('|');
    for (title, _) in &columns {
        let _ = write!(out, " {title} |");
    }
    out.push_str("\n|");
    for (_, numeric) in &columns {
        out.push_str(if *numeric { " ---: |" } else { " --- |" });
    }
    out.push('\n');
    for run in runs {
        for (&kind, op) in &run.ops {
            let mut cells = row(run, kind, op).to_vec();
            if versions_differ {
                cells.insert(NETWORK_AT, etcd_cell(&run.target));
            }
            if networks_differ {
                cells.insert(NETWORK_AT, network(run));
            }
            if scaled {
                cells.push(run.scale.unwrap_or(1.0).to_string());
            }
            out.push('|');
            for cell in cells {
                let _ = write!(out, " {} |", cell.replace('|', "\\|"));
            }
            out.push('\n');
        }
    }
    steps_table(&mut out, runs);
    audit_table(&mut out, runs);
    kubernetes_table(&mut out, runs);
    findings_table(&mut out, runs);
    out
}

/// The runs' findings, last ([`Report::findings`]): a row each, where a run crossed etcd's
/// guidance or was bound by something other than the load (nothing when none did).
fn findings_table(out: &mut String, runs: &[Report]) {
    let found: Vec<(&Report, etcdlat_core::report::Finding)> =
        runs.iter().flat_map(|r| r.findings().into_iter().map(move |f| (r, f))).collect();
    if found.is_empty() {
        return;
    }
    out.push_str(
        "\n| Test | Member | Figure | Guidance | Finding |\n| --- | --- | ---: | ---: | --- |\n",
    );
    for (run, f) in found {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            run.name.replace('|', "\\|"),
            f.member.as_deref().unwrap_or(MISSING).replace('|', "\\|"),
            f.shown(f.value),
            f.shown(f.guidance),
            f.text.replace('|', "\\|"),
        );
    }
}

/// The apiserver's requests by resource and verb, after the main table: a row per
/// (resource, verb) of every run that sent any, with its verdict against Kubernetes' SLO
/// (nothing when none did).
fn kubernetes_table(out: &mut String, runs: &[Report]) {
    let sent: Vec<(&Report, &etcdlat_core::report::kubernetes::KubernetesReport)> =
        runs.iter().filter_map(|r| Some((r, r.kubernetes.as_ref()?))).collect();
    if sent.is_empty() {
        return;
    }
    out.push_str(
        "\n| Test | Resource | Verb | Requests | Errors | p50 | p99 | Max | SLO | Verdict | Conflicts |\n\
         | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n",
    );
    for (run, k) in sent {
        for r in &k.requests {
            let latency = |q: f64| {
                if r.ok == 0 { missing() } else { human_latency(r.latency.quantile_us(q) as f64) }
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                run.name.replace('|', "\\|"),
                r.resource,
                r.verb.name(),
                thousands(r.ok + r.errors_total),
                thousands(r.errors_total),
                latency(0.5),
                latency(0.99),
                latency(1.0),
                r.slo.as_ref().map_or_else(missing, |slo| {
                    format!("{}s (etcd {}s per {})", slo.limit_s, slo.etcd_limit_s, slo.per)
                }),
                r.slo.as_ref().map_or(
                    if r.judged || r.verb == Verb::Watch { "no SLO" } else { "not judged" },
                    |slo| slo.verdict.name()
                ),
                thousands(r.conflicts),
            );
        }
    }
}

/// The client steps' table, after the main one: a row per step of every run that had steps
/// (nothing when none had).
fn steps_table(out: &mut String, runs: &[Report]) {
    if runs.iter().all(|r| r.steps.is_empty()) {
        return;
    }
    out.push_str(
        "\n| Test | Clients | Requests | Errors | Average QPS | p50 | p90 | p99 | p99.9 |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for run in runs {
        for step in &run.steps {
            let latency = |q: f64| {
                if step.ok == 0 {
                    missing()
                } else {
                    human_latency(step.latency.quantile_us(q) as f64)
                }
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                run.name.replace('|', "\\|"),
                thousands(u64::from(step.clients)),
                thousands(step.requests()),
                thousands(step.errors_total),
                qps(step.throughput),
                latency(0.5),
                latency(0.9),
                latency(0.99),
                latency(0.999),
            );
        }
    }
}

/// The audited runs' table, after the main one (nothing when no run was audited).
fn audit_table(out: &mut String, runs: &[Report]) {
    let audited: Vec<(&Report, &etcdlat_core::audit::AuditReport)> =
        runs.iter().filter_map(|r| Some((r, r.audit.as_ref()?))).collect();
    if audited.is_empty() {
        return;
    }
    out.push_str(
        "\n| Test | Audited | Writes | Lost writes | Order violations | Duplicate revisions | Stale reads | Serializable staleness p99 |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for (run, a) in audited {
        let staleness = a.serializable_staleness.as_ref().map_or_else(missing, |s| {
            format!("{} rev / {:.3}ms", thousands(s.p99_revisions), s.p99_ms)
        });
        let _ = writeln!(
            out,
            "| {} | {} of {} | {} | {} | {} | {} | {} | {} |",
            run.name.replace('|', "\\|"),
            thousands(a.audited),
            thousands(a.issued),
            thousands(a.writes),
            thousands(a.lost),
            thousands(a.order_violations),
            thousands(a.duplicate_revisions),
            thousands(a.stale_reads),
            staleness,
        );
    }
}

/// Where the *Network* and *etcd* columns go when there are any: after *Target*.
const NETWORK_AT: usize = 9;

fn row(run: &Report, kind: OpKind, op: &OpReport) -> [String; COLUMNS.len()] {
    let p = &run.params;
    // A run's parameters describe its one workload; a row shows those of its own kind.
    let is_put = kind == OpKind::Put;
    let writes = matches!(kind, OpKind::Put | OpKind::TxnPut | OpKind::TxnWrite);
    let keys_written = writes.then_some(op.keys);
    let (key_size, val_size) = if is_put { (p.key_size, p.val_size) } else { (None, None) };
    let consistency = if kind == OpKind::Range { p.consistency.clone() } else { None };
    // Where the load went (leader, followers, ...) and, for the endpoints as given, which.
    let target = match (run.targeting(), run.target.local) {
        (etcdlat_core::Targeting::Endpoints, true) => {
            let s = if run.target.members == 1 { "" } else { "s" };
            format!("local ({} member{s})", run.target.members)
        }
        (etcdlat_core::Targeting::Endpoints, false) if run.target.endpoints.is_empty() => {
            MISSING.to_owned()
        }
        (etcdlat_core::Targeting::Endpoints, false) => run.target.endpoints.join(", "),
        (t, _) => {
            let s = if run.target.members == 1 { "" } else { "s" };
            format!("{t} of {} member{s}", run.target.members)
        }
    };
    let latency = |us: f64| if op.ok > 0 { human_latency(us) } else { MISSING.to_owned() };
    let lat = &op.latency;
    [
        run.name.clone(),
        kind.name().to_owned(),
        keys_written.map_or_else(missing, thousands),
        thousands(op.ok + op.errors_total),
        key_size.map_or_else(missing, thousands),
        val_size.map_or_else(missing, thousands),
        thousands(u64::from(p.conns)),
        thousands(u64::from(p.clients)),
        target,
        consistency.unwrap_or_else(missing),
        qps(op.throughput),
        latency(lat.mean_us()),
        latency(lat.quantile_us(0.5) as f64),
        latency(lat.quantile_us(0.99) as f64),
        latency(lat.quantile_us(0.999) as f64),
        server_rss(run),
        thousands(op.errors_total),
    ]
}

/// The largest member RSS of the run, `33.6 MB`.
/// The *etcd* cell: the version and, when known, the Go that built it.
fn etcd_cell(target: &TargetInfo) -> String {
    match target.go_version.as_str() {
        "" => target.etcd_version.clone(),
        go => format!("{} ({go})", target.etcd_version),
    }
}

fn server_rss(run: &Report) -> String {
    run.server
        .iter()
        .filter_map(|m| m.rss_max_bytes)
        .max()
        .map_or_else(missing, |b| format!("{:.1} MB", b as f64 / 1e6))
}

fn missing() -> String {
    MISSING.to_owned()
}

/// Requests per second with one decimal and thousands separators: `44,341.0`.
pub(crate) fn qps(x: f64) -> String {
    if !x.is_finite() {
        return MISSING.to_owned();
    }
    let text = format!("{x:.1}");
    let (int, frac) = text.split_once('.').unwrap_or((&text, "0"));
    format!("{}.{frac}", group_digits(int))
}

/// A latency in microseconds as `0.815ms` (below one second) or `4.000s`.
fn human_latency(us: f64) -> String {
    if us >= 1e6 { format!("{:.3}s", us / 1e6) } else { format!("{:.3}ms", us / 1e3) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(qps(44_341.0), "44,341.0");
        assert_eq!(qps(583.25), "583.2");
        assert_eq!(qps(999_999.96), "1,000,000.0");
        assert_eq!(qps(f64::NAN), "-");
    }

    #[test]
    fn latencies_are_humanized() {
        assert_eq!(human_latency(815.0), "0.815ms");
        assert_eq!(human_latency(12_345.6), "12.346ms");
        assert_eq!(human_latency(4_000_000.0), "4.000s");
        assert_eq!(human_latency(999_999.0), "999.999ms");
    }
}
