//! A load run: each scenario of the plan in turn, on the cluster it names (a throwaway local
//! one started and removed per scenario), until done or stopped by a signal; then the
//! runs side by side when there were several (cells of repeats with their intervals and
//! compared with the first), the report files and the verdict.

use anyhow::{Context, Result, bail};
use etcdlat_core::repeat::{LEVEL, Repeats};
use etcdlat_core::schedule::Rate;
use etcdlat_core::{Report, ReportSet, Scenario};
use etcdlat_driver::{Driver, DriverError, LocalCluster};
use etcdlat_render as render;
use etcdlat_render::columns::Columns;
use tokio::sync::watch;

use crate::exporter::Exporter;
use crate::output::Lines;
use crate::plan::network::needs_emulation;
use crate::plan::{Cluster, DEFAULT_ENDPOINT, RunPlan, preflight};
use crate::progress::Stream;
use crate::shutdown::{shutdown_signal, unless_stopped};
use crate::verdict::{self, Verdict};
use crate::{output, progress, shard};

/// What the runs of one plan share, from before the first to after the reports are
/// written: the stop flag, the Prometheus endpoint and the `--jsonl` stream.
pub(crate) struct Session {
    pub(crate) stop: watch::Receiver<bool>,
    exporter: Option<Exporter>,
    lines: Option<Lines>,
}

impl Session {
    /// Says the plan's preflight warnings, removes what killed etcdlats left of their
    /// throwaway clusters when the plan starts some, then listens for a stop and opens the
    /// endpoint and the stream.
    pub(crate) async fn open(plan: &RunPlan) -> Result<Self> {
        for warning in preflight::warnings(&plan.scenarios) {
            eprintln!("etcdlat: warning: {warning}");
        }
        if plan.scenarios.iter().any(|s| plan.cluster.endpoints_for(s).is_none()) {
            remove_abandoned_clusters();
        }
        let stop = shutdown_signal();
        let exporter = match &plan.metrics_addr {
            Some(addr) => Some(Exporter::bind(addr).await?),
            None => None,
        };
        let lines = plan.outputs.jsonl.as_ref().map(Lines::open).transpose()?;
        Ok(Self { stop, exporter, lines })
    }

    /// Writes `set` to the plan's report files, then stops serving `/metrics`: the endpoint
    /// is up until the last report is written.
    pub(crate) fn close(self, plan: &RunPlan, set: &ReportSet) -> Result<()> {
        plan.outputs.write(set)?;
        if let Some(exporter) = self.exporter {
            exporter.stop();
        }
        Ok(())
    }
}

/// Runs every scenario of `plan`, writes the report files, and says how it went.
pub async fn execute(plan: &RunPlan) -> Result<Verdict> {
    let mut session = Session::open(plan).await?;
    let stop = session.stop.clone();
    let mut reports = Vec::new();
    for (round, scenario) in plan.scenarios.iter().enumerate() {
        if *stop.borrow() {
            break;
        }
        let run = run_one(plan, round, scenario, &mut session);
        let Some(report) = run.await? else {
            // Stopped before measuring started: nothing of this run to report.
            break;
        };
        if plan.print_text {
            // etcd's layout for one run; several (a matrix, several files) each say which,
            // and on which etcd (a matrix may be over versions).
            let runs = plan.scenarios.len();
            let header = if runs > 1 {
                let on = match report.target.server_summary().as_str() {
                    "etcd unknown" => String::new(),
                    server => format!(" ({server})"),
                };
                format!("Run {} of {runs}: {}{on}\n\n", round + 1, report.name)
            } else {
                String::new()
            };
            // dbtester's rows when asked: `--dbtester-rows`, or a dbtester scenario's.
            let dbtester_rows = scenario.report.dbtester_rows;
            let text = render::text(&report, &render::TextOptions { dbtester_rows, ..plan.text });
            output::print(&format!("{header}{text}\n"))?;
        }
        let interrupted = report.interrupted;
        reports.push(report);
        if interrupted {
            break;
        }
    }
    if plan.print_text && reports.len() > 1 {
        // A matrix, several scenarios: their figures side by side, after each run's own.
        let table = Columns::new(&reports).text();
        output::print(&format!("{} runs side by side:\n\n{table}\n", reports.len()))?;
        // Repeats of several cells: each compared with the first, from the runs' variance.
        if let Some(repeats) = Repeats::of(&reports).filter(|r| r.cells.len() > 1) {
            let comparison = render::comparison::repeats_markdown(&repeats.compare(LEVEL));
            output::print(&format!("Cells compared with the first:\n\n{comparison}\n"))?;
        }
    }
    let interrupted = reports.iter().any(|r| r.interrupted) || *stop.borrow();
    let set = ReportSet::new(reports);
    session.close(plan, &set)?;
    // A shard's thresholds are held against the whole, by `etcdlat merge`.
    let passed = if plan.shard.is_some() {
        verdict::checks_passed(&set.runs)
    } else {
        verdict::passed(&set.runs)
    };
    Ok(if interrupted {
        Verdict::Interrupted
    } else if passed {
        Verdict::Done
    } else {
        Verdict::Failed
    })
}

/// Removes the temp dirs that killed etcdlats left of their throwaway clusters (their
/// members died with them), saying so in one line.
pub fn remove_abandoned_clusters() {
    let removed = LocalCluster::remove_abandoned();
    if !removed.is_empty() {
        let dirs: Vec<String> = removed.iter().map(|d| d.display().to_string()).collect();
        eprintln!(
            "etcdlat: removed {} throwaway etcd dir(s) left by etcdlat processes that are gone: {}",
            dirs.len(),
            dirs.join(" ")
        );
    }
}

/// Runs one scenario (the plan's `round`-th), streaming its intervals to the session's
/// `--jsonl` stream if it has one; `None` when a stop came before measurement started.
pub(crate) async fn run_one(
    plan: &RunPlan,
    round: usize,
    scenario: &Scenario,
    session: &mut Session,
) -> Result<Option<Report>> {
    let stop = session.stop.clone();
    let lines = &mut session.lines;
    let exporter = session.exporter.as_ref();
    // A shard runs its part of the scenario, and its report carries the whole.
    let whole = scenario;
    let part = match plan.shard {
        Some(shard) => shard.part(whole)?,
        None => whole.clone(),
    };
    let scenario = &part;
    let endpoints = plan.cluster.endpoints_for(scenario).map(<[String]>::to_vec);
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
    if let Some(every) = plan.auto_sync_interval {
        builder = builder.auto_sync_interval(every);
    }
    if !plan.pin_cpus.is_empty() {
        builder = builder.pin_cpus(plan.pin_cpus.iter().copied());
    }
    let barrier_endpoints = endpoints.clone().unwrap_or_default();
    let mut local = None;
    builder = match (endpoints, &plan.etcd_bins[round]) {
        (Some(eps), _) => builder.endpoints(eps),
        // The plan found a binary for every scenario that runs on a local cluster.
        (None, None) => bail!("{}: no etcd binary was found for its local cluster", scenario.name),
        (None, Some(etcd_bin)) => {
            let members = match plan.cluster {
                Cluster::Local(Some(m)) => m,
                _ => scenario.cluster.members.unwrap_or(1),
            };
            let mut options = LocalCluster::options()
                .members(members)
                .etcd_bin(etcd_bin)
                .member_cpus(plan.etcd_cpus.iter().copied())
                .network_cpus(plan.network_cpus.iter().copied());
            if needs_emulation(scenario) {
                options = options.network(scenario.network.clone());
            } else if !plan.network_cpus.is_empty() {
                bail!(
                    "{}: --network-cpus places the emulated network's threads, and this run has no emulated network (give --client-latency, --peer-latency or a scenario's [network])",
                    scenario.name
                );
            }
            if let Some(quota) = scenario.cluster.quota_backend_bytes {
                options = options.arg(format!("--quota-backend-bytes={quota}"));
            }
            let start = options.start();
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
                "no etcd at the default endpoint {DEFAULT_ENDPOINT}: pass --endpoints, or --local to start a throwaway etcd"
            )));
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(exporter) = exporter {
        let rate = Some(scenario.load.rate_shape()).filter(|r| *r != Rate::Unlimited);
        exporter.follow(&scenario.name, &driver.progress(), rate);
    }
    let display = progress::Display::start(
        plan.print_text,
        driver.progress(),
        scenario.load.total_asked(),
        scenario.load.duration_asked(),
    );
    let mut stop = stop;
    let shutdown = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let sync = shard::Sync {
        start: &plan.start,
        shard: plan.shard,
        round,
        endpoints: &barrier_endpoints,
        dial_timeout,
        security: &plan.securities[round],
    };
    let stream = lines.take().map(|l| Stream::start(l, driver.progress(), scenario.name.clone()));
    let run = shard::run_until(&driver, scenario, &sync, shutdown).await;
    if let Some(stream) = stream {
        let report = run.as_ref().ok().and_then(Option::as_ref);
        *lines = Some(stream.finish(report).await?);
    }
    let mut report = run?;
    if let (Some(report), Some(_)) = (&mut report, plan.shard) {
        report.scenario = whole.clone();
    }
    if let Some(report) = &mut report {
        report.scale = plan.scale;
    }
    drop(display);
    drop(driver);
    drop(local);
    Ok(report)
}
