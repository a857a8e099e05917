//! Throwaway local etcd clusters: started from an `etcd` binary on free loopback ports with
//! their data in a temp dir, ready when every member answers Status and a leader is
//! elected, killed and removed when dropped.
//!
//! The CLI starts one when no endpoints are given; the testkit uses the same code.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, TcpListener};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use etcd_client::{Client, ConnectOptions};

use crate::error::DriverError;

/// How to start a local cluster.
#[derive(Debug, Clone)]
#[must_use]
pub struct LocalClusterOptions {
    members: u32,
    etcd_bin: PathBuf,
    ready_timeout: Duration,
    extra_args: Vec<String>,
}

impl Default for LocalClusterOptions {
    fn default() -> Self {
        Self {
            members: 1,
            etcd_bin: PathBuf::from("etcd"),
            ready_timeout: Duration::from_secs(30),
            extra_args: Vec::new(),
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

    /// Starts the cluster.
    ///
    /// # Errors
    /// [`DriverError::EtcdNotFound`] when the binary cannot be run, [`DriverError::LocalNotReady`]
    /// (with the member's log tail) when a member does not become ready in time, and
    /// [`DriverError::Io`] for temp dir and process failures. Nothing is left running or on
    /// disk on error.
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
    child: Option<Child>,
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
        self.child.as_ref().map(Child::id)
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
}

fn free_port() -> Result<u16, DriverError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| DriverError::io("finding a free loopback port", e))
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

    async fn start(opts: LocalClusterOptions) -> Result<Self, DriverError> {
        let dir = tempfile::Builder::new()
            .prefix("etcdlat-")
            .tempdir()
            .map_err(|e| DriverError::io("creating a temp dir for local etcd", e))?;
        let mut members = Vec::new();
        for i in 0..opts.members {
            let name = format!("m{i}");
            members.push(LocalMember {
                client_url: format!("http://127.0.0.1:{}", free_port()?),
                peer_url: format!("http://127.0.0.1:{}", free_port()?),
                log: dir.path().join(format!("{name}.log")),
                name,
                child: None,
            });
        }
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let token =
            format!("etcdlat-{}-{}", std::process::id(), dir.path().display().to_string().len());
        let mut cluster = Self { members, dir: Some(dir) };
        let data_root = cluster.dir.as_ref().map(|d| d.path().to_path_buf()).unwrap_or_default();

        for m in &mut cluster.members {
            let log = File::create(&m.log)
                .map_err(|e| DriverError::io("creating the etcd log file", e))?;
            let log2 =
                log.try_clone().map_err(|e| DriverError::io("creating the etcd log file", e))?;
            let child = Command::new(&opts.etcd_bin)
                .arg("--name")
                .arg(&m.name)
                .arg("--data-dir")
                .arg(data_root.join(&m.name))
                .arg("--listen-client-urls")
                .arg(&m.client_url)
                .arg("--advertise-client-urls")
                .arg(&m.client_url)
                .arg("--listen-peer-urls")
                .arg(&m.peer_url)
                .arg("--initial-advertise-peer-urls")
                .arg(&m.peer_url)
                .arg("--initial-cluster")
                .arg(&initial_cluster)
                .arg("--initial-cluster-state")
                .arg("new")
                .arg("--initial-cluster-token")
                .arg(&token)
                .arg("--logger=zap")
                .arg("--log-outputs=stderr")
                .args(&opts.extra_args)
                // Its own process group, so a Ctrl-C at the terminal stops etcdlat (which then
                // tears the cluster down) rather than killing etcd under a running measurement.
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log2)
                .spawn();
            match child {
                Ok(c) => m.child = Some(c),
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
        cluster.wait_ready(opts.ready_timeout).await?;
        tracing::debug!(members = cluster.members.len(), "local etcd cluster ready");
        Ok(cluster)
    }

    async fn wait_ready(&mut self, timeout: Duration) -> Result<(), DriverError> {
        let deadline = Instant::now() + timeout;
        for i in 0..self.members.len() {
            loop {
                let m = &mut self.members[i];
                if let Some(Ok(Some(status))) = m.child.as_mut().map(Child::try_wait) {
                    return Err(DriverError::LocalNotReady {
                        member: m.name.clone(),
                        timeout,
                        reason: format!("etcd exited with {status}"),
                        log_tail: m.log_tail(),
                    });
                }
                let last = match status_leader(&m.client_url).await {
                    Ok(leader) if leader != 0 => break,
                    Ok(_) => "no leader elected yet".to_owned(),
                    Err(e) => e,
                };
                if Instant::now() >= deadline {
                    return Err(DriverError::LocalNotReady {
                        member: m.name.clone(),
                        timeout,
                        reason: last,
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
        let Some(m) = self.members.iter_mut().find(|m| m.name == name) else { return false };
        let Some(mut child) = m.child.take() else { return false };
        let _ = child.kill();
        let _ = child.wait();
        true
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
        let Some(pid) = self.members.iter().find(|m| m.name == name).and_then(LocalMember::pid)
        else {
            return false;
        };
        let Ok(pid) = i32::try_from(pid) else { return false };
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), signal).is_ok()
    }

    /// Kills every member and removes the data. Also done on drop.
    pub fn shutdown(&mut self) {
        for m in &mut self.members {
            if let Some(mut child) = m.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
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

async fn status_leader(url: &str) -> Result<u64, String> {
    let opts = ConnectOptions::new()
        .with_connect_timeout(Duration::from_millis(500))
        .with_timeout(Duration::from_secs(1));
    let mut client = Client::connect([url], Some(opts)).await.map_err(|e| e.to_string())?;
    let status = client.status().await.map_err(|e| e.to_string())?;
    Ok(status.leader())
}
