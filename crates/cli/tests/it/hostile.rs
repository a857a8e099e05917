//! A server that speaks HTTP/2 and gRPC but badly: the testkit's hostile proxy in front of a
//! real etcd corrupts one KV answer in every few (malformed frames, statuses and bodies,
//! RST_STREAM, GOAWAY, a stalled stream), each kind once, mid-run. etcdlat must count every
//! such request under a gRPC code with a message, not panic, not hang past the run's end,
//! write its report, and run on normally around them.

use std::time::{Duration, Instant};

use etcdlat_testkit::{Corruption, Etcd, HostileProxy};

use crate::{count, only_run, read_report, text};

/// How long a request in flight at the end may keep a run going (the driver's grace).
const STOP_GRACE: Duration = Duration::from_secs(2);

#[tokio::test]
async fn every_corruption_is_counted_and_the_run_goes_on() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let proxy = HostileProxy::start(&etcd.endpoint(), 40, 1);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let clients = 8;
    let duration = Duration::from_secs(6);
    let started = Instant::now();
    let run = crate::etcdlat()
        .args([
            &format!("--endpoints={}", proxy.endpoint()),
            &format!("--clients={clients}"),
            "put",
            &format!("--duration={}s", duration.as_secs()),
            "--json",
            json.to_str().unwrap(),
        ])
        .assert();
    let took = started.elapsed();
    let out = run.get_output();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", out.status);
    // Start-up and the report take well under 5 s here; a stalled stream must not hold the
    // run past its grace.
    assert!(took < duration + STOP_GRACE + Duration::from_secs(5), "took {took:?}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    for (kind, hits) in proxy.hits() {
        assert_eq!(hits, 1, "{kind:?} was applied once");
    }
    let report = read_report(&json);
    let run = only_run(&report);
    let put = &run["ops"]["put"];
    // The codes gRPC gives these (and etcdlat with it): a malformed frame, status or body
    // is Internal, a message over the limit ResourceExhausted, a reset stream Internal, a
    // GOAWAY Unavailable, the status etcd "sent" Aborted, and the stalled stream is
    // cancelled when the run ends.
    for code in ["Internal", "ResourceExhausted", "Aborted", "Unavailable", "Cancelled"] {
        assert!(count(put, &format!("/errors/{code}")) >= 1, "{code} counted: {}", put["errors"]);
        let sample = text(put, &format!("/error_messages/{code}"));
        assert!(!sample.is_empty(), "{code} has a message sample");
    }
    assert!(
        text(put, "/error_messages/Aborted").starts_with("hostile"),
        "{}",
        put["error_messages"]
    );
    let errors = count(put, "/errors_total");
    let corrupted = u64::try_from(Corruption::ALL.len()).unwrap();
    assert!(errors >= corrupted, "each corrupted answer is an error: {}", put["errors"]);
    // Only the GOAWAY takes other requests with it: at most one per client in flight.
    assert!(errors <= corrupted + clients, "errors beyond the corrupted: {}", put["errors"]);
    // Every clean answer counted ok, but the connection's warm-up range (before the run)
    // and those in flight on the connection the GOAWAY closed (one per other client at
    // most).
    let ok = count(put, "/ok");
    let clean = proxy.clean();
    assert!(ok <= clean && clean - ok <= clients, "ok {ok}, clean answers {clean}");
    assert!(ok > 10 * corrupted, "the run went on around the corruptions: ok {ok}");
}
