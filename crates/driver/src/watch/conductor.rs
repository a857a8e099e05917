//! The calling task's side of a watch run: lays the run out over the workers, steps them
//! through the phases, watches their progress, and gathers what they measured.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use etcdlat_core::{Operation, Recorder, Scenario, WatchAccounting};
use tokio::sync::watch;

use super::phase::Phase;
use super::plan::{Layout, Plan, WATCH_GET_KEY};
use super::tally::{Tally, WorkerState};
use super::task::work;
use crate::error::DriverError;
use crate::load::report::Measured;
use crate::load::worker::Worker;
use crate::load::worker::WorkerError;
use crate::transport::message::{Key, PutRequest};

/// Once every put is acknowledged, how long the run waits for expected events while none
/// arrives; what has not arrived by then is missing.
pub(super) const EVENT_GRACE: Duration = Duration::from_secs(5);

/// How often the calling task looks at the workers' progress.
const POLL_EVERY: Duration = Duration::from_millis(5);

/// Runs a watch-family scenario on the workers.
pub(crate) async fn run(
    workers: &[Worker],
    scenario: &Scenario,
    seed: u64,
    stop: watch::Receiver<bool>,
) -> Result<Measured, DriverError> {
    let layout = layout_of(workers).await?;
    let plan = match &scenario.op {
        Some(Operation::Watch(op)) => Plan::watch(op, scenario, seed, layout),
        Some(Operation::WatchLatency(op)) => Plan::latency(op, scenario, seed, layout),
        Some(Operation::WatchGet(op)) => {
            let Some(first) = workers.first() else {
                return Err(DriverError::worker(0, WorkerError::NoWorkers));
            };
            let revisions = fill(first, op.events, &stop).await?;
            Plan::get(op, scenario, revisions, layout)
        }
        other => {
            return Err(DriverError::Unsupported {
                what: other.as_ref().map_or("mix", |o| o.name()).to_owned(),
            });
        }
    };
    orchestrate(workers, Arc::new(plan), stop).await
}

/// Where the workers' connections are: connection `c` on worker `c % workers`, at its index
/// `c / workers` (as the driver's pool places them).
async fn layout_of(workers: &[Worker]) -> Result<Layout, DriverError> {
    let mut conns = 0;
    for worker in workers {
        let count = worker.exec(|conns| async move { conns.len() })?;
        conns += count.await.map_err(|_| gone(worker))? as u64;
    }
    if conns == 0 {
        return Err(DriverError::worker(0, WorkerError::NoConnections));
    }
    Ok(Layout { conns, workers: workers.len() as u64 })
}

fn gone(worker: &Worker) -> DriverError {
    DriverError::worker(worker.index(), WorkerError::Stopped)
}

/// Puts watch-get's `events` values to its key, unmeasured; returns the first and last
/// revision written.
async fn fill(
    worker: &Worker,
    events: u64,
    stop: &watch::Receiver<bool>,
) -> Result<(i64, i64), DriverError> {
    let stop = stop.clone();
    let done = worker.exec(move |conns| async move {
        let mut kv = conns[0].kv.clone();
        let mut revisions: Option<(i64, i64)> = None;
        let mut failed = 0;
        for i in 0..events {
            if *stop.borrow() {
                return Err(DriverError::Interrupted);
            }
            let request = PutRequest {
                key: Key::new(WATCH_GET_KEY),
                value: Bytes::from(i.to_string()),
                lease: 0,
            };
            match kv.put(request).await {
                Ok(response) => {
                    let rev = response.header.map_or(0, |h| h.revision);
                    revisions = Some((revisions.map_or(rev, |r| r.0), rev));
                }
                Err(_) => failed += 1,
            }
        }
        match revisions {
            Some(r) if failed == 0 => Ok(r),
            _ => Err(DriverError::Setup { failed, total: events }),
        }
    })?;
    done.await.map_err(|_| gone(worker))?
}

/// Steps the workers through the phases and gathers what they measured.
async fn orchestrate(
    workers: &[Worker],
    plan: Arc<Plan>,
    stop: watch::Receiver<bool>,
) -> Result<Measured, DriverError> {
    let (ctl, ctl_rx) = watch::channel(Phase::Create);
    let mut statuses = Vec::with_capacity(workers.len());
    let mut outcomes = Vec::with_capacity(workers.len());
    for (index, worker) in workers.iter().enumerate() {
        let (status, status_rx) = watch::channel(WorkerState::default());
        let plan = Arc::clone(&plan);
        let ctl = ctl_rx.clone();
        outcomes.push(worker.exec(move |conns| work(index, plan, conns, ctl, status))?);
        statuses.push(status_rx);
    }
    drop(ctl_rx);

    let mut stopped = wait(workers, &statuses, &stop, |s| s.ready).await?;
    if !stopped {
        let _ = ctl.send(Phase::Put(Instant::now()));
        stopped = wait(workers, &statuses, &stop, |s| s.puts_done.is_some()).await?;
    }
    if !stopped {
        let expected = plan
            .expected
            .unwrap_or_else(|| statuses.iter().map(|s| s.borrow().puts_done.unwrap_or(0)).sum());
        stopped = drain(workers, &statuses, &stop, expected).await?;
    }
    let _ = ctl.send(Phase::Finish);

    let mut recorder = Recorder::new(&[], plan.start, plan.interval);
    let mut tally = Tally::default();
    let mut last = plan.start;
    for (worker, outcome) in workers.iter().zip(outcomes) {
        let outcome = outcome.await.map_err(|_| gone(worker))?;
        recorder.merge(outcome.recorder);
        tally.add(&outcome.tally);
        last = last.max(outcome.last);
    }
    let expected = plan.expected.unwrap_or(tally.expected);
    let watch = WatchAccounting {
        streams: plan.streams,
        watchers: tally.watchers,
        puts: tally.puts + plan.setup_puts,
        expected,
        received: tally.received,
        missing: expected.saturating_sub(tally.seen()),
        duplicate: tally.duplicate,
        out_of_order: tally.out_of_order,
        before_ack: tally.before_ack,
        uncertain_puts: tally.uncertain_puts,
        uncertain_events: tally.uncertain_events,
        unexplained: tally.seen().saturating_sub(expected + tally.uncertain_events),
    };
    Ok(Measured {
        recorder,
        measure_start: plan.start,
        last_done: last,
        interrupted: stopped,
        watch: Some(watch),
        worker_cpu: None,
        audit: None,
        worker_busy: None,
        kubernetes: None,
    })
}

/// Waits until every worker's status is `done`; true when the run was stopped first.
async fn wait(
    workers: &[Worker],
    statuses: &[watch::Receiver<WorkerState>],
    stop: &watch::Receiver<bool>,
    done: impl Fn(&WorkerState) -> bool,
) -> Result<bool, DriverError> {
    loop {
        if *stop.borrow() {
            return Ok(true);
        }
        alive(workers, statuses)?;
        if statuses.iter().all(|s| done(&s.borrow())) {
            return Ok(false);
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Waits until the workers have seen `expected` events, or none for [`EVENT_GRACE`]; true
/// when the run was stopped first.
async fn drain(
    workers: &[Worker],
    statuses: &[watch::Receiver<WorkerState>],
    stop: &watch::Receiver<bool>,
    expected: u64,
) -> Result<bool, DriverError> {
    let mut seen_before = u64::MAX;
    let mut progress_at = Instant::now();
    loop {
        if *stop.borrow() {
            return Ok(true);
        }
        alive(workers, statuses)?;
        let seen: u64 = statuses.iter().map(|s| s.borrow().seen).sum();
        if seen >= expected {
            return Ok(false);
        }
        let now = Instant::now();
        if seen != seen_before {
            seen_before = seen;
            progress_at = now;
        } else if now.duration_since(progress_at) >= EVENT_GRACE {
            return Ok(false);
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Fails when a worker's task ended before the run did (it panicked: a bug).
fn alive(workers: &[Worker], statuses: &[watch::Receiver<WorkerState>]) -> Result<(), DriverError> {
    match workers.iter().zip(statuses).find(|(_, s)| s.has_changed().is_err()) {
        Some((worker, _)) => Err(gone(worker)),
        None => Ok(()),
    }
}
