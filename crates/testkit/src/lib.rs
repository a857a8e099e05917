//! Real etcd servers and clusters for etcdlat's tests.
//!
//! Built on the driver's [`LocalCluster`] (the same code the CLI uses): free loopback ports,
//! a temp data dir, readiness by polling Status with a deadline, the etcd log tail in the
//! panic message when it fails, the processes killed on drop.
//!
//! The etcd binary is `ETCD_BIN` if set, else `etcd` on `PATH` (`.ci/run` runs the tests
//! against each version of `.ci/etcd-versions` this way). Every start writes which etcd
//! version it started to stderr, which a failing test shows. When it is missing, tests
//! fail with a message that says how to install it; `ETCDLAT_SKIP_ETCD=1` is the only way
//! to skip them.
//!
//! ```no_run
//! # async fn f() {
//! let etcd = etcdlat_testkit::Etcd::start().await;
//! let mut client = etcd.client().await;
//! client.put("k", "v", None).await.unwrap();
//! assert_eq!(etcd.revision().await, 2);
//! let driver = etcd.driver(2).await;
//! # }
//! ```
//!
//! [`HostileProxy`] stands in front of a real etcd and corrupts some of its answers on a
//! schedule (malformed frames, statuses and bodies, resets, GOAWAY, stalls), for the
//! client's robustness against a server that speaks HTTP/2 and gRPC badly.
//!
//! [`Wiretap`] stands in front of a real etcd, passes everything on and records each gRPC
//! message clients send, for comparing two clients' requests for the same operations.
//!
//! [`Toxiproxy`] is a real toxiproxy server, for network faults against a cluster etcdlat did
//! not start (see [`toxiproxy_bin`] for where its binary is found).
//!
//! Tests wait for what they can observe, never for a fixed time: [`eventually`] polls a
//! condition with a deadline (a server's revision, a process's state, a run's progress).

mod hostile;
mod null;
pub mod pki;
mod proxy;
mod toxiproxy;
mod wiretap;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use hostile::{Corruption, HostileProxy};
pub use null::{Misbehave, NullServer};
pub use pki::Pki;
pub use toxiproxy::{TOXIPROXY_VERSION, Toxiproxy, toxiproxy_bin};
pub use wiretap::{Tapped, Wiretap};

use etcdlat_driver::{
    Credentials, Driver, DriverBuilder, DriverError, LocalCluster, LocalTls, Security,
};

/// The etcd binary tests use: `ETCD_BIN`, or `etcd` on `PATH`.
#[must_use]
pub fn etcd_bin() -> PathBuf {
    std::env::var_os("ETCD_BIN").map_or_else(|| PathBuf::from("etcd"), PathBuf::from)
}

/// What the tests' etcd binary says it is, such as `etcd 3.6.14 (/usr/bin/etcd)`: the first
/// line of its `--version`, asked once per test process.
#[must_use]
pub fn etcd_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let bin = etcd_bin();
        let said = std::process::Command::new(&bin).arg("--version").output().ok();
        let first = said
            .as_ref()
            .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_owned));
        let version = first.as_deref().and_then(|l| l.strip_prefix("etcd Version: "));
        format!("etcd {} ({})", version.unwrap_or("of unknown version"), bin.display())
    })
}

/// The etcd release `version` (`v3.7.3`) as `.ci/deps --tests` builds it, into
/// `${ETCD_CACHE:-~/.cache/etcdlat/etcd}/<version>/etcd`, when it is there.
#[must_use]
pub fn built_etcd(version: &str) -> Option<PathBuf> {
    let cache = std::env::var_os("ETCD_CACHE").map(PathBuf::from).or_else(|| {
        std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/etcdlat/etcd"))
    })?;
    let bin = cache.join(version).join("etcd");
    bin.is_file().then_some(bin)
}

/// True when the caller asked to skip tests that need etcd (`ETCDLAT_SKIP_ETCD=1`).
/// A test calls this first and returns early; CI never sets it.
#[must_use]
pub fn skip() -> bool {
    let skip = std::env::var("ETCDLAT_SKIP_ETCD").is_ok_and(|v| v == "1");
    if skip {
        eprintln!("ETCDLAT_SKIP_ETCD=1: skipping a test that needs etcd");
    }
    skip
}

/// A running etcd cluster owned by one test, killed and removed on drop.
#[derive(Debug)]
pub struct Etcd {
    cluster: LocalCluster,
    /// How a client reaches it: TLS for TLS clusters, root's credentials once auth is on.
    security: Security,
}

impl Etcd {
    /// One fresh member.
    ///
    /// # Panics
    /// When etcd is not installed (with how to install it) or does not start (with its log).
    pub async fn start() -> Self {
        Self::start_cluster(1).await
    }

    /// A fresh cluster of `members`.
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub async fn start_cluster(members: u32) -> Self {
        Self::start_with(LocalCluster::options().members(members)).await
    }

    /// A fresh cluster started with the given options (the binary is set here).
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub async fn start_with(options: etcdlat_driver::LocalClusterOptions) -> Self {
        Self::start_secured(options, Security::default()).await
    }

    /// A fresh cluster of `members` running the etcd binary `bin` instead of the tests' own
    /// (`ETCD_BIN`): for what only some versions have ([`built_etcd`]).
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub async fn start_bin(bin: &Path, members: u32) -> Self {
        let options = LocalCluster::options().members(members);
        Self::start_from(options.etcd_bin(bin.to_owned()), bin, Security::default()).await
    }

    /// One member serving clients over TLS with `pki`'s server certificate; with `mtls`,
    /// clients must show a certificate signed by `pki`'s authority.
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub async fn start_tls(pki: &Pki, mtls: bool) -> Self {
        let identity = (pki.client_cert(), pki.client_key());
        let tls = LocalTls {
            cert: pki.server_cert(),
            key: pki.server_key(),
            ca: pki.ca(),
            client_cert_auth: mtls,
            probe_identity: mtls.then_some(identity),
        };
        let security = Security { tls: tls.client_tls(), credentials: None };
        Self::start_secured(LocalCluster::options().tls(tls), security).await
    }

    /// One member whose auth tokens are JWTs signed with `pki`'s JWT key, valid for
    /// `ttl` (etcd's syntax, such as `2s`). Authentication is not enabled yet (see
    /// [`Etcd::enable_auth`]).
    ///
    /// # Panics
    /// As [`Etcd::start`].
    pub async fn start_jwt(pki: &Pki, ttl: &str) -> Self {
        let (private, public) = pki.jwt_keys();
        let token = format!(
            "--auth-token=jwt,pub-key={},priv-key={},sign-method=ES256,ttl={ttl}",
            public.display(),
            private.display()
        );
        Self::start_with(LocalCluster::options().arg(token)).await
    }

    async fn start_secured(
        options: etcdlat_driver::LocalClusterOptions,
        security: Security,
    ) -> Self {
        let bin = etcd_bin();
        Self::start_from(options.etcd_bin(bin.clone()), &bin, security).await
    }

    async fn start_from(
        options: etcdlat_driver::LocalClusterOptions,
        bin: &Path,
        security: Security,
    ) -> Self {
        let what = if bin == etcd_bin() {
            etcd_version().to_owned()
        } else {
            format!("etcd {}", bin.display())
        };
        match options.start().await {
            Ok(cluster) => {
                eprintln!("started {what} at {}", cluster.endpoints().join(","));
                Self { cluster, security }
            }
            Err(e @ DriverError::EtcdNotFound { .. }) => panic!(
                "{e}\n(these tests need a real etcd >= 3.4; set ETCDLAT_SKIP_ETCD=1 only to skip them deliberately)"
            ),
            Err(e) => panic!("{what} did not start: {e}"),
        }
    }

    /// Client URLs of every member.
    #[must_use]
    pub fn endpoints(&self) -> Vec<String> {
        self.cluster.endpoints()
    }

    /// The first member's client URL.
    #[must_use]
    pub fn endpoint(&self) -> String {
        self.cluster.endpoints().remove(0)
    }

    /// The underlying cluster.
    #[must_use]
    pub fn local(&self) -> &LocalCluster {
        &self.cluster
    }

    /// A driver builder for this cluster: its members (so that fault steps can act on
    /// them), its TLS, and root's credentials once [`Etcd::enable_auth`] has run.
    pub fn driver_builder(&self) -> DriverBuilder {
        Driver::builder().local_cluster(&self.cluster).security(self.security.clone())
    }

    /// A driver connected to this cluster over `conns` connections.
    ///
    /// # Panics
    /// When it cannot connect.
    pub async fn driver(&self, conns: u32) -> Driver {
        self.driver_builder().conns(conns).connect().await.expect("connecting the driver")
    }

    /// Pauses one member (SIGSTOP) until [`Etcd::resume`].
    ///
    /// # Panics
    /// When there is no such running member.
    pub fn pause(&self, name: &str) {
        assert!(self.cluster.pause(name), "no running member named {name}");
    }

    /// Resumes a paused member (SIGCONT).
    ///
    /// # Panics
    /// When there is no such running member.
    pub fn resume(&self, name: &str) {
        assert!(self.cluster.resume(name), "no running member named {name}");
    }

    /// Kills one member by name (SIGKILL), leaving the others running.
    ///
    /// # Panics
    /// When there is no such running member.
    pub fn kill(&mut self, name: &str) {
        assert!(self.cluster.kill(name), "no running member named {name}");
    }

    /// Starts a member again with the same data dir and flags (killing it first if it
    /// runs); returns without waiting for it to be ready.
    ///
    /// # Panics
    /// When there is no such member or it cannot be started.
    pub fn restart(&mut self, name: &str) {
        if let Err(e) = self.cluster.restart(name) {
            panic!("restarting {name}: {e}");
        }
    }

    /// The name of the current leader.
    ///
    /// # Panics
    /// When the cluster cannot be asked.
    pub async fn leader_name(&self) -> String {
        let mut c = self.client().await;
        let status = c.status().await.expect("status");
        let members = c.member_list().await.expect("member list");
        members
            .members()
            .iter()
            .find(|m| m.id() == status.leader())
            .map(|m| m.name().to_owned())
            .expect("the leader is a member")
    }

    /// How a client reaches this cluster: its TLS, and root's credentials once
    /// [`Etcd::enable_auth`] has run.
    #[must_use]
    pub fn security(&self) -> &Security {
        &self.security
    }

    /// Turns authentication on, with user `root` (role `root`) and `password`; later
    /// clients of this handle authenticate as root.
    ///
    /// # Panics
    /// When etcd refuses.
    pub async fn enable_auth(&mut self, password: &str) {
        let mut c = self.client().await;
        c.role_add("root").await.expect("adding role root");
        c.user_add("root", password, None).await.expect("adding user root");
        c.user_grant_role("root", "root").await.expect("granting root to root");
        c.auth_enable().await.expect("enabling auth");
        self.security.credentials = Some(Credentials::new("root", password));
    }

    /// An etcd-client connected to the first member that answers, with this cluster's TLS
    /// and credentials.
    ///
    /// # Panics
    /// When the connection fails.
    pub async fn client(&self) -> etcd_client::Client {
        etcdlat_driver::connect_client(&self.endpoints(), &self.security, Duration::from_secs(5))
            .await
            .expect("connecting etcd-client")
    }

    /// The store's current revision, read from the first member.
    ///
    /// # Panics
    /// When etcd does not answer.
    pub async fn revision(&self) -> i64 {
        let mut c = self.client().await;
        let resp = c.get("\0etcdlat-revision-probe", None).await.expect("reading the revision");
        resp.header().expect("response has a header").revision()
    }

    /// Number of keys in the store.
    ///
    /// # Panics
    /// When etcd does not answer.
    pub async fn key_count(&self) -> i64 {
        let mut c = self.client().await;
        let opts = etcd_client::GetOptions::new().with_from_key().with_count_only();
        c.get("\0", Some(opts)).await.expect("counting keys").count()
    }
}

/// How often [`eventually`] looks.
const POLL_EVERY: Duration = Duration::from_millis(50);

/// Calls `probe` every 50 ms until `done` holds of what it returns or `within` has passed,
/// and returns what it returned last. The caller asserts on that value, so that a timeout
/// fails with the test's own message and the last thing seen.
///
/// ```no_run
/// # async fn f(etcd: etcdlat_testkit::Etcd, before: i64) {
/// use std::time::Duration;
/// let revision =
///     etcdlat_testkit::eventually(Duration::from_secs(20), async || etcd.revision().await, |&r| {
///         r >= before + 100
///     })
///     .await;
/// assert!(revision >= before + 100, "no puts reached the server within 20 s");
/// # }
/// ```
pub async fn eventually<T>(
    within: Duration,
    mut probe: impl AsyncFnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        let value = probe().await;
        if done(&value) || Instant::now() >= deadline {
            return value;
        }
        tokio::time::sleep(POLL_EVERY).await;
    }
}

/// Established TCP connections this process holds to `127.0.0.1:port` (or `[::1]:port`),
/// read from `/proc`: the sockets among this process's file descriptors whose remote end is
/// that port.
///
/// # Panics
/// When `/proc` cannot be read (Linux only).
#[must_use]
pub fn tcp_connections_to(port: u16) -> usize {
    let mut inodes = std::collections::HashSet::new();
    for fd in std::fs::read_dir("/proc/self/fd").expect("reading /proc/self/fd").flatten() {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let t = target.to_string_lossy();
            if let Some(inode) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.insert(inode.to_owned());
            }
        }
    }
    let mut count = 0;
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else { continue };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() < 10 {
                continue;
            }
            let remote_port =
                cols[2].rsplit(':').next().and_then(|p| u16::from_str_radix(p, 16).ok());
            // State 01 is ESTABLISHED.
            if remote_port == Some(port) && cols[3] == "01" && inodes.contains(cols[9]) {
                count += 1;
            }
        }
    }
    count
}

/// A thread of a process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcThread {
    /// Its kernel id (the process's own id for its main thread).
    pub tid: u32,
    /// Its name (`comm`), such as `etcdlat-worker-0`, cut by the kernel at 15 bytes.
    pub name: String,
    /// The CPUs it may run on, as the kernel lists them: `0-1`, `0`, `2,5`.
    pub cpus: String,
}

/// The threads of process `pid`, read from `/proc`: none when it is gone, and a thread gone
/// while it is read is left out.
#[must_use]
pub fn threads_of(pid: u32) -> Vec<ProcThread> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return Vec::new() };
    dir.filter_map(|task| {
        let path = task.ok()?.path();
        let tid = path.file_name()?.to_str()?.parse().ok()?;
        let name = std::fs::read_to_string(path.join("comm")).ok()?.trim().to_owned();
        let cpus = cpus_allowed(&std::fs::read_to_string(path.join("status")).ok()?)?;
        Some(ProcThread { tid, name, cpus })
    })
    .collect()
}

/// The CPUs what `/proc/ENTRY` is may run on, as the kernel lists them: a process's id (its
/// main thread's CPUs), `self`, or `thread-self` (the calling thread's).
#[must_use]
pub fn cpus_of(entry: impl std::fmt::Display) -> Option<String> {
    cpus_allowed(&std::fs::read_to_string(format!("/proc/{entry}/status")).ok()?)
}

/// The first CPU of a list such as `0-1` or `2,5`.
///
/// # Panics
/// When `list` does not start with a CPU number.
#[must_use]
pub fn first_cpu(list: &str) -> usize {
    list.split([',', '-']).next().and_then(|c| c.parse().ok()).expect("a CPU list")
}

/// `Cpus_allowed_list` of a `/proc/.../status`.
fn cpus_allowed(status: &str) -> Option<String> {
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(|c| c.trim().to_owned())
}

/// The port of an endpoint URL like `http://127.0.0.1:2379`.
///
/// # Panics
/// When the endpoint has no port.
#[must_use]
pub fn port_of(endpoint: &str) -> u16 {
    endpoint
        .rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .expect("endpoint has a port")
}

/// The count of successful gRPC calls of `method` (`Put`, `Range`, ...) a member has served,
/// from its `/metrics` (`grpc_server_handled_total`).
///
/// # Panics
/// When the member does not answer.
pub fn grpc_handled(client_url: &str, method: &str) -> u64 {
    use std::io::{Read, Write};
    let addr = client_url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connecting to /metrics");
    write!(stream, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("asking /metrics");
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("reading /metrics");
    let needle = format!("grpc_method=\"{method}\"");
    text.lines()
        .filter(|l| l.starts_with("grpc_server_handled_total{") && l.contains(&needle))
        .filter(|l| l.contains("grpc_code=\"OK\""))
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .map(|v| v as u64)
        .sum()
}
