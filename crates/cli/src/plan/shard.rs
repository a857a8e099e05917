//! Distributed runs, validated: which shard of each scenario this process runs
//! (`--shard I/N`), and when its measurement starts: at once, at a wall-clock time
//! (`--start-at`), or when every shard has reached a barrier on the cluster under test
//! (`--barrier`).

use std::time::{Duration, SystemTime};

use anyhow::{Result, anyhow, bail};
use etcdlat_core::unit::parse_duration;
use etcdlat_core::{Scenario, Shard};
use etcdlat_driver::DEFAULT_BARRIER_TIMEOUT;

use super::cluster::Cluster;
use crate::command_line::RunArgs;

/// When measurement starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// As soon as the connections are open (and the setup done).
    Now,
    /// At this wall-clock time.
    At(SystemTime),
    /// When every shard has registered under this key prefix.
    Barrier {
        /// Key prefix on the cluster under test.
        prefix: String,
        /// How long to wait for every shard.
        timeout: Duration,
    },
}

/// `--shard`, `--start-at`, `--barrier` and `--barrier-timeout`, checked against the
/// scenarios (every one must split into the shards) and the cluster (every shard must load
/// the same one).
pub fn flags(
    run: &RunArgs,
    scenarios: &[Scenario],
    cluster: &Cluster,
) -> Result<(Option<Shard>, Start)> {
    let shard = run
        .shard
        .as_deref()
        .map(|text| text.parse::<Shard>().map_err(|e| anyhow!("--shard: {e}")))
        .transpose()?;
    if let Some(shard) = shard {
        let shared = match cluster {
            Cluster::Endpoints(_) => true,
            Cluster::Local(_) => false,
            Cluster::FromScenario => scenarios.iter().all(|s| !s.cluster.endpoints.is_empty()),
        };
        if !shared {
            bail!(
                "--shard: every shard must load the same cluster: pass --endpoints (or set cluster.endpoints); a throwaway local etcd would be one per shard"
            );
        }
        for s in scenarios {
            shard.part(s).map_err(|e| anyhow!("--shard {shard}: scenario {}: {e}", s.name))?;
        }
    }
    let start = match (&run.start_at, &run.barrier) {
        (Some(time), _) => {
            if scenarios.len() > 1 {
                bail!(
                    "--start-at starts one run, but there are {} (a matrix or several scenarios): use --barrier, which starts each together",
                    scenarios.len()
                );
            }
            Start::At(parse_time(time).map_err(|e| anyhow!("--start-at: {e}"))?)
        }
        (None, Some(prefix)) => {
            if prefix.trim_matches('/').is_empty() {
                bail!("--barrier: the key prefix must not be empty");
            }
            let timeout = match &run.barrier_timeout {
                Some(text) => {
                    parse_duration(text).map_err(|e| anyhow!("--barrier-timeout: {e}"))?
                }
                None => DEFAULT_BARRIER_TIMEOUT,
            };
            if timeout.is_zero() {
                bail!("--barrier-timeout: must be more than 0");
            }
            Start::Barrier { prefix: prefix.clone(), timeout }
        }
        (None, None) => Start::Now,
    };
    Ok((shard, start))
}

/// An RFC 3339 time: `2025-06-01T12:00:00Z`, with fractional seconds or an offset
/// (`+02:00`, `-05:00`) if wanted.
pub fn parse_time(text: &str) -> Result<SystemTime> {
    let text = text.trim();
    let (utc, offset_s) = match split_offset(text) {
        Some((base, offset_s)) => (base, offset_s),
        None => (text, 0),
    };
    let local = humantime::parse_rfc3339_weak(utc)
        .map_err(|e| anyhow!("{text:?} is not an RFC 3339 time like 2025-06-01T12:00:00Z: {e}"))?;
    // The time is `offset` ahead of UTC: subtract it.
    let shift = Duration::from_secs(offset_s.unsigned_abs());
    let at = if offset_s >= 0 { local.checked_sub(shift) } else { local.checked_add(shift) };
    at.ok_or_else(|| anyhow!("{text:?} is out of range"))
}

/// A trailing `+HH:MM` or `-HH:MM` offset: the text before it and the offset in seconds.
fn split_offset(text: &str) -> Option<(&str, i64)> {
    let at = text.len().checked_sub(6)?;
    let (base, offset) = text.split_at_checked(at)?;
    let bytes = offset.as_bytes();
    let sign = match bytes[0] {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    if bytes[3] != b':' || !base.contains('T') && !base.contains(' ') {
        return None;
    }
    let hours: i64 = offset.get(1..3)?.parse().ok()?;
    let minutes: i64 = offset.get(4..6)?.parse().ok()?;
    Some((base, sign * (hours * 3600 + minutes * 60)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_with_offsets() {
        let utc = parse_time("2025-06-01T12:00:00Z").unwrap();
        assert_eq!(parse_time("2025-06-01T14:00:00+02:00").unwrap(), utc);
        assert_eq!(parse_time("2025-06-01T07:00:00-05:00").unwrap(), utc);
        assert_eq!(parse_time("2025-06-01T12:00:00+00:00").unwrap(), utc);
        assert_eq!(
            parse_time("2025-06-01T12:00:00.250Z").unwrap(),
            utc + Duration::from_millis(250)
        );
        assert!(parse_time("tomorrow").is_err());
        assert!(parse_time("2025-06-01T12:00:00+2").is_err());
    }
}
