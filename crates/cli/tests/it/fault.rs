//! Scripted faults run by the binary: a scenario file that kills a follower and pauses the
//! leader of the throwaway cluster etcdlat starts; the run finishes, the JSON report holds
//! every step with what it did and its figures, the text report a `Faults:` section, and the
//! cluster (the killed member included) is gone afterwards.

use crate::{count, etcdlat, only_run, read_report, text};

#[test]
fn a_scenario_kills_and_pauses_members_and_reports_each_step() {
    if etcdlat_testkit::skip() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let scenario = out.path().join("faults.toml");
    std::fs::write(
        &scenario,
        r#"name = "faults"
[cluster]
members = 3
[load]
conns = 3
clients = 6
duration = "4s"
[op.put]
key-space-size = 100
[[faults]]
at = "1s"
action = "kill"
member = "follower:1"
[[faults]]
at = "2s"
action = "pause"
member = "leader"
for = "500ms"
"#,
    )
    .unwrap();
    let json = out.path().join("r.json");
    let output = etcdlat()
        .env("TMPDIR", tmp.path())
        .args(["run", scenario.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("\nFaults:\n"), "{stdout}");

    let report = read_report(&json);
    let run = only_run(&report);
    assert!(count(run, "/ops/put/ok") > 0);
    let faults = run["faults"].as_array().unwrap_or_else(|| panic!("no faults in {run:#}"));
    assert_eq!(faults.len(), 2, "{faults:#?}");
    assert_eq!(text(&faults[0], "/action"), "kill");
    assert!(text(&faults[0], "/what").ends_with("(a follower)"), "{:#}", faults[0]);
    assert_eq!(text(&faults[1], "/action"), "pause");
    assert!(text(&faults[1], "/what").ends_with("(the leader) for 500ms"), "{:#}", faults[1]);
    for f in faults {
        assert!(f.get("error").is_none(), "{f:#}");
        for key in ["unavailable_s", "started_s", "at_s"] {
            assert!(f[key].as_f64().is_some(), "{key} in {f:#}");
        }
        for window in ["before", "during", "after"] {
            assert!(f[window]["ok"].as_u64().is_some(), "{window} in {f:#}");
        }
    }
    assert!(faults[1]["resumed_s"].as_f64().is_some(), "{:#}", faults[1]);
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "the throwaway cluster is removed: {left:?}");
}
