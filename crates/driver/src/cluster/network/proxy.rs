//! The emulator's TCP proxies: one listener per member's client URL and one per member's
//! peer URL, each forwarding to the port the member really listens on, every connection
//! carried across the links its two ends are joined by.
//!
//! The listeners are served on the first emulator thread, which hands each connection it
//! accepts to the emulator threads in turn: a connection's two directions then live on one
//! thread, timed by its one timer, for as long as it is open.

use std::cell::Cell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

use super::link::{Link, pump};
use super::stamp::StampedSocket;
use super::timer::Timer;

/// The two directions a proxied connection crosses: `up` from the side that connected,
/// `down` back to it.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub(crate) up: Arc<Link>,
    pub(crate) down: Arc<Link>,
}

/// Picks a proxied connection's route from the address it came from.
pub(crate) type RouteFn = dyn Fn(SocketAddr) -> Route + Send + Sync;

/// A connection accepted by a proxy, on its way to the emulator thread that carries it.
pub(crate) struct Accepted {
    inbound: std::net::TcpStream,
    from: SocketAddr,
    target: SocketAddr,
    route: Arc<RouteFn>,
}

/// Accepts connections on `listener` for ever, forwarding each to `target` across the route
/// `route` picks for it from the connecting side's address, on the thread of `threads` whose
/// turn it is (`turn`, shared by every listener of the thread). Ends when the runtime does.
pub(crate) async fn serve(
    listener: TcpListener,
    target: SocketAddr,
    route: Arc<RouteFn>,
    threads: Arc<[mpsc::UnboundedSender<Accepted>]>,
    turn: Rc<Cell<usize>>,
) {
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
        // Taken off this thread's reactor, to be registered with the carrying thread's.
        let Ok(inbound) = inbound.into_std() else { continue };
        let thread = turn.get() % threads.len();
        turn.set(thread + 1);
        let accepted = Accepted { inbound, from, target, route: Arc::clone(&route) };
        // A thread that is gone has been shut down: the connection closes with it.
        let _ = threads[thread].send(accepted);
    }
}

/// Carries an accepted connection to its target and back on this thread, emulator thread
/// number `thread` with timer `timer`, until either side closes it.
pub(crate) async fn carry(accepted: Accepted, timer: Rc<Timer>, thread: usize) {
    let Accepted { inbound, from, target, route } = accepted;
    let Route { up, down } = route(from);
    let Ok(inbound) = TcpStream::from_std(inbound) else { return };
    let outbound = match TcpStream::connect(target).await {
        Ok(s) => s,
        // The member is down (killed by a fault step): close the inbound connection, as a
        // refused connection would be seen through a real network.
        Err(_) => return,
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let (in_read, in_write) = inbound.into_split();
    let (out_read, out_write) = outbound.into_split();
    let (in_read, out_read) = (StampedSocket::new(in_read), StampedSocket::new(out_read));
    tokio::join!(
        pump(in_read, out_write, up, &timer, thread),
        pump(out_read, in_write, down, &timer, thread)
    );
}
