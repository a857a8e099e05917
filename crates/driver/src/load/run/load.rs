//! The load itself: the connections (re)opened, the sampler, compaction, the leader watch,
//! the fault steps and the lease expiry's observer started from one start instant, and the
//! workers' request loops (or the watch run) until the scenario's end or the shutdown.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use etcdlat_core::workload::kubernetes::EventOp;
use etcdlat_core::{LeaderChange, TargetInfo, Targeting};
use tokio::sync::{MutexGuard, oneshot, watch};
use tokio::task::JoinHandle;

use super::{Run, Start, Steer, jobs};
use crate::cluster::discovery;
use crate::cluster::fault::{self, Applied};
use crate::cluster::local::MemberControl;
use crate::cluster::metrics::{self, Sampler, Usage};
use crate::cluster::network::LinkState;
use crate::cluster::target;
use crate::error::DriverError;
use crate::load::driver::Pool;
use crate::load::report::Measured;
use crate::load::request::Work;
use crate::load::worker::{Job, JobResult, Worker, WorkerError};
use crate::load::{compaction, kubernetes};
use crate::transport::control_client_any;

impl Run<'_> {
    /// Puts the cluster under the scenario's load, with what runs beside it, until the
    /// scenario's end or `shutdown`. Fails only when the connections cannot be opened; what
    /// fails later is in [`Loaded::ended`], returned once the fault steps are undone.
    pub(super) async fn load(
        &self,
        mut pool: MutexGuard<'_, Pool>,
        shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> Result<Loaded, DriverError> {
        let (driver, scenario) = (self.driver, self.scenario);
        let mut target = self.connect(&mut pool).await?;
        let conns = pool.conns;
        // Prepared before the sampler and the start: a large value takes milliseconds to
        // make, and the apiserver's watch caches list every object of their resources.
        let streams = &driver.range_stream;
        let work =
            (!scenario.is_stream()).then(|| Arc::new(Work::prepare(scenario, self.seed, streams)));
        if let Some(work) = work.as_ref().filter(|w| w.has_caches()) {
            jobs::fill_caches(&pool, work).await;
        }
        let network_before = driver.config.control.as_ref().map(MemberControl::network_snapshot);
        // Every member's /metrics and resources, and our own, from just before the load to
        // its end.
        // The emulated network's threads carry every proxied byte: their CPU is the
        // network's (the report's `target.network.emulator`), not the client's.
        let network_threads =
            driver.config.control.as_ref().map(MemberControl::network_threads).unwrap_or_default();
        let sampled = metrics::targets(&self.cluster.members, driver.config.control.as_ref());
        target.go_version = metrics::go_version(&sampled, &driver.dialer).await;
        let mut sampler = Sampler::start(
            sampled,
            Arc::clone(driver.dialer.load_traffic()),
            network_threads.clone(),
            metrics::SAMPLE_PERIOD,
            &driver.dialer,
        )
        .await;
        let control = driver.config.control.as_ref();
        let members = &self.cluster.members;
        let machine =
            crate::machine::of_run(&driver.config.cpus, &network_threads, control, members).await;
        target.machine = Some(machine);
        let usage = Usage::start(network_threads).await;

        let (stop, stop_rx) = watch::channel(false);
        // Without a warm-up, measurement's first samples are taken before the load starts;
        // with one, at its end, while the warm-up's load goes on.
        let warmup = scenario.load.warmup;
        if warmup.is_zero() {
            sampler.measure_now().await;
        }
        let start = Start::soon(warmup);
        if !warmup.is_zero() {
            sampler.measure_from(start.measure_from);
        }
        let compactor = scenario.compaction.as_ref().map(|c| {
            tokio::spawn(compaction::run(
                driver.config.endpoints.clone(),
                driver.dialer.clone(),
                c.clone(),
                start.measure_from,
                scenario.load.duration.map(|d| start.measure_from + d),
                scenario.series_interval().length,
                self.steady.as_ref().and_then(|s| s.compactor_from),
                stop_rx.clone(),
            ))
        });
        // A modelled cluster's events are deleted by their leases' expiry alone.
        let expiry = match &self.steady {
            Some(_) => {
                let mut client =
                    control_client_any(&driver.dialer, &driver.config.endpoints).await?;
                let from = client
                    .get("\0", None)
                    .await
                    .map_or(0, |r| r.header().map_or(0, etcd_client::ResponseHeader::revision) + 1);
                Some(tokio::spawn(kubernetes::observe_expiry(
                    client,
                    EventOp::default().prefix(),
                    from,
                    start.measure_from,
                    stop_rx.clone(),
                )))
            }
            None => None,
        };
        let (retarget_tx, retarget_rx) = watch::channel(pool.endpoints.clone());
        // The load follows the leader, or, with the endpoints as given, the member list
        // when asked to sync with it; never both, which would move it back and forth.
        let (follow_leader, sync) = match (&self.targeting, driver.config.auto_sync) {
            (Targeting::Leader, _) => (Some(retarget_tx), None),
            (Targeting::Endpoints, Some(every)) => (None, Some((every, retarget_tx))),
            _ => (None, None),
        };
        // It ends when the run stops; nothing waits for it.
        if let Some((every, retarget)) = sync {
            tokio::spawn(discovery::auto_sync(
                driver.config.endpoints.clone(),
                driver.dialer.clone(),
                every,
                pool.endpoints.clone(),
                retarget,
                stop_rx.clone(),
            ));
        }
        let leader_watch = tokio::spawn(discovery::watch_leader(
            driver.config.endpoints.clone(),
            driver.dialer.clone(),
            self.cluster.leader().cloned(),
            start.measure_from,
            follow_leader,
            stop_rx.clone(),
        ));
        let faults = self.faults.clone().map(|target| {
            fault::spawn(target, scenario.faults.clone(), start.measure_from, stop_rx.clone())
        });
        let ended = match work {
            None => {
                let watches =
                    crate::watch::run(&pool.workers, scenario, self.seed, stop_rx.clone());
                until_shutdown(watches, shutdown, &stop).await.map(|m| Ended::Watch(Box::new(m)))
            }
            Some(work) => {
                let steer = Steer { stop: &stop_rx, retarget: &retarget_rx };
                let jobs = self.jobs(&pool, &work, start, steer);
                self.requests(&pool, jobs, shutdown, &stop)
                    .await
                    .map(|outcomes| Ended::Requests { outcomes, work })
            }
        };
        sampler.load_ended();
        let workers = pool.workers.len();
        // Free for the next run while this one collects.
        drop(pool);
        let _ = stop.send(true);
        Ok(Loaded {
            ended,
            start,
            target,
            conns,
            workers,
            faults,
            leader_watch,
            compactor,
            expiry,
            sampler,
            usage,
            network_before,
        })
    }

    /// Reopens the connections when the run asks for another number of them or other
    /// members; returns what the report says the run ran against (the driver's
    /// [`Driver::target`] from now on): the cluster as it answered, with the connections'
    /// endpoints and source addresses, and how they were chosen.
    async fn connect(&self, pool: &mut Pool) -> Result<TargetInfo, DriverError> {
        let driver = self.driver;
        let conns = self.scenario.load.conns.unwrap_or(pool.conns);
        if conns != pool.conns || self.endpoints != pool.endpoints {
            // Close the old connections first so the server never sees both sets.
            Worker::stop_all(std::mem::take(&mut pool.workers)).await;
            driver.dialer.forget_sources();
            *pool =
                Pool::open(&driver.config, &driver.dialer, conns, self.endpoints.clone()).await?;
        }
        let mut target = self.cluster.target.clone();
        target.local = driver.config.local;
        target.endpoints.clone_from(&pool.endpoints);
        if self.targeting != Targeting::Endpoints {
            target.targeting = self.targeting.clone();
            target.targeted = target::names(&pool.endpoints, &self.cluster.members);
        }
        target.source_addresses = driver.dialer.source_addresses();
        if let Ok(mut t) = driver.target.lock() {
            *t = target.clone();
        }
        Ok(target)
    }

    /// Hands every worker its job and waits for what each hands back.
    async fn requests(
        &self,
        pool: &Pool,
        jobs: Vec<Job>,
        shutdown: Pin<&mut impl Future<Output = ()>>,
        stop: &watch::Sender<bool>,
    ) -> Result<Vec<JobResult>, DriverError> {
        let mut receivers = Vec::with_capacity(jobs.len());
        for (worker, job) in pool.workers.iter().zip(jobs) {
            receivers.push((worker.index(), worker.run(job)?));
        }
        let outcomes = async {
            let mut outcomes = Vec::with_capacity(receivers.len());
            for (index, rx) in receivers {
                outcomes
                    .push(rx.await.map_err(|_| DriverError::worker(index, WorkerError::Stopped))?);
            }
            Ok(outcomes)
        };
        until_shutdown(outcomes, shutdown, stop).await
    }
}

/// The load, ended, and what ran beside it, still to be stopped and read.
pub(super) struct Loaded {
    /// What the load handed back, or why it could not run to its end.
    pub(super) ended: Result<Ended, DriverError>,
    pub(super) start: Start,
    pub(super) target: TargetInfo,
    pub(super) conns: u32,
    pub(super) workers: usize,
    pub(super) faults: Option<oneshot::Receiver<Vec<Applied>>>,
    pub(super) leader_watch: JoinHandle<Vec<LeaderChange>>,
    pub(super) compactor: Option<JoinHandle<compaction::Compacted>>,
    /// What the leases' expiry deleted, observed in a modelled cluster's runs.
    pub(super) expiry: Option<JoinHandle<kubernetes::Expiry>>,
    pub(super) sampler: Sampler,
    pub(super) usage: Usage,
    /// The emulated network's links before the load, to count what it moved.
    pub(super) network_before: Option<Vec<LinkState>>,
}

/// What the load handed back.
pub(super) enum Ended {
    /// Each worker's result, with the work they shared.
    Requests { outcomes: Vec<JobResult>, work: Arc<Work> },
    /// The watch run's, merged (boxed: it is larger than the workers' results).
    Watch(Box<Measured>),
}

/// Awaits `work`; when `shutdown` completes first, tells the run to stop and awaits `work`
/// still, which then ends within the stop grace.
async fn until_shutdown<T>(
    work: impl Future<Output = T>,
    mut shutdown: Pin<&mut impl Future<Output = ()>>,
    stop: &watch::Sender<bool>,
) -> T {
    let mut work = std::pin::pin!(work);
    let mut stopping = false;
    loop {
        tokio::select! {
            done = &mut work => return done,
            () = &mut shutdown, if !stopping => {
                stopping = true;
                let _ = stop.send(true);
            }
        }
    }
}
