//! The start barrier on a real etcd: parties that arrive at different times all pass
//! together once the last has arrived, even though the first ones remove their keys as soon
//! as they pass; nothing is left under the prefix; a party that expects another number of
//! parties is refused.

use std::time::{Duration, Instant};

use etcdlat_driver::{Barrier, BarrierError};
use etcdlat_testkit::{Etcd, eventually};

use crate::START_WITHIN;

async fn keys_under(etcd: &Etcd, prefix: &str) -> usize {
    let mut client = etcd.client().await;
    let opts = etcd_client::GetOptions::new().with_prefix().with_count_only();
    let count = client.get(prefix, Some(opts)).await.expect("reading the prefix").count();
    usize::try_from(count).unwrap()
}

#[tokio::test]
async fn parties_arriving_apart_pass_together_and_leave_no_key() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let began = Instant::now();
    let mut tasks = Vec::new();
    for party in 0..4u32 {
        let barrier = Barrier::new(etcd.endpoints(), "b/run", 4).timeout(Duration::from_secs(30));
        tasks.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300) * party).await;
            barrier.wait(0, party).await.map(|_| Instant::now())
        }));
    }
    let mut passed = Vec::new();
    for t in tasks {
        passed.push(t.await.unwrap().expect("every party passes"));
    }
    let first = *passed.iter().min().unwrap();
    let last = *passed.iter().max().unwrap();
    assert!(first - began >= Duration::from_millis(900), "nobody passes before the last arrives");
    assert!(last - first < Duration::from_millis(300), "they pass together: {:?}", last - first);
    assert_eq!(keys_under(&etcd, "b/").await, 0);
    assert_eq!(etcd.revision().await - before, 2 * 4, "a put and a removal per party");

    // The next round starts afresh under its own keys.
    let mut tasks = Vec::new();
    for party in 0..2u32 {
        let barrier = Barrier::new(etcd.endpoints(), "b/run/", 2);
        tasks.push(tokio::spawn(async move { barrier.wait(1, party).await }));
    }
    for t in tasks {
        t.await.unwrap().expect("round 1 passes");
    }
    assert_eq!(keys_under(&etcd, "b/").await, 0);
}

#[tokio::test]
async fn parties_must_agree_on_their_number() {
    if etcdlat_testkit::skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let two = Barrier::new(etcd.endpoints(), "mismatch", 2).timeout(Duration::from_secs(10));
    let waiting = tokio::spawn(async move { two.wait(0, 0).await });
    let registered =
        eventually(START_WITHIN, async || keys_under(&etcd, "mismatch/").await, |&n| n == 1);
    assert_eq!(registered.await, 1, "the first party registered");
    let three = Barrier::new(etcd.endpoints(), "mismatch", 3).timeout(Duration::from_secs(10));
    let err = three.wait(0, 1).await.unwrap_err();
    assert!(
        matches!(&err, BarrierError::Mismatch { key, found, parties: 3 } if key == "mismatch/0/0" && found == "0/2"),
        "{err}"
    );
    let err = waiting.await.unwrap().unwrap_err();
    assert!(matches!(err, BarrierError::Mismatch { parties: 2, .. }), "{err}");
    assert_eq!(keys_under(&etcd, "mismatch/").await, 0);
}
