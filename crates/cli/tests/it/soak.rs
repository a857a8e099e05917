//! A long run stays flat: two minutes of open-loop puts at a rate a throwaway etcd sustains
//! here (the CI-sized version of the 30-minute soak in `benches/README.md`). The client's
//! resident memory, sampled every second from `/proc/PID/status`, grows less than 5% after
//! the first 40 s, and the interval series has every interval of the run.
//!
//! Why these settings:
//! - **10 s intervals.** Each interval keeps its latency histogram (its distinct values, a
//!   few KB per worker and kind) so that the report has percentiles per interval; the
//!   series is bounded by design (at most `MAX_INTERVALS` per kind). With 1 s intervals a
//!   two-minute run's series grows by about 1 MB, 4% of the process, and the test would
//!   measure the series rather than a leak. With 12 intervals, any growth is something else.
//! - **mimalloc purges at once** (`MIMALLOC_PURGE_DELAY=0`): by default it keeps freed pages
//!   resident for a while and returns them in bursts, so RSS wanders by megabytes (a CI run
//!   climbed 1.7 MB and fell back) and tracks what the allocator holds rather than what the
//!   process does.
//! - **40 s to settle**: the cluster started, connections and worker runtimes up, every
//!   histogram allocated, the first intervals and samples in their buffers.
//!
//! From then on, what a run keeps growing is the interval summaries, the sampler's
//! series (a sample per member and second) and the served-timeline bitmap (one bit per
//! millisecond per kind, 15 KB in two minutes), well under 1% of a ~30 MB process. A leak of
//! anything per request (over 40,000 of them here, so 35 bytes each make 5%) fails it.

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::{count, only_run, read_report};

/// The run's length, and the rate a throwaway etcd sustains on a shared CI machine.
const DURATION: Duration = Duration::from_secs(120);
const RATE: u64 = 400;
/// The report's interval, and the samples before `SETTLED` are the client reaching its
/// steady state.
const INTERVAL: Duration = Duration::from_secs(10);
const SETTLED: Duration = Duration::from_secs(40);

/// The resident memory of process `pid`, in kB.
fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_two_minute_open_loop_run_stays_flat() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    // `etcdlat put --open-loop --rate=400 --duration=120s --clients=16 --key-space-size=10000
    // --local`, with the report's interval set, which only a scenario can.
    let scenario = dir.path().join("soak.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"soak\"\n[cluster]\nmembers = 1\n[load]\nclients = 16\nschedule = \"open\"\n\
             rate = {RATE}\nduration = \"{}s\"\n[op.put]\nkey-space-size = 10000\n\
             [report]\ninterval = \"{}s\"\n",
            DURATION.as_secs(),
            INTERVAL.as_secs()
        ),
    )
    .unwrap();
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("etcdlat"))
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
        ])
        .env("MIMALLOC_PURGE_DELAY", "0")
        .env_remove("ETCDLAT_LOG")
        .env("TMPDIR", dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(File::create(dir.path().join("stderr")).unwrap())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut samples: Vec<(Duration, u64)> = Vec::new();
    // Only while the run measures (it starts after the cluster, so it ends after this):
    // building and writing the report afterwards is not growth over time.
    while started.elapsed() < DURATION - Duration::from_secs(2) {
        if let Some(rss) = rss_kb(child.id()) {
            samples.push((started.elapsed(), rss));
        }
        assert!(child.try_wait().unwrap().is_none(), "etcdlat exited during the run");
        std::thread::sleep(Duration::from_secs(1));
    }
    let deadline = started + DURATION + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("etcdlat still running a minute after its run's end");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let stderr = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    assert!(status.success(), "{status}: {stderr}");

    let settled: Vec<u64> =
        samples.iter().filter(|(t, _)| *t >= SETTLED).map(|&(_, r)| r).collect();
    assert!(settled.len() > 60, "RSS sampled every second: {samples:?}");
    let (base, max) = (settled[0], *settled.iter().max().unwrap());
    assert!(
        max * 100 < base * 105,
        "RSS grew from {base} kB at {SETTLED:?} to {max} kB (more than 5%): {samples:?}"
    );

    let report = read_report(&json);
    let run = only_run(&report);
    let put = &run["ops"]["put"];
    assert_eq!(count(put, "/errors_total"), 0, "a sustainable rate: {}", put["errors"]);
    let intervals = put["intervals"].as_array().unwrap();
    let expected = (DURATION.as_secs() / INTERVAL.as_secs()) as usize;
    assert!((expected..=expected + 1).contains(&intervals.len()), "{} intervals", intervals.len());
    for (i, interval) in intervals.iter().enumerate() {
        let t_s = (i as u64 * INTERVAL.as_secs()) as f64;
        assert_eq!(interval["t_s"].as_f64(), Some(t_s), "interval {i}: {interval}");
        assert!(count(interval, "/count") > 0, "nothing done in interval {i}: {interval}");
    }
    let counted: u64 = intervals.iter().map(|i| count(i, "/count")).sum();
    assert_eq!(counted, count(put, "/ok"), "the intervals hold every request");
    let achieved = run["pacing"]["achieved_rate"].as_f64().unwrap();
    assert!(achieved > RATE as f64 * 0.95, "the rate was kept: {achieved}/s");

    // The CSV series is the same, row for row.
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), intervals.len(), "{csv}");
    for (row, interval) in rows.iter().zip(intervals) {
        let cells: Vec<&str> = row.split(',').collect();
        assert_eq!(cells[0], "put");
        assert_eq!(cells[1].parse::<f64>().ok(), interval["t_s"].as_f64(), "{row}");
        assert_eq!(cells[2].parse::<u64>().ok(), interval["count"].as_u64(), "{row}");
    }
}
