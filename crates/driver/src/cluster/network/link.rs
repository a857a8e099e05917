//! One direction of an emulated link, and the delay line that carries one direction of one
//! TCP connection across it.
//!
//! The model is a serial line followed by a propagation delay, as netem's rate and delay
//! together: a chunk that reached the proxy's socket at `t` (the kernel's receive stamp,
//! [`super::stamp`]; when its thread read it, without one) waits for the line to be free,
//! takes `bytes / bandwidth` to go out (the line is shared by every connection on the link,
//! so two transfers split it), then arrives `latency ± jitter` later. A connection's bytes
//! never overtake each other: a chunk whose jitter would land it before the previous one
//! arrives with it instead.
//!
//! A link's connections may be carried by several emulator threads: what they share (the
//! settings, the line, the byte count) is atomic or locked only where a rate is set, and
//! each thread records lateness into a histogram of its own, merged when it is read.

use std::rc::Rc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, watch};

use super::stamp::{CHUNK_BYTES, StampedRead};
use super::timer::Timer;

/// Below this much room the read buffer is replaced by a fresh one of [`CHUNK_BYTES`]: the
/// chunks read before still hold the old one until delivered, so a buffer is allocated per
/// 64 KiB read, not per chunk.
const MIN_READ_ROOM_BYTES: usize = 16 * 1024;

/// Chunks read ahead of delivery per direction of a connection: with 64 KiB chunks at most
/// 4 MiB, about what a TCP send buffer holds. Past it the reader stops, and TCP's flow
/// control pushes back on the sender as a slow network would.
const QUEUE_CHUNKS: usize = 64;

/// What one direction of a link does to the bytes that cross it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct LinkParams {
    /// One-way delay.
    pub(crate) latency: Duration,
    /// Each chunk's delay is `latency` plus a uniform draw in `[-jitter, +jitter]` (not
    /// below zero, and never reordering a connection's bytes).
    pub(crate) jitter: Duration,
    /// Line rate in bytes per second; `None`: as fast as loopback.
    pub(crate) bandwidth: Option<u64>,
    /// Partitioned: nothing is read or delivered until this is cleared; connections stay
    /// open and what was sent is delivered after (as TCP retransmits across a healed
    /// partition). Dropping bytes instead would corrupt the byte stream, which a real
    /// network never does to TCP.
    pub(crate) held: bool,
}

impl From<etcdlat_core::LinkSettings> for LinkParams {
    fn from(s: etcdlat_core::LinkSettings) -> Self {
        Self { latency: s.latency, jitter: s.jitter, bandwidth: s.bandwidth, held: false }
    }
}

/// One direction of a link between two endpoints (the client and a member, or two
/// members), shared by every connection that crosses it: their bytes share its line rate
/// and are counted together.
#[derive(Debug)]
pub(crate) struct Link {
    params: watch::Sender<LinkParams>,
    /// When the line is next free to send (bandwidth only).
    line_free: Mutex<Instant>,
    bytes: AtomicU64,
    /// Seeds each connection's jitter draws apart (reproducible, unlike the OS's entropy).
    connections: AtomicU64,
    /// How late each chunk was delivered after its intended arrival, microseconds (0 when on
    /// time or early): the emulator's own error. Not while a partition held it. One
    /// histogram per emulator thread, so that threads never wait for each other's lock.
    late: Box<[Mutex<Histogram<u64>>]>,
}

impl Link {
    /// A link with `params`, carried by `threads` emulator threads (numbered from 0).
    pub(crate) fn new(params: LinkParams, threads: usize) -> Self {
        let histogram =
            || Histogram::new_with_bounds(1, 3_600_000_000, 2).expect("valid histogram bounds");
        Self {
            params: watch::Sender::new(params),
            line_free: Mutex::new(Instant::now()),
            bytes: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            late: (0..threads.max(1)).map(|_| Mutex::new(histogram())).collect(),
        }
    }

    /// The link's settings now.
    pub(crate) fn params(&self) -> LinkParams {
        *self.params.borrow()
    }

    /// Changes the link's settings; connections on it see the change from their next chunk
    /// (a partition also stops chunks already read).
    pub(crate) fn set(&self, params: LinkParams) {
        self.params.send_replace(params);
    }

    /// Bytes delivered across the link so far.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// How late its chunks have been delivered so far, on every thread (microseconds).
    pub(crate) fn lateness(&self) -> Histogram<u64> {
        let lock = |h: &Mutex<Histogram<u64>>| {
            h.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
        };
        let mut all = lock(&self.late[0]);
        for thread in &self.late[1..] {
            // Same bounds: adding cannot fail.
            let _ = all.add(lock(thread));
        }
        all
    }

    /// How many chunks emulator thread `thread` has timed on the link.
    #[cfg(test)]
    pub(crate) fn timed_on(&self, thread: usize) -> u64 {
        self.late[thread].lock().unwrap_or_else(std::sync::PoisonError::into_inner).len()
    }

    fn record_late(&self, thread: usize, dues: &[Instant], delivered: Instant) {
        let mut late = self.late[thread].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        for due in dues {
            let us = delivered.saturating_duration_since(*due).as_micros();
            late.saturating_record(u64::try_from(us).unwrap_or(u64::MAX));
        }
    }

    /// Reserves the line for `len` bytes that are ready at `now`; returns when the last of
    /// them has left.
    fn transmit(&self, now: Instant, len: usize, bandwidth: Option<u64>) -> Instant {
        let Some(rate) = bandwidth.filter(|r| *r > 0) else { return now };
        let on_line = Duration::from_secs_f64(len as f64 / rate as f64);
        let mut free = self.line_free.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = (*free).max(now);
        *free = start + on_line;
        *free
    }
}

/// Carries one direction of one connection across `link` until the source closes (then
/// the destination's write side is shut down after the last byte arrives) or either side
/// fails, timed by `timer`, the timer of emulator thread number `thread`.
pub(crate) async fn pump<R, W>(
    mut from: R,
    mut to: W,
    link: std::sync::Arc<Link>,
    timer: &Rc<Timer>,
    thread: usize,
) where
    R: StampedRead,
    W: AsyncWrite + Unpin,
{
    let (queue, mut arrivals) = mpsc::channel::<(Instant, Bytes)>(QUEUE_CHUNKS);
    let reading = std::sync::Arc::clone(&link);
    // `move`: the reader owns `queue`, so that its end closes the queue and the writer, having
    // delivered the rest, shuts the destination down.
    let reader = async move {
        let link = reading;
        let mut params = link.params.subscribe();
        let mut rng = StdRng::seed_from_u64(link.connections.fetch_add(1, Ordering::Relaxed));
        let mut buf = BytesMut::new();
        let mut last_arrival = Instant::now();
        loop {
            if params.wait_for(|p| !p.held).await.is_err() {
                return;
            }
            if buf.capacity() < MIN_READ_ROOM_BYTES {
                buf = BytesMut::with_capacity(CHUNK_BYTES);
            }
            let ready = Instant::now();
            let stamp = match from.read_stamped(&mut buf).await {
                Ok((0, _)) | Err(_) => return,
                Ok((_, stamp)) => stamp,
            };
            // The bytes left their sender when the kernel took them, not when this thread
            // got round to reading them: its wake-up is spent inside the link's latency
            // ([`super::stamp`]). Not before `ready`, though: bytes that waited while the
            // reader was held back (a full queue, a partition) are sent from when it could
            // read again, as a real sender's would.
            let now = Instant::now();
            let came = stamp.map_or(now, |s| s.clamp(ready, now));
            let chunk = buf.split().freeze();
            let p = *params.borrow_and_update();
            let sent = link.transmit(came, chunk.len(), p.bandwidth);
            let arrival = (sent + delay(&p, &mut rng)).max(last_arrival);
            last_arrival = arrival;
            if queue.send((arrival, chunk)).await.is_err() {
                return;
            }
        }
    };
    let writer = async {
        let mut params = link.params.subscribe();
        let mut sleeper = timer.sleeper();
        // A chunk taken off the queue that is not due yet, to go first next time.
        let mut next: Option<(Instant, Bytes)> = None;
        // Chunks that fall due together, copied into one write, and when each was due.
        let mut batch = BytesMut::new();
        let mut dues = Vec::new();
        loop {
            let (arrival, chunk) = match next.take() {
                Some(queued) => queued,
                None => match arrivals.recv().await {
                    Some(queued) => queued,
                    None => break,
                },
            };
            sleeper.sleep_until(arrival).await;
            let partitioned = params.borrow().held;
            if params.wait_for(|p| !p.held).await.is_err() {
                return;
            }
            dues.push(arrival);
            // What is due by now, or within the timer's head start, goes out with this chunk
            // in one write: every write and timer costs the proxy's thread a wake-up, and a
            // request's HEADERS and DATA frames often come as two chunks microseconds apart
            // (waking again for the second would deliver it late by a wake-up, not on time).
            let now = Instant::now() + sleeper.timer().head_start();
            while let Ok((due, more)) = arrivals.try_recv() {
                if due > now {
                    next = Some((due, more));
                    break;
                }
                if batch.is_empty() {
                    batch.extend_from_slice(&chunk);
                }
                batch.extend_from_slice(&more);
                dues.push(due);
            }
            let out: &[u8] = if batch.is_empty() { &chunk } else { &batch };
            if !partitioned {
                // As it is handed to the kernel, which delivers on loopback at once.
                link.record_late(thread, &dues, Instant::now());
            }
            if to.write_all(out).await.is_err() {
                return;
            }
            link.bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
            batch.clear();
            dues.clear();
        }
        let _ = to.shutdown().await;
    };
    // The reader ends first on EOF (dropping `queue` lets the writer drain and shut down);
    // a failed write drops `arrivals`, which ends the reader at its next chunk.
    tokio::join!(reader, writer);
}

/// One chunk's propagation delay.
fn delay(p: &LinkParams, rng: &mut StdRng) -> Duration {
    if p.jitter.is_zero() {
        return p.latency;
    }
    let j = p.jitter.as_secs_f64();
    let d = p.latency.as_secs_f64() + rng.random_range(-j..=j);
    Duration::from_secs_f64(d.max(0.0))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio::io::AsyncReadExt;

    use super::*;
    use crate::cluster::network::stamp::stamped_pair;
    use crate::cluster::network::timer::{MAX_HEAD_START, on_a_timer};

    #[test]
    fn the_line_is_shared_and_serial() {
        let link = Link::new(LinkParams::default(), 1);
        let t0 = Instant::now();
        // 1 MB at 1 MB/s: one second on the line; a second transfer ready at once queues.
        let first = link.transmit(t0, 1_000_000, Some(1_000_000));
        let second = link.transmit(t0, 500_000, Some(1_000_000));
        assert_eq!(first - t0, Duration::from_secs(1));
        assert_eq!(second - t0, Duration::from_millis(1500));
        // Without a rate the line never queues.
        assert_eq!(link.transmit(t0, 1_000_000, None), t0);
    }

    #[test]
    fn jitter_stays_within_its_bounds_and_never_below_zero() {
        let mut rng = StdRng::seed_from_u64(7);
        let p = LinkParams {
            latency: Duration::from_millis(1),
            jitter: Duration::from_millis(2),
            ..LinkParams::default()
        };
        let draws: Vec<Duration> = (0..1000).map(|_| delay(&p, &mut rng)).collect();
        assert!(draws.iter().all(|d| *d <= Duration::from_millis(3)));
        assert!(draws.iter().any(|d| d.is_zero()), "latency - jitter < 0 clamps to 0");
        assert!(draws.iter().any(|d| *d > Duration::from_millis(2)));
    }

    /// Pumps from a new in-memory pipe across `link` on `timer` (as thread `thread`): the
    /// sending end, the receiving end.
    fn pipe(
        link: &Arc<Link>,
        timer: &Rc<Timer>,
        thread: usize,
        capacity: usize,
    ) -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
        let (client, proxy_in) = tokio::io::duplex(capacity);
        let (proxy_out, server) = tokio::io::duplex(capacity);
        let (link, timer) = (Arc::clone(link), Rc::clone(timer));
        tokio::task::spawn_local(async move {
            pump(proxy_in, proxy_out, link, &timer, thread).await;
        });
        (client, server)
    }

    #[test]
    fn bytes_arrive_in_order_after_the_latency_and_are_counted() {
        on_a_timer(|timer| async move {
            let link = Arc::new(Link::new(
                LinkParams {
                    latency: Duration::from_millis(20),
                    jitter: Duration::from_millis(15),
                    ..LinkParams::default()
                },
                1,
            ));
            let (mut client, mut server) = pipe(&link, &timer, 0, 1 << 20);
            let sent: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
            let t0 = Instant::now();
            let writing = {
                let sent = sent.clone();
                tokio::task::spawn_local(async move {
                    for piece in sent.chunks(1000) {
                        client.write_all(piece).await.unwrap();
                        tokio::task::yield_now().await;
                    }
                    client.shutdown().await.unwrap();
                })
            };
            let mut first = [0u8; 1];
            server.read_exact(&mut first).await.unwrap();
            assert!(t0.elapsed() >= Duration::from_millis(5), "latency - jitter is 5 ms");
            let mut got = first.to_vec();
            server.read_to_end(&mut got).await.unwrap();
            writing.await.unwrap();
            assert_eq!(got, sent, "bytes reordered or lost");
            assert_eq!(link.bytes(), sent.len() as u64);
        });
    }

    #[test]
    fn connections_sharing_a_timer_keep_their_order_under_jitter() {
        // Twenty connections on one link and one timer, jitter wider than the latency: the
        // timer's heap mixes their deadlines, and each connection still gets its bytes in
        // order, whole.
        on_a_timer(|timer| async move {
            let link = Arc::new(Link::new(
                LinkParams {
                    latency: Duration::from_millis(2),
                    jitter: Duration::from_millis(3),
                    ..LinkParams::default()
                },
                1,
            ));
            let connections: Vec<_> = (0..20u32)
                .map(|c| {
                    let (mut client, mut server) = pipe(&link, &timer, 0, 1 << 16);
                    let sent: Vec<u8> = (0..20_000u32).map(|i| ((i * 7 + c) % 253) as u8).collect();
                    let writing = {
                        let sent = sent.clone();
                        tokio::task::spawn_local(async move {
                            for piece in sent.chunks(100 + c as usize) {
                                client.write_all(piece).await.unwrap();
                                tokio::task::yield_now().await;
                            }
                            client.shutdown().await.unwrap();
                        })
                    };
                    let reading = tokio::task::spawn_local(async move {
                        let mut got = Vec::new();
                        server.read_to_end(&mut got).await.unwrap();
                        got
                    });
                    (sent, writing, reading)
                })
                .collect();
            let mut total = 0;
            for (c, (sent, writing, reading)) in connections.into_iter().enumerate() {
                writing.await.unwrap();
                let got = reading.await.unwrap();
                assert!(got == sent, "connection {c}: bytes reordered or lost");
                total += sent.len() as u64;
            }
            assert_eq!(link.bytes(), total);
        });
    }

    #[test]
    fn chunks_due_together_on_many_connections_go_out_on_few_wake_ups() {
        // 100 connections on one 2 ms link, a chunk written on each at once, in bursts (as
        // a busy client's connections are): a timer wake-up forwards what is due on all of
        // them. With a timer per connection the thread woke once per chunk and, under load,
        // fell behind its deadlines by milliseconds (how late is the benchmark's figure,
        // benches/README.md: a debug build on a shared machine says little about it).
        on_a_timer(|timer| async move {
            let latency = Duration::from_millis(2);
            let link = Arc::new(Link::new(LinkParams { latency, ..LinkParams::default() }, 1));
            let (mut clients, servers): (Vec<_>, Vec<_>) =
                (0..100).map(|_| pipe(&link, &timer, 0, 1 << 16)).unzip();
            let request = b"a request of some sixty bytes, as a small etcd put is";
            let bursts = 20;
            let reading: Vec<_> = servers
                .into_iter()
                .map(|mut server| {
                    tokio::task::spawn_local(async move {
                        let mut got = vec![0u8; request.len() * bursts];
                        server.read_exact(&mut got).await.unwrap();
                        got
                    })
                })
                .collect();
            let expiries = timer.expiries();
            for _ in 0..bursts {
                for client in &mut clients {
                    client.write_all(request).await.unwrap();
                }
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            for r in reading {
                assert_eq!(r.await.unwrap(), request.repeat(bursts));
            }
            let chunks = link.lateness().len();
            let wakeups = timer.expiries() - expiries;
            // One wake-up per chunk, as a timer per connection had, would be 1 to 1.
            assert!(wakeups * 4 <= chunks, "{wakeups} wake-ups for {chunks} chunks");
        });
    }

    #[test]
    fn a_held_link_delivers_nothing_until_released() {
        on_a_timer(|timer| async move {
            let link = Arc::new(Link::new(LinkParams { held: true, ..LinkParams::default() }, 1));
            let (mut client, mut server) = pipe(&link, &timer, 0, 1024);
            client.write_all(b"hello").await.unwrap();
            let mut got = [0u8; 5];
            let early =
                tokio::time::timeout(Duration::from_millis(100), server.read_exact(&mut got));
            assert!(early.await.is_err(), "bytes crossed a partition");
            link.set(LinkParams::default());
            server.read_exact(&mut got).await.unwrap();
            assert_eq!(&got, b"hello");
        });
    }

    #[test]
    fn the_latency_counts_from_when_the_bytes_reached_the_socket() {
        // Bytes reach the proxy's socket, and its thread is busy for 40 ms before it reads
        // them: across a 20 ms link they still arrive 20 ms after they were sent, not 60
        // (the bound leaves a loaded machine 25 ms to wake the thread).
        on_a_timer(|timer| async move {
            let latency = Duration::from_millis(20);
            let link = Arc::new(Link::new(LinkParams { latency, ..LinkParams::default() }, 1));
            let (mut client, from) = stamped_pair().await;
            let (proxy_out, mut server) = tokio::io::duplex(1024);
            let (pumped, timer) = (Arc::clone(&link), Rc::clone(&timer));
            tokio::task::spawn_local(async move {
                pump(from, proxy_out, pumped, &timer, 0).await;
            });
            tokio::task::yield_now().await;
            let sent = Instant::now();
            client.write_all(b"hello").await.unwrap();
            // The emulator's thread (this one) is kept from reading.
            std::thread::sleep(Duration::from_millis(40));
            let mut got = [0u8; 5];
            server.read_exact(&mut got).await.unwrap();
            let took = sent.elapsed();
            assert_eq!(&got, b"hello");
            assert!(took + MAX_HEAD_START >= latency, "early: {took:?}");
            assert!(took < latency + Duration::from_millis(25), "counted from the read: {took:?}");
        });
    }

    #[test]
    fn lateness_is_recorded_per_thread_and_read_together() {
        let link = Link::new(LinkParams::default(), 2);
        let t0 = Instant::now();
        link.record_late(0, &[t0, t0], t0 + Duration::from_micros(100));
        link.record_late(1, &[t0], t0 + Duration::from_millis(3));
        let late = link.lateness();
        assert_eq!(late.len(), 3);
        assert!(late.max() >= 2_900, "thread 1's chunk is in it: {}", late.max());
    }
}
