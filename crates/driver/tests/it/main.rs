//! The driver against real etcd servers started by the testkit.
//!
//! - `apiserver`: k8s.io/apiserver's own etcd3 storage (a Go program built against it) and
//!   etcdlat's `k8s-*` operations, through a wiretap in front of one etcd: creates, gets,
//!   updates (conflicting too), deletes, paginated lists, counts, the watch cache's list and
//!   watch and consistent reads send requests of the same shapes, or the stated difference.
//! - `audit`: the consistency audit on 3-member clusters: nothing lost or out of order
//!   through a paused and a killed leader, counts reconciled with the server's revisions;
//!   serializable reads on followers behind under write load, on one member never.
//! - `barrier`: the start barrier of distributed runs: parties arriving apart pass
//!   together, leave no key, and must agree on their number.
//! - `busy`: the client as the bottleneck, reported: a worker driving an instant server is
//!   flagged with what to change, a light run's is not.
//! - `cluster`: targeting on 3-member clusters (leader, followers, member, all), proven by
//!   response headers and the members' own counters; a killed leader is detected and followed.
//! - `fault`: scripted faults during a run (a killed follower, a paused leader, the only
//!   server killed and restarted, compact / defrag / move-leader against endpoints), and the
//!   report of what each did to the service.
//! - `finding`: a member on a slow disk (a block-I/O cgroup throttling its writes) is a WAL
//!   fsync finding, once, in the report and its text; unthrottled it is none.
//! - `kubernetes`: the apiserver's requests (`k8s-*`) on 3 members, checked on the server:
//!   creates once per name, updates and deletes whose compares fail only on stale revisions
//!   (never with one writer per object), lists pinned to their first page's revision,
//!   consistent reads, events on shared leases, the apiserver's compactor, pods' lives
//!   (each client's creates, updates and deletes of new names); of racing creates one wins; after a churn the run's watch cache is what a fresh list says;
//!   the revision moved by exactly the successful mutating transactions and compactor
//!   writes.
//! - `load`: 10,000 watchers over 1,000 connections get every event, and 10,000 put clients
//!   over 1,000 connections all complete (with timings printed).
//! - `metrics`: every member's `/metrics` and the client's own CPU time and memory are in
//!   the report, and move as the load says (proposals committed, fsyncs, bytes); on a
//!   3-member local cluster, writes of known size move each member's storage writes and data
//!   dir by at least the bytes written, CPU and memory have a sample a second, context
//!   switches grow, and the client's socket bytes cover the keys and values.
//! - `network`: the emulated network of local clusters: latencies follow the links, a line
//!   rate caps large writes, a partitioned leader loses its leadership, the report names the
//!   network, nothing left listening.
//! - `object_size`: a modelled cluster's pods stored at sizes drawn from their
//!   distribution, spanning its ranges by weight, each pod one size in every write.
//! - `put`: puts change the store as the report says (revision, keys, big values).
//! - `range`: reads return the data put; consistency, limit, count-only.
//! - `run`: how runs connect and stop (connections, rate, duration, shutdown, bad endpoints).
//! - `step`: client steps: each step's total sent by exactly its clients, the steps apart,
//!   keys continuing, timed steps ending at their time from the start, warm-up before them,
//!   a stop ending them.
//! - `security`: TLS, mutual TLS and auth against etcd started with them; an untrusted
//!   certificate, a refused client certificate, plaintext against TLS (and back), a wrong
//!   password and a missing user each fail naming the cause; one token per run, renewed
//!   after a restart.
//! - `schedule`: open-loop schedules (a SIGSTOP stall shows in the corrected percentiles,
//!   rates kept, Poisson arrivals, stages).
//! - `toxiproxy`: network steps against a cluster etcdlat did not start, as toxics on a real
//!   toxiproxy server in front of it: felt during the step and not around it, removed after
//!   the run (stopped early too); toxiproxy unreachable or without a mapped proxy fails first.
//! - `watch`: watch, watch-latency and watch-get deliver every expected event exactly once;
//!   event latency from the put; stopping a watch run.
//! - `watch_stream`: the Kubernetes model's watch streams per apiserver, node leases and
//!   identity leases (two namespaces of leases) apart, each with its own keys' events.
//! - `workload`: the other request workloads (txn-put, txn-mixed, delete, leases, STM, mixes,
//!   zipf keys), background compaction and the HashKV check, checked on the server.

mod apiserver;
mod audit;
mod barrier;
mod busy;
mod cluster;
mod fault;
mod finding;
mod kubernetes;
mod load;
mod metrics;
mod network;
mod object_size;
mod put;
mod range;
mod run;
mod schedule;
mod security;
mod step;
mod toxiproxy;
mod watch;
mod watch_stream;
mod workload;

use std::time::Duration;

use etcdlat_core::{Report, Scenario};
use etcdlat_driver::Progress;
use etcdlat_testkit::{Etcd, eventually};

/// How long a run may take to get under way before a test gives up on it: a busy two-core
/// machine can be slow to start, and a test waits for what it can see rather than guess.
pub const START_WITHIN: Duration = Duration::from_secs(20);

/// A scenario from TOML, panicking with the error when invalid.
pub fn scenario(toml: &str) -> Scenario {
    Scenario::from_toml_str(toml).unwrap_or_else(|e| panic!("invalid test scenario: {e}"))
}

/// Returns once the run `progress` follows has completed requests (or after
/// [`START_WITHIN`]): the run is under way. Its count then, which the caller asserts on.
pub async fn under_way(progress: &Progress) -> u64 {
    eventually(START_WITHIN, async || progress.completed(), |&n| n > 0).await
}

/// Runs the scenario in `toml` once on `etcd`, over `conns` connections of a driver made
/// for it.
pub async fn run_on(etcd: &Etcd, conns: u32, toml: &str) -> Report {
    etcd.driver(conns).await.run(&scenario(toml)).await.expect("a run")
}
