//! [`Etcd`]: which etcd the tests run against.

use etcdlat_testkit::{Etcd, etcd_version, skip};

/// The version the testkit names in its output (and `.ci/run` in its headers) is the one the
/// started server reports, so that a failing test's output says which etcd it failed on.
#[tokio::test]
async fn the_version_named_is_the_one_the_server_reports() {
    if skip() {
        return;
    }
    let etcd = Etcd::start().await;
    let status = etcd.client().await.status().await.expect("status");
    let named = etcd_version();
    assert!(
        named.starts_with(&format!("etcd {} (", status.version())),
        "the testkit names {named:?}, the server reports version {:?}",
        status.version()
    );
}
