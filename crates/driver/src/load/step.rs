//! Client steps on the worker threads ([`etcdlat_core::step`]): each worker follows the
//! run's steps on its own, from the run's one start instant, and its logical clients look
//! at the step in progress, a few `Cell`s of their own thread, when they claim a request.
//!
//! Nothing is shared per request. The workers meet only where a counted step ends: each
//! arrives at the [`Gate`] once its own part is answered, and the next step starts, on
//! every worker, at the moment the last one arrived. A timed step needs no meeting: its end
//! is its start plus its duration, the same on every worker.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use etcdlat_core::{Recorder, StepPlan};
use tokio::sync::Notify;

/// Where the workers meet at the end of each counted step.
pub(crate) struct Gate {
    workers: usize,
    /// Per step, the workers that have had their part of it answered.
    arrived: Vec<AtomicUsize>,
    /// Per step, when the last worker arrived: when the next step starts.
    opened: Vec<OnceLock<Instant>>,
    /// Wakes the workers waiting at any step's gate.
    open: Notify,
}

impl Gate {
    /// A gate for `workers` workers at each of `steps` steps.
    pub(crate) fn new(workers: usize, steps: usize) -> Arc<Self> {
        Arc::new(Self {
            workers,
            arrived: (0..steps).map(|_| AtomicUsize::new(0)).collect(),
            opened: (0..steps).map(|_| OnceLock::new()).collect(),
            open: Notify::new(),
        })
    }

    /// Arrives at the end of step `k` and waits for every other worker to; returns when
    /// the last of them arrived, the same instant for all.
    async fn pass(&self, k: usize) -> Instant {
        if self.arrived[k].fetch_add(1, Ordering::AcqRel) + 1 == self.workers {
            let _ = self.opened[k].set(Instant::now());
            self.open.notify_waiters();
        }
        loop {
            // Made before looking, so that an opening after the look still wakes it.
            let opened = self.open.notified();
            if let Some(at) = self.opened[k].get() {
                return *at;
            }
            opened.await;
        }
    }
}

/// One worker's part of a run's steps.
pub(crate) struct StepJob {
    pub plan: StepPlan,
    /// This worker's request indices of each step, `(start, count)`: its part of a counted
    /// step's, in proportion to the clients it has sending in it; unused for a timed step.
    pub parts: Vec<(u64, u64)>,
    pub gate: Arc<Gate>,
}

/// What a logical client may do, asked at each request.
pub(super) enum Claim {
    /// Send request `index`, of client step `step` when the run has steps (`None` before
    /// they begin: in warm-up).
    Request { index: u64, step: Option<usize> },
    /// Not now: the client does not send in this step, or the step has no more requests for
    /// this worker. Wait for the next ([`StepState::changed`]).
    Idle,
    /// The run is over for this client.
    Over,
}

/// The steps as one worker follows them; only its own thread touches it.
pub(super) struct StepState {
    job: StepJob,
    /// The step in progress: `None` before the first, `plan.len()` once over.
    current: Cell<Option<usize>>,
    /// When the step in progress started.
    started: Cell<Instant>,
    /// The next request index of this worker in the step, and where its part ends.
    next: Cell<u64>,
    end: Cell<u64>,
    /// When a timed step in progress ends.
    deadline: Cell<Option<Instant>>,
    /// Per step, requests claimed and not yet recorded.
    in_flight: Vec<Cell<u64>>,
    /// Per step, requests claimed: those never recorded were abandoned at a stop.
    issued: Vec<Cell<u64>>,
    /// Wakes idle clients when the step changes or the steps are over.
    change: Notify,
    /// Wakes [`StepState::run`] when the last request of this worker's part of a counted
    /// step is answered.
    drained: Notify,
}

impl StepState {
    pub(super) fn new(job: StepJob) -> Self {
        let steps = job.plan.len();
        Self {
            job,
            current: Cell::new(None),
            started: Cell::new(Instant::now()),
            next: Cell::new(0),
            end: Cell::new(0),
            deadline: Cell::new(None),
            in_flight: (0..steps).map(|_| Cell::new(0)).collect(),
            issued: (0..steps).map(|_| Cell::new(0)).collect(),
            change: Notify::new(),
            drained: Notify::new(),
        }
    }

    /// The number of steps.
    pub(super) fn len(&self) -> usize {
        self.job.plan.len()
    }

    /// Whether the first step has begun (warm-up is over).
    pub(super) fn begun(&self) -> bool {
        self.current.get().is_some()
    }

    /// Whether client `id` sends in the first step (and so in warm-up).
    pub(super) fn first_has(&self, id: u32) -> bool {
        self.job.plan.steps().first().is_some_and(|s| s.has(id))
    }

    /// Requests of step `k` this worker's clients claimed.
    pub(super) fn issued(&self, k: usize) -> u64 {
        self.issued[k].get()
    }

    /// Begins step `k` at `at`: this worker's part of its indices, its end, its start in
    /// the recorder; and wakes the idle clients to look again.
    fn begin(&self, k: usize, at: Instant, recorder: &RefCell<Recorder>) {
        let plan = &self.job.plan;
        match plan.indices(k) {
            (_, Some(_)) => {
                let (start, count) = self.job.parts[k];
                self.next.set(start);
                self.end.set(start + count);
            }
            // Every worker counts on from where the counted steps before ended.
            (first, None) => {
                self.next.set(self.next.get().max(first));
                self.end.set(u64::MAX);
            }
        }
        self.deadline.set(plan.end(k, at));
        self.started.set(at);
        recorder.borrow_mut().start_step(k, at);
        self.current.set(Some(k));
        self.change.notify_waiters();
    }

    /// Begins the first step at `at` (measurement's start).
    pub(super) fn start(&self, at: Instant, recorder: &RefCell<Recorder>) {
        self.begin(0, at, recorder);
    }

    /// Follows the steps from the first, begun, to the end of the last: waits for each
    /// step's end (its deadline; or its part answered and every worker at the gate), then
    /// begins the next.
    pub(super) async fn run(&self, recorder: &RefCell<Recorder>) {
        let last = self.len() - 1;
        while let Some(k) = self.current.get().filter(|&k| k <= last) {
            let next_start = match self.deadline.get() {
                Some(end) => {
                    tokio::time::sleep_until(end.into()).await;
                    end
                }
                None => {
                    while !self.answered_all(k) {
                        self.drained.notified().await;
                    }
                    if k == last {
                        break;
                    }
                    self.job.gate.pass(k).await
                }
            };
            if k == last {
                break;
            }
            self.begin(k + 1, next_start, recorder);
        }
        self.finish();
    }

    /// Ends the steps: every client's next claim is [`Claim::Over`]. At the end of the last
    /// step, or at a stop.
    pub(super) fn finish(&self) {
        self.current.set(Some(self.len()));
        self.change.notify_waiters();
    }

    /// Whether this worker's part of counted step `k` is claimed and answered.
    fn answered_all(&self, k: usize) -> bool {
        self.next.get() >= self.end.get() && self.in_flight[k].get() == 0
    }

    /// What client `id` may do now.
    #[inline]
    pub(super) fn claim(&self, id: u32) -> Claim {
        let Some(k) = self.current.get() else { return Claim::Idle };
        let Some(step) = self.job.plan.steps().get(k) else { return Claim::Over };
        if !step.has(id) {
            return Claim::Idle;
        }
        let i = self.next.get();
        if i >= self.end.get() || self.deadline.get().is_some_and(|d| Instant::now() >= d) {
            return Claim::Idle;
        }
        self.next.set(i + 1);
        let issued = &self.issued[k];
        issued.set(issued.get() + 1);
        let in_flight = &self.in_flight[k];
        in_flight.set(in_flight.get() + 1);
        Claim::Request { index: i, step: Some(k) }
    }

    /// A request of step `k` was recorded.
    #[inline]
    pub(super) fn answered(&self, k: usize) {
        let in_flight = &self.in_flight[k];
        in_flight.set(in_flight.get() - 1);
        if self.current.get() == Some(k) && self.answered_all(k) {
            self.drained.notify_one();
        }
    }

    /// Waits until the step changes (or the steps are over).
    pub(super) async fn changed(&self) {
        self.change.notified().await;
    }

    /// Waits until the steps are over.
    pub(super) async fn over(&self) {
        loop {
            let changed = self.change.notified();
            if self.current.get().is_some_and(|k| k >= self.len()) {
                return;
            }
            changed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_gate_opens_for_all_when_the_last_arrives() {
        let gate = Gate::new(3, 2);
        let early: Vec<_> = (0..2)
            .map(|_| {
                let gate = Arc::clone(&gate);
                tokio::spawn(async move { gate.pass(0).await })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        assert!(early.iter().all(|t| !t.is_finished()), "two of three arrived: still shut");
        let before = Instant::now();
        let last = gate.pass(0).await;
        assert!(last >= before, "opened when the last arrived");
        for t in early {
            assert_eq!(t.await.unwrap(), last, "the same instant for every worker");
        }
        assert!(gate.opened[1].get().is_none(), "each step has its own gate");
    }
}
