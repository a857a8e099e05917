//! `etcdlat`: the command line. Parses flags, installs logging and signal handling, runs
//! the library, writes reports. Exit codes: 0 ok, 1 a check failed or a threshold was not
//! met, 2 error, 130 interrupted (report written).
//!
//! - `command_line`: the flags, as clap reads them.
//! - `plan/`: flags and scenario files turned into a validated plan, the one place where
//!   command-line values are checked.
//! - `run`: a load run, scenario after scenario; `shard`: when its measurement starts
//!   (`--shard`, `--start-at`, `--barrier`).
//! - `report_tool`: `merge` and `compare`, on JSON reports.
//! - `output`: report files, checked before and written atomically after; `progress`: the
//!   live progress line; `verdict`: how a command ends, and its exit code.
//! - `shutdown`: the stop flag that Ctrl-C, SIGTERM and SIGHUP set.
//! - `builtin`: the shipped scenarios, built in.
//! - `check/`: `check disk` and `check perf`, pass or fail against etcd's guidance.

mod builtin;
mod check;
mod command_line;
mod exporter;
mod find_max;
#[cfg(test)]
mod fuzz;
mod output;
mod plan;
mod progress;
mod report_tool;
mod run;
mod shard;
mod shutdown;
mod verdict;

use std::process::ExitCode;

use anyhow::{Context, Result};
use etcdlat_core::Scenario;
use etcdlat_driver::LocalCluster;

use crate::command_line::Cli;
use crate::plan::{Action, EtcdSources};
use crate::shutdown::{shutdown_signal, unless_stopped};
use crate::verdict::Verdict;

/// mimalloc instead of the system allocator: etcd-client's paths (tonic) allocate per
/// request, and glibc's malloc was a fifth of the client's CPU per request when the hot path
/// ran on h2 too (see benches/README.md). Built without transparent huge pages, which
/// otherwise add ~30 MB of resident memory at start.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The stack of the thread a command pinned with `--pin-cpus` runs on: the main thread's.
const MAIN_STACK_BYTES: usize = 8 << 20;

fn main() -> ExitCode {
    let cli = match Cli::parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e)
            if e.use_stderr()
                && e.kind() != clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            eprintln!("etcdlat: {}", command_line::one_line(&e));
            return ExitCode::from(2);
        }
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ETCDLAT_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = Action::from_cli(cli, &EtcdSources::from_env()).and_then(|action| {
        // With --pin-cpus every thread of etcdlat's but the main one runs on those CPUs (the
        // load's workers each on one of them), the command on a thread of its own while the
        // main thread waits: a member or emulator thread without CPUs of its own runs on the
        // main thread's, the process's.
        let cpus = action.client_cpus().to_vec();
        let mut runtime = tokio::runtime::Builder::new_multi_thread();
        runtime.worker_threads(1).enable_all();
        if cpus.is_empty() {
            let rt = runtime.build().context("starting the runtime")?;
            return rt.block_on(execute(action));
        }
        let pin = move || {
            // Each CPU has been tried before (`plan::cpu::check_cpus`), and refused with its name.
            let _ = etcdlat_driver::pin_current_thread(&cpus);
        };
        let rt = runtime.on_thread_start(pin.clone()).build().context("starting the runtime")?;
        let command = std::thread::Builder::new()
            .name("etcdlat-main".into())
            .stack_size(MAIN_STACK_BYTES)
            .spawn(move || {
                pin();
                rt.block_on(execute(action))
            })
            .context("starting the command's thread")?;
        command.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    });
    match result {
        Ok(verdict) => verdict.exit_code(),
        Err(e) => {
            eprintln!("etcdlat: {}", one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// The error and its causes on one line, as `{:#}` prints them, but a cause that its wrapper
/// has already printed (a library error shows its source, at its end or, before a log's
/// tail, inside) only once.
fn one_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

async fn execute(action: Action) -> Result<Verdict> {
    match action {
        Action::ListScenarios => {
            for (name, text) in builtin::SCENARIOS {
                let description =
                    Scenario::from_toml_str(text).map(|s| s.description).unwrap_or_default();
                output::print(&format!("{name:<24} {description}\n"))?;
            }
            Ok(Verdict::Done)
        }
        Action::Run(plan) => match plan.find_max {
            Some(search) => find_max::execute(&plan, search).await,
            None => run::execute(&plan).await,
        },
        Action::Cluster { members, etcd_bin, network } => {
            hold_cluster(members, &etcd_bin, network).await
        }
        Action::Merge(m) => report_tool::merge(&m),
        Action::Compare(c) => report_tool::compare(&c),
        Action::CheckDisk(plan) => check::disk::execute(plan).await,
        Action::CheckPerf(plan, perf) => check::perf::execute(&plan, &perf).await,
    }
}

/// `etcdlat cluster`: starts a local cluster, prints its endpoints, keeps it until Ctrl-C or
/// SIGTERM, then tears it down.
async fn hold_cluster(
    members: u32,
    etcd_bin: &std::path::Path,
    network: Option<etcdlat_core::Network>,
) -> Result<Verdict> {
    run::remove_abandoned_clusters();
    let mut stop = shutdown_signal();
    let mut options = LocalCluster::options().members(members).etcd_bin(etcd_bin);
    if let Some(network) = &network {
        eprintln!("emulated network: {}", network.summary());
        options = options.network(network.clone());
    }
    let start = options.start();
    let Some(cluster) = unless_stopped(&stop, start).await else { return Ok(Verdict::Interrupted) };
    let cluster = cluster.context("starting a throwaway local etcd")?;
    let endpoints = cluster.endpoints();
    let mut text = String::new();
    for (m, ep) in cluster.members().iter().zip(&endpoints) {
        text.push_str(&format!("{}\t{ep}\n", m.name()));
    }
    text.push_str(&format!("ETCDCTL_ENDPOINTS={}\n", endpoints.join(",")));
    text.push_str(&format!("etcdlat --endpoints={} put --total=1000\n", endpoints.join(",")));
    output::print(&text)?;
    eprintln!("etcd cluster of {members} running in {}; Ctrl-C stops it", cluster.dir().display());
    let _ = stop.wait_for(|s| *s).await;
    drop(cluster);
    Ok(Verdict::Done)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use etcdlat_driver::{DriverError, NotReady};

    use super::one_line;

    #[test]
    fn a_cause_its_wrapper_printed_is_printed_once() {
        // At the wrapper's end.
        let io = DriverError::Io {
            what: "making a temp dir".into(),
            source: std::io::Error::other("disk full"),
        };
        let e = anyhow::Error::from(io).context("starting etcd");
        assert_eq!(one_line(&e), "starting etcd: making a temp dir: disk full");
        // Inside it, before a log's tail.
        let e = anyhow::Error::from(DriverError::LocalNotReady {
            member: "m0".into(),
            timeout: Duration::from_secs(1),
            source: NotReady::NoLeader,
            log_tail: "the tail".into(),
        });
        let line = one_line(&e);
        assert_eq!(line.matches("no leader elected yet").count(), 1, "{line}");
        assert!(line.ends_with("last log lines:\nthe tail"), "{line}");
        // A cause its wrapper did not print is printed after it.
        let e = anyhow::Error::from(std::io::Error::other("refused")).context("dialling");
        assert_eq!(one_line(&e), "dialling: refused");
    }
}
