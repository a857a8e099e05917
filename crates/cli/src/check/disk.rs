//! `etcdlat check disk`: runs the library's disk test on a thread of its own (blocking file
//! I/O stays off the runtime's threads), tells it to stop on Ctrl-C, and prints its figures
//! and the verdict; `--json` writes the figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use etcdlat_core::check::DiskReport;
use etcdlat_driver::DiskError;

use crate::output;
use crate::plan::DiskPlan;
use crate::shutdown::shutdown_signal;
use crate::verdict::Verdict;

/// Runs the test of `plan`, prints and writes its report; exit 1 when the disk fails etcd's
/// guidance, 130 when stopped (nothing written then: the figures would be of part of a test).
pub async fn execute(plan: DiskPlan) -> Result<Verdict> {
    let mut stop = shutdown_signal();
    let flag = Arc::new(AtomicBool::new(false));
    let (tx, mut rx) = tokio::sync::oneshot::channel();
    let (test, thread_flag) = (plan.test.clone(), Arc::clone(&flag));
    if plan.print_text {
        eprintln!(
            "etcdlat: testing {} (fdatasync after each small write, then bandwidth)",
            plan.dir.display()
        );
    }
    std::thread::Builder::new()
        .name("etcdlat-disk".into())
        .spawn(move || {
            let _ = tx.send(test.run(&thread_flag));
        })
        .context("starting the disk test's thread")?;
    let early = tokio::select! {
        done = &mut rx => Some(done),
        _ = stop.wait_for(|s| *s) => None,
    };
    let done = match early {
        Some(done) => done,
        None => {
            // The thread stops at its next write and removes its files before it answers.
            flag.store(true, Ordering::Relaxed);
            rx.await
        }
    };
    let report = match done.context("the disk test's thread ended without an answer")? {
        Ok(report) => report,
        Err(DiskError::Stopped) => return Ok(Verdict::Interrupted),
        Err(e) => return Err(e.into()),
    };
    if plan.print_text {
        output::print(&text(&report))?;
    }
    if let Some(json) = &plan.json {
        let text = serde_json::to_string_pretty(&report).context("writing the JSON")?;
        json.write(&(text + "\n"))?;
    }
    Ok(if report.verdict().passed { Verdict::Done } else { Verdict::Failed })
}

/// The figures as a person reads them, the verdict last.
fn text(r: &DiskReport) -> String {
    let ms = |q: f64| format!("{:.3} ms", r.fdatasync.quantile_us(q) as f64 / 1e3);
    let mean = format!("{:.3} ms", r.fdatasync.mean_us() / 1e3);
    let max = format!("{:.3} ms", r.fdatasync.max_us() as f64 / 1e3);
    format!(
        "Disk check of {dir}\n\
         \n\
         WAL pattern: {writes} writes of {bytes} bytes, each followed by fdatasync\n  \
         fdatasync p50:   {p50}\n  \
         fdatasync p99:   {p99}\n  \
         fdatasync p99.9: {p999}\n  \
         fdatasync mean:  {mean}\n  \
         fdatasync max:   {max}\n\
         Sequential write: {mib:.1} MiB in 64 KiB writes, then fdatasync: {mbps:.1} MB/s\n\
         \n\
         {verdict}\n",
        dir = r.dir,
        writes = r.writes,
        bytes = r.write_bytes,
        p50 = ms(0.5),
        p99 = ms(0.99),
        p999 = ms(0.999),
        mib = r.bandwidth_bytes as f64 / f64::from(1u32 << 20),
        mbps = r.bandwidth_mb_per_s,
        verdict = r.verdict(),
    )
}
