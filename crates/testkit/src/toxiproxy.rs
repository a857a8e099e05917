//! A real toxiproxy server (Shopify/toxiproxy v2) for tests of network faults against
//! clusters etcdlat did not start: on a free loopback port, ready when its API answers, killed
//! on drop, with its proxies.
//!
//! The binary is `TOXIPROXY_BIN` if set, else `toxiproxy-server` on `PATH`, else the one
//! `.ci/deps --tests` builds in `${TOXIPROXY_DIR:-$HOME/.cache/etcdlat/toxiproxy}/v2.5.0/`. When it is
//! missing, tests fail with a message that says how to get it; `ETCDLAT_SKIP_ETCD=1` skips
//! them with the etcd tests.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The toxiproxy version `.ci/deps` builds.
pub const TOXIPROXY_VERSION: &str = "v2.5.0";

/// How long a started server may take to answer.
const READY_WITHIN: Duration = Duration::from_secs(20);

/// The toxiproxy server binary tests use: `TOXIPROXY_BIN`, else `toxiproxy-server` on
/// `PATH`, else `.ci/deps`'s cache; `None` when there is none.
#[must_use]
pub fn toxiproxy_bin() -> Option<PathBuf> {
    if let Some(bin) = std::env::var_os("TOXIPROXY_BIN") {
        return Some(PathBuf::from(bin));
    }
    let on_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).map(|dir| dir.join("toxiproxy-server")).find(|p| p.is_file())
    });
    let cache = std::env::var_os("TOXIPROXY_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/etcdlat/toxiproxy"))
        })
        .map(|dir| dir.join(TOXIPROXY_VERSION).join("toxiproxy-server"));
    on_path.or_else(|| cache.filter(|p| p.is_file()))
}

/// A running toxiproxy server owned by one test, killed on drop (its proxies with it).
#[derive(Debug)]
pub struct Toxiproxy {
    child: Child,
    api: SocketAddr,
    /// Its log, shown when it fails.
    log: tempfile::NamedTempFile,
}

impl Toxiproxy {
    /// A fresh server on a free loopback port, once its API answers.
    ///
    /// # Panics
    /// When there is no toxiproxy-server (with how to get one) or it does not answer.
    pub async fn start() -> Self {
        let Some(bin) = toxiproxy_bin() else {
            panic!(
                "no toxiproxy-server found (TOXIPROXY_BIN, PATH, or {}): run .ci/deps --tests, which \
                 builds Shopify/toxiproxy {TOXIPROXY_VERSION} with Go, or set TOXIPROXY_BIN \
                 (set ETCDLAT_SKIP_ETCD=1 only to skip these tests deliberately)",
                "${TOXIPROXY_DIR:-$HOME/.cache/etcdlat/toxiproxy}/v2.5.0/toxiproxy-server"
            )
        };
        let log = tempfile::NamedTempFile::new().expect("a temp file for toxiproxy's log");
        let api = SocketAddr::from(([127, 0, 0, 1], free_port()));
        let child = Command::new(&bin)
            .args(["-host", "127.0.0.1", "-port", &api.port().to_string()])
            .stdin(Stdio::null())
            .stdout(log.reopen().expect("toxiproxy's log"))
            .stderr(log.reopen().expect("toxiproxy's log"))
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let mut server = Self { child, api, log };
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            if let Some(status) = server.child.try_wait().expect("toxiproxy's state") {
                panic!("toxiproxy-server exited ({status}); its log:\n{}", server.log_text());
            }
            if server.try_request("GET", "/version", "").is_ok_and(|(status, _)| status == 200) {
                return server;
            }
            assert!(
                Instant::now() < deadline,
                "toxiproxy-server did not answer within {READY_WITHIN:?}; its log:\n{}",
                server.log_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Its API's URL, `http://127.0.0.1:PORT`, as `[network] toxiproxy` takes it.
    #[must_use]
    pub fn api(&self) -> String {
        format!("http://{}", self.api)
    }

    /// Creates proxy `name` from a free loopback port to `upstream` (`HOST:PORT`, or a URL
    /// such as an etcd endpoint); returns the address it listens on, `127.0.0.1:PORT`.
    ///
    /// # Panics
    /// When the server refuses.
    #[must_use]
    pub fn create_proxy(&self, name: &str, upstream: &str) -> String {
        let upstream = upstream.split_once("://").map_or(upstream, |(_, rest)| rest);
        let listen = format!("127.0.0.1:{}", free_port());
        let body = format!(
            r#"{{"name":"{name}","listen":"{listen}","upstream":"{upstream}","enabled":true}}"#
        );
        let (status, answer) = self.request("POST", "/proxies", &body);
        assert!(status == 201 || status == 200, "creating proxy {name}: HTTP {status}: {answer}");
        listen
    }

    /// The body of a GET of `path` (`/proxies/NAME/toxics`: its toxics, a JSON array).
    ///
    /// # Panics
    /// When the server does not answer 200.
    #[must_use]
    pub fn get(&self, path: &str) -> String {
        let (status, body) = self.request("GET", path, "");
        assert_eq!(status, 200, "GET {path}: {body}");
        body
    }

    /// Sends a request, `body` as JSON; returns the status and body.
    ///
    /// # Panics
    /// When the server cannot be reached.
    #[must_use]
    pub fn request(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        self.try_request(method, path, body)
            .unwrap_or_else(|e| panic!("{method} {path} to toxiproxy at {}: {e}", self.api))
    }

    /// HTTP/1.0, so that the server answers without chunks and then closes.
    fn try_request(&self, method: &str, path: &str, body: &str) -> std::io::Result<(u16, String)> {
        let mut stream = TcpStream::connect_timeout(&self.api, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        write!(
            stream,
            "{method} {path} HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        Ok((status, body.to_owned()))
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
