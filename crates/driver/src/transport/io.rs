//! A connection's byte stream: TCP, or TLS over TCP; and the bytes a load connection's
//! socket carried ([`Traffic`]), counted per read and write system call.
//!
//! The count is taken under TLS, on the TCP socket, so it is what went over the wire. Each
//! connection has its own counters, touched only by the thread that polls the connection
//! (relaxed atomics, so that the sampler can read them from another thread once a second);
//! nothing is locked or allocated per read or write. A [`Ledger`] holds every load
//! connection's counters for the sampler, and keeps the bytes of those closed since.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A connection's byte stream: TCP, or TLS over TCP.
pub(crate) enum Io {
    /// TCP, uncounted (control connections, scrapes).
    Plain(TcpStream),
    /// TCP, its bytes counted (a load connection).
    Counted(Socket),
    /// TLS over TCP, counted under TLS when its socket has a [`Traffic`].
    Tls(Box<tokio_rustls::client::TlsStream<Socket>>),
}

/// A TCP socket, counting the bytes of each read and write into its [`Traffic`] when it
/// has one (the load's connections do; control connections and scrapes do not).
pub(crate) struct Socket {
    tcp: TcpStream,
    traffic: Option<Arc<Traffic>>,
}

impl Socket {
    pub(crate) fn new(tcp: TcpStream, traffic: Option<Arc<Traffic>>) -> Self {
        Self { tcp, traffic }
    }

    fn count(&self, counter: fn(&Traffic) -> &AtomicU64, n: usize) {
        if let Some(traffic) = &self.traffic {
            counter(traffic).fetch_add(n as u64, Ordering::Relaxed);
        }
    }
}

/// The bytes one connection's socket read and wrote, across its redials.
#[derive(Debug, Default)]
pub(crate) struct Traffic {
    sent: AtomicU64,
    received: AtomicU64,
}

/// Every load connection's [`Traffic`]: what the client's load sent and received.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    inner: Mutex<LedgerInner>,
}

#[derive(Debug, Default)]
struct LedgerInner {
    open: Vec<Arc<Traffic>>,
    /// Bytes of connections whose counters are no longer held by any connection.
    closed: (u64, u64),
}

impl Ledger {
    /// Counters for a new load connection, kept here for [`Ledger::totals`].
    pub(crate) fn open(&self) -> Arc<Traffic> {
        let traffic = Arc::new(Traffic::default());
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.open.push(Arc::clone(&traffic));
        traffic
    }

    /// Bytes sent and received so far by every load connection this ledger counted, the
    /// closed ones included. Rare (once per sampling period): it locks.
    pub(crate) fn totals(&self) -> (u64, u64) {
        let mut inner = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let LedgerInner { open, closed } = &mut *inner;
        let mut totals = *closed;
        open.retain(|t| {
            let (sent, received) =
                (t.sent.load(Ordering::Relaxed), t.received.load(Ordering::Relaxed));
            totals.0 += sent;
            totals.1 += received;
            // Held only here: its connection is gone for good, and its count final.
            let gone = Arc::strong_count(t) == 1;
            if gone {
                closed.0 += sent;
                closed.1 += received;
            }
            !gone
        });
        totals
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.tcp).poll_read(cx, buf))?;
        this.count(|t| &t.received, buf.filled().len() - before);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let n = ready!(Pin::new(&mut this.tcp).poll_write(cx, buf))?;
        this.count(|t| &t.sent, n);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        let n = ready!(Pin::new(&mut this.tcp).poll_write_vectored(cx, bufs))?;
        this.count(|t| &t.sent, n);
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_shutdown(cx)
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Counted(s) => Pin::new(s).poll_read(cx, buf),
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
            Io::Counted(s) => Pin::new(s).poll_write(cx, buf),
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
            Io::Counted(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Counted(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Counted(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Counted(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_counted_socket_counts_what_it_reads_and_writes() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let echo = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 1000];
            s.read_exact(&mut buf).await.unwrap();
            s.write_all(&buf[..300]).await.unwrap();
        });
        let ledger = Ledger::default();
        let traffic = ledger.open();
        let mut io =
            Io::Counted(Socket::new(TcpStream::connect(addr).await.unwrap(), Some(traffic)));
        io.write_all(&[7u8; 1000]).await.unwrap();
        let mut back = vec![0u8; 300];
        io.read_exact(&mut back).await.unwrap();
        echo.await.unwrap();
        assert_eq!(ledger.totals(), (1000, 300));
        // Closed: its bytes stay counted, its counters are let go.
        drop(io);
        assert_eq!(ledger.totals(), (1000, 300));
        assert!(ledger.inner.lock().unwrap().open.is_empty());
        let more = ledger.open();
        more.sent.fetch_add(5, Ordering::Relaxed);
        assert_eq!(ledger.totals(), (1005, 300));
    }
}
