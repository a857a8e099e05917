//! Worker threads: each a current-thread tokio runtime that owns a share of the connections,
//! the logical clients bound to them, and one [`Recorder`].
//!
//! Per request a logical client claims an index, waits for its slot if a rate is set,
//! sends, awaits, and records into its worker's recorder. Everything a client touches is
//! owned by its thread: `Cell`s and `RefCell`s never held across `.await`, no locks and no
//! channels of ours. What a put, range or delete costs beyond that: one buffer for its
//! framed message (freed once copied into the connection's outgoing bytes; a large put
//! value goes out from the shared buffer, uncopied), what decoding the answer needs (a
//! range's key-values), and a few atomics of its connection that only this thread touches
//! while nothing reconnects (the connection's generation, for redial; with auth, the
//! token's generation). The HTTP/2 connection's state is behind a lock its task shares
//! (`transport::http2`), taken a few times per request and never contended by other
//! threads.
//! Transactions, leases and STM go through larger, boxed futures and etcd-client.
//!
//! Workloads that are not a request loop (the watch family) run as tasks on the workers
//! ([`Worker::exec`]), with the same connections.

mod accounting;
mod job;

use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::future::Future;
use std::pin::Pin;

use etcdlat_core::audit::Entry;
use etcdlat_core::{Arrivals, OpKind, Rate, Recorder, Schedule, SeriesInterval};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use super::cpu::{parking, pin_to};
use super::progress::WorkerProgress;
use super::request::Work;
use super::step::StepJob;
use crate::error::DriverError;
pub use crate::error::WorkerError;
use crate::transport::{Conn, Dialer};
use job::run_job;

/// How long in-flight requests may take to finish after a stop before they are abandoned
/// and counted as `Cancelled`.
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(2);

/// The message of requests abandoned that way.
const ABANDONED: &str = "abandoned: no answer within the grace after the run ended or was stopped";

/// What one worker does in a run.
pub(crate) struct Job {
    pub work: Arc<Work>,
    /// The kinds the work reports (histograms allocated up front).
    pub kinds: Vec<OpKind>,
    /// Seed of this worker's random choices.
    pub seed: u64,
    /// The logical clients on this worker.
    pub clients: Vec<Client>,
    /// Request indices `[start, start + count)` this worker issues, if bounded by count.
    pub quota: Option<(u64, u64)>,
    /// The schedule and this worker's share of its rate.
    pub pacing: Pacing,
    pub start_at: Instant,
    pub warmup: Duration,
    pub duration: Option<Duration>,
    pub interval: SeriesInterval,
    pub stop: watch::Receiver<bool>,
    /// Where this worker publishes its request count, a few times a second.
    pub progress: Arc<WorkerProgress>,
    /// New endpoints for every connection when the target moves (the leader changed):
    /// connection `c` (this worker's local `l` is `c = l * workers + index`) goes to
    /// `endpoints[c % len]`.
    pub retarget: watch::Receiver<Vec<String>>,
    /// This worker's index and the number of workers, to place its connections.
    pub placement: (usize, usize),
    pub dialer: Dialer,
    /// With the audit on, the most entries this worker records, and the most one request
    /// makes.
    pub audit: Option<(usize, usize)>,
    /// This worker's part of the run's client steps, when it has them.
    pub steps: Option<StepJob>,
}

/// One logical client of a worker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    /// Its number in the run, from 0: which client steps it sends in.
    pub id: u32,
    /// Its connection, as an index into this worker's.
    pub conn: usize,
}

/// A run's schedule as one worker paces it.
#[derive(Debug, Clone)]
pub(crate) struct Pacing {
    pub schedule: Schedule,
    pub arrivals: Arrivals,
    pub rate: Rate,
    /// This worker's fraction of the rate.
    pub share: f64,
}

/// What a worker hands back once, at the end of a run.
pub(crate) struct JobResult {
    /// CPU time of this worker thread during the measured phase.
    pub cpu: Option<Duration>,
    /// The share of the time this thread was not parked: in its busiest [`BUSY_WINDOW`](super::cpu::BUSY_WINDOW) of
    /// the measured phase (the whole phase when shorter), and over the whole phase.
    pub busy: Option<(f64, f64)>,
    pub recorder: Recorder,
    pub last_done: Instant,
    pub interrupted: bool,
    /// The audit's entries and the requests not recorded, when audited.
    pub audit: Option<(Vec<Entry>, u64)>,
}

/// A task to run on a worker thread, given its connections.
type Task = Box<dyn FnOnce(Rc<[Conn]>) -> Pin<Box<dyn Future<Output = ()>>> + Send>;

enum Command {
    Run(Box<Job>, oneshot::Sender<JobResult>),
    Task(Task),
}

/// A worker thread and its connections.
pub(crate) struct Worker {
    index: usize,
    tx: Option<mpsc::UnboundedSender<Command>>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts a worker thread that dials `endpoints` (one connection each) and waits on them
    /// until all are open or one fails.
    pub(crate) async fn spawn(
        index: usize,
        endpoints: Vec<String>,
        dialer: Dialer,
        cpu: Option<usize>,
    ) -> Result<Self, DriverError> {
        let (tx, rx) = mpsc::unbounded_channel();
        let (ready_tx, ready_rx) = oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("etcdlat-worker-{index}"))
            .spawn(move || {
                if let Some(cpu) = cpu
                    && let Err(e) = pin_to(cpu)
                {
                    let _ = ready_tx.send(Err(DriverError::io(
                        format!("pinning worker {index} to CPU {cpu}"),
                        e,
                    )));
                    return;
                }
                // Sockets and timers only: without the process and signal drivers, a
                // worker does not look for exited children each time it parks.
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_io()
                    .enable_time()
                    .on_thread_park(parking::park)
                    .on_thread_unpark(parking::unpark)
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(DriverError::io("starting a worker runtime", e)));
                        return;
                    }
                };
                let local = tokio::task::LocalSet::new();
                local.block_on(&rt, serve(endpoints, dialer, rx, ready_tx));
            })
            .map_err(|e| DriverError::io("starting a worker thread", e))?;
        let mut worker = Self { index, tx: Some(tx), thread: Some(thread) };
        match ready_rx.await {
            Ok(Ok(())) => Ok(worker),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(DriverError::worker(index, worker.join_reason().await)),
        }
    }

    /// Hands a job to the worker; the outcome arrives on the returned receiver.
    pub(crate) fn run(&self, job: Job) -> Result<oneshot::Receiver<JobResult>, DriverError> {
        let (tx, rx) = oneshot::channel();
        self.tx
            .as_ref()
            .and_then(|t| t.send(Command::Run(Box::new(job), tx)).ok())
            .ok_or_else(|| DriverError::worker(self.index, WorkerError::Stopped))?;
        Ok(rx)
    }

    /// Runs `f` on the worker thread with its connections; its output arrives on the
    /// returned receiver. The future may hold `Rc`s and `RefCell`s: it never leaves the
    /// thread.
    pub(crate) fn exec<T, F, Fut>(&self, f: F) -> Result<oneshot::Receiver<T>, DriverError>
    where
        T: Send + 'static,
        F: FnOnce(Rc<[Conn]>) -> Fut + Send + 'static,
        Fut: Future<Output = T> + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let task: Task = Box::new(move |conns| {
            Box::pin(async move {
                let _ = tx.send(f(conns).await);
            })
        });
        self.tx
            .as_ref()
            .and_then(|t| t.send(Command::Task(task)).ok())
            .ok_or_else(|| DriverError::worker(self.index, WorkerError::Stopped))?;
        Ok(rx)
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    /// Why the thread ended, after it did; its join waited for off the runtime's threads.
    async fn join_reason(&mut self) -> WorkerError {
        self.tx = None;
        let Some(thread) = self.thread.take() else { return WorkerError::Stopped };
        let joined = tokio::task::spawn_blocking(move || match thread.join() {
            Err(panic) => WorkerError::Panicked {
                message: panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panicked".to_owned()),
            },
            Ok(()) => WorkerError::Stopped,
        });
        joined.await.unwrap_or(WorkerError::Stopped)
    }

    /// Ends the threads of `workers` and returns once they have ended (their connections
    /// closed). All are told at once; the joins, which block, run off the runtime's threads,
    /// so that an async caller's runtime goes on serving its other tasks meanwhile.
    pub(crate) async fn stop_all(workers: Vec<Worker>) {
        let threads: Vec<JoinHandle<()>> = workers
            .into_iter()
            .filter_map(|mut w| {
                w.tx = None;
                w.thread.take()
            })
            .collect();
        if threads.is_empty() {
            return;
        }
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
    }
}

/// A worker dropped without [`Worker::stop_all`] (its driver dropped) ends its thread and
/// waits for it. Async paths of the driver stop their workers with [`Worker::stop_all`]
/// instead, and never block their runtime on a join.
impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the command channel ends the worker's loop; its runtime then closes the
        // connections.
        self.tx = None;
        let Some(thread) = self.thread.take() else { return };
        // A driver is most often dropped on a runtime's thread (at the end of an async test,
        // or of the binary's run), where the join, which waits for the worker's runtime to
        // close its connections, would hold that thread and every task it serves: there it
        // runs on the runtime's blocking threads, which the runtime waits for when it shuts
        // down. (A runtime already shutting down does not start it; the thread still ends,
        // its channel closed, unwaited for.) Off any runtime, the join is here.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn_blocking(move || {
                    let _ = thread.join();
                });
            }
            Err(_) => {
                let _ = thread.join();
            }
        }
    }
}

async fn serve(
    endpoints: Vec<String>,
    dialer: Dialer,
    mut rx: mpsc::UnboundedReceiver<Command>,
    ready: oneshot::Sender<Result<(), DriverError>>,
) {
    let mut dials = JoinSet::new();
    for (i, ep) in endpoints.into_iter().enumerate() {
        let dialer = dialer.clone();
        dials.spawn_local(async move { (i, Conn::open(&dialer, &ep).await) });
    }
    let mut opened: Vec<Option<Conn>> = vec![None; dials.len()];
    while let Some(joined) = dials.join_next().await {
        match joined {
            Ok((i, Ok(conn))) => opened[i] = Some(conn),
            Ok((_, Err(e))) => {
                let _ = ready.send(Err(e));
                return;
            }
            Err(e) => {
                let _ = ready.send(Err(DriverError::worker(0, WorkerError::Task(e))));
                return;
            }
        }
    }
    let conns: Vec<Conn> = opened.into_iter().flatten().collect();
    let conns: Rc<[Conn]> = conns.into();
    if ready.send(Ok(())).is_err() {
        return;
    }
    while let Some(command) = rx.recv().await {
        match command {
            Command::Run(job, done) => {
                let outcome = run_job(&conns, *job).await;
                let _ = done.send(outcome);
            }
            Command::Task(task) => {
                tokio::task::spawn_local(task(Rc::clone(&conns)));
            }
        }
    }
}
