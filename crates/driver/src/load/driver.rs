//! The [`Driver`]: connects, runs scenarios, returns reports. Its run methods
//! ([`Driver::run`], [`Driver::run_until`]) are in `run.rs`, beside the run they start.

use std::time::Duration;

use etcdlat_core::{TargetInfo, Targeting};
use tokio::sync::Mutex;

use super::progress::Progress;
use super::worker::Worker;
use crate::cluster::discovery;
use crate::cluster::local::{LocalCluster, MemberControl};
use crate::cluster::target;
use crate::error::{DriverError, EndpointError};
use crate::transport::{DEFAULT_DIAL_TIMEOUT, Dialer, Security};

/// Builds a [`Driver`]: where to connect and how.
#[derive(Debug, Clone)]
#[must_use]
pub struct DriverBuilder {
    pub(super) endpoints: Vec<String>,
    conns: u32,
    dial_timeout: Duration,
    security: Security,
    workers: Option<usize>,
    pub(super) local: bool,
    pub(super) targeting: Targeting,
    /// The local cluster's member processes, for fault steps ([`crate::cluster::fault`]).
    pub(super) control: Option<MemberControl>,
    pub(super) cpus: Vec<usize>,
    /// How often a run refreshes its endpoints from the member list, if at all.
    pub(super) auto_sync: Option<Duration>,
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
            auto_sync: None,
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

    /// Refreshes the endpoints from the cluster's member list every `every` while a run goes
    /// (etcd benchmark's `--auto-sync-interval`; as etcd's client, the first time one
    /// interval after the start): when the members' client URLs change, every connection is
    /// reopened to them, so that a load on members that left moves to the ones that joined.
    /// Only for the endpoints as given: a run that targets the leader follows it instead,
    /// and one that targets other members keeps them. Zero: never (the default).
    pub fn auto_sync_interval(mut self, every: Duration) -> Self {
        self.auto_sync = (!every.is_zero()).then_some(every);
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
                source: EndpointError::Missing,
            });
        }
        if self.conns == 0 {
            return Err(DriverError::NoConns);
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
            let cluster = match discovery::discover(&self.endpoints, &dialer).await {
                Ok(cluster) => cluster,
                Err(e) => {
                    pool.close().await;
                    return Err(e);
                }
            };
            (cluster.target, self.endpoints.clone(), pool)
        } else {
            let cluster = discovery::discover(&self.endpoints, &dialer).await?;
            let selected = target::select(&self.targeting, &self.endpoints, &cluster.members)?;
            let pool = Pool::open(&self, &dialer, self.conns, selected.clone()).await?;
            (cluster.target, selected, pool)
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
            range_stream: std::sync::Arc::default(),
        })
    }
}

/// Worker threads and the connections they own.
pub(super) struct Pool {
    pub(super) workers: Vec<Worker>,
    pub(super) conns: u32,
    /// The endpoints the connections go to, connection `c` to `endpoints[c % len]`.
    pub(super) endpoints: Vec<String>,
}

impl Pool {
    /// Starts the worker threads and has them open `conns` connections to `endpoints`.
    pub(super) async fn open(
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
            match Worker::spawn(i, eps, dialer.clone(), cpu).await {
                Ok(worker) => workers.push(worker),
                Err(e) => {
                    Worker::stop_all(workers).await;
                    return Err(e);
                }
            }
        }
        Ok(Self { workers, conns, endpoints })
    }

    /// Ends the worker threads and closes their connections ([`Worker::stop_all`]).
    pub(super) async fn close(self) {
        Worker::stop_all(self.workers).await;
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
    pub(super) config: DriverBuilder,
    pub(super) dialer: Dialer,
    /// Held by one run at a time, from its discovery to the end of its load.
    pub(super) pool: Mutex<Pool>,
    pub(super) target: std::sync::Mutex<TargetInfo>,
    pub(super) progress: Progress,
    /// Whether each modelled apiserver tries RangeStream, kept across runs as an
    /// apiserver's process keeps it.
    pub(super) range_stream: std::sync::Arc<super::kubernetes::RangeStreamSupport>,
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
}
