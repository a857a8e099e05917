//! One HTTP/2 connection to one etcd endpoint, on etcdlat's own [`super::http2`]: the
//! connection's task, and the redial when it is lost.
//!
//! tonic's channel puts a buffer task, a load balancer and hyper's dispatcher (with a
//! spawned task per request body) between a request and its connection. The hot path needs
//! none of that: a logical client frames its message, opens a stream on the connection it
//! was given, and reads the answer, all inside its own future ([`super::unary`]); the only
//! other task is the connection's own, which reads and writes the socket for every stream
//! on it.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tonic::Status;

use super::auth::Auth;
use super::dial::{Dialer, Origin};
use super::http2::{Connection, Field, RequestHead, Turn};
use super::io::Traffic;
use crate::error::DriverError;

/// One HTTP/2 connection to one etcd endpoint; cloning shares it. When the connection is
/// lost (the member was killed or restarted, a keepalive went unanswered) the next request
/// dials it again, for every clone: one request dials while the others wait for it, and
/// after a failed dial the next attempt waits a backoff, so that clients of a dead member
/// fail a few times a second rather than as fast as the kernel refuses connections.
#[derive(Clone)]
pub(crate) struct Channel {
    send: Connection,
    /// Which of the slot's connections `send` is.
    generation: u64,
    slot: Arc<Slot>,
}

/// What the clones of a [`Channel`] share: where it goes and its current connection.
struct Slot {
    endpoint: String,
    dialer: Dialer,
    /// Where the socket's bytes are counted, across redials (a load connection's).
    traffic: Option<Arc<Traffic>>,
    origin: Origin,
    auth: Option<Arc<Auth>>,
    /// The runtime the channel was opened on, where every connection's task runs: a redial
    /// may come from a caller on another runtime (a worker's), which may shut down first.
    runtime: tokio::runtime::Handle,
    /// Bumped at every new connection, so a clone notices with one atomic read.
    generation: AtomicU64,
    current: Mutex<Connection>,
    /// Dial attempts that failed, readable before waiting for `redial`.
    failed_dials: AtomicU64,
    redial: tokio::sync::Mutex<Backoff>,
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

/// Dials `endpoint` and runs its HTTP/2 connection on `runtime`: the handle, and where its
/// requests are addressed.
async fn dial(
    dialer: &Dialer,
    endpoint: &str,
    traffic: Option<Arc<Traffic>>,
    runtime: &tokio::runtime::Handle,
) -> Result<(Connection, Origin), DriverError> {
    let (connection, task, origin) = dialer.handshake(endpoint, traffic).await?;
    runtime.spawn(async move {
        if let Err(e) = task.await {
            tracing::debug!(error = %e, "HTTP/2 connection closed");
        }
    });
    Ok((connection, origin))
}

impl Channel {
    /// Opens one connection to `endpoint` (TCP, TLS if asked for, HTTP/2) without sending
    /// anything on it yet; `dialer` dials it again when it is lost. With `traffic`, its
    /// sockets' bytes are counted there.
    pub(super) async fn connect(
        dialer: &Dialer,
        endpoint: &str,
        traffic: Option<Arc<Traffic>>,
    ) -> Result<Self, DriverError> {
        let runtime = tokio::runtime::Handle::current();
        let (connection, origin) = dial(dialer, endpoint, traffic.clone(), &runtime).await?;
        let slot = Slot {
            endpoint: endpoint.to_owned(),
            dialer: dialer.clone(),
            traffic,
            origin,
            auth: dialer.auth().cloned(),
            runtime,
            generation: AtomicU64::new(0),
            current: Mutex::new(connection.clone()),
            failed_dials: AtomicU64::new(0),
            redial: tokio::sync::Mutex::new(Backoff {
                delay: FIRST_BACKOFF,
                retry_at: None,
                last_error: String::new(),
            }),
        };
        Ok(Self { send: connection, generation: 0, slot: Arc::new(slot) })
    }

    /// The authentication this connection's requests carry, if any.
    pub(super) fn auth(&self) -> Option<&Arc<Auth>> {
        self.slot.auth.as_ref()
    }

    /// Waits until a stream can be opened, dialling again if the connection was lost: the
    /// slot to open it in ([`Connection::poll_ready`]).
    pub(super) async fn ready(&mut self) -> Result<Option<Turn>, Status> {
        let mut wait = Wait::default();
        std::future::poll_fn(|cx| self.poll_ready(cx, &mut wait)).await?;
        Ok(wait.turn)
    }

    /// Polls until a stream can be opened; `wait` keeps what the next polls need.
    pub(super) fn poll_ready(
        &mut self,
        cx: &mut Context<'_>,
        wait: &mut Wait,
    ) -> Poll<Result<(), Status>> {
        loop {
            if let Some(dial) = &mut wait.redial {
                let dialled = ready!(dial.as_mut().poll(cx));
                wait.redial = None;
                dialled?;
            }
            if self.slot.generation.load(Ordering::Acquire) != self.generation {
                self.catch_up();
            }
            match ready!(self.send.poll_ready(cx, &mut wait.turn)) {
                Ok(()) => return Poll::Ready(Ok(())),
                Err(e) => {
                    tracing::debug!(endpoint = %self.slot.endpoint, error = %e, "connection lost");
                    let dial = redial_slot(Arc::clone(&self.slot), self.generation);
                    wait.redial = Some(Box::pin(dial));
                }
            }
        }
    }

    fn catch_up(&mut self) {
        let current = self.slot.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        self.send = current.clone();
        self.generation = self.slot.generation.load(Ordering::Acquire);
    }

    /// The head of a request to `path` with `fields` on this connection.
    pub(super) fn head<'a>(&'a self, path: &'a str, fields: &'a [Field<'a>]) -> RequestHead<'a> {
        RequestHead {
            https: self.slot.origin.https,
            authority: &self.slot.origin.authority,
            path,
            fields,
        }
    }

    /// The connection streams are opened on, once [`Channel::poll_ready`] said it is ready.
    pub(super) fn connection(&self) -> &Connection {
        &self.send
    }
}

/// What a request keeps between polls of [`Channel::poll_ready`].
#[derive(Default)]
pub(super) struct Wait {
    /// The dial in progress when the connection was lost (boxed: it is rare and a large
    /// future).
    redial: Option<Redial>,
    /// Its place in line while the server's limit on concurrent streams leaves no room,
    /// then the slot its stream opens in.
    pub(super) turn: Option<Turn>,
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
    // Dialled on the channel's runtime, whose reactor the socket is then registered with,
    // as the connection's task runs there: not on the caller's, which may end first.
    let (dialer, endpoint, traffic) =
        (slot.dialer.clone(), slot.endpoint.clone(), slot.traffic.clone());
    let runtime = slot.runtime.clone();
    let dialled = slot.runtime.spawn(async move {
        dial(&dialer, &endpoint, traffic, &runtime).await.map_err(|e| e.to_string())
    });
    let dialled = dialled.await.unwrap_or_else(|e| Err(format!("the channel's runtime: {e}")));
    match dialled {
        Ok((connection, _)) => {
            *slot.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = connection;
            slot.generation.fetch_add(1, Ordering::AcqRel);
            backoff.delay = FIRST_BACKOFF;
            backoff.retry_at = None;
            tracing::debug!(endpoint = %slot.endpoint, "reconnected");
            Ok(())
        }
        Err(e) => {
            backoff.last_error = e;
            backoff.retry_at = Some(tokio::time::Instant::now() + backoff.delay);
            backoff.delay = (backoff.delay * 2).min(MAX_BACKOFF);
            slot.failed_dials.fetch_add(1, Ordering::AcqRel);
            Err(unavailable(&backoff.last_error))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    use crate::Security;
    use crate::transport::kv::Kv;
    use crate::transport::message::RangeRequest;

    /// A lost connection is dialled again by the next request, on whatever runtime that
    /// request runs (a worker's); the new connection lives on the channel's runtime, so
    /// that it outlives the caller's.
    #[tokio::test]
    async fn a_connection_dialled_again_lives_on_the_channels_runtime_not_the_callers() {
        if etcdlat_testkit::skip() {
            return;
        }
        let etcd = etcdlat_testkit::Etcd::start().await;
        let dialer = Dialer::new(&Security::default(), Duration::from_secs(5)).unwrap();
        let channel = Channel::connect(&dialer, &etcd.endpoint(), None).await.unwrap();
        channel.connection().close(crate::transport::http2::Error::Closed("closed by the test"));
        let mut caller = channel.clone();
        tokio::task::spawn_blocking(move || {
            let runtime =
                tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(caller.ready()).map(drop).unwrap();
        })
        .await
        .unwrap();
        assert_eq!(channel.slot.generation.load(Ordering::Acquire), 1, "dialled again");
        let mut kv = Kv::new(channel.clone());
        let req = RangeRequest { key: Bytes::from_static(b"k"), ..RangeRequest::default() };
        let answered = tokio::time::timeout(Duration::from_secs(10), kv.range(req)).await;
        answered.expect("answered within 10 s").unwrap();
        assert_eq!(
            channel.slot.generation.load(Ordering::Acquire),
            1,
            "dialled a third time: the second connection ended with the caller's runtime"
        );
    }
}
