//! A local member's etcd process: how it is started, the running child, and signalling,
//! killing and restarting it (what the fault steps do to a member's process).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};

/// A member's etcd process: how it is started, and the running child. Shared with the
/// drivers built from the cluster ([`super::local::MemberControl`]), so that a run's fault
/// steps can kill, pause and restart members while the [`super::local::LocalCluster`] keeps
/// owning them.
#[derive(Debug, Default)]
pub(super) struct Process {
    pub(super) bin: PathBuf,
    pub(super) args: Vec<OsString>,
    /// Its `--data-dir`.
    pub(super) data_dir: PathBuf,
    pub(super) log: PathBuf,
    /// The process group it runs in: its cluster's [`super::orphan::Guard`]'s.
    pub(super) group: i32,
    /// The CPUs it runs on; empty: the process's.
    pub(super) cpus: Vec<usize>,
    pub(super) state: Mutex<ProcessState>,
}

#[derive(Debug, Default)]
pub(super) struct ProcessState {
    pub(super) child: Option<Child>,
    /// Set when the cluster is shut down: the process is never started again.
    pub(super) closed: bool,
}

impl Process {
    pub(super) fn state(&self) -> MutexGuard<'_, ProcessState> {
        // A panic while holding the lock leaves nothing half-done worth refusing over.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts etcd, appending to its log, in its cluster's guarded process group: not
    /// etcdlat's (so that a Ctrl-C at the terminal stops etcdlat, which then tears the
    /// cluster down, rather than killing etcd under a running measurement), and killed
    /// whole when etcdlat dies.
    ///
    /// It is started from a thread pinned to its CPUs, or to the process's when it has none
    /// of its own: a child inherits the CPUs of the thread that started it, every thread of
    /// its own included (pinning it after the start would miss the threads it had already
    /// made), and the thread that starts it may be one kept to the client's CPUs.
    pub(super) fn spawn(&self) -> std::io::Result<Child> {
        let log = File::options().create(true).append(true).open(&self.log)?;
        let log2 = log.try_clone()?;
        let mut command = Command::new(&self.bin);
        command
            .args(&self.args)
            .process_group(self.group)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2);
        std::thread::scope(|s| {
            let pinned = std::thread::Builder::new().spawn_scoped(s, || {
                crate::affinity::pin_own_or_process(&self.cpus)?;
                command.spawn()
            })?;
            pinned.join().unwrap_or_else(|_| Err(std::io::Error::other("its starter panicked")))
        })
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.state().child.as_ref().map(Child::id)
    }

    /// SIGKILL and wait; false when not running.
    pub(super) fn kill(&self) -> bool {
        let Some(mut child) = self.state().child.take() else { return false };
        let _ = child.kill();
        let _ = child.wait();
        true
    }

    /// Kills the process if it runs, then starts it again with the same flags and data.
    pub(super) fn restart(&self) -> Result<(), String> {
        let mut state = self.state();
        if state.closed {
            return Err("the cluster has been shut down".to_owned());
        }
        if let Some(mut child) = state.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let child = self.spawn().map_err(|e| format!("starting {}: {e}", self.bin.display()))?;
        state.child = Some(child);
        Ok(())
    }

    pub(super) fn signal(&self, signal: nix::sys::signal::Signal) -> bool {
        let Some(pid) = self.pid().and_then(|p| i32::try_from(p).ok()) else { return false };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).is_ok()
    }

    /// Kills the process for good.
    pub(super) fn close(&self) {
        let mut state = self.state();
        state.closed = true;
        if let Some(mut child) = state.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
