//! gRPC over one HTTP/2 connection, straight on `h2`.
//!
//! tonic's channel puts a buffer task, a load balancer and hyper's dispatcher (with a
//! spawned task per request body) between a request and its connection. The hot path needs
//! none of that: a logical client frames its message, opens a stream on the connection it
//! was given, and reads the answer, all inside its own future; the only other task is the
//! connection's own, which reads and writes the socket for every stream on it.
//!
//! The same connection also serves etcd-client (leases, locks, watches) through
//! [`GrpcConn::channel`], so a run opens exactly `conns` connections whatever its
//! operations.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use http::header::{CONTENT_TYPE, HeaderName, HeaderValue, TE};
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, Method, Request, Uri};
use tonic::{Code, Status};

use crate::auth::Auth;
use crate::connection::Dialer;

/// gRPC's length-prefixed message header: a compression flag and a big-endian length.
pub(crate) const FRAME_HEADER: usize = 5;

/// Puts with values at least this large send the value as its own DATA chunk, straight
/// from the shared buffer, instead of copying it into the request's frame.
const ZERO_COPY_VALUE: usize = 16 << 10;

/// HTTP/2 ping interval while requests are in flight. etcd closes connections that ping
/// more often than its `--grpc-keepalive-min-time` (5 s by default) or that ping with no
/// stream open, so pings are spaced and sent only while something is outstanding.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// A connection whose ping is not answered within this long is closed; its requests fail
/// with `Unavailable` instead of hanging on a dead or frozen member.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Largest response accepted: ranges over many 1 MB values are large, but a run must not
/// be able to exhaust the client's memory with one answer.
const MAX_RESPONSE_BYTES: usize = crate::rpc::MAX_DECODING_BYTES;

static TOKEN: HeaderName = HeaderName::from_static("token");
static GRPC_STATUS: HeaderName = HeaderName::from_static("grpc-status");
static GRPC_MESSAGE: HeaderName = HeaderName::from_static("grpc-message");

/// One HTTP/2 connection to one etcd endpoint; cloning shares it. When the connection is
/// lost (the member was killed or restarted, a keepalive went unanswered) the next request
/// dials it again, for every clone: one request dials while the others wait for it, and
/// after a failed dial the next attempt waits a backoff, so that clients of a dead member
/// fail a few times a second rather than as fast as the kernel refuses connections.
#[derive(Clone)]
pub(crate) struct GrpcConn {
    send: SendRequest<Bytes>,
    /// Streams open on the connection `send` belongs to; its keepalive pings only while
    /// it is not zero.
    inflight: Arc<AtomicUsize>,
    /// Which of the slot's connections `send` is.
    generation: u64,
    slot: Arc<Slot>,
}

/// What the clones of a [`GrpcConn`] share: where it goes and its current connection.
struct Slot {
    endpoint: String,
    dialer: Dialer,
    scheme: Scheme,
    authority: Authority,
    auth: Option<Arc<Auth>>,
    /// Bumped at every new connection, so a clone notices with one atomic read.
    generation: AtomicU64,
    current: Mutex<Live>,
    /// Dial attempts that failed, readable before waiting for `redial`.
    failed_dials: AtomicU64,
    redial: tokio::sync::Mutex<Backoff>,
}

/// A live connection's handle.
#[derive(Clone)]
pub(crate) struct Live {
    pub send: SendRequest<Bytes>,
    pub inflight: Arc<AtomicUsize>,
}

/// When the next dial may be tried.
struct Backoff {
    delay: Duration,
    retry_at: Option<tokio::time::Instant>,
    last_error: String,
}

/// First wait after a failed dial; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(1);

impl std::fmt::Debug for GrpcConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcConn").field("endpoint", &self.slot.endpoint).finish_non_exhaustive()
    }
}

/// A request's body: one framed message, or for large put values the frame's head and the
/// value itself (sent without copying it).
#[derive(Clone, Debug)]
pub(crate) enum Body {
    One(Bytes),
    Split(Bytes, Bytes),
}

impl Body {
    /// Takes the body, leaving an empty one (which allocates nothing).
    fn take(&mut self) -> Self {
        std::mem::replace(self, Self::One(Bytes::new()))
    }
}

/// Runs the connection `conn` on the current runtime. It lives until every handle is
/// dropped, the server closes it, or a keepalive ping goes unanswered.
pub(crate) fn spawn_connection<T>(
    send: SendRequest<Bytes>,
    mut conn: h2::client::Connection<T, Bytes>,
) -> Live
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let inflight = Arc::new(AtomicUsize::new(0));
    let ping = conn.ping_pong();
    let watched = Arc::clone(&inflight);
    tokio::spawn(async move {
        tokio::select! {
            result = conn => {
                if let Err(e) = result {
                    tracing::debug!(error = %e, "HTTP/2 connection closed");
                }
            }
            () = keepalive(ping, watched) => {
                tracing::debug!("HTTP/2 keepalive unanswered: closing the connection");
            }
        }
    });
    Live { send, inflight }
}

impl GrpcConn {
    /// A connection to `endpoint` over `live`, dialled again by `dialer` when lost.
    pub(crate) fn new(
        live: Live,
        endpoint: &str,
        dialer: Dialer,
        (scheme, authority): (Scheme, Authority),
        auth: Option<Arc<Auth>>,
    ) -> Self {
        let slot = Slot {
            endpoint: endpoint.to_owned(),
            dialer,
            scheme,
            authority,
            auth,
            generation: AtomicU64::new(0),
            current: Mutex::new(live.clone()),
            failed_dials: AtomicU64::new(0),
            redial: tokio::sync::Mutex::new(Backoff {
                delay: FIRST_BACKOFF,
                retry_at: None,
                last_error: String::new(),
            }),
        };
        Self { send: live.send, inflight: live.inflight, generation: 0, slot: Arc::new(slot) }
    }

    /// The authentication this connection's requests carry, if any.
    pub(crate) fn auth(&self) -> Option<&Arc<Auth>> {
        self.slot.auth.as_ref()
    }

    /// Waits until a stream can be opened, dialling again if the connection was lost.
    async fn ready(&mut self) -> Result<(), Status> {
        let mut redial = None;
        std::future::poll_fn(|cx| self.poll_ready(cx, &mut redial)).await
    }

    /// Polls until a stream can be opened. When the connection was lost, `redial` holds the
    /// dial in progress (boxed: it is rare and a large future); the next polls drive it.
    fn poll_ready(
        &mut self,
        cx: &mut Context<'_>,
        redial: &mut Option<Redial>,
    ) -> Poll<Result<(), Status>> {
        loop {
            if let Some(dial) = redial {
                let dialled = ready!(dial.as_mut().poll(cx));
                *redial = None;
                dialled?;
            }
            if self.slot.generation.load(Ordering::Acquire) != self.generation {
                self.catch_up();
            }
            match ready!(self.send.poll_ready(cx)) {
                Ok(()) => return Poll::Ready(Ok(())),
                Err(e) => {
                    tracing::debug!(endpoint = %self.slot.endpoint, error = %e, "connection lost");
                    *redial = Some(Box::pin(redial_slot(Arc::clone(&self.slot), self.generation)));
                }
            }
        }
    }

    fn catch_up(&mut self) {
        let current = self.slot.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.send = current.send.clone();
        self.inflight = Arc::clone(&current.inflight);
        self.generation = self.slot.generation.load(Ordering::Acquire);
    }

    fn uri(&self, path: PathAndQuery) -> Uri {
        let mut parts = http::uri::Parts::default();
        parts.scheme = Some(self.slot.scheme.clone());
        parts.authority = Some(self.slot.authority.clone());
        parts.path_and_query = Some(path);
        Uri::from_parts(parts).expect("scheme, authority and path make a URI")
    }

    /// One unary call: sends `body` to `path` with `token` and decodes the answer.
    pub(crate) async fn unary<R: prost::Message + Default>(
        &mut self,
        path: &'static str,
        mut body: Body,
        token: Option<&HeaderValue>,
    ) -> Result<R, Status> {
        let mut call = Unary::new();
        let answer = std::future::poll_fn(|cx| {
            call.poll(cx, self, Outgoing { path, body: &mut body, token, keep_body: false })
        })
        .await?;
        decode(&answer)
    }

    /// This connection as a tower service for etcd-client (`etcd_client::Channel::Custom`).
    pub(crate) fn channel(&self) -> etcd_client::Channel {
        etcd_client::Channel::Custom(tower::util::BoxCloneSyncService::new(Service(self.clone())))
    }
}

/// A dial in progress after a connection was lost.
type Redial = Pin<Box<dyn Future<Output = Result<(), Status>> + Send>>;

/// Replaces the slot's lost connection (generation `lost`), unless another clone did
/// meanwhile; fails (without dialling) when a dial failed while this one waited.
async fn redial_slot(slot: Arc<Slot>, lost: u64) -> Result<(), Status> {
    let failed_before = slot.failed_dials.load(Ordering::Acquire);
    let mut backoff = slot.redial.lock().await;
    if slot.generation.load(Ordering::Acquire) != lost {
        return Ok(());
    }
    let unavailable = |reason: &str| {
        Status::unavailable(format!("connection: reconnecting to {}: {reason}", slot.endpoint))
    };
    if slot.failed_dials.load(Ordering::Acquire) != failed_before {
        return Err(unavailable(&backoff.last_error));
    }
    if let Some(at) = backoff.retry_at {
        tokio::time::sleep_until(at).await;
    }
    match slot.dialer.handshake(&slot.endpoint).await {
        Ok((live, _)) => {
            *slot.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = live;
            slot.generation.fetch_add(1, Ordering::AcqRel);
            backoff.delay = FIRST_BACKOFF;
            backoff.retry_at = None;
            tracing::debug!(endpoint = %slot.endpoint, "reconnected");
            Ok(())
        }
        Err(e) => {
            backoff.last_error = e.to_string();
            backoff.retry_at = Some(tokio::time::Instant::now() + backoff.delay);
            backoff.delay = (backoff.delay * 2).min(MAX_BACKOFF);
            slot.failed_dials.fetch_add(1, Ordering::AcqRel);
            Err(unavailable(&backoff.last_error))
        }
    }
}

/// One unary call in progress: a hand-written state machine, polled with the connection
/// and the request it sends.
///
/// Every logical client holds one while its request is in flight, 100,000 of them at once
/// in the largest runs. An `async fn` doing the same took 264 bytes, and its caller's 520
/// (rustc keeps an async fn's arguments twice and lays out what lives across different
/// awaits side by side); this is 72.
pub(crate) struct Unary {
    stage: Stage,
    /// Counts the stream as open while it is.
    open: Option<Inflight>,
}

/// What a unary call sends: its method, its framed message and the token it carries.
pub(crate) struct Outgoing<'a> {
    pub path: &'static str,
    pub body: &'a mut Body,
    pub token: Option<&'a HeaderValue>,
    /// Keep `body` (send a copy) for a resend the caller may make; otherwise the body moves
    /// into the stream, and h2 frees it once written.
    pub keep_body: bool,
}

enum Stage {
    /// Not sent yet; the dial in progress, if the connection was lost.
    Unsent(Option<Redial>),
    /// Sent: waiting for the response's head.
    Head(h2::client::ResponseFuture),
    /// Reading the response's message, then its trailers.
    Body {
        recv: h2::RecvStream,
        data: Received,
        trailers: bool,
    },
    Done,
}

impl Unary {
    pub(crate) fn new() -> Self {
        Self { stage: Stage::Unsent(None), open: None }
    }

    /// Whether the request has not been sent yet.
    pub(crate) fn is_unsent(&self) -> bool {
        matches!(self.stage, Stage::Unsent(_))
    }

    /// Sends `out` over `conn` (once, when the connection can take it), then reads the
    /// answer: the response message's bytes, not decoded.
    pub(crate) fn poll(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut GrpcConn,
        out: Outgoing<'_>,
    ) -> Poll<Result<Bytes, Status>> {
        let result = ready!(self.poll_stage(cx, conn, out));
        self.stage = Stage::Done;
        self.open = None;
        Poll::Ready(result)
    }

    fn poll_stage(
        &mut self,
        cx: &mut Context<'_>,
        conn: &mut GrpcConn,
        out: Outgoing<'_>,
    ) -> Poll<Result<Bytes, Status>> {
        loop {
            match &mut self.stage {
                Stage::Unsent(redial) => {
                    ready!(conn.poll_ready(cx, redial))?;
                    let body = if out.keep_body { out.body.clone() } else { out.body.take() };
                    self.open = Some(Inflight::owned(&conn.inflight));
                    let uri = conn.uri(PathAndQuery::from_static(out.path));
                    self.stage = Stage::Head(send(&mut conn.send, uri, body, out.token)?);
                }
                Stage::Head(response) => {
                    let response = ready!(Pin::new(response).poll(cx)).map_err(h2_status)?;
                    let recv = answer_body(response)?;
                    self.stage = Stage::Body { recv, data: Received::None, trailers: false };
                }
                Stage::Body { recv, data, trailers } => {
                    while !*trailers {
                        let Some(chunk) = ready!(recv.poll_data(cx)) else {
                            *trailers = true;
                            break;
                        };
                        let chunk = chunk.map_err(h2_status)?;
                        let _ = recv.flow_control().release_capacity(chunk.len());
                        data.push(chunk);
                        if data.len() > MAX_RESPONSE_BYTES {
                            return Poll::Ready(Err(Status::resource_exhausted(format!(
                                "response larger than {MAX_RESPONSE_BYTES} bytes"
                            ))));
                        }
                    }
                    let trailers = ready!(recv.poll_trailers(cx)).map_err(h2_status)?;
                    return Poll::Ready(match trailers.as_ref().and_then(grpc_status) {
                        Some(Ok(())) => message(std::mem::take(data).into_bytes()),
                        Some(Err(status)) => Err(status),
                        None => Err(Status::internal("response without grpc-status")),
                    });
                }
                Stage::Done => {
                    return Poll::Ready(Err(Status::internal("unary call polled after it ended")));
                }
            }
        }
    }
}

/// Opens a stream for `uri` and sends `body` on it.
fn send(
    sender: &mut SendRequest<Bytes>,
    uri: Uri,
    body: Body,
    token: Option<&HeaderValue>,
) -> Result<h2::client::ResponseFuture, Status> {
    let mut request = Request::new(());
    *request.method_mut() = Method::POST;
    *request.uri_mut() = uri;
    let headers = request.headers_mut();
    headers.reserve(3);
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/grpc"));
    headers.insert(TE, HeaderValue::from_static("trailers"));
    if let Some(token) = token {
        headers.insert(TOKEN.clone(), token.clone());
    }
    let (response, mut stream) = sender.send_request(request, false).map_err(h2_status)?;
    match body {
        Body::One(frame) => stream.send_data(frame, true),
        Body::Split(head, value) => {
            stream.send_data(head, false).and_then(|()| stream.send_data(value, true))
        }
    }
    .map_err(h2_status)?;
    Ok(response)
}

/// A response's body, once its head says a message follows: errors before any message
/// come as a trailers-only response, with the status in the head.
fn answer_body(response: http::Response<h2::RecvStream>) -> Result<h2::RecvStream, Status> {
    let (head, body) = response.into_parts();
    check_http(head.status)?;
    match grpc_status(&head.headers) {
        None => Ok(body),
        Some(Err(status)) => Err(status),
        Some(Ok(())) => Err(Status::internal("no message in response")),
    }
}

/// The DATA of a response: almost always one chunk, kept without copying.
#[derive(Default)]
enum Received {
    #[default]
    None,
    One(Bytes),
    Many(BytesMut),
}

impl Received {
    fn push(&mut self, chunk: Bytes) {
        *self = match std::mem::replace(self, Self::None) {
            Self::None => Self::One(chunk),
            Self::One(first) => {
                let mut all = BytesMut::with_capacity(first.len() + chunk.len());
                all.put(first);
                all.put(chunk);
                Self::Many(all)
            }
            Self::Many(mut all) => {
                all.put(chunk);
                Self::Many(all)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::None => 0,
            Self::One(b) => b.len(),
            Self::Many(b) => b.len(),
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Self::None => Bytes::new(),
            Self::One(b) => b,
            Self::Many(b) => b.freeze(),
        }
    }
}

/// Counts an open stream for as long as it lives.
struct Inflight(Arc<AtomicUsize>);

impl Inflight {
    fn owned(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(Arc::clone(count))
    }
}

impl Drop for Inflight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

async fn keepalive(ping: Option<h2::PingPong>, inflight: Arc<AtomicUsize>) {
    let Some(mut ping) = ping else { return std::future::pending().await };
    loop {
        tokio::time::sleep(KEEPALIVE_INTERVAL).await;
        if inflight.load(Ordering::Relaxed) == 0 {
            continue;
        }
        match tokio::time::timeout(KEEPALIVE_TIMEOUT, ping.ping(h2::Ping::opaque())).await {
            Ok(Ok(_)) => {}
            // The connection is gone; its own future reports why.
            Ok(Err(_)) => return std::future::pending().await,
            Err(_) => return,
        }
    }
}

/// Frames one message: the 5-byte gRPC header, then the message.
pub(crate) fn frame<M: prost::Message>(message: &M) -> Body {
    let len = message.encoded_len();
    let mut buf = BytesMut::with_capacity(FRAME_HEADER + len);
    buf.put_u8(0);
    buf.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    message.encode_raw(&mut buf);
    Body::One(buf.freeze())
}

/// Frames a put: large values go out as their own chunk, straight from the shared buffer.
pub(crate) fn frame_put(req: &crate::rpc::PutRequest) -> Body {
    use prost::Message;
    if req.value.len() < ZERO_COPY_VALUE {
        return frame(req);
    }
    let len = req.encoded_len();
    let head_len = len - req.value.len();
    let mut head = BytesMut::with_capacity(FRAME_HEADER + head_len);
    head.put_u8(0);
    head.put_u32(u32::try_from(len).unwrap_or(u32::MAX));
    req.encode_head(&mut head);
    debug_assert_eq!(head.len(), FRAME_HEADER + head_len);
    Body::Split(head.freeze(), req.value.clone())
}

/// Decodes a response message.
pub(crate) fn decode<R: prost::Message + Default>(message: &Bytes) -> Result<R, Status> {
    R::decode(message.clone()).map_err(|e| Status::internal(format!("bad response: {e}")))
}

/// The message in a response's gRPC frame.
fn message(mut data: Bytes) -> Result<Bytes, Status> {
    if data.len() < FRAME_HEADER {
        return Err(Status::internal(format!(
            "response of {} bytes has no gRPC frame",
            data.len()
        )));
    }
    let compressed = data.get_u8();
    let len = data.get_u32() as usize;
    if compressed != 0 {
        return Err(Status::internal("compressed response (none was asked for)"));
    }
    if data.len() < len {
        return Err(Status::internal(format!(
            "response frame says {len} bytes but {} arrived",
            data.len()
        )));
    }
    Ok(data.slice(..len))
}

fn check_http(status: http::StatusCode) -> Result<(), Status> {
    if status == http::StatusCode::OK {
        return Ok(());
    }
    // gRPC's mapping of HTTP statuses for responses that are not gRPC.
    let code = match status.as_u16() {
        400 => Code::Internal,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 => Code::Unimplemented,
        429 | 502..=504 => Code::Unavailable,
        _ => Code::Unknown,
    };
    Err(Status::new(code, format!("HTTP status {status}")))
}

/// The gRPC status in `headers`, if they carry one.
fn grpc_status(headers: &HeaderMap) -> Option<Result<(), Status>> {
    let code = headers.get(&GRPC_STATUS)?;
    let code = code.to_str().ok().and_then(|c| c.parse::<i32>().ok()).unwrap_or(2);
    if code == 0 {
        return Some(Ok(()));
    }
    let message =
        headers.get(&GRPC_MESSAGE).map(|m| percent_decode(m.as_bytes())).unwrap_or_default();
    Some(Err(Status::new(Code::from_i32(code), message)))
}

/// gRPC's percent-encoding of `grpc-message`.
fn percent_decode(raw: &[u8]) -> String {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == b'%' && i + 2 < raw.len() {
            let hex = std::str::from_utf8(&raw[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An HTTP/2 error as a gRPC status, as gRPC maps them.
pub(crate) fn h2_status(e: h2::Error) -> Status {
    let code = match e.reason() {
        _ if e.is_io() => Code::Unavailable,
        Some(h2::Reason::REFUSED_STREAM) => Code::Unavailable,
        Some(h2::Reason::CANCEL) => Code::Cancelled,
        Some(h2::Reason::ENHANCE_YOUR_CALM) => Code::ResourceExhausted,
        Some(h2::Reason::INADEQUATE_SECURITY) => Code::PermissionDenied,
        // The connection was closed by the server (GOAWAY) before this stream was served.
        Some(_) if e.is_go_away() => Code::Unavailable,
        _ if e.is_library() || e.is_go_away() => Code::Unavailable,
        _ => Code::Internal,
    };
    Status::new(code, format!("connection: {e}"))
}

/// etcd-client's requests over a [`GrpcConn`]: the path is completed with the
/// connection's scheme and authority, the run's token is added, and the request body (a
/// stream for watches and keep-alives) is pumped into the HTTP/2 stream by a small task.
#[derive(Clone)]
struct Service(GrpcConn);

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
            let token = match &conn.slot.auth {
                Some(auth) => Some(auth.token(&conn).await.map_err(Box::new)?),
                None => None,
            };
            if let Some((_, Some(token))) = &token {
                parts.headers.insert(TOKEN.clone(), token.clone());
            }
            conn.ready().await?;
            let open = Inflight::owned(&conn.inflight);
            let end = http_body::Body::is_end_stream(&body);
            let (response, stream) =
                conn.send.send_request(http::Request::from_parts(parts, ()), end)?;
            if !end {
                tokio::spawn(pump(body, stream));
            }
            let response = response.await?;
            if let (Some(auth), Some((generation, _))) = (&conn.slot.auth, &token) {
                if let Some(Err(status)) = grpc_status(response.headers()) {
                    if Auth::is_stale_token(&status) {
                        // Renew the token so the next request carries a valid one; this one
                        // fails (and is counted) as the server answered.
                        let _ = auth.refresh(&conn, *generation).await;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_message_is_percent_decoded() {
        assert_eq!(
            percent_decode(b"etcdserver: request timed out"),
            "etcdserver: request timed out"
        );
        assert_eq!(percent_decode(b"a%20b%25c%"), "a b%c%");
        assert_eq!(percent_decode(b"%e2%9c%93"), "\u{2713}");
    }

    #[test]
    fn statuses_from_headers() {
        let mut h = HeaderMap::new();
        assert!(grpc_status(&h).is_none());
        h.insert(&GRPC_STATUS, HeaderValue::from_static("0"));
        assert!(matches!(grpc_status(&h), Some(Ok(()))));
        h.insert(&GRPC_STATUS, HeaderValue::from_static("14"));
        h.insert(&GRPC_MESSAGE, HeaderValue::from_static("etcdserver:%20no%20leader"));
        let status = grpc_status(&h).unwrap().unwrap_err();
        assert_eq!(status.code(), Code::Unavailable);
        assert_eq!(status.message(), "etcdserver: no leader");
    }

    #[test]
    fn frames_round_trip() {
        let req = crate::rpc::RangeResponse { count: 7, ..Default::default() };
        let Body::One(framed) = frame(&req) else { panic!("small message split") };
        let answer = message(framed).unwrap();
        assert_eq!(decode::<crate::rpc::RangeResponse>(&answer).unwrap().count, 7);
        assert!(message(Bytes::from_static(b"\0\0\0\0\x09ab")).is_err(), "a short frame");
    }

    #[test]
    fn a_call_in_flight_stays_small() {
        // Every logical client holds its call's future, 100,000 at once in the largest runs
        // (benches/README.md): 72 and 184 bytes when written, with some room for compilers.
        assert!(std::mem::size_of::<Unary>() <= 96, "{}", std::mem::size_of::<Unary>());
        let call = std::mem::size_of::<crate::rpc::Call<'static>>();
        assert!(call <= 224, "{call}");
    }

    #[test]
    fn large_put_values_are_not_copied() {
        use prost::Message;
        let value = Bytes::from(vec![7u8; 1 << 20]);
        let req = crate::rpc::PutRequest { key: crate::rpc::Key::new(b"k"), value: value.clone() };
        let Body::Split(head, sent) = frame_put(&req) else { panic!("1 MB value was copied") };
        assert_eq!(sent.as_ptr(), value.as_ptr(), "the value is sent from the shared buffer");
        let mut whole = head.to_vec();
        whole.extend_from_slice(&sent);
        let Body::One(reference) = frame(&req) else { unreachable!() };
        assert_eq!(whole, reference.to_vec());
        assert_eq!(whole.len(), FRAME_HEADER + req.encoded_len());
    }
}
