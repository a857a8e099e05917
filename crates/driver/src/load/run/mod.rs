//! One run of a scenario, each step in its own place, in the order the steps happen:
//!
//! 1. [`Run::prepare`]: asks the cluster once for its version, members and leader, and from
//!    that one answer chooses the members the load goes to and checks where the fault steps
//!    act; then, for a scenario with a `[setup]` or a `[kubernetes]` model (its nodes, node
//!    leases and pods, one create each), [`Run::fill`] runs the fills on the same
//!    answer, and the cluster is asked again for the load.
//! 2. [`Run::load`]: reopens the connections if the run asks for others, then starts the
//!    workers' request loops (or the watch run), the fault steps, background compaction and
//!    the leader watch from one start instant ([`Start`]), with the members' `/metrics` and
//!    the client's CPU sampled around them; until the scenario's end or the shutdown.
//! 3. [`Run::collect`]: stops what ran beside the load, in order (fault steps undone first),
//!    merges the workers' recorders, and checks the cluster after the run (the audit's read
//!    back, HashKV, alarms).
//! 4. [`Run::report`]: the [`Report`].
//!
//! [`Driver::run_until`] strings them together, its setup fill first when the scenario has
//! one.

mod jobs;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use etcdlat_core::audit::AuditReport;
use etcdlat_core::recorder::{MemberRecord, OpRecord, Pacing as RecordedPacing, Recorder};
use etcdlat_core::report::kubernetes::{KubernetesReport, SteadyStateReport};
use etcdlat_core::workload::kubernetes::{EventOp, ObjectOp};
use etcdlat_core::{
    AlarmReport, ClientUsage, CompactionStyle, HashKvCheck, LeaderChange, MemberMetrics,
    NetworkReport, OpKind, OpReport, Operation, Report, Scenario, Setup, StepReport, TargetInfo,
    Targeting,
};
use tokio::sync::{MutexGuard, oneshot, watch};
use tokio::task::JoinHandle;

use super::driver::{Driver, Pool};
use super::report::{Measured, member_reports, op_seed, pacing_report, params};
use super::request::Work;
use super::worker::{Job, JobResult, Worker};
use super::{compaction, kubernetes};
use crate::cluster::alarm;
use crate::cluster::discovery::{self, Discovery};
use crate::cluster::fault::{self, Applied};
use crate::cluster::hashkv::hashkv;
use crate::cluster::local::MemberControl;
use crate::cluster::metrics::{self, Sampler, Usage};
use crate::cluster::network::LinkState;
use crate::cluster::target;
use crate::cluster::toxiproxy::Proxies;
use crate::error::{AnswerError, DriverError};
use crate::load::worker::WorkerError;
use crate::transport::control_client_any;
use jobs::merge;

// The driver's run methods live here, beside the run they start, so that driver.rs, which
// this file builds on (the pool, the dialer), does not import it back.
impl Driver {
    /// Runs `scenario` to completion.
    ///
    /// # Errors
    /// Only when the run as a whole cannot happen: an invalid scenario, or connections that
    /// cannot be (re)opened. Failed requests are counted in the report.
    pub async fn run(&self, scenario: &Scenario) -> Result<Report, DriverError> {
        self.run_until(scenario, std::future::pending()).await
    }

    /// Runs `scenario` until it completes or `shutdown` completes, whichever is first. On
    /// shutdown, in-flight requests get a short grace to finish (the rest are counted as
    /// `Cancelled`) and the report, marked interrupted, holds everything measured.
    ///
    /// # Errors
    /// As [`Driver::run`].
    pub async fn run_until(
        &self,
        scenario: &Scenario,
        shutdown: impl Future<Output = ()>,
    ) -> Result<Report, DriverError> {
        scenario.validate()?;
        let mut shutdown = std::pin::pin!(shutdown);
        // Taken before the cluster is asked, so that a run that waited for another's sees the
        // cluster as it is when its turn comes.
        let pool = self.pool.lock().await;
        let mut run = Run::prepare(self, scenario).await?;
        let mut pool = match &scenario.setup {
            Some(setup) => run.fill(&setup_fill(setup), pool, shutdown.as_mut()).await?,
            None => pool,
        };
        let preload = scenario.kubernetes.as_ref().map(|k| k.preload()).unwrap_or_default();
        for objects in preload {
            pool = run.fill(&preload_fill(objects), pool, shutdown.as_mut()).await?;
        }
        let steady = match &scenario.kubernetes {
            Some(k) => {
                let mut steady = Steady::default();
                for (op, total) in k.history() {
                    pool = run.fill(&history_fill(op, total), pool, shutdown.as_mut()).await?;
                    steady.report.history_writes += total;
                }
                let mut client = control_client_any(&self.dialer, &self.config.endpoints).await?;
                if let Some(events) = k.event_preload() {
                    let seed = run.seed;
                    steady.report.preloaded_event_leases =
                        kubernetes::preload_events(&client, &events, seed).await?;
                    steady.report.preloaded_events = events.events();
                }
                if scenario
                    .compaction
                    .as_ref()
                    .is_some_and(|c| c.style == CompactionStyle::Apiserver)
                {
                    let claimed = compaction::claim_before(&mut client).await;
                    steady.compactor_from =
                        Some(claimed.map_err(|e| DriverError::NotAnswering {
                            endpoint: self.config.endpoints.join(","),
                            source: AnswerError::Client(e),
                        })?);
                }
                Some(steady)
            }
            None => None,
        };
        run.steady = steady;
        run.measure(pool, shutdown).await
    }
}

/// A modelled cluster's store brought to steady state before the run: what was written,
/// and the apiserver compactor's claim to resume from.
#[derive(Debug, Clone, Default)]
struct Steady {
    /// The preload's counts; the run's compactions and expiries are added to it.
    report: SteadyStateReport,
    /// The (version, revision seen) of the claim made before the run.
    compactor_from: Option<(i64, i64)>,
}

/// Logical clients of a Kubernetes preload, as many as a setup's by default.
const PRELOAD_CLIENTS: u32 = 16;

/// The setup's puts as a run.
fn setup_fill(setup: &Setup) -> Scenario {
    let mut fill = Scenario::new(Operation::Put(setup.put.clone()));
    fill.load.clients = setup.clients;
    fill.load.total = Some(setup.total);
    fill
}

/// A Kubernetes model's history of one flow as a run: `total` of its requests.
fn history_fill(op: Operation, total: u64) -> Scenario {
    let mut fill = Scenario::new(op);
    fill.load.clients = PRELOAD_CLIENTS;
    fill.load.total = Some(total);
    fill
}

/// A Kubernetes model's objects of one resource as a run: one create of each (a create
/// takes object `i % objects` of request `i`).
fn preload_fill(objects: ObjectOp) -> Scenario {
    let total = objects.objects;
    let mut fill = Scenario::new(Operation::K8sCreate(objects));
    fill.load.clients = PRELOAD_CLIENTS;
    fill.load.total = Some(total);
    fill
}

/// One run of one scenario on a driver, prepared: what it runs against and where its load
/// and fault steps go, all from one discovery.
pub(super) struct Run<'a> {
    driver: &'a Driver,
    scenario: &'a Scenario,
    /// The cluster as it answered: the report's target, to be completed, and its members.
    cluster: Discovery,
    /// The scenario's targeting, else the driver's.
    targeting: Targeting,
    /// Where the load goes: connection `c` to `endpoints[c % len]`.
    endpoints: Vec<String>,
    /// Where the fault steps act, checked; `None` when the scenario has none.
    faults: Option<fault::Target>,
    /// The seed of the run's random choices.
    seed: u64,
    /// Whether the workers publish their finished intervals to the driver's progress as
    /// they go (not the setup fill's).
    stream: bool,
    /// A modelled cluster's steady state, once preloaded (not the fills').
    steady: Option<Steady>,
}

impl<'a> Run<'a> {
    /// Asks the cluster once for its version, members and leader, and from that answer
    /// chooses where the load goes and checks that the fault steps can be carried out,
    /// before anything is sent. Asked afresh for every run: the leader may have moved since
    /// the last one.
    async fn prepare(driver: &'a Driver, scenario: &'a Scenario) -> Result<Self, DriverError> {
        let cluster = discovery::discover(&driver.config.endpoints, &driver.dialer).await?;
        let streams = scenario
            .workload()
            .iter()
            .any(|(_, op)| matches!(op, etcdlat_core::Operation::Range(r) if r.stream));
        let version = &cluster.target.etcd_version;
        if streams && before(version, (3, 7)) {
            return Err(DriverError::ServerTooOld {
                what: "a streamed range (RangeStream)".to_owned(),
                needs: "3.7".to_owned(),
                version: version.clone(),
            });
        }
        let faults = if scenario.faults.is_empty() {
            None
        } else {
            let target = fault_target(driver, scenario)?;
            fault::check(&scenario.faults, &target, &cluster.members).await?;
            Some(target)
        };
        Self::on(driver, scenario, cluster, faults, true)
    }

    /// The run of `scenario` against `cluster` as discovered: the members its targeting
    /// selects.
    fn on(
        driver: &'a Driver,
        scenario: &'a Scenario,
        cluster: Discovery,
        faults: Option<fault::Target>,
        stream: bool,
    ) -> Result<Self, DriverError> {
        let config = &driver.config;
        let targeting = match &scenario.target {
            Targeting::Endpoints => config.targeting.clone(),
            own => own.clone(),
        };
        let endpoints = target::select(&targeting, &config.endpoints, &cluster.members)?;
        Ok(Self {
            driver,
            scenario,
            cluster,
            targeting,
            endpoints,
            faults,
            seed: op_seed(scenario),
            stream,
            steady: None,
        })
    }

    /// A fill before the load (the setup's puts, a Kubernetes model's objects), as a run of
    /// its own on this run's discovery; an error unless every one of its requests
    /// succeeded. Takes the connections and hands them back for the load.
    async fn fill(
        &mut self,
        fill: &Scenario,
        pool: MutexGuard<'a, Pool>,
        shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> Result<MutexGuard<'a, Pool>, DriverError> {
        let driver = self.driver;
        let mut fill = fill.clone();
        fill.load.conns = self.scenario.load.conns;
        let total = fill.load.total.unwrap_or_default();
        // The fill is not the run: its intervals are not streamed.
        let run = Run::on(driver, &fill, self.cluster.clone(), None, false)?;
        let report = run.measure(pool, shutdown).await?;
        if report.interrupted {
            return Err(DriverError::Interrupted);
        }
        if report.errors_total() > 0 {
            return Err(DriverError::Setup { failed: report.errors_total(), total });
        }
        let pool = driver.pool.lock().await;
        // Asked again on purpose: the fill took its time, and the leader may have moved
        // since; the load goes where the members are now. (The fault steps were checked
        // before the fill, so that a scenario that cannot run writes nothing.)
        let cluster = discovery::discover(&driver.config.endpoints, &driver.dialer).await?;
        *self = Run::on(driver, self.scenario, cluster, self.faults.take(), true)?;
        Ok(pool)
    }

    /// Loads, collects and reports: the run, once prepared.
    async fn measure(
        &self,
        pool: MutexGuard<'_, Pool>,
        shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> Result<Report, DriverError> {
        let loaded = self.load(pool, shutdown).await?;
        let collected = self.collect(loaded).await?;
        Ok(self.report(collected))
    }

    /// Puts the cluster under the scenario's load, with what runs beside it, until the
    /// scenario's end or `shutdown`. Fails only when the connections cannot be opened; what
    /// fails later is in [`Loaded::ended`], returned once the fault steps are undone.
    async fn load(
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
        let sampler = Sampler::start(
            metrics::targets(&self.cluster.members, driver.config.control.as_ref()),
            Arc::clone(driver.dialer.load_traffic()),
            network_threads.clone(),
            metrics::SAMPLE_PERIOD,
            &driver.dialer,
        )
        .await;
        let control = driver.config.control.as_ref();
        let machine = crate::machine::of_run(
            &driver.config.cpus,
            &network_threads,
            control,
            &self.cluster.members,
        );
        target.machine = Some(machine);
        let usage = Usage::start(network_threads);

        let (stop, stop_rx) = watch::channel(false);
        let start = Start::soon(scenario.load.warmup);
        sampler.measure_from(start.measure_from);
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

    /// Stops what ran beside the load and gathers what the run measured, with the checks
    /// after it. The load's own error, if any, is returned here, after the fault steps are
    /// undone.
    async fn collect(&self, loaded: Loaded) -> Result<Collected, DriverError> {
        let (driver, scenario) = (self.driver, self.scenario);
        // First, so that members paused until the end are resumed before anyone asks them.
        let applied = match loaded.faults {
            Some(f) => f.await.unwrap_or_default(),
            None => Vec::new(),
        };
        // Only now: a run that failed has still had its faults undone (toxics removed).
        let measured = match loaded.ended? {
            Ended::Requests { outcomes, work } => {
                merge(outcomes, work, scenario, loaded.start.measure_from)
            }
            Ended::Watch(measured) => *measured,
        };
        let leader_changes = loaded.leader_watch.await.unwrap_or_default();
        let mut target = loaded.target;
        target.network = self.network(loaded.network_before.as_deref());
        if let Some(network) = &mut target.network {
            network.emulator = loaded.usage.apart();
        }
        let (server, client_resources) = loaded.sampler.finish(measured.measure_start).await;
        let mut client = loaded.usage.finish(client_resources);
        if let Some(c) = &mut client {
            c.worker_cpu_s = measured.worker_cpu.map(|d| d.as_secs_f64());
            if let (Some(busy), Some((max, peak))) = (&mut c.busy, measured.worker_busy) {
                busy.worker_max = Some(max);
                busy.worker_peak = Some(peak);
            }
        }
        let mut recorder = measured.recorder;
        // The load's own, before the compactions join the recorder.
        let recorder_members = recorder.members().to_vec();
        let recorder_pacing = recorder.pacing().cloned();
        let mut kubernetes = measured.kubernetes;
        let mut steady = self.steady.as_ref().map(|s| s.report.clone());
        if let Some(compactor) = loaded.compactor
            && let Ok(compacted) = compactor.await
        {
            if let Some(steady) = &mut steady {
                steady.compactions = compacted
                    .recorder
                    .records()
                    .find(|(kind, _)| *kind == OpKind::Compact)
                    .map_or(0, |(_, r)| r.ok);
                steady.compacted_revision = compacted.revision;
            }
            recorder.merge(compacted.recorder);
        }
        if let (Some(steady), Some(expiry)) = (&mut steady, loaded.expiry)
            && let Ok(expired) = expiry.await
        {
            steady.leases_expired = expired.leases;
            steady.keys_expired = expired.keys;
            steady.largest_expiry_keys = expired.largest;
        }
        if let Some(k) = &mut kubernetes {
            k.steady_state = steady;
        }
        let audit = match &measured.audit {
            Some(history) => {
                let client = control_client_any(&driver.dialer, &driver.config.endpoints)
                    .await
                    .map_err(|e| e.to_string());
                let name = |id: u64| {
                    self.cluster
                        .members
                        .iter()
                        .find(|m| m.id == id)
                        .map_or_else(|| format!("{id:x}"), |m| m.name.clone())
                };
                Some(history.check(client, scenario.checks.audit_limit, &name).await)
            }
            None => None,
        };
        // HashKV asks the cluster afresh, on purpose: it compares at the revision the run left.
        let hashkv = if scenario.checks.hashkv {
            Some(hashkv(&driver.config.endpoints, &driver.dialer).await?)
        } else {
            None
        };
        let alarms =
            alarm::alarms(&driver.config.endpoints, &driver.dialer, &self.cluster.members).await;
        Ok(Collected {
            kubernetes,
            recorder,
            measure_start: measured.measure_start,
            last_done: measured.last_done,
            interrupted: measured.interrupted,
            watch: measured.watch,
            recorder_members,
            recorder_pacing,
            started_at: loaded.start.wall,
            target,
            conns: loaded.conns,
            workers: loaded.workers,
            applied,
            leader_changes,
            server,
            client,
            audit,
            hashkv,
            alarms,
        })
    }

    /// The emulated network's links as the run left them, or toxiproxy's settings.
    fn network(&self, before: Option<&[LinkState]>) -> Option<NetworkReport> {
        if let (Some(control), Some(before)) = (&self.driver.config.control, before) {
            return control.network_report(before);
        }
        // Shaped by toxiproxy, not by etcdlat: the settings, no links of ours to count.
        let network = &self.scenario.network;
        (!network.is_empty()).then(|| NetworkReport {
            config: network.clone(),
            summary: network.summary(),
            links: Vec::new(),
            emulator: None,
        })
    }

    /// The report of what the run measured.
    fn report(&self, c: Collected) -> Report {
        let scenario = self.scenario;
        let duration = c.last_done.saturating_duration_since(c.measure_start);
        // The workers' recorders may have doubled theirs as the run went.
        let interval = c.recorder.interval();
        let steps = scenario
            .load
            .client_steps
            .iter()
            .zip(c.recorder.steps())
            .map(|(step, record)| StepReport::from_record(step, record, c.measure_start))
            .collect();
        let invariants = c.recorder.invariants();
        let records = c.recorder.finish();
        // Background compaction is not part of the load: `all` combines the workload's kinds.
        let load: Vec<&OpRecord> = records
            .iter()
            .filter(|(kind, _)| !matches!(kind, OpKind::Compact | OpKind::K8sCompactor))
            .map(|(_, r)| r)
            .collect();
        let all = (load.len() > 1)
            .then(|| OpReport::from_record(&OpRecord::combined(load), duration, interval));
        let ops = records
            .iter()
            .map(|(kind, rec)| (*kind, OpReport::from_record(rec, duration, interval)))
            .collect();
        let applied: Vec<_> = c.applied.iter().map(|a| a.since(c.measure_start)).collect();
        let faults = etcdlat_core::fault::analyze(&records, &applied, duration, interval);
        let params = params(scenario, c.conns, c.workers, self.seed);
        let mut report = Report::new(scenario.clone(), params, c.target);
        report.started_at = humantime::format_rfc3339_millis(c.started_at).to_string();
        report.interrupted = c.interrupted;
        report.duration_s = duration.as_secs_f64();
        report.interval_s = interval.as_secs_f64();
        report.ops = ops;
        report.all = all;
        report.steps = steps;
        report.watch = c.watch;
        report.hashkv = c.hashkv;
        report.audit = c.audit;
        report.invariants = invariants;
        report.kubernetes = c.kubernetes;
        report.members = member_reports(&c.recorder_members, &self.cluster.members, duration);
        report.leader_changes = c.leader_changes;
        report.alarms = c.alarms;
        report.faults = faults;
        report.pacing = c
            .recorder_pacing
            .as_ref()
            .map(|p| pacing_report(p, &scenario.load, duration, c.client.as_ref(), c.workers));
        report.server = c.server;
        report.client = c.client;
        report
    }
}

/// Where `scenario`'s fault steps act: with toxiproxy's proxies when the cluster is not
/// one etcdlat started and the scenario names a toxiproxy server.
/// Whether etcd version `version` (`3.6.16`, as Status says) is before `major.minor`; a
/// version that does not read as one is not (the server is then asked, and its answer
/// counted).
fn before(version: &str, (major, minor): (u64, u64)) -> bool {
    let mut parts = version.split('.').map(str::parse::<u64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(v_major)), Some(Ok(v_minor))) => (v_major, v_minor) < (major, minor),
        _ => false,
    }
}

fn fault_target(driver: &Driver, scenario: &Scenario) -> Result<fault::Target, DriverError> {
    let network = &scenario.network;
    let toxiproxy = match (&driver.config.control, &network.toxiproxy) {
        (None, Some(api)) => Some(Proxies::new(api, network.proxies.clone())?),
        _ => None,
    };
    Ok(fault::Target {
        control: driver.config.control.clone(),
        endpoints: driver.config.endpoints.clone(),
        dialer: driver.dialer.clone(),
        toxiproxy,
    })
}

/// How long after it is set the load starts: time for every worker to get its job, so that
/// they start together.
const START_LEAD: Duration = Duration::from_millis(5);

/// When the load starts, set once for everything that counts from it.
#[derive(Debug, Clone, Copy)]
struct Start {
    /// When the workers start, warm-up first.
    at: Instant,
    /// When measurement starts (`at` + warm-up): the report's zero, from which the fault
    /// steps' times, compaction's recorder and the leader changes count too.
    measure_from: Instant,
    /// `measure_from` on the wall clock: the report's `started_at`.
    wall: SystemTime,
}

impl Start {
    /// [`START_LEAD`] from now, measurement `warmup` later.
    fn soon(warmup: Duration) -> Self {
        // Both clocks read together, so that the wall time names the same moment.
        let (now, wall) = (Instant::now(), SystemTime::now());
        let at = now + START_LEAD;
        Self { at, measure_from: at + warmup, wall: wall + START_LEAD + warmup }
    }
}

/// The channels the workers are steered by.
#[derive(Clone, Copy)]
struct Steer<'a> {
    stop: &'a watch::Receiver<bool>,
    retarget: &'a watch::Receiver<Vec<String>>,
}

/// The load, ended, and what ran beside it, still to be stopped and read.
struct Loaded {
    /// What the load handed back, or why it could not run to its end.
    ended: Result<Ended, DriverError>,
    start: Start,
    target: TargetInfo,
    conns: u32,
    workers: usize,
    faults: Option<oneshot::Receiver<Vec<Applied>>>,
    leader_watch: JoinHandle<Vec<LeaderChange>>,
    compactor: Option<JoinHandle<compaction::Compacted>>,
    /// What the leases' expiry deleted, observed in a modelled cluster's runs.
    expiry: Option<JoinHandle<kubernetes::Expiry>>,
    sampler: Sampler,
    usage: Usage,
    /// The emulated network's links before the load, to count what it moved.
    network_before: Option<Vec<LinkState>>,
}

/// What the load handed back.
enum Ended {
    /// Each worker's result, with the work they shared.
    Requests { outcomes: Vec<JobResult>, work: Arc<Work> },
    /// The watch run's, merged (boxed: it is larger than the workers' results).
    Watch(Box<Measured>),
}

/// What the run measured and found, ready to report.
struct Collected {
    /// The apiserver's requests by resource and verb, when the run sent any.
    kubernetes: Option<KubernetesReport>,
    /// Every recorder merged, the background compactions' included.
    recorder: Recorder,
    measure_start: Instant,
    last_done: Instant,
    interrupted: bool,
    watch: Option<etcdlat_core::WatchAccounting>,
    /// The load's per-member counts and pacing (not the compactions').
    recorder_members: Vec<MemberRecord>,
    recorder_pacing: Option<RecordedPacing>,
    started_at: SystemTime,
    target: TargetInfo,
    conns: u32,
    workers: usize,
    applied: Vec<Applied>,
    leader_changes: Vec<LeaderChange>,
    server: Vec<MemberMetrics>,
    client: Option<ClientUsage>,
    audit: Option<AuditReport>,
    hashkv: Option<HashKvCheck>,
    alarms: Vec<AlarmReport>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_before_a_release() {
        for (version, is_before) in [
            ("3.4.23", true),
            ("3.6.16", true),
            ("3.7.0", false),
            ("3.7.3", false),
            ("4.0.0", false),
        ] {
            assert_eq!(before(version, (3, 7)), is_before, "{version}");
        }
        assert!(!before("", (3, 7)), "unknown: the server is asked");
        assert!(!before("3.x", (3, 7)), "unknown: the server is asked");
    }
}
