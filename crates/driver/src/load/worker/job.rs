//! One job on a worker: the state its logical clients share, each client's request loop,
//! the warm-up and measured phases, following the target when it moves, and the progress
//! published while it runs.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use etcdlat_core::{ErrorCode, OpKind, Pacer, Recorder, Schedule};
use tokio::sync::watch;

use super::{ABANDONED, Client, Job, JobResult, STOP_GRACE};
use crate::load::audit_log::{AuditLog, Recording};
use crate::load::cpu::{BusyMeter, thread_cpu};
use crate::load::kubernetes;
use crate::load::progress::{LiveKind, WorkerProgress};
use crate::load::request::{ClientState, Ops};
use crate::load::step::{Claim, StepState};
use crate::transport::{Conn, Dialer};

/// State shared by the logical clients of one worker.
struct Shared {
    ops: Ops,
    /// The connections clients use; replaced when the target moves.
    conns: RefCell<Rc<[Conn]>>,
    /// Bumped at every replacement, so clients notice with one `Cell` read.
    generation: Cell<u64>,
    recorder: RefCell<Recorder>,
    next_index: Cell<u64>,
    end_index: Cell<u64>,
    deadline: Cell<Option<Instant>>,
    stop: Cell<bool>,
    /// The schedule's slots; `None` for an unpaced closed loop.
    pacer: Option<RefCell<Pacer>>,
    issued: [Cell<u64>; OpKind::COUNT],
    audit: Option<AuditLog>,
    /// How busy the thread was in its busiest window so far.
    busy: RefCell<BusyMeter>,
    /// How far finished intervals have been published, in first intervals.
    published: Cell<u64>,
    /// The client steps as this worker follows them, when the run has them.
    steps: Option<StepState>,
}

impl Shared {
    /// What logical client `id` does next: the index of its next request, or wait for the
    /// next client step, or stop (the phase is over).
    #[inline]
    fn claim(&self, id: u32) -> Claim {
        if self.stop.get() {
            return Claim::Over;
        }
        if let Some(steps) = self.steps.as_ref().filter(|s| s.begun()) {
            return steps.claim(id);
        }
        let i = self.next_index.get();
        if i >= self.end_index.get() {
            return Claim::Over;
        }
        // With a schedule the pacer ends the phase at the deadline by slot, not by clock: in
        // an open loop a backlog of slots due before the deadline is still sent after it.
        if let (Some(deadline), None) = (self.deadline.get(), &self.pacer)
            && Instant::now() >= deadline
        {
            return Claim::Over;
        }
        self.next_index.set(i + 1);
        Claim::Request { index: i, step: None }
    }

    /// Records a request of client step `step` (its outcome `ok`, answered at `done`) in
    /// the step's own figures, besides the run's.
    #[inline]
    fn record_step(&self, rec: &mut Recorder, step: usize, ok: Option<Instant>, done: Instant) {
        match ok {
            Some(intended) => rec.record_step_ok(step, intended, done),
            None => rec.record_step_errors(step, 1, done),
        }
    }

    /// Waits for the request's slot when a rate is set; returns (intended start, send
    /// time), or `None` when the schedule is over or the slot falls after the deadline (the
    /// request is then never sent). In a closed loop the intended start is the send time;
    /// in an open loop it is the slot, however late the request starts.
    #[inline]
    async fn pace(&self) -> Option<(Instant, Instant)> {
        let now = Instant::now();
        let Some(pacer) = &self.pacer else { return Some((now, now)) };
        let (slot, open) = {
            let mut p = pacer.borrow_mut();
            (p.next(now, self.deadline.get())?, p.schedule() == Schedule::Open)
        };
        let (sent, timer) = if slot > now {
            tokio::time::sleep_until(slot.into()).await;
            let woke = Instant::now();
            (woke, Some(woke.saturating_duration_since(slot)))
        } else {
            (now, None)
        };
        let intended = if open { slot } else { sent };
        self.recorder.borrow_mut().record_start(slot, sent, timer);
        Some((intended, sent))
    }
}

async fn client_loop(shared: Rc<Shared>, client: Client) {
    let index = client.conn;
    let mut generation = shared.generation.get();
    let mut conns = Rc::clone(&shared.conns.borrow());
    let mut kv = conns[index].kv.clone();
    let mut state = ClientState::new(client.id);
    // The last client step this client sent in, to count it once per step.
    let mut sent_in = None;
    loop {
        let (i, step) = match shared.claim(client.id) {
            Claim::Request { index, step } => (index, step),
            Claim::Idle => {
                if let Some(steps) = &shared.steps {
                    steps.changed().await;
                }
                continue;
            }
            Claim::Over => break,
        };
        if let Some(k) = step.filter(|&k| sent_in != Some(k)) {
            sent_in = Some(k);
            shared.recorder.borrow_mut().record_step_client(k);
        }
        if shared.generation.get() != generation {
            // The target moved: continue on the new connections.
            generation = shared.generation.get();
            conns = Rc::clone(&shared.conns.borrow());
            kv = conns[index].kv.clone();
            state = ClientState::new(client.id);
        }
        let conn = &conns[index];
        let op = shared.ops.pick();
        let kind = shared.ops.kind(op, &state);
        if let Err(status) = shared.ops.prepare(op, conn, &mut state).await {
            // The request cannot be sent (its lease could not be granted): a failure of it.
            let issued = &shared.issued[kind.index()];
            issued.set(issued.get() + 1);
            let done = Instant::now();
            let mut rec = shared.recorder.borrow_mut();
            rec.record_error(kind, code(&status), done);
            rec.record_error_message(kind, code(&status), status.message());
            if let Some(r) = shared.ops.request(op, &state) {
                rec.record_request_error(r.slot, code(&status), kubernetes::compacted(&status));
            }
            if let Some(k) = step {
                shared.record_step(&mut rec, k, None, done);
                drop(rec);
                if let Some(steps) = &shared.steps {
                    steps.answered(k);
                }
            }
            continue;
        }
        let Some((intended, sent)) = shared.pace().await else { break };
        let issued = &shared.issued[kind.index()];
        issued.set(issued.get() + 1);
        let request = shared.ops.request(op, &state);
        let audit = shared.audit.as_ref().map(|log| Recording::new(log, sent));
        let out = Outstanding { shared: &shared, kind, intended };
        let result =
            shared.ops.execute(op, kind, i, &mut kv, conn, &mut state, audit.as_ref()).await;
        out.answered();
        let done = Instant::now();
        if let Some(audit) = &audit {
            audit.finish(&result, done);
        }
        let mut rec = shared.recorder.borrow_mut();
        let ok = match result {
            Ok(d) => {
                rec.record_ok(kind, intended, sent, done);
                if let Some(first) = d.first_message {
                    rec.record_ok(OpKind::RangeFirst, intended, sent, first);
                }
                rec.record_member(d.member, intended, done);
                rec.record_payload(kind, d.keys, d.value_bytes);
                if d.retries > 0 {
                    rec.record_retries(kind, d.retries);
                }
                if d.conflicts + d.pages > 0 {
                    rec.record_conflicts_and_pages(kind, d.conflicts, d.pages);
                }
                if let Some(r) = request {
                    rec.record_request_ok(r.slot, intended, done, d.pages, d.conflicts, d.retries);
                    if d.pages > 0 {
                        rec.record_page_calls(r.slot, d.pages, d.slow_pages, d.slowest_page_us);
                    }
                    if let Some(objects) = r.renewed_of {
                        rec.record_renewal(r.slot, d.object, objects, done);
                    }
                }
                Some(intended)
            }
            Err(status) => {
                rec.record_error(kind, code(&status), done);
                rec.record_error_message(kind, code(&status), status.message());
                if let Some(r) = request {
                    let compacted = kubernetes::compacted(&status);
                    rec.record_request_error(r.slot, code(&status), compacted);
                }
                None
            }
        };
        if let Some(k) = step {
            shared.record_step(&mut rec, k, ok, done);
            drop(rec);
            if let Some(steps) = &shared.steps {
                steps.answered(k);
            }
        }
    }
}

/// A request out and not yet answered. Dropped unanswered (its client's task aborted after
/// the grace at a stop or the run's end), it records itself as abandoned: a `Cancelled`
/// failure of its kind, with how long it had been out ([`Recorder::record_abandoned`]).
/// An apiserver request's (resource, verb) row leaves it out: whether it would have met its
/// SLO is unknown. A drop guard on the client's stack: nothing allocated, and nothing done
/// while the request is answered in time.
struct Outstanding<'a> {
    shared: &'a Shared,
    kind: OpKind,
    intended: Instant,
}

impl Outstanding<'_> {
    /// The request was answered: nothing to record here.
    #[inline]
    fn answered(self) {
        std::mem::forget(self);
    }
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        // Never held across the request's await; if it were, the worker counts the request
        // as abandoned without its time (issued minus recorded, at the job's end).
        let Ok(mut rec) = self.shared.recorder.try_borrow_mut() else { return };
        rec.record_abandoned(self.kind, self.intended, Instant::now());
        rec.record_error_message(self.kind, ErrorCode::Cancelled, ABANDONED);
    }
}

fn code(status: &tonic::Status) -> ErrorCode {
    ErrorCode::from_grpc(status.code() as i32)
}

/// Reopens this worker's connections to the new endpoints whenever the target moves, and
/// switches the clients to them. A connection that cannot be opened keeps the old one (its
/// requests fail and are counted) until the next move.
async fn follow_target(
    shared: Rc<Shared>,
    mut retarget: watch::Receiver<Vec<String>>,
    (index, workers): (usize, usize),
    count: usize,
    dialer: Dialer,
) {
    while retarget.changed().await.is_ok() {
        let endpoints = retarget.borrow_and_update().clone();
        if endpoints.is_empty() {
            continue;
        }
        let old = Rc::clone(&shared.conns.borrow());
        let mut fresh = Vec::with_capacity(count);
        for local in 0..count {
            let endpoint = &endpoints[(local * workers + index) % endpoints.len()];
            let opened = match Conn::open(&dialer, endpoint).await {
                Ok(conn) => Some(conn),
                Err(e) => {
                    tracing::warn!(%endpoint, error = %e, "cannot follow the target");
                    None
                }
            };
            fresh.push(opened.unwrap_or_else(|| old[local].clone()));
        }
        *shared.conns.borrow_mut() = fresh.into();
        shared.generation.set(shared.generation.get() + 1);
    }
}

/// Publishes a worker's progress, a few times a second: a few atomic stores, and the
/// samples of the intervals finished since the last time (one lock, uncontended but for the
/// reader's). Then an adaptive recorder may double its interval: only after publishing, so
/// that no published interval is merged into a longer one that is published again. With
/// `ended` (the last completion) it publishes the interval in progress too and says the
/// worker is done.
fn publish(shared: &Shared, progress: &WorkerProgress, ended: Option<Instant>) {
    let last = ended.is_some();
    let mut recorder = shared.recorder.borrow_mut();
    progress.requests.store(recorder.requests(), Ordering::Relaxed);
    progress.errors.store(recorder.errors(), Ordering::Relaxed);
    progress.p99_us.store(recorder.current_p99_us(), Ordering::Relaxed);
    if progress.keep_live {
        let kinds = recorder
            .records()
            .map(|(kind, r)| LiveKind {
                kind,
                sent: shared.issued[kind.index()].get(),
                ok: r.ok,
                errors: r.errors,
                latency: r.latency.clone(),
            })
            .collect();
        if let Ok(mut live) = progress.live.lock() {
            *live = kinds;
        }
    }
    // Nothing is recorded after the last publish: the interval in progress is over too.
    let now = Instant::now() + if last { recorder.interval() } else { Duration::ZERO };
    let index = recorder.close_intervals(now);
    let shift = recorder.shift();
    let from = shared.published.get();
    let fresh: Vec<_> = recorder
        .finished_intervals()
        .filter(|(_, s)| s.index << shift >= from)
        .map(|(kind, s)| (kind, shift, s.clone()))
        .collect();
    if !fresh.is_empty()
        && let Ok(mut samples) = progress.samples.lock()
    {
        samples.extend(fresh);
    }
    shared.published.set(index << shift);
    if let Some(ended) = ended {
        let since = ended.saturating_duration_since(recorder.start());
        progress
            .ended_ns
            .store(u64::try_from(since.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
    progress.passed.store(if last { u64::MAX } else { index << shift }, Ordering::Release);
    if !last {
        recorder.double_if_due(index);
    }
}

/// How often a worker publishes its progress. Publishing is one atomic store per worker per
/// tick, never per request.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The logical clients of a phase still running, and a wake-up when none is.
#[derive(Default)]
struct Running {
    left: Cell<usize>,
    none_left: tokio::sync::Notify,
}

impl Running {
    /// Counts the calling client as finished when the returned guard drops (it returns, or
    /// its task is aborted).
    fn finish_on_drop(self: &Rc<Self>) -> impl Drop {
        struct Finish(Rc<Running>);
        impl Drop for Finish {
            fn drop(&mut self) {
                let left = self.0.left.get() - 1;
                self.0.left.set(left);
                if left == 0 {
                    self.0.none_left.notify_one();
                }
            }
        }
        Finish(Rc::clone(self))
    }

    async fn all_done(&self) {
        while self.left.get() > 0 {
            self.none_left.notified().await;
        }
    }
}

/// Runs every logical client until the phase ends; on a stop or at the deadline, waits
/// [`STOP_GRACE`] for in-flight requests, then abandons them (counted as cancelled).
async fn phase(
    shared: &Rc<Shared>,
    clients: &[Client],
    stop: &mut watch::Receiver<bool>,
    progress: Option<&Arc<WorkerProgress>>,
) -> bool {
    // Client steps, once begun, end the phase: it lasts until the last is over.
    let steps = shared.steps.as_ref().filter(|s| s.begun());
    // Plain tasks and their handles rather than a JoinSet, whose bookkeeping per task is
    // as large as a small client's; `running` counts those not finished.
    let running = Rc::new(Running::default());
    let handles: Vec<tokio::task::JoinHandle<()>> = clients
        .iter()
        .map(|&c| {
            let (shared, running) = (Rc::clone(shared), Rc::clone(&running));
            running.left.set(running.left.get() + 1);
            tokio::task::spawn_local(async move {
                let _done = running.finish_on_drop();
                client_loop(shared, c).await;
            })
        })
        .collect();
    let publisher = progress.map(|progress| {
        let shared = Rc::clone(shared);
        let progress = Arc::clone(progress);
        tokio::task::spawn_local(async move {
            let mut tick = tokio::time::interval(PROGRESS_EVERY);
            loop {
                tick.tick().await;
                publish(&shared, &progress, None);
                shared.busy.borrow_mut().sample();
            }
        })
    });
    // A stop signal, or the phase's deadline (the end of the steps): a request that a
    // server holds past it (a stalled stream) must not hold the run; it gets the same grace
    // as at a stop.
    let stopped = async {
        let signal = async {
            let _ = stop.wait_for(|s| *s).await;
            shared.stop.set(true);
            // Idle clients look again, and see the stop.
            if let Some(steps) = &shared.steps {
                steps.finish();
            }
        };
        match (steps, shared.deadline.get()) {
            (Some(steps), _) => tokio::select! {
                () = signal => {}
                () = steps.over() => {}
            },
            (None, Some(deadline)) => tokio::select! {
                () = signal => {}
                () = tokio::time::sleep_until(deadline.into()) => {}
            },
            (None, None) => signal.await,
        }
        tokio::time::sleep(STOP_GRACE).await;
    };
    tokio::pin!(stopped);
    // Every client done; with steps, once the last step is over (a worker whose clients
    // send in no step still follows them, to meet the others at their ends).
    let finished = async {
        if let Some(steps) = steps {
            steps.over().await;
        }
        running.all_done().await;
    };
    tokio::select! {
        () = finished => {}
        () = &mut stopped => {
            for handle in &handles {
                handle.abort();
            }
            running.all_done().await;
        }
    }
    if let Some(publisher) = publisher {
        publisher.abort();
        let _ = publisher.await;
        if let Some(progress) = progress {
            publish(shared, progress, None);
        }
    }
    shared.stop.get()
}

pub(super) async fn run_job(conns: &Rc<[Conn]>, mut job: Job) -> JobResult {
    let pacer = Pacer::new(
        job.pacing.schedule,
        job.pacing.arrivals,
        job.pacing.rate.clone(),
        job.pacing.share,
        job.start_at,
        job.seed,
    );
    let pacer = pacer.is_paced().then(|| RefCell::new(pacer));
    let shared = Rc::new(Shared {
        ops: job.work.instantiate(job.seed),
        conns: RefCell::new(Rc::clone(conns)),
        generation: Cell::new(0),
        recorder: RefCell::new({
            let recorder = Recorder::new(&job.kinds, job.start_at, job.interval.length)
                .with_steps(job.steps.as_ref().map_or(0, |s| s.plan.len()));
            if job.interval.adaptive { recorder.adaptive() } else { recorder }
        }),
        next_index: Cell::new(0),
        end_index: Cell::new(u64::MAX),
        deadline: Cell::new(None),
        stop: Cell::new(*job.stop.borrow()),
        pacer,
        issued: Default::default(),
        audit: job
            .audit
            .map(|(capacity, parts)| AuditLog::new(capacity, parts, job.start_at + job.warmup)),
        busy: RefCell::new(BusyMeter::default()),
        published: Cell::new(0),
        steps: job.steps.take().map(StepState::new),
    });

    let retargeting = tokio::task::spawn_local(follow_target(
        Rc::clone(&shared),
        job.retarget.clone(),
        job.placement,
        conns.len(),
        job.dialer.clone(),
    ));

    tokio::time::sleep_until(job.start_at.into()).await;
    // Warm-up with the clients of the first client step, when there are steps.
    let warming: Vec<Client> = match &shared.steps {
        Some(steps) => job.clients.iter().copied().filter(|c| steps.first_has(c.id)).collect(),
        None => job.clients.clone(),
    };
    if !job.warmup.is_zero() && !warming.is_empty() {
        shared.deadline.set(Some(job.start_at + job.warmup));
        phase(&shared, &warming, &mut job.stop, None).await;
    }

    // The intended start, even when this thread woke later for it: the report, the fault
    // steps and every worker count from it.
    let measure_start = job.start_at + job.warmup;
    let cpu_at_start = thread_cpu();
    shared.busy.borrow_mut().start();
    shared.recorder.borrow_mut().reset(measure_start);
    for c in &shared.issued {
        c.set(0);
    }
    if let Some(audit) = &shared.audit {
        audit.clear();
    }
    let (start, count) = job.quota.unwrap_or((0, u64::MAX));
    shared.next_index.set(start);
    shared.end_index.set(start.saturating_add(count));
    shared.deadline.set(job.duration.map(|d| measure_start + d));
    if let Some(p) = &shared.pacer {
        p.borrow_mut().restart(measure_start);
    }
    // The steps begin at measurement's start, and a task of their own takes them from one
    // to the next; a worker without clients in them follows them all the same.
    let stepping = shared.steps.as_ref().map(|steps| {
        steps.start(measure_start, &shared.recorder);
        let shared = Rc::clone(&shared);
        tokio::task::spawn_local(async move {
            if let Some(steps) = &shared.steps {
                steps.run(&shared.recorder).await;
            }
        })
    });
    let interrupted = if stepping.is_none() && (job.clients.is_empty() || count == 0) {
        shared.stop.get()
    } else {
        phase(&shared, &job.clients, &mut job.stop, Some(&job.progress)).await
    };
    if let Some(stepping) = stepping {
        stepping.abort();
        let _ = stepping.await;
    }
    let last_done = Instant::now();
    let cpu = thread_cpu().zip(cpu_at_start).map(|(end, start)| end.saturating_sub(start));
    let busy = shared.busy.borrow_mut().finish();
    retargeting.abort();
    let _ = retargeting.await;
    // Unmeasured, after the worker's CPU time is read.
    let conn = shared.conns.borrow().first().cloned();
    let k8s = shared.ops.end(conn.as_ref()).await;

    {
        let mut recorder = shared.recorder.borrow_mut();
        if let Some(k8s) = k8s {
            recorder.record_checks(&k8s.violations);
            for (slot, watch) in &k8s.watches {
                recorder.record_watch(*slot, watch);
            }
        }
        recorder.close_renewals(last_done);
        // Requests abandoned at a hard stop record themselves (`Outstanding`); any issued
        // and never recorded otherwise are counted here, without their times.
        for k in OpKind::ALL {
            let abandoned = shared.issued[k.index()].get().saturating_sub(recorder.requests_of(k));
            recorder.record_errors(k, ErrorCode::Cancelled, abandoned, last_done);
            if abandoned > 0 {
                recorder.record_error_message(k, ErrorCode::Cancelled, ABANDONED);
            }
        }
        // In the steps that sent them too.
        if let Some(steps) = &shared.steps {
            for k in 0..steps.len() {
                let recorded = recorder.steps().get(k).map_or(0, |s| s.requests());
                let abandoned = steps.issued(k).saturating_sub(recorded);
                if abandoned > 0 {
                    recorder.record_step_errors(k, abandoned, last_done);
                }
            }
        }
    }
    publish(&shared, &job.progress, Some(last_done));
    let shared = match Rc::try_unwrap(shared) {
        Ok(s) => s,
        Err(_) => unreachable!("every client task has ended"),
    };
    let recorder = shared.recorder.into_inner();
    let audit = shared.audit.map(AuditLog::into_parts);
    JobResult { cpu, busy, recorder, last_done, interrupted, audit }
}
