//! The client as the bottleneck, reported: a worker thread driving a server that answers
//! instantly is busy all the time and the report says the figures may be the client's; a
//! light run's worker mostly waits and the report says nothing. (The worker's busy share
//! counts the time it was runnable, so the test holds on a loaded machine too.)

use etcdlat_driver::Driver;
use etcdlat_testkit::NullServer;

use crate::scenario;

async fn run(servers: &[NullServer], conns: u32, toml: &str) -> etcdlat_core::Report {
    let driver = Driver::builder()
        .endpoints(servers.iter().map(NullServer::endpoint))
        .conns(conns)
        .workers(1)
        .connect()
        .await
        .unwrap();
    driver.run(&scenario(toml)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_worker_is_reported_with_what_to_change() {
    // Servers with nothing to do, each on a thread of its own and a connection of its own,
    // and 512 clients on one worker: the worker gets a fair share of the CPUs, the servers
    // the rest, so there is always an answer to read, and the worker never waits. (Three,
    // then six, were not enough on two CPUs as the client got cheaper: with its own HTTP/2
    // its cost per request is a fraction of the null server's, which runs on h2 and tonic.)
    let servers: Vec<NullServer> = (0..16).map(|_| NullServer::start()).collect();
    let report = run(
        &servers,
        16,
        "[load]\nclients = 512\nduration = \"3s\"\n[op.put]\nval-size = 256\nkey-space-size = 1000\n",
    )
    .await;
    let busy = report.client.as_ref().and_then(|c| c.busy.clone()).expect("client busy");
    let peak = busy.worker_peak.expect("worker busy measured");
    assert!(peak > 0.9, "one worker, 256 clients, an instant server: {busy:?}");
    let warning = report.client_limit().expect("a warning");
    assert!(warning.contains("--workers"), "{warning}");
    let text = etcdlat_render::text(&report, &etcdlat_render::TextOptions::default());
    assert!(text.contains("\nFindings:\n  the figures may be the client's"), "{text}");
    assert!(text.contains("busiest worker"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_light_run_is_not_flagged() {
    let servers = [NullServer::start()];
    // One client: the worker waits for every answer. (No rate: on a loaded machine a paced
    // run's timer can wake late, and that is rightly reported.)
    let report =
        run(&servers, 1, "[load]\nclients = 1\nduration = \"2s\"\n[op.put]\nval-size = 256\n")
            .await;
    let busy = report.client.as_ref().and_then(|c| c.busy.clone()).expect("client busy");
    assert!(busy.worker_peak.expect("measured") < 0.8, "{busy:?}");
    assert_eq!(report.client_limit(), None, "{busy:?}");
    let text = etcdlat_render::text(&report, &etcdlat_render::TextOptions::default());
    assert!(!text.contains("Findings:"), "{text}");
}
