//! What a run writes before its load, each as a run of its own on the same discovery: the
//! `[setup]`'s puts, and a Kubernetes model's objects, history and steady state.

use std::future::Future;
use std::pin::Pin;

use etcdlat_core::report::kubernetes::SteadyStateReport;
use etcdlat_core::workload::kubernetes::ObjectOp;
use etcdlat_core::{Operation, Scenario, Setup};
use tokio::sync::MutexGuard;

use super::Run;
use crate::cluster::discovery;
use crate::error::DriverError;
use crate::load::driver::Pool;

/// A modelled cluster's store brought to steady state before the run: what was written,
/// and the apiserver compactor's claim to resume from.
#[derive(Debug, Clone, Default)]
pub(super) struct Steady {
    /// The preload's counts; the run's compactions and expiries are added to it.
    pub(super) report: SteadyStateReport,
    /// The (version, revision seen) of the claim made before the run.
    pub(super) compactor_from: Option<(i64, i64)>,
}

/// Logical clients of a Kubernetes preload, as many as a setup's by default.
const PRELOAD_CLIENTS: u32 = 16;

/// The setup's puts as a run.
pub(super) fn setup_fill(setup: &Setup) -> Scenario {
    let mut fill = Scenario::new(Operation::Put(setup.put.clone()));
    fill.load.clients = setup.clients;
    fill.load.total = Some(setup.total);
    fill
}

/// A Kubernetes model's history of one flow as a run: `total` of its requests.
pub(super) fn history_fill(op: Operation, total: u64) -> Scenario {
    let mut fill = Scenario::new(op);
    fill.load.clients = PRELOAD_CLIENTS;
    fill.load.total = Some(total);
    fill
}

/// A Kubernetes model's objects of one resource as a run: one create of each (a create
/// takes object `i % objects` of request `i`).
pub(super) fn preload_fill(objects: ObjectOp) -> Scenario {
    let total = objects.objects;
    let mut fill = Scenario::new(Operation::K8sCreate(objects));
    fill.load.clients = PRELOAD_CLIENTS;
    fill.load.total = Some(total);
    fill
}

impl<'a> Run<'a> {
    /// A fill before the load (the setup's puts, a Kubernetes model's objects), as a run of
    /// its own on this run's discovery; an error unless every one of its requests
    /// succeeded. Takes the connections and hands them back for the load.
    pub(super) async fn fill(
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
}
