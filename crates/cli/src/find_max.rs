//! `run --find-max`: the largest `[kubernetes] nodes` a cluster carries within Kubernetes'
//! SLOs. The scenario runs at its own node count first; while it meets them the count
//! doubles, once it misses them it halves, until one count met and a larger one missed;
//! then the interval between them is bisected until it is within a tenth of the count met
//! (or 1 node), or the runs allowed are spent. Every probe is a whole run, on a fresh
//! throwaway cluster when the scenario starts one, and every probe's report is written.
//!
//! A probe meets the SLOs when its run sustained them
//! ([`etcdlat_core::report::kubernetes::verdict`]: every resource and verb answered at p99
//! within its SLO, no node's lease renewals further apart than the grace period), at most
//! 0.1% of each kind of apiserver request failed, the open-loop schedule achieved 95% of
//! its target rate (an etcd that cannot keep up falls behind before its latency shows it
//! in a short run), and no check (the invariants) failed. A request abandoned unanswered at
//! the run's end counts as failed when it had been out longer than its SLO by then, and
//! not at all when it had not: it might have met it.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use etcdlat_core::report::OpReport;
use etcdlat_core::report::kubernetes::{self, SloVerdict};
use etcdlat_core::workload::kubernetes::slo;
use etcdlat_core::{OpKind, Report, ReportSet, Scenario};

use crate::output;
use crate::plan::RunPlan;
use crate::run::{Session, run_one};
use crate::verdict::Verdict;

/// The share of a probe's requests that may fail with its SLOs still met.
const ERRORS_ALLOWED: f64 = 0.001;

/// The share of its target rate an open-loop probe must achieve.
const RATE_KEPT: f64 = 0.95;

/// One node count the search tried.
struct Probe {
    nodes: u64,
    /// Why it missed the SLOs; `None` when it met them.
    missed: Option<String>,
    /// Its run's report; `None` when the model could not run at that size (a preload over
    /// the quota), which misses them without a run.
    report: Option<Report>,
}

/// Where the search stands: the largest count that met the SLOs and the smallest that
/// missed them, so far.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Bounds {
    met: Option<u64>,
    missed: Option<u64>,
}

impl Bounds {
    /// Takes `nodes`' verdict.
    fn record(&mut self, nodes: u64, met: bool) {
        if met {
            self.met = Some(self.met.map_or(nodes, |m| m.max(nodes)));
        } else {
            self.missed = Some(self.missed.map_or(nodes, |m| m.min(nodes)));
        }
    }

    /// The node count to probe next, `None` when the search is done.
    fn next(&self) -> Option<u64> {
        match (self.met, self.missed) {
            (None, None) => None,
            (Some(met), None) => met.checked_mul(2),
            (None, Some(missed)) => (missed > 1).then_some(missed / 2),
            (Some(met), Some(missed)) => {
                let close = (met / 10).max(1);
                (missed > met && missed - met > close).then(|| met + (missed - met) / 2)
            }
        }
    }
}

/// Runs the search on the plan's one scenario, at most `runs` probes, and says how it went:
/// done when some node count met the SLOs, failed when none did.
pub async fn execute(plan: &RunPlan, runs: u32) -> Result<Verdict> {
    let base = &plan.scenarios[0];
    let first =
        base.kubernetes.as_ref().map(|k| k.nodes).context("--find-max needs [kubernetes]")?;
    let mut session = Session::open(plan).await?;
    let stop = session.stop.clone();
    let mut probes: Vec<Probe> = Vec::new();
    let mut bounds = Bounds::default();
    let mut next = Some(first);
    // The first run that could not be made: the search's error when no run was.
    let mut failed: Option<anyhow::Error> = None;
    while let Some(nodes) = next.filter(|_| probes.len() < runs as usize && !*stop.borrow()) {
        let probe = match probe_scenario(base, nodes) {
            Ok(scenario) => match run_one(plan, 0, &scenario, &mut session).await {
                Ok(Some(report)) if !report.interrupted => {
                    Probe { nodes, missed: judge(&report).err(), report: Some(report) }
                }
                Ok(_) => break,
                // A count the cluster could not be set up for (its preload refused when
                // the store outgrew the quota, which the estimate allowed): it does not
                // carry that count; the search goes on below it, and what ran is reported.
                Err(e) => {
                    let missed = Some(format!("could not run: {e:#}"));
                    failed.get_or_insert(e);
                    Probe { nodes, missed, report: None }
                }
            },
            // Too large for the cluster (its preload over the quota): a count it cannot carry.
            Err(e) => Probe { nodes, missed: Some(format!("cannot run: {e:#}")), report: None },
        };
        bounds.record(nodes, probe.missed.is_none());
        if plan.print_text {
            output::print(&format!("{}\n", probe_line(probes.len() + 1, &probe)))?;
        }
        probes.push(probe);
        next = bounds.next();
    }
    if plan.print_text {
        output::print(&summary(base, &probes, bounds))?;
    }
    let interrupted = *stop.borrow();
    let ran = probes.iter().any(|p| p.report.is_some());
    let set = ReportSet::new(probes.into_iter().filter_map(|p| p.report).collect());
    session.close(plan, &set)?;
    if let Some(e) = failed.filter(|_| !ran) {
        return Err(e);
    }
    Ok(if interrupted {
        Verdict::Interrupted
    } else if bounds.met.is_some() {
        Verdict::Done
    } else {
        Verdict::Failed
    })
}

/// The scenario at `nodes` nodes, named for it.
fn probe_scenario(base: &Scenario, nodes: u64) -> Result<Scenario> {
    let mut s =
        base.with_nodes(nodes).with_context(|| format!("{} at {nodes} nodes", base.name))?;
    s.name = format!("{} nodes={nodes}", base.name);
    Ok(s)
}

/// `Ok` when the run met Kubernetes' SLOs and kept its rate; else the first reason it did
/// not, in a few words.
fn judge(report: &Report) -> Result<(), String> {
    let verdict = kubernetes::verdict(report);
    if let Some(m) = verdict.missed.first() {
        return Err(match m.verdict {
            SloVerdict::NoSuccesses => {
                format!("{} {}: no request succeeded", m.verb.name(), m.resource)
            }
            _ => format!(
                "{} {} p99 {:.3} s over {} s",
                m.verb.name(),
                m.resource,
                m.p99_us as f64 / 1e6,
                m.limit_s
            ),
        });
    }
    if verdict.not_ready > 0 {
        return Err(format!(
            "{} nodes NotReady (a lease renewal gap past the grace period)",
            verdict.not_ready
        ));
    }
    if !verdict.sustained {
        return Err("no apiserver request was answered".to_owned());
    }
    for (&kind, op) in &report.ops {
        failures(kind, op)?;
    }
    if let Some(p) = &report.pacing
        && p.achieved_rate < p.target_rate * RATE_KEPT
    {
        return Err(format!("achieved {:.0} of {:.0} requests/s", p.achieved_rate, p.target_rate));
    }
    match report.failures().into_iter().next() {
        Some(failure) => Err(failure),
        None => Ok(()),
    }
}

/// `Err` when more than [`ERRORS_ALLOWED`] of an apiserver request kind's requests failed.
/// A request abandoned at the run's end before its SLO had passed might have met it: it is
/// judged neither way (a list begun in a short run's last seconds). One abandoned later is
/// a failure.
fn failures(kind: OpKind, op: &OpReport) -> Result<(), String> {
    let Some((_, limit)) = slo(kind) else { return Ok(()) };
    let failed = op.errors_total - op.abandoned_within(limit);
    let requests = op.ok + failed;
    if failed as f64 > requests as f64 * ERRORS_ALLOWED {
        return Err(format!("{kind}: {failed} of {requests} requests failed"));
    }
    Ok(())
}

/// The `n`-th probe's line: its count, verdict and figures.
fn probe_line(n: usize, probe: &Probe) -> String {
    let verdict = match &probe.missed {
        None => "met".to_owned(),
        Some(why) => format!("missed: {why}"),
    };
    let mut line = format!("find-max probe {n}: nodes = {}: {verdict}", probe.nodes);
    if let Some(report) = &probe.report {
        let _ = write!(line, " ({})", figures(report));
    }
    line
}

/// The figures a probe is compared by: its worst p99 against its SLO, its rate, and what
/// etcd's CPU did over the run: its busiest member's and all members' together.
fn figures(report: &Report) -> String {
    let worst = report
        .ops
        .iter()
        .filter_map(|(kind, op)| {
            let (_, limit) = slo(*kind)?;
            let share = op.latency.quantile_us(0.99) as f64 / limit.as_micros() as f64;
            Some((share, *kind))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = match worst {
        Some((share, kind)) => format!("worst p99 {:.0}% of its SLO, {kind}", share * 100.0),
        None => "no apiserver requests".to_owned(),
    };
    if let Some(p) = &report.pacing {
        let _ = write!(out, "; {:.0}/{:.0} requests/s", p.achieved_rate, p.target_rate);
    }
    // Over the run, not its busiest second: a member at a core or more for the whole run
    // is a member that could not keep up.
    let members: Vec<(&str, f64)> =
        report.server.iter().filter_map(|m| Some((m.name.as_str(), m.cpu_s?))).collect();
    let busiest = members.iter().max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some(&(name, cpu_s)) = busiest.filter(|_| report.duration_s > 0.0) {
        let all: f64 = members.iter().map(|(_, cpu_s)| cpu_s).sum();
        let _ = write!(
            out,
            "; etcd CPU {:.0}% of a core on {name}, {:.2} cores on all {}",
            cpu_s / report.duration_s * 100.0,
            all / report.duration_s,
            members.len()
        );
    }
    out
}

/// The search's table and its answer.
fn summary(base: &Scenario, probes: &[Probe], bounds: Bounds) -> String {
    let mut out =
        format!("\n{}: --find-max over [kubernetes] nodes, {} runs\n", base.name, probes.len());
    out.push_str("  nodes\tverdict\tfigures\n");
    let mut sorted: Vec<&Probe> = probes.iter().collect();
    sorted.sort_by_key(|p| p.nodes);
    for p in sorted {
        let verdict = if p.missed.is_none() { "met" } else { "missed" };
        let figures = p.report.as_ref().map_or_else(|| "not run: too large".to_owned(), figures);
        let _ = writeln!(out, "  {}\t{verdict}\t{figures}", p.nodes);
    }
    match (bounds.met, bounds.missed) {
        (Some(met), Some(missed)) => {
            let _ = writeln!(out, "sustained nodes = {met} within SLO ({missed} missed them)");
        }
        (Some(met), None) => {
            let _ = writeln!(
                out,
                "sustained nodes = {met} within SLO (no larger count was tried: allow more runs with --find-max-runs)"
            );
        }
        (None, Some(missed)) => {
            let _ = writeln!(out, "no node count met the SLOs (the smallest tried: {missed})");
        }
        (None, None) => out.push_str("no probe finished\n"),
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use etcdlat_core::Recorder;

    use super::*;

    /// The search doubles while it meets the SLOs, halves while it misses them, then
    /// bisects until the counts are within a tenth, against a cluster that carries 730 nodes.
    #[test]
    fn the_search_doubles_halves_and_bisects_to_within_a_tenth() {
        let probe = |first: u64, carries: u64, runs: usize| {
            let mut bounds = Bounds::default();
            let mut tried = Vec::new();
            let mut next = Some(first);
            while let Some(n) = next.filter(|_| tried.len() < runs) {
                tried.push(n);
                bounds.record(n, n <= carries);
                next = bounds.next();
            }
            (tried, bounds)
        };
        let (tried, bounds) = probe(100, 730, 20);
        assert_eq!(tried, [100, 200, 400, 800, 600, 700, 750]);
        assert_eq!((bounds.met, bounds.missed), (Some(700), Some(750)));
        let (tried, bounds) = probe(5000, 730, 20);
        assert_eq!(&tried[..4], [5000, 2500, 1250, 625]);
        assert_eq!(bounds.met, Some(tried.iter().copied().filter(|&n| n <= 730).max().unwrap()));
        assert!(bounds.missed.unwrap() - bounds.met.unwrap() <= bounds.met.unwrap() / 10);
        let (tried, _) = probe(100, 730, 3);
        assert_eq!(tried, [100, 200, 400], "bounded in runs");
        let (tried, bounds) = probe(4, 0, 20);
        assert_eq!(tried, [4, 2, 1], "down to one node");
        assert_eq!(bounds.met, None);
        let (tried, bounds) = probe(1, 1, 3);
        assert_eq!(tried, [1, 2], "one node apart is close enough");
        assert_eq!((bounds.met, bounds.missed), (Some(1), Some(2)));
    }

    /// A request abandoned at the run's end is a failure once out longer than its SLO, and
    /// judged neither way before: one list out for 3 s of its 30 s does not miss a run.
    #[test]
    fn an_abandoned_request_fails_only_past_its_slo() {
        let judged = |kind: OpKind, ok: u64, abandoned_after: &[u64]| {
            let start = Instant::now();
            let mut rec = Recorder::new(&[kind], start, Duration::from_secs(1));
            let end = start + Duration::from_secs(60);
            for _ in 0..ok {
                rec.record_ok(kind, end - Duration::from_millis(5), end, end);
            }
            for &s in abandoned_after {
                rec.record_abandoned(kind, end - Duration::from_secs(s), end);
            }
            let record = rec.finish().into_iter().find(|(k, _)| *k == kind).unwrap().1;
            failures(kind, &OpReport::from_record(&record, Duration::from_secs(60), end - start))
        };
        assert_eq!(judged(OpKind::K8sList, 0, &[3]), Ok(()));
        assert_eq!(judged(OpKind::K8sList, 0, &[29, 3]), Ok(()));
        assert_eq!(
            judged(OpKind::K8sList, 0, &[31, 3]),
            Err("k8s-list: 1 of 1 requests failed".to_owned())
        );
        // Mutations' SLO is 1 s, and the grace alone is 2 s: every abandoned one failed.
        assert_eq!(judged(OpKind::K8sUpdate, 999, &[2]), Ok(()), "0.1% may fail");
        assert_eq!(
            judged(OpKind::K8sUpdate, 999, &[2, 3]),
            Err("k8s-update: 2 of 1001 requests failed".to_owned())
        );
        // Kinds with no SLO are not judged here.
        assert_eq!(judged(OpKind::Put, 0, &[5]), Ok(()));
    }
}
