//! The emulated network flags (`--peer-latency`, `--client-latency`, `--jitter`,
//! `--bandwidth`, `--client-bandwidth`, `--zones`, `--client-zone`, `--zone-latency`): each
//! replaces its key of a scenario's `[network]`. They shape the links of a throwaway local
//! cluster, so they are refused with `--endpoints`.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use etcdlat_core::unit::parse_bandwidth;
use etcdlat_core::{Network, Scenario};

use super::cluster::Cluster;
use super::flag::duration_flag;
use crate::command_line::Global;

/// The network flags given, parsed; `None` where a flag was not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkFlags {
    peer_latency: Option<Duration>,
    client_latency: Option<Duration>,
    jitter: Option<Duration>,
    zone_latency: Option<Duration>,
    bandwidth: Option<u64>,
    client_bandwidth: Option<u64>,
    zones: Option<Vec<String>>,
    client_zone: Option<String>,
}

impl NetworkFlags {
    /// Reads the flags; `cluster` is where the load goes, to refuse them with endpoints.
    pub fn from_flags(g: &Global, cluster: &Cluster) -> Result<Self> {
        let rate = |flag: &str, text: &Option<String>| {
            text.as_deref().map(parse_bandwidth).transpose().map_err(|e| anyhow!("{flag}: {e}"))
        };
        let f = Self {
            peer_latency: duration_flag("--peer-latency", g.peer_latency.as_deref())?,
            client_latency: duration_flag("--client-latency", g.client_latency.as_deref())?,
            jitter: duration_flag("--jitter", g.jitter.as_deref())?,
            zone_latency: duration_flag("--zone-latency", g.zone_latency.as_deref())?,
            bandwidth: rate("--bandwidth", &g.bandwidth)?,
            client_bandwidth: rate("--client-bandwidth", &g.client_bandwidth)?,
            zones: g.zones.clone(),
            client_zone: g.client_zone.clone(),
        };
        if f.zones.iter().flatten().any(|z| z.trim().is_empty()) {
            bail!("--zones: a zone name is empty (zones are comma-separated names, like a,b,c)");
        }
        let given = f.given();
        if !given.is_empty() && matches!(cluster, Cluster::Endpoints(_)) {
            bail!(
                "{} emulate the network of a throwaway local cluster (--local, --members N); against --endpoints, put toxiproxy in front of the members and name it in a scenario's [network] toxiproxy",
                given.join(", ")
            );
        }
        Ok(f)
    }

    /// The flags given, by name.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--peer-latency", self.peer_latency.is_some()),
            ("--client-latency", self.client_latency.is_some()),
            ("--jitter", self.jitter.is_some()),
            ("--zone-latency", self.zone_latency.is_some()),
            ("--bandwidth", self.bandwidth.is_some()),
            ("--client-bandwidth", self.client_bandwidth.is_some()),
            ("--zones", self.zones.is_some()),
            ("--client-zone", self.client_zone.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect()
    }

    /// Refuses `--bandwidth` for a scenario whose throwaway cluster has one member:
    /// it shapes the links between members, and one member has none, so the run would go as
    /// fast as without it and nothing would say so. (Refused rather than warned of: a
    /// benchmark's figures taken with a limit that did nothing are wrong figures.) A
    /// scenario's own `[network] bandwidth` is left alone, as a matrix over members may
    /// give it one member in some of its runs.
    pub fn check_members(&self, s: &Scenario, cluster: &Cluster) -> Result<()> {
        if self.bandwidth.is_none() || cluster.endpoints_for(s).is_some() {
            return Ok(());
        }
        let members = match cluster {
            Cluster::Local(Some(m)) => *m,
            _ => s.cluster.members.unwrap_or(1),
        };
        if members == 1 {
            bail!(
                "--bandwidth limits the links between members, and one member has none; --client-bandwidth limits the client's links to the members (or start more with --members N)"
            );
        }
        Ok(())
    }

    /// Puts the given flags into `network`, each replacing its key.
    pub fn apply(&self, network: &mut Network) {
        let set = |to: &mut Duration, from: Option<Duration>| {
            if let Some(d) = from {
                *to = d;
            }
        };
        set(&mut network.peer_latency, self.peer_latency);
        set(&mut network.client_latency, self.client_latency);
        set(&mut network.jitter, self.jitter);
        set(&mut network.zone_latency, self.zone_latency);
        if self.bandwidth.is_some() {
            network.bandwidth = self.bandwidth;
        }
        if self.client_bandwidth.is_some() {
            network.client_bandwidth = self.client_bandwidth;
        }
        if let Some(zones) = &self.zones {
            network.zones.clone_from(zones);
        }
        if self.client_zone.is_some() {
            network.client_zone.clone_from(&self.client_zone);
        }
    }
}

/// Whether a local cluster for `s` needs the emulated network: links to shape, or network
/// fault steps to act on them.
pub fn needs_emulation(s: &Scenario) -> bool {
    s.network.is_emulated() || s.faults.iter().any(|f| f.action.is_network())
}
