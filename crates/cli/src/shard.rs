//! A run's start, for distributed runs: this process's shard of the scenario measures at
//! once, at a wall-clock time (`--start-at`), or when every shard has reached a barrier on
//! the cluster under test (`--barrier`); [`crate::plan::shard`] validates those flags.
//!
//! With a synchronized start, the scenario's setup (unmeasured writes) runs first, then the
//! process waits, then it measures: so no shard measures while another still sets up.

use std::future::Future;
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result, bail};
use etcdlat_core::{Operation, Report, Scenario, Shard};
use etcdlat_driver::{Barrier, Driver, DriverError};

use crate::plan::Start;

/// Where and how a run is synchronized.
pub struct Sync<'a> {
    /// When measurement starts.
    pub start: &'a Start,
    /// This process's shard, for the barrier's party number.
    pub shard: Option<Shard>,
    /// The run's position in the plan: one barrier round per run.
    pub round: usize,
    /// The cluster the barrier is on.
    pub endpoints: &'a [String],
    /// Dial timeout for the barrier's connection.
    pub dial_timeout: Duration,
    /// TLS and credentials for the barrier's connection.
    pub security: &'a etcdlat_driver::Security,
}

/// Runs `scenario` (this shard's part already) once its start has come, until it
/// completes or `shutdown` does; `None` when stopped before measurement started.
pub async fn run_until(
    driver: &Driver,
    scenario: &Scenario,
    sync: &Sync<'_>,
    shutdown: impl Future<Output = ()>,
) -> Result<Option<Report>> {
    let mut shutdown = std::pin::pin!(shutdown);
    let context = || format!("running {}", scenario.name);
    if *sync.start == Start::Now {
        return finished(driver.run_until(scenario, shutdown).await).with_context(context);
    }
    let mut measured = scenario.clone();
    if let Some(setup) = measured.setup.take() {
        // As the driver runs a setup, but before the wait rather than after it.
        let mut fill = Scenario::new(Operation::Put(setup.put));
        fill.load.clients = setup.clients;
        fill.load.total = Some(setup.total);
        fill.load.conns = scenario.load.conns;
        let Some(report) = finished(driver.run_until(&fill, shutdown.as_mut()).await)
            .with_context(|| format!("setting up {}", scenario.name))?
        else {
            return Ok(None);
        };
        if report.interrupted {
            return Ok(None);
        }
        if report.errors_total() > 0 {
            let e = DriverError::Setup { failed: report.errors_total(), total: setup.total };
            return Err(anyhow::Error::new(e).context(context()));
        }
    }
    tokio::select! {
        started = wait(sync) => started?,
        () = shutdown.as_mut() => return Ok(None),
    }
    finished(driver.run_until(&measured, shutdown).await).with_context(context)
}

/// The report, `None` when interrupted before measuring.
fn finished(result: Result<Report, DriverError>) -> Result<Option<Report>, DriverError> {
    match result {
        Ok(report) => Ok(Some(report)),
        Err(DriverError::Interrupted) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Waits for the start.
async fn wait(sync: &Sync<'_>) -> Result<()> {
    match sync.start {
        Start::Now => {}
        Start::At(at) => match at.duration_since(SystemTime::now()) {
            Ok(left) => {
                tracing::info!(?left, "waiting for --start-at");
                tokio::time::sleep(left).await;
            }
            Err(past) => tracing::warn!(
                "--start-at was {:.3} s ago; starting now, out of line with the other shards",
                past.duration().as_secs_f64()
            ),
        },
        Start::Barrier { prefix, timeout } => {
            let Some(shard) = sync.shard else { bail!("--barrier needs --shard I/N") };
            let waited =
                Barrier::new(sync.endpoints.iter().cloned(), prefix.clone(), shard.count())
                    .timeout(*timeout)
                    .dial_timeout(sync.dial_timeout)
                    .security(sync.security.clone())
                    .wait(sync.round, shard.index())
                    .await?;
            tracing::info!(?waited, "every shard reached the barrier");
        }
    }
    Ok(())
}
