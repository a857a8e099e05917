//! `run --find-max`: the largest `[kubernetes] nodes` a cluster carries within Kubernetes'
//! SLOs, as a bracket with its confidence. The scenario runs at its own node count first;
//! while it meets them the count doubles, once it misses them it halves (one run each),
//! until one count met and a larger one missed; then the interval between them is bisected
//! (one run each) until it is within a tenth of the count met (or 1 node). Then the two
//! counts either side of the boundary run again, each to `--find-max-repeats` runs of the
//! full verdict duration: a count met when it met the SLOs in every run and missed when it
//! missed them in any, so a repeat that misses moves the boundary down and the search goes
//! on below it. The answer is the bracket, "6,000 nodes met 3 of 3; 7,000 missed 2 of 3;
//! bound by: pods list page p99": the binding resource and verb is what missed most often
//! at the missed count, and each count's runs' worst p99s give the spread. The runs allowed
//! (`--find-max-runs`) bound it all. Every probe is a whole run, on a fresh throwaway
//! cluster when the scenario starts one, and every probe's report is written, the bracket
//! beside them in the JSON (`find_max`).
//!
//! A probe meets the SLOs when its run sustained them
//! ([`etcdlat_core::report::kubernetes::verdict`]: every API call judged, each list page a
//! call, answered at p99 by etcd within its share of its SLO, no node's lease renewals
//! further apart than the grace period), at most 0.1% of each kind of apiserver request
//! judged as API calls failed, the open-loop schedule achieved 95% of its target rate (an
//! etcd that cannot keep up falls behind before its latency shows it in a short run), and
//! no check (the invariants) failed. A request abandoned unanswered at the run's end counts
//! as failed when it had been out longer than its SLO by then, and not at all when it had
//! not: it might have met it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{Context, Result};
use etcdlat_core::report::OpReport;
use etcdlat_core::report::find_max::{BoundBy, CountReport, FindMaxReport};
use etcdlat_core::report::kubernetes::{self, SloVerdict, VerdictScope};
use etcdlat_core::unit::thousands;
use etcdlat_core::workload::kubernetes::{Verb, slo};
use etcdlat_core::{OpKind, Report, ReportSet, Scenario};

use crate::output;
use crate::plan::{FindMax, RunPlan};
use crate::run::{Session, run_one};
use crate::verdict::Verdict;

/// The share of a probe's requests that may fail with its SLOs still met.
const ERRORS_ALLOWED: f64 = 0.001;

/// The share of its target rate an open-loop probe must achieve.
const RATE_KEPT: f64 = 0.95;

/// What bound a probe that could not be run at its count (a preload over the quota).
const CANNOT_RUN: &str = "cannot run";

/// Why a probe missed the SLOs: what bound it (`pods list page p99`, `rate`) and, in a
/// few words, how.
#[derive(Debug, Clone, PartialEq)]
struct Miss {
    binding: String,
    why: String,
}

impl Miss {
    fn new(binding: impl Into<String>, why: impl Into<String>) -> Self {
        Self { binding: binding.into(), why: why.into() }
    }
}

/// One run the search made (or could not make) at one node count.
struct Probe {
    nodes: u64,
    /// Why it missed the SLOs; `None` when it met them.
    missed: Option<Miss>,
    /// Its run's report; `None` when the model could not run at that size (a preload over
    /// the quota), which misses them without a run.
    report: Option<Report>,
}

/// One node count's runs so far.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Tally {
    runs: u32,
    met: u32,
    /// No more runs would tell more: it could not be run at all.
    settled: bool,
}

/// Where the search stands: every count's runs, and how many runs a count either side of
/// the boundary gets.
#[derive(Debug, Clone, PartialEq)]
struct Search {
    repeats: u32,
    tallies: BTreeMap<u64, Tally>,
}

/// The largest count that met the SLOs in every run, below the smallest that missed them
/// in any.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Bounds {
    met: Option<u64>,
    missed: Option<u64>,
}

impl Search {
    fn new(repeats: u32) -> Self {
        Self { repeats: repeats.max(1), tallies: BTreeMap::new() }
    }

    /// Takes one run's verdict at `nodes`; `settled` when the count could not be run, which
    /// no repeat would change.
    fn record(&mut self, nodes: u64, met: bool, settled: bool) {
        let t = self.tallies.entry(nodes).or_default();
        t.runs += 1;
        t.met += u32::from(met);
        t.settled |= settled;
    }

    /// The bracket so far. A count that met above one that missed is noise the repeats
    /// found: the bracket stays below the smallest miss.
    fn bounds(&self) -> Bounds {
        let missed = self.tallies.iter().find(|(_, t)| t.met < t.runs).map(|(&n, _)| n);
        let met = self
            .tallies
            .iter()
            .filter(|&(&n, t)| t.met == t.runs && missed.is_none_or(|m| n < m))
            .map(|(&n, _)| n)
            .next_back();
        Bounds { met, missed }
    }

    /// Whether `nodes` has had all the runs it gets.
    fn done_with(&self, nodes: u64) -> bool {
        self.tallies.get(&nodes).is_some_and(|t| t.settled || t.runs >= self.repeats)
    }

    /// The node count to run next, `None` when the search is done: doubling or halving
    /// until both sides are known, bisecting to within a tenth, then the repeats of the
    /// count met and of the count missed.
    fn next(&self) -> Option<u64> {
        match self.bounds() {
            Bounds { met: None, missed: None } => None,
            Bounds { met: Some(met), missed: None } => met.checked_mul(2),
            Bounds { met: None, missed: Some(missed) } => (missed > 1).then_some(missed / 2),
            Bounds { met: Some(met), missed: Some(missed) } => {
                let close = (met / 10).max(1);
                if missed - met > close {
                    Some(met + (missed - met) / 2)
                } else if !self.done_with(met) {
                    Some(met)
                } else if !self.done_with(missed) {
                    Some(missed)
                } else {
                    None
                }
            }
        }
    }

    /// The answer: the bracket, each count's runs, what bound them, their spread.
    fn report(&self, probes: &[Probe], scope: Option<VerdictScope>) -> FindMaxReport {
        let counts: Vec<CountReport> = self
            .tallies
            .iter()
            .map(|(&nodes, t)| {
                let runs = probes.iter().filter(|p| p.nodes == nodes);
                let mut bound: BTreeMap<&str, u32> = BTreeMap::new();
                for m in runs.clone().filter_map(|p| p.missed.as_ref()) {
                    *bound.entry(&m.binding).or_default() += 1;
                }
                let mut bound_by: Vec<BoundBy> = bound
                    .into_iter()
                    .map(|(what, runs)| BoundBy { what: what.to_owned(), runs })
                    .collect();
                bound_by.sort_by(|a, b| b.runs.cmp(&a.runs).then_with(|| a.what.cmp(&b.what)));
                let worst: Vec<f64> =
                    runs.filter_map(|p| worst_of_limit(p.report.as_ref()?)).collect();
                let spread = worst
                    .iter()
                    .copied()
                    .reduce(f64::min)
                    .zip(worst.iter().copied().reduce(f64::max));
                CountReport {
                    nodes,
                    runs: t.runs,
                    met: t.met,
                    bound_by,
                    worst_p99_of_limit: spread.map(|(lo, hi)| [lo, hi]),
                }
            })
            .collect();
        let bounds = self.bounds();
        let at = |n: Option<u64>| n.and_then(|n| counts.iter().find(|c| c.nodes == n)).cloned();
        let (met, missed) = (at(bounds.met), at(bounds.missed));
        FindMaxReport {
            repeats: self.repeats,
            bound_by: missed.as_ref().and_then(|c| c.bound_by.first()).map(|b| b.what.clone()),
            gap: bounds
                .met
                .zip(bounds.missed)
                .map(|(met, missed)| (missed - met) as f64 / met as f64),
            met,
            missed,
            scope,
            counts,
        }
    }
}

/// Runs the search on the plan's one scenario and says how it went: done when some node
/// count met the SLOs, failed when none did.
pub async fn execute(plan: &RunPlan, search: FindMax) -> Result<Verdict> {
    let base = &plan.scenarios[0];
    let first =
        base.kubernetes.as_ref().map(|k| k.nodes).context("--find-max needs [kubernetes]")?;
    let mut session = Session::open(plan).await?;
    let stop = session.stop.clone();
    let mut probes: Vec<Probe> = Vec::new();
    let mut state = Search::new(search.repeats);
    let mut next = Some(first);
    // The first run that could not be made: the search's error when no run was.
    let mut failed: Option<anyhow::Error> = None;
    while let Some(nodes) = next.filter(|_| probes.len() < search.runs as usize && !*stop.borrow())
    {
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
                    let missed = Some(Miss::new(CANNOT_RUN, format!("could not run: {e:#}")));
                    failed.get_or_insert(e);
                    Probe { nodes, missed, report: None }
                }
            },
            // Too large for the cluster (its preload over the quota): a count it cannot carry.
            Err(e) => Probe {
                nodes,
                missed: Some(Miss::new(CANNOT_RUN, format!("cannot run: {e:#}"))),
                report: None,
            },
        };
        state.record(nodes, probe.missed.is_none(), probe.report.is_none());
        if plan.print_text {
            let run = state.tallies.get(&nodes).map_or(1, |t| t.runs);
            output::print(&format!("{}\n", probe_line(probes.len() + 1, &probe, run)))?;
        }
        probes.push(probe);
        next = state.next();
    }
    let scope =
        probes.iter().find_map(|p| p.report.as_ref()?.kubernetes.as_ref()).map(|k| k.scope.clone());
    let answer = state.report(&probes, scope);
    if plan.print_text {
        output::print(&summary(base, &probes, &answer))?;
    }
    let interrupted = *stop.borrow();
    let ran = probes.iter().any(|p| p.report.is_some());
    let mut set = ReportSet::new(probes.into_iter().filter_map(|p| p.report).collect());
    let met = answer.met.is_some();
    set.find_max = Some(answer);
    session.close(plan, &set)?;
    if let Some(e) = failed.filter(|_| !ran) {
        return Err(e);
    }
    Ok(if interrupted {
        Verdict::Interrupted
    } else if met {
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
/// not: what bound it and how.
fn judge(report: &Report) -> Result<(), Miss> {
    let verdict = kubernetes::verdict(report);
    if let Some(m) = verdict.missed.first() {
        let why = match (m.verdict, m.pages_over) {
            (SloVerdict::NoSuccesses, _) => {
                format!("{} {}: no request succeeded", m.verb.name(), m.resource)
            }
            (_, Some((over, pages))) => format!(
                "{} {}: {over} of {pages} pages over {} s",
                m.verb.name(),
                m.resource,
                m.limit_s
            ),
            _ => format!(
                "{} {} p99 {:.3} s over {} s",
                m.verb.name(),
                m.resource,
                m.p99_us as f64 / 1e6,
                m.limit_s
            ),
        };
        return Err(Miss::new(m.binding(), why));
    }
    if verdict.not_ready > 0 {
        return Err(Miss::new(
            "node lease renewals (NotReady)",
            format!(
                "{} nodes NotReady (a lease renewal gap past the grace period)",
                verdict.not_ready
            ),
        ));
    }
    if !verdict.sustained {
        return Err(Miss::new("no answers", "no apiserver request was answered"));
    }
    for (&kind, op) in &report.ops {
        failures(kind, op).map_err(|why| Miss::new(format!("{kind} errors"), why))?;
    }
    if let Some(p) = &report.pacing
        && p.achieved_rate < p.target_rate * RATE_KEPT
    {
        return Err(Miss::new(
            "rate",
            format!("achieved {:.0} of {:.0} requests/s", p.achieved_rate, p.target_rate),
        ));
    }
    match report.failures().into_iter().next() {
        Some(failure) => Err(Miss::new("checks", failure)),
        None => Ok(()),
    }
}

/// Whether requests of `kind` are judged as API calls: counts and consistent-read probes
/// are the apiserver's own calls ([`Verb::judged`]).
fn judged(kind: OpKind) -> Option<std::time::Duration> {
    Verb::of(kind).filter(|v| v.judged())?;
    slo(kind).map(|(_, limit)| limit)
}

/// `Err` when more than [`ERRORS_ALLOWED`] of an apiserver request kind's requests failed.
/// A request abandoned at the run's end before its SLO had passed might have met it: it is
/// judged neither way (a list begun in a short run's last seconds). One abandoned later is
/// a failure. Calls not judged (counts, consistent-read probes) are not held to it.
fn failures(kind: OpKind, op: &OpReport) -> Result<(), String> {
    let Some(limit) = judged(kind) else { return Ok(()) };
    let failed = op.errors_total - op.abandoned_within(limit);
    let requests = op.ok + failed;
    if failed as f64 > requests as f64 * ERRORS_ALLOWED {
        return Err(format!("{kind}: {failed} of {requests} requests failed"));
    }
    Ok(())
}

/// A run's worst p99 of the calls judged as a fraction of the limit etcd was held to (a
/// list's: its lists' slowest pages' p99 against the list SLO); `None` with no such call.
fn worst_of_limit(report: &Report) -> Option<f64> {
    let k = report.kubernetes.as_ref()?;
    k.requests
        .iter()
        .filter(|r| r.judged && r.ok > 0)
        .filter_map(|r| {
            let slo = r.slo.as_ref()?;
            let p99_us = r
                .page_calls
                .as_ref()
                .map_or_else(|| r.latency.quantile_us(0.99), |p| p.slowest_p99_us);
            Some(p99_us as f64 / (slo.etcd_limit_s * 1e6))
        })
        .reduce(f64::max)
}

/// The `n`-th probe's line: its count, its run of that count, verdict and figures.
fn probe_line(n: usize, probe: &Probe, run: u32) -> String {
    let verdict = match &probe.missed {
        None => "met".to_owned(),
        Some(m) => format!("missed: {}", m.why),
    };
    let mut line = format!("find-max probe {n}: nodes = {}: {verdict}", probe.nodes);
    if let Some(report) = &probe.report {
        let _ = write!(line, " (run {run} of this count; {})", figures(report));
    }
    line
}

/// The figures a probe is compared by: its worst p99 against the limit etcd is held to,
/// its rate, and what etcd's CPU did over the run: its busiest member's and all members'
/// together.
fn figures(report: &Report) -> String {
    let worst = report
        .ops
        .iter()
        .filter_map(|(kind, op)| {
            let limit = judged(*kind)?;
            let share = op.latency.quantile_us(0.99) as f64 / limit.as_micros() as f64;
            Some((share, *kind))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let mut out = match (worst_of_limit(report), worst) {
        (Some(share), _) => format!("worst p99 {:.0}% of its etcd limit", share * 100.0),
        (None, Some((share, kind))) => {
            format!("worst p99 {:.0}% of its SLO, {kind}", share * 100.0)
        }
        (None, None) => "no apiserver requests".to_owned(),
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

/// The search's table and its answer: each count's runs, the spread of their worst p99s
/// and what bound them; then the bracket and what it assumed.
fn summary(base: &Scenario, probes: &[Probe], answer: &FindMaxReport) -> String {
    let mut out =
        format!("\n{}: --find-max over [kubernetes] nodes, {} runs\n", base.name, probes.len());
    out.push_str("  nodes\tmet\tworst p99 of its limit\tbound by\n");
    for c in &answer.counts {
        let spread = c.worst_p99_of_limit.map_or_else(
            || "not run: too large".to_owned(),
            |[lo, hi]| format!("{:.0}%-{:.0}%", lo * 100.0, hi * 100.0),
        );
        let bound: Vec<String> =
            c.bound_by.iter().map(|b| format!("{} ({} of {})", b.what, b.runs, c.runs)).collect();
        let bound = if bound.is_empty() { "-".to_owned() } else { bound.join(", ") };
        let _ =
            writeln!(out, "  {}\t{} of {}\t{spread}\t{bound}", thousands(c.nodes), c.met, c.runs);
    }
    let _ = writeln!(out, "bracket: {}", answer.bracket());
    match (&answer.met, &answer.missed) {
        (Some(met), Some(missed)) => {
            let _ = writeln!(
                out,
                "sustained nodes = {} within SLO ({} missed them)",
                met.nodes, missed.nodes
            );
        }
        (Some(met), None) => {
            let _ = writeln!(
                out,
                "sustained nodes = {} within SLO (no larger count was tried: allow more runs with --find-max-runs)",
                met.nodes
            );
        }
        (None, Some(missed)) => {
            let _ =
                writeln!(out, "no node count met the SLOs (the smallest tried: {})", missed.nodes);
        }
        (None, None) => out.push_str("no probe finished\n"),
    }
    let repeats_short = [&answer.met, &answer.missed]
        .into_iter()
        .flatten()
        .any(|c| c.runs < answer.repeats && c.bound_by.iter().all(|b| b.what != CANNOT_RUN));
    if repeats_short {
        let _ = writeln!(
            out,
            "(fewer than {} runs of a count of the bracket: allow more runs with --find-max-runs)",
            answer.repeats
        );
    }
    if let Some(scope) = &answer.scope {
        let _ = writeln!(out, "({}.)", scope.sentence());
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
        // One run per count: the search as it was before repeats.
        let probe = |first: u64, carries: u64, runs: usize| {
            let mut search = Search::new(1);
            let mut tried = Vec::new();
            let mut next = Some(first);
            while let Some(n) = next.filter(|_| tried.len() < runs) {
                tried.push(n);
                search.record(n, n <= carries, false);
                next = search.next();
            }
            (tried, search.bounds())
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

    /// A fake cluster that carries about `carries` nodes, its verdict noisy near there: a
    /// run at `n` meets the SLOs with a probability falling from 1 to 0 over 10% either
    /// side of `carries`, drawn from a seeded RNG. Returns the counts run in order and the
    /// search.
    fn noisy(carries: u64, first: u64, repeats: u32, runs: usize, seed: u64) -> (Vec<u64>, Search) {
        // splitmix64: a seeded sequence of uniform draws in [0, 1).
        let mut state = seed;
        let mut uniform = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            (z ^ (z >> 31)) as f64 / (u64::MAX as f64 + 1.0)
        };
        let mut search = Search::new(repeats);
        let mut tried = Vec::new();
        let mut next = Some(first);
        while let Some(n) = next.filter(|_| tried.len() < runs) {
            let x = (n as f64 - carries as f64) / (carries as f64 * 0.1);
            let p_met = (0.5 - x / 2.0).clamp(0.0, 1.0);
            tried.push(n);
            search.record(n, uniform() < p_met, false);
            next = search.next();
        }
        (tried, search)
    }

    /// Near the boundary each count runs `repeats` times; doubling, halving and bisecting
    /// run each count once. The bracket's met count met in every run, its missed count
    /// missed in at least one, they are within a tenth, and the same seed gives the same
    /// search.
    #[test]
    fn repeats_are_spent_at_the_bracket_and_the_bracket_is_within_a_tenth() {
        for seed in 0..50 {
            let (tried, search) = noisy(7300, 1000, 3, 100, seed);
            assert_eq!((tried.clone(), search.clone()), noisy(7300, 1000, 3, 100, seed), "seeded");
            assert_eq!(search.next(), None, "seed {seed}: done within 100 runs: {tried:?}");
            let Bounds { met: Some(met), missed: Some(missed) } = search.bounds() else {
                panic!("seed {seed}: a bracket: {tried:?}");
            };
            let (m, x) = (search.tallies[&met], search.tallies[&missed]);
            assert_eq!((m.runs, m.met), (3, 3), "seed {seed}: met every time: {tried:?}");
            assert!(x.runs == 3 && x.met < 3, "seed {seed}: missed at least once: {x:?}");
            assert!(missed > met && missed - met <= met / 10, "seed {seed}: {met} {missed}");
            // Around the noise band, 10% either side of 7,300.
            assert!((6000..=8100).contains(&met) && missed <= 8100, "seed {seed}: {met} {missed}");
            // The doubling is one run a count; only counts that were once an end of the
            // bracket run more than once.
            assert_eq!(&tried[..4], [1000, 2000, 4000, 8000], "seed {seed}");
            for (&n, t) in &search.tallies {
                assert!(t.runs <= 3, "seed {seed}: {n}: {t:?}");
                if !(6000..=8100).contains(&n) {
                    assert_eq!(t.runs, 1, "seed {seed}: {n} is far from the boundary: {tried:?}");
                }
            }
        }
    }

    /// A repeat that misses at the count that met moves the bracket below it; a count
    /// that could not run is settled after one run; the report names what bound the
    /// missed count most often and the spread of each count's worst p99s.
    #[test]
    fn a_repeat_that_misses_moves_the_bracket_and_the_report_says_what_bound_it() {
        let mut search = Search::new(3);
        for (n, met) in [(100, true), (200, false), (150, true), (175, false), (162, true)] {
            search.record(n, met, false);
        }
        assert_eq!(search.bounds(), Bounds { met: Some(162), missed: Some(175) });
        assert_eq!(search.next(), Some(162), "the count met runs again");
        search.record(162, false, false);
        assert_eq!(search.bounds(), Bounds { met: Some(150), missed: Some(162) });
        assert_eq!(search.next(), Some(150), "162 missed once: 150 is confirmed next");
        search.record(150, true, false);
        search.record(150, true, false);
        assert_eq!(search.next(), Some(162), "then the missed count's repeats");
        search.record(162, true, false);
        assert_eq!(search.next(), None, "162: 2 of 3 met, a miss");
        let mut settled = Search::new(3);
        settled.record(4, true, false);
        settled.record(8, false, true);
        settled.record(6, false, true);
        settled.record(5, false, true);
        assert_eq!((settled.next(), settled.done_with(5)), (Some(4), true));

        let probe = |nodes, binding: Option<&str>| Probe {
            nodes,
            missed: binding.map(|b| Miss::new(b, "why")),
            report: None,
        };
        let probes = [
            probe(150, None),
            probe(162, Some("pods list page p99")),
            probe(150, None),
            probe(150, None),
            probe(162, None),
            probe(162, Some("rate")),
            probe(162, Some("pods list page p99")),
        ];
        let mut search = Search::new(3);
        for p in &probes {
            search.record(p.nodes, p.missed.is_none(), false);
        }
        let r = search.report(&probes, None);
        assert_eq!(
            r.bracket(),
            "150 nodes met 3 of 3; 162 missed 3 of 4; bound by: pods list page p99"
        );
        let missed = r.missed.as_ref().unwrap();
        let bound: Vec<(&str, u32)> = missed.bound_by.iter().map(|b| (&*b.what, b.runs)).collect();
        assert_eq!(bound, [("pods list page p99", 2), ("rate", 1)], "most first");
        assert_eq!(r.gap, Some(12.0 / 150.0));
        assert_eq!(r.counts.iter().map(|c| c.nodes).collect::<Vec<_>>(), [150, 162]);
        assert_eq!(r.counts[0].worst_p99_of_limit, None, "no report, no spread");
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
