//! The connection the rest of the driver uses: one HTTP/2 connection to one member, with
//! the hot path's KV client, its watch streams, and etcd-client (leases, locks) over it,
//! opened warm ([`Conn::open`]: the load's); and etcd-client alone over a cold connection
//! for control calls ([`control_client`]).

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::OnceCell;
use tonic::{Code, Status};

use super::channel::Channel;
use super::dial::Dialer;
use super::kv::{Kv, fetch_token};
use super::message::RangeRequest;
use super::watch::{WatchReceiver, WatchSender};
use crate::error::{AnswerError, DriverError, EndpointError};

/// One connection to one endpoint; cloning shares it.
#[derive(Clone)]
pub(crate) struct Conn {
    /// The hot path's client; clone it to carry a token cache of one's own.
    pub kv: Kv,
    /// etcd-client over the same connection, for everything the client does not send
    /// itself (leases, locks, STM's watches): made on first use, as most of a load's
    /// connections never need it and it takes 3.6 KB.
    client: Arc<OnceCell<Box<etcd_client::Client>>>,
}

impl Conn {
    /// Opens one connection and checks that etcd answers on it, with the run's token, so
    /// that the connection, its HTTP/2 stream machinery and the server's handler are warm
    /// before measurement starts. It is one of the load's: its sockets' bytes are counted in
    /// the dialer's [`Dialer::load_traffic`].
    pub(crate) async fn open(dialer: &Dialer, endpoint: &str) -> Result<Self, DriverError> {
        let traffic = dialer.load_traffic().open();
        let channel = Channel::connect(dialer, endpoint, Some(traffic)).await?;
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
        match tokio::time::timeout(dialer.timeout(), kv.range(req)).await {
            Ok(Ok(_)) => Ok(Self { kv: Kv::new(channel), client: Arc::default() }),
            Ok(Err(status)) => Err(refused(dialer, endpoint, status)),
            Err(_) => Err(DriverError::NotAnswering {
                endpoint: endpoint.to_owned(),
                source: AnswerError::Timeout,
            }),
        }
    }

    /// Opens a watch stream on this connection, with the run's token if it has one
    /// ([`super::watch`]).
    pub(crate) async fn watch(&self) -> Result<(WatchSender, WatchReceiver), Status> {
        let channel = self.kv.channel();
        let (_, token) = fetch_token(channel, None).await?;
        channel.clone().watch(token).await
    }

    /// etcd-client over this connection, made on first use.
    pub(crate) async fn client(&self) -> Result<&etcd_client::Client, etcd_client::Error> {
        let made = self.client.get_or_try_init(|| async {
            let channel = self.kv.channel().etcd_channel();
            etcd_client::Client::from_channel(channel, None).await.map(Box::new)
        });
        Ok(made.await?)
    }
}

/// etcd-client over a new connection to `endpoint` (TCP, TLS if asked for, HTTP/2), for
/// control calls; nothing is sent on it yet.
pub(crate) async fn control_client(
    dialer: &Dialer,
    endpoint: &str,
) -> Result<etcd_client::Client, DriverError> {
    let channel = Channel::connect(dialer, endpoint, None).await?;
    etcd_client::Client::from_channel(channel.etcd_channel(), None).await.map_err(|e| {
        DriverError::NotAnswering { endpoint: endpoint.to_owned(), source: AnswerError::Client(e) }
    })
}

/// [`control_client`] to the first of `endpoints` that can be dialled.
pub(crate) async fn control_client_any(
    dialer: &Dialer,
    endpoints: &[String],
) -> Result<etcd_client::Client, DriverError> {
    let mut last = None;
    for endpoint in endpoints {
        match control_client(dialer, endpoint).await {
            Ok(client) => return Ok(client),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| DriverError::Endpoint {
        endpoint: String::new(),
        source: EndpointError::Missing,
    }))
}

/// Why a connection's first request failed, naming the likely cause.
fn refused(dialer: &Dialer, endpoint: &str, status: Status) -> DriverError {
    let message = status.message();
    let auth_failure = status.code() == Code::Unauthenticated
        || status.code() == Code::PermissionDenied
        || message.contains("authentication failed")
        || message.contains("user name is empty");
    if auth_failure {
        let reason = match dialer.auth() {
            None if message.contains("user name is empty") => {
                "the cluster requires authentication; pass --user".to_owned()
            }
            Some(auth) if message.contains("authentication failed") => {
                format!("user {:?}: wrong user name or password", auth.user())
            }
            _ => message.trim_start_matches("etcdserver: ").to_owned(),
        };
        return DriverError::Auth { endpoint: endpoint.to_owned(), reason };
    }
    let hint = if !message.starts_with("connection:") {
        ""
    } else if dialer.uses_tls(endpoint) {
        // With TLS 1.3 a server that refuses the client's certificate (or its lack
        // of one) says so only after the handshake, by closing the connection.
        " (the server closed the TLS connection: if it requires client certificates, \
         check --cert and --key and that --cacert's authority signed them)"
    } else {
        " (if the server uses TLS, use an https:// endpoint or --cacert)"
    };
    DriverError::NotAnswering {
        endpoint: endpoint.to_owned(),
        source: AnswerError::Status { status, hint },
    }
}
