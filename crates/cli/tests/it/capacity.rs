//! A full database: a throwaway member with a small `--quota-backend-bytes` fills up
//! mid-run. Its puts then fail with etcd's "database space exceeded" (ResourceExhausted),
//! counted with that message; the report names the NOSPACE alarm read from the cluster; and
//! the run ends normally with its figures, the database past 80% of its quota among its
//! findings.

use crate::{count, only_run, read_report, text};

#[test]
fn a_full_database_is_counted_and_its_alarm_named() {
    if etcdlat_testkit::skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    // 16 KiB values under distinct keys fill 8 MiB after a few hundred puts: at 150 a
    // second, a few seconds in.
    let run = crate::etcdlat()
        .args([
            "--local",
            "--quota-backend-bytes=8MiB",
            "--clients=4",
            "put",
            "--val-size=16384",
            "--key-space-size=1000000",
            "--sequential-keys",
            "--rate=150",
            "--duration=6s",
            "--json",
            json.to_str().unwrap(),
        ])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&run.get_output().stdout).into_owned();
    let report = read_report(&json);
    let run = only_run(&report);
    let put = &run["ops"]["put"];
    assert!(count(put, "/ok") > 0, "puts succeeded before the quota: {put:#}");
    assert!(count(put, "/errors/ResourceExhausted") > 0, "puts refused after it: {put:#}");
    assert_eq!(
        text(put, "/error_messages/ResourceExhausted"),
        "etcdserver: mvcc: database space exceeded"
    );
    assert_eq!(run["alarms"], serde_json::json!([{ "member": "m0", "alarm": "NOSPACE" }]));
    assert_eq!(count(run, "/scenario/cluster/quota-backend-bytes"), 8 << 20);
    // Mid-run: the first interval wrote, the last was refused.
    let intervals = put["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 2, "{intervals:?}");
    assert_eq!(count(&intervals[0], "/errors"), 0, "{intervals:?}");
    assert!(count(&intervals[intervals.len() - 1], "/errors") > 0, "{intervals:?}");
    assert!(stdout.contains("ResourceExhausted: etcdserver: mvcc: database space exceeded"));
    assert!(stdout.contains("Alarms:\n  m0:\tNOSPACE"), "{stdout}");
    // The database past 80% of its quota is a finding, once, on its member, in the JSON
    // and in the text.
    let quota: Vec<&serde_json::Value> =
        run["findings"].as_array().unwrap().iter().filter(|f| f["kind"] == "quota").collect();
    assert_eq!(quota.len(), 1, "{:#}", run["findings"]);
    assert_eq!(quota[0]["member"], "m0");
    assert_eq!(quota[0]["guidance"].as_f64(), Some(80.0));
    assert!(quota[0]["value"].as_f64().unwrap() > 80.0, "{:#}", quota[0]);
    let db = count(&run["server"][0], "/db_size_bytes");
    assert_eq!(count(&run["server"][0], "/quota_backend_bytes"), 8 << 20);
    assert!(db * 10 > (8 << 20) * 8, "{db}");
    assert_eq!(stdout.matches("of its quota").count(), 1, "{stdout}");
    assert!(stdout.contains("\nFindings:\n"), "{stdout}");
}
