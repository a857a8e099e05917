//! `etcdlat`: the command line. Parses flags, installs logging and signal handling, runs
//! the library, writes reports. Exit codes: 0 ok, 1 a check failed or a threshold was not met, 2 error, 130 interrupted
//! (report written).

mod analysis;
mod args;
mod builtin;
#[cfg(test)]
mod fuzz;
mod output;
mod plan;
mod preflight;
mod progress;
mod start;

use std::future::Future;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use etcdlat_core::render;
use etcdlat_core::{Report, ReportSet, Scenario};
use etcdlat_driver::{Driver, DriverError, LocalCluster};
use tokio::sync::watch;

use crate::args::Cli;

/// mimalloc instead of the system allocator: tonic, hyper and h2 allocate per request, and
/// glibc's malloc was a fifth of the client's CPU per request (see benches/README.md). Built
/// without transparent huge pages, which otherwise add ~30 MB of resident memory at start.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use crate::plan::{Action, Cluster, Plan};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e)
            if e.use_stderr()
                && e.kind() != clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            eprintln!("etcdlat: {}", one_line(&e));
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
    let etcd_bin =
        std::env::var_os("ETCD_BIN").map_or_else(|| PathBuf::from("etcd"), PathBuf::from);
    let result = Action::from_cli(cli, etcd_bin).and_then(|action| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .context("starting the runtime")?;
        rt.block_on(execute(action))
    });
    match result {
        Ok(Status::Done) => ExitCode::SUCCESS,
        Ok(Status::Failed) => ExitCode::from(1),
        Ok(Status::Interrupted) => ExitCode::from(130),
        Err(e) => {
            eprintln!("etcdlat: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// clap's message on one line, like every other error: what is wrong and clap's tip, without
/// the usage lines.
fn one_line(e: &clap::Error) -> String {
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

enum Status {
    Done,
    /// A check failed (HashKV mismatch, watch events lost) or a threshold was not met: exit 1.
    Failed,
    Interrupted,
}

async fn execute(action: Action) -> Result<Status> {
    let plan = match action {
        Action::ListScenarios => {
            for (name, text) in builtin::SCENARIOS {
                let description =
                    Scenario::from_toml_str(text).map(|s| s.description).unwrap_or_default();
                println!("{name:<24} {description}");
            }
            return Ok(Status::Done);
        }
        Action::Run(plan) => *plan,
        Action::Cluster { members, etcd_bin } => return hold_cluster(members, &etcd_bin).await,
        Action::Merge(m) => return analysis::merge(&m),
        Action::Compare(c) => return analysis::compare(&c),
    };
    for warning in preflight::warnings(&plan) {
        eprintln!("etcdlat: warning: {warning}");
    }
    let stop = shutdown_signal();
    let mut reports = Vec::new();
    for (round, scenario) in plan.scenarios.iter().enumerate() {
        if *stop.borrow() {
            break;
        }
        let Some(report) = run_one(&plan, round, scenario, stop.clone()).await? else {
            // Stopped before measuring started: nothing of this run to report.
            break;
        };
        if plan.print_text {
            println!("{}", render::text(&report, &plan.text));
        }
        let interrupted = report.interrupted;
        reports.push(report);
        if interrupted {
            break;
        }
    }
    let interrupted = reports.iter().any(|r| r.interrupted) || *stop.borrow();
    write_outputs(&plan, &reports)?;
    // A shard's thresholds are held against the whole, by `etcdlat merge`.
    let passed = if plan.shard.is_some() {
        analysis::checks_passed(&reports)
    } else {
        analysis::passed(&reports)
    };
    Ok(if interrupted {
        Status::Interrupted
    } else if passed {
        Status::Done
    } else {
        Status::Failed
    })
}

/// Completes with `None` as soon as the stop flag is set.
async fn unless_stopped<T>(
    stop: &watch::Receiver<bool>,
    work: impl Future<Output = T>,
) -> Option<T> {
    let mut stop = stop.clone();
    tokio::select! {
        out = work => Some(out),
        _ = stop.wait_for(|s| *s) => None,
    }
}

/// Runs one scenario (the plan's `round`-th); `None` when a stop came before measurement
/// started.
async fn run_one(
    plan: &Plan,
    round: usize,
    scenario: &Scenario,
    stop: watch::Receiver<bool>,
) -> Result<Option<Report>> {
    // A shard runs its part of the scenario, and its report carries the whole (start.rs).
    let whole = scenario;
    let part = match plan.shard {
        Some(shard) => shard.part(whole)?,
        None => whole.clone(),
    };
    let scenario = &part;
    let endpoints = match &plan.cluster {
        Cluster::Endpoints(eps) => Some(eps.clone()),
        Cluster::FromScenario if !scenario.cluster.endpoints.is_empty() => {
            Some(scenario.cluster.endpoints.clone())
        }
        Cluster::FromScenario | Cluster::Local(_) => None,
    };
    let dial_timeout = plan
        .dial_timeout
        .or(scenario.cluster.dial_timeout)
        .unwrap_or(etcdlat_driver::DEFAULT_DIAL_TIMEOUT);
    let mut builder = Driver::builder()
        .conns(scenario.load.conns.unwrap_or(1))
        .dial_timeout(dial_timeout)
        .security(plan.securities[round].clone())
        .target(plan.target.clone().unwrap_or_else(|| scenario.target.clone()));
    if let Some(w) = plan.workers {
        builder = builder.workers(w);
    }
    if !plan.pin_cpus.is_empty() {
        builder = builder.pin_cpus(plan.pin_cpus.iter().copied());
    }
    let barrier_endpoints = endpoints.clone().unwrap_or_default();
    let mut local = None;
    builder = match endpoints {
        Some(eps) => builder.endpoints(eps),
        None => {
            let members = match plan.cluster {
                Cluster::Local(Some(m)) => m,
                _ => scenario.cluster.members.unwrap_or(1),
            };
            let start = LocalCluster::options().members(members).etcd_bin(&plan.etcd_bin).start();
            let Some(cluster) = unless_stopped(&stop, start).await else { return Ok(None) };
            let cluster = cluster.context("starting a throwaway local etcd")?;
            let b = builder.local_cluster(&cluster);
            local = Some(cluster);
            b
        }
    };
    let Some(connected) = unless_stopped(&stop, builder.connect()).await else { return Ok(None) };
    let driver = match connected {
        Ok(d) => d,
        Err(e @ DriverError::Connect { .. }) if plan.default_endpoint => {
            return Err(anyhow::Error::new(e).context(format!(
                "no etcd at the default endpoint {}: pass --endpoints, or --local to start a throwaway etcd",
                plan::DEFAULT_ENDPOINT
            )));
        }
        Err(e) => return Err(e.into()),
    };
    let display = progress::Display::start(
        plan.print_text,
        driver.progress(),
        scenario.load.total,
        scenario.load.duration,
    );
    let mut stop = stop;
    let shutdown = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let sync = start::Sync {
        start: &plan.start,
        shard: plan.shard,
        round,
        endpoints: &barrier_endpoints,
        dial_timeout,
        security: &plan.securities[round],
    };
    let mut report = start::run_until(&driver, scenario, &sync, shutdown).await?;
    if let (Some(report), Some(_)) = (&mut report, plan.shard) {
        report.scenario = whole.clone();
    }
    drop(display);
    drop(driver);
    drop(local);
    Ok(report)
}

fn write_outputs(plan: &Plan, reports: &[Report]) -> Result<()> {
    if let Some(t) = &plan.json {
        t.write(&render::json(&ReportSet::new(reports.to_vec())))?;
    }
    if let Some(t) = &plan.markdown {
        t.write(&render::markdown(reports))?;
    }
    if let Some(t) = &plan.csv {
        let mut text = String::new();
        for (i, r) in reports.iter().enumerate() {
            let csv = render::intervals_csv(r);
            // One header for the whole file.
            text.push_str(if i == 0 {
                &csv
            } else {
                csv.split_once('\n').map_or("", |(_, rows)| rows)
            });
        }
        t.write(&text)?;
    }
    if let Some(t) = &plan.html {
        t.write(&render::html(&ReportSet::new(reports.to_vec())))?;
    }
    if let Some(dir) = &plan.plots {
        output::write_plots(dir, reports)?;
    }
    Ok(())
}

/// `etcdlat cluster`: starts a local cluster, prints its endpoints, keeps it until Ctrl-C or
/// SIGTERM, then tears it down.
async fn hold_cluster(members: u32, etcd_bin: &std::path::Path) -> Result<Status> {
    let mut stop = shutdown_signal();
    let start = LocalCluster::options().members(members).etcd_bin(etcd_bin).start();
    let Some(cluster) = unless_stopped(&stop, start).await else { return Ok(Status::Interrupted) };
    let cluster = cluster.context("starting a throwaway local etcd")?;
    let endpoints = cluster.endpoints();
    for (m, ep) in cluster.members().iter().zip(&endpoints) {
        println!("{}\t{ep}", m.name());
    }
    println!("ETCDCTL_ENDPOINTS={}", endpoints.join(","));
    println!("etcdlat --endpoints={} put --total=1000", endpoints.join(","));
    eprintln!("etcd cluster of {members} running in {}; Ctrl-C stops it", cluster.dir().display());
    let _ = stop.wait_for(|s| *s).await;
    drop(cluster);
    Ok(Status::Done)
}

/// A flag that turns true on Ctrl-C, SIGTERM or SIGHUP (the terminal closed): each stops
/// the run, writes the report and tears down local clusters, whose etcd processes run in a
/// process group of their own and would otherwise outlive etcdlat.
fn shutdown_signal() -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        #[cfg(unix)]
        let other = async {
            use tokio::signal::unix::{SignalKind, signal};
            match (signal(SignalKind::terminate()), signal(SignalKind::hangup())) {
                (Ok(mut term), Ok(mut hup)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = hup.recv() => {}
                    }
                }
                _ => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let other = std::future::pending::<()>();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            () = other => {}
        }
        tracing::info!("stopping: signal received");
        let _ = tx.send(true);
    });
    rx
}
