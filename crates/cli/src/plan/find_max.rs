//! `run --find-max`: how many runs the search makes and how often it repeats a count, for
//! one scenario with a `[kubernetes]` model.

use anyhow::{Result, bail};
use etcdlat_core::Scenario;

use crate::command_line::RunArgs;

/// How `run --find-max` searches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FindMax {
    /// The most runs it makes (`--find-max-runs`).
    pub runs: u32,
    /// Runs of each count either side of the boundary (`--find-max-repeats`).
    pub repeats: u32,
}

/// The most runs `--find-max` makes unless told (`--find-max-runs`): a doubling of a few
/// runs, a bisection to a tenth of four or five, and the repeats of the two counts either
/// side of the boundary, with room for a repeat that moves it.
const FIND_MAX_RUNS: u32 = 20;

/// Runs of each count either side of the boundary unless told (`--find-max-repeats`): with
/// three, a count that met every time is a count that met more than once by chance at
/// most, and a miss is said as 1, 2 or 3 of 3.
const FIND_MAX_REPEATS: u32 = 3;

/// `run --find-max`'s runs, when asked, for one scenario with a `[kubernetes]` model.
pub(super) fn flags(
    run: &RunArgs,
    scenarios: &[Scenario],
    sharded: bool,
) -> Result<Option<FindMax>> {
    if !run.find_max {
        return Ok(None);
    }
    let runs = run.find_max_runs.unwrap_or(FIND_MAX_RUNS);
    if runs == 0 {
        bail!("--find-max-runs must be at least 1");
    }
    let repeats = run.find_max_repeats.unwrap_or(FIND_MAX_REPEATS);
    if repeats == 0 {
        bail!("--find-max-repeats must be at least 1");
    }
    if sharded {
        bail!("--find-max runs the whole scenario; it cannot go with --shard");
    }
    match scenarios {
        [s] if s.kubernetes.is_some() => Ok(Some(FindMax { runs, repeats })),
        [s] => bail!(
            "--find-max searches [kubernetes] nodes, and scenario {} has no [kubernetes] table",
            s.name
        ),
        _ => bail!(
            "--find-max searches one scenario's node count, and {} runs were given (a matrix or several scenarios)",
            scenarios.len()
        ),
    }
}
