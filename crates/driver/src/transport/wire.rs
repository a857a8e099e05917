//! A connection's byte stream ([`Io`]: TCP, or TLS over TCP) and what h2 writes to: what one turn of a worker sends on a connection goes out
//! in one system call, and acknowledgements of the server's pings wait for it.
//!
//! h2 writes each DATA frame of 256 bytes or more separately from what follows it, and
//! flushes after every one; etcd (grpc-go) pings the client after every request it receives
//! when traffic is light, to estimate the connection's bandwidth. Straight on a socket,
//! that made two `writev` per request with one client (the request, then the ping's
//! acknowledgement, each also waking etcd), and one per request with many. [`Wire`]
//! instead:
//! - copies small writes into one buffer and writes it once h2 is done with the poll that
//!   wrote it: a flush only marks it ([`Held`]), and the connection's future
//!   ([`Draining`]) polls h2 once more, whose read writes what is held first; h2 flushes
//!   after every large DATA frame, and the requests of all the logical clients that woke
//!   it go in one `send`;
//! - holds PING acknowledgements apart, and sends them with the first request that goes
//!   out once they are [`PONG_RIPE`] old, or alone at [`PONG_HOLD`]: etcd's pings here
//!   estimate bandwidth, it has one outstanding at a time and sends the next with the next
//!   request it receives after the acknowledgement, so acknowledging at once made one ping,
//!   and one more wake-up of the client, per request; held, there is one per
//!   [`PONG_RIPE`] at most, and keepalive pings allow seconds;
//! - writes large payloads (1 MB values) straight from h2's buffers, after what it holds,
//!   in one `writev` and without a copy.

use std::future::Future;
use std::io::{self, IoSlice};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// A PING acknowledgement goes with the first request written once it is this old.
const PONG_RIPE: Duration = Duration::from_millis(2);

/// The longest a PING acknowledgement waits for a request to go with it.
const PONG_HOLD: Duration = Duration::from_millis(5);

/// Writes at least this large go straight to the socket (after what is held), not copied.
const DIRECT: usize = 8 * 1024;

/// What is held is written first when a copy would take it past this.
const GATHER: usize = 64 * 1024;

/// A buffer that grew past this is given back once written, so that a connection that once
/// carried a burst does not keep its memory while idle.
const KEEP: usize = 16 * 1024;

/// At most this many slices go to one `writev` (Linux allows 1024).
const MAX_SLICES: usize = 64;

/// A connection's byte stream as h2 sees it: [`Io`] with writes gathered (module docs).
pub(crate) struct Wire {
    io: Io,
    /// Bytes h2 wrote that are not on the socket yet: `held[sent..]`.
    held: Vec<u8>,
    sent: usize,
    /// Set when h2 flushed with something held: its connection is polled once more.
    flushed: Held,
    /// The socket did not take what is held; its readiness wakes the task.
    blocked: bool,
    /// PING acknowledgements h2 wrote, not yet moved to `held`.
    pongs: Vec<u8>,
    /// When the oldest of `pongs` was written.
    pongs_since: Option<Instant>,
    /// The deadline of `pongs`; allocated on the first one.
    pong: Option<Pin<Box<Sleep>>>,
    /// [`PONG_RIPE`] and [`PONG_HOLD`] (other values in tests).
    ripe: Duration,
    hold: Duration,
}

impl Wire {
    /// A byte stream for h2, and what its connection's [`Draining`] future is to watch.
    pub(crate) fn new(io: Io) -> (Self, Held) {
        let wire = Self::holding(io, PONG_RIPE, PONG_HOLD);
        let flushed = wire.flushed.clone();
        (wire, flushed)
    }

    fn holding(io: Io, ripe: Duration, hold: Duration) -> Self {
        Self {
            io,
            held: Vec::new(),
            sent: 0,
            flushed: Held::default(),
            blocked: false,
            pongs: Vec::new(),
            pongs_since: None,
            pong: None,
            ripe,
            hold,
        }
    }

    fn pending(&self) -> usize {
        self.held.len() - self.sent
    }

    /// Writes everything held.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.held.len() {
            let written = Pin::new(&mut self.io).poll_write(cx, &self.held[self.sent..]);
            self.blocked = written.is_pending();
            let n = ready!(written)?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.emptied();
        Poll::Ready(Ok(()))
    }

    fn emptied(&mut self) {
        if self.held.capacity() > KEEP {
            self.held = Vec::new();
        } else {
            self.held.clear();
        }
        self.sent = 0;
    }

    /// Whether something is due to be written now: what is held once the task came back,
    /// PING acknowledgements alone once their deadline passed.
    fn due(&mut self, cx: &mut Context<'_>) -> bool {
        self.ripen(cx, false);
        self.pending() > 0
    }

    /// Moves the PING acknowledgements into `held` if they are to go now: with what is
    /// held or `going` out beside it once they are [`PONG_RIPE`], or alone at their
    /// deadline (its timer wakes the task).
    fn ripen(&mut self, cx: &mut Context<'_>, going: bool) {
        let Some(since) = self.pongs_since else { return };
        let expired = self.pong.as_mut().is_some_and(|pong| pong.as_mut().poll(cx).is_ready());
        if expired || ((going || self.pending() > 0) && since.elapsed() >= self.ripe) {
            self.held.extend_from_slice(&self.pongs);
            self.pongs.clear();
            self.pongs_since = None;
        }
    }

    /// Holds PING acknowledgements (module docs) and arms their deadline.
    fn hold_pongs(&mut self, bytes: &[u8]) {
        self.pongs.extend_from_slice(bytes);
        if self.pongs_since.is_none() {
            let now = Instant::now();
            self.pongs_since = Some(now);
            match &mut self.pong {
                Some(pong) => pong.as_mut().reset(now + self.hold),
                None => self.pong = Some(Box::pin(tokio::time::sleep_until(now + self.hold))),
            }
        }
    }

    /// Writes `bufs` after what is held, in one `writev` where the socket takes it all.
    fn poll_write_through(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.ripen(cx, true);
        loop {
            let held = self.pending();
            let mut slices: [IoSlice<'_>; MAX_SLICES] = [IoSlice::new(&[]); MAX_SLICES];
            let mut count = 0;
            if held > 0 {
                slices[0] = IoSlice::new(&self.held[self.sent..]);
                count = 1;
            }
            for buf in bufs.iter().filter(|b| !b.is_empty()).take(MAX_SLICES - count) {
                slices[count] = IoSlice::new(buf);
                count += 1;
            }
            let n = ready!(Pin::new(&mut self.io).poll_write_vectored(cx, &slices[..count]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            if n < held {
                self.sent += n;
                continue;
            }
            if held > 0 {
                self.emptied();
            }
            if n > held {
                return Poll::Ready(Ok(n - held));
            }
        }
    }
}

/// Whether `bytes` are whole HTTP/2 frames that are all PING acknowledgements.
fn only_pongs(mut bytes: &[u8]) -> bool {
    const PING: u8 = 0x6;
    const ACK: u8 = 0x1;
    if bytes.is_empty() {
        return false;
    }
    while !bytes.is_empty() {
        let [a, b, c, kind, flags, ..] = *bytes else { return false };
        let len = 9 + (usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c));
        if kind != PING || flags & ACK == 0 || bytes.len() < len {
            return false;
        }
        bytes = &bytes[len..];
    }
    true
}

impl AsyncRead for Wire {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        // The task came back (h2 reads first on every poll): send what the last turn wrote.
        // A full socket wakes the task when it drains; reading goes on meanwhile.
        if this.due(cx)
            && let Poll::Ready(Err(e)) = this.poll_drain(cx)
        {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Wire {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        if total >= DIRECT {
            return this.poll_write_through(cx, bufs);
        }
        if let [buf] = bufs
            && only_pongs(buf)
        {
            this.hold_pongs(buf);
            return Poll::Ready(Ok(total));
        }
        if this.pending() + total > GATHER {
            ready!(this.poll_drain(cx))?;
        }
        for buf in bufs {
            this.held.extend_from_slice(buf);
        }
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Returns at once: what is held goes when h2 is polled once more ([`Draining`]), or
    /// when the socket that did not take it is ready; PING acknowledgements go with a later
    /// request or at their deadline.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pending() > 0 {
            if !this.blocked {
                this.flushed.0.store(true, Ordering::Relaxed);
            }
            return Poll::Ready(Ok(()));
        }
        if this.pongs_since.is_none() {
            return Pin::new(&mut this.io).poll_flush(cx);
        }
        if this.due(cx) {
            ready!(this.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.held.append(&mut this.pongs);
        this.pongs_since = None;
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

/// Whether a [`Wire`] holds what h2 flushed; shared by the wire and its connection's
/// [`Draining`] future.
#[derive(Clone, Default)]
pub(crate) struct Held(Arc<AtomicBool>);

/// h2's connection future, polled again within the same poll while its [`Wire`] holds what
/// h2 flushed: h2 reads first, and the wire writes what it holds before reading. Each extra
/// poll writes or finds the socket full (which then wakes the task), so it ends.
pub(crate) struct Draining<F> {
    connection: F,
    flushed: Held,
}

impl<F> Draining<F> {
    pub(crate) fn new(connection: F, flushed: Held) -> Self {
        Self { connection, flushed }
    }
}

impl<F: Future + Unpin> Future for Draining<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        loop {
            let polled = Pin::new(&mut this.connection).poll(cx);
            if polled.is_ready() || !this.flushed.0.swap(false, Ordering::Relaxed) {
                return polled;
            }
        }
    }
}

/// A connection's byte stream: TCP, or TLS over TCP.
pub(crate) enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags, 0, 0, 0, 0];
        f.extend_from_slice(payload);
        f
    }

    /// A [`Wire`] over loopback, with its acknowledgements ripe after `ripe` and due alone
    /// after `hold`, and the server's end of the socket.
    async fn loopback(ripe: Duration, hold: Duration) -> (Wire, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).await.unwrap();
        let (server, _) = listener.accept().unwrap();
        server.set_nonblocking(true).unwrap();
        (Wire::holding(Io::Plain(client), ripe, hold), server)
    }

    /// What h2 does with a frame: write it, flush, and (polled again) read.
    fn send(wire: &mut Wire, frame: &[u8]) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut wire = Pin::new(wire);
        assert!(
            matches!(wire.as_mut().poll_write(&mut cx, frame), Poll::Ready(Ok(n)) if n == frame.len())
        );
        assert!(matches!(wire.as_mut().poll_flush(&mut cx), Poll::Ready(Ok(()))));
        come_back(&mut wire);
    }

    /// The connection's task, polled again or woken, reads first.
    fn come_back(wire: &mut Wire) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut space = [0; 64];
        assert!(Pin::new(wire).poll_read(&mut cx, &mut ReadBuf::new(&mut space)).is_pending());
    }

    /// Everything the server has received so far (loopback delivers within the send).
    fn received(server: &mut std::net::TcpStream) -> Vec<u8> {
        use std::io::Read;
        let mut all = Vec::new();
        let mut chunk = [0; 1024];
        loop {
            match server.read(&mut chunk) {
                Ok(0) => return all,
                Ok(n) => all.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return all,
                Err(e) => panic!("{e}"),
            }
        }
    }

    const LONG: Duration = Duration::from_secs(3600);

    #[tokio::test]
    async fn an_acknowledgement_waits_until_ripe_and_then_goes_with_a_request() {
        let (pong, request) = (frame(6, 1, &[7; 8]), frame(1, 4, b"headers"));
        let (mut wire, mut server) = loopback(LONG, LONG).await;
        send(&mut wire, &pong);
        assert_eq!(received(&mut server), b"", "held");
        send(&mut wire, &request);
        assert_eq!(received(&mut server), request, "the request goes at once, without it");
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(Pin::new(&mut wire).poll_shutdown(&mut cx).is_ready());
        assert_eq!(received(&mut server), pong, "nothing held is lost at shutdown");

        let (mut wire, mut server) = loopback(Duration::ZERO, LONG).await;
        send(&mut wire, &pong);
        assert_eq!(received(&mut server), b"", "ripe, but nothing to go with");
        send(&mut wire, &request);
        assert_eq!(received(&mut server), [request, pong].concat(), "one write");
    }

    #[tokio::test]
    async fn an_acknowledgement_goes_alone_at_its_deadline() {
        let (mut wire, mut server) = loopback(LONG, Duration::ZERO).await;
        let pong = frame(6, 1, &[7; 8]);
        send(&mut wire, &pong);
        // Its timer wakes the task, which comes back to read.
        tokio::time::sleep(Duration::from_millis(1)).await;
        come_back(&mut wire);
        assert_eq!(received(&mut server), pong);
    }

    #[test]
    fn ping_acknowledgements_are_told_from_other_frames() {
        let pong = frame(6, 1, &[7; 8]);
        assert!(only_pongs(&pong));
        assert!(only_pongs(&[pong.clone(), pong.clone()].concat()));
        assert!(!only_pongs(&frame(6, 0, &[7; 8])), "a ping, not its acknowledgement");
        assert!(!only_pongs(&[pong.clone(), frame(0, 1, b"data")].concat()));
        assert!(!only_pongs(&frame(8, 0, &[0, 0, 1, 0])), "a window update");
        assert!(!only_pongs(&pong[..12]), "a partial frame");
        assert!(!only_pongs(&[]));
    }
}
