//! Raw command-line flags, as clap reads them. The `plan` module turns them into validated
//! scenarios and settings; nothing else looks at them.
//!
//! The global flags and the `put` and `range` commands keep the names and defaults of etcd's
//! `benchmark` tool, so its command lines work unchanged. Booleans accept `--flag`,
//! `--flag=true` and `--flag=false`, as Go's flag parsing does.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

mod check;
mod commands;
pub use check::*;
pub use commands::*;

/// A load generator for etcd: put, range and scenario runs with truthful latency.
#[derive(Debug, Parser)]
#[command(name = "etcdlat", version, max_term_width = 100, after_help = EXAMPLES)]
pub struct Cli {
    /// Global flags (etcd benchmark's, plus etcdlat's output flags).
    #[command(flatten)]
    pub global: Global,
    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command takes; they may come before or after the command name.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global flags (before or after the command)")]
pub struct Global {
    /// gRPC endpoints, comma-separated (host:port or http://host:port). `put` and `range`
    /// default to 127.0.0.1:2379 as etcd's tool does; `run` starts a throwaway local etcd
    /// unless the scenario or this flag names endpoints.
    #[arg(long, global = true, value_delimiter = ',')]
    pub endpoints: Option<Vec<String>>,

    /// Total number of gRPC connections [default: 1, or the scenario's].
    #[arg(long, global = true)]
    pub conns: Option<u32>,

    /// Total number of logical clients [default: 1, or the scenario's].
    #[arg(long, global = true)]
    pub clients: Option<u32>,

    /// Use full floating point precision in the text report.
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub precise: bool,

    /// Print the samples of every second (etcd's CSV) in the text report.
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub sample: bool,

    /// Dial timeout for each connection; 0 means etcdlat's default (5s).
    #[arg(long, global = true, value_name = "DURATION")]
    pub dial_timeout: Option<String>,

    /// Refresh the endpoints from the cluster's member list this often while running, e.g.
    /// "30s" (etcd benchmark's --auto-sync-interval): connections lost to a member that left
    /// are dialled again to the members the list then names; 0 never.
    #[arg(long, global = true, value_name = "DURATION")]
    pub auto_sync_interval: Option<String>,

    /// Serve Prometheus metrics of the run at http://HOST:PORT/metrics while etcdlat runs
    /// (requests by operation and gRPC code, latency histograms, requests in flight, target
    /// and achieved rates, the client's CPU and memory), until the last report is written.
    #[arg(long, global = true, value_name = "HOST:PORT")]
    pub metrics_addr: Option<String>,

    /// Connect only to the leader (the same as --target=leader).
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub target_leader: bool,

    /// Where the load goes: endpoints (as given), leader, followers, follower:N, member:NAME
    /// or all. Overrides the scenarios' target.
    #[arg(long, global = true, value_name = "TARGET")]
    pub target: Option<String>,

    /// etcd user, as `user[:password]`; without a password it is read from ETCDLAT_PASSWORD,
    /// else asked for on the terminal.
    #[arg(long, global = true)]
    pub user: Option<String>,

    /// PEM bundle of the authorities that sign the servers' certificates; enables TLS for
    /// endpoints given without a scheme.
    #[arg(long, global = true)]
    pub cacert: Option<PathBuf>,

    /// PEM client certificate, for servers that require one (with --key).
    #[arg(long, global = true)]
    pub cert: Option<PathBuf>,

    /// PEM private key of --cert.
    #[arg(long, global = true)]
    pub key: Option<PathBuf>,

    /// Use TLS without verifying the server's certificate (encrypted, not authenticated).
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false")]
    pub insecure_skip_tls_verify: bool,

    /// Start a throwaway local etcd (from ETCD_BIN or `etcd` on PATH, or --etcd) instead of
    /// using --endpoints.
    #[arg(long, global = true)]
    pub local: bool,

    /// Members of the throwaway local cluster; alone, it starts one [default: 1, or the
    /// scenario's].
    #[arg(long, global = true, value_name = "N")]
    pub members: Option<u32>,

    /// The etcd the throwaway local cluster runs: "system" (or "debian": ETCD_BIN, else
    /// `etcd` on PATH), a version like "v3.5.21" (built into ${ETCD_CACHE:-~/.cache/etcdlat/etcd}),
    /// or a path to an etcd binary; alone, it starts one [default: the scenario's, or
    /// "system"].
    #[arg(long, global = true, value_name = "VERSION|PATH")]
    pub etcd: Option<String>,

    /// Backend quota of the throwaway local cluster's members (etcd's
    /// --quota-backend-bytes), e.g. "16MiB": past it etcd raises NOSPACE and refuses writes
    /// [default: the scenario's, or etcd's 2 GiB].
    #[arg(long, global = true, value_name = "SIZE")]
    pub quota_backend_bytes: Option<String>,

    /// Emulated network of the throwaway local cluster: one-way latency between two members
    /// (of one zone, with --zones), e.g. "1ms". Also for `run` and `cluster`.
    #[arg(
        long,
        global = true,
        value_name = "DURATION",
        help_heading = "Emulated network (local clusters)"
    )]
    pub peer_latency: Option<String>,

    /// One-way latency between the client and each member (of its zone, with --zones).
    #[arg(
        long,
        global = true,
        value_name = "DURATION",
        help_heading = "Emulated network (local clusters)"
    )]
    pub client_latency: Option<String>,

    /// How much every emulated link's delay varies either way (bytes never reorder).
    #[arg(
        long,
        global = true,
        value_name = "DURATION",
        help_heading = "Emulated network (local clusters)"
    )]
    pub jitter: Option<String>,

    /// Line rate of each direction of each member-to-member link, e.g. "100MB/s", "1Gbit/s".
    #[arg(
        long,
        global = true,
        value_name = "RATE",
        help_heading = "Emulated network (local clusters)"
    )]
    pub bandwidth: Option<String>,

    /// Line rate of each direction of each client-to-member link.
    #[arg(
        long,
        global = true,
        value_name = "RATE",
        help_heading = "Emulated network (local clusters)"
    )]
    pub client_bandwidth: Option<String>,

    /// Zones, comma-separated; members are placed in them in order, round robin, and the
    /// client sits in the first (or --client-zone).
    #[arg(
        long,
        global = true,
        value_delimiter = ',',
        value_name = "ZONES",
        help_heading = "Emulated network (local clusters)"
    )]
    pub zones: Option<Vec<String>>,

    /// The client's zone (default the first of --zones).
    #[arg(
        long,
        global = true,
        value_name = "ZONE",
        help_heading = "Emulated network (local clusters)"
    )]
    pub client_zone: Option<String>,

    /// One-way latency between two zones, e.g. "1.5ms".
    #[arg(
        long,
        global = true,
        value_name = "DURATION",
        help_heading = "Emulated network (local clusters)"
    )]
    pub zone_latency: Option<String>,

    /// Pin the worker threads to these CPUs, round robin (e.g. "2,3"), and etcdlat's other
    /// threads to all of them, to keep the client off the cores etcd uses on a shared
    /// machine (a local cluster and the emulated network stay on the process's CPUs unless
    /// --etcd-cpus or --network-cpus place them). Defaults the worker count to their number.
    #[arg(long, global = true, value_delimiter = ',', value_name = "CPUS")]
    pub pin_cpus: Option<Vec<usize>>,

    /// Run the throwaway local cluster's members on these CPUs only (e.g. "0"), so that the
    /// client (--pin-cpus) and the emulated network (--network-cpus) stay off etcd's cores.
    #[arg(long, global = true, value_delimiter = ',', value_name = "CPUS")]
    pub etcd_cpus: Option<Vec<usize>>,

    /// Run the emulated network's threads on these CPUs only (e.g. "1"), at most one thread
    /// per CPU: on a machine the load saturates, its CPU otherwise comes out of etcd's.
    #[arg(long, global = true, value_delimiter = ',', value_name = "CPUS")]
    pub network_cpus: Option<Vec<usize>>,

    /// Worker threads (default: the number of CPUs, at most one per connection).
    #[arg(long, global = true, value_name = "N")]
    pub workers: Option<usize>,

    /// Write the report as JSON to FILE ("-" for standard output, which then gets no text).
    #[arg(long, global = true, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Write the report as a markdown table to FILE.
    #[arg(long, global = true, value_name = "FILE")]
    pub markdown: Option<PathBuf>,

    /// Write the per-interval time series as CSV to FILE.
    #[arg(long, global = true, value_name = "FILE")]
    pub csv: Option<PathBuf>,

    /// Write the report as one self-contained HTML page, with tables and plots, to FILE
    /// (with compare, every report's runs side by side and overlaid).
    #[arg(long, global = true, value_name = "FILE")]
    pub html: Option<PathBuf>,

    /// Write the latency percentiles as etcd benchmark's perfdash JSON (version v1,
    /// dataItems of Perc50/Perc90/Perc99 in ms per operation) to FILE.
    #[arg(long, global = true, value_name = "FILE")]
    pub perfdash: Option<PathBuf>,

    /// Write the perfdash JSON (as --perfdash) to $ARTIFACTS, or ./_artifacts, named
    /// `EtcdAPI_benchmark_<command>_<RFC 3339 time>.json`, as etcd benchmark's
    /// --report-perfdash names it.
    #[arg(long, global = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value = "false", conflicts_with = "perfdash")]
    pub report_perfdash: bool,

    /// Stream the run as JSON lines to FILE ("-" for standard output): one line per interval
    /// of the time series as it ends (per operation: count, errors, throughput, p50, p90,
    /// p99, max), then the run's summary.
    #[arg(long, global = true, value_name = "FILE")]
    pub jsonl: Option<PathBuf>,

    /// Write SVG plots into DIR (created if missing): per run N (from 1) and operation kind OP,
    /// N-OP-latency.svg (percentiles per interval) and N-OP-spectrum.svg (latency and service
    /// time by percentile), N-throughput.svg, and for client steps N-steps.svg (throughput and
    /// p99 by clients); with several runs (a matrix, or compare's and merge's reports), the
    /// plots that overlay them, a line per run: overlay-throughput.svg, overlay-p99.svg, and
    /// when sampled, the members' CPU, memory and etcd's own figures (overlay-SLUG.svg).
    #[arg(long, global = true, value_name = "DIR")]
    pub plots: Option<PathBuf>,

    /// Draw the runs of a matrix over two axes as heatmaps: a panel per figure (read and
    /// write throughput for runs that read and write, else the operation's; p99 latency),
    /// each cell the median of its repetitions; all in FILE.svg, or one SVG per figure in
    /// DIR (created if missing). With compare: the change from BASE to NEW, in percent. A
    /// run of anything but a matrix over two axes is refused before it starts.
    #[arg(long, global = true, value_name = "FILE.svg|DIR")]
    pub heatmap: Option<PathBuf>,

    /// No text report and no progress.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Fail (exit 1) unless every report meets EXPR, like 'p99 < "20ms"', 'errors == 0' or
    /// 'put.error_rate < 0.001' (metrics p50 p90 p99 p99_9 p99_99 max mean stddev error_rate errors
    /// throughput ok; repeatable; added to the scenarios' own `thresholds`).
    #[arg(long, global = true, value_name = "EXPR")]
    pub threshold: Vec<String>,

    /// Audit the run's history (put, delete, range, txn-put, txn-mixed): read every written
    /// key back after the run; a lost write, a write out of real-time order, a duplicated
    /// revision or a stale linearizable read exits 1. Measures serializable reads'
    /// staleness. See docs/audit.md.
    #[arg(long, global = true, help_heading = "Checks")]
    pub audit: bool,

    /// The most entries --audit records: one per request, one per key of a txn-put (56 bytes
    /// each; implies --audit) [default: 1000000, or the scenario's].
    #[arg(long, global = true, value_name = "N", help_heading = "Checks")]
    pub audit_limit: Option<u64>,
}

/// The global flags `etcdlat cluster` takes (clap's ids): where its throwaway cluster runs.
/// Its help lists only these, and it refuses the others by name.
const CLUSTER_FLAGS: &[&str] = &[
    "local",
    "members",
    "etcd",
    "peer_latency",
    "client_latency",
    "jitter",
    "bandwidth",
    "client_bandwidth",
    "zones",
    "client_zone",
    "zone_latency",
];

impl Cli {
    /// The command line `args` (the program's name first), parsed. Like clap's
    /// `try_parse_from`, but the global flags a command does not take are left out of its
    /// help and refused.
    ///
    /// # Errors
    /// clap's error, for bad flags and for `--help` and `--version`.
    pub fn parse_args<I, T>(args: I) -> Result<Self, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let mut command = Self::command();
        // Built first, so that the global flags have been copied into every subcommand.
        command.build();
        let mut command = command.mut_subcommand("cluster", |c| {
            c.mut_args(|a| {
                if a.is_global_set() && !CLUSTER_FLAGS.contains(&a.get_id().as_str()) {
                    a.hide(true)
                } else {
                    a
                }
            })
        });
        let mut matches = command.try_get_matches_from_mut(args)?;
        if let Some(("cluster", sub)) = matches.subcommand() {
            let given = sub.ids().find(|id| {
                !CLUSTER_FLAGS.contains(&id.as_str())
                    && sub.value_source(id.as_str()) == Some(ValueSource::CommandLine)
            });
            if let Some(id) = given {
                let long = command
                    .get_arguments()
                    .find(|a| a.get_id() == id)
                    .and_then(|a| a.get_long())
                    .unwrap_or(id.as_str());
                return Err(command.error(
                    clap::error::ErrorKind::ArgumentConflict,
                    format!(
                        "--{long} does not apply to cluster, which starts a throwaway local \
                         cluster (it takes --members, --etcd and the emulated network's flags)"
                    ),
                ));
            }
        }
        Self::from_arg_matches_mut(&mut matches)
    }
}

/// Shown at the end of `etcdlat --help`.
const EXAMPLES: &str = "Examples:
  etcdlat --local put --total 10000 --val-size 256          a throwaway etcd, etcd benchmark's put
  etcdlat --endpoints=127.0.0.1:2379 --conns=100 --clients=1000 range foo --consistency s
  etcdlat run etcd-perf-guide --scale 0.1 --markdown table.md
  etcdlat --members 3 --zones a,b,c --zone-latency 1.5ms put   three members in three zones
  etcdlat scenarios                                         the shipped scenarios";

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios from TOML files or shipped scenarios (see `etcdlat scenarios`).
    Run(RunArgs),
    /// Benchmark put (etcd benchmark's `put`).
    Put(PutArgs),
    /// Benchmark range (etcd benchmark's `range key [end-range]`).
    Range(RangeArgs),
    /// Benchmark transactions of puts (etcd benchmark's `txn-put`).
    TxnPut(TxnPutArgs),
    /// Benchmark a mix of single-op read and write transactions (etcd benchmark's `txn-mixed`).
    TxnMixed(TxnMixedArgs),
    /// Benchmark watch creation and event delivery (etcd benchmark's `watch`). Unlike etcd's
    /// tool, whose "events received" latency is about 0 by construction, etcdlat measures each
    /// event from the moment its put was sent, and checks that every expected event arrived
    /// exactly once and in order.
    Watch(WatchArgs),
    /// Benchmark serializable gets while many unsynced watchers catch up (etcd benchmark's
    /// `watch-get`).
    WatchGet(WatchGetArgs),
    /// Benchmark put-to-event latency (etcd benchmark's `watch-latency`). Events are matched
    /// to puts by revision and measured from the put's send and from its acknowledgement;
    /// an event that arrives before the acknowledgement is counted as such, never clamped to 0.
    WatchLatency(WatchLatencyArgs),
    /// Benchmark lease keep-alive round trips (etcd benchmark's `lease-keepalive`).
    LeaseKeepalive(LeaseKeepaliveArgs),
    /// Benchmark STM transactions (etcd benchmark's `stm`), retries included in latency.
    Stm(StmArgs),
    /// List the shipped scenarios.
    Scenarios,
    /// Start a throwaway local etcd cluster, print its endpoints, and keep it until Ctrl-C.
    Cluster(ClusterArgs),
    /// Merge the JSON reports of shards of one run (machines started together) into one:
    /// histograms are added and counts summed, so its percentiles are those of every sample.
    Merge(MergeArgs),
    /// Compare JSON reports: every run side by side in a markdown table of dbtester's
    /// figures, a column per run; and, for two reports, run by run, a table per operation
    /// (throughput, p50, p99, p99.9, errors) marking the changes beyond the run-to-run noise
    /// seen in their intervals.
    Compare(CompareArgs),
    /// Check the disk (`check disk`) or the cluster's performance (`check perf`, as
    /// etcdctl's) against etcd's guidance, pass or fail.
    Check(CheckArgs),
    /// etcd benchmark's `mvcc put`, refused: it benchmarks etcd's storage in-process, in Go.
    #[command(hide = true)]
    Mvcc(MvccArgs),
}

/// clap's message on one line, like every other error: what is wrong and clap's tip, without
/// the usage lines.
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut out = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if line.starts_with("Usage:") || line.starts_with("For more information") {
            break;
        }
        let line = line.strip_prefix("error: ").unwrap_or(line);
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags `etcdlat ARGS --help` lists, each as the line that starts with it.
    fn help(args: &[&str]) -> Vec<String> {
        let argv = std::iter::once("etcdlat").chain(args.iter().copied()).chain(["--help"]);
        let e = Cli::parse_args(argv).expect_err("--help ends parsing");
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp);
        let text = e.render().to_string();
        // A flag's line is indented by at most six spaces; its wrapped text by more.
        text.lines()
            .filter(|l| l.len() - l.trim_start().len() <= 6)
            .map(str::trim_start)
            .filter(|l| l.starts_with("--") || l.starts_with("-q,"))
            .map(|l| l.trim_start_matches("-q, ").split([' ', '=']).next().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn cluster_help_lists_only_the_flags_cluster_takes() {
        let cluster = help(&["cluster"]);
        for flag in
            ["--members", "--local", "--etcd", "--peer-latency", "--zones", "--zone-latency"]
        {
            assert!(cluster.iter().any(|f| f == flag), "cluster --help lacks {flag}: {cluster:?}");
        }
        for flag in ["--conns", "--clients", "--endpoints", "--json", "--threshold", "--target"] {
            assert!(!cluster.iter().any(|f| f == flag), "cluster --help shows {flag}: {cluster:?}");
        }
        // The other commands still list the global flags.
        let put = help(&["put"]);
        for flag in ["--conns", "--endpoints", "--json", "--members", "--peer-latency"] {
            assert!(put.iter().any(|f| f == flag), "put --help lacks {flag}: {put:?}");
        }
    }

    #[test]
    fn cluster_refuses_flags_that_do_not_apply_and_takes_its_own_anywhere() {
        for (args, flag) in [
            (["etcdlat", "cluster", "--conns", "4"], "--conns"),
            (["etcdlat", "--json", "r.json", "cluster"], "--json"),
            (["etcdlat", "--endpoints", "h:2379", "cluster"], "--endpoints"),
        ] {
            let e = Cli::parse_args(args).expect_err("refused");
            let line = one_line(&e);
            assert!(line.starts_with(&format!("{flag} does not apply to cluster")), "{line}");
        }
        for args in [
            ["etcdlat", "--members", "3", "cluster"],
            ["etcdlat", "cluster", "--members", "3"],
            ["etcdlat", "cluster", "--peer-latency", "1ms"],
            ["etcdlat", "cluster", "--etcd", "v3.6.14"],
        ] {
            let cli = Cli::parse_args(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            assert!(matches!(cli.command, Command::Cluster(_)));
        }
    }
}
