//! What the machine says about a process and a disk, beyond `/metrics`: a member's (or
//! etcdlat's own) CPU time, memory, context switches and I/O from Linux's `/proc`, a data
//! dir's size, and the block device under it from `/proc/diskstats`.
//!
//! Every reading is a plain file read (no process is started, nothing is written) that
//! either gives its figures or says why not, in words a report can show. Off Linux the
//! `/proc` readings say so; a data dir's size is read everywhere.

// Off Linux the /proc parsers and what they fill are never reached, only tested.
#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::path::Path;

/// Why a `/proc` figure is missing off Linux.
#[cfg(not(target_os = "linux"))]
const NOT_LINUX: &str = "needs Linux's /proc";

/// A process's counters at one moment, from `/proc/PID`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessCounters {
    /// CPU time, user and system, all threads, seconds (`stat`).
    pub cpu_s: f64,
    /// Resident memory, bytes (`status` `VmRSS`).
    pub rss_bytes: u64,
    /// Context switches, voluntary and involuntary, summed over its threads
    /// (`task/*/status`).
    pub ctxt_switches: (u64, u64),
    /// Its I/O counters (`io`), or why they could not be read (another user's process).
    pub io: Result<IoCounters, String>,
}

/// `/proc/PID/io`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct IoCounters {
    pub rchar: u64,
    pub wchar: u64,
    pub syscr: u64,
    pub syscw: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// A data dir's size: every file under it, and under `member/wal` and `member/snap`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DirSizes {
    pub total: u64,
    pub wal: u64,
    pub snap: u64,
}

/// A block device's counters since boot (`/proc/diskstats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct DiskCounters {
    pub reads_completed: u64,
    pub sectors_read: u64,
    pub writes_completed: u64,
    pub sectors_written: u64,
}

/// The block device a data dir is on: its `/proc/diskstats` line's name and number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Disk {
    pub name: String,
    pub major: u32,
    pub minor: u32,
}

/// The sizes of the files under `dir` (not following links), and of those under its
/// `member/wal` and `member/snap`. A file that goes away while it is walked (etcd removes
/// old snapshots and WAL segments) is left out, not an error.
pub(crate) fn dir_sizes(dir: &Path) -> Result<DirSizes, String> {
    fn walk(dir: &Path, sizes: &mut u64) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let Ok(entry) = entry else { continue };
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                // A dir removed meanwhile is as good as empty.
                let _ = walk(&entry.path(), sizes);
            } else {
                *sizes += meta.len();
            }
        }
        Ok(())
    }
    let mut total = 0;
    walk(dir, &mut total).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let (mut wal, mut snap) = (0, 0);
    let _ = walk(&dir.join("member").join("wal"), &mut wal);
    let _ = walk(&dir.join("member").join("snap"), &mut snap);
    Ok(DirSizes { total, wal, snap })
}

/// `/proc/PID`'s counters of process `pid`.
#[cfg(target_os = "linux")]
pub(crate) fn process(pid: u32) -> Result<ProcessCounters, String> {
    let dir = Path::new("/proc").join(pid.to_string());
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("reading /proc/{pid}/{name}: {e}"))
    };
    let (user_s, system_s) =
        cpu_seconds(&read("stat")?).ok_or_else(|| format!("/proc/{pid}/stat: unreadable"))?;
    let cpu_s = user_s + system_s;
    let rss_bytes = field(&read("status")?, "VmRSS:")
        .map(|kb| kb * 1024)
        .ok_or_else(|| format!("/proc/{pid}/status: no VmRSS"))?;
    // A process's own status counts its main thread's switches only; its threads' add up
    // to the process's (those of threads that ended are lost, as they are in /proc).
    let mut ctxt_switches = (0, 0);
    let tasks = std::fs::read_dir(dir.join("task"))
        .map_err(|e| format!("reading /proc/{pid}/task: {e}"))?;
    for task in tasks.flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else { continue };
        ctxt_switches.0 += field(&status, "voluntary_ctxt_switches:").unwrap_or(0);
        ctxt_switches.1 += field(&status, "nonvoluntary_ctxt_switches:").unwrap_or(0);
    }
    let io = read("io").map(|text| IoCounters {
        rchar: field(&text, "rchar:").unwrap_or(0),
        wchar: field(&text, "wchar:").unwrap_or(0),
        syscr: field(&text, "syscr:").unwrap_or(0),
        syscw: field(&text, "syscw:").unwrap_or(0),
        read_bytes: field(&text, "read_bytes:").unwrap_or(0),
        write_bytes: field(&text, "write_bytes:").unwrap_or(0),
    });
    Ok(ProcessCounters { cpu_s, rss_bytes, ctxt_switches, io })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn process(_pid: u32) -> Result<ProcessCounters, String> {
    Err(NOT_LINUX.to_owned())
}

/// This process's resident memory, bytes.
#[cfg(target_os = "linux")]
pub(crate) fn own_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    field(&status, "VmRSS:").map(|kb| kb * 1024)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn own_rss_bytes() -> Option<u64> {
    None
}

/// `getrusage(RUSAGE_SELF)`: every thread of this process, those that ended included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rusage {
    pub user_s: f64,
    pub system_s: f64,
    /// Peak resident memory since the process started, bytes.
    pub max_rss_bytes: u64,
    /// Voluntary and involuntary context switches.
    pub ctxt_switches: (u64, u64),
}

/// This process's [`Rusage`]; `None` where the platform does not tell.
#[cfg(unix)]
pub(crate) fn rusage() -> Option<Rusage> {
    use nix::sys::resource::{UsageWho, getrusage};
    use nix::sys::time::TimeValLike;
    let usage = getrusage(UsageWho::RUSAGE_SELF).ok()?;
    let secs = |t: nix::sys::time::TimeVal| t.num_microseconds() as f64 / 1e6;
    let count = |n: std::ffi::c_long| u64::try_from(n).unwrap_or(0);
    let max_rss = count(usage.max_rss());
    // macOS counts bytes; Linux and the BSDs count kilobytes.
    let max_rss_bytes = if cfg!(target_vendor = "apple") { max_rss } else { max_rss * 1024 };
    Some(Rusage {
        user_s: secs(usage.user_time()),
        system_s: secs(usage.system_time()),
        max_rss_bytes,
        ctxt_switches: (
            count(usage.voluntary_context_switches()),
            count(usage.involuntary_context_switches()),
        ),
    })
}

#[cfg(not(unix))]
pub(crate) fn rusage() -> Option<Rusage> {
    None
}

/// The number after `name` on its line of a `/proc` file of `name: value` lines.
fn field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// User and system CPU time from a `/proc/PID/stat` line, seconds: fields 14 and 15, in
/// clock ticks, counted after the command name (which may hold spaces and parentheses).
#[cfg(target_os = "linux")]
fn cpu_seconds(stat: &str) -> Option<(f64, f64)> {
    let mut fields = fields_after_name(stat)?;
    // Field 3 (the state) is the first after the name: utime is the 12th from there.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let ticks = clock_ticks_per_second();
    Some((utime as f64 / ticks, stime as f64 / ticks))
}

/// Whether a `/proc/PID/stat` line's scheduling policy (field 41) is a real-time one
/// (`SCHED_FIFO` 1 or `SCHED_RR` 2).
#[cfg(target_os = "linux")]
fn realtime_policy(stat: &str) -> Option<bool> {
    // Field 3 is the first after the name: the policy is the 39th from there.
    let policy: u32 = fields_after_name(stat)?.nth(38)?.parse().ok()?;
    Some(matches!(policy, 1 | 2))
}

/// A `/proc/PID/stat` line's fields after the command name (which may hold spaces and
/// parentheses), from field 3, the state.
#[cfg(target_os = "linux")]
fn fields_after_name(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat[stat.rfind(')')? + 1..].split_whitespace())
}

/// One thread of this process ([`own_thread`]): its CPU time, context switches and
/// scheduling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ThreadCounters {
    pub user_s: f64,
    pub system_s: f64,
    /// Voluntary and involuntary context switches.
    pub ctxt_switches: (u64, u64),
    /// Scheduled real-time (`SCHED_FIFO` or `SCHED_RR`), ahead of every ordinary thread.
    pub realtime: bool,
}

/// The counters of this process's thread `tid`, from `/proc/self/task/TID` (CPU time in
/// clock ticks, 10 ms).
#[cfg(target_os = "linux")]
pub(crate) fn own_thread(tid: i32) -> Result<ThreadCounters, String> {
    let dir = Path::new("/proc/self/task").join(tid.to_string());
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("reading /proc/self/task/{tid}/{name}: {e}"))
    };
    let stat = read("stat")?;
    let unreadable = || format!("/proc/self/task/{tid}/stat: unreadable");
    let (user_s, system_s) = cpu_seconds(&stat).ok_or_else(unreadable)?;
    let realtime = realtime_policy(&stat).ok_or_else(unreadable)?;
    let status = read("status")?;
    Ok(ThreadCounters {
        user_s,
        system_s,
        ctxt_switches: (
            field(&status, "voluntary_ctxt_switches:").unwrap_or(0),
            field(&status, "nonvoluntary_ctxt_switches:").unwrap_or(0),
        ),
        realtime,
    })
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn own_thread(_tid: i32) -> Result<ThreadCounters, String> {
    Err(NOT_LINUX.to_owned())
}

/// This process's [`Rusage`] without the share of threads `apart` that can be read (the
/// network emulator's threads, whose work is not the client's).
pub(crate) fn rusage_without(apart: &[i32]) -> Option<Rusage> {
    let mut usage = rusage()?;
    for t in apart.iter().filter_map(|tid| own_thread(*tid).ok()) {
        usage.user_s = (usage.user_s - t.user_s).max(0.0);
        usage.system_s = (usage.system_s - t.system_s).max(0.0);
        usage.ctxt_switches.0 = usage.ctxt_switches.0.saturating_sub(t.ctxt_switches.0);
        usage.ctxt_switches.1 = usage.ctxt_switches.1.saturating_sub(t.ctxt_switches.1);
    }
    Some(usage)
}

/// `sysconf(_SC_CLK_TCK)`, the unit of `/proc/PID/stat`'s times (100 on Linux everywhere).
#[cfg(target_os = "linux")]
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(t)) if t > 0 => t as f64,
        _ => 100.0,
    })
}

/// The block device whose `/proc/diskstats` line counts the I/O to `dir`: the device the
/// filesystem is on (its partition's line), else the whole disk of that partition, else the
/// device the mount names (a btrfs subvolume's files carry an anonymous device number).
/// None for a filesystem with no block device (tmpfs, overlay, a network filesystem), with
/// why.
#[cfg(target_os = "linux")]
pub(crate) fn disk_of(dir: &Path) -> Result<Disk, String> {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?.dev();
    let stats = std::fs::read_to_string("/proc/diskstats")
        .map_err(|e| format!("reading /proc/diskstats: {e}"))?;
    let (major, minor) = split_dev(dev);
    let line = |(major, minor): (u32, u32)| diskstats_line(&stats, major, minor);
    let found =
        line((major, minor)).or_else(|| whole_disk(major, minor).and_then(line)).or_else(|| {
            let source = mount_of(major, minor)?.1;
            let rdev = std::fs::metadata(&source).ok()?.rdev();
            let (major, minor) = split_dev(rdev);
            line((major, minor)).or_else(|| whole_disk(major, minor).and_then(line))
        });
    if let Some((name, _)) = found {
        let (major, minor) = diskstats_number(&stats, &name).unwrap_or((major, minor));
        return Ok(Disk { name, major, minor });
    }
    let on = match mount_of(major, minor) {
        Some((fs_type, source)) => format!("{fs_type} ({source}, device {major}:{minor})"),
        None => format!("device {major}:{minor}"),
    };
    Err(format!(
        "the data dir {} is on {on}, which has no block device in /proc/diskstats",
        dir.display()
    ))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn disk_of(_dir: &Path) -> Result<Disk, String> {
    Err(NOT_LINUX.to_owned())
}

impl Disk {
    /// The device's counters now.
    #[cfg(target_os = "linux")]
    pub(crate) fn read(&self) -> Result<DiskCounters, String> {
        let stats = std::fs::read_to_string("/proc/diskstats")
            .map_err(|e| format!("reading /proc/diskstats: {e}"))?;
        diskstats_line(&stats, self.major, self.minor)
            .map(|(_, counters)| counters)
            .ok_or_else(|| format!("{} is gone from /proc/diskstats", self.name))
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn read(&self) -> Result<DiskCounters, String> {
        Err(NOT_LINUX.to_owned())
    }
}

/// A `dev_t`'s major and minor numbers, as glibc's `major()` and `minor()` split them.
fn split_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    (major as u32, minor as u32)
}

/// The name and counters of device `major:minor` in `/proc/diskstats`' text: `major minor
/// name` then reads completed, reads merged, sectors read, time reading, writes completed,
/// writes merged, sectors written, ...
fn diskstats_line(stats: &str, major: u32, minor: u32) -> Option<(String, DiskCounters)> {
    stats.lines().find_map(|line| {
        let mut f = line.split_whitespace();
        let (ma, mi) = (f.next()?.parse::<u32>().ok()?, f.next()?.parse::<u32>().ok()?);
        if (ma, mi) != (major, minor) {
            return None;
        }
        let name = f.next()?.to_owned();
        let n: Vec<u64> = f.take(7).map(|x| x.parse().unwrap_or(0)).collect();
        let counters = DiskCounters {
            reads_completed: *n.first()?,
            sectors_read: *n.get(2)?,
            writes_completed: *n.get(4)?,
            sectors_written: *n.get(6)?,
        };
        Some((name, counters))
    })
}

/// The device number of `name` in `/proc/diskstats`' text.
fn diskstats_number(stats: &str, name: &str) -> Option<(u32, u32)> {
    stats.lines().find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().take(3).collect();
        (f.get(2) == Some(&name)).then(|| Some((f[0].parse().ok()?, f[1].parse().ok()?)))?
    })
}

/// The whole disk a partition `major:minor` belongs to, from sysfs: the partition's
/// directory sits in its disk's, whose `dev` file holds the disk's number.
#[cfg(target_os = "linux")]
fn whole_disk(major: u32, minor: u32) -> Option<(u32, u32)> {
    let partition = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    if !partition.join("partition").exists() {
        return None;
    }
    let dev = std::fs::read_to_string(partition.parent()?.join("dev")).ok()?;
    let (major, minor) = dev.trim().split_once(':')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The filesystem type and source of the mount with device `major:minor`, from
/// `/proc/self/mountinfo` (`id parent major:minor root mount-point options ... - type source
/// super-options`).
#[cfg(target_os = "linux")]
fn mount_of(major: u32, minor: u32) -> Option<(String, String)> {
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let dev = format!("{major}:{minor}");
    mountinfo.lines().find_map(|line| {
        let (head, tail) = line.split_once(" - ")?;
        if head.split_whitespace().nth(2)? != dev {
            return None;
        }
        let mut tail = tail.split_whitespace();
        Some((tail.next()?.to_owned(), tail.next()?.to_owned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DISKSTATS: &str = "\
   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 140736 27980 12709906 145524 42234 158239 94751376 566712 0 41848 719554
   8       1 sda1 5 6 7 8 9 10 11 12 0 0 0
";

    #[test]
    fn diskstats_lines_are_read_by_device_number() {
        let (name, c) = diskstats_line(DISKSTATS, 254, 0).unwrap();
        assert_eq!(name, "vda");
        assert_eq!(
            c,
            DiskCounters {
                reads_completed: 140_736,
                sectors_read: 12_709_906,
                writes_completed: 42_234,
                sectors_written: 94_751_376
            }
        );
        assert_eq!(diskstats_line(DISKSTATS, 8, 1).unwrap().1.sectors_written, 11);
        assert_eq!(diskstats_line(DISKSTATS, 0, 52), None);
        assert_eq!(diskstats_number(DISKSTATS, "sda1"), Some((8, 1)));
    }

    #[test]
    fn device_numbers_split_as_glibc_splits_them() {
        assert_eq!(split_dev(0xfe00), (254, 0));
        assert_eq!(split_dev(0x0801), (8, 1));
        // A large minor number (device-mapper, NVMe namespaces) uses the high bits.
        assert_eq!(split_dev((259 << 8) | (0x1200 << 12) | 0x34), (259, 0x1234));
    }

    #[test]
    fn proc_fields_are_read_by_name() {
        let status = "Name:\tetcd\nVmRSS:\t   31544 kB\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(field(status, "VmRSS:"), Some(31_544));
        assert_eq!(field(status, "voluntary_ctxt_switches:"), Some(12));
        assert_eq!(field(status, "nonvoluntary_ctxt_switches:"), Some(3));
        assert_eq!(field(status, "VmSwap:"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_busy_thread_is_read_and_taken_out_of_the_process_usage() {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            tid_tx.send(nix::unistd::gettid().as_raw()).unwrap();
            // 300 ms of this thread's own CPU, however busy the machine is; then idle.
            let cpu = || nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID);
            let mut x = 0u64;
            while cpu().unwrap().tv_nsec() < 300_000_000 && cpu().unwrap().tv_sec() == 0 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            tid_tx.send(0).unwrap();
            let _ = stop_rx.recv();
            x
        });
        let tid = tid_rx.recv().unwrap();
        assert_eq!(tid_rx.recv().unwrap(), 0, "the spinner is done");
        let thread = own_thread(tid).unwrap();
        let (all, without) = (rusage().unwrap(), rusage_without(&[tid]).unwrap());
        stop_tx.send(()).unwrap();
        spinner.join().unwrap();
        let cpu = thread.user_s + thread.system_s;
        // Clock ticks of 10 ms either side.
        assert!((0.28..=0.33).contains(&cpu), "the spinner's CPU: {thread:?}");
        let taken = (all.user_s + all.system_s) - (without.user_s + without.system_s);
        assert!((taken - cpu).abs() < 0.05, "{taken} s taken out for a thread of {cpu} s");
        assert_eq!(rusage_without(&[]).map(|u| u.max_rss_bytes > 0), Some(true));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_stat_line_gives_cpu_time_whatever_the_command_name() {
        // utime 250 and stime 150 ticks; a name with spaces and a parenthesis.
        let stat = "4242 (etc d) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0";
        let ticks = clock_ticks_per_second();
        assert_eq!(cpu_seconds(stat), Some((250.0 / ticks, 150.0 / ticks)));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_stat_line_gives_the_scheduling_policy() {
        // A whole line of a thread of this project's (52 fields), under SCHED_FIFO (field
        // 41 is 1) at real-time priority 1 (field 40), with a name that has a parenthesis.
        let line = |policy: u32| {
            format!(
                "3101 (etcdlat-net) x) S 3090 3090 3060 34816 3090 4194368 171 0 0 0 29 47 0 0 -2 0 \
                 3 0 4886135 1052770304 11043 18446744073709551615 1 1 0 0 0 0 0 4096 1088 0 0 \
                 0 -1 1 1 {policy} 0 0 0 0 0 0 0 0 0 0"
            )
        };
        assert_eq!(realtime_policy(&line(1)), Some(true));
        assert_eq!(realtime_policy(&line(2)), Some(true));
        assert_eq!(realtime_policy(&line(0)), Some(false));
        assert_eq!(realtime_policy("4242 (etcd) S 1 2 3"), None, "cut short");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_reads_itself() {
        let me = process(std::process::id()).expect("/proc/self");
        assert!(me.rss_bytes > 1 << 20, "{me:?}");
        assert!(me.ctxt_switches.0 + me.ctxt_switches.1 > 0, "{me:?}");
        assert!(me.io.is_ok(), "{me:?}");
        assert!(own_rss_bytes().is_some_and(|b| b > 1 << 20));
    }

    #[test]
    fn a_data_dir_is_sized_by_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("member").join("wal");
        let snap = dir.path().join("member").join("snap");
        std::fs::create_dir_all(&wal).unwrap();
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::write(wal.join("0.wal"), vec![0u8; 3000]).unwrap();
        std::fs::write(snap.join("db"), vec![0u8; 500]).unwrap();
        std::fs::write(dir.path().join("other"), vec![0u8; 7]).unwrap();
        let sizes = dir_sizes(dir.path()).unwrap();
        assert_eq!(sizes, DirSizes { total: 3507, wal: 3000, snap: 500 });
        assert!(dir_sizes(&dir.path().join("missing")).is_err());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_dir_on_a_block_device_finds_its_line_and_tmpfs_says_why_not() {
        // The temp dir is on a disk on most machines; where it is not, it must say why.
        let dir = tempfile::tempdir().unwrap();
        match disk_of(dir.path()) {
            Ok(disk) => assert!(disk.read().is_ok(), "{disk:?}"),
            Err(why) => assert!(why.contains("no block device"), "{why}"),
        }
        if Path::new("/dev/shm").exists() {
            let why = disk_of(Path::new("/dev/shm")).expect_err("tmpfs has no block device");
            assert!(why.contains("tmpfs") && why.contains("no block device"), "{why}");
        }
    }
}
