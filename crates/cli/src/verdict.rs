//! How a command ends: done, failed (a check or a threshold, exit 1) or interrupted (exit
//! 130); failed checks and thresholds not met are printed one line each on stderr.

use std::process::ExitCode;

use etcdlat_core::Report;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Everything ran and held: exit 0.
    Done,
    /// A check failed (HashKV mismatch, watch events lost) or a threshold was not met: exit 1.
    Failed,
    /// Stopped by a signal, the report written: exit 130.
    Interrupted,
}

impl Verdict {
    /// The process's exit code.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Self::Done => ExitCode::SUCCESS,
            Self::Failed => ExitCode::from(1),
            Self::Interrupted => ExitCode::from(130),
        }
    }
}

/// Prints every failed check and every threshold not met, one line each on stderr (the run
/// named when there are several); true when there was none.
pub fn passed(reports: &[Report]) -> bool {
    print_failures(reports, true)
}

/// As [`passed`], for the checks alone: a shard's thresholds are held against the whole, by
/// `etcdlat merge`.
pub fn checks_passed(reports: &[Report]) -> bool {
    print_failures(reports, false)
}

fn print_failures(reports: &[Report], thresholds: bool) -> bool {
    let mut passed = true;
    for r in reports {
        let run = if reports.len() > 1 { format!("{}: ", r.name) } else { String::new() };
        for f in r.failures() {
            eprintln!("etcdlat: check failed: {run}{f}");
            passed = false;
        }
        let violations = if thresholds { r.violations() } else { Vec::new() };
        for v in violations {
            eprintln!("etcdlat: threshold failed: {run}{v}");
            passed = false;
        }
    }
    passed
}
