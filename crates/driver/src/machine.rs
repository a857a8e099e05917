//! The machine a run runs on, for its report ([`describe`]): CPUs, memory, load average and
//! kernel as the OS tells them, and the CPUs the client, the emulated network's threads and
//! the members may run on (their affinity), to say whether they shared any.

use etcdlat_core::Machine;

use crate::cluster::discovery::MemberInfo;
use crate::cluster::local::MemberControl;

/// The machine of a run whose workers are pinned to `cpus` (none: the process's), whose
/// emulated network runs on threads `emulator`, against `members`, whose processes
/// `control` knows when etcdlat started them.
pub(crate) async fn of_run(
    cpus: &[usize],
    emulator: &[i32],
    control: Option<&MemberControl>,
    members: &[MemberInfo],
) -> Machine {
    let pids: Vec<u32> = match control {
        Some(control) => {
            members.iter().filter_map(|m| control.member_process(&m.name)?.pid()).collect()
        }
        None => Vec::new(),
    };
    // `/proc`, `uname` and the affinity masks are read on a blocking thread, as the
    // sampler reads `/proc`: never on the runtime's.
    let (cpus, emulator) = (cpus.to_vec(), emulator.to_vec());
    crate::cluster::metrics::off_runtime(move || describe(&cpus, &emulator, &pids)).await
}

/// The machine now: the client's workers may run on `client_cpus` (those given to pin
/// them, or the process's when empty), the emulated network runs on threads `emulator`, the
/// members are processes `members` (empty when etcdlat did not start them).
pub(crate) fn describe(client_cpus: &[usize], emulator: &[i32], members: &[u32]) -> Machine {
    let client_cpus = if client_cpus.is_empty() {
        crate::affinity::process_cpus()
    } else {
        let mut cpus = client_cpus.to_vec();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    };
    let union = |sets: Vec<Vec<usize>>| {
        let mut all: Vec<usize> = sets.into_iter().flatten().collect();
        all.sort_unstable();
        all.dedup();
        all
    };
    let emulator_cpus = union(emulator.iter().filter_map(|&tid| cpus_of(tid)).collect());
    let member_cpus: Vec<Vec<usize>> =
        members.iter().filter_map(|&pid| cpus_of(i32::try_from(pid).ok()?)).collect();
    // A member whose CPUs cannot be read leaves them unknown, not fewer.
    let member_cpus =
        if member_cpus.len() == members.len() { union(member_cpus) } else { Vec::new() };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |name: &str| meminfo_kib(&meminfo, name).map(|k| k * 1024);
    // Field by field: the type is non-exhaustive.
    let mut machine = Machine::default();
    machine.cpus = online_cpus();
    machine.memory_bytes = kib("MemTotal:");
    machine.memory_available_bytes = kib("MemAvailable:");
    machine.load_average =
        std::fs::read_to_string("/proc/loadavg").ok().and_then(|l| load_average(&l));
    machine.kernel = kernel();
    machine.shared_cpus = Machine::sharing(&client_cpus, &emulator_cpus, &member_cpus);
    machine.client_cpus = client_cpus;
    machine.emulator_cpus = emulator_cpus;
    machine.member_cpus = member_cpus;
    machine
}

/// The CPUs the OS has online.
fn online_cpus() -> u32 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Ok(Some(n)) = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN) {
        return u32::try_from(n).unwrap_or(1);
    }
    std::thread::available_parallelism().map_or(1, |n| u32::try_from(n.get()).unwrap_or(1))
}

/// The kernel's name and release: `Linux 6.1.0-18-amd64`.
fn kernel() -> String {
    #[cfg(unix)]
    if let Ok(u) = nix::sys::utsname::uname() {
        return format!("{} {}", u.sysname().to_string_lossy(), u.release().to_string_lossy());
    }
    std::env::consts::OS.to_owned()
}

/// The CPUs thread or process `id` may run on (Linux); `None` where it cannot be read.
fn cpus_of(id: i32) -> Option<Vec<usize>> {
    #[cfg(target_os = "linux")]
    {
        use nix::sched::{CpuSet, sched_getaffinity};
        let set = sched_getaffinity(nix::unistd::Pid::from_raw(id)).ok()?;
        Some((0..CpuSet::count()).filter(|&c| set.is_set(c).unwrap_or(false)).collect())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = id;
        None
    }
}

/// The kibibytes of `name` (`MemTotal:`) in `/proc/meminfo`'s text.
fn meminfo_kib(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(name))?;
    line[name.len()..].split_whitespace().next()?.parse().ok()
}

/// The three load averages of `/proc/loadavg`'s text (`0.52 0.40 0.33 1/234 5678`).
fn load_average(text: &str) -> Option<[f64; 3]> {
    let mut f = text.split_whitespace().map(str::parse::<f64>);
    Some([f.next()?.ok()?, f.next()?.ok()?, f.next()?.ok()?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_files_are_read() {
        let meminfo = "MemTotal:       16318480 kB\nMemFree:  1 kB\nMemAvailable:    9645056 kB\n";
        assert_eq!(meminfo_kib(meminfo, "MemTotal:"), Some(16_318_480));
        assert_eq!(meminfo_kib(meminfo, "MemAvailable:"), Some(9_645_056));
        assert_eq!(meminfo_kib(meminfo, "SwapTotal:"), None);
        assert_eq!(load_average("0.52 0.40 0.33 1/234 5678\n"), Some([0.52, 0.40, 0.33]));
        assert_eq!(load_average("0.52"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_shares_its_cpus_with_itself() {
        let me = std::process::id();
        let m = describe(&[], &[], &[me]);
        assert!(m.cpus >= 1 && !m.client_cpus.is_empty(), "{m:?}");
        assert_eq!(m.client_cpus, m.member_cpus, "{m:?}");
        assert_eq!(m.shared_cpus, Some(vec!["client and members".to_owned()]));
        assert!(m.kernel.starts_with("Linux "), "{m:?}");
        // A pid that is no process: its CPUs, and so the sharing, are not known.
        let gone = describe(&[0], &[], &[u32::MAX / 2]);
        assert_eq!((gone.member_cpus.len(), &gone.shared_cpus), (0, &None), "{gone:?}");
    }
}
