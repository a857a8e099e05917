//! Opening gRPC connections: one HTTP/2 connection per [`tonic::transport::Channel`],
//! dialled eagerly and warmed with one request before any clock starts.

use std::time::Duration;

use bytes::Bytes;
use tonic::transport::{Channel, Endpoint};

use crate::error::DriverError;
use crate::rpc::{Kv, RangeRequest};

/// HTTP/2 keep-alive ping interval. etcd closes connections that ping more often than its
/// `--grpc-keepalive-min-time` (5 s by default), so stay well above it.
pub(crate) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);

/// The dial timeout used when none is given.
pub const DEFAULT_DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Turns `host:port` into `http://host:port`; keeps `http://` and `https://` URLs.
pub(crate) fn url(endpoint: &str) -> Result<String, DriverError> {
    etcdlat_core::scenario::check_endpoint(endpoint)
        .map_err(|reason| DriverError::Endpoint { endpoint: endpoint.to_owned(), reason })?;
    if endpoint.starts_with("https://") {
        return Err(DriverError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason: "TLS endpoints are not supported yet".to_owned(),
        });
    }
    Ok(if endpoint.starts_with("http://") {
        endpoint.to_owned()
    } else {
        format!("http://{endpoint}")
    })
}

/// Dials one connection and checks that etcd answers on it.
pub(crate) async fn open(endpoint: &str, dial_timeout: Duration) -> Result<Channel, DriverError> {
    let url = url(endpoint)?;
    let ep = Endpoint::from_shared(url).map_err(|e| DriverError::Endpoint {
        endpoint: endpoint.to_owned(),
        reason: source_chain(&e),
    })?;
    let ep = ep
        .connect_timeout(dial_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
        .keep_alive_timeout(Duration::from_secs(20))
        .keep_alive_while_idle(false)
        // Large windows so that 1 MB values are not throttled by flow control.
        .initial_stream_window_size(Some(8 << 20))
        .initial_connection_window_size(Some(32 << 20));
    let channel = match tokio::time::timeout(dial_timeout, ep.connect()).await {
        Ok(Ok(channel)) => channel,
        Ok(Err(e)) => {
            return Err(DriverError::Connect {
                endpoint: endpoint.to_owned(),
                reason: source_chain(&e),
            });
        }
        Err(_) => {
            return Err(DriverError::Connect {
                endpoint: endpoint.to_owned(),
                reason: format!("no connection within the dial timeout ({dial_timeout:?})"),
            });
        }
    };
    warm(&channel, endpoint, dial_timeout).await?;
    Ok(channel)
}

/// Sends one cheap serializable read so that the connection, its HTTP/2 stream machinery and
/// the server's handler are warm before measurement starts.
async fn warm(channel: &Channel, endpoint: &str, timeout: Duration) -> Result<(), DriverError> {
    let mut kv = Kv::new(channel.clone());
    let req = RangeRequest {
        key: Bytes::from_static(b"\0etcdlat-warm-up"),
        range_end: Bytes::new(),
        limit: 1,
        serializable: true,
        keys_only: true,
        count_only: true,
        ..RangeRequest::default()
    };
    match tokio::time::timeout(timeout, kv.range(req)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(status)) => Err(DriverError::NotAnswering {
            endpoint: endpoint.to_owned(),
            reason: format!("{:?}: {}", status.code(), status.message()),
        }),
        Err(_) => Err(DriverError::NotAnswering {
            endpoint: endpoint.to_owned(),
            reason: "no answer to a read within the dial timeout".to_owned(),
        }),
    }
}

/// An error and its sources on one line: tonic's top-level transport error says only
/// "transport error"; the cause is further down.
pub(crate) fn source_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = s.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(url("127.0.0.1:2379").unwrap(), "http://127.0.0.1:2379");
        assert_eq!(url("http://h:1").unwrap(), "http://h:1");
        assert!(matches!(url("h"), Err(DriverError::Endpoint { .. })));
    }
}
