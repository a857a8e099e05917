//! The tower service etcd-client runs on (`etcd_client::Channel::Custom`): its requests
//! (leases, locks, watches, control calls) go over the same [`Channel`] as the hot path's,
//! so a run opens exactly `conns` connections whatever its operations.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http::uri::PathAndQuery;

use super::auth::{Auth, TOKEN};
use super::channel::{Channel, Inflight};
use super::status::grpc_status;

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
            let path = parts
                .uri
                .path_and_query()
                .cloned()
                .unwrap_or_else(|| PathAndQuery::from_static("/"));
            parts.uri = conn.uri(path);
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
            conn.ready().await?;
            let open = conn.stream_opened();
            let end = http_body::Body::is_end_stream(&body);
            let (response, stream) =
                conn.sender().send_request(http::Request::from_parts(parts, ()), end)?;
            if !end {
                tokio::spawn(pump(body, stream));
            }
            let response = response.await?;
            if let (Some(auth), Some((generation, _))) = (&auth, &token) {
                if let Some(Err(status)) = grpc_status(response.headers()) {
                    if Auth::is_stale_token(&status) {
                        // Renew the token so the next request carries a valid one; this one
                        // fails (and is counted) as the server answered.
                        let _ = auth.refresh(*generation, |r| conn.authenticate(r)).await;
                    }
                }
            }
            let (parts, recv) = response.into_parts();
            let body = tonic::body::Body::new(RecvBody { recv, trailers: false, _open: open });
            Ok(http::Response::from_parts(parts, body))
        })
    }
}

/// Copies a request body into its HTTP/2 stream.
async fn pump(mut body: tonic::body::Body, mut stream: h2::SendStream<Bytes>) {
    use http_body::Body as _;
    loop {
        match std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            None => {
                let _ = stream.send_data(Bytes::new(), true);
                return;
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, "request body failed");
                stream.send_reset(h2::Reason::CANCEL);
                return;
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    if stream.send_data(data, false).is_err() {
                        return;
                    }
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        let _ = stream.send_trailers(trailers);
                        return;
                    }
                }
            },
        }
    }
}

/// A response body for tonic, read from the HTTP/2 stream.
struct RecvBody {
    recv: h2::RecvStream,
    trailers: bool,
    _open: Inflight,
}

impl http_body::Body for RecvBody {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, h2::Error>>> {
        if !self.trailers {
            match ready!(self.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = self.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(http_body::Frame::data(data))));
                }
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => self.trailers = true,
            }
        }
        match ready!(self.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(http_body::Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(e) => Poll::Ready(Some(Err(e))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}
