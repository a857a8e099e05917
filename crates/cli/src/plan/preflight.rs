//! Checks of a plan against where it will run, before anything is dialled or started: what
//! cannot work is an error (exit 2), what works but is likely not what was meant is a warning.
//!
//! - Fault steps that act on a member's process (kill, pause, resume, restart) need a
//!   throwaway local cluster; with `--endpoints` they are an error.
//! - A scenario's emulated network (`[network]`, the network flags) and its network fault
//!   steps need a throwaway local cluster with the members and zones they name; against
//!   endpoints only toxiproxy's toxics can act on the network.
//! - A throwaway local etcd runs with etcd's default request limit (`--max-request-bytes`,
//!   1.5 MiB): a write larger than that would fail every time (`InvalidArgument`, "request is
//!   too large"), so it is refused up front. Against given endpoints the server's limit is
//!   not known: such writes are sent, and their failures counted by code in the report.
//! - More connections than logical clients is valid, as in etcd's tool, but the extra
//!   connections stay idle (client `i` uses connection `i % conns`): a warning.

use anyhow::{Result, bail};
use etcdlat_core::scenario::Site;
use etcdlat_core::{Operation, Scenario};

use super::cluster::Cluster;

/// etcd's default `--max-request-bytes`, which etcdlat's throwaway clusters keep.
pub const LOCAL_MAX_REQUEST_BYTES: u64 = 1_572_864;

/// Bytes a request carries besides its keys and values (protobuf framing, the raft request
/// header), allowed for when comparing with the limit.
const REQUEST_OVERHEAD: u64 = 64;

/// Fails when a scenario cannot run where the plan sends it.
pub fn check(scenarios: &[Scenario], cluster: &Cluster) -> Result<()> {
    for s in scenarios {
        check_network(s, cluster)?;
        if cluster.endpoints_for(s).is_some() {
            if let Some((i, step)) =
                s.faults.iter().enumerate().find(|(_, f)| f.action.needs_local_cluster())
            {
                bail!(
                    "{}: faults.{i}: {} acts on a member's process, so it needs a throwaway local cluster; against --endpoints only move-leader, compact and defrag can run",
                    s.name,
                    step.action
                );
            }
            continue;
        }
        for (what, bytes) in largest_writes(s) {
            if bytes + REQUEST_OVERHEAD > LOCAL_MAX_REQUEST_BYTES {
                bail!(
                    "{}: {what} of {bytes} bytes is over the request limit of a throwaway local etcd ({LOCAL_MAX_REQUEST_BYTES} bytes, etcd's default --max-request-bytes): every one would fail; make it smaller, or use --endpoints with a cluster that allows more",
                    s.name
                );
            }
        }
    }
    Ok(())
}

/// Checks a scenario's `[network]` and network fault steps against where it runs: against
/// endpoints nothing can be emulated (only toxiproxy's toxics); a local cluster must have
/// the members and zones the network names.
fn check_network(s: &Scenario, cluster: &Cluster) -> Result<()> {
    let local = cluster.endpoints_for(s).is_none();
    let site = if local {
        Site::Local(match cluster {
            Cluster::Local(Some(m)) => Some(*m),
            _ => s.cluster.members.or(Some(1)),
        })
    } else {
        Site::Endpoints
    };
    if let Err(e) = s.network.validate(site) {
        bail!("{}: {e}", s.name);
    }
    if !local
        && s.network.toxiproxy.is_none()
        && let Some((i, step)) = s.faults.iter().enumerate().find(|(_, f)| f.action.is_network())
    {
        bail!(
            "{}: faults.{i}: {} acts on the network; against --endpoints it needs a toxiproxy in front of the members, named in [network] toxiproxy",
            s.name,
            step.action
        );
    }
    Ok(())
}

/// The keys and values one write request of the scenario carries, at most, by what it is.
fn largest_writes(s: &Scenario) -> Vec<(&'static str, u64)> {
    let mut out = Vec::new();
    for (_, op) in s.workload() {
        let write = match op {
            Operation::Put(p) => ("a put", p.prefix.len() as u64 + p.key_size + p.val_size),
            Operation::TxnPut(t) => (
                "a txn-put transaction",
                t.txn_ops.saturating_mul(t.prefix.len() as u64 + t.key_size + t.val_size),
            ),
            Operation::TxnMixed(t) => ("a txn-mixed write", t.key_size + t.val_size),
            Operation::Stm(t) => (
                "an stm transaction",
                t.keys_per_txn.saturating_mul(t.prefix.len() as u64 + 8 + t.val_size),
            ),
            Operation::WatchLatency(w) => ("a watch-latency put", w.key_size + w.val_size),
            Operation::K8sEvent(e) => ("a k8s-event object", e.object_size.max()),
            Operation::K8sCreate(o) | Operation::K8sUpdate(o) => {
                ("a k8s object", o.object_size.max())
            }
            Operation::K8sPodLifecycle(l) => ("a k8s object", l.object_size.max()),
            _ => continue,
        };
        out.push(write);
    }
    if let Some(setup) = &s.setup {
        let p = &setup.put;
        out.push(("a setup put", p.prefix.len() as u64 + p.key_size + p.val_size));
    }
    out
}

/// Things that are valid but likely not meant, one line each.
pub fn warnings(scenarios: &[Scenario]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in scenarios {
        let (Some(conns), clients) = (s.load.conns, s.load.clients) else { continue };
        // Watch streams use connections of their own: only request loops leave them idle.
        if conns > clients && !s.is_stream() {
            let line = format!(
                "{conns} connections for {clients} clients: {} connections stay idle (client i uses connection i % conns)",
                conns - clients
            );
            if !out.contains(&line) {
                out.push(line);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::from_toml_str(text).unwrap()
    }

    #[test]
    fn writes_over_the_local_limit_are_refused() {
        let big = scenario("[load]\ntotal = 1\n[op.put]\nval-size = \"2MiB\"\n");
        let err = check(std::slice::from_ref(&big), &Cluster::Local(None)).unwrap_err();
        assert!(err.to_string().contains("request limit"), "{err}");
        assert!(check(std::slice::from_ref(&big), &Cluster::Endpoints(vec!["h:1".into()])).is_ok());
        let ok = scenario("[load]\ntotal = 1\n[op.put]\nval-size = \"1MB\"\n");
        assert!(check(&[ok], &Cluster::FromScenario).is_ok());
        let txn = scenario(
            "[load]\ntotal = 1\n[op.txn-put]\ntxn-ops = 4\nkey-space-size = 10\nval-size = \"512KiB\"\n",
        );
        assert!(check(&[txn], &Cluster::FromScenario).is_err());
    }

    #[test]
    fn process_faults_need_a_local_cluster() {
        let s = scenario(
            "[load]\nduration = \"5s\"\n[op.put]\n[[faults]]\nat = \"1s\"\naction = \"kill\"\nmember = \"leader\"\n",
        );
        let err =
            check(std::slice::from_ref(&s), &Cluster::Endpoints(vec!["h:1".into()])).unwrap_err();
        assert!(err.to_string().contains("faults.0: kill"), "{err}");
        assert!(check(&[s], &Cluster::FromScenario).is_ok());
    }
}
