//! File descriptors for a run's connections: the soft limit raised to the hard limit first,
//! as Go programs (etcd's tool among them) do at start, and a run that would still run out
//! refused before anything is dialled.

use crate::error::DriverError;

/// Descriptors kept free beside the connections: control clients, `/metrics` scrapes,
/// report files, the runtime's own.
const SPARE: u64 = 64;

/// The process's limit on open files: (soft, hard).
fn limits() -> Option<(u64, u64)> {
    #[cfg(unix)]
    return nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).ok();
    #[cfg(not(unix))]
    None
}

/// Descriptors open now.
fn open_now() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64)
}

/// Makes room for `conns` connections of `per_conn` descriptors each: raises the soft limit
/// to the hard limit when they would not fit, and refuses when even that is too few.
///
/// # Errors
/// [`DriverError::FileLimit`] naming what is needed and the limit.
pub(crate) fn make_room(conns: u32, per_conn: u64) -> Result<(), DriverError> {
    let Some((soft, hard)) = limits() else { return Ok(()) };
    let open = open_now();
    let needed = u64::from(conns) * per_conn + SPARE;
    if open + needed <= soft {
        return Ok(());
    }
    #[cfg(unix)]
    if hard > soft {
        let raised =
            nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE, hard, hard);
        if raised.is_ok() {
            tracing::info!(from = soft, to = hard, "raised the open-file limit to its hard limit");
        }
    }
    let soft = limits().map_or(soft, |(soft, _)| soft);
    if open + needed <= soft {
        return Ok(());
    }
    Err(DriverError::FileLimit { conns, needed, open, limit: soft })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_connections_than_the_hard_limit_allows_are_refused_naming_it() {
        let (_, hard) = limits().expect("limits on Linux");
        let conns = u32::try_from(hard).unwrap_or(u32::MAX);
        let err = make_room(conns, 1).expect_err("more than the hard limit");
        let text = err.to_string();
        assert!(text.contains("ulimit -n"), "{text}");
        assert!(text.contains(&format!("{conns} connections")), "{text}");
    }

    #[test]
    fn a_few_connections_fit() {
        make_room(10, 3).expect("ten connections fit any limit");
    }
}
