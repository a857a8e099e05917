//! A wiretap: an HTTP/2 proxy in front of a real etcd that passes every stream on both ways
//! as it flows (unary calls and long-lived watch streams alike) and records each gRPC
//! message a client sends, with its method, in the order the proxy received them. A
//! message is recorded before it is passed on, so a request that has been answered is in
//! the record. Tests decode the messages to compare what two clients ask etcd for.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Buf, Bytes, BytesMut};
use h2::client::SendRequest;
use h2::server::SendResponse;
use h2::{RecvStream, SendStream};
use http::{Request, Response};

use crate::proxy::{Link, Proxy};

/// One gRPC message a client sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tapped {
    /// The call's path: `/etcdserverpb.KV/Range`, `/etcdserverpb.Watch/Watch`.
    pub method: String,
    /// The message, without its 5-byte gRPC frame header.
    pub message: Bytes,
}

type Log = Arc<Mutex<Vec<Tapped>>>;

fn lock(log: &Log) -> std::sync::MutexGuard<'_, Vec<Tapped>> {
    log.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The wiretap, on its own thread and runtime, stopped when dropped.
#[derive(Debug)]
pub struct Wiretap {
    proxy: Proxy,
    log: Log,
}

impl Wiretap {
    /// Starts a wiretap on a free loopback port in front of `upstream` (`http://HOST:PORT`).
    ///
    /// # Panics
    /// When `upstream` is not `http://` and an address, or no port or thread can be had.
    #[must_use]
    pub fn start(upstream: &str) -> Self {
        let log = Log::default();
        let shared = Arc::clone(&log);
        let proxy = Proxy::start("wiretap", upstream, move |link| serve(link, Arc::clone(&shared)));
        Self { proxy, log }
    }

    /// Its endpoint, `http://127.0.0.1:PORT`.
    #[must_use]
    pub fn endpoint(&self) -> String {
        self.proxy.endpoint()
    }

    /// The messages recorded since the last take, in the order they arrived.
    #[must_use]
    pub fn take(&self) -> Vec<Tapped> {
        std::mem::take(&mut *lock(&self.log))
    }
}

/// One client connection: each of its streams passed on.
async fn serve(link: Link, log: Log) {
    let Link { mut client, etcd, authority } = link;
    while let Some(Ok((request, respond))) = client.accept().await {
        tokio::spawn(pass(request, respond, etcd.clone(), authority, Arc::clone(&log)));
    }
}

/// One stream: its request passed on to etcd message by message, recorded on the way, and
/// etcd's answer passed back as it comes.
async fn pass(
    request: Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    upstream: SendRequest<Bytes>,
    authority: SocketAddr,
    log: Log,
) -> Result<(), h2::Error> {
    let (parts, body) = request.into_parts();
    let method = parts.uri.path().to_owned();
    let mut up = Request::new(());
    *up.method_mut() = parts.method;
    *up.uri_mut() = format!("http://{authority}{method}").parse().unwrap_or_default();
    *up.headers_mut() = parts.headers;
    let mut upstream = upstream.ready().await?;
    let (answer, to_etcd) = upstream.send_request(up, false)?;
    tokio::spawn(forward(body, to_etcd, method, log));
    let (head, mut answer) = answer.await?.into_parts();
    let end = answer.is_end_stream();
    let mut to_client = respond.send_response(Response::from_parts(head, ()), end)?;
    if end {
        return Ok(());
    }
    while let Some(chunk) = answer.data().await {
        let chunk = chunk?;
        let _ = answer.flow_control().release_capacity(chunk.len());
        to_client.send_data(chunk, false)?;
    }
    match answer.trailers().await? {
        Some(trailers) => to_client.send_trailers(trailers),
        None => to_client.send_data(Bytes::new(), true),
    }
}

/// The client's side of a stream, passed on to etcd, each whole gRPC message recorded first.
async fn forward(
    mut body: RecvStream,
    mut to_etcd: SendStream<Bytes>,
    method: String,
    log: Log,
) -> Result<(), h2::Error> {
    let mut pending = BytesMut::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        pending.extend_from_slice(&chunk);
        while pending.len() >= 5 {
            let len = u32::from_be_bytes([pending[1], pending[2], pending[3], pending[4]]);
            let whole = 5 + len as usize;
            if pending.len() < whole {
                break;
            }
            pending.advance(5);
            let message = pending.split_to(whole - 5).freeze();
            lock(&log).push(Tapped { method: method.clone(), message });
        }
        to_etcd.send_data(chunk, false)?;
    }
    to_etcd.send_data(Bytes::new(), true)
}
