//! The emulated network from the command line: the network flags with `--local` and `run`,
//! a scenario's `[network]` and a matrix over it, and every bad network input refused
//! before anything starts (exit 2, one line).

use etcdlat_testkit::{cpus_of, etcd_bin, first_cpu, skip, threads_of};
use serde_json::Value;

use crate::bad_input::error_line;
use crate::{count, etcdlat, only_run, parse_report};

/// How much earlier than its latency an emulated hop may deliver (a link's timer arms early
/// by the wake-up lateness it has learned, at most 200 µs).
const HEAD_START_MS: f64 = 0.2;

fn p50_ms(run: &Value, op: &str) -> f64 {
    count(run, &format!("/ops/{op}/latency_us/p50")) as f64 / 1000.0
}

fn min_ms(run: &Value, op: &str) -> f64 {
    count(run, &format!("/ops/{op}/latency_us/min")) as f64 / 1000.0
}

#[test]
fn network_flags_put_members_in_zones_and_the_report_says_so() {
    if skip() {
        return;
    }
    let out = etcdlat()
        .env("ETCD_BIN", etcd_bin())
        .args(["--local", "--members=3", "--zones=a,b,c", "--zone-latency=3ms"])
        .args(["--target=leader", "--json=-", "put", "--total=40", "--key-space-size=10"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = parse_report(&out.stdout);
    let run = only_run(&report);
    let net = &run["target"]["network"];
    assert_eq!(net["config"]["zones"], serde_json::json!(["a", "b", "c"]), "{net:#}");
    assert_eq!(net["config"]["zone-latency"], "3ms");
    assert_eq!(net["summary"], "peers 0s, client 0s; zones a, b, c (client in a) 3ms apart");
    // Every member is in its own zone: a write reaches a quorum across a 3 ms link and back.
    let min = min_ms(run, "put");
    assert!(
        min >= 6.0 - 2.0 * HEAD_START_MS,
        "a put waits for one cross-zone round trip: {min} ms"
    );
    let links = net["links"].as_array().unwrap();
    assert_eq!(links.len(), 12);
    let between_zones = links.iter().filter(|l| l["from"] != "client" && l["to"] != "client");
    assert!(between_zones.clone().all(|l| l["latency_us"] == 3000), "{links:#?}");
    assert!(between_zones.map(|l| l["bytes"].as_u64().unwrap()).sum::<u64>() > 40 * 8);
}

#[test]
fn a_matrix_over_the_network_runs_each_network_and_tables_them() {
    if skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("wan.toml");
    std::fs::write(
        &scenario,
        "name = \"wan\"\ntarget = \"leader\"\n[cluster]\nmembers = 3\n[load]\nclients = 1\ntotal = 30\n\
         [op.range]\nkey = \"k\"\nconsistency = \"l\"\n\
         [network]\nclient-latency = \"1ms\"\n\
         [matrix]\n\"network.peer-latency\" = [\"0ms\", \"8ms\"]\n",
    )
    .unwrap();
    let markdown = dir.path().join("table.md");
    let out = etcdlat()
        .env("ETCD_BIN", etcd_bin())
        .arg("run")
        .arg(&scenario)
        .arg(format!("--markdown={}", markdown.display()))
        .arg("--json=-")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = parse_report(&out.stdout);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let (near, far) = (p50_ms(&runs[0], "range"), p50_ms(&runs[1], "range"));
    // The client's 1 ms each way in both; ReadIndex adds a 16 ms round trip to a quorum.
    assert!(min_ms(&runs[0], "range") >= 2.0 - 2.0 * HEAD_START_MS, "two client hops: {near} ms");
    assert!(
        min_ms(&runs[1], "range") >= 18.0 - 4.0 * HEAD_START_MS,
        "client hops and a quorum round trip: {far} ms"
    );
    assert!(far > near + 10.0, "{near} ms vs {far} ms");
    let table = std::fs::read_to_string(&markdown).unwrap();
    assert!(table.lines().next().unwrap().contains("| Network |"), "{table}");
    assert!(table.contains("peers 8ms, client 1ms"), "{table}");
}

#[test]
fn bad_network_input_exits_2_with_one_line_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, network: &str, faults: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\n[cluster]\nmembers = 3\n[load]\nduration = \"5s\"\n[op.put]\n{faults}[network]\n{network}"
            ),
        )
        .unwrap();
        path.display().to_string()
    };
    let zones = file("zones", "zones = [\"a\", \"b\", \"c\", \"d\"]\n", "");
    let client_zone = file("client-zone", "zones = [\"a\", \"b\"]\nclient-zone = \"z\"\n", "");
    let member = file("member", "[network.member.m5]\nclient-latency = \"1ms\"\n", "");
    let negative = file("negative", "peer-latency = \"-1ms\"\n", "");
    let rate = file("rate", "bandwidth = \"fast\"\n", "");
    let toxiproxy_local = file("toxi", "toxiproxy = \"http://127.0.0.1:8474\"\n", "");
    let delay_remote = file(
        "delay-remote",
        "",
        "[[faults]]\nat = \"1s\"\naction = \"delay\"\nlatency = \"5ms\"\n",
    );
    let partition_unknown = file(
        "partition-unknown",
        "",
        "[[faults]]\nat = \"1s\"\naction = \"partition\"\nmember = \"m7\"\n",
    );
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        (
            "negative --peer-latency",
            vec!["--local", "--peer-latency=-1ms", "put"],
            vec!["--peer-latency"],
        ),
        (
            "unparsable --client-latency",
            vec!["--local", "--client-latency=soon", "put"],
            vec!["--client-latency", "soon"],
        ),
        (
            "unparsable --bandwidth",
            vec!["--local", "--bandwidth=100MB/fortnight", "put"],
            vec!["--bandwidth", "invalid bandwidth"],
        ),
        (
            "zero --bandwidth",
            vec!["--local", "--bandwidth=0MB/s", "put"],
            vec!["--bandwidth", "at least 1 byte"],
        ),
        (
            // The new user: it ran as fast as without the flag, and nothing said so.
            "--bandwidth with one member, which has no links between members",
            vec!["--members=1", "--bandwidth=2MB/s", "put", "--total=4", "--val-size=1MB"],
            vec!["--bandwidth limits the links between members", "--client-bandwidth"],
        ),
        (
            "more zones than members",
            vec!["--local", "--members=2", "--zones=a,b,c", "put"],
            vec!["3 zones for 2 member"],
        ),
        ("an empty zone name", vec!["--local", "--zones=a,,c", "put"], vec!["--zones", "empty"]),
        (
            "a client zone that does not exist",
            vec!["--local", "--members=3", "--zones=a,b", "--client-zone=z", "put"],
            vec!["no zone \"z\""],
        ),
        (
            "network flags with --endpoints",
            vec!["--endpoints=127.0.0.1:2379", "--peer-latency=1ms", "put"],
            vec!["--peer-latency", "--endpoints", "toxiproxy"],
        ),
        (
            "network flags at etcd's default endpoint",
            vec!["--zone-latency=1ms", "put"],
            vec!["--zone-latency", "local cluster"],
        ),
        (
            "zones in a file for fewer members",
            vec!["run", &zones],
            vec!["network.zones", "4 zones for 3 member"],
        ),
        (
            "an unknown client zone in a file",
            vec!["run", &client_zone],
            vec!["network.client-zone", "no zone \"z\""],
        ),
        (
            "an unknown member in a file",
            vec!["run", &member],
            vec!["network.member.m5", "no member \"m5\""],
        ),
        (
            "a negative latency in a file",
            vec!["run", &negative],
            vec!["line 8", "invalid duration \"-1ms\""],
        ),
        (
            "an unparsable rate in a file",
            vec!["run", &rate],
            vec!["line 8", "invalid bandwidth \"fast\""],
        ),
        (
            "toxiproxy for a local cluster",
            vec!["run", &toxiproxy_local],
            vec!["network.toxiproxy", "did not start"],
        ),
        (
            "a network step against --endpoints",
            vec!["run", &delay_remote, "--endpoints=127.0.0.1:2379"],
            vec!["faults.0: delay", "toxiproxy"],
        ),
        (
            "a partition of a member that does not exist",
            vec!["run", &partition_unknown],
            vec!["faults.0.member", "m7"],
        ),
    ];
    for (what, args, needles) in cases {
        // ETCD_BIN points nowhere: a case that got as far as starting etcd would say so.
        let out = etcdlat().env("ETCD_BIN", "/nonexistent/etcd").args(&args).output().unwrap();
        let line = error_line(what, &out);
        for needle in needles {
            assert!(line.contains(needle), "{what}: {needle:?} not in {line:?}");
        }
    }
}

#[tokio::test]
async fn an_unreachable_toxiproxy_exits_2_before_the_run() {
    if skip() {
        return;
    }
    let etcd = etcdlat_testkit::Etcd::start().await;
    let before = etcd.revision().await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("toxic.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"toxic\"\n[load]\nduration = \"3s\"\n[op.put]\n\
             [network]\ntoxiproxy = \"http://{closed}\"\n[network.proxies]\nm0 = [\"etcd0\"]\n\
             [[faults]]\nat = \"1s\"\naction = \"delay\"\nmember = \"m0\"\nlatency = \"5ms\"\n"
        ),
    )
    .unwrap();
    let out = etcdlat()
        .arg("run")
        .arg(&scenario)
        .arg(format!("--endpoints={}", etcd.endpoint()))
        .output()
        .unwrap();
    let line = error_line("an unreachable toxiproxy", &out);
    assert!(line.contains("toxiproxy") && line.contains(&closed.to_string()), "{line}");
    assert_eq!(etcd.revision().await, before, "nothing was put: the run never started");
}

#[test]
fn cpus_flags_place_etcd_and_the_emulator_and_bad_ones_are_refused() {
    if skip() {
        return;
    }
    let last = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) - 1;
    let network_cpus = format!("--network-cpus={last}");
    let out = etcdlat()
        .env("ETCD_BIN", etcd_bin())
        .args(["--local", "--etcd-cpus=0", &network_cpus, "--pin-cpus=0"])
        .args(["--client-latency=1ms", "--json=-", "put", "--total=50"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report = parse_report(&out.stdout);
    assert_eq!(count(only_run(&report), "/ops/put/ok"), 50);

    let refused = |what: &str, args: &[&str], needles: &[&str]| {
        let out = etcdlat().env("ETCD_BIN", etcd_bin()).args(args).output().unwrap();
        let line = error_line(what, &out);
        for needle in needles {
            assert!(line.contains(needle), "{what}: {needle:?} in {line:?}");
        }
        // The OS's reason once, not after every wrapper that shows it.
        assert!(line.matches("os error").count() <= 1, "{what}: {line}");
    };
    refused(
        "a CPU etcd cannot run on",
        &["--local", "--etcd-cpus=1000", "put", "--total=1"],
        &["--etcd-cpus: CPU 1000 is not one this machine lets etcdlat run on", "Invalid argument"],
    );
    refused(
        "a CPU the emulator cannot run on",
        &["--local", "--network-cpus=1000", "--client-latency=1ms", "put", "--total=1"],
        &[
            "--network-cpus: CPU 1000 is not one this machine lets etcdlat run on",
            "Invalid argument",
        ],
    );
    refused(
        "a CPU the client cannot run on",
        &["--local", "--pin-cpus=0,1000", "put", "--total=1"],
        &["--pin-cpus: CPU 1000 is not one this machine lets etcdlat run on", "Invalid argument"],
    );
    refused(
        "--network-cpus without an emulated network",
        &["--local", "--network-cpus=0", "put", "--total=1"],
        &["--network-cpus", "no emulated network"],
    );
    refused(
        "--etcd-cpus against endpoints",
        &["--endpoints=127.0.0.1:1", "--etcd-cpus=0", "put", "--total=1"],
        &["--etcd-cpus place a throwaway local cluster", "--endpoints"],
    );
}

#[test]
fn pin_cpus_keeps_every_thread_of_etcdlats_on_them_and_etcd_on_the_processs() {
    if skip() {
        return;
    }
    // The first CPU this process may run on (it and etcdlat's main thread have the same).
    let first = first_cpu(&cpus_of(std::process::id()).unwrap()).to_string();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
        .env("ETCD_BIN", etcd_bin())
        .arg(format!("--pin-cpus={first}"))
        .args(["--local", "--client-latency=1ms", "--json=-", "put"])
        .args(["--duration=4s"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // etcdlat's child named etcd: the 4th field of /proc/PID/stat is the parent's id.
    let etcd = || -> Option<u32> {
        std::fs::read_dir("/proc")
            .ok()?
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .find(|&c: &u32| {
                let stat = std::fs::read_to_string(format!("/proc/{c}/stat")).unwrap_or_default();
                let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
                after_name.split_whitespace().nth(1) == Some(&pid.to_string())
                    && std::fs::read_to_string(format!("/proc/{c}/comm"))
                        .is_ok_and(|n| n.trim() == "etcd")
            })
    };
    // Once the load runs: its workers, the emulator and etcd are up.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let member = loop {
        let names: Vec<String> = threads_of(pid).into_iter().map(|t| t.name).collect();
        let up = ["etcdlat-worker", "etcdlat-network", "etcdlat-main"]
            .iter()
            .all(|name| names.iter().any(|n| n.starts_with(name)));
        if let (true, Some(member)) = (up, etcd()) {
            break member;
        }
        assert!(std::time::Instant::now() < deadline, "the load never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // The process's CPUs: etcdlat's main thread's, which only waits for the command.
    let process = cpus_of(pid).unwrap();
    for t in threads_of(pid) {
        let own = t.tid != pid && !t.name.starts_with("etcdlat-network");
        assert_eq!(&t.cpus, if own { &first } else { &process }, "etcdlat's thread {t:?}");
    }
    let etcd_threads = threads_of(member);
    assert!(!etcd_threads.is_empty(), "etcd ran until it was looked at");
    for t in etcd_threads {
        assert_eq!(t.cpus, process, "etcd's threads stay on the process's CPUs");
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    let report = parse_report(&out.stdout);
    assert!(count(only_run(&report), "/ops/put/ok") > 0);
}
