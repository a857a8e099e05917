//! Why a run could not happen. Failed requests are never errors here: they are counted in
//! the report. The narrow errors of the modules that fail in their own ways (faults,
//! targets, workers, TLS files) are defined here too, beside the [`DriverError`] that wraps
//! them, so that every module imports its errors from here and this file imports none of
//! them.

use std::path::PathBuf;
use std::time::Duration;

use etcdlat_core::{FaultAction, ScenarioError};

use crate::cluster::toxiproxy::ToxiproxyError;

/// Why the driver could not connect, start a cluster or run a scenario.
///
/// A variant that has an underlying error carries it as its [`source`](std::error::Error::source)
/// (an [`std::io::Error`], a narrow error of the module that failed, and through those the
/// errors of etcd-client, rustls and `http`), so that a caller can walk the chain. Each
/// variant's message ends with its source's, as [`DriverError::Io`]'s always did: printed
/// alone it says everything; a printer of the whole chain skips a cause already printed (as
/// the CLI does).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The scenario is not valid.
    #[error("invalid scenario: {0}")]
    Scenario(#[from] ScenarioError),

    /// An endpoint is malformed, or none was given.
    #[error("invalid endpoint {endpoint:?}: {source}")]
    Endpoint {
        /// The endpoint as given (empty when none was).
        endpoint: String,
        /// What is wrong with it.
        #[source]
        source: EndpointError,
    },

    /// A driver was asked for no connections.
    #[error("conns must be at least 1")]
    NoConns,

    /// A connection could not be established within the dial timeout: the TCP connect
    /// failed, or it or the TLS handshake did not finish in time (an error of kind
    /// [`std::io::ErrorKind::TimedOut`]).
    #[error("cannot connect to etcd at {endpoint}: {source}")]
    Connect {
        /// The endpoint dialled.
        endpoint: String,
        /// The socket's error, or the timeout.
        #[source]
        source: std::io::Error,
    },

    /// The TLS handshake with an endpoint failed (untrusted certificate, refused client
    /// certificate, a server that does not speak TLS); the message names the likely cause.
    #[error("cannot connect to etcd at {endpoint}: TLS handshake failed{}: {source}", tls_hint(.source))]
    Tls {
        /// The endpoint dialled.
        endpoint: String,
        /// The handshake's error: rustls' error inside an [`std::io::Error`]
        /// ([`std::io::Error::get_ref`] reaches it).
        #[source]
        source: std::io::Error,
    },

    /// The TLS options cannot be used (unreadable or empty certificate files, a
    /// certificate without its key).
    #[error("TLS: {source}")]
    TlsConfig {
        /// What is wrong.
        #[from]
        source: TlsConfigError,
    },

    /// etcd refused the credentials, or needs some and none were given.
    #[error("authentication with etcd at {endpoint} failed: {reason}")]
    Auth {
        /// The endpoint asked.
        endpoint: String,
        /// What the server said, without any secret, or what it means (a wrong password, a
        /// missing `--user`). A string: the cause is the server's refusal text, which is
        /// all etcd sends (its gRPC code says no more than "unauthenticated").
        reason: String,
    },

    /// A connection was established but the etcd API did not answer on it.
    #[error("etcd at {endpoint} did not answer: {source}")]
    NotAnswering {
        /// The endpoint asked.
        endpoint: String,
        /// What happened instead of an answer.
        #[source]
        source: AnswerError,
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
        "local etcd member {member} did not become ready within {timeout:?}: {source}; last log lines:\n{log_tail}"
    )]
    LocalNotReady {
        /// Member name.
        member: String,
        /// How long it was given.
        timeout: Duration,
        /// What was observed last.
        #[source]
        source: NotReady,
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
    #[error("cannot target: {0}")]
    Target(#[from] TargetError),

    /// The cluster has no leader.
    #[error("no leader to target: no member is the leader")]
    NoLeader,

    /// A scripted fault step cannot be carried out against this cluster (checked before the
    /// run starts).
    #[error("faults.{step}: {source}")]
    Fault {
        /// Index of the step in the scenario's `faults`.
        step: usize,
        /// Why not.
        #[source]
        source: FaultError,
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
    #[error("worker thread {index} failed: {source}")]
    Worker {
        /// Worker index.
        index: usize,
        /// How it ended.
        #[source]
        source: WorkerError,
    },
}

/// What usually lies behind a failed TLS handshake, in words (empty when nothing is known):
/// rustls' own message names the failure, not what to do about it.
fn tls_hint(e: &std::io::Error) -> &'static str {
    let text = e.to_string();
    if text.contains("UnknownIssuer") || text.contains("invalid peer certificate") {
        " (is --cacert the authority that signed the server's certificate?)"
    } else if text.contains("corrupt message") || text.contains("InvalidContentType") {
        " (the server does not speak TLS on this port: use an http:// endpoint)"
    } else if text.contains("eof") || text.contains("reset") {
        " (the server closed the connection: it may not speak TLS on this port)"
    } else {
        ""
    }
}

/// Why an endpoint cannot be dialled as given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// None was given.
    #[error("no endpoints given")]
    Missing,

    /// It breaks the rule every endpoint is checked by (a scenario file's too).
    #[error("{reason}")]
    Malformed {
        /// The rule's words. A string: the rule is the scenario's validation, which says
        /// what is wrong in words and has no error value beneath them.
        reason: String,
    },

    /// `http` cannot parse it as a URI.
    #[error("{0}")]
    Uri(#[source] http::uri::InvalidUri),

    /// Its URI has no `host:port`.
    #[error("no host and port")]
    NoAuthority,

    /// Its host cannot be a TLS server name.
    #[error("not a TLS server name: {0}")]
    ServerName(#[source] rustls::pki_types::InvalidDnsNameError),
}

/// What happened instead of an answer from etcd on a connection that was established.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// The first request on a new connection got no answer within the dial timeout.
    #[error("no answer to a read within the dial timeout")]
    Timeout,

    /// The first request on a new connection failed with a gRPC status (other than
    /// refused credentials, which are [`DriverError::Auth`]); the message names the likely
    /// cause. The status is kept whole, as a field rather than the source: its message is
    /// already this error's, and tonic's `Display` of it would say it a second time.
    #[error("{:?}: {}{hint}", .status.code(), .status.message())]
    Status {
        /// The status etcd, or the connection, ended the request with.
        status: tonic::Status,
        /// What it usually means, as a parenthesis (empty when nothing is known).
        hint: &'static str,
    },

    /// A request made with etcd-client failed (Status, MemberList, HashKV, or the
    /// client's own setup).
    #[error("{0}")]
    Client(#[source] etcd_client::Error),

    /// The task asking a member ended without an answer (it panicked or was cancelled).
    #[error("{0}")]
    Task(#[source] tokio::task::JoinError),

    /// Every revision HashKV was asked for was compacted before the members answered.
    #[error("every revision HashKV was asked for was compacted meanwhile")]
    Compacted,
}

/// What a throwaway local member was last seen doing when it was given up on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NotReady {
    /// Its process exited.
    #[error("etcd exited with {0}")]
    Exited(std::process::ExitStatus),

    /// It answers, but no leader has been elected.
    #[error("no leader elected yet")]
    NoLeader,

    /// It could not be dialled, or did not answer Status.
    #[error("{0}")]
    Unreachable(#[source] Box<DriverError>),

    /// Its Status request failed.
    #[error("{0}")]
    Status(#[source] etcd_client::Error),
}

impl DriverError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io { what: what.into(), source }
    }

    /// A worker's failure.
    pub(crate) fn worker(index: usize, source: WorkerError) -> Self {
        Self::Worker { index, source }
    }
}

/// Why a scenario's fault step cannot be carried out against the cluster it runs on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultError {
    /// The step acts on a member's process, and the driver was built from endpoints.
    #[error(
        "{action} acts on a member's process, so it needs a throwaway local cluster that \
         etcdlat starts; against given endpoints only move-leader, compact and defrag can run"
    )]
    NeedsLocalCluster {
        /// The step's action.
        action: FaultAction,
    },

    /// The step acts on the network, and there is neither an emulated network nor toxiproxy.
    #[error(
        "{action} acts on the network, so it needs a throwaway local cluster behind etcdlat's \
         emulated network (LocalClusterOptions::network; the CLI sets it up for scenarios with \
         network steps), or against endpoints network.toxiproxy"
    )]
    NeedsNetwork {
        /// The step's action.
        action: FaultAction,
    },

    /// The step names a member the cluster does not have.
    #[error("no member named {name:?} (members: {})", .members.join(", "))]
    NoSuchMember {
        /// The name in the step.
        name: String,
        /// The cluster's members' names.
        members: Vec<String>,
    },

    /// The step acts on a follower of a one-member cluster.
    #[error("a cluster of 1 member has no followers")]
    NoFollowers,

    /// The step acts on the N-th follower, and there are fewer.
    #[error("follower {asked} asked for, a cluster of {members} member(s) has {followers}")]
    NoSuchFollower {
        /// N, 1-based.
        asked: u32,
        /// The cluster's members.
        members: usize,
        /// Its followers.
        followers: usize,
    },

    /// A network step names no member, and `network.proxies` maps none.
    #[error("network.proxies maps no member to a toxiproxy proxy")]
    NoProxies,

    /// A network step may act on a member that `network.proxies` maps to no proxy.
    #[error("{action} may act on {member:?}, which network.proxies maps to no toxiproxy proxy")]
    Unproxied {
        /// The step's action.
        action: FaultAction,
        /// The member without a proxy.
        member: String,
    },
}

/// Why a scenario's target cannot be sent load: the members it names are not there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// A selected member advertises no client URL.
    #[error("member {member} has no client URL")]
    NoClientUrl {
        /// The member's name.
        member: String,
    },

    /// Followers are asked for, and the cluster has one member.
    #[error("a cluster of {members} member(s) has no followers")]
    NoFollowers {
        /// The cluster's members.
        members: usize,
    },

    /// The N-th follower is asked for, and there are fewer.
    #[error("follower {asked} asked for, the cluster has {followers}")]
    NoSuchFollower {
        /// N, 1-based.
        asked: u32,
        /// The cluster's followers.
        followers: usize,
    },

    /// A member is named that the cluster does not have.
    #[error("no member named {name:?} (members: {})", .members.join(", "))]
    NoSuchMember {
        /// The name asked for.
        name: String,
        /// The cluster's members' names.
        members: Vec<String>,
    },
}

/// How a worker thread failed. Each is a bug in etcdlat: a worker ends only when its
/// driver is dropped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkerError {
    /// The thread panicked.
    #[error("{message}")]
    Panicked {
        /// The panic's message ("panicked" when it had none). A string: a panic's payload
        /// is its message, and no error value is beneath it.
        message: String,
    },

    /// The thread had stopped when it was given work, or stopped before it answered.
    #[error("worker stopped mid-run")]
    Stopped,

    /// A task of the worker's, opening a connection, panicked or was cancelled.
    #[error("{0}")]
    Task(#[source] tokio::task::JoinError),

    /// The workers hold no connections.
    #[error("no connections")]
    NoConnections,

    /// There are no workers.
    #[error("no workers")]
    NoWorkers,
}

/// Why TLS options cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsConfigError {
    /// A client certificate without its key.
    #[error("--cert needs --key")]
    CertWithoutKey,

    /// A client key without its certificate.
    #[error("--key needs --cert")]
    KeyWithoutCert,

    /// rustls has no protocol version the crypto provider supports.
    #[error("no usable TLS version: {0}")]
    Versions(#[source] rustls::Error),

    /// A certificate file (`--cacert` or `--cert`) cannot be read or parsed.
    #[error("{flag} {}: {source}", .path.display())]
    ReadCerts {
        /// The option that named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: rustls::pki_types::pem::Error,
    },

    /// A certificate file holds no PEM certificate.
    #[error("{flag} {}: no PEM certificate in it", .path.display())]
    NoCerts {
        /// The option that named it.
        flag: &'static str,
        /// The file.
        path: PathBuf,
    },

    /// The `--key` file holds no usable private key.
    #[error("--key {}: no usable private key: {source}", .path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// Why it cannot be used.
        #[source]
        source: rustls::pki_types::pem::Error,
    },

    /// `--cert` and `--key` do not go together.
    #[error("--cert and --key do not make a client identity: {0}")]
    Identity(#[source] rustls::Error),

    /// A `--cacert` certificate cannot be a trust anchor.
    #[error("--cacert {}: unusable certificate: {source}", .path.display())]
    CaCert {
        /// The file.
        path: PathBuf,
        /// rustls' objection.
        #[source]
        source: rustls::Error,
    },

    /// No `--cacert` was given and the system has no certificate authorities.
    #[error("no system certificate authorities found; pass --cacert")]
    NoSystemRoots,
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;
    use std::time::Duration;

    use super::*;
    use crate::transport::{Dialer, Security, TlsOptions};

    /// Every error in `e`'s chain, `e` first.
    fn chain<'a>(
        e: &'a (dyn std::error::Error + 'static),
    ) -> Vec<&'a (dyn std::error::Error + 'static)> {
        std::iter::successors(Some(e), |&e| e.source()).collect()
    }

    /// TLS that accepts any server, so that the handshake is all that is tested.
    fn insecure_tls() -> Security {
        Security {
            tls: TlsOptions { insecure_skip_verify: true, ..TlsOptions::default() },
            credentials: None,
        }
    }

    #[tokio::test]
    async fn a_connection_refused_is_the_socket_error_beneath() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = listener.local_addr().unwrap().to_string();
        drop(listener);
        let dialer = Dialer::new(&Security::default(), Duration::from_secs(2)).unwrap();
        let e = dialer.handshake(&endpoint, None).await.err().expect("nothing listens");
        assert!(matches!(&e, DriverError::Connect { endpoint: ep, .. } if *ep == endpoint));
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("io");
        assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
        // The message is the one it always was: the endpoint, then the socket's words.
        assert_eq!(e.to_string(), format!("cannot connect to etcd at {endpoint}: {io}"));
    }

    #[tokio::test]
    async fn a_dial_timeout_is_an_io_error_of_kind_timed_out() {
        // A listener that never accepts: the kernel completes the TCP handshake, then the
        // TLS handshake gets no answer.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("https://{}", listener.local_addr().unwrap());
        let security = insecure_tls();
        let dialer = Dialer::new(&security, Duration::from_millis(200)).unwrap();
        let e = dialer.handshake(&endpoint, None).await.err().expect("no TLS answer");
        assert!(matches!(e, DriverError::Connect { .. }), "{e:?}");
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("io");
        assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
        let text = e.to_string();
        assert!(text.ends_with("no TLS handshake within the dial timeout (200ms) (the server may not speak TLS on this port)"), "{text}");
    }

    #[tokio::test]
    async fn a_failed_tls_handshake_keeps_rustls_error() {
        // A server that answers a ClientHello with plain HTTP.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("https://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut hello = [0; 512];
            let _ = socket.read(&mut hello).await;
            let _ = socket.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        });
        let security = insecure_tls();
        let dialer = Dialer::new(&security, Duration::from_secs(5)).unwrap();
        let e = dialer.handshake(&endpoint, None).await.err().expect("no TLS");
        assert!(matches!(e, DriverError::Tls { .. }), "{e:?}");
        let io = e.source().and_then(|s| s.downcast_ref::<std::io::Error>()).expect("io");
        let rustls = io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>());
        assert!(matches!(rustls, Some(rustls::Error::InvalidMessage(_))), "{io:?}");
        let text = e.to_string();
        assert!(text.contains("does not speak TLS on this port"), "{text}");
        assert!(text.ends_with(&io.to_string()), "the cause last, once: {text}");
    }

    #[test]
    fn unusable_tls_files_keep_the_file_error() {
        let missing =
            TlsOptions { ca: Some("/nonexistent/ca.pem".into()), ..TlsOptions::default() };
        let security = Security { tls: missing, credentials: None };
        let e = Dialer::new(&security, Duration::from_secs(1)).expect_err("no such file");
        let causes = chain(&e);
        let config = causes.iter().find_map(|c| c.downcast_ref::<TlsConfigError>());
        assert!(
            matches!(
                config,
                Some(TlsConfigError::ReadCerts {
                    flag: "--cacert",
                    source: rustls::pki_types::pem::Error::Io(_),
                    ..
                })
            ),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("TLS: --cacert /nonexistent/ca.pem: "), "{e}");
    }

    #[test]
    fn a_malformed_endpoint_names_it_and_keeps_the_reason_as_source() {
        let e = crate::transport::url("localhost").unwrap_err();
        let DriverError::Endpoint { endpoint, source: EndpointError::Malformed { reason } } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(endpoint, "localhost");
        assert!(reason.contains("no port"), "{reason}");
        assert_eq!(e.source().map(ToString::to_string), Some(reason.clone()));
    }

    #[test]
    fn a_target_that_is_not_there_is_a_narrow_error() {
        let e: DriverError = TargetError::NoSuchMember {
            name: "m7".into(),
            members: vec!["m0".into(), "m1".into()],
        }
        .into();
        assert_eq!(e.to_string(), r#"cannot target: no member named "m7" (members: m0, m1)"#);
        assert!(e.source().is_some_and(|s| s.is::<TargetError>()));
    }
}
