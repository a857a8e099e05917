//! One unary gRPC call on a [`Channel`]: a hand-written future that sends one framed
//! message and reads one answer.

use std::task::{Context, Poll, ready};

use bytes::{BufMut, Bytes, BytesMut};
use http::header::HeaderValue;
use tonic::Status;

use super::auth::TOKEN;
use super::channel::{Channel, Wait};
use super::frame::{Body, MAX_RESPONSE_BYTES, decode, frame, message};
use super::http2::{Field, Meta, RecvStream, Turn};
use super::message::{AUTHENTICATE, AuthenticateRequest, AuthenticateResponse};
use super::status::{check_http, http2_status, meta_status};

/// One unary call in progress: a hand-written state machine, polled with the connection
/// and the request it sends.
///
/// Every logical client holds one while its request is in flight, 100,000 of them at once
/// in the largest runs. An `async fn` doing the same took 264 bytes, and its caller's 520
/// (rustc keeps an async fn's arguments twice and lays out what lives across different
/// awaits side by side); this is 72.
pub(crate) struct Unary {
    stage: Stage,
}

/// What a unary call sends: its method, its framed message and the token it carries.
pub(crate) struct Outgoing<'a> {
    pub path: &'static str,
    pub body: &'a mut Body,
    pub token: Option<&'a HeaderValue>,
    /// Keep `body` (send a copy) for a resend the caller may make; otherwise the body moves
    /// into the stream, and is freed once written.
    pub keep_body: bool,
}

enum Stage {
    /// Not sent yet: what waiting for the connection keeps.
    Unsent(Wait),
    /// Sent: waiting for the response's head.
    Head(RecvStream),
    /// Reading the response's message, then its trailers.
    Body {
        recv: RecvStream,
        data: Received,
        trailers: bool,
    },
    Done,
}

impl Unary {
    pub(crate) fn new() -> Self {
        Self { stage: Stage::Unsent(Wait::default()) }
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
                Stage::Unsent(wait) => {
                    ready!(conn.poll_ready(cx, wait))?;
                    let body = if out.keep_body { out.body.clone() } else { out.body.take() };
                    self.stage =
                        Stage::Head(send(conn, &mut wait.turn, out.path, body, out.token)?);
                }
                Stage::Head(recv) => {
                    let head = ready!(recv.poll_head(cx)).map_err(http2_status)?;
                    answer_body(&head)?;
                    let Stage::Head(recv) = std::mem::replace(&mut self.stage, Stage::Done) else {
                        unreachable!("in the head stage")
                    };
                    self.stage = Stage::Body { recv, data: Received::None, trailers: false };
                }
                Stage::Body { recv, data, trailers } => {
                    while !*trailers {
                        let Some(chunk) = ready!(recv.poll_data(cx)) else {
                            *trailers = true;
                            break;
                        };
                        let chunk = chunk.map_err(http2_status)?;
                        data.push(chunk);
                        if data.len() > MAX_RESPONSE_BYTES {
                            return Poll::Ready(Err(Status::resource_exhausted(format!(
                                "response larger than {MAX_RESPONSE_BYTES} bytes"
                            ))));
                        }
                    }
                    let trailers = ready!(recv.poll_trailers(cx)).map_err(http2_status)?;
                    return Poll::Ready(match trailers.as_ref().and_then(meta_status) {
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

/// Opens a stream for `path` on `conn`, in the slot `turn` holds, and sends `body` on it,
/// with `token` if given.
fn send(
    conn: &Channel,
    turn: &mut Option<Turn>,
    path: &str,
    body: Body,
    token: Option<&HeaderValue>,
) -> Result<RecvStream, Status> {
    let (fields, n) = grpc_fields(token);
    let head = conn.head(path, &fields[..n]);
    let (first, second) = match body {
        Body::One(frame) => (frame, None),
        Body::Split(head, value) => (head, Some(value)),
    };
    conn.connection().send_unary(turn, &head, first, second).map_err(http2_status)
}

/// The fields of a gRPC request etcdlat sends, after its pseudo-headers, with `token` if
/// given: the first `n` of the array.
pub(super) fn grpc_fields(token: Option<&HeaderValue>) -> ([Field<'_>; 3], usize) {
    let grpc: [Field<'_>; 2] = [(b"content-type", b"application/grpc"), (b"te", b"trailers")];
    match token {
        Some(token) => ([grpc[0], grpc[1], (TOKEN.as_str().as_bytes(), token.as_bytes())], 3),
        None => ([grpc[0], grpc[1], (b"", b"")], 2),
    }
}

/// Checks a response's head: a message follows it unless errors came first, as a
/// trailers-only response with the status in the head.
pub(super) fn answer_body(head: &Meta) -> Result<(), Status> {
    check_http(head.status.unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR))?;
    match meta_status(head) {
        None => Ok(()),
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
