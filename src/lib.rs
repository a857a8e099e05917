//! etcdlat: a load generator for etcd, as a library to embed in test suites.
//!
//! Put etcd under load inside a test and read the result: start a throwaway cluster
//! ([`LocalCluster`]) or point at yours, describe the load ([`Scenario`], the TOML of
//! `docs/scenarios.md`), run it ([`Driver`]) and assert on the [`Report`].
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use etcdlat::{Driver, OpKind, Scenario};
//!
//! let scenario = Scenario::from_toml_str(r#"
//!     [load]
//!     clients = 64
//!     total = 10000
//!     [op.put]
//!     val-size = 256
//! "#)?;
//! let driver = Driver::builder().endpoints(["127.0.0.1:2379"]).conns(8).connect().await?;
//! let report = driver.run(&scenario).await?;
//! assert!(report.op(OpKind::Put).latency.quantile(0.99) < Duration::from_millis(20));
//! # Ok(()) }
//! ```
//!
//! At the top level are the types such a test uses. Beyond them, each library crate is
//! re-exported whole:
//! - [`core`]: the scenario model and the report data (pure): a scenario's parts, every
//!   figure of a report, merging, comparing and thresholds;
//! - [`driver`]: connections, logical clients, local clusters, faults, TLS and credentials;
//! - [`render`]: a report as text, JSON, markdown, CSV, an HTML page or SVG plots.
//!
//! What the library crates make public only so that another of etcdlat's crates can reach
//! it is hidden from these docs (`#[doc(hidden)]`) and not part of the API. The API as a
//! whole is listed in `docs/public-api.txt`, which a test keeps current.

pub use etcdlat_core as core;
pub use etcdlat_driver as driver;
pub use etcdlat_render as render;

pub use etcdlat_core::{
    Distribution, ErrorCode, Network, OpKind, OpReport, Report, ReportSet, Scenario, ScenarioError,
    Threshold, Violation,
};
pub use etcdlat_driver::{Driver, DriverBuilder, DriverError, LocalCluster, LocalClusterOptions};
