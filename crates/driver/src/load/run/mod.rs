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
//! one. The steps that are long live beside this file: the fills in `fill`, the load in
//! `load`, collection and the report in `collect`, the workers' jobs in `jobs`.

mod collect;
mod fill;
mod jobs;
mod load;

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant, SystemTime};

use etcdlat_core::{CompactionStyle, Report, Scenario, Targeting};
use tokio::sync::{MutexGuard, watch};

use super::compaction;
use super::driver::{Driver, Pool};
use super::kubernetes;
use super::report::op_seed;
use crate::cluster::discovery::{self, Discovery};
use crate::cluster::fault;
use crate::cluster::target;
use crate::cluster::toxiproxy::Proxies;
use crate::error::{AnswerError, DriverError};
use crate::transport::control_client_any;
use fill::{Steady, history_fill, preload_fill, setup_fill};

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
}

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

/// Where `scenario`'s fault steps act: with toxiproxy's proxies when the cluster is not
/// one etcdlat started and the scenario names a toxiproxy server.
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
