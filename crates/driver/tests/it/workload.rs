//! Request workloads other than plain put and range: txn-put, txn-mixed, delete, leases,
//! STM, weighted mixes, zipf keys, and the run's background compaction and HashKV check.
//! Each test checks what the server holds afterwards, not only the report.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use etcd_client::GetOptions;
use etcdlat_core::workload::keyspace::{KeyDist, KeyGen, KeySpace};
use etcdlat_core::{ErrorCode, OpKind};
use etcdlat_testkit::{Etcd, eventually, skip};

use crate::{START_WITHIN, run_on, scenario};

/// Keys under `prefix`.
async fn count(etcd: &Etcd, prefix: &str) -> i64 {
    let opts = GetOptions::new().with_prefix().with_count_only();
    etcd.client().await.get(prefix, Some(opts)).await.expect("counting keys").count()
}

/// Leases the server holds.
async fn leases(etcd: &Etcd) -> Vec<i64> {
    let resp = etcd.client().await.leases().await.expect("listing leases");
    let mut ids: Vec<i64> = resp.leases().iter().map(etcd_client::LeaseStatus::id).collect();
    ids.sort_unstable();
    ids
}

/// The key of index `i` as the driver makes it: `prefix`, then the varint of `i` in
/// `key_size` bytes.
fn key(prefix: &str, key_size: u64, i: u64) -> Vec<u8> {
    let space = KeySpace {
        prefix: prefix.as_bytes().to_vec(),
        key_size,
        space: i + 1,
        start: 0,
        dist: KeyDist::Sequential,
    };
    KeyGen::new(&space, 0).key_at(i).to_vec()
}

#[tokio::test]
async fn txn_put_writes_txn_ops_keys_in_one_revision_per_txn() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    // (txns, ops per txn, key space): the space covered exactly, then wrapped around.
    for (prefix, total, ops, space) in [("a/", 100u64, 4u64, 400i64), ("b/", 50, 3, 100)] {
        let before = etcd.revision().await;
        let report = driver
            .run(&scenario(&format!(
                "[load]\nclients = 4\ntotal = {total}\n[op.txn-put]\ntxn-ops = {ops}\nkey-space-size = {space}\nprefix = \"{prefix}\"\nval-size = 16\n"
            )))
            .await
            .unwrap();
        let txn = report.op(OpKind::TxnPut);
        assert_eq!(txn.ok, total, "{prefix}");
        assert_eq!(txn.errors_total, 0, "{prefix}: {:?}", txn.errors);
        assert_eq!(txn.keys, total * ops, "{prefix}");
        assert_eq!(txn.value_bytes, total * ops * 16, "{prefix}");
        assert_eq!(etcd.revision().await - before, total as i64, "{prefix}: one revision per txn");
        assert_eq!(count(&etcd, prefix).await, (total * ops).min(space as u64) as i64, "{prefix}");
    }
}

#[tokio::test]
async fn txn_mixed_reads_and_writes_by_rw_ratio() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let driver = etcd.driver(2).await;
    // The default key: reads of the whole key space, as `benchmark txn-mixed ""` would.
    let report = driver
        .run(&scenario(
            "[load]\nclients = 8\ntotal = 1000\n[op.txn-mixed]\nrw-ratio = 4\nkey-space-size = 50\nseed = 7\n",
        ))
        .await
        .unwrap();
    let read = report.op(OpKind::TxnRead);
    let write = report.op(OpKind::TxnWrite);
    assert_eq!(read.errors_total, 0, "{:?}", read.errors);
    assert_eq!(write.errors_total, 0, "{:?}", write.errors);
    assert!(read.ok > 0 && write.ok > 0);
    let share = read.ok as f64 / (read.ok + write.ok) as f64;
    assert!((share - 0.8).abs() < 0.04, "reads are {share} of the txns");
    let all = report.all.as_ref().expect("two kinds: all is reported");
    assert_eq!(all.ok, 1000);
    assert_eq!(etcd.revision().await - before, write.ok as i64, "one revision per write");
    assert_eq!(write.keys, write.ok);
    assert_eq!(etcd.key_count().await, write.ok.min(50) as i64);
    // Reads return what was written: never more than the key space.
    assert!(read.keys > 0 && read.keys <= read.ok * 50, "{}", read.keys);

    // A prefix keeps reads and writes to its own keys.
    let mut c = etcd.client().await;
    c.put("other", "x", None).await.unwrap();
    let report = driver
        .run(&scenario(
            "[load]\nclients = 4\ntotal = 200\n[op.txn-mixed]\nkey = \"tm/\"\nrw-ratio = 1\nkey-space-size = 10\nseed = 3\n",
        ))
        .await
        .unwrap();
    let read = report.op(OpKind::TxnRead);
    let write = report.op(OpKind::TxnWrite);
    assert_eq!(read.errors_total + write.errors_total, 0);
    assert_eq!(count(&etcd, "tm/").await, write.ok.min(10) as i64);
    assert!(read.keys <= read.ok * 10, "reads stay under the prefix: {}", read.keys);
}

#[tokio::test]
async fn delete_by_prefix_and_by_key_space() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let mut c = etcd.client().await;
    for i in 0..100 {
        c.put(format!("del/{i:03}"), "v", None).await.unwrap();
    }
    c.put("dem", "v", None).await.unwrap();
    let driver = etcd.driver(1).await;
    let before = etcd.revision().await;
    let report = driver
        .run(&scenario("[load]\ntotal = 1\n[op.delete]\nkey = \"del/\"\nprefix = true\n"))
        .await
        .unwrap();
    let delete = report.op(OpKind::Delete);
    assert_eq!(delete.ok, 1);
    assert_eq!(delete.keys, 100);
    assert_eq!(count(&etcd, "del/").await, 0);
    assert_eq!(count(&etcd, "dem").await, 1, "only the prefix is deleted");
    assert_eq!(etcd.revision().await - before, 1, "one DeleteRange, one revision");

    // 100 keys put like the driver makes them; the first 60 deleted one per request.
    let put = driver
        .run(&scenario(
            "[load]\nclients = 4\ntotal = 100\n[op.put]\nprefix = \"ks/\"\nkey-space-size = 100\nsequential-keys = true\n",
        ))
        .await
        .unwrap();
    assert_eq!(put.op(OpKind::Put).ok, 100);
    assert_eq!(count(&etcd, "ks/").await, 100);
    let report = driver
        .run(&scenario(
            "[load]\nclients = 4\ntotal = 60\n[op.delete]\nkey = \"ks/\"\nkey-space-size = 60\nsequential-keys = true\n",
        ))
        .await
        .unwrap();
    let delete = report.op(OpKind::Delete);
    assert_eq!(delete.ok, 60);
    assert_eq!(delete.errors_total, 0);
    assert_eq!(delete.keys, 60);
    let left = c.get("ks/", Some(GetOptions::new().with_prefix())).await.unwrap();
    let mut left: Vec<Vec<u8>> = left.kvs().iter().map(|kv| kv.key().to_vec()).collect();
    left.sort();
    let mut expected: Vec<Vec<u8>> = (60..100).map(|i| key("ks/", 8, i)).collect();
    expected.sort();
    assert_eq!(left, expected, "exactly indices 60..100 are left");

    // An empty key with prefix = true means every key, as etcdctl's `--prefix ""`.
    let total = etcd.key_count().await;
    let report = driver
        .run(&scenario("[load]\ntotal = 3\n[op.range]\nprefix = true\ncount-only = true\n"))
        .await
        .unwrap();
    let range = report.op(OpKind::Range);
    assert_eq!(range.errors_total, 0, "{:?}", range.errors);
    assert_eq!(range.keys, 3 * total as u64);
    let report =
        driver.run(&scenario("[load]\ntotal = 1\n[op.delete]\nprefix = true\n")).await.unwrap();
    let delete = report.op(OpKind::Delete);
    assert_eq!(delete.errors_total, 0, "{:?}", delete.errors);
    assert_eq!(delete.keys, total as u64);
    assert_eq!(etcd.key_count().await, 0);
}

#[tokio::test]
async fn lease_keepalive_keeps_leases_alive_past_their_ttl() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s = scenario("[load]\nclients = 2\nduration = \"4s\"\n[op.lease-keepalive]\nttl = 2\n");
    // The leases once every client holds one.
    let early = eventually(START_WITHIN, async || leases(&etcd).await, |l| l.len() == 2);
    let (report, early) = tokio::join!(driver.run(&s), early);
    let report = report.unwrap();
    let late = leases(&etcd).await;
    let keepalive = report.op(OpKind::LeaseKeepalive);
    assert_eq!(keepalive.errors_total, 0, "{:?}", keepalive.errors);
    assert!(keepalive.ok > 10, "{} keep-alives", keepalive.ok);
    // One lease per client, the same ones at the end of the 4 s run (longer than the 2 s
    // TTL), still alive.
    assert_eq!(early.len(), 2, "{early:?}");
    assert_eq!(late, early);
    let mut c = etcd.client().await;
    for id in late {
        let ttl = c.lease_time_to_live(id, None).await.unwrap();
        assert_eq!(ttl.granted_ttl(), 2);
        assert!(ttl.ttl() > 0, "lease {id:x} expired");
    }
}

#[tokio::test]
async fn lease_keepalive_grants_a_new_lease_when_its_lease_is_revoked() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s =
        scenario("[load]\nclients = 2\nduration = \"1500ms\"\n[op.lease-keepalive]\nttl = 30\n");
    // Revoke every client's lease once each holds one.
    let revoke = async {
        let revoked =
            eventually(START_WITHIN, async || leases(&etcd).await, |l| l.len() == 2).await;
        let mut c = etcd.client().await;
        for id in &revoked {
            c.lease_revoke(*id).await.unwrap();
        }
        revoked
    };
    let (report, revoked) = tokio::join!(driver.run(&s), revoke);
    let report = report.unwrap();
    assert_eq!(revoked.len(), 2);
    let keepalive = report.op(OpKind::LeaseKeepalive);
    // At most the one keep-alive in flight per client fails; the rest go to a new lease.
    assert!(keepalive.errors_total <= 2, "{:?}", keepalive.errors);
    assert_eq!(keepalive.errors_total, keepalive.errors_of(ErrorCode::NotFound));
    let now = leases(&etcd).await;
    assert_eq!(now.len(), 2, "{now:?}");
    assert!(now.iter().all(|id| !revoked.contains(id)), "{now:?} {revoked:?}");
    let last = keepalive.intervals.last().expect("intervals");
    assert!(last.count > 0, "keep-alives continue after the revoke");
}

#[tokio::test]
async fn lease_grant_creates_leases_and_revoke_removes_them() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let before = leases(&etcd).await.len();
    let report = driver
        .run(&scenario("[load]\nclients = 4\ntotal = 50\n[op.lease-grant]\nttl = 60\n"))
        .await
        .unwrap();
    let grant = report.op(OpKind::LeaseGrant);
    assert_eq!(grant.ok, 50);
    assert_eq!(grant.errors_total, 0, "{:?}", grant.errors);
    let granted = leases(&etcd).await;
    assert_eq!(granted.len() - before, 50);
    let mut c = etcd.client().await;
    assert_eq!(c.lease_time_to_live(granted[0], None).await.unwrap().granted_ttl(), 60);

    // Revoke alone: each revoke removes a lease (granted unmeasured when a client holds none).
    let report = driver
        .run(&scenario("[load]\nclients = 4\ntotal = 20\n[op.lease-revoke]\nttl = 60\n"))
        .await
        .unwrap();
    let revoke = report.op(OpKind::LeaseRevoke);
    assert_eq!(revoke.ok, 20);
    assert_eq!(revoke.errors_total, 0, "{:?}", revoke.errors);
    assert_eq!(leases(&etcd).await, granted, "revoke touches only its own leases");

    let report = driver
        .run(&scenario(
            "[load]\nclients = 4\ntotal = 200\n\
             [[mix]]\nweight = 50\n[mix.op.lease-grant]\nttl = 60\n\
             [[mix]]\nweight = 50\n[mix.op.lease-revoke]\nttl = 60\n",
        ))
        .await
        .unwrap();
    let grant = report.op(OpKind::LeaseGrant);
    let revoke = report.op(OpKind::LeaseRevoke);
    assert_eq!(
        grant.errors_total + revoke.errors_total,
        0,
        "{:?} {:?}",
        grant.errors,
        revoke.errors
    );
    assert_eq!(grant.ok + revoke.ok, 200);
    assert!(grant.ok > 60 && revoke.ok > 60, "{} grants, {} revokes", grant.ok, revoke.ok);
    // Every revoke removed a lease granted by this run (measured or not).
    let held = (leases(&etcd).await.len() - granted.len()) as u64;
    assert!(held <= grant.ok && held + revoke.ok >= grant.ok, "{held} held");
}

#[tokio::test]
async fn lease_revoke_takes_a_live_lease_when_older_ones_expired() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    // Each client grants four leases for every one it revokes, and leases live 2 s: by the
    // end of the run (600 requests at 150/s: 4 s at least, longer on a busy machine, so the
    // count of revokes does not depend on its speed) the oldest a client holds have expired.
    let report = run_on(
        &etcd,
        2,
        "[load]\nclients = 2\ntotal = 600\nrate = 150\n\
             [[mix]]\nweight = 80\n[mix.op.lease-grant]\nttl = 2\n\
             [[mix]]\nweight = 20\n[mix.op.lease-revoke]\nttl = 2\n",
    )
    .await;
    let grant = report.op(OpKind::LeaseGrant);
    let revoke = report.op(OpKind::LeaseRevoke);
    assert!(revoke.ok > 50, "{} revokes", revoke.ok);
    assert_eq!(grant.errors_total, 0, "{:?}", grant.errors);
    assert_eq!(revoke.errors_total, 0, "revoked an expired lease: {:?}", revoke.errors);
}

/// The STM counters under `prefix`: (keys, sum of their 8-byte little-endian counters).
async fn counters(etcd: &Etcd, prefix: &str) -> (usize, u64) {
    let resp =
        etcd.client().await.get(prefix, Some(GetOptions::new().with_prefix())).await.unwrap();
    let sum = resp
        .kvs()
        .iter()
        .map(|kv| u64::from_le_bytes(kv.value()[..8].try_into().expect("8-byte counter")))
        .sum();
    (resp.kvs().len(), sum)
}

#[tokio::test]
async fn stm_isolation_keeps_every_committed_increment() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(4).await;
    let stm = |isolation: &str, prefix: &str, clients: u32, total: u64, locker: &str| {
        scenario(&format!(
            "[load]\nclients = {clients}\ntotal = {total}\n[op.stm]\nisolation = \"{isolation}\"\nkeys = 3\nkeys-per-txn = 2\ntxn-wr-percent = 100\nprefix = \"{prefix}\"\nstm-locker = \"{locker}\"\n"
        ))
    };

    let report = driver.run(&stm("r", "stm/", 8, 200, "stm")).await.unwrap();
    let op = report.op(OpKind::Stm);
    assert_eq!(op.ok, 200);
    assert_eq!(op.errors_total, 0, "{:?}", op.errors);
    assert!(op.retries > 0, "8 clients on 3 keys conflict");
    assert_eq!(op.keys, 400);
    assert_eq!(counters(&etcd, "stm/").await, (3, 400), "every committed txn added 1 to 2 keys");

    for iso in ["s", "ss"] {
        let prefix = format!("stm-{iso}/");
        let report = driver.run(&stm(iso, &prefix, 8, 200, "stm")).await.unwrap();
        let op = report.op(OpKind::Stm);
        assert_eq!((op.ok, op.errors_total), (200, 0), "{iso}: {:?}", op.errors);
        assert!(op.retries > 0, "{iso}");
        assert_eq!(counters(&etcd, &prefix).await, (3, 400), "{iso}");
    }

    // Read committed never compares, so never retries; updates may be lost.
    let report = driver.run(&stm("c", "stm-c/", 8, 200, "stm")).await.unwrap();
    let op = report.op(OpKind::Stm);
    assert_eq!((op.ok, op.errors_total, op.retries), (200, 0, 0), "{:?}", op.errors);
    let (keys, sum) = counters(&etcd, "stm-c/").await;
    assert_eq!(keys, 3);
    assert!(sum > 0 && sum <= 400, "{sum}");

    // Under a lock no transaction conflicts.
    for locker in ["lock-rpc", "lock-client"] {
        let prefix = format!("stm-{locker}/");
        let report = driver.run(&stm("r", &prefix, 4, 40, locker)).await.unwrap();
        let op = report.op(OpKind::Stm);
        assert_eq!((op.ok, op.errors_total), (40, 0), "{locker}: {:?}", op.errors);
        assert_eq!(op.retries, 0, "{locker}: the lock serializes the transactions");
        assert_eq!(counters(&etcd, &prefix).await, (3, 80), "{locker}");
        assert_eq!(count(&etcd, "stmlock").await, 0, "{locker}: every lock released");
        // The clients' session leases end with the run instead of being kept alive for as
        // long as the driver lives.
        let held = eventually(Duration::from_secs(3), async || leases(&etcd).await, Vec::is_empty);
        assert_eq!(held.await, Vec::<i64>::new(), "{locker}: sessions revoked");
    }
}

#[tokio::test]
async fn compaction_runs_in_the_background_and_compacts_the_store() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let report = driver
        .run(&scenario(
            "[load]\nclients = 4\nduration = \"3s\"\n[op.put]\nkey-space-size = 100\n\
             [compaction]\ninterval = \"500ms\"\nindex-delta = 100\n",
        ))
        .await
        .unwrap();
    let put = report.op(OpKind::Put);
    let compact = report.op(OpKind::Compact);
    assert!(compact.ok >= 2, "{} compactions", compact.ok);
    assert_eq!(compact.errors_total, 0, "{:?}", compact.errors);
    assert!(put.ok > 200);
    assert!(report.all.is_none(), "compaction is not part of the workload's `all`");

    let mut c = etcd.client().await;
    let err = c.get("k", Some(GetOptions::new().with_revision(1))).await.unwrap_err();
    assert!(err.to_string().contains("compacted"), "{err}");
    let hash = c.hash_kv(0).await.unwrap();
    let revision = etcd.revision().await;
    assert!(hash.compact_version() > 1, "{}", hash.compact_version());
    assert!(hash.compact_version() <= revision - 100, "keeps index-delta revisions");

    // Compactions during warm-up happen but, like its requests, are not counted: ticks at
    // 0.3 .. 1.8 s, of which 1.2, 1.5 and 1.8 fall in the measured second.
    let report = driver
        .run(&scenario(
            "[load]\nclients = 2\nwarmup = \"1s\"\nduration = \"1s\"\n[op.put]\nkey-space-size = 100\n\
             [compaction]\ninterval = \"300ms\"\nindex-delta = 10\n",
        ))
        .await
        .unwrap();
    let compact = report.op(OpKind::Compact);
    assert!((2..=4).contains(&compact.ok), "{} compactions in the measured second", compact.ok);
    assert_eq!(compact.intervals.iter().map(|i| i.count).sum::<u64>(), compact.ok);
    assert!(c.hash_kv(0).await.unwrap().compact_version() > hash.compact_version());
}

#[tokio::test]
async fn hashkv_check_compares_every_member() {
    if skip() {
        return;
    }
    let etcd = Etcd::start_cluster(3).await;
    let driver = etcd.driver(3).await;
    let before = etcd.revision().await;
    let report = driver
        .run(&scenario(
            "[load]\nclients = 6\ntotal = 300\n[op.put]\nkey-space-size = 100\n[checks]\nhashkv = true\n",
        ))
        .await
        .unwrap();
    assert_eq!(report.op(OpKind::Put).ok, 300);
    let hashkv = report.hashkv.as_ref().expect("hashkv asked for");
    assert_eq!(hashkv.members.len(), 3, "{hashkv:?}");
    assert!(hashkv.consistent, "{hashkv:?}");
    assert!(hashkv.revision >= before + 300, "{hashkv:?}");
    assert!(report.failures().is_empty(), "{:?}", report.failures());
    let names: Vec<&str> = etcd.local().members().iter().map(|m| m.name()).collect();
    assert_eq!(hashkv.members.keys().map(String::as_str).collect::<Vec<_>>(), names);

    // Someone else compacting during the check: a member that has not applied the latest
    // compaction yet hashes more history, which is not a mismatch.
    let stop = Arc::new(AtomicBool::new(false));
    let compactor = tokio::spawn({
        let stop = Arc::clone(&stop);
        let mut c =
            etcd_client::Client::connect([etcd.endpoints()[2].clone()], None).await.unwrap();
        async move {
            let mut compactions = 0;
            while !stop.load(Ordering::Relaxed) {
                let rev = c.put("bg", "x", None).await.unwrap().header().unwrap().revision();
                if c.compact(rev - 200, None).await.is_ok() {
                    compactions += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            compactions
        }
    });
    for _ in 0..8 {
        let report = driver
            .run(&scenario("[load]\nclients = 6\ntotal = 100\n[op.put]\n[checks]\nhashkv = true\n"))
            .await
            .unwrap();
        let hashkv = report.hashkv.as_ref().expect("hashkv asked for");
        assert!(hashkv.consistent, "{hashkv:?}");
        assert!(hashkv.compact_revision > 0);
    }
    stop.store(true, Ordering::Relaxed);
    assert!(compactor.await.unwrap() > 20, "compactions ran during the checks");
}

#[tokio::test]
async fn a_weighted_mix_runs_each_op_by_its_share() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let driver = etcd.driver(2).await;
    let s = scenario(
        "[load]\nclients = 4\ntotal = 1000\n\
         [setup]\ntotal = 100\n[setup.put]\nprefix = \"m/\"\nkey-space-size = 100\nsequential-keys = true\n\
         [[mix]]\nweight = 80\n[mix.op.range]\nkey = \"m/\"\nkey-space-size = 100\n\
         [[mix]]\nweight = 15\n[mix.op.put]\nprefix = \"m/\"\nkey-space-size = 100\nseed = 11\n\
         [[mix]]\nweight = 5\n[mix.op.delete]\nkey = \"m/\"\nkey-space-size = 100\n",
    );
    let before = etcd.revision().await;
    let report = driver.run(&s).await.unwrap();
    let setup_revs = 100;
    let range = report.op(OpKind::Range);
    let put = report.op(OpKind::Put);
    let delete = report.op(OpKind::Delete);
    for (name, op, share) in [("range", range, 0.80), ("put", put, 0.15), ("delete", delete, 0.05)]
    {
        assert_eq!(op.errors_total, 0, "{name}: {:?}", op.errors);
        let got = op.ok as f64 / 1000.0;
        assert!((got - share).abs() < 0.035, "{name}: {got} of the requests, not {share}");
    }
    let all = report.all.as_ref().expect("a mix reports all");
    assert_eq!(all.ok + all.errors_total, 1000);
    assert_eq!(report.params.op, "range+put+delete");
    // Every put is a revision; a delete is one only when it found its key.
    assert_eq!(
        etcd.revision().await - before,
        setup_revs + (put.ok + delete.keys) as i64,
        "{} puts, {} keys deleted",
        put.ok,
        delete.keys
    );
    assert!(delete.keys > 0 && delete.keys <= delete.ok);
    assert!(range.keys > range.ok / 2 && range.keys <= range.ok, "{} of {}", range.keys, range.ok);
    // Keys stay in the key space; only deletes take any away.
    let left = count(&etcd, "m/").await;
    assert!(left <= 100 && left >= 100 - delete.keys as i64, "{left} keys left");
}

#[tokio::test]
async fn zipf_keys_are_skewed_towards_the_first_index() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let report = run_on(&etcd, 2, "[load]\nclients = 4\ntotal = 2000\n[op.put]\nprefix = \"z/\"\nkey-space-size = 1000\nzipf = 1.2\nseed = 5\n").await;
    assert_eq!(report.op(OpKind::Put).ok, 2000);
    let resp = etcd.client().await.get("z/", Some(GetOptions::new().with_prefix())).await.unwrap();
    let distinct = resp.kvs().len();
    // Uniform keys would cover ~865 of 1000; zipf 1.2 covers a few hundred.
    assert!((50..600).contains(&distinct), "{distinct} distinct keys");
    let hottest = resp.kvs().iter().max_by_key(|kv| kv.version()).unwrap();
    assert_eq!(hottest.key(), key("z/", 8, 0), "index 0 is the most written");
    assert!(hottest.version() > 200, "written {} times", hottest.version());
}
