//! Each command's own flags (`put`, `range`, the watch, lease and STM workloads, `run`,
//! `merge`, `compare`), beside the global ones in the parent module.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Args;

/// Load flags shared by `put` and `range`, beyond etcd's.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Maximum requests per second (0 is no limit).
    #[arg(long, default_value_t = 0)]
    pub rate: u64,

    /// Total number of requests.
    #[arg(long, default_value_t = 10_000)]
    pub total: u64,

    /// Stop after this long instead of (or before reaching) --total, e.g. "30s".
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,

    /// Run this long before measuring, e.g. "5s".
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,

    /// Make --rate an open-loop arrival rate: requests arrive on schedule whatever etcd does,
    /// and latency counts from the intended arrival (no coordinated omission).
    #[arg(long)]
    pub open_loop: bool,

    /// Open-loop arrivals as a Poisson process instead of evenly spaced.
    #[arg(long, requires = "open_loop")]
    pub poisson: bool,

    /// Run in client steps: how many clients send, one step after another on the same
    /// cluster, keys continuing (dbtester's connection_client_numbers), e.g. "1,10,100".
    /// --total is split evenly over the steps, or with --duration (and no --total) the time;
    /// --clients defaults to the largest step. Each step is reported on its own.
    #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
    pub client_steps: Option<Vec<u32>>,
}

/// `etcdlat put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// Key size of put request.
    #[arg(long, default_value_t = 8)]
    pub key_size: u64,

    /// Value size of put request (bytes, or with a unit: 1MiB).
    #[arg(long, default_value = "8")]
    pub val_size: String,

    /// Maximum possible keys.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub key_space_size: i64,

    /// Use sequential keys.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub sequential_keys: bool,

    /// First key index of sequential keys.
    #[arg(long, default_value_t = 0)]
    pub key_starts: u64,

    /// Bytes put before every key (any bytes; `\xNN` also names byte NN).
    #[arg(long, default_value = "")]
    pub prefix: OsString,

    /// Seed of the value and of random keys.
    #[arg(long)]
    pub seed: Option<u64>,

    /// Zipf-distributed keys with this exponent (instead of uniform).
    #[arg(long)]
    pub zipf: Option<f64>,

    /// Interval to compact the database, e.g. "5m" (0 = never).
    #[arg(long, default_value = "0", value_name = "DURATION")]
    pub compact_interval: String,

    /// Delta between current revision and compact revision.
    #[arg(long, default_value_t = 1000)]
    pub compact_index_delta: u64,

    /// Compare HashKV across all members at the end; a mismatch exits 1.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub check_hashkv: bool,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub load: LoadArgs,
}

/// `etcdlat txn-put`.
#[derive(Debug, Args)]
pub struct TxnPutArgs {
    /// Key size of txn put.
    #[arg(long, default_value_t = 8)]
    pub key_size: u64,

    /// Value size of txn put.
    #[arg(long, default_value = "8")]
    pub val_size: String,

    /// Number of puts per txn.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub txn_ops: i64,

    /// Maximum possible keys.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub key_space_size: i64,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub load: LoadArgs,
}

/// `etcdlat txn-mixed key [end-range]`.
#[derive(Debug, Args)]
pub struct TxnMixedArgs {
    /// Start of the reads' range and prefix of the written keys (default: every key).
    #[arg(id = "txn_key", value_name = "KEY")]
    pub key: Option<OsString>,

    /// End of the reads' range.
    #[arg(id = "txn_end", value_name = "END")]
    pub end: Option<OsString>,

    /// Key size of mixed txn.
    #[arg(long, default_value_t = 8)]
    pub key_size: u64,

    /// Value size of mixed txn.
    #[arg(long, default_value = "8")]
    pub val_size: String,

    /// Read operation range end key (default: every key from KEY).
    #[arg(long)]
    pub end_key: Option<OsString>,

    /// Read operation range result limit.
    #[arg(long, default_value_t = 1000)]
    pub limit: u64,

    /// Maximum possible keys.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub key_space_size: i64,

    /// Linearizable(l) or Serializable(s).
    #[arg(long, default_value = "l")]
    pub consistency: String,

    /// Read/write ops ratio.
    #[arg(long, default_value_t = 1.0)]
    pub rw_ratio: f64,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub load: LoadArgs,
}

/// `etcdlat watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Total watch streams.
    #[arg(long, default_value_t = 10)]
    pub streams: u64,

    /// Total watchers per stream.
    #[arg(long, default_value_t = 100)]
    pub watch_per_stream: u64,

    /// Total number of keys to be watched.
    #[arg(long, default_value_t = 1)]
    pub watched_key_total: u64,

    /// Number of keys to put per second (0 = unlimited).
    #[arg(long, default_value_t = 0)]
    pub put_rate: u64,

    /// Number of put requests.
    #[arg(long, default_value_t = 1000)]
    pub put_total: u64,

    /// Key size of watch request.
    #[arg(long, default_value_t = 32)]
    pub key_size: u64,

    /// Maximum possible keys.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub key_space_size: i64,

    /// Use sequential keys.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub sequential_keys: bool,
}

/// `etcdlat watch-get`.
#[derive(Debug, Args)]
pub struct WatchGetArgs {
    /// Total number of watchers.
    #[arg(long, default_value_t = 10_000)]
    pub watchers: u64,

    /// Total number of watcher streams.
    #[arg(long, default_value_t = 1)]
    pub streams: u64,

    /// Number of events per watcher.
    #[arg(long, default_value_t = 8)]
    pub events: u64,
}

/// `etcdlat watch-latency`.
#[derive(Debug, Args)]
pub struct WatchLatencyArgs {
    /// Total watch streams.
    #[arg(long, default_value_t = 10)]
    pub streams: u64,

    /// Total watchers per stream.
    #[arg(long, default_value_t = 10)]
    pub watchers_per_stream: u64,

    /// Number of keys to put per second.
    #[arg(long, default_value_t = 100)]
    pub put_rate: u64,

    /// Number of put requests.
    #[arg(long, default_value_t = 10_000)]
    pub put_total: u64,

    /// Get the previous key-value with every event.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub prevkv: bool,

    /// Key size of watch response.
    #[arg(long, default_value_t = 32)]
    pub key_size: u64,

    /// Value size of watch response.
    #[arg(long, default_value = "32")]
    pub val_size: String,
}

/// `etcdlat lease-keepalive`.
#[derive(Debug, Args)]
pub struct LeaseKeepaliveArgs {
    /// Time to live of each client's lease, seconds.
    #[arg(long, default_value_t = 100)]
    pub ttl: u64,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub load: LoadArgs,
}

/// `etcdlat stm`.
#[derive(Debug, Args)]
pub struct StmArgs {
    /// Read Committed (c), Repeatable Reads (r), Serializable (s), or Snapshot (ss).
    #[arg(long, default_value = "r")]
    pub isolation: String,

    /// Total unique keys accessible by the benchmark.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub keys: i64,

    /// Number of keys to access per transaction.
    #[arg(long, default_value_t = 1, allow_negative_numbers = true)]
    pub keys_per_txn: i64,

    /// Percentage of keys to overwrite per transaction.
    #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
    pub txn_wr_percent: i64,

    /// Wrap STM transaction with a custom locking mechanism (stm, lock-client, lock-rpc).
    #[arg(long, default_value = "stm")]
    pub stm_locker: String,

    /// Value size of each STM put request.
    #[arg(long, default_value = "8")]
    pub val_size: String,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub load: LoadArgs,
}

/// `etcdlat range key [end-range]`.
#[derive(Debug, Args)]
pub struct RangeArgs {
    /// The key, or the start of the range: any bytes (`range $'\001' $'\377'`); `\xNN` also
    /// names byte NN. With --prefix it may be left out: every key in the store.
    #[arg(id = "range_key", value_name = "KEY", required_unless_present = "prefix")]
    pub key: Option<OsString>,

    /// End of the range (exclusive), any bytes.
    #[arg(id = "range_end", value_name = "END")]
    pub end: Option<OsString>,

    /// Linearizable(l) or Serializable(s).
    #[arg(long, default_value = "l")]
    pub consistency: String,

    /// Maximum number of results to return from range request (0 is no limit).
    #[arg(long, default_value_t = 0)]
    pub limit: u64,

    /// Only returns the count of keys.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub count_only: bool,

    /// Only returns keys, without values.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub keys_only: bool,

    /// Read every key starting with KEY (without KEY: every key in the store).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub prefix: bool,

    /// Use RangeStream instead of unary Range (etcd 3.7+): the answer comes as a stream of
    /// messages; reported are the time to the last message (range) and to the first
    /// (range-first), and the keys and value bytes received.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub stream: bool,

    /// Read in pages of --page-size keys, every page pinned to the first page's revision
    /// (how Kubernetes' watch cache lists), all the pages timed as one request.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub paginate: bool,

    /// Keys per page of --paginate (etcd's tool: 10,000, Kubernetes' watch cache's).
    #[arg(long, value_name = "N", requires = "paginate")]
    pub page_size: Option<u64>,

    /// Read one key per request, in order, of the keys `put --prefix KEY --sequential-keys`
    /// wrote (from --key-starts, --key-space-size of them, --key-size long).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub sequential_keys: bool,

    /// First key index of sequential keys.
    #[arg(long)]
    pub key_starts: Option<u64>,

    /// Keys to read one per request (default with --sequential-keys: --total).
    #[arg(long)]
    pub key_space_size: Option<u64>,

    /// Key size of the keys read one per request (as put's --key-size) [default: 8].
    #[arg(long)]
    pub key_size: Option<u64>,

    #[command(flatten)]
    #[allow(missing_docs)]
    pub load: LoadArgs,
}

/// `etcdlat cluster`.
#[derive(Debug, Args)]
pub struct ClusterArgs {}

/// `etcdlat mvcc ...`: etcd benchmark's `mvcc`, taken only to be refused with the reason.
#[derive(Debug, Args)]
pub struct MvccArgs {
    /// Whatever follows (`put --total 10000`).
    #[arg(id = "mvcc_args", trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<OsString>,
}

/// `etcdlat merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// JSON reports (`--json`) of the shards, each with the same runs in the same order.
    #[arg(id = "merge_reports", required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
}

/// `etcdlat compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// JSON reports (`--json`). When their runs are repeats of matrix cells (`--repeat N`),
    /// every cell is compared with the first by Welch's t-test on the repeats' values
    /// (two-sided, level 0.05; "not enough repeats" below 3), one report being enough;
    /// otherwise, with two, the first is the base the second is compared against, run by
    /// run, no change marked (one run: no interval); with more, their runs are only put
    /// side by side.
    #[arg(id = "compare_reports", required = true, num_args = 1.., value_name = "REPORT")]
    pub reports: Vec<PathBuf>,

    /// The level of Welch's t-test on repeats: a change is marked when its p-value is
    /// below it. Default 0.05.
    #[arg(long, value_name = "P")]
    pub level: Option<f64>,
}

/// `etcdlat run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario files, or names of shipped scenarios (`put-1mb`, `scenarios/put-1mb.toml`;
    /// `etcdlat scenarios` lists them).
    #[arg(value_name = "SCENARIO")]
    pub scenarios: Vec<String>,

    /// Override the scenarios' total.
    #[arg(long)]
    pub total: Option<u64>,

    /// Override the scenarios' duration, e.g. "30s".
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,

    /// Override the scenarios' rate (requests per second; 0 = unlimited).
    #[arg(long)]
    pub rate: Option<u64>,

    /// Override the scenarios' warm-up, e.g. "5s".
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,

    /// Run the scenarios as open loops at their rate (see `put --open-loop`).
    #[arg(long)]
    pub open_loop: bool,

    /// Multiply every total and duration of the scenarios by F, so a large published test runs
    /// in minutes (`--total`, `--duration`, `--warmup` are taken as given).
    #[arg(long, value_name = "F")]
    pub scale: Option<f64>,

    /// Set a scenario key before the run, as if the file said it: a dotted path of tables
    /// and a TOML value, e.g. `--set kubernetes.nodes=500`, `--set load.duration='"1m"'`
    /// (a bare word is a string). Repeatable; the other flags override it.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,

    /// Run each scenario (each cell of its matrix) N times, as `[matrix] repeat = N`: each
    /// figure is then reported as the mean ± its 95% confidence interval (Student's t) with
    /// the median and each repeat's value, the cells run in rotation (A B A B ...) each on a
    /// fresh cluster, and the cells are compared by Welch's t-test on their repeats.
    #[arg(long, value_name = "N")]
    pub repeat: Option<u32>,

    /// Find the largest `[kubernetes] nodes` that meets Kubernetes' SLOs: the scenario's
    /// own node count first, doubled while it meets them and halved while it misses them
    /// (one run each), then bisected to within a tenth, and the two counts either side of
    /// the boundary run again (--find-max-repeats); the answer is a bracket: the largest
    /// count that met them in every run, the smallest that missed them, what bound it.
    /// Every probe a whole run, its report written.
    #[arg(long)]
    pub find_max: bool,

    /// The most runs --find-max makes. Default 20.
    #[arg(long, value_name = "N", requires = "find_max")]
    pub find_max_runs: Option<u32>,

    /// Runs --find-max gives each of the two counts either side of the boundary, each the
    /// full run. Default 3.
    #[arg(long, value_name = "N", requires = "find_max")]
    pub find_max_repeats: Option<u32>,

    /// Run the I-th of N equal parts of each scenario (I counts from 0, like a Kubernetes
    /// Indexed Job's completion index): its share of clients, conns, rate and total, and
    /// its own part of the key space, so that N shards together run the whole scenario
    /// against one cluster. Merge their --json reports with `etcdlat merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// Start measuring at this time, RFC 3339 (2025-06-01T12:00:00Z or with an offset,
    /// +02:00), after connecting and any setup; for shards on machines with synchronized
    /// clocks.
    #[arg(long, value_name = "TIME", conflicts_with = "barrier")]
    pub start_at: Option<String>,

    /// Start measuring when all N shards are ready: each registers a key under PREFIX on
    /// the cluster under test (with a lease) and waits until all N are there; the keys are
    /// removed as soon as all have started. Use a prefix of its own per run.
    #[arg(long, value_name = "PREFIX", requires = "shard")]
    pub barrier: Option<String>,

    /// How long --barrier waits for every shard before failing. Default 5m.
    #[arg(long, value_name = "DURATION", requires = "barrier")]
    pub barrier_timeout: Option<String>,
}
