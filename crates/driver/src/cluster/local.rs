//! Throwaway local etcd clusters: started from an `etcd` binary on free loopback ports with
//! their data in a temp dir, ready when every member answers Status and a leader is
//! elected, killed and removed when dropped.
//!
//! The CLI starts one when no endpoints are given; the testkit uses the same code. Even a
//! `kill -9` of etcdlat leaves no member running, and a later start removes the dir
//! ([`super::orphan`]).

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcdlat_core::scenario::Site;
use etcdlat_core::{LinkReport, Network, NetworkReport};

use super::network::{Emulator, LinkParams, LinkState, MemberPorts};
use super::orphan::{self, Guard};
use super::process::Process;
use super::target::TargetError;
use crate::error::{DriverError, NotReady};
use crate::transport::{Dialer, Security, TlsOptions, control_client, within};

/// How to start a local cluster.
#[derive(Debug, Clone)]
#[must_use]
pub struct LocalClusterOptions {
    members: u32,
    etcd_bin: PathBuf,
    ready_timeout: Duration,
    extra_args: Vec<String>,
    tls: Option<LocalTls>,
    network: Option<Network>,
    emulator_threads: usize,
    member_cpus: Vec<usize>,
    network_cpus: Vec<usize>,
}

/// TLS on a local cluster's client URLs (peers stay plain).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalTls {
    /// The members' certificate (PEM), valid for 127.0.0.1.
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The authority that signed `cert` (and the client certificates, when they are
    /// required).
    pub ca: PathBuf,
    /// Require client certificates signed by `ca` (etcd's `--client-cert-auth`).
    pub client_cert_auth: bool,
    /// The client certificate and key the readiness probe shows when they are required.
    pub probe_identity: Option<(PathBuf, PathBuf)>,
}

impl LocalTls {
    /// How a client reaches members with this TLS (the probe's identity, if any).
    #[must_use]
    pub fn client_tls(&self) -> TlsOptions {
        TlsOptions {
            ca: Some(self.ca.clone()),
            cert: self.probe_identity.as_ref().map(|(c, _)| c.clone()),
            key: self.probe_identity.as_ref().map(|(_, k)| k.clone()),
            insecure_skip_verify: false,
        }
    }
}

impl Default for LocalClusterOptions {
    fn default() -> Self {
        Self {
            members: 1,
            etcd_bin: PathBuf::from("etcd"),
            ready_timeout: Duration::from_secs(30),
            extra_args: Vec::new(),
            tls: None,
            network: None,
            emulator_threads: super::network::default_threads(),
            member_cpus: Vec::new(),
            network_cpus: Vec::new(),
        }
    }
}

impl LocalClusterOptions {
    /// Number of members (default 1).
    pub fn members(mut self, members: u32) -> Self {
        self.members = members;
        self
    }

    /// The etcd binary: a path, or a name looked up on `PATH` (default `etcd`).
    pub fn etcd_bin(mut self, bin: impl Into<PathBuf>) -> Self {
        self.etcd_bin = bin.into();
        self
    }

    /// How long the members may take to become ready (default 30 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    /// Extra flags passed to every member (for example `--max-request-bytes=...`).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.extra_args.push(arg.into());
        self
    }

    /// Serve clients over TLS: client URLs are `https://`.
    pub fn tls(mut self, tls: LocalTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Puts the cluster behind an emulated network ([`Network`]): every client and peer
    /// connection crosses a userspace proxy that delays it and limits its rate as `network`
    /// says, and that network fault steps (partition, delay, bandwidth) act on. Proxies are
    /// started even when `network` adds nothing, for those steps; without this call no proxy
    /// is in the path at all.
    pub fn network(mut self, network: Network) -> Self {
        self.network = Some(network);
        self
    }

    /// How many threads carry the emulated network's connections (at least one; default
    /// two, or one on a one-core machine). Their CPU is reported as the network's.
    pub fn emulator_threads(mut self, threads: usize) -> Self {
        self.emulator_threads = threads.max(1);
        self
    }

    /// Runs every member on these CPUs only (Linux; empty, the default: on the process's
    /// CPUs, those of its main thread, even when started from a thread pinned to fewer), so
    /// that the client and the emulated network can be kept off etcd's cores
    /// (see [`network_cpus`](Self::network_cpus) and the driver's `pin_cpus`).
    pub fn member_cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Self {
        self.member_cpus = cpus.into_iter().collect();
        self
    }

    /// Runs the emulated network's threads on these CPUs only (Linux; empty, the default:
    /// on the process's CPUs, as members), at most one thread per CPU. On a machine that etcd
    /// and the client saturate, the emulator's CPU otherwise comes out of etcd's throughput.
    pub fn network_cpus(mut self, cpus: impl IntoIterator<Item = usize>) -> Self {
        self.network_cpus = cpus.into_iter().collect();
        self
    }

    /// Starts the cluster.
    ///
    /// # Errors
    /// [`DriverError::EtcdNotFound`] when the binary cannot be run, [`DriverError::LocalNotReady`]
    /// (with the member's log tail) when a member does not become ready in time, and
    /// [`DriverError::Io`] for temp dir and process failures, [`DriverError::Scenario`] for a
    /// network that does not fit the cluster (more zones than members, an unknown member).
    /// Nothing is left running or on disk on error.
    pub async fn start(self) -> Result<LocalCluster, DriverError> {
        LocalCluster::start(self).await
    }
}

/// One member of a local cluster.
#[derive(Debug)]
pub struct LocalMember {
    name: String,
    client_url: String,
    peer_url: String,
    log: PathBuf,
    process: Arc<Process>,
}

/// Kills, pauses, resumes and restarts the members of a [`LocalCluster`] from another
/// owner: a driver built with [`crate::DriverBuilder::local_cluster`] holds one for the
/// scenario's fault steps. The cluster still owns the members: once it is shut down or
/// dropped, nothing here starts a process again.
#[derive(Debug, Clone)]
pub(crate) struct MemberControl {
    members: Vec<(String, String, Arc<Process>)>,
    network: Option<(Network, Arc<Emulator>)>,
}

impl MemberControl {
    /// Whether the members sit behind an emulated network, proxied in this process.
    pub(crate) fn emulated(&self) -> bool {
        self.network.is_some()
    }

    /// Member names and client URLs, in name order.
    pub(crate) fn members(&self) -> impl Iterator<Item = (&str, &str)> {
        self.members.iter().map(|(name, url, _)| (name.as_str(), url.as_str()))
    }

    fn process(&self, name: &str) -> Option<&Process> {
        self.members.iter().find(|(n, _, _)| n == name).map(|(_, _, p)| p.as_ref())
    }

    /// Whether the member's process is running (possibly paused).
    pub(crate) fn is_running(&self, name: &str) -> bool {
        self.process(name).is_some_and(|p| p.pid().is_some())
    }

    /// SIGKILL; false when no such member runs.
    pub(crate) fn kill(&self, name: &str) -> bool {
        self.process(name).is_some_and(Process::kill)
    }

    /// SIGSTOP; false when no such member runs.
    pub(crate) fn pause(&self, name: &str) -> bool {
        self.process(name).is_some_and(|p| p.signal(nix::sys::signal::Signal::SIGSTOP))
    }

    /// SIGCONT; false when no such member runs.
    pub(crate) fn resume(&self, name: &str) -> bool {
        self.process(name).is_some_and(|p| p.signal(nix::sys::signal::Signal::SIGCONT))
    }

    /// Kills the member if it runs and starts it again with the same data dir and flags.
    pub(crate) fn restart(&self, name: &str) -> Result<(), String> {
        self.process(name).ok_or_else(|| format!("no member named {name:?}"))?.restart()
    }

    /// The cluster's emulated network, when it has one.
    pub(crate) fn network(&self) -> Option<&Emulator> {
        self.network.as_ref().map(|(_, emulator)| emulator.as_ref())
    }

    /// The emulated network's threads, whose CPU is apart from the client's
    /// ([`Emulator::thread_ids`]).
    pub(crate) fn network_threads(&self) -> Vec<i32> {
        self.network().map(|e| e.thread_ids().to_vec()).unwrap_or_default()
    }

    /// Every emulated link as it is now, in [`Emulator::links`] order: taken before a run, so
    /// that the report counts what the run added.
    pub(crate) fn network_snapshot(&self) -> Vec<LinkState> {
        self.network().map(Emulator::links).unwrap_or_default()
    }

    /// The network for a report: its settings, and what each link carried since `before`
    /// ([`Self::network_snapshot`] then) and how late.
    pub(crate) fn network_report(&self, before: &[LinkState]) -> Option<NetworkReport> {
        let (config, emulator) = self.network.as_ref()?;
        let name = |endpoint: usize| match endpoint {
            0 => "client".to_owned(),
            i => self.members.get(i - 1).map_or_else(|| format!("#{i}"), |m| m.0.clone()),
        };
        let micros = |d: std::time::Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let links = emulator
            .links()
            .into_iter()
            .enumerate()
            .map(|(i, mut now)| {
                if let Some(then) = before.get(i) {
                    now.bytes = now.bytes.saturating_sub(then.bytes);
                    // Counts only grow, so what was recorded then is in the histogram now.
                    let _ = now.late_us.subtract(&then.late_us);
                }
                let late =
                    |q: f64| (!now.late_us.is_empty()).then(|| now.late_us.value_at_quantile(q));
                LinkReport {
                    from: name(now.from),
                    to: name(now.to),
                    latency_us: micros(now.params.latency),
                    jitter_us: micros(now.params.jitter),
                    bandwidth_bytes_per_s: now.params.bandwidth,
                    bytes: now.bytes,
                    late_p50_us: late(0.5),
                    late_p99_us: late(0.99),
                }
            })
            .collect();
        Some(NetworkReport {
            config: config.clone(),
            summary: config.summary(),
            links,
            emulator: None,
        })
    }

    /// The index of a member by name.
    pub(crate) fn index(&self, name: &str) -> Option<usize> {
        self.members.iter().position(|(n, _, _)| n == name)
    }

    /// The member's process and data dir, for the resource sampler.
    pub(crate) fn member_process(&self, name: &str) -> Option<MemberProcess> {
        let (_, _, process) = self.members.iter().find(|(n, _, _)| n == name)?;
        Some(MemberProcess(Arc::clone(process)))
    }
}

/// A member etcdlat started, as its resource sampler sees it: the process running now (a
/// restart changes it) and its data dir.
#[derive(Debug, Clone)]
pub(crate) struct MemberProcess(Arc<Process>);

impl MemberProcess {
    /// The pid of the member's process now; `None` while it is not running.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.0.pid()
    }

    /// The member's data dir.
    pub(crate) fn data_dir(&self) -> &Path {
        &self.0.data_dir
    }
}

impl LocalMember {
    /// Member name (`m0`, `m1`, ...).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Client URL, `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn client_url(&self) -> &str {
        &self.client_url
    }

    /// Process id, while running.
    #[must_use]
    pub fn pid(&self) -> Option<u32> {
        self.process.pid()
    }

    /// The last lines of the member's log.
    #[must_use]
    pub fn log_tail(&self) -> String {
        log_tail(&self.log, 20)
    }
}

/// A running throwaway etcd cluster. Dropping it kills the members and removes their data.
#[derive(Debug)]
pub struct LocalCluster {
    members: Vec<LocalMember>,
    dir: Option<tempfile::TempDir>,
    /// The emulated network the members are behind, if any, with its settings: stopped
    /// after the members.
    network: Option<(Network, Arc<Emulator>)>,
    /// Kills the members if etcdlat dies without shutting the cluster down; ended after
    /// them.
    guard: Option<Guard>,
}

/// Attempts at starting a cluster, when a port chosen for a member was taken by another
/// process before etcd could bind it.
const START_ATTEMPTS: u32 = 3;

/// How long a starting member has to answer a readiness probe's Status, over loopback (an
/// emulated network adds its slowest round trip).
const STATUS_ANSWER: Duration = Duration::from_secs(1);

/// Free loopback ports for `members` members, a client and a peer port each: every one is
/// bound at once, so that no two are the same, then released for etcd to bind. Another
/// process may still take one in between; the start is then tried again on new ports.
fn free_ports(members: u32) -> Result<Vec<(u16, u16)>, DriverError> {
    let io = |e| DriverError::io("finding a free loopback port", e);
    let bind = || TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).map_err(io);
    let port = |l: &TcpListener| l.local_addr().map(|a| a.port()).map_err(io);
    let listeners: Vec<(TcpListener, TcpListener)> =
        (0..members).map(|_| Ok((bind()?, bind()?))).collect::<Result<_, DriverError>>()?;
    listeners.iter().map(|(client, peer)| Ok((port(client)?, port(peer)?))).collect()
}

/// Whether a member failed to start because a port of its was in use.
fn address_in_use(e: &DriverError) -> bool {
    matches!(e, DriverError::LocalNotReady { log_tail, .. } if log_tail.contains("address already in use"))
}

fn log_tail(path: &Path, lines: usize) -> String {
    let Ok(mut f) = File::open(path) else { return String::from("(no log)") };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut text = String::new();
    let _ = f.read_to_string(&mut text);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

impl LocalCluster {
    /// A builder of options; `LocalCluster::options().members(3).start().await`.
    pub fn options() -> LocalClusterOptions {
        LocalClusterOptions::default()
    }

    /// Removes the temp dirs of local clusters whose etcdlat is gone (killed before it
    /// could remove them), and answers which. A dir whose owner still runs is never
    /// touched. Their members are gone already: they die with their etcdlat.
    #[must_use]
    pub fn remove_abandoned() -> Vec<PathBuf> {
        orphan::remove_abandoned(&std::env::temp_dir())
    }

    async fn start(opts: LocalClusterOptions) -> Result<Self, DriverError> {
        let mut attempt = 1;
        loop {
            match Self::start_on_free_ports(&opts).await {
                Err(e) if attempt < START_ATTEMPTS && address_in_use(&e) => {
                    tracing::debug!(attempt, error = %e, "a local etcd port was taken: starting again");
                    attempt += 1;
                }
                started => return started,
            }
        }
    }

    /// One attempt at starting the cluster; on error, what it started is torn down.
    async fn start_on_free_ports(opts: &LocalClusterOptions) -> Result<Self, DriverError> {
        let dir = tempfile::Builder::new()
            .prefix(&orphan::dir_prefix())
            .tempdir()
            .map_err(|e| DriverError::io("creating a temp dir for local etcd", e))?;
        if let Some(network) = &opts.network {
            network.validate(Site::Local(Some(opts.members)))?;
        }
        let scheme = if opts.tls.is_some() { "https" } else { "http" };
        let mut members = Vec::new();
        // Where each member listens; the same as where it is reached unless it is behind the
        // emulated network, whose proxies' ports are bound now and kept.
        let mut listen = Vec::new();
        let mut proxies = Vec::new();
        for (i, (client_port, peer_port)) in free_ports(opts.members)?.into_iter().enumerate() {
            let name = format!("m{i}");
            let (client_url, peer_url) = (
                format!("{scheme}://127.0.0.1:{client_port}"),
                format!("http://127.0.0.1:{peer_port}"),
            );
            let (advertised_client, advertised_peer) = if opts.network.is_some() {
                let ports = MemberPorts::bind(client_port, peer_port)
                    .map_err(|e| DriverError::io("binding an emulated link's port", e))?;
                let urls = ports
                    .urls(scheme)
                    .map_err(|e| DriverError::io("binding an emulated link's port", e))?;
                proxies.push(ports);
                urls
            } else {
                (client_url.clone(), peer_url.clone())
            };
            listen.push((client_url, peer_url));
            members.push(LocalMember {
                client_url: advertised_client,
                peer_url: advertised_peer,
                log: dir.path().join(format!("{name}.log")),
                name,
                process: Arc::default(),
            });
        }
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let token =
            format!("etcdlat-{}-{}", std::process::id(), dir.path().display().to_string().len());
        let guard = Guard::start().map_err(|e| DriverError::io("starting /bin/sh", e))?;
        let group = guard.group();
        let mut cluster = Self { members, dir: Some(dir), network: None, guard: Some(guard) };
        let data_root = cluster.dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();

        for (m, (listen_client, listen_peer)) in cluster.members.iter_mut().zip(&listen) {
            let flags: [(&str, OsString); 10] = [
                ("--name", (&m.name).into()),
                ("--data-dir", data_root.join(&m.name).into_os_string()),
                ("--listen-client-urls", listen_client.into()),
                ("--advertise-client-urls", (&m.client_url).into()),
                ("--listen-peer-urls", listen_peer.into()),
                ("--initial-advertise-peer-urls", (&m.peer_url).into()),
                ("--initial-cluster", (&initial_cluster).into()),
                // On a restart, etcd finds its data dir and ignores the initial-cluster flags.
                ("--initial-cluster-state", "new".into()),
                ("--initial-cluster-token", (&token).into()),
                ("--logger", "zap".into()),
            ];
            let tls_flags: Vec<OsString> = match &opts.tls {
                None => Vec::new(),
                Some(tls) => {
                    let mut f: Vec<OsString> = vec![
                        "--cert-file".into(),
                        tls.cert.clone().into(),
                        "--key-file".into(),
                        tls.key.clone().into(),
                    ];
                    // etcd 3.4 requires client certificates as soon as it has a trusted CA.
                    if tls.client_cert_auth {
                        f.extend(["--trusted-ca-file".into(), tls.ca.clone().into()]);
                        f.push("--client-cert-auth".into());
                    }
                    f
                }
            };
            let args: Vec<OsString> = flags
                .into_iter()
                .flat_map(|(flag, value)| [OsString::from(flag), value])
                .chain(["--log-outputs=stderr".into()])
                .chain(tls_flags)
                .chain(opts.extra_args.iter().map(OsString::from))
                .collect();
            m.process = Arc::new(Process {
                bin: opts.etcd_bin.clone(),
                args,
                data_dir: data_root.join(&m.name),
                log: m.log.clone(),
                group,
                cpus: opts.member_cpus.clone(),
                state: Mutex::default(),
            });
        }
        // An emulated link's delay is the readiness probe's too: a round trip over the
        // slowest link is allowed on top of the usual limits, so that slow links can be
        // started at all.
        let mut slowest = Duration::ZERO;
        if let Some(network) = &opts.network {
            // Before any member starts: they dial each other through the proxies at once.
            let processes: Vec<Arc<Process>> =
                cluster.members.iter().map(|m| Arc::clone(&m.process)).collect();
            let pids = Arc::new(move || processes.iter().map(|p| p.pid()).collect());
            let links = network.links(opts.members);
            slowest =
                links.iter().flatten().map(|l| l.latency + l.jitter).max().unwrap_or_default();
            let links = links
                .into_iter()
                .map(|row| row.into_iter().map(LinkParams::from).collect())
                .collect();
            let threads = match opts.network_cpus.len() {
                0 => opts.emulator_threads,
                cpus => opts.emulator_threads.min(cpus),
            };
            let (proxies, cpus) = (std::mem::take(&mut proxies), opts.network_cpus.clone());
            let emulator = Emulator::start(links, proxies, pids, threads, cpus)
                .map_err(|e| DriverError::io("starting the emulated network", e))?;
            cluster.network = Some((network.clone(), Arc::new(emulator)));
        }
        for m in &cluster.members {
            let process = &m.process;
            match process.spawn() {
                Ok(c) => process.state().child = Some(c),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return Err(DriverError::EtcdNotFound { binary: opts.etcd_bin.clone() });
                }
                Err(e) => {
                    return Err(DriverError::io(
                        format!("starting {}", opts.etcd_bin.display()),
                        e,
                    ));
                }
            }
        }
        let probe = Security {
            tls: opts.tls.as_ref().map(LocalTls::client_tls).unwrap_or_default(),
            credentials: None,
        };
        let probe = Dialer::new(&probe, Duration::from_millis(500) + 2 * slowest)?;
        cluster.wait_ready(opts.ready_timeout, &probe, STATUS_ANSWER + 2 * slowest).await?;
        tracing::debug!(members = cluster.members.len(), "local etcd cluster ready");
        Ok(cluster)
    }

    async fn wait_ready(
        &mut self,
        timeout: Duration,
        probe: &Dialer,
        answer_within: Duration,
    ) -> Result<(), DriverError> {
        let deadline = Instant::now() + timeout;
        for i in 0..self.members.len() {
            loop {
                // Any member that exited fails the start now, not once the members before
                // it have waited out the timeout for a quorum it can no longer make.
                for m in &self.members {
                    let exited = m.process.state().child.as_mut().map(Child::try_wait);
                    if let Some(Ok(Some(status))) = exited {
                        return Err(DriverError::LocalNotReady {
                            member: m.name.clone(),
                            timeout,
                            source: NotReady::Exited(status),
                            log_tail: m.log_tail(),
                        });
                    }
                }
                let m = &self.members[i];
                let last = match status_leader(probe, &m.client_url, answer_within).await {
                    Ok(leader) if leader != 0 => break,
                    Ok(_) => NotReady::NoLeader,
                    Err(e) => e,
                };
                if Instant::now() >= deadline {
                    return Err(DriverError::LocalNotReady {
                        member: m.name.clone(),
                        timeout,
                        source: last,
                        log_tail: m.log_tail(),
                    });
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }

    /// Client URLs of every member.
    #[must_use]
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// The members.
    #[must_use]
    pub fn members(&self) -> &[LocalMember] {
        &self.members
    }

    /// The directory holding data and logs (removed on drop).
    #[must_use]
    pub fn dir(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), |d| d.path())
    }

    /// Kills one member (SIGKILL) and waits for it to exit; its data stays. Returns false when
    /// there is no such running member.
    pub fn kill(&mut self, name: &str) -> bool {
        self.members.iter().find(|m| m.name == name).is_some_and(|m| m.process.kill())
    }

    /// Starts one member again with the same data dir and flags (killing it first if it
    /// runs), as after a crash; it rejoins the cluster with its data. Returns without waiting
    /// for it to be ready.
    ///
    /// # Errors
    /// [`DriverError::Target`] when there is no such member, [`DriverError::Io`] when etcd
    /// cannot be started.
    pub fn restart(&mut self, name: &str) -> Result<(), DriverError> {
        let Some(m) = self.members.iter().find(|m| m.name == name) else {
            let members = self.members.iter().map(|m| m.name.clone()).collect();
            return Err(TargetError::NoSuchMember { name: name.to_owned(), members }.into());
        };
        m.process.restart().map_err(|reason| {
            DriverError::io(format!("restarting {name}"), std::io::Error::other(reason))
        })
    }

    /// A handle that kills, pauses and restarts members, for a driver's fault steps.
    pub(crate) fn control(&self) -> MemberControl {
        MemberControl {
            members: self
                .members
                .iter()
                .map(|m| (m.name.clone(), m.client_url.clone(), Arc::clone(&m.process)))
                .collect(),
            network: self.network.clone(),
        }
    }

    /// Pauses one member (SIGSTOP): it keeps its connections but answers nothing, like a
    /// stalled disk or a long GC pause. Returns false when there is no such running member.
    pub fn pause(&self, name: &str) -> bool {
        self.signal(name, nix::sys::signal::Signal::SIGSTOP)
    }

    /// Resumes a paused member (SIGCONT).
    pub fn resume(&self, name: &str) -> bool {
        self.signal(name, nix::sys::signal::Signal::SIGCONT)
    }

    fn signal(&self, name: &str, signal: nix::sys::signal::Signal) -> bool {
        self.members.iter().find(|m| m.name == name).is_some_and(|m| m.process.signal(signal))
    }

    /// Kills every member and removes the data. Also done on drop. Members are never started
    /// again afterwards, not even by a driver's fault steps.
    pub fn shutdown(&mut self) {
        for m in &self.members {
            m.process.close();
        }
        if let Some((_, network)) = self.network.take() {
            network.shutdown();
        }
        drop(self.guard.take());
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}

async fn status_leader(dialer: &Dialer, url: &str, within_time: Duration) -> Result<u64, NotReady> {
    let mut client =
        control_client(dialer, url).await.map_err(|e| NotReady::Unreachable(Box::new(e)))?;
    let status = within(within_time, "Status", client.status());
    status.await.map(|s| s.leader()).map_err(NotReady::Status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_port_of_a_cluster_is_distinct() {
        let ports = free_ports(5).unwrap();
        let mut all: Vec<u16> = ports.iter().flat_map(|&(c, p)| [c, p]).collect();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 10, "{ports:?}");
        assert!(all.iter().all(|&p| p != 0));
    }

    #[test]
    fn a_port_taken_meanwhile_is_told_from_other_failures() {
        let failed = |log_tail: &str| DriverError::LocalNotReady {
            member: "m0".into(),
            timeout: Duration::from_secs(1),
            source: NotReady::NoLeader,
            log_tail: log_tail.into(),
        };
        // As etcd 3.4 logs it.
        let taken = r#"{"level":"fatal","msg":"discovery failed","error":"listen tcp 127.0.0.1:40123: bind: address already in use"}"#;
        assert!(address_in_use(&failed(taken)));
        assert!(!address_in_use(&failed("member has already been bootstrapped")));
        assert!(!address_in_use(&DriverError::EtcdNotFound { binary: "etcd".into() }));
    }
}
