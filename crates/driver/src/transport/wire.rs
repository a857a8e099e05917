//! A connection's byte stream ([`Io`]: TCP, or TLS over TCP) and what h2 writes to: what one turn of a worker sends on a connection goes out
//! in one system call, and acknowledgements of the server's pings wait for it.
//!
//! h2 writes each DATA frame of 256 bytes or more separately from what follows it, and
//! flushes after every one; etcd (grpc-go) pings the client after every request it receives
//! when traffic is light, to estimate the connection's bandwidth. Straight on a socket,
//! that made two `writev` per request with one client (the request, then the ping's
//! acknowledgement, each also waking etcd), and one per request with many. [`Wire`]
//! instead:
//! - copies small writes into one buffer and writes it when the connection's task comes
//!   back after the rest of the turn: a flush wakes the task and returns, so the logical
//!   clients that are ready in the same turn add their requests first;
//! - holds a buffer that holds nothing but PING acknowledgements until the next request
//!   goes out, or [`PONG_HOLD`] at most: pings here measure bandwidth, a later
//!   acknowledgement costs etcd nothing, and keepalive pings allow seconds;
//! - writes large payloads (1 MB values) straight from h2's buffers, after what it holds,
//!   in one `writev` and without a copy.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};

/// The longest a PING acknowledgement waits for a request to go with it.
pub(crate) const PONG_HOLD: Duration = Duration::from_millis(5);

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
    /// What is held is more than PING acknowledgements: it goes when the task comes back.
    urgent: bool,
    /// The task was woken to come back and write.
    woken: bool,
    /// The deadline of held PING acknowledgements; allocated on the first one.
    pong: Option<Pin<Box<Sleep>>>,
    pong_armed: bool,
}

impl Wire {
    pub(crate) fn new(io: Io) -> Self {
        Self {
            io,
            held: Vec::new(),
            sent: 0,
            urgent: false,
            woken: false,
            pong: None,
            pong_armed: false,
        }
    }

    fn pending(&self) -> usize {
        self.held.len() - self.sent
    }

    /// Writes everything held.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.held.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.held[self.sent..]))?;
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
        self.urgent = false;
        self.woken = false;
        self.pong_armed = false;
    }

    /// Whether what is held is due now: anything but acknowledgements once the task came
    /// back, acknowledgements once their deadline passed.
    fn due(&mut self, cx: &mut Context<'_>) -> bool {
        if self.pending() == 0 {
            return false;
        }
        if self.urgent {
            return true;
        }
        self.pong_armed && self.pong.as_mut().is_some_and(|pong| pong.as_mut().poll(cx).is_ready())
    }

    /// Writes `bufs` after what is held, in one `writev` where the socket takes it all.
    fn poll_write_through(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
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
        if this.pending() + total > GATHER {
            ready!(this.poll_drain(cx))?;
        }
        let start = this.held.len();
        for buf in bufs {
            this.held.extend_from_slice(buf);
        }
        if !this.urgent && !only_pongs(&this.held[start..]) {
            this.urgent = true;
        }
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    /// Returns at once: what is held goes when the task comes back (it is woken for that
    /// now), or, if it is only PING acknowledgements, with the next request or at their
    /// deadline.
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.pending() == 0 {
            return Pin::new(&mut this.io).poll_flush(cx);
        }
        if this.urgent {
            if !this.woken {
                this.woken = true;
                cx.waker().wake_by_ref();
            }
            return Poll::Ready(Ok(()));
        }
        if !this.pong_armed {
            this.pong_armed = true;
            let deadline = Instant::now() + PONG_HOLD;
            match &mut this.pong {
                Some(pong) => pong.as_mut().reset(deadline),
                None => this.pong = Some(Box::pin(tokio::time::sleep_until(deadline))),
            }
        }
        if this.due(cx) {
            ready!(this.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
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
