//! A hostile server: an HTTP/2 proxy in front of a real etcd that passes every request on
//! and, on a schedule, corrupts the answer to a KV request on its way back (see
//! [`Corruption`] for how). Everything else (Status, MemberList, auth) passes untouched, so
//! a client connects and runs as it would against the etcd behind it.
//!
//! The schedule: one in every `every` successful KV answers is corrupted, each
//! [`Corruption`] in turn, each `rounds` times; then the proxy only passes answers on.
//! [`HostileProxy::hits`] says what was done; what the client made of it is for the test to
//! check.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{BufMut, Bytes, BytesMut};
use h2::client::SendRequest;
use h2::server::SendResponse;
use h2::{Reason, RecvStream};
use http::{HeaderMap, HeaderValue, Request, Response};
use rand::{Rng, SeedableRng};
use tokio::sync::mpsc;

use crate::proxy::{Link, Proxy};

/// What the proxy does to an answer. Each keeps the response's HTTP head as etcd sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Corruption {
    /// The gRPC frame is cut short: its header says more bytes than follow.
    Truncated,
    /// The frame's header says a message of 4 GiB (more than any client takes).
    Oversized,
    /// A second copy of the message follows the first (a unary call has one).
    Trailing,
    /// The frame's compression flag is set, though no compression was negotiated.
    Compressed,
    /// The trailers' `grpc-status` is not a number.
    BadStatus,
    /// The trailers have no `grpc-status`.
    MissingStatus,
    /// `grpc-status` 10 (Aborted) with a `grpc-message` whose percent-encoding is garbage
    /// (`%zz`, a cut-off `%`) and decodes to bytes that are not UTF-8.
    BadMessage,
    /// The message is random bytes (made invalid protobuf by their first byte, a tag of
    /// wire type 7, so that no decoder can take them for an answer).
    RandomBody,
    /// RST_STREAM (INTERNAL_ERROR) after the head and half the frame.
    Reset,
    /// GOAWAY (INTERNAL_ERROR) after the head and half the frame: the connection closes
    /// with every stream on it.
    GoAway,
    /// The head and half the frame, then nothing, until the client gives up the stream.
    Stall,
}

impl Corruption {
    /// Every kind, in the order the schedule applies them (the stall last, so that no later
    /// GOAWAY of the same round ends it early).
    pub const ALL: [Self; 11] = [
        Self::Truncated,
        Self::Oversized,
        Self::Trailing,
        Self::Compressed,
        Self::BadStatus,
        Self::MissingStatus,
        Self::BadMessage,
        Self::RandomBody,
        Self::Reset,
        Self::GoAway,
        Self::Stall,
    ];
}

/// The schedule and what it did.
#[derive(Debug)]
struct Schedule {
    every: u64,
    rounds: u64,
    /// Successful KV answers seen.
    seen: u64,
    /// Answers corrupted, by kind, in [`Corruption::ALL`] order.
    hits: [u64; Corruption::ALL.len()],
    /// KV answers passed on untouched.
    clean: u64,
}

impl Schedule {
    fn next(&mut self) -> Option<Corruption> {
        self.seen += 1;
        let n = Corruption::ALL.len() as u64;
        let turn = self.seen.is_multiple_of(self.every).then(|| self.seen / self.every - 1);
        let Some(turn) = turn.filter(|&t| t < n * self.rounds) else {
            self.clean += 1;
            return None;
        };
        let i = usize::try_from(turn % n).unwrap_or(0);
        self.hits[i] += 1;
        Some(Corruption::ALL[i])
    }
}

type Shared = Arc<Mutex<Schedule>>;

fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Schedule> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The hostile proxy, on its own thread and runtime, stopped when dropped.
#[derive(Debug)]
pub struct HostileProxy {
    proxy: Proxy,
    schedule: Shared,
}

impl HostileProxy {
    /// Starts a proxy on a free loopback port in front of `upstream` (`http://HOST:PORT`),
    /// corrupting one in every `every` successful KV answers, each kind `rounds` times.
    ///
    /// # Panics
    /// When `upstream` is not `http://` and an address, `every` is 0, or no port or thread
    /// can be had.
    #[must_use]
    pub fn start(upstream: &str, every: u64, rounds: u64) -> Self {
        assert!(every > 0, "every must be at least 1");
        let schedule = Arc::new(Mutex::new(Schedule {
            every,
            rounds,
            seen: 0,
            hits: [0; Corruption::ALL.len()],
            clean: 0,
        }));
        let shared = Arc::clone(&schedule);
        let proxy =
            Proxy::start("hostile-etcd", upstream, move |link| serve(link, Arc::clone(&shared)));
        Self { proxy, schedule }
    }

    /// Its endpoint, `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        self.proxy.endpoint()
    }

    /// How many answers were corrupted, by kind, in [`Corruption::ALL`] order.
    #[must_use]
    pub fn hits(&self) -> Vec<(Corruption, u64)> {
        Corruption::ALL.into_iter().zip(lock(&self.schedule).hits).collect()
    }

    /// How many successful KV answers were passed on untouched.
    #[must_use]
    pub fn clean(&self) -> u64 {
        lock(&self.schedule).clean
    }
}

/// One client connection, with one connection to etcd for its streams.
async fn serve(link: Link, schedule: Shared) {
    let Link { client: mut conn, etcd: sender, authority: upstream } = link;
    let (go_away, mut go_away_asked) = mpsc::unbounded_channel::<()>();
    loop {
        tokio::select! {
            next = conn.accept() => {
                let Some(Ok((request, respond))) = next else { return };
                let stream = Stream {
                    upstream: sender.clone(),
                    authority: upstream,
                    schedule: Arc::clone(&schedule),
                    go_away: go_away.clone(),
                };
                tokio::spawn(stream.handle(request, respond));
            }
            Some(()) = go_away_asked.recv() => {
                conn.abrupt_shutdown(Reason::INTERNAL_ERROR);
                // Sends the GOAWAY and closes.
                while let Some(Ok(_)) = conn.accept().await {}
                return;
            }
        }
    }
}

/// One request: passed on to etcd, its answer passed back, corrupted or not.
struct Stream {
    upstream: SendRequest<Bytes>,
    authority: SocketAddr,
    schedule: Shared,
    go_away: mpsc::UnboundedSender<()>,
}

/// The whole of a body's DATA.
async fn read_body(body: &mut RecvStream) -> Result<Bytes, h2::Error> {
    let mut all = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        all.put(chunk);
    }
    Ok(all.freeze())
}

impl Stream {
    async fn handle(self, request: Request<RecvStream>, respond: SendResponse<Bytes>) {
        let _ = self.exchange(request, respond).await;
    }

    async fn exchange(
        self,
        request: Request<RecvStream>,
        mut respond: SendResponse<Bytes>,
    ) -> Result<(), h2::Error> {
        let (parts, mut body) = request.into_parts();
        let sent = read_body(&mut body).await?;
        let path = parts.uri.path().to_owned();
        let mut up = Request::new(());
        *up.method_mut() = parts.method;
        *up.uri_mut() = format!("http://{}{path}", self.authority).parse().unwrap_or_default();
        *up.headers_mut() = parts.headers;
        let mut upstream = self.upstream.clone().ready().await?;
        let (answer, mut to_etcd) = upstream.send_request(up, false)?;
        to_etcd.send_data(sent, true)?;
        let (head, mut answer) = answer.await?.into_parts();
        let data = read_body(&mut answer).await?;
        let trailers = answer.trailers().await?;
        let succeeded = data.len() > 5
            && trailers.as_ref().and_then(|t| t.get("grpc-status")).is_some_and(|s| s == "0");
        let corruption = if path.starts_with("/etcdserverpb.KV/") && succeeded {
            lock(&self.schedule).next()
        } else {
            None
        };
        let head = Response::from_parts(head, ());
        let Some(corruption) = corruption else {
            // Passed on as etcd sent it, trailers-only answers included.
            if data.is_empty() && trailers.is_none() {
                respond.send_response(head, true)?;
                return Ok(());
            }
            return reply(respond, head, data, trailers);
        };
        let trailers = trailers.unwrap_or_default();
        let message = data.slice(5..);
        let frame = |flag: u8, len: u32, message: &[u8]| {
            let mut d = BytesMut::with_capacity(5 + message.len());
            d.put_u8(flag);
            d.put_u32(len);
            d.put_slice(message);
            d.freeze()
        };
        let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
        let status = |code: &'static str, message: Option<&'static str>| {
            let mut t = HeaderMap::new();
            t.insert("grpc-status", HeaderValue::from_static(code));
            if let Some(m) = message {
                t.insert("grpc-message", HeaderValue::from_static(m));
            }
            Some(t)
        };
        let half = data.slice(..5 + message.len() / 2);
        match corruption {
            Corruption::Truncated => reply(respond, head, half, Some(trailers)),
            Corruption::Oversized => {
                reply(respond, head, frame(0, u32::MAX, &message), Some(trailers))
            }
            Corruption::Trailing => {
                reply(respond, head, [&data[..], &data[..]].concat().into(), Some(trailers))
            }
            Corruption::Compressed => reply(respond, head, frame(1, len, &message), Some(trailers)),
            Corruption::BadStatus => reply(respond, head, data, status("banana", None)),
            Corruption::MissingStatus => {
                let mut t = HeaderMap::new();
                t.insert("x-hostile", HeaderValue::from_static("no grpc-status"));
                reply(respond, head, data, Some(t))
            }
            Corruption::BadMessage => {
                reply(respond, head, data, status("10", Some("hostile%zz%e2%28%a1 %")))
            }
            Corruption::RandomBody => {
                let mut rng = rand::rngs::StdRng::seed_from_u64(lock(&self.schedule).seen);
                let mut random = vec![0u8; rng.random_range(1..64)];
                rng.fill(random.as_mut_slice());
                // Field 1, wire type 7: no such wire type.
                random[0] = 0x0f;
                let len = u32::try_from(random.len()).unwrap_or(0);
                reply(respond, head, frame(0, len, &random), Some(trailers))
            }
            Corruption::Reset | Corruption::GoAway | Corruption::Stall => {
                let mut stream = respond.send_response(head, false)?;
                stream.send_data(half, false)?;
                match corruption {
                    Corruption::Reset => stream.send_reset(Reason::INTERNAL_ERROR),
                    Corruption::GoAway => {
                        let _ = self.go_away.send(());
                    }
                    _ => {}
                }
                // Held until the client resets it or the connection is gone.
                let _ = std::future::poll_fn(|cx| stream.poll_reset(cx)).await;
                Ok(())
            }
        }
    }
}

/// Sends an answer: its head, `data`, and `trailers` (none: the data ends the stream).
fn reply(
    mut respond: SendResponse<Bytes>,
    head: Response<()>,
    data: Bytes,
    trailers: Option<HeaderMap>,
) -> Result<(), h2::Error> {
    let mut stream = respond.send_response(head, false)?;
    stream.send_data(data, trailers.is_none())?;
    if let Some(t) = trailers {
        stream.send_trailers(t)?;
    }
    Ok(())
}
