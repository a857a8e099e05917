//! Object sizes drawn from a distribution, as etcd stores them: a modelled cluster's pods
//! span their `pod-size` ranges in the proportions of the ranges' weights, the tail too,
//! and each pod keeps the size it was created with in the run's updates of it, though the
//! preload and the run are runs of their own.

use etcd_client::GetOptions;
use etcdlat_testkit::{Etcd, skip};

use crate::scenario;

#[tokio::test]
async fn a_models_pods_are_stored_at_sizes_drawn_from_their_distribution() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    // 1,000 preloaded pods, 90% of 1 to 2 KB and 10% of 20 to 30 KB; two writers per pod, so
    // that the run updates the preloaded pods (its lives' pods are new names).
    let s = scenario(
        "[load]\nclients = 8\nduration = \"3s\"\n\
         [kubernetes]\nnodes = 100\npods-per-node = 10\npod-churn = 10\nwriters-per-pod = 2\n\
         pod-size = [{ min = 1000, max = 2000, weight = 9 }, { min = \"20KB\", max = \"30KB\" }]\n\
         node-size = \"1KiB\"\nhistory = \"0s\"\npreload-events = false\n\
         compaction-interval = \"0s\"\ncounts-per-minute = 0\nlists-per-minute = 0\n",
    );
    let report = driver.run(&s).await.expect("a run");
    let k = report.kubernetes.as_ref().expect("a model's run");
    let pods = k.object_sizes.iter().find(|r| r.resource == "pods").expect("pods' sizes");
    // 0.9 * 1,500 + 0.1 * 25,000.
    assert_eq!((pods.mean_bytes, pods.min_bytes, pods.max_bytes), (3850, 1000, 30_000));
    let minions = k.object_sizes.iter().find(|r| r.resource == "minions").expect("nodes' sizes");
    assert_eq!((minions.mean_bytes, minions.min_bytes, minions.max_bytes), (1024, 1024, 1024));

    let mut client = etcd.client().await;
    let listed = client.get("/registry/pods/", Some(GetOptions::new().with_prefix())).await;
    let kvs = listed.expect("a list of the pods").kvs().to_vec();
    assert!(kvs.len() >= 1000, "{} pods", kvs.len());
    let sizes: Vec<usize> = kvs.iter().map(|kv| kv.value().len()).collect();
    assert!(
        sizes.iter().all(|&n| (1000..=2000).contains(&n) || (20_000..=30_000).contains(&n)),
        "every pod within a range: {:?}",
        sizes.iter().filter(|&&n| !(1000..=2000).contains(&n) && !(20_000..=30_000).contains(&n))
    );
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(*min < 1100 && *max > 29_000, "spread over the ranges: {min} to {max}");
    let tail = sizes.iter().filter(|&&n| n >= 20_000).count() as f64 / sizes.len() as f64;
    assert!((0.06..=0.14).contains(&tail), "a tenth in the tail: {tail}");
    assert!(
        sizes.windows(2).any(|w| w[0] != w[1]) && sizes.iter().filter(|&&n| n < 2000).count() > 500
    );

    // Pods the run updated keep the size their preload (another run, of another seed)
    // created them with.
    let updated: Vec<_> = kvs.iter().filter(|kv| kv.version() > 1).collect();
    assert!(updated.len() > 10, "the run updated {} preloaded pods", updated.len());
    for kv in updated {
        let at_create = GetOptions::new().with_revision(kv.create_revision());
        let created = client.get(kv.key(), Some(at_create)).await.expect("the pod as created");
        let first = &created.kvs()[0];
        assert_eq!(first.value().len(), kv.value().len(), "{}", kv.key_str().unwrap_or("?"));
    }
}
