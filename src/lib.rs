//! etcdlat: a load generator for etcd, as a library to embed in test suites.
//!
//! This crate only re-exports the library crates:
//! [`core`] (scenario model, HDR recording, report data; pure),
//! [`driver`] (connections, logical clients, throwaway local etcd clusters) and
//! [`render`] (a report as text, JSON, markdown, CSV, HTML and plots), and at its top level
//! the few types a test that embeds etcdlat uses.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use etcdlat::core::{OpKind, Scenario};
//! use etcdlat::driver::Driver;
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

pub use etcdlat_core as core;
pub use etcdlat_driver as driver;
pub use etcdlat_render as render;

pub use etcdlat_core::{Network, OpKind, Report, Scenario, ScenarioError};
pub use etcdlat_driver::{Driver, DriverError, LocalCluster};
