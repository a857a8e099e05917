//! etcdlat's driver: puts an etcd cluster under load from many logical clients multiplexed
//! over a fixed number of gRPC connections, and measures it.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use etcdlat_core::{OpKind, Scenario};
//! use etcdlat_driver::{Driver, LocalCluster};
//!
//! let etcd = LocalCluster::options().members(1).start().await?;   // or a cluster of yours
//! let scenario = Scenario::from_toml_str(r#"
//!     [load]
//!     clients = 100
//!     total = 10000
//!     [op.put]
//!     val-size = 256
//!     key-space-size = 10000
//!     sequential-keys = true
//! "#)?;
//! let driver = Driver::builder().local_cluster(&etcd).conns(10).connect().await?;
//! let report = driver.run(&scenario).await?;
//! assert!(report.op(OpKind::Put).latency.quantile(0.99) < Duration::from_millis(500));
//! # Ok(()) }
//! ```
//!
//! # What is measured
//!
//! - **Latency** is completion time minus the *intended* start time of a request. In a
//!   closed loop (each logical client sends its next request when the previous one
//!   completes, optionally capped by a rate like etcd's `--rate`) the intended start is the
//!   moment the request is sent. In an open loop the intended start comes from the schedule,
//!   so time a request spends waiting for a free client counts.
//! - **Service time** is completion minus the moment the request was actually sent. In a
//!   closed loop it equals latency.
//! - **Coordinated omission** is what happens when a load generator that waits for responses
//!   sends less while the server stalls and so never measures the requests it would have
//!   sent: its percentiles hide the stall. Measuring from the intended start is the
//!   correction.
//! - **Throughput** is successful requests divided by the measured wall time, which starts
//!   after connections are open and warm-up is over.
//! - **Errors** are counted by gRPC status code per operation, never mixed into latency:
//!   ok + errors = requests issued.
//!
//! # How it runs
//!
//! `conns` connections are opened eagerly (each its own HTTP/2 connection) and warmed with
//! one request before any clock starts. Worker threads, each a current-thread tokio runtime,
//! own a share of the connections and of the logical clients; client `i` uses connection
//! `i % conns`, like etcd's tool. Each worker records into its own HDR histograms; they are
//! merged once at the end.
//!
//! Beside the load, every member's Prometheus `/metrics` (on its plain-HTTP client URL) is
//! scraped just before the load starts, every second, and when it ends; the report's
//! `server` holds what they said over the run (memory, CPU, database size, fsync and commit
//! durations, proposals, bytes) and `client` what the etcdlat process itself used. A member
//! that cannot be scraped never fails a run.
//!
//! A scenario's scripted faults (`[[faults]]`: kill, pause, resume or restart a member, move
//! the leader, compact, defragment; [`etcdlat_core::fault`]) run at their times during the
//! measured run, on a thread of their own. Those that act on a member's process need a
//! driver built with [`DriverBuilder::local_cluster`], which gives it a handle on the
//! cluster's processes (the [`LocalCluster`] still owns and tears them down); a driver built
//! from endpoints runs move-leader, compact and defrag, and the network steps when the
//! scenario's `[network]` names a toxiproxy server in front of the cluster (each step becomes
//! toxics on its member's proxies, all removed when the run ends, stopped early or not); it
//! refuses the others before the run starts.

//!
//! # Types of other crates in this API
//!
//! [`connect_client`] returns an [`etcd_client::Client`], re-exported here as
//! [`etcd_client`] so that an embedder's calls use the version the driver was built with.
//! Errors keep their causes as [`std::error::Error::source`]: the socket's
//! [`std::io::Error`] (a TLS handshake's carries `rustls::Error` inside it), and in the
//! narrow enums beside [`DriverError`] rustls', http's, etcd-client's and tokio's own error
//! types, which an embedder reaches through `source()` without naming them.

mod affinity;
mod cluster;
mod disk;
mod error;
mod load;
mod machine;
mod transport;
mod watch;

pub use affinity::pin_current_thread;
pub use cluster::barrier::{Barrier, BarrierError, DEFAULT_BARRIER_TIMEOUT, LEASE_TTL};
pub use cluster::fault::FaultError;
pub use cluster::local::{LocalCluster, LocalClusterOptions, LocalMember, LocalTls};
pub use cluster::metrics::own_usage;
pub use cluster::target::TargetError;
pub use cluster::toxiproxy::ToxiproxyError;
pub use disk::{DiskError, DiskTest};
pub use error::{AnswerError, DriverError, EndpointError, NotReady};
pub use load::driver::{Driver, DriverBuilder};
pub use load::progress::{LiveInterval, LiveKind, Progress};
pub use load::worker::WorkerError;
pub use transport::{Credentials, DEFAULT_DIAL_TIMEOUT, Security, TlsConfigError, TlsOptions};

/// etcd's Rust client, the version [`connect_client`] returns a client of.
pub use etcd_client;

/// An etcd-client connected to the first of `endpoints` that answers, with `security`'s TLS
/// and a token for its credentials (renewed when the server stops accepting it): for the
/// setup and checks around a run on a secured cluster.
///
/// # Errors
/// As [`DriverBuilder::connect`]: unreadable TLS files, a failed TLS handshake, no answer.
pub async fn connect_client(
    endpoints: &[String],
    security: &Security,
    dial_timeout: std::time::Duration,
) -> Result<etcd_client::Client, DriverError> {
    let dialer = transport::Dialer::new(security, dial_timeout)?;
    transport::control_client_any(&dialer, endpoints).await
}
