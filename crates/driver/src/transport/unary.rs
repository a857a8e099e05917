//! One unary gRPC call on a [`Channel`]: a hand-written future that sends one framed
//! message and reads one answer.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use http::header::{CONTENT_TYPE, HeaderValue, TE};
use http::uri::PathAndQuery;
use http::{Method, Request, Uri};
use tonic::Status;

use super::auth::TOKEN;
use super::channel::{Channel, Inflight, Redial};
use super::frame::{Body, MAX_RESPONSE_BYTES, decode, frame, message};
use super::message::{AUTHENTICATE, AuthenticateRequest, AuthenticateResponse};
use super::status::{check_http, grpc_status, h2_status};

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
        conn: &mut Channel,
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
        conn: &mut Channel,
        out: Outgoing<'_>,
    ) -> Poll<Result<Bytes, Status>> {
        loop {
            match &mut self.stage {
                Stage::Unsent(redial) => {
                    ready!(conn.poll_ready(cx, redial))?;
                    let body = if out.keep_body { out.body.clone() } else { out.body.take() };
                    self.open = Some(conn.stream_opened());
                    let uri = conn.uri(PathAndQuery::from_static(out.path));
                    self.stage = Stage::Head(send(conn.sender(), uri, body, out.token)?);
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
    let (response, mut stream) =
        sender.send_request(request_head(uri, token), false).map_err(h2_status)?;
    match body {
        Body::One(frame) => stream.send_data(frame, true),
        Body::Split(head, value) => {
            stream.send_data(head, false).and_then(|()| stream.send_data(value, true))
        }
    }
    .map_err(h2_status)?;
    Ok(response)
}

/// A gRPC call's request head: `uri`, with `token` if the run has one.
pub(super) fn request_head(uri: Uri, token: Option<&HeaderValue>) -> Request<()> {
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
    request
}

/// A response's body, once its head says a message follows: errors before any message
/// come as a trailers-only response, with the status in the head.
pub(super) fn answer_body(
    response: http::Response<h2::RecvStream>,
) -> Result<h2::RecvStream, Status> {
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

impl Channel {
    /// One unary call: sends `body` to `path` with `token` and decodes the answer.
    pub(super) async fn unary<R: prost::Message + Default>(
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

    /// Asks for a token for `request`'s user (carrying none).
    pub(super) async fn authenticate(
        &self,
        request: AuthenticateRequest,
    ) -> Result<AuthenticateResponse, Status> {
        self.clone().unary(AUTHENTICATE, frame(&request), None).await
    }
}
