//! `etcdlat check`'s flags: `check disk` (fio's job of etcd's guidance, with fio's names for
//! its sizes) and `check perf` (etcdctl check perf's flags and defaults).

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `etcdlat check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// What to check.
    #[command(subcommand)]
    pub command: CheckCommand,
}

/// The checks.
#[derive(Debug, Subcommand)]
pub enum CheckCommand {
    /// Time the WAL's write pattern on the filesystem of DIR, as etcd's guidance does with
    /// fio (--rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=2300): fdatasync
    /// p50/p99/p99.9 against etcd's 10 ms for p99, and sequential write bandwidth. Exits 1
    /// when the p99 is over 10 ms. The test files are removed, even on Ctrl-C.
    Disk(CheckDiskArgs),
    /// etcdctl check perf: puts at one of its loads (s, m, l, xl) for 60 s, held to its rules
    /// (no errors, throughput over 90% of the load's rate, slowest request within 500 ms,
    /// standard deviation within 100 ms); the report is etcdlat's, each rule a line with its
    /// figure. Exits 1 when a rule fails.
    Perf(CheckPerfArgs),
}

/// `etcdlat check disk`.
#[derive(Debug, Args)]
pub struct CheckDiskArgs {
    /// The directory whose filesystem is tested, where the data dir would go [default: the
    /// system's temp dir].
    pub dir: Option<PathBuf>,

    /// Bytes the small writes add up to (fio's --size).
    #[arg(long, default_value = "22MiB", value_name = "SIZE")]
    pub size: String,

    /// Bytes of each small write (fio's --bs).
    #[arg(long, default_value = "2300", value_name = "SIZE")]
    pub bs: String,

    /// Bytes the bandwidth test writes, in 64 KiB writes, before its one fdatasync.
    #[arg(long, default_value = "64MiB", value_name = "SIZE")]
    pub bandwidth_size: String,
}

/// `etcdlat check perf`.
#[derive(Debug, Args)]
pub struct CheckPerfArgs {
    /// The workload model: s (small), m (medium), l (large), xl (xLarge).
    #[arg(long, default_value = "s")]
    pub load: String,

    /// The prefix for writing the check's keys; it must hold none when the check starts.
    #[arg(long, default_value = etcdlat_core::check::perf::DEFAULT_PREFIX)]
    pub prefix: String,

    /// Compact storage with the last revision after the check is finished.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub auto_compact: bool,

    /// Defragment storage after the check is finished.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub auto_defrag: bool,

    /// How long the puts go on [default: etcdctl's 60s]; the rules are held the same.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
}
