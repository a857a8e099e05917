//! The workers' side of a run: the apiserver's watch caches filled before it starts, one
//! job per worker (its logical clients, its share of the total, the rate, the audit's limit
//! and the client steps' indices), and their results merged into what the run measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use etcdlat_core::Scenario;
use etcdlat_core::recorder::Recorder;
use etcdlat_core::report::kubernetes::{KubernetesReport, VerdictScope};
use etcdlat_core::step::{self, StepPlan};
use etcdlat_core::workload::kubernetes::NODE_MONITOR_GRACE;

use super::{Run, Start, Steer};
use crate::load::audit::History;
use crate::load::driver::Pool;
use crate::load::report::Measured;
use crate::load::request::Work;
use crate::load::step::{Gate, StepJob};
use crate::load::worker::{Client, Job, JobResult, Pacing};

impl Run<'_> {
    /// One job per worker: its logical clients, its share of the total and the rate.
    pub(super) fn jobs(
        &self,
        pool: &Pool,
        work: &Arc<Work>,
        start: Start,
        steer: Steer<'_>,
    ) -> Vec<Job> {
        let scenario = self.scenario;
        let kinds = work.kinds();
        let load = &scenario.load;
        let workers = pool.workers.len();

        // Logical client i uses connection i % conns, which lives on worker
        // (i % conns) % workers at local index (i % conns) / workers.
        let mut clients: Vec<Vec<Client>> = vec![Vec::new(); workers];
        for id in 0..load.clients {
            let c = id as usize % pool.conns as usize;
            clients[c % workers].push(Client { id, conn: c / workers });
        }
        let counts: Vec<u64> = clients.iter().map(|c| c.len() as u64).collect();
        let quotas = load.total.map(|t| step::split(t, &counts));
        let mut steps = load.step_plan().map(|plan| step_parts(plan, &clients));
        let gate = Gate::new(workers, steps.as_ref().map_or(0, |(plan, _)| plan.len()));

        let interval = scenario.series_interval();
        let series = self.stream.then(|| (interval.length, kinds.clone()));
        let progress = self.driver.progress.reset(workers, series);
        work.begin(workers, start.at + load.warmup);
        (0..workers)
            .map(|w| {
                let share = clients[w].len() as f64 / f64::from(load.clients);
                let mine = std::mem::take(&mut clients[w]);
                let audit = scenario.checks.audit.then(|| {
                    (audit_share(scenario, mine.len(), work.parts()), work.parts() as usize)
                });
                Job {
                    work: Arc::clone(work),
                    kinds: kinds.clone(),
                    seed: self.seed.wrapping_add(w as u64 + 1),
                    quota: quotas.as_ref().map(|q| q[w]),
                    clients: mine,
                    pacing: Pacing {
                        schedule: load.schedule,
                        arrivals: load.arrivals,
                        rate: load.rate_shape(),
                        share,
                    },
                    start_at: start.at,
                    warmup: load.warmup,
                    duration: load.duration,
                    interval,
                    stop: steer.stop.clone(),
                    progress: Arc::clone(&progress[w]),
                    retarget: steer.retarget.clone(),
                    placement: (w, workers),
                    dialer: self.driver.dialer.clone(),
                    audit,
                    steps: steps.as_mut().map(|(plan, parts)| StepJob {
                        plan: plan.clone(),
                        parts: std::mem::take(&mut parts[w]),
                        gate: Arc::clone(&gate),
                    }),
                }
            })
            .collect()
    }
}

/// Fills the apiserver's operations' watch caches on the first worker, whose thread then
/// runs their watches, before the sampler and the start: a cache lists every object of
/// its resource (150,000 pods at 5,000 nodes), which would otherwise hold the first
/// clients in the measured run while their open-loop slots pass. A cache that cannot be
/// filled here is said in the log and left to the clients, which fill it before their
/// first request or fail that request, named.
pub(super) async fn fill_caches(pool: &Pool, work: &Arc<Work>) {
    let Some(worker) = pool.workers.first() else { return };
    let work = Arc::clone(work);
    let filled = worker.exec(move |conns| async move {
        match conns.first() {
            Some(conn) => work.fill_caches(conn).await,
            None => Ok(()),
        }
    });
    let failed = match filled {
        Ok(filled) => match filled.await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.message().to_owned(),
            Err(_) => "the worker ended".to_owned(),
        },
        Err(e) => e.to_string(),
    };
    tracing::warn!("the watch caches could not be filled before the run: {failed}");
}

/// The workers' results merged into what the run measured, from `measure_start`.
pub(super) fn merge(
    outcomes: Vec<JobResult>,
    work: Arc<Work>,
    scenario: &Scenario,
    measure_start: Instant,
) -> Measured {
    // The intended start, not when the workers woke for it (later on a loaded machine):
    // the fault steps are scheduled from it.
    let last_done = outcomes.iter().map(|o| o.last_done).max().unwrap_or(measure_start);
    let interrupted = outcomes.iter().any(|o| o.interrupted);
    let mut recorder = Recorder::new(&[], measure_start, scenario.series_interval().length);
    let worker_cpu = outcomes.iter().map(|o| o.cpu).sum::<Option<Duration>>();
    let mut audits = Vec::new();
    let worker_busy = outcomes
        .iter()
        .filter_map(|o| o.busy)
        .map(|(peak, run)| (run, peak))
        .reduce(|a, b| (a.0.max(b.0), a.1.max(b.1)));
    for o in outcomes {
        recorder.merge(o.recorder);
        audits.extend(o.audit);
    }
    let grace =
        scenario.kubernetes.as_ref().map_or(NODE_MONITOR_GRACE, |k| k.node_monitor_grace_period);
    let nodes = scenario.kubernetes.as_ref().map(|k| k.nodes);
    let kubernetes = KubernetesReport::from_requests(
        work.request_kinds(),
        recorder.requests_by_slot(),
        nodes,
        grace,
        VerdictScope::of(scenario.kubernetes.as_ref()),
    );
    let audit = scenario.checks.audit.then(|| History::gather(audits, work));
    Measured {
        kubernetes,
        recorder,
        measure_start,
        last_done,
        interrupted,
        watch: None,
        worker_cpu,
        audit,
        worker_busy,
    }
}

/// A worker's share of the audit's limit (in entries), in proportion to its clients, and
/// never more than its share of a bounded total needs (`parts` entries a request at most).
fn audit_share(scenario: &Scenario, clients: usize, parts: u64) -> usize {
    let all = u64::from(scenario.load.clients.max(1));
    let mine = clients as u64;
    let mut share = scenario.checks.audit_limit.saturating_mul(mine).div_ceil(all);
    if let Some(total) = scenario.load.total {
        share = share.min(total.saturating_mul(parts).saturating_mul(mine).div_ceil(all));
    }
    usize::try_from(share).unwrap_or(usize::MAX)
}

/// Each worker's request indices of each client step, `parts[worker][step]`: a counted
/// step's indices split over the workers in proportion to the clients each has sending in
/// it, as contiguous ranges from the step's first, so that together they issue exactly the
/// step's; nothing for a timed step.
fn step_parts(plan: StepPlan, clients: &[Vec<Client>]) -> (StepPlan, Vec<Vec<(u64, u64)>>) {
    let mut parts = vec![Vec::with_capacity(plan.len()); clients.len()];
    for (k, s) in plan.steps().iter().enumerate() {
        let (first, count) = plan.indices(k);
        let sending: Vec<u64> =
            clients.iter().map(|c| c.iter().filter(|c| s.has(c.id)).count() as u64).collect();
        let split = step::split(count.unwrap_or(0), &sending);
        for (worker, (start, n)) in parts.iter_mut().zip(split) {
            worker.push((first + start, n));
        }
    }
    (plan, parts)
}

#[cfg(test)]
mod tests {
    use etcdlat_core::ClientStep;

    use super::*;

    #[test]
    fn each_counted_step_is_split_over_the_workers_that_send_in_it() {
        let plan = StepPlan::new(&[
            ClientStep { clients: 1, total: Some(10), duration: None },
            ClientStep { clients: 3, total: None, duration: Some(Duration::from_secs(1)) },
            ClientStep { clients: 4, total: Some(100), duration: None },
        ]);
        // Four clients on one connection each, over two workers: 0 and 2 on the first.
        let on = |ids: &[u32]| ids.iter().map(|&id| Client { id, conn: 0 }).collect::<Vec<_>>();
        let (_, parts) = step_parts(plan, &[on(&[0, 2]), on(&[1, 3])]);
        assert_eq!(parts[0], [(0, 10), (10, 0), (10, 50)]);
        assert_eq!(parts[1], [(10, 0), (10, 0), (60, 50)], "client 1 sends from the third step");
    }
}
