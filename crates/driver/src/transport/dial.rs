//! Dialling: an endpoint's URL, TCP, TLS when asked for, and the HTTP/2 handshake, each
//! within the dial timeout.
//!
//! A [`Dialer`] carries everything a connection needs (dial timeout, TLS configuration,
//! credentials) and is shared by every connection of a driver: the load's, the control
//! clients' (status, member list, compaction, faults, barrier), local clusters' probes and
//! the `/metrics` scrapes.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::uri::Authority;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use super::auth::Auth;
use super::http2::{Connection, Task};
use super::io::{Io, Ledger, Socket, Traffic};
use super::security::{Security, TlsOptions};
use crate::error::{DriverError, EndpointError};

/// The dial timeout used when none is given.
pub const DEFAULT_DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Turns `host:port` into `http://host:port`; keeps `http://` and `https://` URLs. An
/// endpoint is checked here, where it is dialled, by the rule scenarios check theirs with.
pub(crate) fn url(endpoint: &str) -> Result<String, DriverError> {
    etcdlat_core::scenario::check_endpoint(endpoint)
        .map_err(|reason| endpoint_error(endpoint, EndpointError::Malformed { reason }))?;
    Ok(if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else {
        format!("http://{endpoint}")
    })
}

/// A dialled HTTP/2 connection: the handle streams are opened with, the task to run it,
/// and where requests are addressed (whether over TLS, and the authority).
pub(crate) type Handshake = (Connection, Task, Origin);

/// Where a connection's requests are addressed: `https` or not, and `host:port`.
#[derive(Clone, Debug)]
pub(crate) struct Origin {
    pub https: bool,
    pub authority: String,
}

/// Dials connections for one driver.
#[derive(Clone, Debug)]
pub(crate) struct Dialer(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    timeout: Duration,
    tls: TlsOptions,
    /// Built on first use: with options at construction (so a bad file fails early), with
    /// the system's roots on the first `https://` endpoint otherwise.
    tls_config: OnceLock<Arc<ClientConfig>>,
    auth: Option<Arc<Auth>>,
    /// Loopback source addresses, once one address's ports would not do.
    sources: Sources,
    /// The bytes of the load's connections.
    load_traffic: Arc<Ledger>,
}

impl Dialer {
    /// A dialer for `security`; checks the TLS files now.
    pub(crate) fn new(security: &Security, timeout: Duration) -> Result<Self, DriverError> {
        let inner = Inner {
            timeout,
            tls: security.tls.clone(),
            tls_config: OnceLock::new(),
            auth: security.credentials.clone().map(|c| Arc::new(Auth::new(c))),
            sources: Sources::default(),
            load_traffic: Arc::default(),
        };
        if security.tls.is_set() {
            let config = security.tls.client_config()?;
            let _ = inner.tls_config.set(config);
        }
        Ok(Self(Arc::new(inner)))
    }

    /// The dial timeout.
    pub(crate) fn timeout(&self) -> Duration {
        self.0.timeout
    }

    /// The run's authentication, if it has credentials.
    pub(crate) fn auth(&self) -> Option<&Arc<Auth>> {
        self.0.auth.as_ref()
    }

    /// Whether `endpoint` is dialled with TLS: `https://`, or a bare `host:port` when TLS
    /// options are set.
    pub(crate) fn uses_tls(&self, endpoint: &str) -> bool {
        endpoint.starts_with("https://") || (!endpoint.contains("://") && self.0.tls.is_set())
    }

    /// The TLS configuration, built on first use. A failure is not kept: it fails the
    /// connection that needed it, and the next one tries again.
    fn tls_config(&self) -> Result<Arc<ClientConfig>, DriverError> {
        if let Some(config) = self.0.tls_config.get() {
            return Ok(Arc::clone(config));
        }
        let config = self.0.tls.client_config()?;
        Ok(Arc::clone(self.0.tls_config.get_or_init(|| config)))
    }

    /// The bytes of the load's connections (those dialled with a [`Traffic`] of its).
    pub(crate) fn load_traffic(&self) -> &Arc<Ledger> {
        &self.0.load_traffic
    }

    /// Dials `endpoint` and starts HTTP/2 on it: the connection's handle, its task (for the
    /// caller to run), and where requests are addressed. The HTTP/2 preface and settings go
    /// out with the first request. With `traffic`, its socket's bytes are counted there.
    pub(crate) async fn handshake(
        &self,
        endpoint: &str,
        traffic: Option<Arc<Traffic>>,
    ) -> Result<Handshake, DriverError> {
        let url = url(endpoint)?;
        let tls = self.uses_tls(endpoint);
        let uri: http::Uri =
            url.parse().map_err(|e| endpoint_error(endpoint, EndpointError::Uri(e)))?;
        let authority = uri
            .authority()
            .cloned()
            .ok_or_else(|| endpoint_error(endpoint, EndpointError::NoAuthority))?;
        let io = if tls {
            self.dial(endpoint, &authority, Some(self.tls_config()?), traffic).await?
        } else {
            self.dial(endpoint, &authority, None, traffic).await?
        };
        let (connection, task) = Connection::new(io);
        Ok((connection, task, Origin { https: tls, authority: authority.as_str().to_owned() }))
    }

    /// The byte stream to `authority`: TCP, then TLS with `tls` when given, each within the
    /// dial timeout.
    async fn dial(
        &self,
        endpoint: &str,
        authority: &Authority,
        tls: Option<Arc<ClientConfig>>,
        traffic: Option<Arc<Traffic>>,
    ) -> Result<Io, DriverError> {
        let connect_error =
            |source: std::io::Error| DriverError::Connect { endpoint: endpoint.to_owned(), source };
        let port = authority.port_u16().unwrap_or(if tls.is_some() { 443 } else { 80 });
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        let source = host.parse().ok().and_then(|ip| self.0.sources.next(ip, port));
        let tcp = async {
            match source {
                Some(source) => connect_from(source, &host, port).await,
                None => TcpStream::connect((host.as_str(), port)).await,
            }
        };
        let tcp = match tokio::time::timeout(self.0.timeout, tcp).await {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => return Err(connect_error(e)),
            Err(_) => return Err(connect_error(self.timed_out("no connection", ""))),
        };
        let _ = tcp.set_nodelay(true);
        let Some(config) = tls else {
            return Ok(match traffic {
                Some(traffic) => Io::Counted(Socket::new(tcp, Some(traffic))),
                None => Io::Plain(tcp),
            });
        };
        let tcp = Socket::new(tcp, traffic);
        let name = ServerName::try_from(host)
            .map_err(|e| endpoint_error(endpoint, EndpointError::ServerName(e)))?;
        let handshake = tokio_rustls::TlsConnector::from(config).connect(name, tcp);
        match tokio::time::timeout(self.0.timeout, handshake).await {
            Ok(Ok(stream)) => Ok(Io::Tls(Box::new(stream))),
            Ok(Err(source)) => Err(DriverError::Tls { endpoint: endpoint.to_owned(), source }),
            Err(_) => Err(connect_error(
                self.timed_out("no TLS handshake", " (the server may not speak TLS on this port)"),
            )),
        }
    }

    /// The loopback source addresses connections were spread over, when more than one.
    pub(crate) fn source_addresses(&self) -> Vec<String> {
        self.0.sources.used()
    }

    /// Starts counting connections afresh, once those dialled before were all closed.
    pub(crate) fn forget_sources(&self) {
        self.0.sources.dialled.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    }

    /// The dial timeout's passing, as the error a socket gives for it: "`what` within the
    /// dial timeout (5s)", then `aside`.
    fn timed_out(&self, what: &str, aside: &str) -> std::io::Error {
        let timeout = self.0.timeout;
        let message = format!("{what} within the dial timeout ({timeout:?}){aside}");
        std::io::Error::new(std::io::ErrorKind::TimedOut, message)
    }

    /// A byte stream to `url` (`http://` or `https://`) for HTTP/1.1, with the run's TLS for
    /// `https://`: for scraping `/metrics`.
    pub(crate) async fn http1_stream(&self, uri: &http::Uri) -> Result<Io, String> {
        let authority = uri.authority().ok_or("no host")?;
        let tls = if uri.scheme_str() == Some("https") {
            let mut config = (*self.tls_config().map_err(|e| e.to_string())?).clone();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(Arc::new(config))
        } else {
            None
        };
        self.dial(authority.as_str(), authority, tls, None).await.map_err(|e| e.to_string())
    }
}

/// Connections to one loopback `address:port` all come from 127.0.0.1 unless told
/// otherwise, and one source address has only the ephemeral port range (about 28,000 here)
/// for them. Past most of it, each further connection comes from the next loopback address
/// (127.0.0.2, ...), so that a capacity test's 100,000 connections to one member can open.
#[derive(Debug)]
struct Sources {
    /// Connections to one source address before the next is used.
    per_source: u32,
    /// Connections dialled so far, by destination.
    dialled: std::sync::Mutex<std::collections::HashMap<(std::net::Ipv4Addr, u16), u32>>,
}

impl Default for Sources {
    fn default() -> Self {
        Self::with_per_source(ephemeral_ports() / 5 * 4)
    }
}

impl Sources {
    fn with_per_source(per_source: u32) -> Self {
        Self { per_source: per_source.max(1), dialled: std::sync::Mutex::default() }
    }

    /// The source address of the next connection to `ip:port`: `None` (the system's choice)
    /// until one address's share is used, and for destinations off loopback.
    fn next(&self, ip: std::net::IpAddr, port: u16) -> Option<std::net::Ipv4Addr> {
        let std::net::IpAddr::V4(ip) = ip else { return None };
        if !ip.is_loopback() {
            return None;
        }
        let mut dialled = self.dialled.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = dialled.entry((ip, port)).or_insert(0);
        let k = *n / self.per_source;
        *n += 1;
        // 127.0.0.2 to 127.0.0.254, then round again.
        (k > 0).then(|| std::net::Ipv4Addr::new(127, 0, 0, 1 + ((k - 1) % 253 + 1) as u8))
    }

    /// The source addresses used, when connections were spread (127.0.0.1 first).
    fn used(&self) -> Vec<String> {
        let dialled = self.dialled.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let most = dialled.values().copied().max().unwrap_or(0);
        let sources = most.div_ceil(self.per_source).min(254);
        if sources <= 1 {
            return Vec::new();
        }
        (1..=sources).map(|k| format!("127.0.0.{k}")).collect()
    }
}

/// How many ephemeral ports the system hands out (`ip_local_port_range`).
fn ephemeral_ports() -> u32 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(str::parse::<u32>);
            let (lo, hi) = (it.next()?.ok()?, it.next()?.ok()?);
            hi.checked_sub(lo).map(|d| d + 1)
        })
        .unwrap_or(28_232)
}

/// A TCP connection from `source` (its port chosen at connect, so that the port need only be
/// free towards this destination).
async fn connect_from(
    source: std::net::Ipv4Addr,
    host: &str,
    port: u16,
) -> std::io::Result<TcpStream> {
    let dest: std::net::Ipv4Addr =
        host.parse().map_err(|_| std::io::Error::other("not an IPv4 address"))?;
    let socket = tokio::net::TcpSocket::new_v4()?;
    #[cfg(target_os = "linux")]
    nix::sys::socket::setsockopt(&socket, nix::sys::socket::sockopt::IpBindAddressNoPort, &true)
        .map_err(std::io::Error::from)?;
    socket.bind((source, 0).into())?;
    socket.connect((dest, port).into()).await
}

fn endpoint_error(endpoint: &str, source: EndpointError) -> DriverError {
    DriverError::Endpoint { endpoint: endpoint.to_owned(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(url("127.0.0.1:2379").unwrap(), "http://127.0.0.1:2379");
        assert_eq!(url("http://h:1").unwrap(), "http://h:1");
        assert_eq!(url("https://h:1").unwrap(), "https://h:1");
        assert!(matches!(url("h"), Err(DriverError::Endpoint { .. })));
    }

    #[test]
    fn loopback_connections_past_one_address_share_come_from_the_next_addresses() {
        let sources = Sources::with_per_source(2);
        let lo = "127.0.0.1".parse().unwrap();
        let picks: Vec<_> = (0..7).map(|_| sources.next(lo, 2379)).collect();
        let two = Some(std::net::Ipv4Addr::new(127, 0, 0, 2));
        let three = Some(std::net::Ipv4Addr::new(127, 0, 0, 3));
        let four = Some(std::net::Ipv4Addr::new(127, 0, 0, 4));
        assert_eq!(picks, [None, None, two, two, three, three, four]);
        assert_eq!(sources.used(), ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]);
        // Each destination counts apart; other hosts are left to the system.
        assert_eq!(sources.next(lo, 2380), None);
        assert_eq!(sources.next("10.0.0.1".parse().unwrap(), 2379), None);
        assert_eq!(sources.next("::1".parse().unwrap(), 2379), None);
        assert!(Sources::default().used().is_empty());
    }

    #[tokio::test]
    async fn connections_from_further_loopback_addresses_reach_etcd() {
        let etcd = etcdlat_testkit::Etcd::start().await;
        let dialer = Dialer(Arc::new(Inner {
            timeout: DEFAULT_DIAL_TIMEOUT,
            tls: TlsOptions::default(),
            tls_config: OnceLock::new(),
            auth: None,
            sources: Sources::with_per_source(3),
            load_traffic: Arc::default(),
        }));
        let endpoint = etcd.endpoint();
        let authority: Authority = endpoint.trim_start_matches("http://").parse().unwrap();
        let mut sources = std::collections::BTreeSet::new();
        let mut held = Vec::new();
        for _ in 0..9 {
            let io = dialer.dial(&endpoint, &authority, None, None).await.expect("dialled");
            let Io::Plain(tcp) = &io else { unreachable!("plain TCP") };
            sources.insert(tcp.local_addr().unwrap().ip().to_string());
            held.push(io);
        }
        assert_eq!(
            sources.into_iter().collect::<Vec<_>>(),
            ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
        );
        // The tenth, from 127.0.0.4: etcd speaks HTTP/2 on it.
        let _h2 = dialer.handshake(&endpoint, None).await.expect("HTTP/2 from 127.0.0.4");
        assert_eq!(dialer.source_addresses().len(), 4);
    }

    #[test]
    fn tls_is_used_for_https_and_for_bare_endpoints_when_options_are_set() {
        let plain = Dialer::new(&Security::default(), DEFAULT_DIAL_TIMEOUT).unwrap();
        assert!(plain.uses_tls("https://h:1"));
        assert!(!plain.uses_tls("h:1"));
        let tls = Dialer(Arc::new(Inner {
            timeout: DEFAULT_DIAL_TIMEOUT,
            tls: TlsOptions { insecure_skip_verify: true, ..TlsOptions::default() },
            tls_config: OnceLock::new(),
            auth: None,
            sources: Sources::default(),
            load_traffic: Arc::default(),
        }));
        assert!(tls.uses_tls("h:1"));
        assert!(!tls.uses_tls("http://h:1"));
    }
}
