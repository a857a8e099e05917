//! Findings from real runs: a member on a slow disk (its process put in a block-I/O cgroup
//! that lets its disk take 15 writes a second, so each WAL fdatasync waits for the
//! throttle) has a WAL fsync p99 over etcd's 10 ms, and the report says so once, on that
//! member, in its findings and its text; the same cluster unthrottled has none.
//!
//! The throttle is the kernel's own (cgroup v1 `blkio.throttle.write_iops_device`, or v2
//! `io.max`), on the block device that holds the member's data dir: it needs root and one
//! of those controllers, and fails naming what is missing otherwise.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use etcdlat_core::report::FindingKind;
use etcdlat_testkit::{Etcd, skip};

use crate::run_on;

/// Writes a second the throttled disk takes: each fdatasync is a few writes (data,
/// journal), so well over 10 ms apiece.
const WRITE_IOPS: u32 = 15;

/// A cgroup whose processes' writes to one block device are throttled, removed on drop
/// (its processes moved back to the root first).
struct Throttle {
    dir: PathBuf,
    root: PathBuf,
}

impl Throttle {
    /// Moves `pid` into a new cgroup that lets it write `iops` times a second to the block
    /// device holding `path`.
    fn disk_of(path: &Path, pid: u32, iops: u32) -> Self {
        let dev = std::fs::metadata(path).expect("the data dir").dev();
        // Linux's dev_t, as glibc's gnu_dev_major and gnu_dev_minor read it.
        let major = ((dev & 0x0000_0000_000f_ff00) >> 8) | ((dev & 0xffff_f000_0000_0000) >> 32);
        let minor = (dev & 0xff) | ((dev & 0x0000_0fff_fff0_0000) >> 12);
        let device = format!("{major}:{minor}");
        let v1 = Path::new("/sys/fs/cgroup/blkio");
        let v2 = Path::new("/sys/fs/cgroup");
        let name = format!("etcdlat-test-slow-disk-{pid}");
        let (root, dir, file, limit) = if v1.join("blkio.throttle.write_iops_device").exists() {
            (v1, v1.join(&name), "blkio.throttle.write_iops_device", format!("{device} {iops}"))
        } else if std::fs::read_to_string(v2.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "io"))
        {
            (v2, v2.join(&name), "io.max", format!("{device} wiops={iops}"))
        } else {
            panic!(
                "this test throttles etcd's disk with a block-I/O cgroup: it needs root and \
                 cgroup v1's blkio or v2's io controller (neither is mounted here)"
            );
        };
        std::fs::create_dir(&dir)
            .unwrap_or_else(|e| panic!("creating {} (the test needs root): {e}", dir.display()));
        let throttle = Self { dir, root: root.to_owned() };
        std::fs::write(throttle.dir.join(file), &limit).unwrap_or_else(|e| {
            panic!("{limit} into {file}: {e} (is {device} the block device of {path:?}?)")
        });
        std::fs::write(throttle.dir.join("cgroup.procs"), pid.to_string()).unwrap();
        throttle
    }
}

impl Drop for Throttle {
    fn drop(&mut self) {
        if let Ok(pids) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in pids.lines() {
                let _ = std::fs::write(self.root.join("cgroup.procs"), pid);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Puts, one at a time, each fsynced by the member.
const PUTS: &str = "[load]\nclients = 1\ntotal = 40\n[op.put]\nval-size = 256\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_on_a_slow_disk_is_a_wal_fsync_finding() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    // The same member first on its own disk, as it is: no finding of the disk.
    let report = run_on(&etcd, 1, PUTS).await;
    let m = &report.server[0];
    assert!(m.wal_fsync_p99_us.is_some(), "{m:?}");
    let disk = |r: &etcdlat_core::Report| {
        r.findings().into_iter().filter(|f| f.kind == FindingKind::WalFsync).collect::<Vec<_>>()
    };
    // A loaded machine's disk may itself be slow; then the test holds nothing of it.
    let fast = m.wal_fsync_p99_us.is_some_and(|p| p <= 10_000);
    if fast {
        assert_eq!(disk(&report), vec![], "{m:?}");
    }

    let member = &etcd.local().members()[0];
    let pid = member.pid().expect("the member runs");
    let _throttle = Throttle::disk_of(etcd.local().dir(), pid, WRITE_IOPS);
    let report = run_on(&etcd, 1, PUTS).await;
    let m = &report.server[0];
    let p99 = m.wal_fsync_p99_us.expect("fsyncs measured");
    assert!(p99 > 10_000, "{WRITE_IOPS} writes a second make fsyncs slow: {m:?}");
    let found = disk(&report);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].member.as_deref(), Some(member.name()));
    assert_eq!(found[0].guidance, 10.0);
    assert!(found[0].value > 10.0, "{found:?}");
    let text = etcdlat_render::text(&report, &etcdlat_render::TextOptions::default());
    let findings: Vec<&str> = text.lines().skip_while(|l| *l != "Findings:").collect();
    let line =
        format!("  {}: WAL fsync p99 was {} ms, over etcd's 10 ms", member.name(), found[0].value);
    assert_eq!(findings.iter().filter(|l| l.starts_with(&line)).count(), 1, "{text}");
    // Each finding once, in the one section.
    assert_eq!(text.matches("WAL fsync p99 was").count(), 1, "{text}");
}
