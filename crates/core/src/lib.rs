//! etcdlat's core: the scenario model, workload generation, HDR recording and reports.
//!
//! Pure and synchronous (no tokio, no gRPC), so every piece can be tested and benchmarked
//! on its own. The driver (`etcdlat-driver`) runs scenarios against etcd and fills the
//! [`recorder::Recorder`]s this crate defines; the CLI renders the [`report::Report`]s.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use etcdlat_core::{OpKind, OpReport, Recorder, Scenario, Operation};
//!
//! let scenario = Scenario::from_toml_str(r#"
//!     [load]
//!     clients = 10
//!     total = 1000
//!     [op.put]
//!     val-size = 256
//! "#)?;
//! assert!(matches!(scenario.op, Some(Operation::Put(ref p)) if p.val_size == 256));
//!
//! let t0 = Instant::now();
//! let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
//! rec.record_ok(OpKind::Put, t0, t0, t0 + Duration::from_millis(2));
//! let (kind, put) = rec.finish().remove(0);
//! let report = OpReport::from_record(&put, Duration::from_secs(1), Duration::from_secs(1));
//! assert_eq!(kind, OpKind::Put);
//! assert_eq!(report.latency.quantile(0.5), Duration::from_millis(2));
//! # Ok::<(), etcdlat_core::ScenarioError>(())
//! ```

pub mod audit;
pub mod comparison;
pub mod fault;
pub mod invariant;
pub mod merge;
pub mod metrics;
pub mod op;
pub mod recorder;
pub mod report;
pub mod scenario;
pub mod schedule;
pub mod shard;
pub mod step;
pub mod threshold;
pub mod unit;
pub mod workload;

pub use comparison::{Comparison, compare};
pub use fault::{FaultAction, FaultReport, FaultStep, MemberRef};
pub use merge::{MergeError, merge};
pub use metrics::{ClientBusy, ClientUsage, MemberMetrics, ResourceSample, ResourceSeries};
pub use op::{ErrorCode, OpKind};
pub use recorder::Recorder;
pub use report::{
    AlarmReport, Distribution, EmulatorUsage, HashKvCheck, Interval, LeaderChange, LinkReport,
    MemberReport, NetworkReport, OpReport, PacingReport, Params, Report, ReportSet, Row, ShardInfo,
    StepReport, Study, TargetInfo, WatchAccounting,
};
pub use scenario::{
    Checks, Cluster, Compaction, CompactionStyle, Etcd, EtcdVersion, LinkSettings, Load,
    MatrixCell, Network, ReportOptions, Scenario, ScenarioError, SeriesInterval, Setup, Targeting,
};
pub use schedule::{Arrivals, Pacer, Rate, Schedule, Stage};
pub use shard::{Shard, ShardError};
pub use step::{ClientStep, StepPlan};
pub use threshold::{Threshold, ThresholdError, Violation};
pub use workload::{
    Consistency, DeleteOp, Isolation, LeaseOp, Operation, PutOp, RangeOp, StmLocker, StmOp,
    TxnMixedOp, TxnPutOp, WatchGetOp, WatchLatencyOp, WatchOp, Weighted, escape_key, key_bytes,
};
