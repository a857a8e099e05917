//! Server metrics and client usage: every member's `/metrics` and resource series are in
//! the report, and their figures move as the load says they must.

use etcdlat_core::metrics::{metric, source};
use etcdlat_core::{OpKind, Report, Row};
use etcdlat_testkit::{Etcd, skip};

use crate::run_on;

/// Puts in each run.
const PUTS: u64 = 500;

/// Proposals the leader may commit during a run besides our puts (etcd's own: member
/// attributes, lease checkpoints, cluster version).
const INTERNAL_PROPOSALS: u64 = 20;

/// Runs `PUTS` puts against a fresh cluster of `members` and checks what every member's
/// metrics and the client usage say.
async fn puts_on(members: u32) -> Report {
    let etcd = Etcd::start_cluster(members).await;
    let report = run_on(
        &etcd,
        4,
        &format!("[load]\nclients = 16\ntotal = {PUTS}\n[op.put]\nval-size = 256\nkey-space-size = {PUTS}\nsequential-keys = true\n"),
    )
    .await;
    assert_eq!(report.op(OpKind::Put).ok, PUTS);

    let names: Vec<&str> = etcd.local().members().iter().map(|m| m.name()).collect();
    let mut scraped: Vec<&str> = report.server.iter().map(|m| m.name.as_str()).collect();
    scraped.sort_unstable();
    assert_eq!(scraped, names, "every member, once");
    for m in &report.server {
        let who = format!("{} ({})", m.name, m.url);
        // At the start and at the end at least; none failed.
        assert!(m.samples >= 2, "{who}: {m:?}");
        assert_eq!(m.failed_samples, 0, "{who}: {m:?}");
        let (avg, max) = (m.rss_avg_bytes.unwrap(), m.rss_max_bytes.unwrap());
        assert!(avg > 0 && avg <= max, "{who}: rss avg {avg}, max {max}");
        assert!(m.db_size_bytes.unwrap() > 0, "{who}: {m:?}");
        assert!(m.cpu_s.unwrap() >= 0.0, "{who}: {m:?}");
        // Every member applied the puts, so every one fsynced its WAL during the run.
        let (p50, p99) = (m.wal_fsync_p50_us.unwrap(), m.wal_fsync_p99_us.unwrap());
        assert!(p50 > 0 && p50 <= p99, "{who}: fsync p50 {p50}, p99 {p99}");
        assert_eq!(m.proposals_failed, Some(0), "{who}");
        assert_eq!(m.leader_changes, Some(0), "{who}");
        // etcd's default quota, 2 GiB; slow applies counted (none, but on a loaded machine).
        assert_eq!(m.quota_backend_bytes, Some(2 << 30), "{who}");
        assert!(m.slow_applies.is_some(), "{who}");
        assert!(m.proposals_committed.is_some(), "{who}");
        if members > 1 {
            assert!(m.peer_sent_bytes.unwrap() > 0, "{who}: {m:?}");
            assert!(m.peer_received_bytes.unwrap() > 0, "{who}: {m:?}");
        }
        // Every metric etcdlat reads is exported by this etcd (.ci/run runs this against
        // every version of .ci/etcd-versions): a renamed one fails here. A single member
        // has no peers to count traffic to; etcd 3.4 does not time applies.
        let mut unexported =
            if members > 1 { vec![] } else { vec![metric::PEER_SENT, metric::PEER_RECEIVED] };
        if report.target.etcd_version.starts_with("3.4.") {
            unexported.push(metric::APPLY);
        }
        assert_eq!(
            m.not_exported, unexported,
            "{who}: not exported by etcd {}",
            report.target.etcd_version
        );
    }
    let leader = report
        .server
        .iter()
        .find(|m| m.name == report.target.leader)
        .unwrap_or_else(|| panic!("no metrics of the leader {}", report.target.leader));
    let committed = leader.proposals_committed.unwrap();
    assert!(
        (PUTS..=PUTS + INTERNAL_PROPOSALS).contains(&committed),
        "the leader committed {committed} proposals for {PUTS} puts"
    );
    // The connections spread over every member; together they received every value.
    let grpc_in: u64 = report.server.iter().map(|m| m.grpc_received_bytes.unwrap()).sum();
    assert!(grpc_in >= PUTS * 256, "{grpc_in} gRPC bytes received for {PUTS} 256 B values");

    let client = report.client.as_ref().expect("the client measured itself");
    assert!(client.user_cpu_s + client.system_cpu_s > 0.0, "{client:?}");
    assert!(client.max_rss_bytes > 0, "{client:?}");
    report
}

#[tokio::test]
async fn one_member_reports_its_metrics() {
    if skip() {
        return;
    }
    let report = puts_on(1).await;
    assert_eq!(report.server[0].peer_sent_bytes.unwrap_or(0), 0, "no peers to send to");
}

#[tokio::test]
async fn each_of_three_members_reports_its_metrics() {
    if skip() {
        return;
    }
    let report = puts_on(3).await;
    assert_eq!(report.server.len(), 3);
}

/// The size of every file under `dir`, bytes.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.metadata() {
                    Ok(m) if m.is_dir() => dir_bytes(&e.path()),
                    Ok(m) => m.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Writes of known size on a 3-member cluster etcdlat started show in every member's
/// resources as they must: each member's WAL carries every key and value, so its storage
/// writes (`/proc/PID/io`) and its data dir grow by at least the bytes written; CPU and
/// memory have a sample for each second of the run; context switches grow; and the client
/// sent at least the keys and values over its sockets.
#[tokio::test]
async fn writes_of_known_size_show_in_every_members_resources() {
    if skip() {
        return;
    }
    const KEY: u64 = 256;
    const VALUE: u64 = 16 * 1024;
    let etcd = Etcd::start_cluster(3).await;
    let dirs: Vec<(String, std::path::PathBuf)> = etcd
        .local()
        .members()
        .iter()
        .map(|m| (m.name().to_owned(), etcd.local().dir().join(m.name())))
        .collect();
    let before: Vec<u64> = dirs.iter().map(|(_, d)| dir_bytes(d)).collect();
    let report = run_on(
        &etcd,
        4,
        &format!(
            "[load]\nclients = 16\nduration = \"4s\"\nrate = 250\n[op.put]\nkey-size = {KEY}\nval-size = {VALUE}\nkey-space-size = 100000\nsequential-keys = true\n"
        ),
    )
    .await;
    let put = report.op(OpKind::Put);
    assert_eq!(put.errors_total, 0, "{:?}", put.errors);
    assert!(put.ok >= 500, "{} puts", put.ok);
    let written = put.keys * KEY + put.value_bytes;
    assert_eq!(put.value_bytes, put.ok * VALUE);
    let whole_seconds = report.duration_s.floor() as usize;
    let in_run =
        |s: &&etcdlat_core::ResourceSample| s.t_s > 0.0 && s.t_s <= report.duration_s + 1.5;

    assert_eq!(report.server.len(), 3);
    for (m, ((name, _), before)) in report.server.iter().zip(dirs.iter().zip(&before)) {
        assert_eq!(&m.name, name, "in member order");
        let r = &m.resources;
        assert!(
            r.not_available.is_empty() || r.why_not(source::DISK).is_some(),
            "{name}: {:?}",
            r.not_available
        );
        let wrote = r.total(|s| s.write_bytes).unwrap_or(0);
        assert!(wrote >= written, "{name} wrote {wrote} bytes to storage for {written} put");
        let end = r.last(|s| s.data_dir_bytes).expect("the data dir's size");
        let sizes: Vec<(f64, Option<u64>)> =
            r.samples.iter().chain(&r.outside).map(|s| (s.t_s, s.data_dir_bytes)).collect();
        assert!(
            end >= before + written,
            "{name}'s data dir grew from {before} to {end} for {written} bytes put: {sizes:?}"
        );
        let wal = r.last(|s| s.wal_bytes).unwrap();
        let snap = r.last(|s| s.snap_bytes).unwrap();
        assert!(wal > 0 && snap > 0 && wal + snap <= end, "{name}: wal {wal}, snap {snap}, {end}");
        let run: Vec<_> = r.samples.iter().filter(in_run).collect();
        assert!(
            run.len() >= whole_seconds,
            "{name}: {} samples in {} s",
            run.len(),
            report.duration_s
        );
        for s in &run {
            assert!(s.rss_bytes.is_some_and(|b| b > 1 << 20), "{name}: {s:?}");
            assert!(s.cpu_percent.is_some(), "{name}: {s:?}");
        }
        // A sample a second; the last one, taken when the run ended, is shorter.
        for s in &run[..run.len() - 1] {
            assert!((0.5..=1.6).contains(&s.span_s), "{name}: a sample per second: {s:?}");
        }
        assert!(r.cpu_avg_percent().unwrap() > 0.0, "{name}: {r:?}");
        assert!(r.total(|s| s.voluntary_ctxt_switches).unwrap() > 0, "{name}: {r:?}");
        // Every member received every value, from the client or its leader.
        let received = r.total(|s| s.grpc_received_bytes).unwrap()
            + r.total(|s| s.peer_received_bytes).unwrap();
        assert!(received >= put.value_bytes, "{name} received {received}");
        match &r.disk {
            Some(disk) => {
                let sectors = r.total(|s| s.disk_sectors_written).unwrap_or(0);
                assert!(sectors * 512 >= written, "{name} on {disk:?}: {sectors} sectors written");
            }
            None => assert!(r.why_not(source::DISK).is_some(), "{name}: no disk and no why"),
        }
    }

    let client = report.client.as_ref().expect("the client measured itself");
    let sent = client.sent_bytes.expect("the load's bytes");
    assert!(sent >= written, "the client sent {sent} bytes for {written} bytes put");
    assert!(client.received_bytes.unwrap() > 0, "{client:?}");
    let run: Vec<_> = client.resources.samples.iter().filter(in_run).collect();
    assert!(run.len() >= whole_seconds, "{} client samples in {} s", run.len(), report.duration_s);
    assert!(run.iter().all(|s| s.rss_bytes.is_some() && s.cpu_percent.is_some()), "{run:?}");
    assert!(client.voluntary_ctxt_switches.unwrap() > 0, "{client:?}");
    assert!(client.cpu_max_percent.unwrap() > 0.0, "{client:?}");

    // dbtester's figures: what the run can know, known.
    let study = report.study();
    for row in [
        Row::ServerNetworkRx,
        Row::ServerNetworkTx,
        Row::ClientNetworkTx,
        Row::ClientNetworkRx,
        Row::ServerMaxCpu,
        Row::ServerMaxMemory,
        Row::ClientMaxCpu,
        Row::ClientMaxMemory,
        Row::ServerDiskSpace,
        Row::MaxThroughput,
        Row::MinThroughput,
    ] {
        assert!(study.value(row).is_some(), "{}: {:?}", row.label(), study.why_unknown(row));
    }
    assert!(study.client_network_sent_bytes.unwrap() >= written);
    assert!(study.server_disk_space_avg_bytes.unwrap() >= before.iter().sum::<u64>() / 3 + written);
}

/// Every report names the machine it ran on, as the OS tells it: the CPUs online, the
/// memory, the load average and the kernel; and the client and a local cluster's members
/// that may run on the same CPUs (none pinned apart here) share them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_names_the_machine() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let report = run_on(&etcd, 1, "[load]\nclients = 1\ntotal = 10\n[op.put]\n").await;
    let machine = report.target.machine.as_ref().expect("the machine");
    // What the OS says, read another way: /sys's list of online CPUs (`0-3,6`).
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let cpus: u32 = online
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<u32>().unwrap() - a.parse::<u32>().unwrap() + 1,
            None => 1,
        })
        .sum();
    assert_eq!(machine.cpus, cpus, "{machine:?}");
    let uname = |flag: &str| {
        let out = std::process::Command::new("uname").arg(flag).output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    assert_eq!(machine.kernel, format!("{} {}", uname("-s"), uname("-r")));
    let memory = machine.memory_bytes.unwrap();
    let available = machine.memory_available_bytes.unwrap();
    assert!(memory > 64 << 20 && available > 0 && available <= memory, "{machine:?}");
    let load = machine.load_average.unwrap();
    assert!(load.iter().all(|l| l.is_finite() && *l >= 0.0), "{machine:?}");
    // The client's workers and the member run on the process's CPUs, all of them here.
    assert!(!machine.client_cpus.is_empty(), "{machine:?}");
    assert!(machine.client_cpus.len() <= cpus as usize, "{machine:?}");
    assert_eq!(machine.member_cpus, machine.client_cpus, "{machine:?}");
    assert!(machine.emulator_cpus.is_empty(), "no emulated network: {machine:?}");
    assert_eq!(machine.shared_cpus, Some(vec!["client and members".to_owned()]));
    let text = etcdlat_render::text(&report, &etcdlat_render::TextOptions::default());
    assert!(text.contains(&format!("Machine: {}.", machine.summary())), "{text}");

    // Workers pinned to CPU 0: the client's CPUs are that one.
    let driver = etcd.driver_builder().pin_cpus([0]).conns(1).connect().await.unwrap();
    let report =
        driver.run(&crate::scenario("[load]\nclients = 1\ntotal = 10\n[op.put]\n")).await.unwrap();
    let machine = report.target.machine.as_ref().expect("the machine");
    assert_eq!(machine.client_cpus, [0], "{machine:?}");
}

/// etcd's own figures per sample of a 3-member cluster under puts for seven seconds: every
/// member's WAL fsync, backend commit and apply p99 in its series, its
/// proposals per sample adding up to its total, and the leader labelled as the leader.
#[tokio::test]
async fn etcds_own_figures_are_sampled_per_member_with_its_role() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let report = run_on(
        &etcd,
        3,
        "[load]\nclients = 8\nduration = \"7s\"\nrate = 300\n[op.put]\nkey-space-size = 1000\n",
    )
    .await;
    assert!(report.op(OpKind::Put).ok > 1000, "{:?}", report.op(OpKind::Put));
    let applies = !report.target.etcd_version.starts_with("3.4.");
    let mut leaders = Vec::new();
    for m in &report.server {
        let samples = &m.resources.samples;
        let who = format!("{}: {samples:?}", m.name);
        let has = |get: fn(&etcdlat_core::metrics::ResourceSample) -> Option<u64>| {
            samples.iter().filter_map(get).any(|us| us > 0)
        };
        assert!(has(|s| s.wal_fsync_p99_us), "fsync p99 {who}");
        assert!(has(|s| s.backend_commit_p99_us), "commit p99 {who}");
        assert_eq!(has(|s| s.apply_p99_us), applies, "apply p99 {who}");
        let committed: u64 = samples.iter().filter_map(|s| s.proposals_committed).sum();
        assert_eq!(Some(committed), m.proposals_committed, "{who}");
        assert!(committed >= report.op(OpKind::Put).ok, "every member commits every put");
        assert_eq!(samples.iter().filter_map(|s| s.leader_changes).sum::<u64>(), 0, "{who}");
        let roles: Vec<bool> = samples.iter().filter_map(|s| s.leader).collect();
        assert_eq!(roles.len(), samples.len(), "a role in every sample: {who}");
        if roles.iter().all(|&l| l) {
            leaders.push(m.name.as_str());
        } else {
            assert!(roles.iter().all(|&l| !l), "a follower throughout: {who}");
        }
    }
    assert_eq!(leaders, [report.target.leader.as_str()], "one leader, the one the run found");
}
