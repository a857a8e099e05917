//! Dialling: an endpoint's URL, TCP, TLS when asked for, and the HTTP/2 handshake, each
//! within the dial timeout.
//!
//! A [`Dialer`] carries everything a connection needs (dial timeout, TLS configuration,
//! credentials) and is shared by every connection of a driver: the load's, the control
//! clients' (status, member list, compaction, faults, barrier), local clusters' probes and
//! the `/metrics` scrapes.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use h2::client::{Connection, SendRequest};
use http::uri::{Authority, Scheme};
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;

use super::auth::Auth;
use super::security::{Security, TlsOptions};
use super::wire::{Io, Wire};
use crate::error::DriverError;

/// The dial timeout used when none is given.
pub const DEFAULT_DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// HTTP/2 flow-control windows: large, so that 1 MB values are not throttled.
const STREAM_WINDOW: u32 = 8 << 20;
const CONNECTION_WINDOW: u32 = 32 << 20;

/// Turns `host:port` into `http://host:port`; keeps `http://` and `https://` URLs. An
/// endpoint is checked here, where it is dialled, by the rule scenarios check theirs with.
pub(crate) fn url(endpoint: &str) -> Result<String, DriverError> {
    etcdlat_core::scenario::check_endpoint(endpoint)
        .map_err(|reason| DriverError::Endpoint { endpoint: endpoint.to_owned(), reason })?;
    Ok(if endpoint.starts_with("http://") || endpoint.starts_with("https://") {
        endpoint.to_owned()
    } else {
        format!("http://{endpoint}")
    })
}

/// A dialled HTTP/2 connection: the handle streams are opened with, the connection to run,
/// and the scheme and authority requests are addressed to.
pub(crate) type Handshake = (SendRequest<Bytes>, Connection<Wire, Bytes>, (Scheme, Authority));

/// Dials connections for one driver.
#[derive(Clone, Debug)]
pub(crate) struct Dialer(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    timeout: Duration,
    tls: TlsOptions,
    /// Built on first use: with options at construction (so a bad file fails early), with
    /// the system's roots on the first `https://` endpoint otherwise.
    tls_config: OnceLock<Result<Arc<ClientConfig>, String>>,
    auth: Option<Arc<Auth>>,
}

impl Dialer {
    /// A dialer for `security`; checks the TLS files now.
    pub(crate) fn new(security: &Security, timeout: Duration) -> Result<Self, DriverError> {
        let inner = Inner {
            timeout,
            tls: security.tls.clone(),
            tls_config: OnceLock::new(),
            auth: security.credentials.clone().map(|c| Arc::new(Auth::new(c))),
        };
        if security.tls.is_set() {
            let config = security.tls.client_config()?;
            let _ = inner.tls_config.set(Ok(config));
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

    fn tls_config(&self) -> Result<Arc<ClientConfig>, DriverError> {
        self.0
            .tls_config
            .get_or_init(|| self.0.tls.client_config().map_err(|e| e.to_string()))
            .clone()
            .map_err(|reason| DriverError::TlsConfig { reason })
    }

    /// Dials `endpoint` and shakes hands over HTTP/2; the connection (for its caller to
    /// run), its handle, and the scheme and authority requests are addressed to.
    pub(crate) async fn handshake(&self, endpoint: &str) -> Result<Handshake, DriverError> {
        let url = url(endpoint)?;
        let tls = self.uses_tls(endpoint);
        let uri: http::Uri = url.parse().map_err(|e: http::uri::InvalidUri| {
            DriverError::Endpoint { endpoint: endpoint.to_owned(), reason: e.to_string() }
        })?;
        let authority = uri.authority().cloned().ok_or_else(|| DriverError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason: "no host and port".to_owned(),
        })?;
        let (io, scheme) = if tls {
            (self.dial(endpoint, &authority, Some(self.tls_config()?)).await?, Scheme::HTTPS)
        } else {
            (self.dial(endpoint, &authority, None).await?, Scheme::HTTP)
        };
        let connect_error =
            |reason: String| DriverError::Connect { endpoint: endpoint.to_owned(), reason };
        let handshake = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake::<_, Bytes>(Wire::new(io));
        let (send, conn) = match tokio::time::timeout(self.0.timeout, handshake).await {
            Ok(Ok(pair)) => pair,
            Ok(Err(e)) => return Err(connect_error(format!("HTTP/2 handshake failed: {e}"))),
            Err(_) => return Err(connect_error(self.within("no HTTP/2 handshake"))),
        };
        Ok((send, conn, (scheme, authority)))
    }

    /// The byte stream to `authority`: TCP, then TLS with `tls` when given, each within the
    /// dial timeout.
    async fn dial(
        &self,
        endpoint: &str,
        authority: &Authority,
        tls: Option<Arc<ClientConfig>>,
    ) -> Result<Io, DriverError> {
        let connect_error =
            |reason: String| DriverError::Connect { endpoint: endpoint.to_owned(), reason };
        let port = authority.port_u16().unwrap_or(if tls.is_some() { 443 } else { 80 });
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        let tcp = TcpStream::connect((host.as_str(), port));
        let tcp = match tokio::time::timeout(self.0.timeout, tcp).await {
            Ok(Ok(tcp)) => tcp,
            Ok(Err(e)) => return Err(connect_error(e.to_string())),
            Err(_) => return Err(connect_error(self.within("no connection"))),
        };
        let _ = tcp.set_nodelay(true);
        let Some(config) = tls else { return Ok(Io::Plain(tcp)) };
        let name = ServerName::try_from(host).map_err(|e| DriverError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason: format!("not a TLS server name: {e}"),
        })?;
        let handshake = tokio_rustls::TlsConnector::from(config).connect(name, tcp);
        match tokio::time::timeout(self.0.timeout, handshake).await {
            Ok(Ok(stream)) => Ok(Io::Tls(Box::new(stream))),
            Ok(Err(e)) => {
                Err(DriverError::Tls { endpoint: endpoint.to_owned(), reason: tls_reason(&e) })
            }
            Err(_) => Err(connect_error(format!(
                "{} (the server may not speak TLS on this port)",
                self.within("no TLS handshake")
            ))),
        }
    }

    fn within(&self, what: &str) -> String {
        format!("{what} within the dial timeout ({:?})", self.0.timeout)
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
        self.dial(authority.as_str(), authority, tls).await.map_err(|e| e.to_string())
    }
}

/// A rustls error in words, with what it usually means.
fn tls_reason(e: &std::io::Error) -> String {
    let text = e.to_string();
    let hint = if text.contains("UnknownIssuer") || text.contains("invalid peer certificate") {
        " (is --cacert the authority that signed the server's certificate?)"
    } else if text.contains("corrupt message") || text.contains("InvalidContentType") {
        " (the server does not speak TLS on this port: use an http:// endpoint)"
    } else if text.contains("eof") || text.contains("reset") {
        " (the server closed the connection: it may not speak TLS on this port)"
    } else {
        ""
    };
    format!("TLS handshake failed: {text}{hint}")
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
    fn tls_is_used_for_https_and_for_bare_endpoints_when_options_are_set() {
        let plain = Dialer::new(&Security::default(), DEFAULT_DIAL_TIMEOUT).unwrap();
        assert!(plain.uses_tls("https://h:1"));
        assert!(!plain.uses_tls("h:1"));
        let tls = Dialer(Arc::new(Inner {
            timeout: DEFAULT_DIAL_TIMEOUT,
            tls: TlsOptions { insecure_skip_verify: true, ..TlsOptions::default() },
            tls_config: OnceLock::new(),
            auth: None,
        }));
        assert!(tls.uses_tls("h:1"));
        assert!(!tls.uses_tls("http://h:1"));
    }
}
