//! Merging the reports of shards of one run: several machines (or processes) that ran the
//! same scenario at the same time, each writing its own JSON report, combined into the
//! report of the whole load.
//!
//! ```
//! use etcdlat_core::{ReportSet, merge};
//! # fn show(a: ReportSet, b: ReportSet) -> Result<(), etcdlat_core::MergeError> {
//! let whole = merge::merge_labeled(&[("a.json", &a), ("b.json", &b)])?;
//! let put = whole.runs[0].op(etcdlat_core::OpKind::Put);
//! println!("p99 of all {} puts: {:?}", put.ok, put.latency.quantile(0.99));
//! # Ok(()) }
//! ```
//!
//! Run `i` of every shard is merged into run `i`; the runs must correspond (same name, same
//! operation kinds, same interval length), or the merge fails naming the shard and the run.
//!
//! What is exact and what is not:
//!
//! - latency, service time and per-member histograms are added (HDR `add`), so every
//!   percentile of the merged report is that of one histogram of all the samples;
//! - ok, errors (by code), keys, value bytes, retries, conflicts, pages, clamped values and the watch
//!   accounting are summed;
//! - the sample message of each error code is the first shard's that has one;
//! - the duration is the longest shard's (the shards ran concurrently), and throughput is
//!   the total of successful requests divided by it;
//! - intervals are merged by index, which assumes the shards started together; shards whose
//!   interval doubled more often (chosen from a length not known in advance) are merged at
//!   the longest, the shorter intervals falling whole into it: counts and errors are summed, min and max are exact, the mean is the count-weighted mean of the
//!   shards' means (exact up to their rounding). Interval percentiles are summaries and
//!   cannot be merged exactly: p50, p90 and p99 are the largest of the shards', an upper
//!   bound of the true figure (which lies between the shards' smallest and largest);
//! - `all` is merged from the shards' `all` rows the same way as each kind;
//! - client steps are merged by position, as each kind: clients, requests and the total
//!   summed, latency histograms added, the start the earliest shard's and the duration the
//!   longest;
//! - params: clients, conns, workers and the rate are summed, and the total when every shard
//!   had one (else there is none); the rest, the target, the scenario and the server metrics (the same servers
//!   over the same time) are the first shard's;
//! - the start is the earliest shard's; the run is interrupted when any shard was;
//! - leader changes of all shards are listed in time order, a change already listed just
//!   before (the same `from` and `to`, seen by another shard) left out;
//! - the HashKV check is the first inconsistent shard's, else the first shard's;
//! - the audit ([`crate::audit::AuditReport::add`]): counts summed (each shard checked its
//!   own requests' order, not across shards), serializable staleness an upper bound;
//! - client usage: CPU times, socket bytes and context switches summed, the largest RSS
//!   and peak CPU of any one process; no resource series (each shard's was its own);
//! - pacing: rates and counts summed, lateness histograms added, the first verdict given;
//! - every shard's own figures are kept in [`Report::shards`] (a shard that was itself a
//!   merge contributes its shards).

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::op::OpKind;
use crate::recorder::add_counts;
use crate::report::{
    Distribution, Interval, OpReport, PacingReport, Report, ReportSet, SCHEMA_VERSION, ShardInfo,
    StepReport,
};

/// Why reports cannot be merged. Shards are named by their labels (file names, for the CLI);
/// runs by their 1-based position and name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    /// No report was given.
    #[error("no reports to merge")]
    Empty,
    /// A shard was written in another JSON layout version.
    #[error("{shard}: schema_version {found}, this etcdlat reads {SCHEMA_VERSION}")]
    SchemaVersion {
        /// The shard's label.
        shard: String,
        /// Its layout version.
        found: u32,
    },
    /// A shard holds a different number of runs than the first.
    #[error("{shard}: {found} runs, but {first} has {expected}")]
    RunCount {
        /// The shard's label.
        shard: String,
        /// The first shard's label.
        first: String,
        /// Runs in the shard.
        found: usize,
        /// Runs in the first shard.
        expected: usize,
    },
    /// Run `run` of a shard has another name than the first shard's.
    #[error("{shard}: run {run} is {found:?}, but in {first} it is {expected:?}")]
    RunName {
        /// The shard's label.
        shard: String,
        /// The first shard's label.
        first: String,
        /// 1-based position of the run.
        run: usize,
        /// The run's name in the shard.
        found: String,
        /// Its name in the first shard.
        expected: String,
    },
    /// A run of a shard measured other operation kinds than the first shard's.
    #[error("{shard}: run {run:?} measured {}, but in {first} it measured {}", names(.found), names(.expected))]
    OpKinds {
        /// The shard's label.
        shard: String,
        /// The first shard's label.
        first: String,
        /// The run's name.
        run: String,
        /// The kinds in the shard.
        found: Vec<OpKind>,
        /// The kinds in the first shard.
        expected: Vec<OpKind>,
    },
    /// A run of a shard has intervals whose length does not divide the longest shard's, so
    /// they cannot be lined up.
    #[error("{shard}: run {run:?} has intervals of {found_s} s, but in {first} of {expected_s} s")]
    Interval {
        /// The shard's label.
        shard: String,
        /// The first shard's label.
        first: String,
        /// The run's name.
        run: String,
        /// Interval length in the shard, seconds.
        found_s: f64,
        /// Interval length in the first shard, seconds.
        expected_s: f64,
    },
    /// A histogram holds values outside 1 us .. 1 h (not one etcdlat wrote).
    #[error("{shard}: run {run:?}: a histogram holds values outside 1 us .. 1 h")]
    HistogramRange {
        /// The shard's label.
        shard: String,
        /// The run's name.
        run: String,
    },
}

fn names(kinds: &[OpKind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    if names.is_empty() { "nothing".to_owned() } else { names.join(", ") }
}

/// Merges report sets of shards labelled `shard 1`, `shard 2`, ...
///
/// # Errors
/// As [`merge_labeled`].
pub fn merge(sets: &[ReportSet]) -> Result<ReportSet, MergeError> {
    let labels: Vec<String> = (1..=sets.len()).map(|i| format!("shard {i}")).collect();
    let shards: Vec<(&str, &ReportSet)> = labels.iter().map(String::as_str).zip(sets).collect();
    merge_labeled(&shards)
}

/// Merges report sets, each with the label that names it in errors and in
/// [`Report::shards`] (its file name, say).
///
/// # Errors
/// [`MergeError::Empty`] for no sets; [`MergeError::SchemaVersion`] for a set of another
/// layout version; [`MergeError::RunCount`], [`MergeError::RunName`],
/// [`MergeError::OpKinds`] and [`MergeError::Interval`] when the runs do not correspond;
/// [`MergeError::HistogramRange`] for a histogram etcdlat did not write.
pub fn merge_labeled(shards: &[(&str, &ReportSet)]) -> Result<ReportSet, MergeError> {
    let Some(&(first_label, first)) = shards.first() else { return Err(MergeError::Empty) };
    for &(label, set) in shards {
        if set.schema_version != SCHEMA_VERSION {
            return Err(MergeError::SchemaVersion {
                shard: label.to_owned(),
                found: set.schema_version,
            });
        }
        if set.runs.len() != first.runs.len() {
            return Err(MergeError::RunCount {
                shard: label.to_owned(),
                first: first_label.to_owned(),
                found: set.runs.len(),
                expected: first.runs.len(),
            });
        }
    }
    let runs = (0..first.runs.len())
        .map(|i| {
            let run: Vec<(&str, &Report)> =
                shards.iter().map(|&(label, set)| (label, &set.runs[i])).collect();
            merge_run(i, &run)
        })
        .collect::<Result<_, _>>()?;
    Ok(ReportSet::new(runs))
}

/// Merges run `index` of every shard (each with its label).
fn merge_run(index: usize, shards: &[(&str, &Report)]) -> Result<Report, MergeError> {
    let (first_label, first) = shards[0];
    let kinds: Vec<OpKind> = first.ops.keys().copied().collect();
    for &(label, r) in &shards[1..] {
        if r.name != first.name {
            return Err(MergeError::RunName {
                shard: label.to_owned(),
                first: first_label.to_owned(),
                run: index + 1,
                found: r.name.clone(),
                expected: first.name.clone(),
            });
        }
        let theirs: Vec<OpKind> = r.ops.keys().copied().collect();
        if theirs != kinds {
            return Err(MergeError::OpKinds {
                shard: label.to_owned(),
                first: first_label.to_owned(),
                run: r.name.clone(),
                found: theirs,
                expected: kinds,
            });
        }
    }
    // Shards whose intervals adapted to their length may differ by doublings: the merge has
    // the longest, and each shard's intervals fall whole into one of it.
    let (longest_label, longest) = shards
        .iter()
        .map(|&(label, r)| (label, r.interval().as_secs_f64()))
        .fold((first_label, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    let mut factors = Vec::with_capacity(shards.len());
    for &(label, r) in shards {
        let found_s = r.interval().as_secs_f64();
        let factor = longest / found_s;
        if (factor - factor.round()).abs() > 1e-6 {
            return Err(MergeError::Interval {
                shard: label.to_owned(),
                first: longest_label.to_owned(),
                run: r.name.clone(),
                found_s,
                expected_s: longest,
            });
        }
        factors.push(factor.round() as usize);
    }
    let interval_s = longest;
    let range_error = |label: &str| MergeError::HistogramRange {
        shard: label.to_owned(),
        run: first.name.clone(),
    };

    // Start from the first shard so that every field not merged below is the first's.
    let mut out = first.clone();
    out.interval_s = interval_s;
    out.started_at =
        shards.iter().map(|(_, r)| r.started_at.as_str()).min().unwrap_or_default().to_owned();
    out.interrupted = shards.iter().any(|(_, r)| r.interrupted);
    out.duration_s = shards.iter().map(|(_, r)| r.duration_s).fold(0.0, f64::max);

    let p = &mut out.params;
    p.clients = shards.iter().map(|(_, r)| r.params.clients).sum();
    p.conns = shards.iter().map(|(_, r)| r.params.conns).sum();
    p.workers = shards.iter().map(|(_, r)| r.params.workers).sum();
    p.rate = shards.iter().map(|(_, r)| r.params.rate).sum();
    p.total = shards.iter().map(|(_, r)| r.params.total).sum();

    for kind in &kinds {
        let ops: Vec<(&str, &OpReport)> =
            shards.iter().map(|&(label, r)| (label, &r.ops[kind])).collect();
        let merged = merge_op(&ops, &factors, interval_s).map_err(range_error)?;
        out.ops.insert(*kind, merged);
    }
    let alls: Option<Vec<(&str, &OpReport)>> =
        shards.iter().map(|&(label, r)| r.all.as_ref().map(|a| (label, a))).collect();
    out.all =
        alls.map(|alls| merge_op(&alls, &factors, interval_s)).transpose().map_err(range_error)?;
    out.steps = merge_steps(shards).map_err(range_error)?;

    if shards.iter().any(|(_, r)| r.watch.is_some()) {
        let mut w = crate::report::WatchAccounting::default();
        for s in shards.iter().filter_map(|(_, r)| r.watch.as_ref()) {
            w.add(s);
        }
        out.watch = Some(w);
    }
    out.audit = None;
    for a in shards.iter().filter_map(|(_, r)| r.audit.as_ref()) {
        out.audit.get_or_insert_with(Default::default).add(a);
    }
    // Per (resource, verb) figures would need each shard's histograms by slot, which
    // reports do not carry in a mergeable form: left out rather than one shard's shown.
    out.kubernetes = None;
    out.invariants = None;
    for i in shards.iter().filter_map(|(_, r)| r.invariants.as_ref()) {
        out.invariants.get_or_insert_with(Default::default).add(i);
    }
    out.hashkv = shards
        .iter()
        .filter_map(|(_, r)| r.hashkv.as_ref())
        .find(|h| !h.consistent)
        .or(first.hashkv.as_ref())
        .cloned();

    out.members = Vec::new();
    for &(label, r) in shards {
        for m in &r.members {
            match out.members.iter_mut().find(|o| o.name == m.name) {
                Some(o) => {
                    o.ok += m.ok;
                    o.latency = add(&o.latency, &m.latency).ok_or_else(|| range_error(label))?;
                }
                None => out.members.push(m.clone()),
            }
        }
    }
    for m in &mut out.members {
        m.throughput = per_second(m.ok, out.duration_s);
    }

    let mut changes: Vec<_> = shards.iter().flat_map(|(_, r)| r.leader_changes.clone()).collect();
    changes.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    changes.dedup_by(|later, earlier| later.from == earlier.from && later.to == earlier.to);
    out.leader_changes = changes;

    let pacings: Option<Vec<&PacingReport>> =
        shards.iter().map(|(_, r)| r.pacing.as_ref()).collect();
    out.pacing = match pacings {
        Some(pacings) => Some(merge_pacing(&pacings).ok_or_else(|| range_error(first_label))?),
        None => None,
    };

    if shards.iter().any(|(_, r)| r.client.is_some()) {
        let mut usage = crate::metrics::ClientUsage::default();
        let add = |a: &mut Option<u64>, b: Option<u64>| {
            if let Some(b) = b {
                *a = Some(a.unwrap_or(0) + b);
            }
        };
        for c in shards.iter().filter_map(|(_, r)| r.client.as_ref()) {
            usage.user_cpu_s += c.user_cpu_s;
            usage.system_cpu_s += c.system_cpu_s;
            usage.max_rss_bytes = usage.max_rss_bytes.max(c.max_rss_bytes);
            add(&mut usage.sent_bytes, c.sent_bytes);
            add(&mut usage.received_bytes, c.received_bytes);
            add(&mut usage.voluntary_ctxt_switches, c.voluntary_ctxt_switches);
            add(&mut usage.nonvoluntary_ctxt_switches, c.nonvoluntary_ctxt_switches);
            // Each shard's CPU was its own machine's: the busiest is the figure, as for busy.
            usage.cpu_max_percent = match (usage.cpu_max_percent, c.cpu_max_percent) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
            if let Some(w) = c.worker_cpu_s {
                usage.worker_cpu_s = Some(usage.worker_cpu_s.unwrap_or(0.0) + w);
            }
            // Shards run on machines of their own: the busiest one is the figure.
            if let Some(b) = &c.busy {
                usage.busy = Some(match usage.busy.take() {
                    Some(seen) => seen.busiest(b),
                    None => b.clone(),
                });
            }
        }
        out.client = Some(usage);
    }

    out.shards = shards
        .iter()
        .flat_map(|&(label, r)| {
            if r.shards.is_empty() {
                vec![ShardInfo {
                    name: label.to_owned(),
                    started_at: r.started_at.clone(),
                    duration_s: r.duration_s,
                    clients: r.params.clients,
                    conns: r.params.conns,
                    ok: r.ok(),
                    errors_total: r.errors_total(),
                }]
            } else {
                r.shards.clone()
            }
        })
        .collect();
    Ok(out)
}

/// Merges one row (a kind, or `all`) of every shard; the label of a shard whose histogram
/// could not be added when one cannot.
/// Merges one kind's reports of the shards, whose intervals are `factors` times shorter
/// than the merge's `interval_s`.
fn merge_op<'a>(
    ops: &[(&'a str, &OpReport)],
    factors: &[usize],
    interval_s: f64,
) -> Result<OpReport, &'a str> {
    let (_, first) = ops[0];
    let mut out = first.clone();
    for &(label, op) in &ops[1..] {
        add_counts!(out, op);
        out.errors_total += op.errors_total;
        for (code, n) in &op.errors {
            *out.errors.entry(code.clone()).or_insert(0) += n;
        }
        for (code, message) in op.error_messages.iter().filter(|(_, m)| !m.is_empty()) {
            let kept = out.error_messages.entry(code.clone()).or_default();
            if kept.is_empty() {
                kept.clone_from(message);
            }
        }
        out.latency = add(&out.latency, &op.latency).ok_or(label)?;
        out.service_time = add(&out.service_time, &op.service_time).ok_or(label)?;
        out.abandoned = match (&out.abandoned, &op.abandoned) {
            (Some(a), Some(b)) => Some(add(a, b).ok_or(label)?),
            (a, b) => a.clone().or_else(|| b.clone()),
        };
    }
    out.duration_s = ops.iter().map(|(_, op)| op.duration_s).fold(0.0, f64::max);
    out.throughput = per_second(out.ok, out.duration_s);
    let series = ops.iter().zip(factors).map(|((_, op), &f)| (op.intervals.as_slice(), f));
    out.intervals = merge_intervals(series, interval_s);
    Ok(out)
}

/// Merges the shards' client steps by position (the shards ran the same steps side by
/// side); the label of a shard whose histogram could not be added when one cannot.
fn merge_steps<'a>(shards: &[(&'a str, &Report)]) -> Result<Vec<StepReport>, &'a str> {
    let (_, first) = shards[0];
    let mut out = first.steps.clone();
    for &(label, r) in &shards[1..] {
        for (k, theirs) in r.steps.iter().enumerate() {
            let Some(step) = out.get_mut(k) else {
                out.push(theirs.clone());
                continue;
            };
            step.clients += theirs.clients;
            step.active_clients += theirs.active_clients;
            step.total = step.total.zip(theirs.total).map(|(a, b)| a + b);
            step.start_s = step.start_s.min(theirs.start_s);
            step.duration_s = step.duration_s.max(theirs.duration_s);
            step.ok += theirs.ok;
            step.errors_total += theirs.errors_total;
            step.latency = add(&step.latency, &theirs.latency).ok_or(label)?;
        }
    }
    for step in &mut out {
        step.throughput = per_second(step.ok, step.duration_s);
    }
    Ok(out)
}

/// Interval `i` of the merge from the intervals of every shard that fall in it: a shard's
/// series comes with how many of its intervals make one of the merge's (see the module docs
/// for what is exact).
fn merge_intervals<'a>(
    series: impl Iterator<Item = (&'a [Interval], usize)> + Clone,
    interval_s: f64,
) -> Vec<Interval> {
    let len = series.clone().map(|(s, f)| s.len().div_ceil(f)).max().unwrap_or(0);
    let mut by_index: BTreeMap<usize, Vec<&Interval>> = BTreeMap::new();
    for (s, factor) in series {
        for (i, interval) in s.iter().enumerate() {
            by_index.entry(i / factor).or_default().push(interval);
        }
    }
    (0..len)
        .map(|i| {
            let parts = by_index.get(&i).map_or(&[][..], Vec::as_slice);
            let timed: Vec<&&Interval> = parts.iter().filter(|p| p.count > 0).collect();
            let count: u64 = parts.iter().map(|p| p.count).sum();
            let weighted: f64 = timed.iter().map(|p| p.count as f64 * p.mean_us).sum();
            let max_of = |f: fn(&Interval) -> u64| timed.iter().map(|p| f(p)).max().unwrap_or(0);
            Interval {
                t_s: round3(i as f64 * interval_s),
                count,
                errors: parts.iter().map(|p| p.errors).sum(),
                min_us: timed.iter().map(|p| p.min_us).min().unwrap_or(0),
                mean_us: if count > 0 { round3(weighted / count as f64) } else { 0.0 },
                p50_us: max_of(|p| p.p50_us),
                p90_us: max_of(|p| p.p90_us),
                p99_us: max_of(|p| p.p99_us),
                max_us: max_of(|p| p.max_us),
            }
        })
        .collect()
}

fn merge_pacing(pacings: &[&PacingReport]) -> Option<PacingReport> {
    let mut out = pacings[0].clone();
    for p in &pacings[1..] {
        out.target_rate += p.target_rate;
        out.achieved_rate += p.achieved_rate;
        out.paced += p.paced;
        out.late += p.late;
        out.lateness = add(&out.lateness, &p.lateness)?;
        out.timer_lateness = add(&out.timer_lateness, &p.timer_lateness)?;
        if out.verdict.is_none() {
            out.verdict.clone_from(&p.verdict);
        }
    }
    Some(out)
}

/// The sum of two distributions; `None` when one holds values the other cannot.
fn add(a: &Distribution, b: &Distribution) -> Option<Distribution> {
    let mut h: Histogram<u64> = a.histogram().clone();
    h.add(b.histogram()).ok()?;
    Some(Distribution::new(h))
}

fn per_second(n: u64, secs: f64) -> f64 {
    if secs > 0.0 { n as f64 / secs } else { 0.0 }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
