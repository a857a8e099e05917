//! What a flag's value means: durations, sizes, positive counts, consistency levels, and a
//! scenario's own errors said in the words of the command line.

use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use etcdlat_core::unit::{parse_duration, parse_size};
use etcdlat_core::{Consistency, ScenarioError};

/// A duration flag ("30s"), when given.
pub fn duration_flag(flag: &str, text: Option<&str>) -> Result<Option<Duration>> {
    text.map(parse_duration).transpose().map_err(|e| anyhow!("{flag}: {e}"))
}

/// A size flag: bytes, or with a unit ("1MiB").
pub fn size_flag(flag: &str, text: &str) -> Result<u64> {
    parse_size(text).map_err(|e| anyhow!("{flag}: {e}"))
}

/// A positive count flag, with etcd's wording when it is not.
pub fn positive(flag: &str, value: i64) -> Result<u64> {
    u64::try_from(value)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| anyhow!("expected positive --{flag}, got ({value})"))
}

/// `--consistency`: `l` (linearizable) or `s` (serializable), as etcd's tool spells them.
pub fn consistency_flag(text: &str) -> Result<Consistency> {
    match text {
        "l" => Ok(Consistency::Linearizable),
        "s" => Ok(Consistency::Serializable),
        other => {
            bail!("--consistency: expected l (linearizable) or s (serializable), got {other:?}")
        }
    }
}

/// A scenario error in the words of the command line: `load.clients` becomes `--clients`.
pub fn flag_error(e: ScenarioError) -> anyhow::Error {
    match &e {
        ScenarioError::Invalid { field, message, .. } => {
            let flag = match field.rsplit('.').next().unwrap_or(field) {
                // A step of `load.client-steps`, which came from one flag.
                _ if field.starts_with("load.client-steps") => "client-steps",
                // The scenario's list is `thresholds`; its flag, repeatable, is `--threshold`.
                "thresholds" => "threshold",
                other => other,
            };
            if flag == "load" { anyhow!("{message}") } else { anyhow!("--{flag}: {message}") }
        }
        _ => anyhow!("{e}"),
    }
}
