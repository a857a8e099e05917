//! `etcdlat check perf`: etcdctl check perf's preflight (the prefix must hold no key), its
//! load as a load run with etcdlat's report, each rule printed with its figure, then its
//! cleanup (the prefix's keys deleted; with `--auto-compact` a compaction at that revision,
//! with `--auto-defrag` every endpoint defragmented), also after Ctrl-C. A throwaway local
//! cluster needs neither preflight nor cleanup: it is removed with its keys.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use etcdlat_core::ReportSet;
use etcdlat_core::check::RuleOutcome;
use etcdlat_driver::etcd_client::{Client, DeleteOptions, GetOptions};
use etcdlat_driver::{DEFAULT_DIAL_TIMEOUT, connect_client};
use etcdlat_render as render;

use crate::output;
use crate::plan::{DEFAULT_ENDPOINT, PerfCheck, RunPlan};
use crate::run::{Session, run_one};
use crate::verdict::{self, Verdict};

/// How long the cleanup's requests may take, each (etcdctl's 30 s).
const CLEANUP_TIMEOUT: Duration = Duration::from_secs(30);

/// Runs the check of `plan` (one scenario, the load's), prints its report and rules, writes
/// the report files, and cleans up.
pub async fn execute(plan: &RunPlan, check: &PerfCheck) -> Result<Verdict> {
    let scenario = &plan.scenarios[0];
    let endpoints = plan.cluster.endpoints_for(scenario).map(<[String]>::to_vec);
    let client = match &endpoints {
        Some(eps) => Some(preflight(plan, eps, &check.prefix).await?),
        None => None,
    };
    let mut session = Session::open(plan).await?;
    let run = run_one(plan, 0, scenario, &mut session).await;
    let cleanup = match (&client, &endpoints) {
        (Some(client), Some(eps)) => cleanup(client.clone(), plan, eps, check).await,
        _ => Ok(()),
    };
    let Some(report) = run? else {
        cleanup?;
        return Ok(Verdict::Interrupted);
    };
    if plan.print_text {
        let mut text = format!("{}\n", render::text(&report, &plan.text));
        text.push_str(&format!("etcdctl check perf --load={}:\n", check.load.name()));
        let outcomes = RuleOutcome::all(&report);
        for o in &outcomes {
            text.push_str(&o.line());
            text.push('\n');
        }
        let all = outcomes.iter().all(|o| o.passed);
        text.push_str(if all { "PASS\n" } else { "FAIL\n" });
        output::print(&text)?;
    }
    let interrupted = report.interrupted;
    let set = ReportSet::new(vec![report]);
    session.close(plan, &set)?;
    cleanup?;
    Ok(if interrupted {
        Verdict::Interrupted
    } else if verdict::passed(&set.runs) {
        Verdict::Done
    } else {
        Verdict::Failed
    })
}

/// A client of the cluster, once it is known that `prefix` holds no key (etcdctl's check:
/// the cleanup deletes every key under it).
async fn preflight(plan: &RunPlan, endpoints: &[String], prefix: &str) -> Result<Client> {
    let dial_timeout = plan.dial_timeout.unwrap_or(DEFAULT_DIAL_TIMEOUT);
    let client = connect_client(endpoints, &plan.securities[0], dial_timeout).await;
    let mut client = match client {
        Err(e) if plan.default_endpoint => {
            return Err(anyhow::Error::new(e).context(format!(
                "no etcd at the default endpoint {DEFAULT_ENDPOINT}: pass --endpoints, or --local to start a throwaway etcd"
            )));
        }
        other => other?,
    };
    let options = GetOptions::new().with_prefix().with_limit(1).with_keys_only();
    let found = tokio::time::timeout(CLEANUP_TIMEOUT, client.get(prefix, Some(options)))
        .await
        .context("looking for keys under the prefix: timed out")?
        .context("looking for keys under the prefix")?;
    if !found.kvs().is_empty() {
        bail!("prefix {prefix:?} has keys. Delete with 'etcdctl del --prefix {prefix}' first");
    }
    Ok(client)
}

/// Deletes the check's keys; compacts at the deletion's revision and defragments every
/// endpoint when asked.
async fn cleanup(
    mut client: Client,
    plan: &RunPlan,
    endpoints: &[String],
    check: &PerfCheck,
) -> Result<()> {
    let options = DeleteOptions::new().with_prefix();
    let deleted =
        tokio::time::timeout(CLEANUP_TIMEOUT, client.delete(check.prefix.as_str(), Some(options)))
            .await
            .context("cleanup: deleting the check's keys: timed out")?
            .context("cleanup: deleting the check's keys")?;
    let revision = deleted.header().map_or(0, |h| h.revision());
    if check.auto_compact {
        tokio::time::timeout(CLEANUP_TIMEOUT, client.compact(revision, None))
            .await
            .context("cleanup: compacting: timed out")?
            .with_context(|| format!("cleanup: compacting at revision {revision}"))?;
    }
    if check.auto_defrag {
        let dial_timeout = plan.dial_timeout.unwrap_or(DEFAULT_DIAL_TIMEOUT);
        for endpoint in endpoints {
            let one = std::slice::from_ref(endpoint);
            let mut member = connect_client(one, &plan.securities[0], dial_timeout)
                .await
                .with_context(|| format!("cleanup: defragmenting {endpoint}"))?;
            tokio::time::timeout(CLEANUP_TIMEOUT, member.defragment())
                .await
                .with_context(|| format!("cleanup: defragmenting {endpoint}: timed out"))?
                .with_context(|| format!("cleanup: defragmenting {endpoint}"))?;
        }
    }
    Ok(())
}
