//! The watch family of workloads: `watch`, `watch-get` and `watch-latency`.

use etcdlat_core::Scenario;
use tokio::sync::watch;

use crate::driver::Measured;
use crate::error::DriverError;
use crate::worker::Worker;

/// Runs a watch-family scenario on the workers.
pub(crate) async fn run(
    _workers: &[Worker],
    scenario: &Scenario,
    _seed: u64,
    _stop: watch::Receiver<bool>,
) -> Result<Measured, DriverError> {
    Err(DriverError::Unsupported {
        what: scenario.op.as_ref().map_or("mix", |o| o.name()).to_owned(),
    })
}
