//! Raw flags in, a validated plan out: the one place where command-line values are checked
//! and scenarios are built or read. Nothing here dials etcd or starts a cluster.
//!
//! - `benchmark`: etcd benchmark's subcommands (`put`, `range`, `txn-put`, ...) as scenarios.
//! - `scenario`: `run`'s scenario files and shipped scenarios, with the flags that override
//!   them.
//! - `cluster`: where the load goes (`--endpoints`, `--local`, `--members`), and the quota
//!   of a local cluster (`--quota-backend-bytes`).
//! - `etcd`: which etcd binary each throwaway local cluster runs (`--etcd`, `[cluster] etcd`),
//!   found before anything starts.
//! - `security`: TLS and credentials, from the flags or the scenarios; the password prompt.
//! - `shard`: distributed runs (`--shard`, `--start-at`, `--barrier`).
//! - `cpu`: the CPUs etcdlat's threads and a local cluster's run on, tried first.
//! - `find_max`: `run --find-max`'s runs and repeats.
//! - `output`: the report files and the metrics endpoint.
//! - `preflight`: what cannot work where the plan sends it (an error), and what is likely not
//!   meant (a warning).
//! - `report_tool`: `merge` and `compare`.
//! - `check`: `check disk`'s directory and sizes, `check perf`'s load and rules.
//! - `flag`: what a flag's value means (durations, sizes, counts), and scenario errors in the
//!   words of the command line.

mod benchmark;
mod check;
mod cluster;
mod cpu;
mod etcd;
mod find_max;
mod flag;
pub mod network;
mod output;
pub mod preflight;
mod report_tool;
mod scenario;
mod security;
pub mod shard;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::threshold::Threshold;
use etcdlat_core::unit::parse_duration;
use etcdlat_core::{Etcd, Scenario, ScenarioError, Targeting};
use etcdlat_driver::Security;
use etcdlat_render::{TextOptions, heatmap};

pub use check::{DiskPlan, PerfCheck};
pub use cluster::{Cluster, DEFAULT_ENDPOINT};
pub use etcd::EtcdSources;
pub use find_max::FindMax;
pub use report_tool::{ComparePlan, MergePlan};
pub use shard::Start;

use crate::command_line::{CheckCommand, Cli, Command, Global};
use crate::output::Outputs;

/// A load run, validated: `etcdlat run` or one of etcd benchmark's subcommands.
#[derive(Debug)]
pub struct RunPlan {
    /// Scenarios to run, in order.
    pub scenarios: Vec<Scenario>,
    /// Where the load goes.
    pub cluster: Cluster,
    /// Where the load goes, when the command line says.
    pub target: Option<Targeting>,
    /// Dial timeout given on the command line.
    pub dial_timeout: Option<Duration>,
    /// How often the endpoints are refreshed from the member list while running
    /// (`--auto-sync-interval`); `None`: never.
    pub auto_sync_interval: Option<Duration>,
    /// Where to serve Prometheus metrics while running (`--metrics-addr`).
    pub metrics_addr: Option<String>,
    /// Each scenario's TLS and credentials, in the order of `scenarios` (their `Debug`
    /// hides the passwords).
    pub securities: Vec<Security>,
    /// Worker threads.
    pub workers: Option<usize>,
    /// CPUs to pin the worker threads to.
    pub pin_cpus: Vec<usize>,
    /// CPUs to run a throwaway cluster's members on (`--etcd-cpus`).
    pub etcd_cpus: Vec<usize>,
    /// CPUs to run its emulated network's threads on (`--network-cpus`).
    pub network_cpus: Vec<usize>,
    /// Text report options.
    pub text: TextOptions,
    /// Print the text report (and progress) at all.
    pub print_text: bool,
    /// The report files.
    pub outputs: Outputs,
    /// The etcd binary each scenario's throwaway local cluster runs, in the order of
    /// `scenarios`, each found already; `None` for a scenario run against endpoints.
    pub etcd_bins: Vec<Option<PathBuf>>,
    /// The endpoints were etcd benchmark's default rather than given.
    pub default_endpoint: bool,
    /// The part of every scenario this process runs (`--shard`); the scenarios above are
    /// whole.
    pub shard: Option<etcdlat_core::Shard>,
    /// When measurement starts (`--start-at`, `--barrier`).
    pub start: Start,
    /// The factor the scenarios were scaled by (`run --scale`), recorded in each report.
    pub scale: Option<f64>,
    /// `run --find-max`: search the one scenario's node count.
    pub find_max: Option<FindMax>,
}

/// What to do.
#[derive(Debug)]
pub enum Action {
    /// Run the plan.
    Run(Box<RunPlan>),
    /// List the shipped scenarios.
    ListScenarios,
    /// Start a local cluster and keep it until Ctrl-C.
    Cluster {
        /// Members.
        members: u32,
        /// The etcd binary.
        etcd_bin: PathBuf,
        /// The emulated network it runs on, from the network flags (none: loopback).
        network: Option<etcdlat_core::Network>,
    },
    /// Merge shards' reports.
    Merge(MergePlan),
    /// Compare two reports.
    Compare(ComparePlan),
    /// `check disk`.
    CheckDisk(DiskPlan),
    /// `check perf`: the run of its load, and what the check does around it.
    CheckPerf(Box<RunPlan>, PerfCheck),
}

impl Action {
    /// The CPUs `--pin-cpus` keeps etcdlat's own threads on; empty: any.
    pub fn client_cpus(&self) -> &[usize] {
        match self {
            Action::Run(plan) | Action::CheckPerf(plan, _) => &plan.pin_cpus,
            _ => &[],
        }
    }

    /// Builds the action from parsed flags; `sources` says where etcd binaries are found.
    pub fn from_cli(cli: Cli, sources: &EtcdSources) -> Result<Self> {
        let g = &cli.global;
        for t in &g.threshold {
            t.parse::<Threshold>().map_err(|e| anyhow!("--threshold: {e}"))?;
        }
        let etcd_flag = g.etcd.as_deref().map(etcd::from_flag).transpose()?.unwrap_or_default();
        // etcd benchmark's subcommands load its default endpoint unless told otherwise.
        let at_default_endpoint =
            |s: Scenario| (vec![s], Cluster::Endpoints(vec![DEFAULT_ENDPOINT.into()]));
        let mut perf_check = None;
        let (scenarios, default_cluster) = match &cli.command {
            Command::Scenarios => return Ok(Self::ListScenarios),
            Command::Merge(args) => return report_tool::merge_plan(args, g).map(Self::Merge),
            Command::Compare(args) => return report_tool::compare_plan(args, g).map(Self::Compare),
            Command::Cluster(_) => {
                let members = cluster::cluster_command(g)?;
                let mut net = etcdlat_core::Network::default();
                network::NetworkFlags::from_flags(g, &Cluster::Local(Some(members)))?
                    .apply(&mut net);
                net.validate(etcdlat_core::scenario::Site::Local(Some(members)))
                    .map_err(|e| anyhow!("{e}"))?;
                let network = net.is_emulated().then_some(net);
                let etcd_bin = match etcd_flag.as_slice() {
                    [] => sources.find(&Etcd::System)?,
                    [asked] => sources.find(asked).context("--etcd")?,
                    [..] => bail!(
                        "--etcd: `etcdlat cluster` starts one cluster, of one etcd; give one (several are for runs)"
                    ),
                };
                return Ok(Self::Cluster { members, etcd_bin, network });
            }
            Command::Run(run) => (scenario::read(run, &etcd_flag)?, Cluster::FromScenario),
            Command::Check(c) => match &c.command {
                CheckCommand::Disk(a) => {
                    return check::disk(a, g, std::env::temp_dir()).map(Self::CheckDisk);
                }
                CheckCommand::Perf(a) => {
                    let (scenario, check) = check::perf(a)?;
                    perf_check = Some(check);
                    at_default_endpoint(scenario)
                }
            },
            Command::Put(a) => at_default_endpoint(benchmark::put(a)?),
            Command::Range(a) => at_default_endpoint(benchmark::range(a)?),
            Command::TxnPut(a) => at_default_endpoint(benchmark::txn_put(a)?),
            Command::TxnMixed(a) => at_default_endpoint(benchmark::txn_mixed(a)?),
            Command::Watch(a) => at_default_endpoint(benchmark::watch(a)?),
            Command::WatchGet(a) => at_default_endpoint(benchmark::watch_get(a)?),
            Command::WatchLatency(a) => at_default_endpoint(benchmark::watch_latency(a)?),
            Command::LeaseKeepalive(a) => at_default_endpoint(benchmark::lease_keepalive(a)?),
            Command::Stm(a) => at_default_endpoint(benchmark::stm(a)?),
            Command::Mvcc(_) => bail!(
                "mvcc benchmarks etcd's storage (its MVCC store on a bbolt file) in-process, in Go, with no server and no gRPC; etcdlat measures a server over gRPC: use etcd's tool (go run ./tools/benchmark mvcc put) for it"
            ),
        };
        let (cluster, default_endpoint) = Cluster::from_flags(g, default_cluster)?;
        let quota = cluster::quota_backend_bytes(g, &cluster)?;
        cpu::check_cpus(g)?;
        let (etcd_cpus, network_cpus) = cpu::local_cpus(g, &cluster)?;

        let network_flags = network::NetworkFlags::from_flags(g, &cluster)?;
        // `run` wrote `--etcd` into its scenarios, as the etcd or as the matrix's axis; etcd
        // benchmark's commands take it here.
        let scenarios = match &cli.command {
            Command::Run(_) => scenarios,
            _ => etcd::apply(scenarios, &etcd_flag)?,
        };
        let mut scenarios = scenarios;
        for s in &mut scenarios {
            if !etcd_flag.is_empty() && !s.cluster.endpoints.is_empty() {
                bail!(
                    "--etcd applies to a throwaway local cluster, and scenario {} names cluster.endpoints, a cluster etcdlat does not start, which has the version it has",
                    s.name
                );
            }
            if quota.is_some() {
                s.cluster.quota_backend_bytes = quota;
                // A `[kubernetes]` preload must fit the flag's quota, named as the model's.
                s.validate().map_err(|e| anyhow!("{}: {e}", s.name))?;
            }
            network_flags.check_members(s, &cluster)?;
            network_flags.apply(&mut s.network);
            apply_global(s, g).map_err(flag::flag_error)?;
        }
        preflight::check(&scenarios, &cluster)?;
        let (shard, start) = match &cli.command {
            Command::Run(run) => shard::flags(run, &scenarios, &cluster)?,
            _ => (None, Start::Now),
        };
        let find_max = match &cli.command {
            Command::Run(run) => find_max::flags(run, &scenarios, shard.is_some())?,
            _ => None,
        };
        let target = match (&g.target, g.target_leader) {
            (Some(_), true) => bail!("--target and --target-leader cannot be used together"),
            (Some(t), false) => Some(t.parse::<Targeting>().map_err(|e| anyhow!("--target: {e}"))?),
            (None, true) => Some(Targeting::Leader),
            (None, false) => None,
        };
        // What the reports ask of the runs and where they go, before anything is looked for.
        if g.heatmap.is_some() {
            let runs = scenarios.iter().map(|s| (s.name.as_str(), s.matrix_cell.as_ref()));
            heatmap::axes(runs).map_err(|e| anyhow!("--heatmap: {e}"))?;
        }
        let outputs = output::outputs(g, output::command_name(&cli.command))?;
        // Before a password is asked for: every etcd the runs need is there.
        let etcd_bins = etcd::binaries(&scenarios, &cluster, !etcd_flag.is_empty(), sources)?;
        let env_password = std::env::var("ETCDLAT_PASSWORD").ok();
        let flags = security::from_flags(g, env_password.clone(), security::ask_password)?;
        let securities = security::per_scenario(
            &flags,
            &scenarios,
            env_password.as_deref(),
            security::ask_password,
        )?;
        let dial_timeout = match &g.dial_timeout {
            Some(text) => {
                let d = parse_duration(text).map_err(|e| anyhow!("--dial-timeout: {e}"))?;
                (!d.is_zero()).then_some(d)
            }
            None => None,
        };
        let auto_sync_interval =
            flag::duration_flag("--auto-sync-interval", g.auto_sync_interval.as_deref())?
                .filter(|d| !d.is_zero());
        if g.workers == Some(0) {
            bail!("--workers must be at least 1");
        }
        let metrics_addr = match &g.metrics_addr {
            Some(flag) => Some(flag.clone()),
            None => output::metrics_addr(&scenarios)?,
        };
        let plan = Box::new(RunPlan {
            scenarios,
            cluster,
            target,
            dial_timeout,
            auto_sync_interval,
            metrics_addr,
            securities,
            workers: g.workers,
            pin_cpus: g.pin_cpus.clone().unwrap_or_default(),
            etcd_cpus,
            network_cpus,
            text: TextOptions {
                precise: g.precise,
                sample: g.sample,
                dbtester_rows: g.dbtester_rows,
            },
            print_text: !g.quiet && !outputs.to_stdout(),
            outputs,
            etcd_bins,
            default_endpoint,
            shard,
            start,
            scale: match &cli.command {
                Command::Run(run) => run.scale,
                _ => None,
            },
            find_max,
        });
        Ok(match perf_check {
            Some(check) => Self::CheckPerf(plan, check),
            None => Self::Run(plan),
        })
    }
}

/// Applies the global load flags to a scenario and validates it, naming flags in errors.
fn apply_global(s: &mut Scenario, g: &Global) -> Result<(), ScenarioError> {
    if let Some(c) = g.conns {
        s.load.conns = Some(c);
    }
    if s.load.conns.is_none() {
        s.load.conns = Some(1);
    }
    if let Some(c) = g.clients {
        s.load.clients = c;
    }
    s.report.precise |= g.precise;
    s.report.sample |= g.sample;
    s.report.dbtester_rows |= g.dbtester_rows;
    if g.target_leader {
        s.target = Targeting::Leader;
    }
    if let Some(t) = g.target.as_deref().and_then(|t| t.parse().ok()) {
        s.target = t;
    }
    add_thresholds(s, &g.threshold);
    if g.audit || g.audit_limit.is_some() {
        s.checks.audit = true;
    }
    if let Some(limit) = g.audit_limit {
        s.checks.audit_limit = limit;
    }
    s.validate()
}

/// Adds `--threshold` expressions (checked already) to a scenario's own, each once, so the
/// report records every threshold the run was held to.
fn add_thresholds(s: &mut Scenario, thresholds: &[String]) {
    for t in thresholds {
        if !s.thresholds.contains(t) {
            s.thresholds.push(t.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use etcdlat_core::{Consistency, Operation};

    pub(super) fn plan(args: &[&str]) -> Result<RunPlan> {
        let cli = Cli::parse_args(std::iter::once("etcdlat").chain(args.iter().copied()))?;
        // Any file that can be run stands for the system's etcd: nothing here starts it.
        let sources = EtcdSources {
            system: std::env::current_exe().unwrap(),
            search_path: Vec::new(),
            cache: Some(PathBuf::from("/nonexistent/cache")),
        };
        match Action::from_cli(cli, &sources)? {
            Action::Run(p) => Ok(*p),
            Action::ListScenarios
            | Action::Cluster { .. }
            | Action::Merge(_)
            | Action::Compare(_)
            | Action::CheckDisk(_)
            | Action::CheckPerf(..) => bail!("not a run"),
        }
    }

    #[test]
    fn members_alone_means_a_local_cluster_and_never_blames_unused_flags() {
        let p = plan(&["--members=3", "put", "--total=10"]).unwrap();
        assert_eq!(p.cluster, Cluster::Local(Some(3)));
        assert!(!p.default_endpoint);
        let err = plan(&["--endpoints=127.0.0.1:2379", "--members=3", "put"]).unwrap_err();
        assert!(err.to_string().contains("--members") && err.to_string().contains("--endpoints"));
        let p = plan(&["put", "--total=10"]).unwrap();
        assert!(p.default_endpoint, "etcd benchmark's endpoint stays the default");
    }

    #[test]
    fn etcd_flag_asks_for_a_local_cluster_of_that_etcd() {
        let exe = std::env::current_exe().unwrap();
        let flag = format!("--etcd={}", exe.display());
        let p = plan(&[&flag, "put", "--total=10"]).unwrap();
        assert_eq!(p.cluster, Cluster::Local(None), "--etcd alone starts a local cluster");
        assert_eq!(p.scenarios[0].cluster.etcd, Some(Etcd::Path(exe.clone())), "and says so");
        assert_eq!(p.etcd_bins, [Some(exe.clone())]);
        let p = plan(&["--members=3", "put", "--total=10"]).unwrap();
        assert_eq!(p.scenarios[0].cluster.etcd, None, "nothing asked, nothing recorded");
        assert_eq!(p.etcd_bins, [Some(exe)]);

        let msg = |args: &[&str]| format!("{:#}", plan(args).unwrap_err());
        assert!(
            msg(&["--etcd=v3.6.14", "put"])
                .starts_with("--etcd: etcd v3.6.14: /nonexistent/cache/v3.6.14/etcd: no such file"),
            "{}",
            msg(&["--etcd=v3.6.14", "put"])
        );
        assert!(msg(&["--etcd=3.6", "put"]).starts_with("--etcd: etcd version \"3.6\""));
        assert!(msg(&["--etcd=system", "--endpoints=h:1", "put"]).starts_with("--etcd applies"));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("remote.toml");
        std::fs::write(&file, "[cluster]\nendpoints = [\"h:1\"]\n[load]\ntotal = 1\n[op.put]\n")
            .unwrap();
        let line = msg(&["run", &file.display().to_string(), "--etcd=system"]);
        assert!(line.contains("scenario put names cluster.endpoints"), "{line}");
    }

    #[test]
    fn the_metrics_address_comes_from_the_flag_or_the_scenarios() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, addr: &str| {
            let path = dir.path().join(format!("{name}.toml"));
            let text = format!(
                "name = \"{name}\"\n[report]\nmetrics-addr = \"{addr}\"\n[load]\ntotal = 1\n[op.put]\n"
            );
            std::fs::write(&path, text).unwrap();
            path.display().to_string()
        };
        let (a, b, also_a) =
            (file("a", "127.0.0.1:9464"), file("b", "127.0.0.1:9465"), file("c", "127.0.0.1:9464"));
        let addr = |args: &[&str]| plan(args).unwrap().metrics_addr;
        assert_eq!(addr(&["put"]), None);
        assert_eq!(addr(&["run", &a]).as_deref(), Some("127.0.0.1:9464"));
        assert_eq!(addr(&["run", &a, &also_a]).as_deref(), Some("127.0.0.1:9464"));
        assert_eq!(addr(&["--metrics-addr=[::1]:1", "run", &a]).as_deref(), Some("[::1]:1"));
        let line = plan(&["run", &a, &b]).unwrap_err().to_string();
        assert!(line.starts_with("report.metrics-addr: the scenarios ask for"), "{line}");
        let line = format!("{:#}", plan(&["run", &file("d", "9464")]).unwrap_err());
        assert!(line.contains("report.metrics-addr") && line.contains("HOST:PORT"), "{line}");
    }

    #[test]
    fn client_steps_split_the_total_or_the_duration() {
        let steps = |args: &[&str]| -> Vec<(u32, Option<u64>, Option<Duration>)> {
            let p = plan(args).unwrap();
            let load = &p.scenarios[0].load;
            assert_eq!((load.total, load.duration), (None, None), "the steps say how long");
            load.client_steps.iter().map(|s| (s.clients, s.total, s.duration)).collect()
        };
        // etcd's default total, split as dbtester split its request number.
        let p = plan(&["put", "--client-steps=1,10,100"]).unwrap();
        assert_eq!(p.scenarios[0].load.clients, 100, "--clients defaults to the largest step");
        assert_eq!(
            steps(&["put", "--client-steps=1,10,100"]),
            [(1, Some(3333), None), (10, Some(3333), None), (100, Some(3334), None)]
        );
        let second = Some(Duration::from_secs(1));
        assert_eq!(
            steps(&["range", "foo", "--client-steps", "2,4", "--duration=2s"]),
            [(2, None, second), (4, None, second)]
        );
        assert_eq!(
            plan(&["--clients=200", "put", "--client-steps=1,10"]).unwrap().scenarios[0]
                .load
                .clients,
            200
        );

        let msg = |args: &[&str]| format!("{:#}", plan(args).unwrap_err());
        let line = msg(&["--clients=5", "put", "--client-steps=1,10"]);
        assert!(line.starts_with("--client-steps: 10 is more than load.clients (5)"), "{line}");
        let line = msg(&["put", "--client-steps=1,10", "--rate=100"]);
        assert!(line.starts_with("--client-steps: measure each number of clients"), "{line}");
        let line = msg(&["put", "--client-steps=1,2,3", "--total=2"]);
        assert_eq!(line, "--client-steps: --total 2 cannot give each of the 3 steps a request");
        let line = msg(&["put", "--client-steps=1,2", "--total=20", "--duration=1s"]);
        assert!(line.contains("not both"), "{line}");
        let line = msg(&["put", "--client-steps=1,0"]);
        assert!(line.starts_with("--client-steps: must be more than 0"), "{line}");
        assert!(msg(&["put", "--client-steps=1,x"]).contains("invalid value 'x'"));
    }

    #[test]
    fn etcd_benchmark_command_lines_work() {
        let p = plan(&[
            "--conns=100",
            "--clients=1000",
            "put",
            "--key-size=8",
            "--sequential-keys",
            "--total=100000",
            "--val-size=256",
        ])
        .unwrap();
        let s = &p.scenarios[0];
        assert_eq!(s.load.conns, Some(100));
        assert_eq!(s.load.clients, 1000);
        assert_eq!(s.load.total, Some(100_000));
        let Some(Operation::Put(put)) = &s.op else { panic!() };
        assert!(put.sequential_keys);
        assert_eq!(put.val_size, 256);
        assert_eq!(p.cluster, Cluster::Endpoints(vec![DEFAULT_ENDPOINT.to_owned()]));

        // Global flags after the command, Go-style booleans, range with an end.
        let p = plan(&[
            "range",
            "foo",
            "fop",
            "--consistency=s",
            "--endpoints=h1:2379,h2:2379",
            "--precise=true",
            "--total=10",
        ])
        .unwrap();
        let Some(Operation::Range(r)) = &p.scenarios[0].op else { panic!() };
        assert_eq!(r.range_end.as_deref(), Some("fop"));
        assert_eq!(r.consistency, Consistency::Serializable);
        assert!(p.text.precise);
        assert_eq!(p.cluster, Cluster::Endpoints(vec!["h1:2379".into(), "h2:2379".into()]));
        let p = plan(&["put", "--sequential-keys=false"]).unwrap();
        let Some(Operation::Put(put)) = &p.scenarios[0].op else { panic!() };
        assert!(!put.sequential_keys);
    }

    /// etcd 3.7's tool's flags: `range --stream`, `--paginate` (with etcdlat's
    /// `--page-size`), `--prefix` without a key, `--auto-sync-interval`, `--report-perfdash`,
    /// and what they refuse in its words.
    #[test]
    fn etcd_3_7_benchmark_flags() {
        let range = |args: &[&str]| {
            let p = plan(args).unwrap_or_else(|e| panic!("{args:?}: {e:#}"));
            let Some(Operation::Range(r)) = &p.scenarios[0].op else { panic!() };
            r.clone()
        };
        let r = range(&["range", "--prefix", "--stream"]);
        assert!(r.stream && r.prefix && r.key.is_empty() && !r.paginate);
        assert_eq!(
            r.target(),
            etcdlat_core::workload::KeyTarget::Fixed { key: vec![0], range_end: vec![0] },
            "every key in the store"
        );
        let r = range(&["range", "--prefix", "--paginate"]);
        assert!(r.paginate && r.page_size == 10_000);
        let r = range(&["range", "k/", "--prefix=true", "--paginate=true", "--page-size=7"]);
        assert_eq!((r.paginate, r.page_size, r.key.as_str()), (true, 7, "k/"));
        assert!(!range(&["range", "k"]).stream);

        let msg = |args: &[&str]| format!("{:#}", plan(args).unwrap_err());
        assert!(msg(&["range"]).contains("<KEY>"), "a key, unless --prefix");
        assert_eq!(
            msg(&["range", "k", "--paginate", "--limit=5"]),
            "--paginate and --limit are mutually exclusive"
        );
        assert_eq!(
            msg(&["range", "k", "--count-only", "--keys-only"]),
            "`--keys-only` and `--count-only` cannot be set at the same time"
        );
        assert!(
            msg(&["range", "k", "--paginate", "--stream"]).starts_with("--paginate and --stream")
        );
        assert!(msg(&["range", "k", "--page-size=5"]).contains("--paginate"), "needs --paginate");
        assert!(msg(&["range", "k", "--paginate", "--page-size=0"]).starts_with("--page-size:"));

        let p = plan(&["--auto-sync-interval=30s", "put"]).unwrap();
        assert_eq!(p.auto_sync_interval, Some(Duration::from_secs(30)));
        assert_eq!(plan(&["--auto-sync-interval=0s", "put"]).unwrap().auto_sync_interval, None);
        assert!(msg(&["--auto-sync-interval=soon", "put"]).starts_with("--auto-sync-interval:"));

        let mvcc = msg(&["mvcc", "put", "--total=10", "--batch-interval=100"]);
        assert!(mvcc.starts_with("mvcc benchmarks etcd's storage") && mvcc.contains("in Go"));
        assert!(!mvcc.contains('\n'), "{mvcc}");
    }

    #[test]
    fn bandwidth_with_one_member_is_refused_naming_client_bandwidth() {
        let msg = |args: &[&str]| format!("{:#}", plan(args).unwrap_err());
        for args in [
            &["--members=1", "--bandwidth=2MB/s", "put", "--total=4"][..],
            &["--local", "--bandwidth=2MB/s", "put"],
            &["--bandwidth=2MB/s", "run", "put-1mb"],
        ] {
            let m = msg(args);
            assert!(m.starts_with("--bandwidth limits the links between members"), "{args:?}: {m}");
            assert!(m.contains("--client-bandwidth"), "{m}");
        }
        assert!(plan(&["--members=3", "--bandwidth=2MB/s", "put"]).is_ok());
        assert!(plan(&["--members=1", "--client-bandwidth=2MB/s", "put"]).is_ok());
    }

    #[test]
    fn targets_and_scale() {
        let p = plan(&["--target=followers", "put"]).unwrap();
        assert_eq!(p.scenarios[0].target, Targeting::Followers);
        let p = plan(&["--target-leader", "range", "k"]).unwrap();
        assert_eq!(p.scenarios[0].target, Targeting::Leader);
        assert!(plan(&["--target=moon", "put"]).unwrap_err().to_string().starts_with("--target:"));
        let p = plan(&["run", "put-256b-1000clients", "--scale=0.01"]).unwrap();
        assert_eq!(p.scenarios[0].load.total, Some(1000));
        assert!(plan(&["run", "put-1mb", "--scale=0"]).is_err());
        // The flags' own values are not scaled: the scaled cluster runs for 10 s.
        let p = plan(&["run", "k8s-cluster", "--scale=0.01", "--duration=10s", "--warmup=2s"]);
        let load = &p.unwrap().scenarios[0].load;
        assert_eq!(
            (load.duration, load.warmup),
            (Some(Duration::from_secs(10)), Duration::from_secs(2))
        );
        let p = plan(&["run", "put-256b-1000clients", "--scale=0.01", "--total=7"]).unwrap();
        assert_eq!(p.scenarios[0].load.total, Some(7));
        // A flag in place of what a matrix varies is refused: every cell would run one value.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("rates.toml");
        let text = "[cluster]\nendpoints = [\"h:1\"]\n[load]\ntotal = 100\n[op.put]\n\
                    [matrix]\n\"load.rate\" = [100, 200]\n\"load.total\" = [10, 20]\n";
        std::fs::write(&file, text).unwrap();
        let file = file.display().to_string();
        let msg = |flag: &str| plan(&["run", &file, flag]).unwrap_err().to_string();
        assert!(msg("--rate=5").starts_with("--rate: scenario"), "{}", msg("--rate=5"));
        assert!(msg("--rate=5").ends_with("varies load.rate; drop the flag or the axis"));
        assert!(msg("--total=5").contains("varies load.total"));
        assert!(msg("--duration=5s").contains("varies load.total"), "it takes the total's place");
        assert!(
            plan(&["run", &file, "--warmup=1s"]).is_ok(),
            "what the matrix leaves is the flag's"
        );
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let msg = |args: &[&str]| plan(args).unwrap_err().to_string();
        assert_eq!(
            msg(&["put", "--key-space-size=0"]),
            "expected positive --key-space-size, got (0)"
        );
        assert!(msg(&["--clients=0", "put"]).starts_with("--clients: must be 1"));
        assert!(msg(&["range", "k", "--consistency=x"]).starts_with("--consistency:"));
        assert!(msg(&["--endpoints=nohost", "put"]).contains("no port"));
        assert!(msg(&["put", "--val-size=lots"]).starts_with("--val-size:"));
        assert!(msg(&["--user=:pw", "put"]).starts_with("--user:"));
        assert!(msg(&["--cert=/etc/hostname", "put"]).starts_with("--cert and --key"));
        assert!(msg(&["--cacert=/nonexistent/ca.pem", "put"]).contains("no such file"));
        assert!(msg(&["--json=/etc/hostname/r.json", "put"]).contains("cannot create directory"));
        assert!(msg(&["put", "--key-size=1", "--key-space-size=1000"]).starts_with("--key-size:"));
    }

    #[test]
    fn audit_flags_turn_the_audit_on_and_bound_it() {
        let p = plan(&["--audit", "put", "--total=10"]).unwrap();
        assert!(p.scenarios[0].checks.audit);
        assert_eq!(p.scenarios[0].checks.audit_limit, 1_000_000);
        let p = plan(&["range", "k", "--audit-limit=500"]).unwrap();
        assert!(p.scenarios[0].checks.audit, "a limit implies the audit");
        assert_eq!(p.scenarios[0].checks.audit_limit, 500);
        assert!(!plan(&["put"]).unwrap().scenarios[0].checks.audit);
        let msg = |args: &[&str]| plan(args).unwrap_err().to_string();
        assert_eq!(msg(&["--audit-limit=0", "put"]), "--audit-limit: must be 1 to 100000000");
        assert!(msg(&["--audit", "watch"]).starts_with("--audit: watch is not audited"));
        assert!(
            msg(&["--audit", "lease-keepalive"]).starts_with("--audit: the workload has nothing")
        );
    }

    #[test]
    fn run_resolves_shipped_scenarios_and_overrides() {
        let p = plan(&["run", "scenarios/put-1mb.toml", "--total=5", "--conns=2"]).unwrap();
        assert_eq!(p.scenarios[0].name, "put-1mb");
        assert_eq!(p.scenarios[0].load.total, Some(5));
        assert_eq!(p.scenarios[0].load.conns, Some(2));
        assert_eq!(p.cluster, Cluster::FromScenario);
        let p = plan(&["run", "put-1mb", "--duration=3s", "--members=3"]).unwrap();
        assert_eq!(p.scenarios[0].load.total, None);
        assert_eq!(p.cluster, Cluster::Local(Some(3)));
        assert!(
            plan(&["run", "nope.toml"]).unwrap_err().to_string().contains("no shipped scenario")
        );
    }
}
