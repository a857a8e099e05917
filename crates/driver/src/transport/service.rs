//! The tower service etcd-client runs on (`etcd_client::Channel::Custom`): its requests
//! (leases, locks, watches, control calls) go over the same [`Channel`] as the hot path's,
//! so a run opens exactly `conns` connections whatever its operations.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;

use super::auth::{Auth, TOKEN};
use super::channel::Channel;
use super::http2::{self, Field, RecvStream, SendStream};
use super::status::{grpc_status, http2_status};

impl Channel {
    /// This connection as a tower service for etcd-client.
    pub(super) fn etcd_channel(&self) -> etcd_client::Channel {
        etcd_client::Channel::Custom(tower::util::BoxCloneSyncService::new(Service(self.clone())))
    }
}

/// etcd-client's requests over a [`Channel`]: the path is completed with the
/// connection's scheme and authority, the run's token is added, and the request body (a
/// stream for watches and keep-alives) is pumped into the HTTP/2 stream by a small task.
#[derive(Clone)]
struct Service(Channel);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<http::Request<tonic::body::Body>> for Service {
    type Response = http::Response<tonic::body::Body>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Readiness is awaited in `call`, on the handle the request is sent on.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let mut conn = self.0.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let auth = conn.auth().cloned();
            let token = match &auth {
                Some(auth) => {
                    Some(auth.token(|request| conn.authenticate(request)).await.map_err(Box::new)?)
                }
                None => None,
            };
            if let Some((_, Some(token))) = &token {
                parts.headers.insert(TOKEN.clone(), token.clone());
            }
            let mut slot = conn.ready().await?;
            let end = http_body::Body::is_end_stream(&body);
            let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
            let fields: Vec<Field<'_>> = parts
                .headers
                .iter()
                .filter(|(name, _)| !CONNECTION_SPECIFIC.contains(&name.as_str()))
                .map(|(name, value)| (name.as_str().as_bytes(), value.as_bytes()))
                .collect();
            let (send, mut recv) = conn
                .connection()
                .open(&mut slot, &conn.head(path, &fields), end)
                .map_err(http2_status)?;
            if !end {
                tokio::spawn(pump(body, send));
            }
            let head = recv.head().await.map_err(http2_status)?;
            if let (Some(auth), Some((generation, _))) = (&auth, &token)
                && let Some(Err(status)) = grpc_status(&head.headers)
                && Auth::is_stale_token(&status)
            {
                // Renew the token so the next request carries a valid one; this one
                // fails (and is counted) as the server answered.
                let _ = auth.refresh(*generation, |r| conn.authenticate(r)).await;
            }
            let mut response =
                http::Response::new(tonic::body::Body::new(RecvBody { recv, trailers: false }));
            *response.status_mut() = head.status.unwrap_or(http::StatusCode::OK);
            *response.headers_mut() = head.headers;
            Ok(response)
        })
    }
}

/// Header fields HTTP/2 forbids (RFC 9113 8.2.2), should a caller set them.
const CONNECTION_SPECIFIC: [&str; 5] =
    ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

/// Copies a request body into its HTTP/2 stream, a part once the stream has room for it.
pub(super) async fn pump(mut body: tonic::body::Body, mut stream: SendStream) {
    use http_body::Body as _;
    loop {
        if stream.capacity().await.is_err() {
            return;
        }
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => {
                let _ = stream.send_data(Bytes::new(), true);
                return;
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, "request body failed");
                stream.send_reset(http2::CANCEL);
                return;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    if stream.send_data(data, false).is_err() {
                        return;
                    }
                }
                // gRPC requests have no trailers: the body ends.
                Err(_) => {
                    let _ = stream.send_data(Bytes::new(), true);
                    return;
                }
            },
        }
    }
}

/// A response body for tonic, read from the HTTP/2 stream.
struct RecvBody {
    recv: RecvStream,
    trailers: bool,
}

impl http_body::Body for RecvBody {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, tonic::Status>>> {
        if !self.trailers {
            match ready!(self.recv.poll_data(cx)) {
                Some(Ok(data)) => return Poll::Ready(Some(Ok(http_body::Frame::data(data)))),
                Some(Err(e)) => return Poll::Ready(Some(Err(http2_status(e)))),
                None => self.trailers = true,
            }
        }
        if self.recv.is_done() {
            return Poll::Ready(None);
        }
        match ready!(self.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => {
                Poll::Ready(Some(Ok(http_body::Frame::trailers(trailers.headers))))
            }
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(http2_status(e)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_done()
    }
}
