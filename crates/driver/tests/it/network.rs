//! The emulated network of local clusters, against real etcd: the latencies a run sees follow
//! from the links' (a quorum round trip for writes and linearizable reads, none for
//! serializable ones on the leader, two client hops for everything), a line rate caps large
//! writes, a partition of the leader mid-run changes the leader and heals, the report names
//! the network, the bytes its links carried and the emulator's own CPU (apart from the
//! client's), and nothing is left listening after the cluster is gone. Bounds are generous: the machine is small and shared.

use std::time::Duration;

use etcdlat_core::{FaultAction, Network, OpKind, Report};
use etcdlat_driver::LocalCluster;
use etcdlat_testkit::{Etcd, cpus_of, etcd_bin, first_cpu, skip, threads_of};

use crate::run_on;

fn network(toml: &str) -> Network {
    toml::from_str(toml).unwrap_or_else(|e| panic!("invalid [network]: {e}"))
}

async fn cluster(members: u32, net: &str) -> Etcd {
    Etcd::start_with(
        LocalCluster::options().etcd_bin(etcd_bin()).members(members).network(network(net)),
    )
    .await
}

/// How much earlier than its latency an emulated hop may deliver: a link's timer arms early
/// by the wake-up lateness it has learned, at most 200 µs (`cluster/network/timer.rs`).
const HEAD_START_MS: f64 = 0.2;

fn p50_ms(report: &Report, kind: OpKind) -> f64 {
    report.op(kind).latency.quantile_us(0.5) as f64 / 1000.0
}

fn min_ms(report: &Report, kind: OpKind) -> f64 {
    report.op(kind).latency.quantile_us(0.0) as f64 / 1000.0
}

#[tokio::test]
async fn writes_and_linearizable_reads_pay_a_quorum_round_trip_serializable_reads_do_not() {
    if skip() {
        return;
    }
    // One-way 10 ms between members: a write commits when a follower has it, one round
    // trip (20 ms) after the leader proposes it; ReadIndex confirms leadership with the
    // same round trip; a serializable read is answered from the leader's own store.
    let etcd = cluster(3, "peer-latency = \"10ms\"\n").await;
    let leader = "target = \"leader\"\n[load]\nclients = 1\ntotal = 30\n";
    let put = run_on(&etcd, 1, &format!("{leader}[op.put]\nkey-space-size = 10\n")).await;
    let (p50, min) = (p50_ms(&put, OpKind::Put), min_ms(&put, OpKind::Put));
    assert!(
        min >= 20.0 - 2.0 * HEAD_START_MS,
        "a put commits no sooner than one round trip to a quorum: {min} ms"
    );
    assert!(p50 < 60.0, "and not much later: p50 {p50} ms");

    let range = |consistency: &str| {
        format!("{leader}[op.range]\nkey = \"k\"\nconsistency = \"{consistency}\"\n")
    };
    let linearizable = run_on(&etcd, 1, &range("l")).await;
    let min = min_ms(&linearizable, OpKind::Range);
    assert!(
        min >= 20.0 - 2.0 * HEAD_START_MS,
        "ReadIndex waits for a quorum's heartbeat answers: {min} ms"
    );
    let serializable = run_on(&etcd, 1, &range("s")).await;
    let p50 = p50_ms(&serializable, OpKind::Range);
    assert!(p50 < 10.0, "a serializable read on the leader crosses no peer link: {p50} ms");

    let net = put.target.network.as_ref().expect("the report names the network");
    assert_eq!(net.config.peer_latency, Duration::from_millis(10));
    assert_eq!(net.links.len(), 4 * 3, "client and 3 members, every ordered pair");
    let peer_bytes: u64 =
        net.links.iter().filter(|l| l.from != "client" && l.to != "client").map(|l| l.bytes).sum();
    assert!(peer_bytes > 30 * 8, "the puts were replicated across the peer links");
    assert!(
        net.links.iter().all(|l| l.from == "client" || l.to == "client" || l.latency_us == 10_000)
    );
}

#[tokio::test]
async fn client_latency_adds_two_hops_to_every_request() {
    if skip() {
        return;
    }
    let etcd = cluster(1, "client-latency = \"5ms\"\n").await;
    let report = run_on(
        &etcd,
        1,
        "[load]\nclients = 1\ntotal = 30\n[op.range]\nkey = \"k\"\nconsistency = \"s\"\n",
    )
    .await;
    let (p50, min) = (p50_ms(&report, OpKind::Range), min_ms(&report, OpKind::Range));
    assert!(min >= 10.0 - 2.0 * HEAD_START_MS, "5 ms there and 5 ms back: {min} ms");
    assert!(p50 < 25.0, "and not much more: p50 {p50} ms");
    let net = report.target.network.as_ref().unwrap();
    let to_member = net.links.iter().find(|l| l.from == "client").unwrap();
    assert!(to_member.bytes > 30 * 10, "the requests crossed the client link: {to_member:?}");
    let (p50, p99) = (to_member.late_p50_us.unwrap(), to_member.late_p99_us.unwrap());
    assert!(p50 <= p99, "how late the link delivered is reported: {to_member:?}");
}

#[tokio::test]
async fn the_emulators_cpu_is_reported_apart_from_the_clients() {
    if skip() {
        return;
    }
    let etcd = cluster(1, "client-latency = \"1ms\"\n").await;
    let report =
        run_on(&etcd, 1, "[load]\nclients = 50\ntotal = 3000\n[op.put]\nval-size = 256\n").await;
    assert_eq!(report.op(OpKind::Put).ok, 3000);
    let net = report.target.network.as_ref().unwrap();
    let emulator = net.emulator.expect("the emulator's own CPU");
    let client = report.client.as_ref().unwrap();
    let (emulated, client_s) =
        (emulator.user_cpu_s + emulator.system_cpu_s, client.user_cpu_s + client.system_cpu_s);
    // Every byte of 3,000 requests and answers was copied through it: more than a tick.
    assert!(emulated >= 0.01, "{emulator:?}");
    assert!(emulator.voluntary_ctxt_switches > 0, "it waits for bytes and timers: {emulator:?}");
    // The emulator's thread is not among the workers, whose CPU is part of the client's.
    let workers = client.worker_cpu_s.unwrap();
    assert!(workers <= client_s + 0.02, "workers {workers} s within the client's {client_s} s");
    // Its threads run real-time whenever this process may make a thread so.
    assert_eq!(emulator.realtime, may_run_realtime(), "{emulator:?}");
}

#[tokio::test]
async fn members_and_the_emulator_run_on_the_cpus_they_are_given() {
    if skip() {
        return;
    }
    // etcd on the first CPU, the emulator on the last (the same one on a one-CPU machine),
    // as a study that keeps the emulator's CPU out of etcd's pins them.
    let last = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) - 1;
    let etcd = Etcd::start_with(
        LocalCluster::options()
            .etcd_bin(etcd_bin())
            .members(2)
            .network(network("client-latency = \"1ms\"\n"))
            .member_cpus([0])
            .network_cpus([last]),
    )
    .await;
    let report = run_on(&etcd, 1, "[load]\nclients = 4\ntotal = 200\n[op.put]\n").await;
    assert_eq!(report.op(OpKind::Put).ok, 200);
    for member in etcd.local().members() {
        // Every thread of etcd's, those the Go runtime started before and after it ran.
        let threads = threads_of(member.pid().unwrap());
        for t in &threads {
            assert_eq!(t.cpus, "0", "{} {t:?}", member.name());
        }
        assert!(threads.len() > 1, "etcd runs threads of its own");
    }
    let emulator = report.target.network.as_ref().unwrap().emulator.unwrap();
    assert!(emulator.user_cpu_s + emulator.system_cpu_s > 0.0, "it carried the run");
    // Other tests' emulators run in this process too, on every CPU: this one's threads are
    // those on the last CPU alone (on a machine of two or more).
    let pinned = threads_of(std::process::id())
        .into_iter()
        .filter(|t| t.name.starts_with("etcdlat-network") && t.cpus == last.to_string())
        .count();
    assert!(pinned >= 1, "the emulator's threads run on CPU {last}");
}

#[tokio::test]
async fn members_and_the_emulator_without_cpus_of_their_own_run_on_the_processs() {
    if skip() {
        return;
    }
    // The process's CPUs: its main thread's, which nothing here pins.
    let process = cpus_of(std::process::id()).unwrap();
    // The cluster is started from a thread kept to the first of them, as a binary that
    // keeps its own threads on the client's CPUs (`--pin-cpus`) starts it; etcd and the
    // emulator would inherit that CPU.
    let first = first_cpu(&process);
    etcdlat_driver::pin_current_thread(&[first]).unwrap();
    assert_eq!(cpus_of("thread-self"), Some(first.to_string()));
    let etcd = cluster(2, "client-latency = \"1ms\"\n").await;
    let report = run_on(&etcd, 1, "[load]\nclients = 4\ntotal = 100\n[op.put]\n").await;
    assert_eq!(report.op(OpKind::Put).ok, 100);
    for member in etcd.local().members() {
        let threads = threads_of(member.pid().unwrap());
        assert!(!threads.is_empty(), "{} runs", member.name());
        for t in threads {
            assert_eq!(t.cpus, process, "{} {t:?}", member.name());
        }
    }
    // This emulator's threads are on the process's CPUs; other tests' run here too, on the
    // process's CPUs or on the last CPU alone, none on the first alone (on a machine of two
    // or more).
    let emulators: Vec<_> = threads_of(std::process::id())
        .into_iter()
        .filter(|t| t.name.starts_with("etcdlat-network"))
        .collect();
    let on_process = emulators.iter().filter(|t| t.cpus == process).count();
    let on_first = emulators.iter().filter(|t| t.cpus == first.to_string()).count();
    assert!(on_process >= 1, "the emulator's threads run on CPUs {process}");
    if process != first.to_string() {
        assert_eq!(on_first, 0, "no emulator thread inherits CPU {first} from its starter");
    }
}

/// Whether this process may schedule a thread real-time (`SCHED_FIFO`): tried on a thread of
/// its own.
fn may_run_realtime() -> bool {
    use thread_priority::{
        RealtimeThreadSchedulePolicy, ThreadPriority, ThreadSchedulePolicy,
        set_thread_priority_and_policy, thread_native_id,
    };
    let fifo = ThreadSchedulePolicy::Realtime(RealtimeThreadSchedulePolicy::Fifo);
    std::thread::spawn(move || {
        set_thread_priority_and_policy(thread_native_id(), ThreadPriority::Min, fifo).is_ok()
    })
    .join()
    .unwrap()
}

#[tokio::test]
async fn a_line_rate_between_members_caps_large_writes() {
    if skip() {
        return;
    }
    // A 1 MB put reaches a follower through a 4 MB/s line: at least 250 ms.
    let etcd = cluster(3, "bandwidth = \"4MB/s\"\n").await;
    let report = run_on(
        &etcd,
        1,
        "target = \"leader\"\n[load]\nclients = 1\ntotal = 4\n[op.put]\nval-size = \"1MB\"\nkey-space-size = 4\n",
    )
    .await;
    assert_eq!(report.op(OpKind::Put).ok, 4, "{:?}", report.op(OpKind::Put).errors);
    let min = min_ms(&report, OpKind::Put);
    assert!(min >= 250.0, "1 MB at 4 MB/s: {min} ms");
}

#[tokio::test]
async fn a_partitioned_leader_loses_its_leadership_and_the_cluster_recovers_after_heal() {
    if skip() {
        return;
    }
    // No delay at all: the proxies are there for the partition.
    let etcd = cluster(3, "").await;
    let before = etcd.leader_name().await;
    let report = run_on(
        &etcd,
        3,
        "[load]\nclients = 3\nduration = \"9s\"\nrate = 200\n[op.put]\nkey-space-size = 100\n\
         [[faults]]\nat = \"1s\"\naction = \"partition\"\nmember = \"leader\"\nfor = \"3s\"\n",
    )
    .await;
    let f = &report.faults[0];
    assert_eq!(f.action, FaultAction::Partition);
    assert_eq!(f.error, None, "{f:#?}");
    assert_eq!(f.member.as_deref(), Some(before.as_str()));
    assert_eq!(f.what, format!("partitioned {before} (the leader) from its peers for 3s"));
    let healed = f.resumed_s.expect("healed after 3 s");
    assert!((healed - f.started_s - 3.0).abs() < 0.3, "{f:#?}");
    assert!(
        report.leader_changes.iter().any(|c| c.from == before),
        "the majority elected another leader: {:?}",
        report.leader_changes
    );
    let put = report.op(OpKind::Put);
    assert!(put.errors_total > 0 || f.during.max_us >= 500_000, "the partition was felt: {f:#?}");
    // Errors only from the partition: none before it; after the heal, at most the requests
    // already waiting then (one per client), which etcd fails at its request timeout.
    assert_eq!(f.before.errors, 0, "{f:#?}");
    let first = put.intervals.iter().take_while(|i| i.t_s < 1.0).map(|i| i.errors).sum::<u64>();
    assert_eq!(first, 0, "{:?}", put.intervals);
    assert!(f.after.errors <= 3, "{f:#?}");
    assert!(f.after.ok > 0, "the cluster served after heal: {f:#?}");
    assert!(put.intervals.last().is_some_and(|i| i.count > 0), "{:?}", put.intervals);
}

#[tokio::test]
async fn nothing_listens_on_the_proxies_once_the_cluster_is_gone() {
    if skip() {
        return;
    }
    let etcd = cluster(1, "client-latency = \"1ms\"\n").await;
    let endpoint = etcd.endpoint();
    let port = etcdlat_testkit::port_of(&endpoint);
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(), "the proxy serves");
    drop(etcd);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the proxy at {endpoint} is gone with the cluster"
    );
}
