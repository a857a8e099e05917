//! `etcdlat check`: `check disk`'s directory and sizes, and `check perf`'s load as a put
//! scenario with etcdctl's rules as its thresholds (the rest of its plan is a load run's).

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use etcdlat_core::Scenario;
use etcdlat_core::check::PerfLoad;
use etcdlat_driver::DiskTest;

use super::flag::{duration_flag, size_flag};
use crate::command_line::{CheckDiskArgs, CheckPerfArgs, Global};
use crate::output::{Target, targets};

/// `check disk`, validated.
#[derive(Debug)]
pub struct DiskPlan {
    /// The test.
    pub test: DiskTest,
    /// The directory, as shown.
    pub dir: PathBuf,
    /// `--json`.
    pub json: Option<Target>,
    /// Print the text (not with `--quiet` or `--json -`).
    pub print_text: bool,
}

/// `check perf`'s own settings; its load is the plan's one scenario.
#[derive(Debug)]
pub struct PerfCheck {
    /// The load model.
    pub load: PerfLoad,
    /// The keys' prefix.
    pub prefix: String,
    /// Compact at the revision of the cleanup's delete.
    pub auto_compact: bool,
    /// Defragment every endpoint after.
    pub auto_defrag: bool,
}

/// `check disk`'s flags: `DIR` defaults to `temp_dir`.
pub(super) fn disk(args: &CheckDiskArgs, g: &Global, temp_dir: PathBuf) -> Result<DiskPlan> {
    let dir = args.dir.clone().unwrap_or(temp_dir);
    let test = DiskTest::new(&dir)
        .test_bytes(size_flag("--size", &args.size)?)
        .write_bytes(size_flag("--bs", &args.bs)?)
        .bandwidth_bytes(size_flag("--bandwidth-size", &args.bandwidth_size)?);
    test.check()?;
    let [json] = targets([("--json", g.json.as_deref())])?;
    let print_text = !g.quiet && json != Some(Target::Stdout);
    Ok(DiskPlan { test, dir, json, print_text })
}

/// `check perf`'s scenario and settings.
pub(super) fn perf(args: &CheckPerfArgs) -> Result<(Scenario, PerfCheck)> {
    let load: PerfLoad = args.load.parse().map_err(|e| anyhow!("--load: {e}"))?;
    if args.prefix.is_empty() {
        anyhow::bail!("--prefix: must not be empty (the check deletes every key under it)");
    }
    let duration = duration_flag("--duration", args.duration.as_deref())?;
    let duration = match duration {
        Some(d) if d.is_zero() => anyhow::bail!("--duration: must be more than 0"),
        Some(d) => d,
        None => load.duration(),
    };
    let scenario = load.scenario(&args.prefix, duration);
    let check = PerfCheck {
        load,
        prefix: args.prefix.clone(),
        auto_compact: args.auto_compact,
        auto_defrag: args.auto_defrag,
    };
    Ok((scenario, check))
}
