//! The apiserver's reads: lists pinned to their first page's revision, counts, lists of a
//! compacted revision, the watch caches (a fresh list after a churn, the watch row timing
//! the delivery of every own write), consistent reads' waits for progress notifications,
//! and the reads each apiserver release sends to etcd.

use etcdlat_core::report::kubernetes::SloVerdict;
use etcdlat_core::workload::kubernetes::Verb;
use etcdlat_core::{ErrorCode, OpKind, Report};
use etcdlat_testkit::{Etcd, skip};

use super::{held, run, updates_under, watch_row};
use crate::scenario;

#[tokio::test]
async fn reads_get_list_in_pinned_pages_count_and_wait_for_the_cache() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(4).await;
    let nodes = "resource = \"minions\"\nobjects = 100\nobject-size = 300\npage-size = 7";
    run(&driver, 4, 100, "k8s-create", nodes).await;

    let report = run(&driver, 4, 50, "k8s-get", nodes).await;
    let get = report.op(OpKind::K8sGet);
    assert_eq!((get.ok, get.keys, get.value_bytes), (50, 50, 50 * 300));

    // Every list reads all 100 in 15 pages of at most 7, as one sample each.
    let report = run(&driver, 2, 10, "k8s-list", nodes).await;
    let list = report.op(OpKind::K8sList);
    assert_eq!((list.ok, list.keys, list.pages), (10, 1000, 150));
    held(&report);
    // Each page is an API call of its own, timed and judged against the list SLO per page:
    // the 150 pages, none near 30 s, each list's slowest page within the whole list's time.
    let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
    let calls = k.requests[0].page_calls.as_ref().expect("a list's pages as calls");
    assert_eq!((calls.pages, calls.over_limit), (150, 0));
    assert!(calls.slowest_max_us > 0 && calls.slowest_max_us <= list.latency.max_us(), "{calls:?}");
    let slo = k.requests[0].slo.as_ref().expect("lists are judged");
    assert_eq!((slo.per.as_str(), slo.etcd_limit_s, slo.verdict), ("page", 30.0, SloVerdict::Met));
    assert_eq!(k.scope.side, "etcd");
    // By pages taken: all ten in the bucket of 9 to 16 pages; in pages of 50, two; of 100,
    // one.
    for (page_size, bucket) in [(7, (9, 16)), (50, (2, 2)), (100, (1, 1))] {
        let params = nodes.replace("page-size = 7", &format!("page-size = {page_size}"));
        let report = run(&driver, 2, 10, "k8s-list", &params).await;
        let k = report.kubernetes.expect("the apiserver's requests by resource");
        let buckets: Vec<_> =
            k.requests[0].pages.iter().map(|b| ((b.pages_min, b.pages_max), b.count)).collect();
        assert_eq!(buckets, [(bucket, 10)], "pages of {page_size}");
        assert_eq!((k.requests[0].resource.as_str(), k.requests[0].verb), ("minions", Verb::List));
    }

    let report = run(&driver, 2, 10, "k8s-count", nodes).await;
    assert_eq!(report.op(OpKind::K8sCount).keys, 1000);
    // Counts are the apiserver's own calls: reported, not judged.
    let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
    assert_eq!((k.requests[0].verb, k.requests[0].ok), (Verb::Count, 10));
    assert!(!k.requests[0].judged && k.requests[0].slo.is_none(), "{:?}", k.requests[0]);

    // Lists and consistent reads beside creates of a second set of names: each list holds
    // what its first page counted (its later pages pinned to that revision), and each
    // consistent read finds the cache caught up within the apiserver's 3 s.
    let mixed = "[load]\nclients = 8\ntotal = 600\n\
        [[mix]]\nweight = 1\n[mix.op.k8s-list]\nresource = \"minions\"\nobjects = 100\npage-size = 5\n\
        [[mix]]\nweight = 1\n[mix.op.k8s-consistent-list]\nresource = \"minions\"\nobjects = 100\n\
        [[mix]]\nweight = 2\n[mix.op.k8s-create]\nresource = \"minions\"\nname-prefix = \"more-\"\nobjects = 400\nobject-size = 300\n";
    let report = driver.run(&scenario(mixed)).await.expect("a run");
    let (list, consistent) = (report.op(OpKind::K8sList), report.op(OpKind::K8sConsistentList));
    assert_eq!(
        list.errors_total + consistent.errors_total,
        0,
        "{:?} {:?}",
        list.errors,
        consistent.errors
    );
    assert!(list.ok > 0 && consistent.ok > 0);
    assert!(list.pages >= list.ok * 20, "100 objects and more, 5 a page: {}", list.pages);
    held(&report);
}

#[tokio::test]
async fn a_churn_of_creates_and_deletes_leaves_every_watch_cache_as_a_fresh_list() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    // Two workers sharing the run's watch cache: each one's writes write through it, and
    // reach it by events too.
    let driver = etcd.driver_builder().conns(4).workers(2).connect().await.unwrap();
    let churn =
        "resource = \"pods\"\nname-prefix = \"churn-\"\nobjects = 40\nwriters-per-object = 8";
    let toml = format!(
        "[load]\nclients = 8\ntotal = 2000\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-create]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-delete]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-update]\n{churn}\n"
    );
    let before = etcd.revision().await;
    let report = driver.run(&scenario(&toml)).await.expect("a run");
    let (create, delete, update) =
        (report.op(OpKind::K8sCreate), report.op(OpKind::K8sDelete), report.op(OpKind::K8sUpdate));
    assert!(create.ok > 0 && delete.ok > 0 && update.ok > 0);
    // What failed did so as the apiserver's would: a name taken, an object gone.
    assert_eq!(create.errors_total, create.errors_of(ErrorCode::AlreadyExists));
    assert_eq!(delete.errors_total, delete.errors_of(ErrorCode::NotFound));
    assert_eq!(update.errors_total, update.errors_of(ErrorCode::NotFound));
    assert_eq!(
        etcd.revision().await - before,
        (create.ok + delete.ok + update.ok) as i64,
        "one revision per successful create, delete and update"
    );
    // The cache, its list and the events since, is what a fresh list says.
    held(&report);

    // Of racing creates of one name exactly one succeeds, again and again.
    for round in 0..5 {
        let race = format!("name-prefix = \"race{round}-\"\nobjects = 1");
        let report = run(&driver, 8, 8, "k8s-create", &race).await;
        let create = report.op(OpKind::K8sCreate);
        assert_eq!((create.ok, create.errors_of(ErrorCode::AlreadyExists)), (1, 7), "{round}");
    }
}

/// A list whose later pages are pinned to a revision etcd compacts meanwhile fails with
/// ErrCompacted, and the report counts it apart (and among its errors, under OutOfRange):
/// lists a key a page run while another client writes and compacts to the newest revision
/// every few milliseconds. Without the compactions none fails so.
#[tokio::test]
async fn lists_pinned_to_a_compacted_revision_are_counted_apart() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(2).await;
    let pods = "objects = 200\nobject-size = 100\npage-size = 1";
    run(&driver, 8, 200, "k8s-create", pods).await;
    let compacted_of = |report: &Report| {
        let k = report.kubernetes.as_ref().expect("the apiserver's requests by resource");
        let list = &k.requests[0];
        assert_eq!((list.resource.as_str(), list.verb), ("pods", Verb::List));
        (k.compacted, list.compacted, list.errors_total, list.errors.get("OutOfRange").copied())
    };
    let report = run(&driver, 2, 10, "k8s-list", pods).await;
    assert_eq!(compacted_of(&report), (0, 0, 0, None));

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let compactor = {
        let (stop, mut client) = (stop.clone(), etcd.client().await);
        tokio::spawn(async move {
            let mut compactions = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let put = client.put("/elsewhere/tick", "x", None).await.expect("a put");
                let revision = put.header().expect("a header").revision();
                client.compact(revision, None).await.expect("a compaction");
                compactions += 1;
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
            }
            compactions
        })
    };
    let report = run(&driver, 2, 20, "k8s-list", pods).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(compactor.await.unwrap() > 0);
    let counted = compacted_of(&report);
    let (all, list, errors, out_of_range) = counted;
    assert!(list > 0 && all == list, "compacted, by list, errors, OutOfRange: {counted:?}");
    assert!(list <= errors && Some(list) <= out_of_range, "{counted:?}");
}

/// The run's watch cache, shared by its two workers, receives the events of the run's own
/// writes (creates, updates, deletes), every one of them once in a run that ends cleanly:
/// the watch row counts as many as the writes that succeeded, its lag positive and within the run, held to no SLO
/// and outside the verdict.
#[tokio::test]
async fn the_watch_row_times_the_delivery_of_every_own_write() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver_builder().conns(4).workers(2).connect().await.unwrap();
    let pods = "name-prefix = \"lag-\"\nobjects = 200\nobject-size = 1000";
    run(&driver, 8, 200, "k8s-create", pods).await;
    let started = std::time::Instant::now();
    let report = run(&driver, 8, 1000, "k8s-update", pods).await;
    let run_us = started.elapsed().as_micros() as u64;
    let update = report.op(OpKind::K8sUpdate);
    assert_eq!((update.ok, update.errors_total), (1000, 0), "{:?}", update.errors);
    let watch = watch_row(&report, "pods");
    assert_eq!((watch.ok, watch.errors_total, watch.compacted), (1000, 0, 0));
    // An event read before its write's own answer counts 0 (both arrive together), so half
    // of them or more may: only the largest is surely above 0.
    let (p50, max) = (watch.latency.quantile_us(0.5), watch.latency.quantile_us(1.0));
    assert!(max > 0 && max < run_us, "lag p50 {p50} us, max {max} us, run {run_us} us");
    assert_eq!(watch.slo, None, "Kubernetes has no official watch SLO");
    held(&report);

    // Creates, deletes and updates of names that come and go: each write that succeeded
    // reaches the cache, once.
    let churn =
        "resource = \"pods\"\nname-prefix = \"churn-\"\nobjects = 40\nwriters-per-object = 8";
    let toml = format!(
        "[load]\nclients = 8\ntotal = 1500\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-create]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-delete]\n{churn}\n\
         [[mix]]\nweight = 1\n[mix.op.k8s-update]\n{churn}\n"
    );
    let report = driver.run(&scenario(&toml)).await.expect("a run");
    let written: u64 = [OpKind::K8sCreate, OpKind::K8sDelete, OpKind::K8sUpdate]
        .map(|k| report.op(k).ok)
        .iter()
        .sum();
    assert!(report.op(OpKind::K8sCreate).ok > 0 && report.op(OpKind::K8sDelete).ok > 0);
    assert_eq!(watch_row(&report, "pods").ok, written);
    let k = report.kubernetes.as_ref().expect("reported");
    assert!(k.verdict().missed.iter().all(|m| m.verb != Verb::Watch));
    held(&report);
}

/// Consistent reads of a resource while another's writes move etcd's revision: the cache
/// hears of no event and must ask for progress, so notifications arrive, and each read's
/// wait for one ends within the apiserver's 3 s.
#[tokio::test]
async fn consistent_reads_wait_for_progress_notifications_counted_with_their_gaps() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(4).await;
    let mixed = "[load]\nclients = 8\ntotal = 600\n\
        [[mix]]\nweight = 1\n[mix.op.k8s-consistent-list]\nresource = \"minions\"\nobjects = 10\n\
        [[mix]]\nweight = 2\n[mix.op.k8s-create]\nresource = \"pods\"\nname-prefix = \"progress-\"\nobjects = 400\nobject-size = 300\n";
    let report = driver.run(&scenario(mixed)).await.expect("a run");
    let consistent = report.op(OpKind::K8sConsistentList);
    assert_eq!(consistent.errors_total, 0, "{:?}", consistent.errors);
    let watch = watch_row(&report, "minions");
    let progress = watch.progress.as_ref().expect("the watch's progress");
    assert!(progress.notifications > 0 && progress.waits > 0, "{progress:?}");
    assert!(progress.waits <= consistent.ok, "{progress:?}");
    assert!(progress.wait_p99_us <= progress.wait_max_us, "{progress:?}");
    assert!(progress.wait_max_us > 0 && progress.wait_max_us <= 3_000_000, "{progress:?}");
    held(&report);
}

/// A report row read from its JSON: resource, successes, page buckets (fewest, most).
type Row = (String, u64, Vec<(u64, u64)>);

/// The release chooses what reaches etcd (docs/scenarios.md's table), read from the
/// report's JSON: 1.30's lists of pods go to etcd in pages of 500, every resource is counted
/// there; 1.33's are consistent lists from the watch cache whose continue pages (the 100
/// pods after the cache's first 500) come from etcd; 1.37's are consistent lists from the watch cache (a probe, no page from etcd), each
/// apiserver's consistency checker lists every cached resource in one page of 10,000 at its
/// cache's revision, and only events are counted in etcd. Either way each of the three
/// apiservers watches each cached resource on its own stream (node leases and its identity
/// leases, each a namespace of leases, on one each), and etcd sends every event of the run
/// to each.
#[tokio::test]
async fn the_apiserver_release_chooses_the_lists_that_reach_etcd_and_each_apiserver_watches() {
    if skip() {
        return;
    }
    let run = |release: &str| {
        scenario(&format!(
            "[load]\nclients = 6\nduration = \"6s\"\n\
             [kubernetes]\nnodes = 20\npod-churn = 0\nnode-status-interval = \"5s\"\n\
             lists-per-minute = 60\ncounts-per-minute = 60\npod-size = \"1KiB\"\n\
             consistency-check-period = \"2s\"\napiserver = \"{release}\"\n\
             history = \"0s\"\npreload-events = false\npods-per-controller = 0\n"
        ))
    };
    let mut json = Vec::new();
    for release in ["1.30", "1.33", "1.37"] {
        // Each on an etcd of its own: a model preloads its objects.
        let etcd = Etcd::start().await;
        let driver = etcd.driver(2).await;
        // Node leases and the apiservers' identity leases are leases of two namespaces,
        // each watched on its own stream.
        let watched = [
            ("leases", Some("kube-node-lease"), "/registry/leases/kube-node-lease/"),
            ("leases", Some("kube-system"), "/registry/leases/kube-system/"),
            ("minions", None, "/registry/minions/"),
        ];
        let mut before = Vec::new();
        for (_, _, prefix) in watched {
            before.push(updates_under(&etcd, prefix).await);
        }
        let report = driver.run(&run(release)).await.expect("a run");
        assert_eq!(report.errors_total(), 0, "{release}: {:?}", report.ops);
        held(&report);
        let v = serde_json::to_value(&report).expect("the report as JSON");
        // Each apiserver's own watch of each cached resource (or namespace of it), sent
        // every update of it.
        let streams = v["kubernetes"]["watch_streams"].as_array().expect("watch streams");
        for ((resource, namespace, prefix), before) in watched.into_iter().zip(before) {
            let updates = updates_under(&etcd, prefix).await - before;
            let of: Vec<(u64, u64)> = streams
                .iter()
                .filter(|w| w["resource"] == resource && w["namespace"].as_str() == namespace)
                .map(|w| (w["apiserver"].as_u64().unwrap(), w["events"].as_u64().unwrap()))
                .collect();
            // The identity leases' renewals, 0.3 a second, may not come in 6 s.
            assert!(updates > 0 || namespace == Some("kube-system"), "{release}: {prefix}");
            assert_eq!(of, [0, 1, 2].map(|a| (a, updates as u64)), "{release} {prefix}");
        }
        json.push(v);
    }
    let rows = |v: &serde_json::Value, verb: &str| -> Vec<Row> {
        let rows = v["kubernetes"]["requests"].as_array().expect("rows");
        rows.iter()
            .filter(|r| r["verb"] == verb && r["ok"].as_u64().unwrap() > 0)
            .map(|r| {
                let pages = r["pages"].as_array().unwrap();
                let pages = pages
                    .iter()
                    .map(|b| (b["pages_min"].as_u64().unwrap(), b["pages_max"].as_u64().unwrap()));
                (
                    r["resource"].as_str().unwrap().to_owned(),
                    r["ok"].as_u64().unwrap(),
                    pages.collect(),
                )
            })
            .collect()
    };
    let names = |rows: Vec<Row>| {
        rows.into_iter().map(|(resource, _, pages)| (resource, pages)).collect::<Vec<_>>()
    };
    let keys_per_list = |v: &serde_json::Value| {
        let list = &v["ops"]["k8s-list"];
        list["keys"].as_u64().expect("keys") as f64 / list["ok"].as_u64().expect("ok") as f64
    };
    let (old, between, new) = (&json[0], &json[1], &json[2]);
    // 1.30: the clients' lists of the 600 pods from etcd, two pages of 500 each, every
    // key read; every resource counted in etcd; no consistent read.
    assert_eq!(names(rows(old, "list")), [("pods".to_owned(), vec![(2, 2)])]);
    assert_eq!(keys_per_list(old), 600.0);
    assert!(rows(old, "consistent-list").is_empty());
    let counted = |v| names(rows(v, "count")).into_iter().map(|(r, _)| r).collect::<Vec<_>>();
    assert_eq!(counted(old), ["events", "leases", "masterleases", "minions", "pods"]);
    // 1.33: the clients' lists from the cache, the first page the cache's, the second (the
    // last 100 pods) from etcd; no checker; every resource counted in etcd.
    assert_eq!(names(rows(between, "consistent-list")), [("pods".to_owned(), vec![(2, 2)])]);
    let consistent = &between["ops"]["k8s-consistent-list"];
    assert_eq!(consistent["keys"].as_u64(), consistent["ok"].as_u64().map(|ok| ok * 100));
    assert!(rows(between, "list").is_empty());
    assert_eq!(counted(between), ["events", "leases", "masterleases", "minions", "pods"]);
    // 1.37: the clients' lists from the cache, one page each (the cache's), after the probe
    // that reads no object; the checker's lists of pods, nodes, leases and master leases,
    // one page of 10,000 each; events alone counted in etcd.
    assert_eq!(names(rows(new, "consistent-list")), [("pods".to_owned(), vec![(1, 1)])]);
    assert_eq!(new["ops"]["k8s-consistent-list"]["keys"].as_u64(), Some(0));
    let checked = names(rows(new, "list"));
    let one_page = |r: &str| (r.to_owned(), vec![(1, 1)]);
    let resources = ["leases", "masterleases", "minions", "pods"];
    assert_eq!(checked, resources.map(one_page));
    assert!(keys_per_list(new) >= 20.0 && keys_per_list(new) <= 600.0, "{}", keys_per_list(new));
    assert_eq!(counted(new), ["events"]);
    // Each list row says the keys etcd sent a list: 1.30's clients' lists every pod, 1.33's
    // consistent lists the continue page's 100, 1.37's none (the cache's page alone); the
    // checker's lists every object of its resource (the 20 node leases and the 3
    // apiservers' identity leases are all leases).
    let keys = |v: &serde_json::Value, resource: &str, verb: &str| {
        let rows = v["kubernetes"]["requests"].as_array().expect("rows");
        let row = rows.iter().find(|r| r["resource"] == resource && r["verb"] == verb);
        row.unwrap_or_else(|| panic!("{resource} {verb}"))["keys_per_list"].as_f64()
    };
    assert_eq!(keys(old, "pods", "list"), Some(600.0));
    assert_eq!(keys(old, "pods", "count"), None, "a count is not a list");
    assert_eq!(keys(between, "pods", "consistent-list"), Some(100.0));
    assert_eq!(keys(new, "pods", "consistent-list"), Some(0.0));
    let checked = ["pods", "minions", "leases", "masterleases"].map(|r| keys(new, r, "list"));
    assert_eq!(checked, [600.0, 20.0, 23.0, 3.0].map(Some));
}
