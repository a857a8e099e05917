//! Where the load goes: `--endpoints`, a throwaway local cluster (`--local`, `--members`,
//! `--etcd`, `--quota-backend-bytes`), or what each scenario says.

use anyhow::{Result, anyhow, bail};
use etcdlat_core::Scenario;
use etcdlat_core::scenario::check_endpoint;

use crate::command_line::Global;

/// etcd benchmark's default endpoint for `put` and `range`.
pub const DEFAULT_ENDPOINT: &str = "127.0.0.1:2379";

/// Where the load goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cluster {
    /// These endpoints.
    Endpoints(Vec<String>),
    /// A throwaway local cluster per run; `None` members means the scenario's (or 1).
    Local(Option<u32>),
    /// The scenario's endpoints if it names some, else a throwaway local cluster.
    FromScenario,
}

impl Cluster {
    /// The cluster the flags name, else `default` (the command's); true when that default
    /// is etcd benchmark's endpoint, which nobody asked for by name.
    pub fn from_flags(g: &Global, default: Self) -> Result<(Self, bool)> {
        let mut default_endpoint = false;
        let cluster = match (&g.endpoints, g.local) {
            (Some(_), true) => bail!("--local and --endpoints cannot be used together"),
            (Some(_), false) if g.etcd.is_some() => bail!(
                "--etcd applies to a throwaway local cluster; it cannot be used with --endpoints, a cluster etcdlat does not start, which has the version it has"
            ),
            (Some(eps), false) => {
                let eps: Vec<String> =
                    eps.iter().map(|e| e.trim().to_owned()).filter(|e| !e.is_empty()).collect();
                if eps.is_empty() {
                    bail!("--endpoints is empty");
                }
                for ep in &eps {
                    check_endpoint(ep).map_err(|e| anyhow!("--endpoints: {e}"))?;
                }
                Self::Endpoints(eps)
            }
            (None, true) => Self::Local(g.members),
            // `--members N` (or `--etcd`) alone asks for a local cluster of N, whatever the
            // command's default (etcd benchmark's endpoint for put and range).
            (None, false) if g.members.is_some() || g.etcd.is_some() => Self::Local(g.members),
            (None, false) => {
                default_endpoint = matches!(default, Self::Endpoints(_));
                default
            }
        };
        if g.members.is_some() && matches!(cluster, Self::Endpoints(_)) {
            bail!(
                "--members applies to a throwaway local cluster; it cannot be used with --endpoints"
            );
        }
        if let Some(m) = g.members {
            members(m)?;
        }
        let cluster = match (cluster, g.members) {
            (Self::FromScenario, Some(m)) => Self::Local(Some(m)),
            (c, _) => c,
        };
        Ok((cluster, default_endpoint))
    }

    /// The endpoints `scenario` runs against; `None` for a throwaway local cluster.
    pub fn endpoints_for<'a>(&'a self, scenario: &'a Scenario) -> Option<&'a [String]> {
        match self {
            Self::Endpoints(eps) => Some(eps),
            Self::FromScenario if !scenario.cluster.endpoints.is_empty() => {
                Some(&scenario.cluster.endpoints)
            }
            Self::FromScenario | Self::Local(_) => None,
        }
    }
}

/// `--members` of `etcdlat cluster`: a local cluster of 1 (the default) to 9 members (the
/// command line refuses the flags that do not apply to it, `--endpoints` among them).
pub fn cluster_command(g: &Global) -> Result<u32> {
    members(g.members.unwrap_or(1))
}

/// A member count a throwaway cluster can have.
fn members(m: u32) -> Result<u32> {
    if !(1..=9).contains(&m) {
        bail!("--members must be 1 to 9, got {m}");
    }
    Ok(m)
}

/// `--quota-backend-bytes`, which only a throwaway local cluster can take.
pub(super) fn quota_backend_bytes(g: &Global, cluster: &Cluster) -> Result<Option<u64>> {
    let Some(text) = &g.quota_backend_bytes else { return Ok(None) };
    if matches!(cluster, Cluster::Endpoints(_)) {
        bail!(
            "--quota-backend-bytes applies to a throwaway local cluster; it cannot be used with --endpoints"
        );
    }
    match etcdlat_core::unit::parse_size(text) {
        Ok(0) => bail!("--quota-backend-bytes must be more than 0"),
        Ok(q) => Ok(Some(q)),
        Err(e) => bail!("--quota-backend-bytes: {e}"),
    }
}
