//! Raw flags in, a validated plan out: the one place where command-line values are checked
//! and scenarios are built or read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::render::TextOptions;
use etcdlat_core::scenario::check_endpoint;
use etcdlat_core::threshold::Threshold;
use etcdlat_core::unit::{parse_duration, parse_size};
use etcdlat_core::{
    Arrivals, Compaction, Consistency, Isolation, LeaseOp, Load, Operation, PutOp, RangeOp,
    Scenario, ScenarioError, Schedule, StmLocker, StmOp, Targeting, TxnMixedOp, TxnPutOp,
    WatchGetOp, WatchLatencyOp, WatchOp,
};
use etcdlat_driver::{Credentials, Security, TlsOptions};

use crate::args::{
    Cli, Command, CompareArgs, Global, LeaseKeepaliveArgs, LoadArgs, MergeArgs, PutArgs, RangeArgs,
    RunArgs, StmArgs, TxnMixedArgs, TxnPutArgs, WatchArgs, WatchGetArgs, WatchLatencyArgs,
};
use crate::builtin;
use crate::output::Target;

/// etcd benchmark's default endpoint for `put` and `range`.
pub const DEFAULT_ENDPOINT: &str = "127.0.0.1:2379";

/// Where the load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cluster {
    /// These endpoints.
    Endpoints(Vec<String>),
    /// A throwaway local cluster per run; `None` members means the scenario's (or 1).
    Local(Option<u32>),
    /// The scenario's endpoints if it names some, else a throwaway local cluster.
    FromScenario,
}

/// Everything a command needs, validated.
#[derive(Debug)]
pub struct Plan {
    /// Scenarios to run, in order.
    pub scenarios: Vec<Scenario>,
    /// Where the load goes.
    pub cluster: Cluster,
    /// Where the load goes, when the command line says.
    pub target: Option<Targeting>,
    /// Dial timeout given on the command line.
    pub dial_timeout: Option<Duration>,
    /// Each scenario's TLS and credentials, in the order of `scenarios` (their `Debug`
    /// hides the passwords).
    pub securities: Vec<Security>,
    /// Worker threads.
    pub workers: Option<usize>,
    /// CPUs to pin the worker threads to.
    pub pin_cpus: Vec<usize>,
    /// Text report options.
    pub text: TextOptions,
    /// Print the text report (and progress) at all.
    pub print_text: bool,
    /// JSON report destination.
    pub json: Option<Target>,
    /// Markdown table destination.
    pub markdown: Option<Target>,
    /// Interval CSV destination.
    pub csv: Option<Target>,
    /// HTML page destination.
    pub html: Option<Target>,
    /// Directory the SVG plots are written into.
    pub plots: Option<PathBuf>,
    /// The etcd binary for local clusters.
    pub etcd_bin: PathBuf,
    /// The endpoints were etcd benchmark's default rather than given.
    pub default_endpoint: bool,
    /// The part of every scenario this process runs (`--shard`); the scenarios above are
    /// whole.
    pub shard: Option<etcdlat_core::Shard>,
    /// When measurement starts (`--start-at`, `--barrier`).
    pub start: crate::start::Start,
}

/// What to do.
#[derive(Debug)]
pub enum Action {
    /// Run the plan.
    Run(Box<Plan>),
    /// List the shipped scenarios.
    ListScenarios,
    /// Start a local cluster and keep it until Ctrl-C.
    Cluster {
        /// Members.
        members: u32,
        /// The etcd binary.
        etcd_bin: PathBuf,
    },
    /// Merge shards' reports.
    Merge(MergePlan),
    /// Compare two reports.
    Compare(ComparePlan),
}

impl Action {
    /// Builds the action from parsed flags; `etcd_bin` comes from the environment.
    pub fn from_cli(cli: Cli, etcd_bin: PathBuf) -> Result<Self> {
        let g = &cli.global;
        for t in &g.threshold {
            t.parse::<Threshold>().map_err(|e| anyhow!("--threshold: {e}"))?;
        }
        let (scenarios, default_cluster) = match &cli.command {
            Command::Scenarios => return Ok(Self::ListScenarios),
            Command::Merge(args) => return merge_plan(args, g).map(Self::Merge),
            Command::Compare(args) => return compare_plan(args, g).map(Self::Compare),
            Command::Cluster(_) => {
                if g.endpoints.is_some() {
                    bail!("cluster starts a local cluster; --endpoints does not apply");
                }
                let members = g.members.unwrap_or(1);
                if !(1..=9).contains(&members) {
                    bail!("--members must be 1 to 9, got {members}");
                }
                return Ok(Self::Cluster { members, etcd_bin });
            }
            Command::Run(run) => (run_scenarios(run)?, Cluster::FromScenario),
            command => {
                let scenario = match command {
                    Command::Put(a) => put_scenario(a)?,
                    Command::Range(a) => range_scenario(a)?,
                    Command::TxnPut(a) => txn_put_scenario(a)?,
                    Command::TxnMixed(a) => txn_mixed_scenario(a)?,
                    Command::Watch(a) => watch_scenario(a)?,
                    Command::WatchGet(a) => watch_get_scenario(a)?,
                    Command::WatchLatency(a) => watch_latency_scenario(a)?,
                    Command::LeaseKeepalive(a) => lease_keepalive_scenario(a)?,
                    Command::Stm(a) => stm_scenario(a)?,
                    Command::Scenarios
                    | Command::Run(_)
                    | Command::Cluster(_)
                    | Command::Merge(_)
                    | Command::Compare(_) => {
                        unreachable!("matched above")
                    }
                };
                (vec![scenario], Cluster::Endpoints(vec![DEFAULT_ENDPOINT.to_owned()]))
            }
        };
        let mut default_endpoint = false;
        let cluster = match (&g.endpoints, g.local) {
            (Some(_), true) => bail!("--local and --endpoints cannot be used together"),
            (Some(eps), false) => {
                let eps: Vec<String> =
                    eps.iter().map(|e| e.trim().to_owned()).filter(|e| !e.is_empty()).collect();
                if eps.is_empty() {
                    bail!("--endpoints is empty");
                }
                for ep in &eps {
                    check_endpoint(ep).map_err(|e| anyhow!("--endpoints: {e}"))?;
                }
                Cluster::Endpoints(eps)
            }
            (None, true) => Cluster::Local(g.members),
            (None, false) => {
                default_endpoint = matches!(default_cluster, Cluster::Endpoints(_));
                default_cluster
            }
        };
        if g.members.is_some() && matches!(cluster, Cluster::Endpoints(_)) {
            bail!(
                "--members applies to a throwaway local cluster; it cannot be used with --endpoints"
            );
        }
        if let Some(m) = g.members {
            if !(1..=9).contains(&m) {
                bail!("--members must be 1 to 9, got {m}");
            }
        }
        let cluster = match (cluster, g.members) {
            (Cluster::FromScenario, Some(m)) => Cluster::Local(Some(m)),
            (c, _) => c,
        };

        let mut scenarios = scenarios;
        for s in &mut scenarios {
            apply_global(s, g).map_err(flag_error)?;
        }
        crate::preflight::check(&scenarios, &cluster)?;
        let (shard, start) = match &cli.command {
            Command::Run(run) => crate::start::flags(run, &scenarios, &cluster)?,
            _ => (None, crate::start::Start::Now),
        };
        let target = match (&g.target, g.target_leader) {
            (Some(_), true) => bail!("--target and --target-leader cannot be used together"),
            (Some(t), false) => Some(t.parse::<Targeting>().map_err(|e| anyhow!("--target: {e}"))?),
            (None, true) => Some(Targeting::Leader),
            (None, false) => None,
        };
        let env_password = std::env::var("ETCDLAT_PASSWORD").ok();
        let flags = security(g, env_password.clone(), ask_password)?;
        let securities = securities(&flags, &scenarios, env_password.as_deref(), ask_password)?;
        let dial_timeout = match &g.dial_timeout {
            Some(text) => {
                let d = parse_duration(text).map_err(|e| anyhow!("--dial-timeout: {e}"))?;
                (!d.is_zero()).then_some(d)
            }
            None => None,
        };
        if g.workers == Some(0) {
            bail!("--workers must be at least 1");
        }
        let json = g.json.as_deref().map(Target::new);
        let markdown = g.markdown.as_deref().map(Target::new);
        let csv = g.csv.as_deref().map(Target::new);
        let html = g.html.as_deref().map(Target::new);
        let to_stdout = [&json, &markdown, &csv, &html]
            .iter()
            .filter(|t| matches!(t, Some(Target::Stdout)))
            .count();
        if to_stdout > 1 {
            bail!(
                "only one of --json, --markdown, --csv and --html can write to standard output (-)"
            );
        }
        if let Some(t) = &json {
            t.check("--json")?;
        }
        if let Some(t) = &markdown {
            t.check("--markdown")?;
        }
        if let Some(t) = &csv {
            t.check("--csv")?;
        }
        if let Some(t) = &html {
            t.check("--html")?;
        }
        if let Some(dir) = &g.plots {
            crate::output::check_dir(dir, "--plots")?;
        }
        Ok(Self::Run(Box::new(Plan {
            scenarios,
            cluster,
            target,
            dial_timeout,
            securities,
            workers: g.workers,
            pin_cpus: g.pin_cpus.clone().unwrap_or_default(),
            text: TextOptions { precise: g.precise, sample: g.sample },
            print_text: !g.quiet && to_stdout == 0,
            json,
            markdown,
            csv,
            html,
            plots: g.plots.clone(),
            etcd_bin,
            default_endpoint,
            shard,
            start,
        })))
    }
}

/// TLS and credentials from the flags. `--user name` without a password takes it from
/// `env_password` (ETCDLAT_PASSWORD), else from `prompt` (the terminal).
fn security(
    g: &Global,
    env_password: Option<String>,
    prompt: impl FnOnce(&str) -> std::io::Result<String>,
) -> Result<Security> {
    let tls = TlsOptions {
        ca: g.cacert.clone(),
        cert: g.cert.clone(),
        key: g.key.clone(),
        insecure_skip_verify: g.insecure_skip_tls_verify,
    };
    if tls.cert.is_some() != tls.key.is_some() {
        bail!("--cert and --key: give both or neither");
    }
    if let Some((flag, path)) =
        missing_file([("--cacert", &tls.ca), ("--cert", &tls.cert), ("--key", &tls.key)])
    {
        bail!("{flag} {}: no such file", path.display());
    }
    let credentials = match g.user.as_deref() {
        None => None,
        Some(text) => {
            let (user, password) = match text.split_once(':') {
                Some((user, password)) => (user, Some(password.to_owned())),
                None => (text, None),
            };
            if user.is_empty() {
                bail!("--user: no user name before the ':'");
            }
            let password = match password.or(env_password) {
                Some(p) => p,
                None => prompt(user).map_err(|e| {
                    anyhow!(
                        "--user {user}: no password (give user:password, set ETCDLAT_PASSWORD, \
                         or run on a terminal to be asked): {e}"
                    )
                })?,
            };
            Some(Credentials::new(user, password))
        }
    };
    Ok(Security { tls, credentials })
}

/// The first of the TLS `files` (each named for the error) that is given but is not a file.
fn missing_file<'a>(files: [(&'a str, &'a Option<PathBuf>); 3]) -> Option<(&'a str, &'a Path)> {
    files
        .into_iter()
        .find_map(|(name, path)| path.as_deref().filter(|p| !p.is_file()).map(|p| (name, p)))
}

/// Each scenario's TLS and credentials: the flags' where the command line gives them
/// (`flags`), else the scenario's `[cluster]` settings. A scenario's user gets its password
/// from `env_password` (ETCDLAT_PASSWORD), else from `prompt`, asked once per user.
fn securities(
    flags: &Security,
    scenarios: &[Scenario],
    env_password: Option<&str>,
    mut prompt: impl FnMut(&str) -> std::io::Result<String>,
) -> Result<Vec<Security>> {
    let mut passwords: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::with_capacity(scenarios.len());
    for s in scenarios {
        let c = &s.cluster;
        let tls = if flags.tls.is_set() {
            flags.tls.clone()
        } else {
            TlsOptions {
                ca: c.cacert.clone(),
                cert: c.cert.clone(),
                key: c.key.clone(),
                insecure_skip_verify: c.insecure_skip_tls_verify,
            }
        };
        let credentials = match (&flags.credentials, &c.user) {
            (Some(credentials), _) => Some(credentials.clone()),
            (None, None) => None,
            (None, Some(user)) => {
                let password = match (passwords.get(user), env_password) {
                    (Some(known), _) => known.clone(),
                    (None, Some(env)) => env.to_owned(),
                    (None, None) => prompt(user).map_err(|e| {
                        anyhow!(
                            "scenario {}: cluster.user {user}: no password (set \
                             ETCDLAT_PASSWORD, or run on a terminal to be asked): {e}",
                            s.name
                        )
                    })?,
                };
                passwords.insert(user.clone(), password.clone());
                Some(Credentials::new(user, password))
            }
        };
        out.push(Security { tls, credentials });
    }
    Ok(out)
}

/// Asks for `user`'s password on the terminal, without echo.
fn ask_password(user: &str) -> std::io::Result<String> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Err(std::io::Error::other("not a terminal"));
    }
    rpassword::prompt_password(format!("Password for {user}: "))
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
    if g.target_leader {
        s.target = Targeting::Leader;
    }
    if let Some(t) = g.target.as_deref().and_then(|t| t.parse().ok()) {
        s.target = t;
    }
    add_thresholds(s, &g.threshold);
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

/// A scenario error in the words of the command line: `load.clients` becomes `--clients`.
fn flag_error(e: ScenarioError) -> anyhow::Error {
    match &e {
        ScenarioError::Invalid { field, message, .. } => {
            let flag = field.rsplit('.').next().unwrap_or(field);
            if flag == "load" { anyhow!("{message}") } else { anyhow!("--{flag}: {message}") }
        }
        _ => anyhow!("{e}"),
    }
}

/// A duration flag ("30s"), when given.
fn duration_flag(flag: &str, text: Option<&str>) -> Result<Option<Duration>> {
    text.map(parse_duration).transpose().map_err(|e| anyhow!("{flag}: {e}"))
}

fn load_from(args: &LoadArgs) -> Result<Load> {
    let duration = duration_flag("--duration", args.duration.as_deref())?;
    let warmup = duration_flag("--warmup", args.warmup.as_deref())?;
    if args.total == 0 {
        bail!("--total: must be more than 0");
    }
    Ok(Load {
        conns: None,
        clients: 1,
        // With --duration the run stops at whichever comes first; etcd's default total still
        // applies unless --total was raised.
        total: if duration.is_some() && args.total == 10_000 { None } else { Some(args.total) },
        duration,
        rate: args.rate,
        warmup: warmup.unwrap_or_default(),
        schedule: if args.open_loop { Schedule::Open } else { Schedule::Closed },
        arrivals: if args.poisson { Arrivals::Poisson } else { Arrivals::Constant },
        stages: Vec::new(),
    })
}

fn put_scenario(args: &PutArgs) -> Result<Scenario> {
    if args.key_space_size <= 0 {
        bail!("expected positive --key-space-size, got ({})", args.key_space_size);
    }
    let val_size = parse_size(&args.val_size).map_err(|e| anyhow!("--val-size: {e}"))?;
    let op = PutOp {
        key_size: args.key_size,
        val_size,
        key_space_size: args.key_space_size as u64,
        sequential_keys: args.sequential_keys,
        key_starts: args.key_starts,
        prefix: args.prefix.clone(),
        seed: args.seed,
        zipf: args.zipf,
    };
    let mut s = Scenario::new(Operation::Put(op));
    s.load = load_from(&args.load)?;
    let compact_interval =
        duration_flag("--compact-interval", Some(&args.compact_interval))?.unwrap_or_default();
    if !compact_interval.is_zero() {
        s.compaction =
            Some(Compaction { interval: compact_interval, index_delta: args.compact_index_delta });
    }
    s.checks.hashkv = args.check_hashkv;
    s.validate().map_err(flag_error)?;
    Ok(s)
}

/// A positive count flag, with etcd's wording when it is not.
fn positive(flag: &str, value: i64) -> Result<u64> {
    u64::try_from(value)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| anyhow!("expected positive --{flag}, got ({value})"))
}

fn consistency_flag(text: &str) -> Result<Consistency> {
    match text {
        "l" => Ok(Consistency::Linearizable),
        "s" => Ok(Consistency::Serializable),
        other => {
            bail!("--consistency: expected l (linearizable) or s (serializable), got {other:?}")
        }
    }
}

fn size_flag(flag: &str, text: &str) -> Result<u64> {
    parse_size(text).map_err(|e| anyhow!("{flag}: {e}"))
}

/// A scenario of one operation with the load flags, validated with flag names in errors.
fn request_scenario(op: Operation, load: &LoadArgs) -> Result<Scenario> {
    let mut s = Scenario::new(op);
    s.load = load_from(load)?;
    s.validate().map_err(flag_error)?;
    Ok(s)
}

/// A stream (watch) scenario: no request total applies.
fn stream_scenario(op: Operation) -> Result<Scenario> {
    let mut s = Scenario::new(op);
    s.load.total = None;
    s.validate().map_err(flag_error)?;
    Ok(s)
}

fn txn_put_scenario(args: &TxnPutArgs) -> Result<Scenario> {
    let op = TxnPutOp {
        txn_ops: positive("txn-ops", args.txn_ops)?,
        key_size: args.key_size,
        val_size: size_flag("--val-size", &args.val_size)?,
        key_space_size: positive("key-space-size", args.key_space_size)?,
        ..TxnPutOp::default()
    };
    request_scenario(Operation::TxnPut(op), &args.load)
}

fn txn_mixed_scenario(args: &TxnMixedArgs) -> Result<Scenario> {
    let op = TxnMixedOp {
        key: args.key.clone().unwrap_or_default(),
        end_key: args.end_key.clone().or_else(|| args.end.clone()),
        rw_ratio: args.rw_ratio,
        limit: args.limit,
        consistency: consistency_flag(&args.consistency)?,
        key_size: args.key_size,
        val_size: size_flag("--val-size", &args.val_size)?,
        key_space_size: positive("key-space-size", args.key_space_size)?,
        key_starts: 0,
        seed: None,
    };
    request_scenario(Operation::TxnMixed(op), &args.load)
}

fn watch_scenario(args: &WatchArgs) -> Result<Scenario> {
    let op = WatchOp {
        streams: args.streams,
        watch_per_stream: args.watch_per_stream,
        watched_key_total: args.watched_key_total,
        put_rate: args.put_rate,
        put_total: args.put_total,
        key_size: args.key_size,
        key_space_size: positive("key-space-size", args.key_space_size)?,
        sequential_keys: args.sequential_keys,
        ..WatchOp::default()
    };
    stream_scenario(Operation::Watch(op))
}

fn watch_get_scenario(args: &WatchGetArgs) -> Result<Scenario> {
    let op = WatchGetOp { watchers: args.watchers, streams: args.streams, events: args.events };
    stream_scenario(Operation::WatchGet(op))
}

fn watch_latency_scenario(args: &WatchLatencyArgs) -> Result<Scenario> {
    let op = WatchLatencyOp {
        streams: args.streams,
        watchers_per_stream: args.watchers_per_stream,
        put_rate: args.put_rate,
        put_total: args.put_total,
        prevkv: args.prevkv,
        key_size: args.key_size,
        val_size: size_flag("--val-size", &args.val_size)?,
    };
    stream_scenario(Operation::WatchLatency(op))
}

fn lease_keepalive_scenario(args: &LeaseKeepaliveArgs) -> Result<Scenario> {
    request_scenario(Operation::LeaseKeepalive(LeaseOp { ttl: args.ttl }), &args.load)
}

fn stm_scenario(args: &StmArgs) -> Result<Scenario> {
    let isolation = match args.isolation.as_str() {
        "c" => Isolation::ReadCommitted,
        "r" => Isolation::RepeatableReads,
        "s" => Isolation::Serializable,
        "ss" => Isolation::SerializableSnapshot,
        other => bail!("--isolation: expected c, r, s or ss, got {other:?}"),
    };
    let locker = match args.stm_locker.as_str() {
        "stm" => StmLocker::Stm,
        "lock-client" => StmLocker::LockClient,
        "lock-rpc" => StmLocker::LockRpc,
        other => {
            bail!("--stm-locker: unexpected stm locker {other:?} (stm, lock-client or lock-rpc)")
        }
    };
    let keys = positive("keys", args.keys)?;
    let keys_per_txn =
        u64::try_from(args.keys_per_txn).ok().filter(|&k| k <= keys).ok_or_else(|| {
            anyhow!("expected --keys-per-txn between 0 and {keys}, got ({})", args.keys_per_txn)
        })?;
    let txn_wr_percent =
        u64::try_from(args.txn_wr_percent).ok().filter(|&p| p <= 100).ok_or_else(|| {
            anyhow!("expected [0, 100] --txn-wr-percent, got ({})", args.txn_wr_percent)
        })?;
    let op = StmOp {
        isolation,
        keys,
        keys_per_txn,
        txn_wr_percent,
        stm_locker: locker,
        val_size: size_flag("--val-size", &args.val_size)?,
        ..StmOp::default()
    };
    request_scenario(Operation::Stm(op), &args.load)
}

fn range_scenario(args: &RangeArgs) -> Result<Scenario> {
    let consistency = consistency_flag(&args.consistency)?;
    let op = RangeOp {
        key: args.key.clone(),
        range_end: args.end.clone(),
        prefix: args.prefix,
        consistency,
        limit: args.limit,
        count_only: args.count_only,
        keys_only: args.keys_only,
        ..RangeOp::default()
    };
    request_scenario(Operation::Range(op), &args.load)
}

fn run_scenarios(args: &RunArgs) -> Result<Vec<Scenario>> {
    let duration = duration_flag("--duration", args.duration.as_deref())?;
    let warmup = duration_flag("--warmup", args.warmup.as_deref())?;
    if let Some(f) = args.scale {
        if !(f.is_finite() && f > 0.0) {
            bail!("--scale must be more than 0, got {f}");
        }
    }
    let mut out = Vec::new();
    for name in &args.scenarios {
        let path = PathBuf::from(name);
        // The directory a file's relative TLS paths are read from; none for shipped ones.
        let (text, label, dir) = if path.is_file() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading scenario {}", path.display()))?;
            (text, path.display().to_string(), Some(path.parent().unwrap_or(Path::new(""))))
        } else if let Some((builtin_name, text)) = builtin::find(name) {
            (text.to_owned(), format!("shipped scenario {builtin_name}"), None)
        } else if path.exists() {
            bail!("scenario {name}: not a file");
        } else {
            bail!(
                "scenario {name}: no such file, and no shipped scenario by that name (see `etcdlat scenarios`)"
            );
        };
        let mut s = Scenario::from_toml_str(&text).with_context(|| format!("scenario {label}"))?;
        if let Some(t) = args.total {
            s.load.total = Some(t);
        }
        if let Some(d) = duration {
            s.load.duration = Some(d);
            if args.total.is_none() {
                s.load.total = None;
            }
        }
        if let Some(r) = args.rate {
            s.load.rate = r;
        }
        if let Some(w) = warmup {
            s.load.warmup = w;
        }
        if args.open_loop {
            s.load.schedule = Schedule::Open;
        }
        let runs = s.expand().with_context(|| format!("scenario {label}"))?;
        for mut run in runs {
            if let Some(dir) = dir {
                run.cluster.resolve_paths(dir);
            }
            let c = &run.cluster;
            let files =
                [("cluster.cacert", &c.cacert), ("cluster.cert", &c.cert), ("cluster.key", &c.key)];
            if let Some((key, file)) = missing_file(files) {
                bail!("scenario {label}: {key} {}: no such file", file.display());
            }
            out.push(match args.scale {
                Some(f) => run.scaled(f),
                None => run,
            });
        }
    }
    Ok(out)
}

/// `etcdlat merge`, validated.
#[derive(Debug)]
pub struct MergePlan {
    /// The shards' reports, in order.
    pub inputs: Vec<PathBuf>,
    /// `--threshold` expressions, checked on the merged report with the scenario's own.
    pub thresholds: Vec<String>,
    /// Text report options.
    pub text: TextOptions,
    /// Print the text report of the merged runs.
    pub print_text: bool,
    /// Merged JSON report destination.
    pub json: Option<Target>,
    /// Markdown table destination.
    pub markdown: Option<Target>,
    /// Interval CSV destination.
    pub csv: Option<Target>,
}

/// `etcdlat compare`, validated.
#[derive(Debug)]
pub struct ComparePlan {
    /// The report compared against.
    pub base: PathBuf,
    /// The report compared with it.
    pub new: PathBuf,
    /// Print the markdown comparison on standard output.
    pub print: bool,
    /// Markdown comparison destination.
    pub markdown: Option<Target>,
    /// JSON comparison destination.
    pub json: Option<Target>,
}

/// The report files of `merge` and `compare`, checked; at most one writes to standard output.
fn output_flags(g: &Global) -> Result<[Option<Target>; 3]> {
    let targets = [&g.json, &g.markdown, &g.csv].map(|p| p.as_deref().map(Target::new));
    if targets.iter().filter(|t| matches!(t, Some(Target::Stdout))).count() > 1 {
        bail!("only one of --json, --markdown and --csv can write to standard output (-)");
    }
    for (t, flag) in targets.iter().zip(["--json", "--markdown", "--csv"]) {
        if let Some(t) = t {
            t.check(flag)?;
        }
    }
    Ok(targets)
}

fn merge_plan(args: &MergeArgs, g: &Global) -> Result<MergePlan> {
    let [json, markdown, csv] = output_flags(g)?;
    let to_stdout = [&json, &markdown, &csv].iter().any(|t| matches!(t, Some(Target::Stdout)));
    Ok(MergePlan {
        inputs: args.reports.clone(),
        thresholds: g.threshold.clone(),
        text: TextOptions { precise: g.precise, sample: g.sample },
        print_text: !g.quiet && !to_stdout,
        json,
        markdown,
        csv,
    })
}

fn compare_plan(args: &CompareArgs, g: &Global) -> Result<ComparePlan> {
    if !g.threshold.is_empty() {
        bail!("--threshold applies to runs and merged reports, not to compare");
    }
    let [json, markdown, csv] = output_flags(g)?;
    if csv.is_some() {
        bail!("--csv does not apply to compare");
    }
    let to_stdout = [&json, &markdown].iter().any(|t| matches!(t, Some(Target::Stdout)));
    Ok(ComparePlan {
        base: args.base.clone(),
        new: args.new.clone(),
        print: !g.quiet && !to_stdout,
        markdown,
        json,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn plan(args: &[&str]) -> Result<Plan> {
        let cli = Cli::try_parse_from(std::iter::once("etcdlat").chain(args.iter().copied()))?;
        match Action::from_cli(cli, PathBuf::from("etcd"))? {
            Action::Run(p) => Ok(*p),
            Action::ListScenarios
            | Action::Cluster { .. }
            | Action::Merge(_)
            | Action::Compare(_) => bail!("not a run"),
        }
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
        assert!(msg(&["--json=/nonexistent-dir/r.json", "put"]).contains("does not exist"));
        assert!(msg(&["put", "--key-size=1", "--key-space-size=1000"]).starts_with("--key-size:"));
    }

    #[test]
    fn passwords_come_from_the_flag_the_environment_or_the_terminal() {
        let global = |user: &str| {
            let cli = Cli::try_parse_from(["etcdlat", "--user", user, "put"]).unwrap();
            cli.global
        };
        let never = |_: &str| -> std::io::Result<String> { panic!("asked the terminal") };
        let s = security(&global("root:pw:with:colons"), Some("env".into()), never).unwrap();
        assert_eq!(s.credentials, Some(Credentials::new("root", "pw:with:colons")));
        let s = security(&global("root"), Some("from-env".into()), never).unwrap();
        assert_eq!(s.credentials, Some(Credentials::new("root", "from-env")));
        let s = security(&global("root"), None, |user| Ok(format!("typed-for-{user}"))).unwrap();
        assert_eq!(s.credentials, Some(Credentials::new("root", "typed-for-root")));
        let e = security(&global("root"), None, |_| Err(std::io::Error::other("not a terminal")))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--user root: no password"), "{e}");
        assert!(!format!("{s:?}").contains("typed-for-root"), "Debug hides the password");
    }

    #[test]
    fn scenarios_carry_tls_and_a_user_and_flags_replace_them() {
        let s = Scenario::from_toml_str(
            "[cluster]\ncacert = \"/ca.pem\"\nuser = \"alice\"\n[load]\ntotal = 1\n[op.put]\n",
        )
        .unwrap();
        let scenarios = [s.clone(), s];
        let mut asked = Vec::new();
        let out = securities(&Security::default(), &scenarios, None, |user| {
            asked.push(user.to_owned());
            Ok("typed".to_owned())
        })
        .unwrap();
        assert_eq!(asked, ["alice"], "asked once per user");
        assert_eq!(out[1].tls.ca.as_deref(), Some(Path::new("/ca.pem")));
        assert_eq!(out[1].credentials, Some(Credentials::new("alice", "typed")));

        let never = |_: &str| -> std::io::Result<String> { panic!("asked the terminal") };
        let out = securities(&Security::default(), &scenarios, Some("env"), never).unwrap();
        assert_eq!(out[0].credentials, Some(Credentials::new("alice", "env")));

        let flags = Security {
            tls: TlsOptions { insecure_skip_verify: true, ..TlsOptions::default() },
            credentials: Some(Credentials::new("bob", "pw")),
        };
        let out = securities(&flags, &scenarios, None, never).unwrap();
        assert_eq!(out[0], flags, "flags replace the scenario's TLS and user");
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
