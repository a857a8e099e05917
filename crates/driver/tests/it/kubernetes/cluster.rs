//! A modelled cluster: nodes preloaded and sent at their derived rates, node leases renewed
//! in turn (and not ready when renewed too seldom), events on leases shared a thousand at
//! most, the apiserver's compactor, and a steady-state run that compacts and expires event
//! leases.

use etcd_client::{DeleteOptions, GetOptions};
use etcdlat_core::report::kubernetes::{SloVerdict, verdict};
use etcdlat_core::workload::kubernetes::Verb;
use etcdlat_core::{OpKind, Report};
use etcdlat_testkit::{Etcd, skip};

use super::{held, keys, run, updates_under, watch_row};
use crate::scenario;

#[tokio::test]
async fn events_share_leases_of_an_hour_and_a_minute_a_thousand_at_most() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver_builder().conns(2).workers(1).connect().await.unwrap();
    let before = etcd.revision().await;
    let report = run(&driver, 4, 2500, "k8s-event", "object-size = 100").await;
    let event = report.op(OpKind::K8sEvent);
    assert_eq!((event.ok, event.errors_total), (2500, 0), "{:?}", event.errors);
    assert_eq!(etcd.revision().await - before, 2500);

    let events = keys(&etcd, "/registry/events/").await;
    assert_eq!(events.len(), 2500);
    let mut client = etcd.client().await;
    let leases = client.leases().await.unwrap();
    assert_eq!(leases.leases().len(), 3, "one worker: 1,000 events a lease");
    for lease in leases.leases() {
        let ttl = client.lease_time_to_live(lease.id(), None).await.unwrap();
        assert_eq!(ttl.granted_ttl(), 3660, "the TTL and the reuse time");
    }
    assert!(events.iter().all(|kv| kv.lease() != 0));

    // A second run names its events apart; so do the workers of a timed run, after a
    // warm-up, whose request numbers start again.
    run(&driver, 4, 10, "k8s-event", "").await;
    assert_eq!(keys(&etcd, "/registry/events/").await.len(), 2510);
    let driver = etcd.driver_builder().conns(2).workers(2).connect().await.unwrap();
    let timed = "[load]\nclients = 4\nduration = \"1s\"\nwarmup = \"300ms\"\n[op.k8s-event]\n";
    let report = driver.run(&scenario(timed)).await.expect("a run");
    let event = report.op(OpKind::K8sEvent);
    assert!(event.ok > 0 && event.errors_total == 0, "{:?}", event.errors);
}

#[tokio::test]
async fn the_apiserver_compactor_claims_compact_rev_key_and_compacts_to_the_revision_before() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(2).await;
    run(&driver, 4, 50, "k8s-create", "objects = 50").await;
    let before = etcd.revision().await;
    let toml = "[load]\nclients = 4\nduration = \"2s\"\n[op.k8s-update]\nobjects = 50\n\
        [compaction]\ninterval = \"300ms\"\nstyle = \"apiserver\"\n";
    let report = driver.run(&scenario(toml)).await.expect("a run");
    let (update, claims, compact) =
        (report.op(OpKind::K8sUpdate), report.op(OpKind::K8sCompactor), report.op(OpKind::Compact));
    assert_eq!((update.errors_total, claims.errors_total, compact.errors_total), (0, 0, 0));
    // One compactor wins every claim, and compacts from its second on.
    assert!(
        claims.ok >= 3 && claims.keys == claims.ok,
        "{} claims, {} won",
        claims.ok,
        claims.keys
    );
    assert!(compact.ok >= 2 && compact.ok < claims.ok, "{} compactions", compact.ok);
    // The revision moved by the successful updates and the compactor's writes, nothing else.
    assert_eq!(etcd.revision().await - before, (update.ok + claims.keys) as i64);
    let mut client = etcd.client().await;
    let key = client.get("compact_rev_key", None).await.unwrap();
    let key = &key.kvs()[0];
    assert_eq!(key.version(), claims.keys as i64, "a version per won claim");
    // Its value is the revision its previous claim saw, which the last compaction took: a
    // read below it is refused as compacted.
    let seen: i64 = key.value_str().unwrap().parse().unwrap();
    assert!(seen > before, "{seen}");
    let old = client.get("compact_rev_key", Some(GetOptions::new().with_revision(before))).await;
    assert!(old.is_err(), "revision {before} was compacted: {old:?}");
    held(&report);
}

/// `[kubernetes] nodes = 50` preloads exactly its nodes, node leases and pods (one create
/// each, counted by prefix and name), then sends each flow at its derived rate: the updates
/// each node resource's keys took (their versions), the pods' lives' requests, and the
/// events and counts the run made are each flow's share of the open-loop rate, within 30%
/// (a mix picks at random). The node status, churn, list and count rates are set higher
/// than a 50-node cluster's so that every flow has a hundred-odd requests in 20 s, and pods
/// of 1 KiB so that one Get lists them. The revision moves by exactly the preload and the
/// run's successful writes; the lives' pods left are those created and not yet deleted.
#[tokio::test]
async fn a_cluster_of_nodes_is_preloaded_and_sent_at_its_derived_rates() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(4).await;
    let s = scenario(
        "[load]\nclients = 16\nduration = \"20s\"\n\
         [kubernetes]\nnodes = 50\nnode-status-interval = \"10s\"\npod-churn = 1\n\
         lists-per-minute = 20\ncounts-per-minute = 20\npod-size = \"1KiB\"\n\
         history = \"0s\"\npreload-events = false\npods-per-controller = 0\n\
         apiserver-lease-interval = \"0s\"\napiserver = \"1.30\"\n",
    );
    assert_eq!(
        s.load.rate, 28,
        "5 + 5 leases and nodes, 8 lives' requests + 5 events, 1 list, 4 counts"
    );
    let before = etcd.revision().await;
    let report = driver.run(&s).await.expect("a run");

    for (prefix, objects) in [("/registry/minions/", 50), ("/registry/leases/", 50)] {
        assert_eq!(keys(&etcd, prefix).await.len(), objects, "{prefix}");
    }
    // The preloaded pods are named `pod-` and their number; the lives' names have the
    // run's part between.
    let (preloaded, lived): (Vec<_>, Vec<_>) =
        keys(&etcd, "/registry/pods/").await.into_iter().partition(|kv| {
            let name = kv.key_str().unwrap().rsplit('/').next().unwrap();
            name.len() == "pod-".len() + 8
        });
    assert_eq!(preloaded.len(), 1500);
    let seconds = report.op(OpKind::K8sUpdate).duration_s;
    // Each of the 28 requests a second picks its flow at random by rate: a flow's count is
    // binomial, held within 5 standard deviations (one run in 1.7 million falls outside;
    // 30% failed one in 180), which still tells a flow at twice or half its rate.
    let near = |what: &str, got: f64, per_second: f64| {
        let (n, p) = (28.0 * seconds, per_second / 28.0);
        let want = n * p;
        let bound = (5.0 * (n * p * (1.0 - p)).sqrt()).max(0.1 * want);
        assert!((got - want).abs() <= bound, "{what}: {got} requests, {want} expected");
    };
    near("lease renewals", updates_under(&etcd, "/registry/leases/").await as f64, 5.0);
    near("node status updates", updates_under(&etcd, "/registry/minions/").await as f64, 5.0);
    let (create, delete) = (report.op(OpKind::K8sCreate), report.op(OpKind::K8sDelete));
    near("events", keys(&etcd, "/registry/events/").await.len() as f64, 5.0);
    near("counts", report.op(OpKind::K8sCount).ok as f64, 4.0);
    assert!(report.op(OpKind::K8sList).ok > 0);
    let sent: u64 = report.ops.values().map(|op| op.ok + op.errors_total).sum();
    assert_eq!(report.errors_total(), 0, "{:?}", report.ops);
    let want = 28.0 * seconds;
    assert!((sent as f64 - want).abs() <= 0.3 * want, "{sent} requests, {want} expected");
    held(&report);
    // Every own write moved the revision once: the preload's creates, the compactor's
    // claim before the run (the model's apiserver compacts every 5 minutes), the updates,
    // the lives' creates and deletes, the events.
    let writes = [OpKind::K8sUpdate, OpKind::K8sCreate, OpKind::K8sDelete, OpKind::K8sEvent]
        .map(|k| report.op(k).ok)
        .iter()
        .sum::<u64>();
    assert_eq!(etcd.revision().await - before, (1600 + 1 + writes) as i64);
    // Each client's lives one after another: at most one each is not over.
    assert!(create.ok >= delete.ok && create.ok - delete.ok <= 16, "{} {}", create.ok, delete.ok);
    assert_eq!(lived.len() as u64, create.ok - delete.ok, "the lives not over left their pods");

    // By resource and verb, each flow on its own line: as many successes as etcd stored
    // writes under its prefix, and together what its kind counted.
    let by = |resource: &str, verb: Verb| {
        let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
        let row = k.requests.iter().find(|r| r.resource == resource && r.verb == verb);
        let row = row.unwrap_or_else(|| panic!("no {resource} {verb:?} in {:?}", k.requests));
        assert_eq!(row.errors_total, 0, "{resource} {verb:?}");
        // Counts are the apiserver's own calls, reported and not judged; the rest judged.
        assert_eq!(row.judged, verb != Verb::Count, "{resource} {verb:?}");
        match &row.slo {
            Some(slo) => assert_eq!(slo.verdict, SloVerdict::Met, "{resource} {verb:?}"),
            None => assert!(!row.judged, "{resource} {verb:?} has an SLO"),
        }
        row.ok
    };
    let mut updated = 0;
    for (resource, prefix) in [("leases", "/registry/leases/"), ("minions", "/registry/minions/")] {
        let stored = updates_under(&etcd, prefix).await as u64;
        assert_eq!(by(resource, Verb::Update), stored, "{resource} updates");
        updated += stored;
    }
    // The pods' lives: their rows are their kinds' (no other flow creates, updates a pod
    // or deletes), at the lives' rate together.
    let lives = [Verb::Create, Verb::Update, Verb::Delete].map(|verb| by("pods", verb));
    assert_eq!([lives[0], lives[2]], [create.ok, delete.ok]);
    assert_eq!(updated + lives[1], report.op(OpKind::K8sUpdate).ok, "the kind counts them all");
    near("pods' lives", lives.iter().sum::<u64>() as f64, 8.0);
    let left_updates: i64 = lived.iter().map(|kv| kv.version() - 1).sum();
    assert!(left_updates as u64 <= lives[1]);
    // The run's pods cache, made for the lives (no other flow needs one), heard of each.
    assert_eq!(watch_row(&report, "pods").ok, lives.iter().sum::<u64>());
    let events = keys(&etcd, "/registry/events/").await.len() as u64;
    assert_eq!(by("events", Verb::Create), events);
    assert_eq!(by("pods", Verb::List), report.op(OpKind::K8sList).ok);
    // Every SLO met, no lease past 40 s: the run sustained its 50 nodes.
    let v = verdict(&report);
    assert_eq!((v.nodes, v.sustained, v.not_ready), (Some(50), true, 0), "{:?}", v.missed);
    let k = report.kubernetes.as_ref().expect("reported");
    assert_eq!((k.nodes, k.sustained), (Some(50), true));
    // The verdict says it is etcd's side, under which model, at the default share.
    let scope = v.scope.as_ref().expect("a verdict of apiserver requests has its scope");
    assert_eq!((scope.side.as_str(), scope.etcd_share), ("etcd", 0.5));
    assert!(scope.apiserver.contains("as etcdlat models it"), "{}", scope.apiserver);
    let counts: u64 =
        ["minions", "leases", "pods", "events"].map(|r| by(r, Verb::Count)).iter().sum();
    assert_eq!(counts, report.op(OpKind::K8sCount).ok);
}

/// Node leases renewed less often than the node-monitor grace period allows are counted
/// NotReady. A node whose lease etcd stored at version `v` (the preload's create, then
/// `v - 1` renewals) went at least the run over `v` without one, so with a 1 s grace every
/// node with `duration / v > 1 s` must be counted, and the longest gap is at least the run
/// over the fewest versions; with a grace longer than the run, none is.
#[tokio::test]
async fn node_leases_renewed_less_often_than_the_grace_period_are_not_ready() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(2).await;
    let model = |grace: &str, duration: &str| {
        scenario(&format!(
            "[load]\nclients = 6\nduration = \"{duration}\"\n\
             [kubernetes]\nnodes = 6\npods-per-node = 0\nnode-status-interval = \"0s\"\n\
             pod-churn = 0\ncounts-per-minute = 0\nnode-lease-interval = \"4s\"\n\
             node-monitor-grace-period = \"{grace}\"\nhistory = \"0s\"\n\
             apiserver-lease-interval = \"0s\"\n"
        ))
    };
    let report = driver.run(&model("1s", "6s")).await.expect("a run");
    let versions: Vec<i64> =
        keys(&etcd, "/registry/leases/").await.iter().map(|kv| kv.version()).collect();
    assert_eq!(versions.len(), 6);
    let leases = report.kubernetes.as_ref().and_then(|k| k.node_leases.as_ref());
    let leases = leases.expect("the node leases' renewals are reported");
    let run_us = report.duration_s * 1e6;
    let must = versions.iter().filter(|&&v| run_us / v as f64 > 1e6).count() as u64;
    assert_eq!((leases.nodes, leases.not_ready_after_s), (6, 1.0));
    assert!(leases.not_ready >= must.max(1), "{leases:?}, versions {versions:?}");
    let fewest = *versions.iter().min().expect("six leases") as f64;
    assert!(leases.max_gap_us as f64 >= run_us / fewest * 0.99, "{leases:?} {versions:?}");
    assert!(leases.max_gap_us as f64 <= run_us * 1.01, "{leases:?} in {run_us} us");
    assert!(leases.p99_gap_us <= leases.max_gap_us);

    // Afresh, held to a minute: no node went that long.
    etcd.client()
        .await
        .delete("/registry/", Some(DeleteOptions::new().with_prefix()))
        .await
        .unwrap();
    let report = driver.run(&model("60s", "3s")).await.expect("a run");
    let leases = report.kubernetes.and_then(|k| k.node_leases).expect("reported");
    assert_eq!((leases.nodes, leases.not_ready), (6, 0), "{leases:?}");
}

/// Node leases are renewed in turn, as each node's kubelet renews its own at the lease
/// interval: with node status updates drawn at random beside them, by 8 clients on 2
/// workers, every node's lease is renewed as often as every other's, give or take one, and
/// no node waits much longer than the interval. Drawn by whichever client took a renewal,
/// each node waited for its client to draw one, and some waited several intervals.
#[tokio::test]
async fn node_leases_are_renewed_in_turn_at_their_interval() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let model = scenario(
        "[load]\nclients = 8\nduration = \"4s\"\n\
         [kubernetes]\nnodes = 60\npods-per-node = 0\nnode-status-interval = \"1s\"\n\
         pod-churn = 0\ncounts-per-minute = 0\nnode-lease-interval = \"1s\"\nhistory = \"0s\"\n\
         apiserver-lease-interval = \"0s\"\n",
    );
    let report = driver.run(&model).await.expect("a run");
    let renewals = report.op(OpKind::K8sUpdate).ok;
    assert!(renewals > 300, "leases and statuses, 120/s for 4 s: {renewals}");
    let versions: Vec<i64> =
        keys(&etcd, "/registry/leases/").await.iter().map(|kv| kv.version()).collect();
    assert_eq!(versions.len(), 60);
    let (fewest, most) = (versions.iter().min().unwrap(), versions.iter().max().unwrap());
    assert!(most - fewest <= 1, "renewals per node from {fewest} to {most}: {versions:?}");
    assert!(*fewest >= 4, "each renewed about every second for 4 s: {versions:?}");
    let leases = report.kubernetes.and_then(|k| k.node_leases).expect("reported");
    assert_eq!((leases.nodes, leases.not_ready), (60, 0), "{leases:?}");
    // Gaps include the run's start to each node's first renewal and its last to the end,
    // and the run's first second also opens its connections.
    assert!(leases.max_gap_us < 3_000_000, "a 1 s interval: {leases:?}");
}

/// A modelled cluster in steady state, scaled down: its history (two seconds of every
/// flow's writes) and a TTL of events (20 s of them, on a lease per second, each with the
/// TTL its age leaves it) are preloaded, and during a run of three compaction intervals
/// the apiserver's compactor compacts, resuming from the claim made before the run (at
/// the first interval, to the revision the preload left), and the oldest event leases
/// expire, etcd deleting their events at once; the report says so, and the server agrees:
/// the revision before the run is compacted, and the events under the prefix are the
/// preloaded and created ones less those the expiries deleted.
#[tokio::test]
async fn a_steady_state_run_compacts_and_expires_event_leases() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s = scenario(
        "[load]\nclients = 8\nduration = \"6500ms\"\n\
         [kubernetes]\nnodes = 20\npods-per-node = 1\npod-churn = 2\npod-size = \"1KiB\"\n\
         node-size = \"1KiB\"\nevent-ttl = \"20s\"\nhistory = \"2s\"\n\
         compaction-interval = \"2s\"\ncounts-per-minute = 0\nlists-per-minute = 0\n\
         apiserver-lease-interval = \"1s\"\n",
    );
    let k = s.kubernetes.clone().unwrap();
    let events = k.event_preload().expect("events preloaded");
    assert_eq!((events.windows, events.per_window, events.leases_per_window()), (20, 10, 1));
    let start = etcd.revision().await;
    let report = driver.run(&s).await.expect("a run");
    assert_eq!(report.errors_total(), 0, "{:?}", report.ops);
    let steady = report.kubernetes.as_ref().and_then(|k| k.steady_state.clone());
    let steady = steady.expect("a model's run reports its steady state");
    let history: u64 = k.history().iter().map(|(_, n)| n).sum();
    assert_eq!(steady.history_writes, history);
    assert_eq!(
        history,
        4 + 32 + 2 * 8 + 2 * 6,
        "2 s of 2 renewals a second, of 2 lives of 8 a second, of their ReplicaSet's and \
         EndpointSlice's 4 updates a second each, of 3 apiservers' 2 leases each a second"
    );
    assert_eq!((steady.preloaded_events, steady.preloaded_event_leases), (200, 20));
    // Compactions at 2 s and 4 s (and perhaps 6 s), each to the revision of the claim
    // one interval before.
    let compact = report.op(OpKind::Compact);
    assert!(steady.compactions >= 2 && steady.compactions == compact.ok, "{steady:?}");
    assert_eq!(report.op(OpKind::K8sCompactor).errors_total, 0);
    let objects: u64 = k.preload().iter().map(|o| o.objects).sum();
    assert_eq!(objects, 20 * 3 + 1 + 1 + 3 * 2, "nodes, leases, pods, a ReplicaSet and a Service");
    let preloaded = start + objects as i64 + steady.history_writes as i64 + 200;
    assert!(steady.compacted_revision > preloaded, "{steady:?}, preload to {preloaded}");
    let mut client = etcd.client().await;
    let old = client.get("/registry/", Some(GetOptions::new().with_revision(preloaded))).await;
    assert!(old.is_err(), "revision {preloaded} was compacted: {old:?}");
    let at = client
        .get("/registry/", Some(GetOptions::new().with_revision(steady.compacted_revision)))
        .await;
    assert!(at.is_ok(), "the compacted revision itself is kept: {at:?}");
    // Windows with 1 to about 6 s left expire in the run: one lease, 10 events each.
    assert!(steady.leases_expired >= 3, "{steady:?}");
    assert_eq!(steady.keys_expired, 10 * steady.leases_expired, "{steady:?}");
    assert_eq!(steady.largest_expiry_keys, 10);
    let created = report.op(OpKind::K8sEvent).ok;
    let left = keys(&etcd, "/registry/events/").await.len() as u64;
    // Expiries after the run's end may have deleted more since.
    assert!(left <= 200 + created - steady.keys_expired, "{left} events left, {steady:?}");
    assert!(left >= 200 + created - steady.keys_expired - 60, "{left} events left, {steady:?}");
    held(&report);
    apiserver_writes_at_their_keys(&etcd, &report).await;
}

/// The apiserver's other writes of a modelled cluster, each a row of the report by
/// resource and verb, at the apiserver's keys: nodes cluster-scoped, node leases in
/// kube-node-lease, identity leases in kube-system, master leases cluster-scoped on 15 s
/// leases (a new one each write), ReplicaSets and EndpointSlices in the pods' namespaces.
async fn apiserver_writes_at_their_keys(etcd: &Etcd, report: &Report) {
    let k = report.kubernetes.as_ref().expect("reported");
    let rows: Vec<(&str, Verb)> =
        k.requests.iter().map(|r| (r.resource.as_str(), r.verb)).collect();
    for resource in ["replicasets", "endpointslices", "masterleases", "leases"] {
        let row = k.requests.iter().find(|r| r.resource == resource && r.verb == Verb::Update);
        let row = row.unwrap_or_else(|| panic!("no {resource} update in {rows:?}"));
        assert!(row.ok > 0 && row.errors_total == 0, "{resource}: {} ok, {:?}", row.ok, row.errors);
    }
    let mut client = etcd.client().await;
    for key in [
        "/registry/minions/node-00000000",
        "/registry/leases/kube-node-lease/node-00000019",
        "/registry/leases/kube-system/apiserver-00000002",
        "/registry/pods/ns-0/pod-00000000",
        "/registry/replicasets/ns-0/rs-00000000",
        "/registry/endpointslices/ns-0/svc-00000000",
    ] {
        let got = client.get(key, None).await.unwrap();
        assert_eq!(got.kvs().len(), 1, "{key}");
    }
    let masters = keys(etcd, "/registry/masterleases/").await;
    let names: Vec<&str> = masters.iter().map(|kv| kv.key_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "/registry/masterleases/ip-00000000",
            "/registry/masterleases/ip-00000001",
            "/registry/masterleases/ip-00000002"
        ]
    );
    for kv in &masters {
        assert!(kv.version() > 1, "written again in the run: {kv:?}");
        let ttl = client.lease_time_to_live(kv.lease(), None).await.unwrap();
        assert_eq!(ttl.granted_ttl(), 15, "the master lease's TTL, no reuse");
    }
    assert_eq!(keys(etcd, "/registry/leases/").await.len(), 20 + 3);
}
