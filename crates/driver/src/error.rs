//! Why a run could not happen. Failed requests are never errors here: they are counted in
//! the report.

use std::path::PathBuf;
use std::time::Duration;

use etcdlat_core::ScenarioError;

use crate::cluster::toxiproxy::ToxiproxyError;

/// Why the driver could not connect, start a cluster or run a scenario.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The scenario is not valid.
    #[error("invalid scenario: {0}")]
    Scenario(#[from] ScenarioError),

    /// An endpoint is malformed.
    #[error("invalid endpoint {endpoint:?}: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A connection could not be established within the dial timeout.
    #[error("cannot connect to etcd at {endpoint}: {reason}")]
    Connect {
        /// The endpoint dialled.
        endpoint: String,
        /// The transport's explanation.
        reason: String,
    },

    /// The TLS handshake with an endpoint failed (untrusted certificate, refused client
    /// certificate, a server that does not speak TLS).
    #[error("cannot connect to etcd at {endpoint}: {reason}")]
    Tls {
        /// The endpoint dialled.
        endpoint: String,
        /// rustls' explanation and the likely cause.
        reason: String,
    },

    /// The TLS options cannot be used (unreadable or empty certificate files, a
    /// certificate without its key).
    #[error("TLS: {reason}")]
    TlsConfig {
        /// What is wrong.
        reason: String,
    },

    /// etcd refused the credentials, or needs some and none were given.
    #[error("authentication with etcd at {endpoint} failed: {reason}")]
    Auth {
        /// The endpoint asked.
        endpoint: String,
        /// What the server said, without any secret.
        reason: String,
    },

    /// A connection was established but the etcd API did not answer on it.
    #[error("etcd at {endpoint} did not answer: {reason}")]
    NotAnswering {
        /// The endpoint asked.
        endpoint: String,
        /// The gRPC status or transport error.
        reason: String,
    },

    /// No `etcd` binary could be run.
    #[error(
        "no etcd binary found ({binary}): install one (Debian/Ubuntu: `apt-get install etcd-server`), \
         set ETCD_BIN to its path, or pass --endpoints to use a running cluster"
    )]
    EtcdNotFound {
        /// The binary that was tried.
        binary: PathBuf,
    },

    /// A throwaway local etcd did not become ready.
    #[error(
        "local etcd member {member} did not become ready within {timeout:?}: {reason}; last log lines:\n{log_tail}"
    )]
    LocalNotReady {
        /// Member name.
        member: String,
        /// How long it was given.
        timeout: Duration,
        /// What was observed.
        reason: String,
        /// The end of the member's log.
        log_tail: String,
    },

    /// An operating-system call failed (temp dir, process, thread).
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// The run was stopped before its setup finished; nothing was measured.
    #[error("interrupted before measuring started")]
    Interrupted,

    /// Some setup writes failed, so the data the run reads is not there.
    #[error("setup failed: {failed} of {total} writes did not succeed")]
    Setup {
        /// Writes that failed.
        failed: u64,
        /// Writes asked for.
        total: u64,
    },

    /// The scenario's target names members the cluster does not have.
    #[error("cannot target: {reason}")]
    Target {
        /// What is missing.
        reason: String,
    },

    /// The cluster has no leader, or the leader has no client URL.
    #[error("no leader to target: {reason}")]
    NoLeader {
        /// What was found.
        reason: String,
    },

    /// A scripted fault step cannot be carried out against this cluster (checked before the
    /// run starts).
    #[error("faults.{step}: {reason}")]
    Fault {
        /// Index of the step in the scenario's `faults`.
        step: usize,
        /// Why not.
        reason: String,
    },

    /// The toxiproxy server that a scenario's network steps drive cannot be used: it does
    /// not answer, lacks a proxy `network.proxies` names, or refused a request (checked
    /// before the run starts).
    #[error(transparent)]
    Toxiproxy(#[from] ToxiproxyError),

    /// The workload needs a newer etcd than the cluster runs.
    #[error("{what} needs etcd {needs} or later; the cluster runs etcd {version}")]
    ServerTooOld {
        /// What needs it.
        what: String,
        /// The first etcd release that has it, `MAJOR.MINOR`.
        needs: String,
        /// The cluster's version, as Status says it.
        version: String,
    },

    /// This build cannot run the workload.
    #[error("{what} is not supported yet")]
    Unsupported {
        /// The workload.
        what: String,
    },

    /// The run's connections need more file descriptors than the process may open, even
    /// with its soft limit raised to the hard limit.
    #[error(
        "{conns} connections need about {needed} file descriptors beside the {open} open, \
         but the limit is {limit}: raise it with `ulimit -n` (as root, `ulimit -Hn` too)"
    )]
    FileLimit {
        /// Connections asked for.
        conns: u32,
        /// Descriptors they need, with a few spare.
        needed: u64,
        /// Descriptors open when asked.
        open: u64,
        /// The limit on open files.
        limit: u64,
    },

    /// A worker thread died; this is a bug in etcdlat.
    #[error("worker thread {index} failed: {reason}")]
    Worker {
        /// Worker index.
        index: usize,
        /// Panic message, if any.
        reason: String,
    },
}

impl DriverError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }
}
