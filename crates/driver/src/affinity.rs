//! Which CPUs a thread runs on: the client's workers, the emulated network's threads, and the
//! thread a local member is started from (a child inherits its parent thread's CPUs).

/// Pins the calling thread to `cpus` (Linux): it runs on those only.
pub(crate) fn pin_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let mut set = nix::sched::CpuSet::new();
        for &cpu in cpus {
            set.set(cpu).map_err(std::io::Error::from)?;
        }
        nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
            .map_err(std::io::Error::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpus;
        Err(std::io::Error::new(std::io::ErrorKind::Unsupported, "CPU pinning needs Linux"))
    }
}

/// `cpus` as a list for a message: `0,2,3`.
pub(crate) fn list(cpus: &[usize]) -> String {
    cpus.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}
