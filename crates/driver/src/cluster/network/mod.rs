//! The emulated network of a local cluster: a userspace TCP proxy in front of every
//! member's client and peer ports, on threads of its own, carrying each connection across
//! the links between its two ends ([`link`]). The members advertise the proxies' addresses
//! and listen on ports nobody else is told of, so every client-to-member and
//! member-to-member byte crosses an emulated link. Without a network to emulate, a local
//! cluster has no proxy at all.
//!
//! The kernel's netem would need root and a network namespace; a proxy in userspace works
//! anywhere, at the cost of one extra loopback hop per link (`benches/README.md` measures
//! what it adds).
//!
//! Connections are spread over a few emulator threads ([`default_threads`]), each a
//! current-thread runtime with one timer ([`timer`]) for every delay line on it: under load
//! one thread alone fell behind its deadlines by milliseconds, one timer per direction of
//! each connection cost a wake-up per chunk. The threads run real-time when the process
//! may ([`run_ahead`]).

mod link;
mod owner;
mod proxy;
mod stamp;
mod timer;

use std::cell::Cell;
use std::net::{SocketAddr, TcpListener};
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use link::Link;
pub(crate) use link::LinkParams;
use proxy::{Accepted, Route, RouteFn};
use timer::Timer;

/// How many emulator threads a network gets unless told otherwise: two, or one on a machine
/// with one core. A second thread keeps the delay lines on time while the first waits for
/// the CPU (the members and the client compete for it); more than the cores would only
/// take turns.
pub(crate) fn default_threads() -> usize {
    crate::affinity::process_cpu_count().min(2)
}

/// Where one member is reached and where it really listens.
#[derive(Debug)]
pub(crate) struct MemberPorts {
    /// Bound for the proxy at the member's advertised client URL.
    client_proxy: TcpListener,
    /// Where the member serves clients.
    client: SocketAddr,
    /// Bound for the proxy at the member's advertised peer URL.
    peer_proxy: TcpListener,
    /// Where the member serves its peers.
    peer: SocketAddr,
}

impl MemberPorts {
    /// Binds the proxies' two ports for a member that listens on loopback `client_port` and
    /// `peer_port`; they stay bound (so no other process can take them) until the emulator
    /// serves them.
    pub(crate) fn bind(client_port: u16, peer_port: u16) -> std::io::Result<Self> {
        let loopback = |port| SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
        Ok(Self {
            client_proxy: TcpListener::bind(loopback(0))?,
            client: loopback(client_port),
            peer_proxy: TcpListener::bind(loopback(0))?,
            peer: loopback(peer_port),
        })
    }

    /// The URLs the member advertises: its proxies' (client with `scheme`, peer in http).
    pub(crate) fn urls(&self, scheme: &str) -> std::io::Result<(String, String)> {
        Ok((
            format!("{scheme}://{}", self.client_proxy.local_addr()?),
            format!("http://{}", self.peer_proxy.local_addr()?),
        ))
    }
}

/// A change to the links of one member (or of every member), at run time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LinkChange {
    /// Hold every byte between the member and its peers, both ways; connections stay open.
    Partition,
    /// Undo a partition.
    Heal,
    /// Add this much one-way latency to the member's links (peers and client), both ways;
    /// zero removes it.
    Delay(std::time::Duration),
    /// Cap the line rate of the member's links (bytes/s), both ways; `None` removes the cap.
    Bandwidth(Option<u64>),
}

/// What a fault has changed on one directed link, on top of its configured settings.
#[derive(Debug, Clone, Copy, Default)]
struct Overlay {
    held: bool,
    extra_latency: std::time::Duration,
    cap: Option<u64>,
}

impl Overlay {
    fn over(&self, base: LinkParams) -> LinkParams {
        LinkParams {
            latency: base.latency + self.extra_latency,
            jitter: base.jitter,
            bandwidth: match (base.bandwidth, self.cap) {
                (Some(b), Some(c)) => Some(b.min(c)),
                (b, c) => b.or(c),
            },
            held: self.held,
        }
    }
}

/// The running emulator: links between the client (endpoint 0) and the members (endpoint
/// `1 + i`), and the proxies. Dropping it closes every proxied connection.
pub(crate) struct Emulator {
    /// `links[from][to]`: one direction between two endpoints (`None` on the diagonal).
    links: Vec<Vec<Option<Arc<Link>>>>,
    base: Vec<Vec<LinkParams>>,
    overlay: Mutex<Vec<Vec<Overlay>>>,
    /// Set to stop every emulator thread.
    stop: tokio::sync::watch::Sender<bool>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// The emulator threads' kernel ids (Linux): their CPU is read apart from the client's.
    tids: Vec<i32>,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator").field("endpoints", &self.links.len()).finish_non_exhaustive()
    }
}

impl Emulator {
    /// Starts proxies for `members` with the settings `params[from][to]` (endpoint 0 is the
    /// client, `1 + i` member i), their connections carried by `threads` emulator threads
    /// (at least one), which run on `cpus` (empty: any). `pids` says, when a peer connects,
    /// which process each member is now (members restart), so that its connection crosses
    /// the right link.
    ///
    /// # Errors
    /// When a thread, its runtime or its timer cannot be started.
    pub(crate) fn start(
        params: Vec<Vec<LinkParams>>,
        members: Vec<MemberPorts>,
        pids: Arc<dyn Fn() -> Vec<Option<u32>> + Send + Sync>,
        threads: usize,
        cpus: Vec<usize>,
    ) -> std::io::Result<Self> {
        let n = params.len();
        assert_eq!(n, members.len() + 1, "one row of link settings per endpoint");
        let threads = threads.max(1);
        let links: Vec<Vec<Option<Arc<Link>>>> = (0..n)
            .map(|from| {
                (0..n)
                    .map(|to| (from != to).then(|| Arc::new(Link::new(params[from][to], threads))))
                    .collect()
            })
            .collect();
        let link = |from: usize, to: usize| {
            Arc::clone(links[from][to].as_ref().expect("off the diagonal"))
        };
        let mut proxies = Vec::new();
        for (i, m) in members.into_iter().enumerate() {
            let member = 1 + i;
            m.client_proxy.set_nonblocking(true)?;
            m.peer_proxy.set_nonblocking(true)?;
            let client_route = Route { up: link(0, member), down: link(member, 0) };
            proxies.push((
                m.client_proxy,
                m.client,
                Arc::new(move |_| client_route.clone()) as Arc<RouteFn>,
            ));
            // Peers: the route depends on who connected. An unknown sender (gone before it
            // could be looked up) is taken for the member itself's nearest peer: the first.
            let to_port = m.peer_proxy.local_addr()?.port();
            let from_links: Vec<Route> = (1..n)
                .filter(|&p| p != member)
                .map(|p| Route { up: link(p, member), down: link(member, p) })
                .collect();
            let peers: Vec<usize> = (1..n).filter(|&p| p != member).collect();
            let pids = Arc::clone(&pids);
            let route = move |from: SocketAddr| {
                let pids = pids();
                let sender = owner::connecting_process(from, to_port, &pids).map(|i| 1 + i);
                let k = sender.and_then(|s| peers.iter().position(|&p| p == s)).unwrap_or(0);
                from_links[k].clone()
            };
            proxies.push((m.peer_proxy, m.peer, Arc::new(route) as Arc<RouteFn>));
        }
        let (stop, _) = tokio::sync::watch::channel(false);
        let (senders, mut inboxes): (Vec<_>, Vec<_>) =
            (0..threads).map(|_| tokio::sync::mpsc::unbounded_channel::<Accepted>()).unzip();
        // The first thread serves the listeners and hands out what they accept.
        let mut listening = Some(Listening { proxies, threads: senders.into() });
        let (started, starts) = std::sync::mpsc::channel();
        let mut emulator = Self {
            base: params,
            overlay: Mutex::new(vec![vec![Overlay::default(); n]; n]),
            links,
            stop,
            threads: Mutex::new(Vec::new()),
            tids: Vec::new(),
        };
        for (thread, inbox) in inboxes.drain(..).enumerate() {
            let thread = Thread {
                index: thread,
                inbox,
                listening: listening.take(),
                stop: emulator.stop.subscribe(),
                cpus: cpus.clone(),
            };
            let started = started.clone();
            let handle = std::thread::Builder::new()
                .name(format!("etcdlat-network-{}", thread.index))
                .spawn(move || thread.run(&started));
            match handle {
                Ok(h) => emulator.threads.get_mut().unwrap_or_else(PoisonError::into_inner).push(h),
                Err(e) => return Err(e), // `emulator` dropped: the started threads stop.
            }
        }
        drop(started);
        for _ in 0..threads {
            match starts.recv() {
                Ok(Ok(tid)) => emulator.tids.extend(tid),
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(std::io::Error::other("an emulator thread ended at start")),
            }
        }
        Ok(emulator)
    }

    /// The emulator threads' kernel ids (Linux): every proxied byte is carried on them, so
    /// their CPU is the network's, not the client's.
    pub(crate) fn thread_ids(&self) -> &[i32] {
        &self.tids
    }

    /// Changes the links of `member` (0-based), or of every member when `None`.
    pub(crate) fn change(&self, member: Option<usize>, change: LinkChange) {
        let mut overlay = self.overlay.lock().unwrap_or_else(PoisonError::into_inner);
        let n = self.links.len();
        for from in 0..n {
            for to in 0..n {
                if from == to {
                    continue;
                }
                let touches = member.is_none_or(|m| from == 1 + m || to == 1 + m);
                let is_peer = from != 0 && to != 0;
                let o = &mut overlay[from][to];
                match change {
                    LinkChange::Partition if touches && is_peer => o.held = true,
                    LinkChange::Heal if touches => o.held = false,
                    LinkChange::Delay(d) if touches => o.extra_latency = d,
                    LinkChange::Bandwidth(cap) if touches => o.cap = cap,
                    _ => continue,
                }
                if let Some(link) = &self.links[from][to] {
                    link.set(o.over(self.base[from][to]));
                }
            }
        }
    }

    /// Every directed link: from, to (0 the client, `1 + i` member i), its settings now, the
    /// bytes it has delivered and how late ([`LinkState`]).
    pub(crate) fn links(&self) -> Vec<LinkState> {
        let mut out = Vec::new();
        for (from, row) in self.links.iter().enumerate() {
            for (to, link) in row.iter().enumerate() {
                if let Some(link) = link {
                    out.push(LinkState {
                        from,
                        to,
                        params: link.params(),
                        bytes: link.bytes(),
                        late_us: link.lateness(),
                    });
                }
            }
        }
        out
    }
}

/// A proxy's listener, where it forwards to and how it picks a connection's route.
type Proxy = (TcpListener, SocketAddr, Arc<RouteFn>);

/// What the first emulator thread serves besides its connections: the proxies, and where
/// to hand what they accept (every thread's inbox, its own included).
struct Listening {
    proxies: Vec<Proxy>,
    threads: Arc<[tokio::sync::mpsc::UnboundedSender<Accepted>]>,
}

/// One emulator thread, before it runs.
struct Thread {
    /// Its number, from 0.
    index: usize,
    /// The connections it is handed to carry.
    inbox: tokio::sync::mpsc::UnboundedReceiver<Accepted>,
    listening: Option<Listening>,
    stop: tokio::sync::watch::Receiver<bool>,
    /// The CPUs it runs on; empty: the process's.
    cpus: Vec<usize>,
}

impl Thread {
    /// Runs on the thread: says on `started` that it has (with its kernel id on Linux) or
    /// why it cannot, then carries connections until the emulator stops.
    fn run(self, started: &std::sync::mpsc::Sender<std::io::Result<Option<i32>>>) {
        if let Err(e) = crate::affinity::pin_own_or_process(&self.cpus) {
            let _ = started.send(Err(e));
            return;
        }
        #[cfg(target_os = "linux")]
        run_ahead(self.index);
        #[cfg(target_os = "linux")]
        let tid = Some(nix::unistd::gettid().as_raw());
        #[cfg(not(target_os = "linux"))]
        let tid = None;
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(r) => r,
            Err(e) => {
                let _ = started.send(Err(e));
                return;
            }
        };
        let Self { index, mut inbox, listening, mut stop, cpus: _ } = self;
        let local = tokio::task::LocalSet::new();
        local.block_on(&runtime, async move {
            let timer = match Timer::new() {
                Ok(t) => t,
                Err(e) => {
                    let _ = started.send(Err(e));
                    return;
                }
            };
            tokio::task::spawn_local({
                let timer = Rc::clone(&timer);
                async move {
                    if let Err(e) = timer.run().await {
                        tracing::warn!("emulated network: its timer failed ({e}), it stalls");
                    }
                }
            });
            if let Some(Listening { proxies, threads }) = listening {
                let turn = Rc::new(Cell::new(0));
                for (listener, target, route) in proxies {
                    match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => {
                            let (threads, turn) = (Arc::clone(&threads), Rc::clone(&turn));
                            tokio::task::spawn_local(proxy::serve(l, target, route, threads, turn));
                        }
                        Err(e) => tracing::warn!("emulated link: cannot listen: {e}"),
                    }
                }
            }
            tokio::task::spawn_local(async move {
                while let Some(accepted) = inbox.recv().await {
                    tokio::task::spawn_local(proxy::carry(accepted, Rc::clone(&timer), index));
                }
            });
            let _ = started.send(Ok(tid));
            let _ = stop.wait_for(|stopped| *stopped).await;
        });
        // Dropping the LocalSet here cancels every connection's tasks and closes them.
        drop(local);
    }
}

/// Schedules the calling emulator thread real-time (`SCHED_FIFO`, at the lowest real-time
/// priority), so that a delay line's deadline wakes it ahead of the members' and the
/// client's threads, as the kernel's own network runs ahead of processes. At ordinary
/// priority, under load, an on-time wake-up waited milliseconds for a core that etcd and
/// the clients kept busy (`benches/README.md`). It takes root or `CAP_SYS_NICE`; without
/// them the thread stays ordinary, and the report says so
/// (`target.network.emulator.realtime`). A wake-up's work is short (forward what is due,
/// sleep again), and the kernel keeps 5% of every second for ordinary threads whatever
/// real-time ones do.
#[cfg(target_os = "linux")]
fn run_ahead(thread: usize) {
    use thread_priority::{
        RealtimeThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
        set_thread_priority_and_policy, thread_native_id,
    };
    let fifo = ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo);
    if let Err(e) = set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, fifo) {
        tracing::debug!(thread, error = ?e, "emulated network: its thread stays at ordinary priority");
    }
}

/// One direction of a link as [`Emulator::links`] sees it.
#[derive(Debug, Clone)]
pub(crate) struct LinkState {
    /// Where from: 0 the client, `1 + i` member i.
    pub(crate) from: usize,
    /// Where to.
    pub(crate) to: usize,
    /// Its settings now.
    pub(crate) params: LinkParams,
    /// Bytes delivered so far.
    pub(crate) bytes: u64,
    /// How late its chunks were delivered so far, microseconds.
    pub(crate) late_us: hdrhistogram::Histogram<u64>,
}

impl Emulator {
    /// Stops every proxy and closes every connection through them; also done on drop. The
    /// local cluster calls it when it shuts down, whoever else still holds the emulator.
    pub(crate) fn shutdown(&self) {
        self.stop.send_replace(true);
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            let _ = thread.join();
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{Ipv4Addr, TcpStream};
    use std::time::{Duration, Instant};

    use super::*;

    #[cfg(target_os = "linux")]
    #[test]
    fn the_default_thread_count_is_the_processs_not_a_pinned_callers() {
        // Asked from a thread kept to one CPU, as a binary's `--pin-cpus` threads ask.
        let first = *crate::affinity::process_cpus().first().unwrap();
        let from_pinned = std::thread::spawn(move || {
            crate::affinity::pin_current_thread(&[first]).unwrap();
            default_threads()
        });
        let expected = crate::affinity::process_cpus().len().min(2);
        assert_eq!(from_pinned.join().unwrap(), expected);
    }

    fn echo_server() -> SocketAddr {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            for s in l.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut s = s;
                    let mut buf = [0u8; 4096];
                    while let Ok(n) = s.read(&mut buf) {
                        if n == 0 || s.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    fn bind() -> TcpListener {
        TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap()
    }

    /// An emulator for one member, every link with `p`, on `threads` threads, in front of
    /// an echo server; and the member's client proxy address.
    fn one_member(p: LinkParams, threads: usize) -> (Emulator, SocketAddr) {
        one_member_on(p, threads, Vec::new()).unwrap()
    }

    /// [`one_member`] with its threads on `cpus`.
    fn one_member_on(
        p: LinkParams,
        threads: usize,
        cpus: Vec<usize>,
    ) -> std::io::Result<(Emulator, SocketAddr)> {
        let echo = echo_server();
        let members = vec![MemberPorts {
            client_proxy: bind(),
            client: echo,
            peer_proxy: bind(),
            peer: echo,
        }];
        let proxy = members[0].client_proxy.local_addr().unwrap();
        let em =
            Emulator::start(vec![vec![p; 2]; 2], members, Arc::new(|| vec![None]), threads, cpus)?;
        Ok((em, proxy))
    }

    #[test]
    fn its_threads_run_on_the_cpus_they_are_given() {
        let (em, proxy) = one_member_on(LinkParams::default(), 2, vec![0]).unwrap();
        for tid in em.thread_ids() {
            let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
            let allowed = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"));
            assert_eq!(allowed.map(str::trim), Some("0"), "thread {tid}");
        }
        ping(&mut TcpStream::connect(proxy).unwrap(), b"ping");
        // A CPU the machine does not have: the start fails, naming it.
        let e = one_member_on(LinkParams::default(), 1, vec![1000]).err().unwrap();
        assert!(e.to_string().contains("running on CPUs 1000"), "{e}");
    }

    /// One round trip of `message` on `s`.
    fn ping(s: &mut TcpStream, message: &[u8]) {
        s.write_all(message).unwrap();
        let mut back = vec![0u8; message.len()];
        s.read_exact(&mut back).unwrap();
        assert_eq!(back, message);
    }

    #[test]
    fn a_round_trip_through_the_client_link_takes_twice_its_latency() {
        let latency = Duration::from_millis(5);
        let (em, proxy) = one_member(LinkParams { latency, ..LinkParams::default() }, 1);
        let mut s = TcpStream::connect(proxy).unwrap();
        s.set_nodelay(true).unwrap();
        let mut rtts = Vec::new();
        for _ in 0..20 {
            let t0 = Instant::now();
            s.write_all(b"ping").unwrap();
            let mut buf = [0u8; 4];
            s.read_exact(&mut buf).unwrap();
            rtts.push(t0.elapsed());
        }
        rtts.sort();
        // Each hop may leave up to its timer's head start (at most 200 µs) early.
        let head_start = Duration::from_micros(200);
        assert!(rtts[0] + 2 * head_start >= 2 * latency, "{rtts:?}");
        em.change(Some(0), LinkChange::Delay(Duration::from_millis(10)));
        let t0 = Instant::now();
        s.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        assert!(t0.elapsed() + 2 * head_start >= Duration::from_millis(30));
        let links = em.links();
        assert!(links.iter().any(|l| l.from == 0 && l.to == 1 && l.bytes == 21 * 4));
        assert_eq!(links.iter().map(|l| l.late_us.len()).sum::<u64>(), 2 * 21, "every chunk timed");
        drop(em);
        // The proxy is gone with the emulator.
        let mut buf = [0u8; 4];
        assert!(s.write_all(b"ping").and_then(|()| s.read_exact(&mut buf)).is_err());
    }

    #[test]
    fn connections_are_spread_over_the_threads_and_their_lateness_read_together() {
        let (em, proxy) = one_member(LinkParams::default(), 2);
        let tids = em.thread_ids().to_vec();
        assert_eq!(tids.len(), 2);
        assert_ne!(tids[0], tids[1]);
        let mut streams: Vec<TcpStream> =
            (0..6).map(|_| TcpStream::connect(proxy).unwrap()).collect();
        for s in &mut streams {
            s.set_nodelay(true).unwrap();
            ping(s, b"ping");
        }
        let up = em.links[0][1].as_ref().unwrap();
        for thread in 0..2 {
            assert!(up.timed_on(thread) >= 1, "thread {thread} carried none of 6 connections");
        }
        let counted: u64 = em.links().iter().map(|l| l.late_us.len()).sum();
        assert_eq!(counted, 2 * 6, "every chunk timed, on either thread");
    }
}
