//! etcdlat's core: the scenario model, workload generation, HDR recording and the report
//! data.
//!
//! Pure and synchronous (no tokio, no gRPC), so every piece can be tested and benchmarked
//! on its own. The driver (`etcdlat-driver`) runs [`Scenario`]s against etcd and returns
//! [`Report`]s; `etcdlat-render` writes them out. What an embedder reads is here: the
//! scenario ([`scenario`], [`workload`]'s operations), the report ([`report`], [`metrics`],
//! [`audit`], [`fault`]) and the tools over reports ([`merge()`], [`compare()`],
//! [`threshold`]). Items marked `#[doc(hidden)]` are the driver's machinery, public only so
//! that the driver can reach them, and not part of the API.
//!
//! ```
//! use std::time::Duration;
//! use etcdlat_core::{Operation, Scenario, Threshold};
//!
//! let scenario = Scenario::from_toml_str(r#"
//!     [load]
//!     clients = 10
//!     total = 1000
//!     [op.put]
//!     val-size = 256
//! "#)?;
//! assert!(matches!(scenario.op, Some(Operation::Put(ref p)) if p.val_size == 256));
//! assert_eq!(scenario.load.clients, 10);
//!
//! // A run's report is checked against thresholds as `etcdlat run --threshold` checks it.
//! let p99: Threshold = "put.p99 < 20ms".parse()?;
//! # let _ = (p99, Duration::ZERO);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod audit;
pub mod check;
pub mod comparison;
pub mod fault;
pub mod invariant;
pub mod merge;
pub mod metrics;
pub mod op;
#[doc(hidden)] // internal: the driver's workers record into it; not part of the API
pub mod recorder;
pub mod repeat;
pub mod report;
pub mod scenario;
pub mod schedule;
pub mod shard;
pub mod step;
pub mod threshold;
pub mod unit;
pub mod workload;

/// HdrHistogram, the histograms a [`Distribution`] wraps ([`Distribution::histogram`]),
/// re-exported so that an embedder reads them with the version etcdlat recorded them with.
pub use hdrhistogram;
/// The TOML crate: a matrix's axes ([`Scenario::matrix`], [`MatrixCell::axes`]) are TOML
/// tables, as the scenario file writes them.
pub use toml;

pub use comparison::{Comparison, compare};
pub use fault::{FaultAction, FaultReport, FaultStep, MemberRef};
pub use merge::{MergeError, merge};
pub use metrics::{ClientBusy, ClientUsage, MemberMetrics, ResourceSample, ResourceSeries};
pub use op::{ErrorCode, OpKind};
#[doc(hidden)]
pub use recorder::Recorder;
pub use report::{
    AlarmReport, Distribution, EmulatorUsage, HashKvCheck, Interval, LeaderChange, LinkReport,
    Machine, MemberReport, NetworkReport, OpReport, PacingReport, Params, Report, ReportSet, Row,
    ShardInfo, StepReport, Study, TargetInfo, WatchAccounting,
};
pub use scenario::{
    Checks, Cluster, Compaction, CompactionStyle, Etcd, EtcdVersion, LinkSettings, Load,
    MatrixCell, Network, ReportOptions, Scenario, ScenarioError, SeriesInterval, Setup, Targeting,
};
#[doc(hidden)]
pub use schedule::Pacer;
pub use schedule::{Arrivals, Rate, Schedule, Stage};
pub use shard::{Shard, ShardError};
pub use step::ClientStep;
#[doc(hidden)]
pub use step::StepPlan;
pub use threshold::{Threshold, ThresholdError, Violation};
pub use workload::{
    Consistency, DeleteOp, Isolation, LeaseOp, Operation, PutOp, RangeOp, StmLocker, StmOp,
    TxnMixedOp, TxnPutOp, WatchGetOp, WatchLatencyOp, WatchOp, Weighted, escape_key, key_bytes,
};
