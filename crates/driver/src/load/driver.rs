//! The [`Driver`]: connects, runs scenarios, returns reports.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use etcdlat_core::recorder::{OpRecord, Recorder};
use etcdlat_core::{OpKind, OpReport, Operation, Report, Scenario, TargetInfo, Targeting};
use tokio::sync::{Mutex, watch};

use super::audit::History;
use super::compaction;
use super::progress::Progress;
use super::report::{Measured, member_reports, op_seed, pacing_report, params};
use super::request::Work;
use super::worker::{Job, Pacing, Worker};
use crate::cluster::alarm;
use crate::cluster::discovery as cluster;
use crate::cluster::fault;
use crate::cluster::hashkv::hashkv;
use crate::cluster::local::{LocalCluster, MemberControl};
use crate::cluster::metrics::{self, SAMPLE_INTERVAL, Sampler, Usage};
use crate::cluster::target;
use crate::cluster::toxiproxy::Proxies;
use crate::error::DriverError;
use crate::transport::{DEFAULT_DIAL_TIMEOUT, Dialer, Security, control_client_any};

/// Builds a [`Driver`]: where to connect and how.
#[derive(Debug, Clone)]
#[must_use]
pub struct DriverBuilder {
    endpoints: Vec<String>,
    conns: u32,
    dial_timeout: Duration,
    security: Security,
    workers: Option<usize>,
    local: bool,
    targeting: Targeting,
    /// The local cluster's member processes, for fault steps ([`crate::cluster::fault`]).
    control: Option<MemberControl>,
    cpus: Vec<usize>,
}

impl Default for DriverBuilder {
    fn default() -> Self {
        Self {
            endpoints: Vec::new(),
            conns: 1,
            dial_timeout: DEFAULT_DIAL_TIMEOUT,
            security: Security::default(),
            workers: None,
            local: false,
            targeting: Targeting::Endpoints,
            control: None,
            cpus: Vec::new(),
        }
    }
}

impl DriverBuilder {
    /// The cluster's endpoints (`host:port` or `http://host:port`). Connections are spread
    /// over them in order: connection `c` goes to endpoint `c % endpoints.len()`.
    pub fn endpoints<I, S>(mut self, endpoints: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.endpoints = endpoints.into_iter().map(Into::into).collect();
        self
    }

    /// Connect to a throwaway local cluster (reports then say `local: true`). The driver
    /// can then also kill, pause and restart its members for a scenario's fault steps; from
    /// endpoints, only move-leader, compact and defrag steps can run (and network steps
    /// through a toxiproxy server the scenario names).
    pub fn local_cluster(mut self, cluster: &LocalCluster) -> Self {
        self.endpoints = cluster.endpoints();
        self.local = true;
        self.control = Some(cluster.control());
        self
    }

    /// gRPC connections to open (default 1). A scenario that sets its own `conns` reopens
    /// that many before it runs.
    pub fn conns(mut self, conns: u32) -> Self {
        self.conns = conns;
        self
    }

    /// TLS and credentials for every connection: the load's, the control clients' and the
    /// barrier's. Without it connections are plain and carry no token.
    pub fn security(mut self, security: Security) -> Self {
        self.security = security;
        self
    }

    /// How long one connection may take to establish: TCP, TLS, and the first answer
    /// (default 5 s).
    pub fn dial_timeout(mut self, timeout: Duration) -> Self {
        self.dial_timeout = timeout;
        self
    }

    /// Send every request to the leader only (etcd benchmark's `--target-leader`); the same
    /// as `.target(Targeting::Leader)`.
    pub fn target_leader(mut self, yes: bool) -> Self {
        if yes {
            self.targeting = Targeting::Leader;
        } else if self.targeting == Targeting::Leader {
            self.targeting = Targeting::Endpoints;
        }
        self
    }

    /// Which members get the load (default: the endpoints as given). The members are found
    /// through the endpoints; a scenario with a `target` of its own overrides this.
    pub fn target(mut self, targeting: Targeting) -> Self {
        self.targeting = targeting;
        self
    }

    /// Pins worker `i` to CPU `cpus[i % cpus.len()]` (Linux), so that on a machine shared with
    /// etcd the client stays on the cores given to it. Empty (the default): no pinning.
    pub fn pin_cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Self {
        self.cpus = cpus.into_iter().collect();
        self
    }

    /// Worker threads (default: the number of CPUs, never more than the connections).
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers.max(1));
        self
    }

    /// Opens every connection, eagerly, and learns the cluster's version, members and leader.
    ///
    /// # Errors
    /// [`DriverError::Endpoint`] for a malformed endpoint, [`DriverError::Connect`] naming the
    /// endpoint when a connection cannot be made within the dial timeout, and
    /// [`DriverError::NotAnswering`] when etcd does not answer on it.
    pub async fn connect(self) -> Result<Driver, DriverError> {
        if self.endpoints.is_empty() {
            return Err(DriverError::Endpoint {
                endpoint: String::new(),
                reason: "no endpoints given".into(),
            });
        }
        if self.conns == 0 {
            return Err(DriverError::Endpoint {
                endpoint: self.endpoints.join(","),
                reason: "conns must be at least 1".into(),
            });
        }
        for ep in &self.endpoints {
            crate::transport::url(ep)?;
        }
        let dialer = Dialer::new(&self.security, self.dial_timeout)?;
        // With the endpoints as given, the connections are dialled first, so that an endpoint
        // where nothing listens fails within the dial timeout, naming it; any other target is
        // chosen from the members first.
        let (mut target, selected, pool) = if self.targeting == Targeting::Endpoints {
            let pool = Pool::open(&self, &dialer, self.conns, self.endpoints.clone()).await?;
            let (target, _) = cluster::discover(&self.endpoints, &dialer).await?;
            (target, self.endpoints.clone(), pool)
        } else {
            let (target, members) = cluster::discover(&self.endpoints, &dialer).await?;
            let selected = target::select(&self.targeting, &self.endpoints, &members)?;
            let pool = Pool::open(&self, &dialer, self.conns, selected.clone()).await?;
            (target, selected, pool)
        };
        target.local = self.local;
        target.endpoints = selected;
        target.source_addresses = dialer.source_addresses();
        Ok(Driver {
            config: self,
            dialer,
            pool: Mutex::new(pool),
            target: std::sync::Mutex::new(target),
            progress: Progress::default(),
        })
    }
}

/// Worker threads and the connections they own.
struct Pool {
    workers: Vec<Worker>,
    conns: u32,
    /// The endpoints the connections go to, connection `c` to `endpoints[c % len]`.
    endpoints: Vec<String>,
}

impl Pool {
    async fn open(
        config: &DriverBuilder,
        dialer: &Dialer,
        conns: u32,
        endpoints: Vec<String>,
    ) -> Result<Self, DriverError> {
        let threads = config.workers.unwrap_or_else(|| {
            if config.cpus.is_empty() {
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
            } else {
                config.cpus.len()
            }
        });
        // Behind an emulated network each connection is also two sockets of its proxy here.
        let per_conn =
            if config.control.as_ref().is_some_and(MemberControl::emulated) { 3 } else { 1 };
        super::fds::make_room(conns, per_conn)?;
        let count = threads.min(conns as usize).max(1);
        // Connection c lives on worker c % count and goes to endpoint c % endpoints.
        let mut per_worker: Vec<Vec<String>> = vec![Vec::new(); count];
        for c in 0..conns as usize {
            per_worker[c % count].push(endpoints[c % endpoints.len()].clone());
        }
        let mut workers = Vec::with_capacity(count);
        for (i, eps) in per_worker.into_iter().enumerate() {
            let cpu = (!config.cpus.is_empty()).then(|| config.cpus[i % config.cpus.len()]);
            workers.push(Worker::spawn(i, eps, dialer.clone(), cpu).await?);
        }
        Ok(Self { workers, conns, endpoints })
    }
}

/// Runs scenarios against one etcd cluster over a fixed set of connections.
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use etcdlat_driver::Driver;
/// use etcdlat_core::{OpKind, Scenario};
/// let scenario = Scenario::from_toml_str("[load]\nclients = 8\ntotal = 1000\n[op.put]\nval-size = 256\n")?;
/// let driver = Driver::builder().endpoints(["127.0.0.1:2379"]).conns(4).connect().await?;
/// let report = driver.run(&scenario).await?;
/// assert_eq!(report.op(OpKind::Put).ok, 1000);
/// # Ok(()) }
/// ```
pub struct Driver {
    config: DriverBuilder,
    dialer: Dialer,
    pool: Mutex<Pool>,
    target: std::sync::Mutex<TargetInfo>,
    progress: Progress,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").field("config", &self.config).finish_non_exhaustive()
    }
}

impl Driver {
    /// A builder with etcd benchmark's defaults: 1 connection, 5 s dial timeout.
    pub fn builder() -> DriverBuilder {
        DriverBuilder::default()
    }

    /// What the driver is connected to, as of the last connect or run.
    #[must_use]
    pub fn target(&self) -> TargetInfo {
        self.target.lock().map(|t| t.clone()).unwrap_or_default()
    }

    /// A handle on the progress of runs, to poll from another task.
    #[must_use]
    pub fn progress(&self) -> Progress {
        self.progress.clone()
    }

    /// Where `scenario`'s fault steps act: with toxiproxy's proxies when the cluster is not
    /// one etcdlat started and the scenario names a toxiproxy server.
    fn fault_target(&self, scenario: &Scenario) -> Result<fault::Target, DriverError> {
        let network = &scenario.network;
        let toxiproxy = match (&self.config.control, &network.toxiproxy) {
            (None, Some(api)) => Some(Proxies::new(api, network.proxies.clone())?),
            _ => None,
        };
        Ok(fault::Target {
            control: self.config.control.clone(),
            endpoints: self.config.endpoints.clone(),
            dialer: self.dialer.clone(),
            toxiproxy,
        })
    }

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
        fault::check(&scenario.faults, &self.fault_target(scenario)?).await?;
        if let Some(setup) = &scenario.setup {
            let mut fill = Scenario::new(Operation::Put(setup.put.clone()));
            fill.load.clients = setup.clients;
            fill.load.total = Some(setup.total);
            fill.load.conns = scenario.load.conns;
            let mut shutdown = std::pin::pin!(shutdown);
            // The fill is not the run: its intervals are not streamed.
            let report = self.measure(&fill, shutdown.as_mut(), false).await?;
            if report.interrupted {
                return Err(DriverError::Interrupted);
            }
            if report.errors_total() > 0 {
                return Err(DriverError::Setup {
                    failed: report.errors_total(),
                    total: setup.total,
                });
            }
            return self.measure(scenario, shutdown, true).await;
        }
        self.measure(scenario, std::pin::pin!(shutdown), true).await
    }

    /// Runs `scenario` once; `stream`: its finished intervals go to [`Progress`] as it runs.
    async fn measure(
        &self,
        scenario: &Scenario,
        mut shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
        stream: bool,
    ) -> Result<Report, DriverError> {
        let mut pool = self.pool.lock().await;
        let conns = scenario.load.conns.unwrap_or(pool.conns);
        let targeting = match &scenario.target {
            Targeting::Endpoints => &self.config.targeting,
            own => own,
        };
        // Asked afresh for every run: the leader may have moved since the last one.
        let (mut target, members) = cluster::discover(&self.config.endpoints, &self.dialer).await?;
        let selected = target::select(targeting, &self.config.endpoints, &members)?;
        if conns != pool.conns || selected != pool.endpoints {
            // Drop the old connections first so the server never sees both sets.
            pool.workers.clear();
            self.dialer.forget_sources();
            *pool = Pool::open(&self.config, &self.dialer, conns, selected).await?;
        }
        target.local = self.config.local;
        target.endpoints.clone_from(&pool.endpoints);
        if *targeting != Targeting::Endpoints {
            target.targeting = targeting.clone();
            target.targeted = target::names(&pool.endpoints, &members);
        }
        target.source_addresses = self.dialer.source_addresses();
        if let Ok(mut t) = self.target.lock() {
            *t = target.clone();
        }
        let network_before = self.config.control.as_ref().map(MemberControl::network_snapshot);
        // Every member's /metrics and our own CPU time, from just before the load to its end.
        let sampler =
            Sampler::start(metrics::targets(&members), SAMPLE_INTERVAL, &self.dialer).await;
        let usage = Usage::start();

        let seed = op_seed(scenario);
        let (stop_tx, stop_rx) = watch::channel(false);
        let started_at = SystemTime::now() + Duration::from_millis(5) + scenario.load.warmup;
        // Where the workers start measuring (they add the same few milliseconds).
        let measure_from = Instant::now() + Duration::from_millis(5) + scenario.load.warmup;
        let compactor = scenario.compaction.as_ref().map(|c| {
            tokio::spawn(compaction::run(
                self.config.endpoints.clone(),
                self.dialer.clone(),
                c.clone(),
                measure_from,
                scenario.load.duration.map(|d| measure_from + d),
                scenario.series_interval().length,
                stop_rx.clone(),
            ))
        });
        let (retarget_tx, retarget_rx) = watch::channel(pool.endpoints.clone());
        let leader_watch = tokio::spawn(cluster::watch_leader(
            self.config.endpoints.clone(),
            self.dialer.clone(),
            measure_from,
            (*targeting == Targeting::Leader).then_some(retarget_tx),
            stop_rx.clone(),
        ));
        // One start for the workers and the fault steps, so that `at` is on the report's
        // clock (measure_from is earlier by the member-list round trip above).
        let start_at = Instant::now() + Duration::from_millis(5);
        let faults = if scenario.faults.is_empty() {
            None
        } else {
            let (target, steps) = (self.fault_target(scenario)?, scenario.faults.clone());
            let start = start_at + scenario.load.warmup;
            Some(fault::spawn(target, steps, start, stop_rx.clone()))
        };
        let measured = if scenario.is_stream() {
            let run = crate::watch::run(&pool.workers, scenario, seed, stop_rx.clone());
            let mut run = std::pin::pin!(run);
            let mut stopping = false;
            loop {
                tokio::select! {
                    measured = &mut run => break measured,
                    () = &mut shutdown, if !stopping => {
                        stopping = true;
                        let _ = stop_tx.send(true);
                    }
                }
            }
        } else {
            let channels =
                Channels { stop_tx: &stop_tx, stop_rx: &stop_rx, retarget: &retarget_rx, stream };
            self.run_requests(&pool, scenario, (seed, start_at), conns, channels, shutdown).await
        };
        let workers = pool.workers.len();
        drop(pool);
        let _ = stop_tx.send(true);
        // First, so that members paused until the end are resumed before anyone asks them.
        let applied = match faults {
            Some(f) => f.await.unwrap_or_default(),
            None => Vec::new(),
        };
        // Only now: a run that failed has still had its faults undone (toxics removed).
        let measured = measured?;
        let leader_changes = leader_watch.await.unwrap_or_default();
        if let (Some(control), Some(before)) = (&self.config.control, &network_before) {
            target.network = control.network_report(before);
        } else if !scenario.network.is_empty() {
            // Shaped by toxiproxy, not by etcdlat: the settings, no links of ours to count.
            target.network = Some(etcdlat_core::NetworkReport {
                config: scenario.network.clone(),
                summary: scenario.network.summary(),
                links: Vec::new(),
            });
        }
        let (server, mut client) = (sampler.finish().await, usage.finish());
        if let Some(c) = &mut client {
            c.worker_cpu_s = measured.worker_cpu.map(|d| d.as_secs_f64());
            if let (Some(busy), Some((max, peak))) = (&mut c.busy, measured.worker_busy) {
                busy.worker_max = Some(max);
                busy.worker_peak = Some(peak);
            }
        }
        let mut recorder = measured.recorder;
        let recorder_members = recorder.members().to_vec();
        let recorder_pacing = recorder.pacing().cloned();
        if let Some(compactor) = compactor {
            if let Ok(compactions) = compactor.await {
                recorder.merge(compactions);
            }
        }
        let audit = match &measured.audit {
            Some(history) => {
                let client = control_client_any(&self.dialer, &self.config.endpoints)
                    .await
                    .map_err(|e| e.to_string());
                let name = |id: u64| {
                    members
                        .iter()
                        .find(|m| m.id == id)
                        .map_or_else(|| format!("{id:x}"), |m| m.name.clone())
                };
                Some(history.check(client, scenario.checks.audit_limit, &name).await)
            }
            None => None,
        };
        let hashkv = if scenario.checks.hashkv {
            Some(hashkv(&self.config.endpoints, &self.dialer).await?)
        } else {
            None
        };

        let alarms = alarm::alarms(&self.config.endpoints, &self.dialer, &members).await;

        let duration = measured.last_done.saturating_duration_since(measured.measure_start);
        // The workers' recorders may have doubled theirs as the run went.
        let interval = recorder.interval();
        let records = recorder.finish();
        // Background compaction is not part of the load: `all` combines the workload's kinds.
        let load: Vec<&OpRecord> =
            records.iter().filter(|(kind, _)| *kind != OpKind::Compact).map(|(_, r)| r).collect();
        let all = (load.len() > 1)
            .then(|| OpReport::from_record(&OpRecord::combined(load), duration, interval));
        let ops = records
            .iter()
            .map(|(kind, rec)| (*kind, OpReport::from_record(rec, duration, interval)))
            .collect();
        let applied: Vec<_> = applied.iter().map(|a| a.since(measured.measure_start)).collect();
        let faults = etcdlat_core::fault::analyze(&records, &applied, duration, interval);
        Ok(Report {
            name: scenario.name.clone(),
            started_at: humantime::format_rfc3339_millis(started_at).to_string(),
            interrupted: measured.interrupted,
            scale: None,
            matrix: scenario.matrix_cell.clone(),
            duration_s: duration.as_secs_f64(),
            interval_s: interval.as_secs_f64(),
            params: params(scenario, conns, workers, seed),
            target,
            ops,
            all,
            watch: measured.watch,
            hashkv,
            audit,
            members: member_reports(&recorder_members, &members, duration),
            leader_changes,
            alarms,
            faults,
            pacing: recorder_pacing
                .as_ref()
                .map(|p| pacing_report(p, &scenario.load, duration, client.as_ref(), workers)),
            server,
            client,
            shards: Vec::new(),
            scenario: scenario.clone(),
        })
    }

    /// The request loop on every worker, until the scenario's stop condition or a stop.
    async fn run_requests(
        &self,
        pool: &Pool,
        scenario: &Scenario,
        (seed, start_at): (u64, Instant),
        conns: u32,
        Channels { stop_tx, stop_rx, retarget, stream }: Channels<'_>,
        mut shutdown: std::pin::Pin<&mut impl Future<Output = ()>>,
    ) -> Result<Measured, DriverError> {
        let work = Arc::new(Work::prepare(scenario, seed));
        let kinds = work.kinds();
        let load = &scenario.load;
        let workers = pool.workers.len();

        // Logical client i uses connection i % conns, which lives on worker
        // (i % conns) % workers at local index (i % conns) / workers.
        let mut clients: Vec<Vec<usize>> = vec![Vec::new(); workers];
        for i in 0..load.clients as usize {
            let c = i % conns as usize;
            clients[c % workers].push(c / workers);
        }
        let quotas = load.total.map(|t| split(t, &clients, load.clients));

        let interval = scenario.series_interval();
        let series = stream.then(|| (interval.length, kinds.clone()));
        let progress = self.progress.reset(workers, series);
        let mut receivers = Vec::with_capacity(workers);
        for (w, worker) in pool.workers.iter().enumerate() {
            let share = clients[w].len() as f64 / f64::from(load.clients);
            let mine = std::mem::take(&mut clients[w]);
            let audit = scenario
                .checks
                .audit
                .then(|| (audit_share(scenario, mine.len(), work.parts()), work.parts() as usize));
            let job = Job {
                work: Arc::clone(&work),
                kinds: kinds.clone(),
                seed: seed.wrapping_add(w as u64 + 1),
                quota: quotas.as_ref().map(|q| q[w]),
                clients: mine,
                pacing: Pacing {
                    schedule: load.schedule,
                    arrivals: load.arrivals,
                    rate: load.rate_shape(),
                    share,
                },
                start_at,
                warmup: load.warmup,
                duration: load.duration,
                interval,
                stop: stop_rx.clone(),
                progress: Arc::clone(&progress[w]),
                retarget: retarget.clone(),
                placement: (w, workers),
                dialer: self.dialer.clone(),
                audit,
            };
            receivers.push((worker.index(), worker.run(job)?));
        }

        let mut stopping = false;
        let mut outcomes = Vec::with_capacity(workers);
        for (index, mut rx) in receivers {
            let outcome = loop {
                tokio::select! {
                    outcome = &mut rx => break outcome,
                    () = &mut shutdown, if !stopping => {
                        stopping = true;
                        let _ = stop_tx.send(true);
                    }
                }
            };
            outcomes.push(outcome.map_err(|_| DriverError::Worker {
                index,
                reason: "worker stopped mid-run".into(),
            })?);
        }
        // The intended start, not when the workers woke for it (later on a loaded machine):
        // the fault steps are scheduled from it.
        let measure_start = start_at + load.warmup;
        let last_done = outcomes.iter().map(|o| o.last_done).max().unwrap_or(measure_start);
        let interrupted = outcomes.iter().any(|o| o.interrupted);
        let mut recorder = Recorder::new(&[], measure_start, interval.length);
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
        let audit = scenario.checks.audit.then(|| History::gather(audits, work));
        Ok(Measured {
            recorder,
            measure_start,
            last_done,
            interrupted,
            watch: None,
            worker_cpu,
            audit,
            worker_busy,
        })
    }
}

/// The channels a run is steered by.
struct Channels<'a> {
    stop_tx: &'a watch::Sender<bool>,
    stop_rx: &'a watch::Receiver<bool>,
    retarget: &'a watch::Receiver<Vec<String>>,
    /// Whether the workers publish their finished intervals to [`Progress`].
    stream: bool,
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

/// Splits `total` request indices over the workers in proportion to their clients, as
/// contiguous ranges, so that together they issue exactly `0..total`.
fn split(total: u64, clients: &[Vec<usize>], all_clients: u32) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(clients.len());
    let mut start = 0;
    let mut assigned_clients = 0u64;
    for c in clients {
        assigned_clients += c.len() as u64;
        let end =
            (u128::from(total) * u128::from(assigned_clients) / u128::from(all_clients)) as u64;
        out.push((start, end - start));
        start = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_exact_and_contiguous() {
        let clients = vec![vec![0; 3], vec![0; 3], vec![0; 1]];
        let q = split(1000, &clients, 7);
        assert_eq!(q.iter().map(|x| x.1).sum::<u64>(), 1000);
        assert_eq!(q[0].0, 0);
        assert_eq!(q[1].0, q[0].1);
        assert_eq!(q[2].0, q[1].0 + q[1].1);
        assert_eq!(split(5, &[vec![], vec![0]], 1), vec![(0, 0), (0, 5)]);
    }
}
