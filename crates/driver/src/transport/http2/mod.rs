//! etcdlat's own HTTP/2 client: what gRPC needs of HTTP/2 and nothing more, written for a
//! client that sends small requests on many streams of few connections.
//!
//! h2 cost one logical client about 20 µs of CPU per request over the same exchange framed
//! by hand (`benches/floors.sh`, benches/README.md), spread over its stream store,
//! prioritisation, HPACK and `http` types. Here:
//! - a request is one lock of the connection's [`State`]: its HEADERS (HPACK
//!   literals of the static table, no dynamic table to keep) and DATA are appended to the
//!   connection's outgoing bytes, and the connection's task is woken if it was not already;
//! - the connection's [`Task`] reads the socket, hands each stream its head,
//!   data and trailers (one lock per read), and writes everything queued since its last turn
//!   in one `writev`, large payloads (1 MB values) straight from their buffers;
//! - PING acknowledgements are held and go with the next request (etcd pings after every
//!   request when traffic is light, to estimate bandwidth; answering each at once cost a
//!   write and a server wake-up per request), and keepalive pings go out while streams are
//!   open;
//! - flow control both ways: what the server's windows allow is sent, the rest waits for
//!   its WINDOW_UPDATE; what a stream's reader takes, or leaves unread when dropped, is
//!   given back to the server, and so are padding and what comes to a stream whose reader
//!   is gone, at once; what the server sends past the client's windows ends the
//!   connection;
//! - the server's limit on concurrent streams is kept: requests past it wait in line for a
//!   slot, first come first served, and a slot said ready is held for the stream opened in
//!   it; a stream's sending half waits while it holds 1 MiB the server's windows have not
//!   let go.
//!
//! Response heads and trailers are decoded by the client's own HPACK decoder ([`hpack`]):
//! the server's encoder may use all of HPACK (grpc-go's does), and h2 keeps its decoder
//! private, so a patched h2 would have bound every crate that embeds etcdlat. h2 from
//! crates.io stays for what still uses it, the testkit's servers and tonic under
//! etcd-client; no dependency is patched, so a crate that embeds etcdlat builds the same tree.
//! Nothing the server sends panics: a malformed frame fails its stream or the connection,
//! as RFC 9113 says (a connection's error goes to the server in a GOAWAY with its code),
//! and every stream on a failed connection ends with the reason. Nor does it make the
//! client hold more than the windows allow (8 MiB a stream, 32 MiB a connection, in
//! buffers of the streams' own once a reader falls behind), a header block over 1 MiB (a
//! header list over 64 KiB, as SETTINGS_MAX_HEADER_LIST_SIZE says, fails its stream), or
//! acknowledgements past 64 KiB that the server does not read (the client stops reading
//! until they are written). The reader is fuzzed against all of it (`tests/fuzz.rs`).
//!
//! And nothing a lawful server does stalls it: a fuzzer (`tests/liveness/`) plays generated
//! frames, orders across concurrent calls, window updates, settings, resets and pauses
//! against it, and checks after every step that each stream got what it was sent and sent
//! what the windows allowed, that what the client took of its windows is held for a live
//! reader or given back, and that nothing it sent broke the server's settings. It runs 64
//! cases with the tests; `PROPTEST_CASES=3000 cargo test -p etcdlat-driver --lib
//! transport::http2::tests::liveness` runs longer (a failure prints its steps, shrunk).

mod codec;
mod hpack;
mod out;
mod state;
mod stream;
mod task;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, StatusCode};

use super::io::Io;
pub(crate) use codec::{
    CANCEL, ENHANCE_YOUR_CALM, Field, INADEQUATE_SECURITY, REFUSED_STREAM, RequestHead, reason,
};
use state::State;
pub(crate) use task::Task;

/// How an HTTP/2 stream or connection failed.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The server reset the stream with this error code.
    #[error("stream reset by the server ({})", reason(*.0))]
    Reset(u32),
    /// The server is going away and did not serve the stream.
    #[error("the server closed the connection ({}){}", reason(*code), debug_text(debug))]
    GoAway { code: u32, debug: Arc<str> },
    /// The connection failed or was closed.
    #[error("{0}")]
    Io(Arc<str>),
    /// The server broke HTTP/2 on the connection, which ended with a GOAWAY saying `code`.
    #[error("HTTP/2 protocol error ({}): {what}", reason(*code))]
    Protocol { code: u32, what: Arc<str> },
    /// The server broke HTTP/2 on the stream (the connection goes on).
    #[error("malformed response: {0}")]
    Malformed(Arc<str>),
    /// This side ended the connection or the stream.
    #[error("{0}")]
    Closed(&'static str),
}

fn debug_text(debug: &str) -> String {
    if debug.is_empty() { String::new() } else { format!(": {debug}") }
}

impl Error {
    /// A connection error of PROTOCOL_ERROR.
    fn protocol(what: impl Into<String>) -> Self {
        Self::connection(codec::PROTOCOL_ERROR, what)
    }

    /// A connection error of `code` (RFC 9113 5.4.1).
    fn connection(code: u32, what: impl Into<String>) -> Self {
        Self::Protocol { code, what: what.into().into() }
    }

    fn malformed(what: impl Into<String>) -> Self {
        Self::Malformed(what.into().into())
    }
}

/// A response's head or trailers: the HTTP status, gRPC's status fields, and (for streams
/// opened with [`Connection::open`]) every field.
#[derive(Debug, Default)]
pub(crate) struct Meta {
    pub status: Option<StatusCode>,
    pub grpc_status: Option<HeaderValue>,
    pub grpc_message: Option<HeaderValue>,
    pub headers: HeaderMap,
}

/// What a connection's handles, streams and task share.
struct Shared(Mutex<State>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the state, then wakes the task if `f` gave it something to do, and the
    /// waiter for a stream slot that `f` let in, if any.
    fn update<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut state = self.lock();
        let result = f(&mut state);
        let task = state.notify();
        let waiter = state.call_waiter();
        drop(state);
        wake(task);
        wake(waiter);
        result
    }
}

/// Wakes the connection's task once its state's lock is released.
fn wake(waker: Option<Waker>) {
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// A handle to one HTTP/2 connection; cloning shares it. The connection ends once every
/// handle and stream is dropped, the server closes it, or a keepalive goes unanswered.
pub(crate) struct Connection {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl Connection {
    /// Starts HTTP/2 on `io` (its preface and settings go out with the first write) and
    /// returns the handle and the future that runs the connection.
    pub(crate) fn new(io: Io) -> (Self, Task) {
        let shared = Arc::new(Shared(Mutex::new(State::new())));
        let task = task::Task::new(Arc::clone(&shared), io);
        (Self { shared }, task)
    }

    /// Ends the connection with `error`, as if it were lost.
    #[cfg(test)]
    pub(crate) fn close(&self, error: Error) {
        let mut wake = Vec::new();
        self.shared.update(|state| state.close(error, &mut wake));
        wake.into_iter().for_each(Waker::wake);
    }

    /// [`Connection::new`], with keepalive pings every `interval` given up after `timeout`.
    #[cfg(test)]
    fn with_keepalive(
        io: Io,
        interval: std::time::Duration,
        timeout: std::time::Duration,
    ) -> (Self, Task) {
        let shared = Arc::new(Shared(Mutex::new(State::new())));
        let task = task::Task::with_keepalive(Arc::clone(&shared), io, interval, timeout);
        (Self { shared }, task)
    }

    /// Ready when a stream can be opened: the connection is up, the server is not going
    /// away, and its limit on concurrent streams leaves room. When it leaves none, callers
    /// wait in line, first come first served: `turn` keeps the caller's place between polls
    /// (start with `None`). Once ready, `turn` holds the slot, kept for the stream that
    /// [`Connection::send_unary`] or [`Connection::open`] opens with it (or let go when
    /// dropped): callers on other threads cannot take it meanwhile, past the server's
    /// limit.
    pub(crate) fn poll_ready(
        &self,
        cx: &mut Context<'_>,
        turn: &mut Option<Turn>,
    ) -> Poll<Result<(), Error>> {
        let mut ticket = match turn {
            Some(t) if Arc::ptr_eq(&t.shared, &self.shared) => {
                if t.reserved {
                    return Poll::Ready(Ok(()));
                }
                t.ticket
            }
            // A place on a connection since replaced, or none.
            _ => {
                *turn = None;
                0
            }
        };
        let mut state = self.shared.lock();
        let polled = state.poll_ready(cx, &mut ticket);
        // Failed, it tells the next in line, who fails as well (the ids are used up).
        let next = if matches!(polled, Poll::Ready(Err(_))) { state.call_waiter() } else { None };
        drop(state);
        wake(next);
        let reserved = matches!(polled, Poll::Ready(Ok(())));
        match turn {
            Some(t) => {
                t.ticket = ticket;
                t.reserved = reserved;
            }
            None if ticket != 0 || reserved => {
                *turn = Some(Turn { shared: Arc::clone(&self.shared), ticket, reserved });
            }
            None => {}
        }
        if ticket == 0 && !reserved {
            // Out of line, holding nothing: nothing for the turn to leave when dropped.
            *turn = None;
        }
        polled
    }

    /// Takes the slot `turn` holds on this connection, if it holds one.
    fn take_slot(&self, turn: &mut Option<Turn>) -> bool {
        match turn {
            Some(t) if t.reserved && Arc::ptr_eq(&t.shared, &self.shared) => {
                t.reserved = false;
                *turn = None;
                true
            }
            _ => false,
        }
    }

    /// Sends a whole request, `head` and its message (`first`, then `second` if given),
    /// and returns the stream its answer comes on, in the slot `turn` holds
    /// ([`Connection::poll_ready`]; without one, whatever the server's limit). Only gRPC's
    /// status fields of the answer's head and trailers are kept.
    pub(crate) fn send_unary(
        &self,
        turn: &mut Option<Turn>,
        head: &RequestHead<'_>,
        first: Bytes,
        second: Option<Bytes>,
    ) -> Result<RecvStream, Error> {
        let reserved = self.take_slot(turn);
        let id = self.shared.update(|state| {
            let id = state.open(head, false, false, reserved)?;
            state.send_data(id, first, second.is_none());
            if let Some(second) = second {
                state.send_data(id, second, true);
            }
            Ok(id)
        })?;
        Ok(RecvStream { shared: Arc::clone(&self.shared), id, done: false })
    }

    /// Opens a stream with `head` (ending it at once when `end`), for a body sent in parts,
    /// in the slot `turn` holds (as [`Connection::send_unary`]); every field of the
    /// answer's head and trailers is kept.
    pub(crate) fn open(
        &self,
        turn: &mut Option<Turn>,
        head: &RequestHead<'_>,
        end: bool,
    ) -> Result<(SendStream, RecvStream), Error> {
        let reserved = self.take_slot(turn);
        let id = self.shared.update(|state| state.open(head, true, end, reserved))?;
        let send = SendStream { shared: Arc::clone(&self.shared), id };
        Ok((send, RecvStream { shared: Arc::clone(&self.shared), id, done: false }))
    }
}

impl Clone for Connection {
    fn clone(&self) -> Self {
        self.shared.lock().handles += 1;
        Self { shared: Arc::clone(&self.shared) }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.shared.update(|state| state.handles -= 1);
    }
}

/// A caller's place in line for a stream slot on a connection, then the slot it got
/// ([`Connection::poll_ready`]). Dropping it leaves the line, or lets the slot go, letting
/// the next one in.
pub(crate) struct Turn {
    shared: Arc<Shared>,
    /// The caller's ticket; 0 once out of line.
    ticket: u64,
    /// Holds a slot, counted against the server's limit until a stream takes it.
    reserved: bool,
}

impl Drop for Turn {
    fn drop(&mut self) {
        if self.ticket != 0 || self.reserved {
            self.shared.update(|state| {
                state.leave(self.ticket);
                if self.reserved {
                    state.unreserve();
                }
            });
        }
    }
}

/// The sending half of a stream opened with [`Connection::open`]. Dropping it before the
/// body ended ends it.
pub(crate) struct SendStream {
    shared: Arc<Shared>,
    id: u32,
}

impl SendStream {
    /// Queues `data` (and the end of the body when `end`); it goes out as the server's
    /// windows allow.
    pub(crate) fn send_data(&mut self, data: Bytes, end: bool) -> Result<(), Error> {
        self.shared.update(|state| {
            state.check_send(self.id)?;
            state.send_data(self.id, data, end);
            Ok(())
        })
    }

    /// Ready when more may be queued: what the stream holds for want of the server's
    /// windows is under 1 MiB; or the body can no longer be sent (the error). A body sent
    /// in parts waits for it before each, so that a server that does not read holds it
    /// back rather than the client holding all of it.
    pub(crate) fn poll_capacity(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.shared.lock().poll_send(self.id, cx)
    }

    /// [`SendStream::poll_capacity`].
    pub(crate) async fn capacity(&mut self) -> Result<(), Error> {
        std::future::poll_fn(|cx| self.poll_capacity(cx)).await
    }

    /// Resets the stream with `code`.
    pub(crate) fn send_reset(&mut self, code: u32) {
        self.shared.update(|state| state.reset(self.id, code));
    }
}

impl Drop for SendStream {
    fn drop(&mut self) {
        self.shared.update(|state| state.release(self.id, true));
    }
}

/// The receiving half of a stream: its head, then its data, then its trailers.
pub(crate) struct RecvStream {
    shared: Arc<Shared>,
    id: u32,
    /// Its trailers were read: the answer is whole.
    done: bool,
}

impl RecvStream {
    /// The response's head.
    pub(crate) fn poll_head(&mut self, cx: &mut Context<'_>) -> Poll<Result<Meta, Error>> {
        self.shared.lock().poll_head(self.id, cx)
    }

    /// The next chunk of the response's body; `None` at its end. What it returns is given
    /// back to the server's flow-control windows.
    pub(crate) fn poll_data(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Error>>> {
        self.shared.update(|state| state.poll_data(self.id, cx))
    }

    /// The response's trailers, once its body was read; `None` if it ended without.
    pub(crate) fn poll_trailers(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Meta>, Error>> {
        let polled = self.shared.lock().poll_trailers(self.id, cx);
        if polled.is_ready() {
            self.done = true;
        }
        polled
    }

    /// The next chunk of the body.
    pub(crate) async fn data(&mut self) -> Option<Result<Bytes, Error>> {
        std::future::poll_fn(|cx| self.poll_data(cx)).await
    }

    /// The head.
    pub(crate) async fn head(&mut self) -> Result<Meta, Error> {
        std::future::poll_fn(|cx| self.poll_head(cx)).await
    }

    /// The trailers.
    pub(crate) async fn trailers(&mut self) -> Result<Option<Meta>, Error> {
        std::future::poll_fn(|cx| self.poll_trailers(cx)).await
    }

    /// Whether the answer was read to its end.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        self.shared.update(|state| state.release(self.id, false));
    }
}
#[cfg(test)]
mod tests;
