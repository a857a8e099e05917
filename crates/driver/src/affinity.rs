//! Which CPUs a thread runs on: the client's workers, the emulated network's threads, and the
//! thread a local member is started from (a child inherits its parent thread's CPUs).
//!
//! A member or emulator thread without CPUs of its own runs on the process's: those of its
//! main thread, as `taskset` or the cgroup gave them, whatever the thread that started it
//! was pinned to (a binary that keeps its own threads on a few CPUs, as `--pin-cpus` does,
//! does not put etcd on them).

/// Pins the calling thread to `cpus` (Linux): it runs on those only. Empty: the process's
/// CPUs (its main thread's).
///
/// # Errors
///
/// A CPU the machine lacks or the process may not use, or an OS without CPU affinity.
pub fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
        let set = if cpus.is_empty() {
            sched_getaffinity(nix::unistd::getpid())?
        } else {
            let mut set = CpuSet::new();
            for &cpu in cpus {
                set.set(cpu)?;
            }
            set
        };
        sched_setaffinity(nix::unistd::Pid::from_raw(0), &set).map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        if cpus.is_empty() {
            return Ok(());
        }
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "CPU pinning needs Linux"))
    }
}

/// Pins the calling thread to `cpus`, a thread's own CPUs, or to the process's when it has
/// none (empty), a default rather than a demand: where those cannot be set, it keeps the
/// CPUs it has. An error names the CPUs.
pub(crate) fn pin_own_or_process(cpus: &[usize]) -> std::io::Result<()> {
    match pin_current_thread(cpus) {
        Ok(()) => Ok(()),
        Err(e) if cpus.is_empty() => {
            tracing::debug!(error = %e, "a thread keeps the CPUs it was started with");
            Ok(())
        }
        Err(e) => {
            Err(std::io::Error::new(e.kind(), format!("running on CPUs {}: {e}", list(cpus))))
        }
    }
}

/// The CPUs the process may run on: its main thread's (Linux; elsewhere none known).
pub(crate) fn process_cpus() -> Vec<usize> {
    #[cfg(target_os = "linux")]
    if let Ok(set) = nix::sched::sched_getaffinity(nix::unistd::getpid()) {
        return (0..nix::sched::CpuSet::count())
            .filter(|&c| set.is_set(c).unwrap_or(false))
            .collect();
    }
    Vec::new()
}

/// How many CPUs the process may run on, or the calling thread where the OS does not say:
/// a count taken on a pinned thread would be that thread's.
pub(crate) fn process_cpu_count() -> usize {
    match process_cpus().len() {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    }
}

/// `cpus` as a list for a message: `0,2,3`.
pub(crate) fn list(cpus: &[usize]) -> String {
    cpus.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}
