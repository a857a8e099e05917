//! Nothing of a local cluster outlives the etcdlat that started it, however it ends.
//!
//! A clean end (drop, Ctrl-C handled by the binary) kills the members and removes their
//! temp dir. An unclean one (`kill -9`, the OOM killer, a CI timeout) runs no destructor, so:
//!
//! - The members run in the process group of a [`Guard`]: a `/bin/sh` that blocks reading
//!   a pipe only etcdlat holds the other end of. When etcdlat dies the kernel closes that
//!   end, the read returns, and the shell kills its whole group (`kill -9 0`): every member,
//!   itself included. This needs no `unsafe` `pre_exec` (the workspace forbids `unsafe`),
//!   and unlike `PR_SET_PDEATHSIG` it does not fire when the *thread* that spawned a member
//!   exits (members are restarted from fault steps on other threads).
//! - The temp dir is named after its owner (`etcdlat-PID-START-XXXXXX`, with the owner's
//!   start time since boot, so a recycled pid is not taken for the owner).
//!   [`remove_abandoned`] removes the dirs whose owner is gone, never one whose owner runs.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

/// The process group that a local cluster's members run in, and the shell that kills it
/// when etcdlat dies. Dropping it (after the members have been killed and waited for) ends
/// the shell.
#[derive(Debug)]
pub(super) struct Guard {
    shell: Child,
    /// The write end of the shell's stdin; closed on drop or by etcdlat's death.
    pipe: Option<ChildStdin>,
}

impl Guard {
    /// Starts the guard shell, the leader of a new process group.
    pub(super) fn start() -> io::Result<Self> {
        use std::os::unix::process::CommandExt;
        let mut shell = Command::new("/bin/sh")
            // `read` returns at end of file, when the last writer (etcdlat) is gone; the
            // pipe is close-on-exec on etcdlat's side, so no member holds it open.
            .args(["-c", "read line; kill -9 0"])
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let pipe = shell.stdin.take();
        Ok(Self { shell, pipe })
    }

    /// The process group members join.
    pub(super) fn group(&self) -> i32 {
        i32::try_from(self.shell.id()).unwrap_or(0)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        drop(self.pipe.take());
        let _ = self.shell.wait();
    }
}

/// What a local cluster's temp dir is called before its random suffix:
/// `etcdlat-PID-START-`, naming this process.
pub(super) fn dir_prefix() -> String {
    let pid = std::process::id();
    format!("etcdlat-{pid}-{}-", start_time(pid).unwrap_or(0))
}

/// When process `pid` started, in clock ticks since boot (`/proc/PID/stat`'s 22nd field);
/// `None` when it does not run (or `/proc` cannot tell).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name, in parentheses, may hold spaces and parentheses itself: the fields
    // after it start at the last ") ". The state is field 3, the start time field 22.
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_ascii_whitespace().nth(19)?.parse().ok()
}

/// The owner (pid, start time) a dir name names, if it is a local cluster's dir.
fn owner(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix("etcdlat-")?.split('-');
    let (pid, start, suffix) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() || suffix.is_empty() {
        return None;
    }
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// Whether the process that made a dir still runs. A start time of 0 (unknown when the dir
/// was made) trusts the pid alone, erring on the side of keeping the dir.
fn owner_alive(pid: u32, start: u64) -> bool {
    match start_time(pid) {
        None => Path::new(&format!("/proc/{pid}")).exists(),
        Some(now) => start == 0 || now == start,
    }
}

/// Removes the local clusters' temp dirs in `tmp` whose owner no longer runs, and answers
/// which. Dirs of running owners, of other users, and anything not named as a local
/// cluster's dir are left alone; a dir that cannot be removed is skipped.
pub(super) fn remove_abandoned(tmp: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    // Without /proc nothing can be told about owners: remove nothing. (`/proc/self` is
    // owned by this process's user.)
    let Ok(uid) = std::fs::metadata("/proc/self").map(|m| m.uid()) else { return Vec::new() };
    let Ok(entries) = std::fs::read_dir(tmp) else { return Vec::new() };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(owner) else { continue };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_dir() || meta.uid() != uid || owner_alive(pid, start) {
            continue;
        }
        match std::fs::remove_dir_all(entry.path()) {
            Ok(()) => removed.push(entry.path()),
            Err(e) => {
                tracing::debug!(dir = %entry.path().display(), error = %e, "cannot remove an abandoned local cluster dir")
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_names_carry_their_owner() {
        let prefix = dir_prefix();
        let (pid, start) = owner(&format!("{prefix}aB3xY9")).unwrap();
        assert_eq!(pid, std::process::id());
        assert!(start > 0, "this process's start time is known on Linux");
        assert!(owner_alive(pid, start));
        assert!(!owner_alive(pid, start + 1), "a recycled pid is not the owner");
        // Not a local cluster's dir (the old name had no owner), or not a whole one.
        for name in ["etcdlat-aB3xY9", "etcdlat-12-", "etcdlat-12-34-", "etcdlat-x-1-a", "tmp"] {
            assert_eq!(owner(name), None, "{name}");
        }
    }

    #[test]
    fn only_dirs_of_owners_gone_are_removed() {
        let tmp = tempfile::tempdir().unwrap();
        // A process that has exited: its pid names no running process until reused, and a
        // reused pid has another start time.
        let mut gone = Command::new("true").spawn().unwrap();
        let gone_pid = gone.id();
        gone.wait().unwrap();
        let mine = tmp.path().join(format!("{}live01", dir_prefix()));
        let abandoned = tmp.path().join(format!("etcdlat-{gone_pid}-1-dead01"));
        let unrelated = tmp.path().join("etcdlat-dead02");
        for dir in [&mine, &abandoned, &unrelated] {
            std::fs::create_dir_all(dir.join("m0")).unwrap();
        }
        assert_eq!(remove_abandoned(tmp.path()), vec![abandoned.clone()]);
        assert!(!abandoned.exists());
        assert!(mine.exists() && unrelated.exists());
    }

    #[test]
    fn the_guard_kills_its_group_when_its_pipe_closes() {
        let guard = Guard::start().unwrap();
        let mut member = {
            use std::os::unix::process::CommandExt;
            Command::new("sleep").arg("60").process_group(guard.group()).spawn().unwrap()
        };
        drop(guard);
        let status = member.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(9));
    }
}
