//! The client's own cost, end to end, against an in-process null server that answers etcd's
//! KV API instantly (`etcdlat_testkit::NullServer`, on its own thread): the ceiling etcdlat
//! can reach, and what each request costs the client.
//!
//! - `worker-cpu`: CPU time of the worker threads (clients, connections, recording) per put;
//!   criterion's "time" is that CPU time per request.
//! - `worker-cpu-audited`: the same with `[checks] audit = true`: what recording the audit's
//!   entries adds per put.
//! - `wall`: wall time per put at full speed, the inverse of throughput.
//! - `p50-added` (1 connection, 1 client): the median latency of a put, the null server
//!   answering instantly: what the client, the null server and the kernel's loopback
//!   round trip add together.
//! - `p50-bare-h2` (1 connection, 1 client): the same median for the least a client can
//!   do: one HTTP/2 connection and a loop that sends a framed put and reads the answer, no
//!   runtime of etcdlat's, no recording. `p50-added` minus this is what etcdlat itself adds.
//!
//! `cargo bench --bench client`; figures and method in benches/README.md.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use etcdlat::core::{OpKind, Operation, PutOp, Report, Scenario};
use etcdlat::driver::Driver;
use etcdlat_testkit::NullServer;

/// The allocator the `etcdlat` binary uses, so that the figures are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn put_scenario(total: u64, clients: u32) -> Scenario {
    let mut s = Scenario::new(Operation::Put(PutOp {
        val_size: 256,
        key_space_size: 10_000,
        seed: Some(1),
        ..PutOp::default()
    }));
    s.load.clients = clients;
    // Enough requests for every client to be busy.
    s.load.total = Some(total.max(u64::from(clients) * 4));
    s
}

/// The run's worker CPU, scaled to the `iters` requests criterion asked for.
fn worker_cpu_per(report: &Report, iters: u64) -> Duration {
    let cpu = report.client.as_ref().and_then(|c| c.worker_cpu_s).expect("worker CPU measured");
    Duration::from_secs_f64(cpu * iters as f64 / report.requests() as f64)
}

fn end_to_end(c: &mut Criterion) {
    let server = NullServer::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    for (conns, clients) in [(1u32, 1u32), (4, 256)] {
        let driver = rt
            .block_on(Driver::builder().endpoints([server.endpoint()]).conns(conns).connect())
            .expect("connecting to the null server");
        let mut group = c.benchmark_group(format!("put-null/{conns}x{clients}"));
        group.sample_size(10).warm_up_time(Duration::from_secs(1));
        group.measurement_time(Duration::from_secs(5));
        group.bench_function("worker-cpu", |b| {
            b.iter_custom(|iters| {
                let report = rt.block_on(driver.run(&put_scenario(iters, clients))).expect("a run");
                worker_cpu_per(&report, iters)
            });
        });
        // The same with the audit on: its recording in the workers (the read back after
        // the run is not worker time).
        group.bench_function("worker-cpu-audited", |b| {
            b.iter_custom(|iters| {
                let mut s = put_scenario(iters, clients);
                s.checks.audit = true;
                let report = rt.block_on(driver.run(&s)).expect("a run");
                assert!(report.audit.is_some(), "the run was audited");
                worker_cpu_per(&report, iters)
            });
        });
        group.bench_function("wall", |b| {
            b.iter_custom(|iters| {
                let s = put_scenario(iters, clients);
                let report = rt.block_on(driver.run(&s)).expect("a run");
                Duration::from_secs_f64(report.duration_s * iters as f64 / report.requests() as f64)
            });
        });
        if clients == 1 {
            group.bench_function("p50-added", |b| {
                b.iter_custom(|iters| {
                    let s = put_scenario(iters.max(100), clients);
                    let report = rt.block_on(driver.run(&s)).expect("a run");
                    report.op(OpKind::Put).latency.quantile(0.5).mul_f64(iters as f64)
                });
            });
            group.bench_function("p50-bare-h2", |b| {
                b.iter_custom(|iters| {
                    let median = rt.block_on(bare_h2_median(&server.endpoint(), iters.max(100)));
                    median.mul_f64(iters as f64)
                });
            });
        }
        group.finish();
    }
}

/// The median round trip of `n` puts sent one after another on one bare HTTP/2
/// connection: the floor under `p50-added` on this machine.
async fn bare_h2_median(endpoint: &str, n: u64) -> Duration {
    use bytes::{BufMut, Bytes, BytesMut};
    use prost::Message;

    let addr = endpoint.trim_start_matches("http://").to_owned();
    let tcp = tokio::net::TcpStream::connect(&addr).await.expect("dialling the null server");
    tcp.set_nodelay(true).expect("TCP_NODELAY");
    let (mut send, conn) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
    tokio::spawn(conn);
    let put = etcd_client::proto::PbPutRequest {
        key: b"bare".to_vec(),
        value: vec![7; 256],
        ..Default::default()
    };
    let mut frame = BytesMut::with_capacity(5 + put.encoded_len());
    frame.put_u8(0);
    frame.put_u32(u32::try_from(put.encoded_len()).expect("small"));
    put.encode(&mut frame).expect("encoding");
    let frame: Bytes = frame.freeze();
    let uri: http::Uri = format!("{endpoint}/etcdserverpb.KV/Put").parse().expect("a URI");

    let mut took = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let started = std::time::Instant::now();
        let request = http::Request::post(uri.clone())
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("a request");
        send = send.ready().await.expect("connection ready");
        let (response, mut stream) = send.send_request(request, false).expect("a stream");
        stream.send_data(frame.clone(), true).expect("sending");
        let mut body = response.await.expect("an answer").into_body();
        while let Some(chunk) = body.data().await {
            let chunk = chunk.expect("data");
            let _ = body.flow_control().release_capacity(chunk.len());
        }
        let trailers = body.trailers().await.expect("trailers");
        assert!(trailers.is_some_and(|t| t.get("grpc-status").is_some_and(|s| s == "0")));
        took.push(started.elapsed());
    }
    took.sort_unstable();
    took[took.len() / 2]
}

criterion_group!(benches, end_to_end);
criterion_main!(benches);
