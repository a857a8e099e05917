//! Ranges: what the server returns, as the report counts it.

use etcdlat_core::OpKind;
use etcdlat_testkit::{Etcd, skip};

use crate::{run_on, scenario};

async fn seeded() -> Etcd {
    let etcd = Etcd::start().await;
    let mut c = etcd.client().await;
    for i in 0..100 {
        c.put(format!("data/{i:03}"), vec![b'x'; 256], None).await.unwrap();
    }
    c.put("other", "o", None).await.unwrap();
    etcd
}

#[tokio::test]
async fn linearizable_and_serializable_read_the_data_put() {
    if skip() {
        return;
    }
    let etcd = seeded().await;
    let driver = etcd.driver(2).await;
    for consistency in ["l", "s"] {
        let s = scenario(&format!(
            "[load]\nclients = 4\ntotal = 50\n[op.range]\nkey = \"data/\"\nprefix = true\nconsistency = \"{consistency}\"\n"
        ));
        let report = driver.run(&s).await.unwrap();
        let range = report.op(OpKind::Range);
        assert_eq!(range.ok, 50, "{consistency}");
        assert_eq!(range.errors_total, 0);
        assert_eq!(range.keys, 50 * 100, "{consistency}: every read returns the 100 keys");
        assert_eq!(range.value_bytes, 50 * 100 * 256);
        assert_eq!(report.params.consistency.as_deref(), Some(consistency));
    }
    let single = driver
        .run(&scenario("[load]\ntotal = 10\n[op.range]\nkey = \"data/007\"\n"))
        .await
        .unwrap();
    assert_eq!(single.op(OpKind::Range).keys, 10);
    assert_eq!(single.op(OpKind::Range).value_bytes, 2560);
}

#[tokio::test]
async fn limit_and_count_only_behave() {
    if skip() {
        return;
    }
    let etcd = seeded().await;
    let driver = etcd.driver(1).await;
    let limited = driver
        .run(&scenario(
            "[load]\ntotal = 20\n[op.range]\nkey = \"data/\"\nprefix = true\nlimit = 7\n",
        ))
        .await
        .unwrap();
    assert_eq!(limited.op(OpKind::Range).keys, 20 * 7);

    let counted = driver
        .run(&scenario(
            "[load]\ntotal = 20\n[op.range]\nkey = \"data/\"\nprefix = true\ncount-only = true\n",
        ))
        .await
        .unwrap();
    let range = counted.op(OpKind::Range);
    assert_eq!(range.keys, 20 * 100, "count-only counts every key");
    assert_eq!(range.value_bytes, 0, "count-only returns no values");

    let all = driver
        .run(&scenario("[load]\ntotal = 5\n[op.range]\nkey = \"\\u0000\"\nrange-end = \"\\u0000\"\nkeys-only = true\n"))
        .await
        .unwrap();
    assert_eq!(all.op(OpKind::Range).keys, 5 * 101);
    assert_eq!(all.op(OpKind::Range).value_bytes, 0);
}

#[tokio::test]
async fn setup_writes_the_data_before_measuring() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let before = etcd.revision().await;
    let report = run_on(
        &etcd,
        1,
        "[load]\ntotal = 30\n[op.range]\nkey = \"s/\"\nprefix = true\n\
         [setup]\ntotal = 100\n[setup.put]\nprefix = \"s/\"\nkey-space-size = 100\nsequential-keys = true\nval-size = 64\n",
    )
    .await;
    assert_eq!(etcd.revision().await - before, 100, "setup wrote its 100 keys");
    assert!(report.try_op(OpKind::Put).is_none(), "setup is not in the report");
    let range = report.op(OpKind::Range);
    assert_eq!(range.ok, 30);
    assert_eq!(range.keys, 30 * 100);
    assert_eq!(range.value_bytes, 30 * 100 * 64);
}
