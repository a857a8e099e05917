//! One HTTP/2 connection to one etcd endpoint, straight on `h2`: the connection's task
//! and keepalive, and the redial when it is lost.
//!
//! tonic's channel puts a buffer task, a load balancer and hyper's dispatcher (with a
//! spawned task per request body) between a request and its connection. The hot path needs
//! none of that: a logical client frames its message, opens a stream on the connection it
//! was given, and reads the answer, all inside its own future ([`super::unary`]); the only
//! other task is the connection's own, which reads and writes the socket for every stream
//! on it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::Uri;
use http::uri::{Authority, PathAndQuery, Scheme};
use tonic::Status;

use super::auth::Auth;
use super::dial::Dialer;
use super::wire::{Draining, Held, Wire};
use crate::error::DriverError;

/// HTTP/2 ping interval while requests are in flight. etcd closes connections that ping
/// more often than its `--grpc-keepalive-min-time` (5 s by default) or that ping with no
/// stream open, so pings are spaced and sent only while something is outstanding.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// A connection whose ping is not answered within this long is closed; its requests fail
/// with `Unavailable` instead of hanging on a dead or frozen member.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// One HTTP/2 connection to one etcd endpoint; cloning shares it. When the connection is
/// lost (the member was killed or restarted, a keepalive went unanswered) the next request
/// dials it again, for every clone: one request dials while the others wait for it, and
/// after a failed dial the next attempt waits a backoff, so that clients of a dead member
/// fail a few times a second rather than as fast as the kernel refuses connections.
#[derive(Clone)]
pub(crate) struct Channel {
    send: SendRequest<Bytes>,
    /// Streams open on the connection `send` belongs to; its keepalive pings only while
    /// it is not zero.
    inflight: Arc<AtomicUsize>,
    /// Which of the slot's connections `send` is.
    generation: u64,
    slot: Arc<Slot>,
}

/// What the clones of a [`Channel`] share: where it goes and its current connection.
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
struct Live {
    send: SendRequest<Bytes>,
    inflight: Arc<AtomicUsize>,
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

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel").field("endpoint", &self.slot.endpoint).finish_non_exhaustive()
    }
}

/// Runs the connection `conn` on the current runtime. It lives until every handle is
/// dropped, the server closes it, or a keepalive ping goes unanswered.
fn spawn_connection(
    send: SendRequest<Bytes>,
    mut conn: h2::client::Connection<Wire, Bytes>,
    flushed: Held,
) -> Live {
    let inflight = Arc::new(AtomicUsize::new(0));
    let ping = conn.ping_pong();
    let watched = Arc::clone(&inflight);
    tokio::spawn(async move {
        tokio::select! {
            result = Draining::new(conn, flushed) => {
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

impl Live {
    /// Dials `endpoint` and runs the HTTP/2 connection; the handle and the scheme and
    /// authority requests are addressed to.
    async fn dial(
        dialer: &Dialer,
        endpoint: &str,
    ) -> Result<(Self, (Scheme, Authority)), DriverError> {
        let (send, conn, flushed, origin) = dialer.handshake(endpoint).await?;
        Ok((spawn_connection(send, conn, flushed), origin))
    }
}

impl Channel {
    /// Opens one connection to `endpoint` (TCP, TLS if asked for, HTTP/2) without sending
    /// anything on it yet; `dialer` dials it again when it is lost.
    pub(super) async fn connect(dialer: &Dialer, endpoint: &str) -> Result<Self, DriverError> {
        let (live, origin) = Live::dial(dialer, endpoint).await?;
        Ok(Self::new(live, endpoint, dialer.clone(), origin, dialer.auth().cloned()))
    }

    /// A connection to `endpoint` over `live`, dialled again by `dialer` when lost.
    fn new(
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
    pub(super) fn auth(&self) -> Option<&Arc<Auth>> {
        self.slot.auth.as_ref()
    }

    /// Waits until a stream can be opened, dialling again if the connection was lost.
    pub(super) async fn ready(&mut self) -> Result<(), Status> {
        let mut redial = None;
        std::future::poll_fn(|cx| self.poll_ready(cx, &mut redial)).await
    }

    /// Polls until a stream can be opened. When the connection was lost, `redial` holds the
    /// dial in progress (boxed: it is rare and a large future); the next polls drive it.
    pub(super) fn poll_ready(
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

    pub(super) fn uri(&self, path: PathAndQuery) -> Uri {
        let mut parts = http::uri::Parts::default();
        parts.scheme = Some(self.slot.scheme.clone());
        parts.authority = Some(self.slot.authority.clone());
        parts.path_and_query = Some(path);
        Uri::from_parts(parts).expect("scheme, authority and path make a URI")
    }

    /// The handle streams are opened with, once [`Channel::poll_ready`] said it is ready.
    pub(super) fn sender(&mut self) -> &mut SendRequest<Bytes> {
        &mut self.send
    }

    /// Counts a stream opened on the current connection until the guard drops.
    pub(super) fn stream_opened(&self) -> Inflight {
        Inflight::owned(&self.inflight)
    }
}

/// A dial in progress after a connection was lost.
pub(super) type Redial = Pin<Box<dyn Future<Output = Result<(), Status>> + Send>>;

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
    match Live::dial(&slot.dialer, &slot.endpoint).await {
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

/// Counts an open stream for as long as it lives.
pub(super) struct Inflight(Arc<AtomicUsize>);

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
