//! From what a run measured to its [`etcdlat_core::Report`]'s parts: the run's parameters, the
//! per-member breakdown, and how paced requests kept to their schedule.

use std::time::{Duration, Instant, SystemTime};

use etcdlat_core::recorder::Recorder;
use etcdlat_core::{Operation, Params, Scenario};

use crate::cluster::discovery::MemberInfo;

/// What a run measured, before it becomes a report.
pub(crate) struct Measured {
    pub recorder: Recorder,
    pub measure_start: Instant,
    pub last_done: Instant,
    pub interrupted: bool,
    pub watch: Option<etcdlat_core::WatchAccounting>,
    /// CPU time of the worker threads during the measured run, when measured.
    pub worker_cpu: Option<Duration>,
    /// The audit's history, when audited.
    pub audit: Option<super::audit::History>,
    /// The busiest worker thread's CPU over wall time: over the run, and in its busiest
    /// second.
    pub worker_busy: Option<(f64, f64)>,
    /// The apiserver's requests by resource and verb, when the run sent any.
    pub kubernetes: Option<etcdlat_core::report::kubernetes::KubernetesReport>,
}

/// The per-member breakdown, members named from the member list.
pub(super) fn member_reports(
    records: &[etcdlat_core::recorder::MemberRecord],
    members: &[MemberInfo],
    duration: Duration,
) -> Vec<etcdlat_core::MemberReport> {
    let secs = duration.as_secs_f64();
    let mut out: Vec<etcdlat_core::MemberReport> = records
        .iter()
        .map(|r| etcdlat_core::MemberReport {
            name: members
                .iter()
                .find(|m| m.id == r.id)
                .map_or_else(|| format!("{:x}", r.id), |m| m.name.clone()),
            id: format!("{:x}", r.id),
            ok: r.ok,
            throughput: if secs > 0.0 { r.ok as f64 / secs } else { 0.0 },
            latency: etcdlat_core::Distribution::new(r.latency.clone()),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// How paced requests kept to their schedule, with a verdict in words when the target rate
/// was missed: the client's CPU, its timer, or busy clients (the server, or too few clients).
pub(super) fn pacing_report(
    p: &etcdlat_core::recorder::Pacing,
    load: &etcdlat_core::Load,
    duration: Duration,
    client: Option<&etcdlat_core::ClientUsage>,
    workers: usize,
) -> etcdlat_core::PacingReport {
    let secs = duration.as_secs_f64();
    let target = load.rate_shape().mean();
    let achieved = p.start_rate();
    let timer_p99_us = if p.timer.is_empty() { 0 } else { p.timer.value_at_quantile(0.99) };
    let late_share = if p.paced > 0 { p.late as f64 / p.paced as f64 } else { 0.0 };
    let verdict = (target > 0.0 && achieved < 0.99 * target).then(|| {
        let cpu = client.map_or(0.0, |c| c.user_cpu_s + c.system_cpu_s);
        let cpu_share = if secs > 0.0 { cpu / (secs * workers.max(1) as f64) } else { 0.0 };
        let missed = format!("{achieved:.1}/s achieved of {target:.1}/s asked");
        if cpu_share > 0.9 {
            format!(
                "{missed}: the client was the bottleneck, using {:.0}% of its {workers} worker thread(s)",
                cpu_share * 100.0
            )
        } else if timer_p99_us > 5_000 {
            format!(
                "{missed}: the client could not keep time, waking up to {:.1} ms late for its slots (p99)",
                timer_p99_us as f64 / 1000.0
            )
        } else if late_share > 0.05 {
            format!(
                "{missed}: every logical client was busy when {:.0}% of the requests were due; etcd (or too few clients) held the rate back",
                late_share * 100.0
            )
        } else {
            missed
        }
    });
    let name = |v: &dyn std::fmt::Debug| format!("{v:?}").to_lowercase();
    etcdlat_core::PacingReport {
        schedule: name(&load.schedule),
        arrivals: name(&load.arrivals),
        target_rate: target,
        achieved_rate: achieved,
        paced: p.paced,
        late: p.late,
        lateness: etcdlat_core::Distribution::new(p.lateness.clone()),
        timer_lateness: etcdlat_core::Distribution::new(p.timer.clone()),
        verdict,
    }
}

/// The seed of a run's random choices: the first operation's, else the clock's.
pub(super) fn op_seed(scenario: &Scenario) -> u64 {
    scenario.workload().iter().find_map(|(_, op)| op.seed()).unwrap_or_else(|| {
        SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    })
}

/// A size's mean, whole bytes: a fixed size itself.
fn mean_size(size: &etcdlat_core::workload::SizeDistribution) -> u64 {
    size.mean().round() as u64
}

/// The run's parameters, as its report states them.
pub(super) fn params(scenario: &Scenario, conns: u32, workers: usize, seed: u64) -> Params {
    let load = &scenario.load;
    let workload = scenario.workload();
    let mut p = Params::default();
    p.op = workload.iter().map(|(_, op)| op.name()).collect::<Vec<_>>().join("+");
    p.conns = conns;
    p.clients = load.clients;
    p.workers = u32::try_from(workers).unwrap_or(u32::MAX);
    p.rate = load.rate;
    p.total = load.total_asked();
    p.duration_s = load.duration_asked().map(|d| d.as_secs_f64());
    p.warmup_s = load.warmup.as_secs_f64();
    p.seed = seed;
    for (_, op) in workload {
        match op {
            Operation::Put(put) if p.val_size.is_none() => {
                p.key_size = Some(put.key_size + put.prefix.len() as u64);
                p.val_size = Some(put.val_size);
                p.key_space_size = Some(put.key_space_size);
                p.sequential_keys = Some(put.sequential_keys);
            }
            Operation::TxnPut(t) if p.val_size.is_none() => {
                p.key_size = Some(t.key_size + t.prefix.len() as u64);
                p.val_size = Some(t.val_size);
                p.key_space_size = Some(t.key_space_size);
            }
            Operation::Range(r) if p.consistency.is_none() => {
                p.consistency = Some(r.consistency.letter().to_owned());
            }
            Operation::TxnMixed(t) if p.consistency.is_none() => {
                p.consistency = Some(t.consistency.letter().to_owned());
                p.val_size = Some(t.val_size);
                p.key_space_size = Some(t.key_space_size);
            }
            Operation::Stm(s) if p.val_size.is_none() => {
                p.val_size = Some(s.val_size);
                p.key_space_size = Some(s.keys);
            }
            Operation::K8sCreate(o) | Operation::K8sUpdate(o) if p.val_size.is_none() => {
                p.key_size = Some(o.key(o.objects - 1).len() as u64);
                p.val_size = Some(mean_size(&o.object_size));
                p.key_space_size = Some(o.objects);
            }
            Operation::K8sEvent(e) if p.val_size.is_none() => {
                p.val_size = Some(mean_size(&e.object_size));
            }
            Operation::K8sPodLifecycle(l) if p.val_size.is_none() => {
                p.val_size = Some(mean_size(&l.object_size));
            }
            _ => {}
        }
    }
    p
}
