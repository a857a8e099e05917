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

/// `cpus` as a list for a message: `0,2,3`.
pub(crate) fn list(cpus: &[usize]) -> String {
    cpus.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}
