//! Checks with a pass/fail answer held to etcd's own guidance: the disk a data dir would sit
//! on (`disk`: the WAL's write pattern and its fdatasync latency against etcd's 10 ms), and
//! `etcdctl check perf`'s loads and rules (`perf`). The figures and verdicts are plain data;
//! the driver measures, the binary prints.

pub mod disk;
pub mod perf;

pub use disk::{DiskReport, DiskVerdict};
pub use perf::{PerfLoad, RuleOutcome};
