//! The emulator's TCP proxies: one listener per member's client URL and one per member's
//! peer URL, each forwarding to the port the member really listens on, every connection
//! carried across the links its two ends are joined by.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};

use super::link::{Link, pump};

/// The two directions a proxied connection crosses: `up` from the side that connected,
/// `down` back to it.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) up: Arc<Link>,
    pub(crate) down: Arc<Link>,
}

/// Accepts connections on `listener` for ever, forwarding each to `target` across the route
/// `route` picks for it from the connecting side's address. Ends when the runtime does.
pub(crate) async fn serve<F>(listener: TcpListener, target: SocketAddr, route: F)
where
    F: Fn(SocketAddr) -> Route + Send + Sync + 'static,
{
    let route = Arc::new(route);
    loop {
        let (inbound, from) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors, mostly: the connecting side sees a refused or
                // stalled connection, as it would from an overloaded host.
                tracing::warn!("emulated link: accept failed: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let route = Arc::clone(&route);
        tokio::spawn(async move {
            let Route { up, down } = route(from);
            let outbound = match TcpStream::connect(target).await {
                Ok(s) => s,
                // The member is down (killed by a fault step): close the inbound connection,
                // as a refused connection would be seen through a real network.
                Err(_) => return,
            };
            let _ = inbound.set_nodelay(true);
            let _ = outbound.set_nodelay(true);
            let (in_read, in_write) = inbound.into_split();
            let (out_read, out_write) = outbound.into_split();
            tokio::join!(pump(in_read, out_write, up), pump(out_read, in_write, down));
        });
    }
}
