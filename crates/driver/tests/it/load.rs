//! Load at the scale of a published capacity test, on one small machine: 10,000 watchers on
//! 1,000 watch streams over 1,000 connections with every event accounted for, and 10,000
//! logical put clients over 1,000 connections with every put accounted for. Each test prints
//! how long its parts took, so that a slower machine shows where the time went.

use std::time::Instant;

use etcdlat_core::OpKind;
use etcdlat_testkit::{Etcd, skip};

use crate::scenario;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_watchers_over_a_thousand_connections_get_every_event() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let t0 = Instant::now();
    let driver = etcd.driver(1000).await;
    let connected = t0.elapsed();
    let before = etcd.revision().await;
    // 1,000 keys with 10 watchers each (one stream per connection, 10 watchers per stream),
    // then 2,000 puts over them: 20,000 events.
    let report = driver
        .run(&scenario(
            "[load]\nclients = 100\n[op.watch]\nstreams = 1000\nwatch-per-stream = 10\n\
             watched-key-total = 1000\nkey-space-size = 1000\nsequential-keys = true\nput-total = 2000\n",
        ))
        .await
        .unwrap();
    eprintln!(
        "watch: 1000 connections in {connected:?}, run {:.1} s, {:?} in all",
        report.duration_s,
        t0.elapsed()
    );
    let w = report.watch.clone().expect("watch accounting");
    assert_eq!((w.streams, w.watchers, w.puts), (1000, 10_000, 2000), "{w:?}");
    assert_eq!(w.expected, 20_000, "{w:?}");
    assert_eq!(w.received, w.expected, "{w:?}");
    assert_eq!((w.missing, w.duplicate, w.out_of_order), (0, 0, 0), "{w:?}");
    assert!(report.failures().is_empty(), "{:?}", report.failures());
    assert!(!report.interrupted);
    assert_eq!(report.op(OpKind::WatchCreate).ok, 10_000);
    assert_eq!(report.op(OpKind::WatchCreate).errors_total, 0);
    assert_eq!(report.op(OpKind::WatchEvent).ok, 20_000);
    assert_eq!(report.op(OpKind::Put).ok, 2000);
    assert_eq!(report.op(OpKind::Put).errors_total, 0);
    assert_eq!(etcd.revision().await - before, 2000, "exactly the puts were written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_put_clients_over_a_thousand_connections_all_complete() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let t0 = Instant::now();
    let driver = etcd.driver(1000).await;
    let connected = t0.elapsed();
    let before = etcd.revision().await;
    // Two puts per client: every client runs, and every connection carries ten clients.
    let report = driver
        .run(&scenario(
            "[load]\nclients = 10000\ntotal = 20000\n[op.put]\nkey-space-size = 20000\nsequential-keys = true\n",
        ))
        .await
        .unwrap();
    eprintln!(
        "put: 1000 connections in {connected:?}, run {:.1} s ({:.0}/s), {:?} in all",
        report.duration_s,
        report.op(OpKind::Put).throughput,
        t0.elapsed()
    );
    assert_eq!(report.params.clients, 10_000);
    assert_eq!(report.params.conns, 1000);
    let put = report.op(OpKind::Put);
    assert_eq!(report.requests(), 20_000);
    assert_eq!(put.ok + put.errors_total, 20_000);
    assert!(!report.interrupted);
    // 10,000 writers at once can outrun one etcd on two cores: it then refuses proposals
    // ("too many requests": more than 5,000 entries committed but not applied), before
    // proposing them. Those are the only failures allowed, and none of them is written.
    for (code, n) in &put.errors {
        let message = put.error_messages.get(code).map_or("", String::as_str);
        assert!(message.contains("too many requests"), "{n} {code}: {message:?}");
    }
    assert_eq!(etcd.revision().await - before, put.ok as i64, "the server holds every put ok");
    assert_eq!(etcd.key_count().await, put.ok as i64, "sequential keys: one key per put");
}

/// Raises this process's open-file limits to `needed` (members started later inherit them);
/// why not, when it cannot.
fn allow_open_files(needed: u64) -> Result<(), String> {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).map_err(|e| e.to_string())?;
    if soft >= needed {
        return Ok(());
    }
    setrlimit(Resource::RLIMIT_NOFILE, needed, needed.max(hard)).map_err(|e| {
        format!(
            "{needed} open files are needed; the limit is {soft} (hard {hard}) and raising it \
             failed ({e}): it takes root with CAP_SYS_RESOURCE"
        )
    })
}

/// The capacity test's scale of connections, on one machine: 30,000 HTTP/2 connections
/// over five members, each carrying requests, every request accounted for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_thousand_connections_to_five_members_all_carry_requests() {
    const CONNS: u32 = 30_000;
    if skip() {
        return;
    }
    // One descriptor per connection here, and each member's side of its share.
    if let Err(reason) = allow_open_files(u64::from(CONNS) + 2048) {
        eprintln!("skipped: {CONNS} connections: {reason}");
        return;
    }
    let etcd = Etcd::start_cluster(5).await;
    let t0 = Instant::now();
    let driver = etcd.driver(CONNS).await;
    let connected = t0.elapsed();
    let before = etcd.revision().await;
    let report = driver
        .run(&scenario(
            "[load]\nclients = 30000\ntotal = 60000\n[op.put]\nkey-space-size = 60000\nsequential-keys = true\n",
        ))
        .await
        .unwrap();
    let rss = report.client.as_ref().map_or(0, |c| c.max_rss_bytes);
    eprintln!(
        "put: {CONNS} connections in {connected:?}, run {:.1} s, client max RSS {} MB ({} KB per connection)",
        report.duration_s,
        rss >> 20,
        rss / u64::from(CONNS) / 1000
    );
    assert_eq!(report.params.conns, CONNS);
    assert_eq!(report.target.endpoints.len(), 5, "connections spread over every member");
    let put = report.op(OpKind::Put);
    assert_eq!(put.ok + put.errors_total, 60_000, "every request accounted for");
    for (code, n) in &put.errors {
        let message = put.error_messages.get(code).map_or("", String::as_str);
        assert!(message.contains("too many requests"), "{n} {code}: {message:?}");
    }
    assert!(put.ok > 0);
    assert_eq!(etcd.revision().await - before, put.ok as i64, "the cluster holds every put ok");
}
