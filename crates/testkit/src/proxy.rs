//! What the testkit's HTTP/2 proxies in front of a real etcd ([`crate::HostileProxy`],
//! [`crate::Wiretap`]) share: a free loopback port, a thread and runtime of their own that
//! stop when the proxy is dropped, and for each client connection an HTTP/2 connection to
//! etcd, both handed to the proxy's own handling of the connection.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use h2::client::SendRequest;
use h2::server::Connection;
use tokio::net::{TcpListener, TcpStream};

/// A client's HTTP/2 connection to the proxy, and the proxy's to etcd (with etcd's address,
/// for the requests' authority).
pub(crate) struct Link {
    pub client: Connection<TcpStream, Bytes>,
    pub etcd: SendRequest<Bytes>,
    pub authority: SocketAddr,
}

/// A proxy's listener and thread, stopped when dropped.
#[derive(Debug)]
pub(crate) struct Proxy {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    /// Starts a proxy named `name` on a free loopback port in front of `upstream`
    /// (`http://HOST:PORT`), which `serve` serves each client connection of.
    ///
    /// # Panics
    /// When `upstream` is not `http://` and an address, or no port or thread can be had.
    pub(crate) fn start<S, F>(name: &str, upstream: &str, serve: S) -> Self
    where
        S: Fn(Link) -> F + Send + Sync + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        let upstream: SocketAddr = upstream
            .strip_prefix("http://")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("upstream {upstream:?} is not http://ADDRESS:PORT"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding a loopback port");
        listener.set_nonblocking(true).expect("a non-blocking listener");
        let addr = listener.local_addr().expect("the listener's address");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.to_owned())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a proxy's runtime");
                rt.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("a tokio listener");
                    tokio::select! {
                        () = accept(listener, upstream, serve) => {}
                        _ = stopped => {}
                    }
                });
            })
            .expect("a proxy's thread");
        Self { addr, stop: Some(stop), thread: Some(thread) }
    }

    /// Its endpoint, `http://127.0.0.1:PORT`.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept<S, F>(listener: TcpListener, upstream: SocketAddr, serve: S)
where
    S: Fn(Link) -> F + Send + Sync + 'static,
    F: Future<Output = ()> + Send + 'static,
{
    let serve = Arc::new(serve);
    while let Ok((socket, _)) = listener.accept().await {
        let _ = socket.set_nodelay(true);
        let serve = Arc::clone(&serve);
        tokio::spawn(async move {
            if let Some(link) = link(socket, upstream).await {
                serve(link).await;
            }
        });
    }
}

/// The handshakes of one client connection: a connection to etcd, then the client's.
async fn link(socket: TcpStream, upstream: SocketAddr) -> Option<Link> {
    let up = TcpStream::connect(upstream).await.ok()?;
    let _ = up.set_nodelay(true);
    let (etcd, up_conn) = h2::client::handshake(up).await.ok()?;
    tokio::spawn(async move {
        let _ = up_conn.await;
    });
    let client = h2::server::handshake(socket).await.ok()?;
    Some(Link { client, etcd, authority: upstream })
}
