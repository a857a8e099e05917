//! The CPUs etcdlat's threads and a throwaway cluster's run on (`--pin-cpus`,
//! `--etcd-cpus`, `--network-cpus`), each tried before anything starts.

use anyhow::{Context, Result, bail};

use super::Cluster;
use crate::command_line::Global;

/// `--etcd-cpus` and `--network-cpus`, which only a throwaway local cluster can take.
pub(super) fn local_cpus(g: &Global, cluster: &Cluster) -> Result<(Vec<usize>, Vec<usize>)> {
    let given: Vec<&str> = [("--etcd-cpus", &g.etcd_cpus), ("--network-cpus", &g.network_cpus)]
        .into_iter()
        .filter_map(|(flag, cpus)| cpus.is_some().then_some(flag))
        .collect();
    if !given.is_empty() && matches!(cluster, Cluster::Endpoints(_)) {
        bail!(
            "{} place a throwaway local cluster (--local) on CPUs; against --endpoints, pin etcd where it runs (taskset, or systemd's CPUAffinity)",
            given.join(" and ")
        );
    }
    Ok((g.etcd_cpus.clone().unwrap_or_default(), g.network_cpus.clone().unwrap_or_default()))
}

/// Every CPU of `--pin-cpus`, `--etcd-cpus` and `--network-cpus` one a thread of etcdlat's
/// can be pinned to (tried on a thread of its own), so that a wrong one is refused before a
/// cluster starts. A CPU outside the process's own (`taskset`) but in the machine's is one.
pub(super) fn check_cpus(g: &Global) -> Result<()> {
    let flags = [
        ("--pin-cpus", &g.pin_cpus),
        ("--etcd-cpus", &g.etcd_cpus),
        ("--network-cpus", &g.network_cpus),
    ];
    for (flag, cpus) in flags {
        for &cpu in cpus.iter().flatten() {
            let pinned = std::thread::scope(|s| {
                let thread = std::thread::Builder::new()
                    .spawn_scoped(s, || etcdlat_driver::pin_current_thread(&[cpu]))
                    .context("starting a thread to try the CPUs on")?;
                Ok::<_, anyhow::Error>(thread.join())
            })?;
            if let Ok(Err(e)) = pinned {
                bail!("{flag}: CPU {cpu} is not one this machine lets etcdlat run on: {e}");
            }
        }
    }
    Ok(())
}
