//! Snapshot tests of every renderer on the fixed reports of [`crate::fixture`].
//!
//! A change in a snapshot is a change in what users read or parse: review it as such.

use std::time::{Duration, Instant};

use etcdlat_core::report::Row;
use etcdlat_core::report::kubernetes::{SloVerdict, verdict};
use etcdlat_core::workload::kubernetes::Verb;
use etcdlat_core::{ErrorCode, OpKind, OpReport, Recorder, Report, ReportSet, WatchAccounting};
use etcdlat_render::{self as render, TextOptions};

use crate::fixture::{
    audit, external_member_report, full_report, mixed_interrupted_report, put_report, range_report,
    steps_report,
};

#[test]
fn text_plain() {
    insta::assert_snapshot!(render::text(&put_report(), &TextOptions::default()));
}

#[test]
fn text_precise() {
    insta::assert_snapshot!(render::text(
        &put_report(),
        &TextOptions { precise: true, ..TextOptions::default() }
    ));
}

#[test]
fn text_sample() {
    insta::assert_snapshot!(render::text(
        &range_report(),
        &TextOptions { sample: true, ..TextOptions::default() }
    ));
}

#[test]
fn text_interrupted_with_two_kinds_and_a_kind_without_success() {
    insta::assert_snapshot!(render::text(&mixed_interrupted_report(), &TextOptions::default()));
}

#[test]
fn text_error_distribution_says_why_requests_failed() {
    // What one etcd answers 100,000 clients: etcd's tool prints the message, so does etcdlat.
    let t0 = Instant::now();
    let mut rec = Recorder::new(&[OpKind::Put], t0, Duration::from_secs(1));
    rec.record_ok(OpKind::Put, t0, t0, t0 + Duration::from_millis(2));
    for ms in 10..13 {
        rec.record_error(OpKind::Put, ErrorCode::Unknown, t0 + Duration::from_millis(ms));
        rec.record_error_message(OpKind::Put, ErrorCode::Unknown, "etcdserver: too many requests");
    }
    rec.record_error(OpKind::Put, ErrorCode::Unavailable, t0 + Duration::from_millis(20));
    let (_, put) = rec.finish().remove(0);
    let mut report = put_report();
    report.ops = [(
        OpKind::Put,
        OpReport::from_record(&put, Duration::from_secs(1), Duration::from_secs(1)),
    )]
    .into();

    let text = render::text(&report, &TextOptions::default());
    let errors: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Error distribution:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(errors, ["  [1]\tUnavailable", "  [3]\tUnknown: etcdserver: too many requests"]);
}

#[test]
fn text_histogram_counts_every_success() {
    let report = put_report();
    let text = render::text(&report, &TextOptions::default());
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Response time histogram:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(rows.len(), 11);
    let counted: u64 = rows
        .iter()
        .map(|row| {
            let count = row.split_once('[').and_then(|(_, r)| r.split_once(']')).map(|(n, _)| n);
            count
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no count in {row:?}"))
        })
        .sum();
    assert_eq!(counted, report.ok());
}

/// The watch run of 100,000 watchers whose puts timed out under load and were applied anyway:
/// more events arrived than the acknowledged puts made, and the report says where from.
fn overloaded_watch_report() -> Report {
    let mut report = range_report();
    report.name = "watch".to_owned();
    report.watch = Some(WatchAccounting {
        streams: 1_000,
        watchers: 100_000,
        puts: 31,
        expected: 3_100_000,
        received: 3_900_000,
        uncertain_puts: 169,
        uncertain_events: 16_900_000,
        ..WatchAccounting::default()
    });
    report
}

/// The lines of the text report's watch accounting.
fn watch_lines(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| *l != "Watch accounting:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn text_watch_accounting_tells_events_from_puts_of_unknown_outcome() {
    let mut report = overloaded_watch_report();
    let text = render::text(&report, &TextOptions::default());
    assert_eq!(
        watch_lines(&text),
        [
            "  Streams:\t1000",
            "  Watchers:\t100000",
            "  Puts:\t31",
            "  Events expected:\t3100000",
            "  Events received:\t3900000",
            "  Events from puts with unknown outcome:\tup to 16900000 (169 puts)",
            "  Missing:\t0",
            "  Duplicate:\t0",
            "  Out of order:\t0",
            "  Before put acknowledged:\t0",
        ]
    );

    // Events no put accounts for get their own line; a normal run has neither line.
    let w = report.watch.as_mut().unwrap();
    w.unexplained = 5;
    let text = render::text(&report, &TextOptions::default());
    let lines = watch_lines(&text);
    assert_eq!(
        lines[5..7],
        [
            "  Events from puts with unknown outcome:\tup to 16900000 (169 puts)",
            "  Unexplained:\t5"
        ]
    );
    let w = report.watch.as_mut().unwrap();
    (w.uncertain_puts, w.uncertain_events, w.unexplained) = (0, 0, 0);
    let text = render::text(&report, &TextOptions::default());
    let lines = watch_lines(&text);
    assert_eq!(lines.len(), 9, "{lines:?}");
    assert!(!text.contains("unknown outcome") && !text.contains("Unexplained"), "{text}");
}

#[test]
fn html_watch_accounting_tells_events_from_puts_of_unknown_outcome() {
    let mut report = overloaded_watch_report();
    report.watch.as_mut().unwrap().unexplained = 5;
    let page = render::html(&ReportSet::new(vec![report.clone()]));
    assert!(
        page.contains(
            "<tr><th>Events from puts with unknown outcome</th>\
             <td class=\"n\">up to 16,900,000 (169 puts)</td></tr>"
        ),
        "{page}"
    );
    // Events no put accounts for are a fault, flagged like missing ones.
    assert!(page.contains("<tr><th>Unexplained</th><td class=\"n bad\">5</td></tr>"), "{page}");

    let w = report.watch.as_mut().unwrap();
    (w.uncertain_puts, w.uncertain_events, w.unexplained) = (0, 0, 0);
    let page = render::html(&ReportSet::new(vec![report]));
    assert!(page.contains("<tr><th>Events received</th>"), "{page}");
    assert!(!page.contains("unknown outcome") && !page.contains("Unexplained"), "{page}");
}

#[test]
fn html_says_a_run_was_scaled_and_names_the_members_targeted() {
    let page = render::html(&ReportSet::new(vec![range_report(), put_report()]));
    let scaled =
        "Scaled run (--scale 0.1): the scenario&#39;s totals and durations multiplied by 0.1.";
    assert_eq!(page.matches(scaled).count(), 1, "only the scaled run says so:\n{page}");
    assert!(
        page.contains(
            "<tr><th>Load sent to</th><td>all (members m0 at 127.0.0.1:40001, m1 at \
             127.0.0.1:40003, m2 at 127.0.0.1:40005; leader m1)</td></tr>"
        ),
        "{page}"
    );
    assert!(page.contains("<tr><th>Load sent to</th><td>endpoints</td></tr>"), "{page}");
}

#[test]
fn markdown_table() {
    insta::assert_snapshot!(render::markdown(&[
        put_report(),
        range_report(),
        mixed_interrupted_report()
    ]));
}

#[test]
fn requests_abandoned_at_the_end_are_counted_with_how_long_they_were_out() {
    let text = render::text(&full_report(), &TextOptions::default());
    let line = text.lines().find(|l| l.contains("Abandoned at the end:")).expect(&text);
    // Out 2.1 s and 2.4 s, as far as the histogram's three digits tell.
    assert!(line.starts_with("  Abandoned at the end:\t2, out for 2.09"), "{line}");
    assert!(line.contains(" to 2.40") && line.ends_with(" secs."), "{line}");
    assert!(text.contains("  [2]\tCancelled: abandoned: no answer within the grace"), "{text}");
    assert!(!render::text(&put_report(), &TextOptions::default()).contains("Abandoned"));
}

#[test]
fn alarms_are_named_in_the_text_and_the_page() {
    let text = render::text(&full_report(), &TextOptions::default());
    assert!(text.contains("\nAlarms:\n  m1:\tNOSPACE\n"), "{text}");
    assert!(!render::text(&put_report(), &TextOptions::default()).contains("Alarms"));
    let page = render::html(&ReportSet::new(vec![full_report()]));
    assert!(page.contains(">Alarms</h3>"), "a heading");
    assert!(page.contains("<td>m1</td><td>NOSPACE</td>"), "a row per alarm");
    assert!(!render::html(&ReportSet::new(vec![put_report()])).contains(">Alarms</h3>"));
}

#[test]
fn a_network_column_appears_when_the_networks_differ_and_a_text_line_names_it() {
    let emulated = full_report();
    let network = emulated.target.network.clone().expect("the full report has a network");
    let mut same = full_report();
    same.name = "again".to_owned();
    let table = render::markdown(&[emulated.clone(), same]);
    assert!(!table.contains("Network"), "one network for every row needs no column:\n{table}");
    let table = render::markdown(&[put_report(), emulated.clone()]);
    let header = table.lines().next().unwrap();
    assert!(header.contains("| Target | Network | Consistency |"), "{header}");
    assert!(table.contains("| loopback |"), "{table}");
    assert!(table.contains(&format!("| {} |", network.summary)), "{table}");
    let text = render::text(&emulated, &TextOptions::default());
    assert!(text.contains(&format!("Network:\t{}", network.summary)), "{text}");
    assert!(text.contains("  m0 -> m1:\t2.5 MB"), "{text}");
}

#[test]
fn an_etcd_column_appears_when_the_versions_differ() {
    let mut newer = put_report();
    newer.name = "put [etcd=v3.6.14]".to_owned();
    newer.target.etcd_version = "3.6.14".to_owned();
    let table = render::markdown(&[put_report(), put_report()]);
    assert!(!table.contains("| etcd |"), "one version for every row needs no column:\n{table}");
    let table = render::markdown(&[put_report(), newer]);
    let header = table.lines().next().unwrap();
    assert!(header.contains("| Target | etcd | Consistency |"), "{header}");
    let rows: Vec<&str> = table.lines().skip(2).collect();
    assert!(rows[0].contains("| 127.0.0.1:2379 | 3.5.17 (go1.23.4) |"), "{table}");
    assert!(rows[1].starts_with("| put [etcd=v3.6.14] |"), "{table}");
    assert!(rows[1].contains("| 127.0.0.1:2379 | 3.6.14 (go1.23.4) |"), "{table}");
    // The same version by another Go is another server, with its column.
    let mut rebuilt = put_report();
    rebuilt.target.go_version = "go1.19.8".to_owned();
    let table = render::markdown(&[put_report(), rebuilt]);
    assert!(table.lines().nth(3).unwrap().contains("| 3.5.17 (go1.19.8) |"), "{table}");
    // A Go not known leaves the version alone.
    let mut unknown = put_report();
    unknown.target.go_version.clear();
    let table = render::markdown(&[put_report(), unknown]);
    assert!(table.lines().nth(3).unwrap().contains("| 127.0.0.1:2379 | 3.5.17 |"), "{table}");
}

/// [`put_report`] with [`audit`]'s audit, its read back done.
fn audited_report() -> Report {
    let mut report = put_report();
    let mut a = audit();
    a.read_back_error = None;
    report.audit = Some(a);
    report
}

#[test]
fn text_audit_section() {
    let text = render::text(&audited_report(), &TextOptions::default());
    let section: Vec<&str> =
        text.lines().skip_while(|l| *l != "Audit:").take_while(|l| !l.is_empty()).collect();
    insta::assert_snapshot!(section.join("\n"));
}

#[test]
fn text_client_steps_have_a_line_each() {
    let text = render::text(&steps_report(), &TextOptions::default());
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Client steps"))
        .take_while(|l| !l.is_empty())
        .collect();
    insta::assert_snapshot!(section.join("\n"));
    // Columns line up whatever the numbers: every line as long as the header.
    assert!(section[1..].iter().all(|l| l.len() == section[1].len()), "{section:#?}");
    let precise =
        render::text(&steps_report(), &TextOptions { precise: true, ..TextOptions::default() });
    let lines: Vec<&str> = precise
        .lines()
        .skip_while(|l| !l.starts_with("Client steps"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(lines.len(), 4, "{precise}");
    assert!(lines.iter().all(|l| l.len() == lines[0].len()), "{lines:#?}");
    assert!(!render::text(&put_report(), &TextOptions::default()).contains("Client steps"));
}

#[test]
fn markdown_client_steps_table_follows_the_runs() {
    let table = render::markdown(&[put_report(), steps_report()]);
    let steps: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("| Test | Clients |"))
        .take_while(|l| !l.is_empty())
        .collect();
    insta::assert_snapshot!(steps.join("\n"));
    assert!(!render::markdown(&[put_report()]).contains("| Clients |"), "no steps, no table");
}

#[test]
fn html_client_steps_have_a_table_and_a_plot() {
    let page = render::html(&ReportSet::new(vec![steps_report()]));
    assert!(page.contains(">Client steps</h3>"), "a heading");
    assert!(page.contains("throughput and p99 latency by clients"), "the plot");
    assert!(page.contains("<th class=\"n\">Clients that sent</th>"), "a table");
    let plain = render::html(&ReportSet::new(vec![put_report()]));
    assert!(!plain.contains("Client steps"));
}

/// Each (resource, verb) has its line with its verdict: lease renewals met theirs, lists
/// missed theirs, events that all failed are said to have no success.
#[test]
fn text_kubernetes_requests_by_resource_and_verb() {
    let text = render::text(&full_report(), &TextOptions::default());
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Kubernetes SLOs"))
        .take_while(|l| !l.is_empty())
        .collect();
    insta::assert_snapshot!(section.join("\n"));
    let line = |prefix: &str| {
        section.iter().find(|l| l.trim_start().starts_with(prefix)).copied().unwrap_or_default()
    };
    // etcd's side judged against its share of the second, the whole SLO beside it.
    assert!(
        line("leases update:")
            .contains("; etcd p99 per request <= 0.25s: met (whole SLO 1s, mutating: met);"),
        "{section:#?}"
    );
    // A list is judged per page, each page a call.
    assert!(
        line("pods list:")
            .ends_with("; etcd p99 per page <= 30s: missed (whole SLO 30s, list: missed)"),
        "{section:#?}"
    );
    assert!(line("pages:").contains("pages:\t24 calls, 2 over the list SLO;"), "{section:#?}");
    // Counts are the apiserver's own calls: reported, not judged.
    assert!(
        line("pods count:").ends_with("; the apiserver's own call: reported, not judged"),
        "{section:#?}"
    );
    // The verdict says what it judged and under which model.
    assert!(line("Scope:").contains("etcd-side verdict"), "{section:#?}");
    assert!(
        line("Scope:").contains("assumes kube-apiserver 1.37 as etcdlat models it: 3 apiservers")
    );
    assert!(line("pods update:").contains("0.100 conflicts, 0.100 retries per update"));
    assert!(line("events create:").contains("no successful requests"), "{section:#?}");
    assert!(line("pods list:").contains("6 ok, 1 errors (1 ErrCompacted)"), "{section:#?}");
    assert!(line("ErrCompacted:").contains("\t2 requests or watches"), "{section:#?}");
    // The watch: its own writes' lag, no SLO, the cache a compaction stopped, its progress.
    let watch = line("pods watch:").trim_start();
    assert!(watch.starts_with("pods watch:\t40 own writes delivered, 1 errors, lag p50 0.0030"));
    assert!(watch.ends_with("; no SLO (Kubernetes has no official one for watches)"), "{watch}");
    assert!(line("stopped:").trim_start().ends_with(
        "1 watches cancelled by a compaction (ErrCompacted): the cache stopped being fed"
    ));
    assert_eq!(
        line("progress:").trim_start(),
        "progress:\t12 notifications; 5 consistent reads waited for one, max 2.5006 secs, p99 2.5006 secs"
    );
    assert!(line("by pages:").contains("by pages:\t1: 1 lists, p99 20.0"), "{section:#?}");
    assert!(line("by pages:").contains("; 5-8: 2 lists, p99 40.0"), "{section:#?}");
    assert!(
        line("Node leases:")
            .contains("Node leases:\t4 nodes, longest without a renewal max 60.0000 secs")
    );
    assert!(line("Node leases:").ends_with("; 2 past 40 s (NotReady)"), "{section:#?}");
    assert!(!render::text(&put_report(), &TextOptions::default()).contains("Kubernetes"));
}

/// A run of `[kubernetes] nodes` ends its Kubernetes section saying whether it sustained
/// them: what missed its SLO and the nodes NotReady, or, with every SLO met, one line; the
/// verdict a search over nodes reads says the same.
#[test]
fn text_kubernetes_section_ends_with_whether_the_nodes_were_sustained() {
    let section = |report: &etcdlat_core::Report| -> Vec<String> {
        let text = render::text(report, &TextOptions::default());
        let lines = text.lines().skip_while(|l| !l.starts_with("Kubernetes SLOs"));
        lines.take_while(|l| !l.is_empty()).map(str::to_owned).collect()
    };
    let missed = full_report();
    let v = verdict(&missed);
    let names: Vec<String> =
        v.missed.iter().map(|m| format!("{} {}", m.resource, m.verb.name())).collect();
    assert_eq!((v.nodes, v.sustained, v.not_ready), (Some(4), false, 2));
    assert_eq!(names, ["events create", "pods list"]);
    assert_eq!(
        section(&missed).last().map(String::as_str),
        Some(
            "  Not sustained at nodes = 4: events create had no successful request, \
             pods list pages: 2 of 24 over 30s; 2 nodes NotReady."
        )
    );

    let mut met = full_report();
    let k = met.kubernetes.as_mut().expect("the fixture's requests");
    // The watch row stays: it has no SLO, and neither a verdict of its own nor a say in
    // the run's.
    k.requests.retain(|r| r.slo.as_ref().is_none_or(|slo| slo.verdict == SloVerdict::Met));
    assert!(k.requests.iter().any(|r| r.verb == Verb::Watch && r.slo.is_none()));
    k.node_leases = None;
    assert!(verdict(&met).sustained && verdict(&met).missed.is_empty());
    assert_eq!(section(&met).last().map(String::as_str), Some("  Sustained nodes = 4 within SLO."));
    // Without nodes, a mix of the apiserver's requests has no such line.
    met.kubernetes.as_mut().expect("kept").nodes = None;
    assert!(!section(&met).iter().any(|l| l.contains("ustained")));
    assert!(!verdict(&put_report()).sustained, "no apiserver request, nothing sustained");
}

/// The page's Kubernetes section: the verdict's scope (etcd's side, the apiserver model),
/// the verdict, and a row per (resource, verb) with etcd's limit and verdict beside the
/// whole SLO's, each list page a call, counts not judged.
#[test]
fn html_kubernetes_section_states_its_scope_and_judges_pages() {
    let page = render::html(&ReportSet::new(vec![full_report()]));
    let at = page.find("<h3>Kubernetes SLOs</h3>").expect("the section");
    let section = &page[at..];
    let section = &section[..section[1..].find("<h3>").map_or(section.len(), |n| n + 1)];
    assert!(section.contains("etcd-side verdict"), "{section}");
    assert!(
        section.contains("assumes kube-apiserver 1.37 as etcdlat models it: 3 apiservers"),
        "{section}"
    );
    assert!(section.contains("<p class=\"failure\">Not sustained at nodes = 4 within SLO (etcd-side): events create p99 missed, pods list page p99 missed; 2 nodes NotReady.</p>"), "{section}");
    assert!(section.contains("<td>pods</td><td>list</td>"), "{section}");
    assert!(section.contains("<td class=\"n\">2 of 24 over</td><td>page</td><td class=\"n\">30</td><td class=\"bad\">missed</td>"), "{section}");
    assert!(
        section.contains(
            "<td>request</td><td class=\"n\">0.25</td><td>met</td><td>1 s (mutating): met</td>"
        ),
        "{section}"
    );
    assert!(section.contains("<td>pods</td><td>count</td>"), "{section}");
    assert!(section.contains("not judged (the apiserver"), "{section}");
    assert!(!render::html(&ReportSet::new(vec![put_report()])).contains("Kubernetes SLOs"));
}

#[test]
fn markdown_kubernetes_table_follows_the_runs() {
    let table = render::markdown(&[put_report(), full_report()]);
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("| Test | Resource |"))
        .take_while(|l| !l.is_empty())
        .collect();
    insta::assert_snapshot!(rows.join("\n"));
    assert_eq!(rows.len(), 2 + 6, "{rows:#?}");
    assert!(rows.iter().any(|r| r.contains("| pods | count |") && r.contains("not judged")));
    assert!(rows.last().is_some_and(|r| r.contains("| pods | watch |") && r.contains("no SLO")));
    assert!(!render::markdown(&[put_report()]).contains("| Resource |"), "none sent, no table");
}

/// The findings' table comes last, a row per finding of each run, once.
#[test]
fn markdown_findings_table_comes_last() {
    let table = render::markdown(&[put_report(), range_report()]);
    let rows: Vec<&str> =
        table.lines().skip_while(|l| !l.starts_with("| Test | Member | Figure |")).collect();
    assert_eq!(rows.len(), 2 + 2, "{table}");
    assert!(rows[2].starts_with("| put-256b | - | 80.2% | 99% | the figures may be the client's"));
    assert!(rows[3].starts_with("| range-s | - | 1 | 0 | the leader changed once"), "{rows:#?}");
    let mut calm = put_report();
    calm.pacing = None;
    assert!(!render::markdown(&[calm]).contains("| Member |"), "no findings, no table");
}

#[test]
fn markdown_audit_table_follows_the_runs() {
    let table = render::markdown(&[range_report(), audited_report()]);
    let audit_table: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("| Test | Audited"))
        .take_while(|l| !l.is_empty())
        .collect();
    insta::assert_snapshot!(audit_table.join("\n"));
    assert!(!render::markdown(&[put_report()]).contains("Audited"), "no audit, no table");
}

#[test]
fn html_audit_flags_violations() {
    let page = render::html(&ReportSet::new(vec![audited_report()]));
    assert!(page.contains("<h3>Audit</h3>"), "{page}");
    assert!(page.contains("<tr><th>Lost writes</th><td class=\"n bad\">1</td></tr>"), "{page}");
    assert!(page.contains("<tr><th>Order violations</th><td class=\"n\">0</td></tr>"), "{page}");
    assert!(page.contains("put of key #17 answered at revision 412"), "{page}");
    assert!(page.contains("<td>m2</td>"), "the staleness of each member: {page}");
}

#[test]
fn intervals_csv() {
    insta::assert_snapshot!(render::intervals_csv(&mixed_interrupted_report()));
}

#[test]
fn json() {
    let mut set = ReportSet::new(vec![put_report(), range_report()]);
    // The version changes with every release; the layout is what the snapshot is about.
    set.etcdlat_version = "0.0.0-test".to_owned();
    let json = render::json(&set);
    assert!(json.ends_with("}\n"));
    // The compressed histograms depend on the deflate library's output, not on our layout;
    // their decoding is tested in `json_contract`.
    insta::assert_snapshot!(redact_hdr(&json));
}

/// Replaces the value of every `"hdr"` field with a placeholder, keeping the layout.
fn redact_hdr(json: &str) -> String {
    json.lines()
        .map(|line| match line.split_once("\"hdr\": \"") {
            Some((indent, rest)) => {
                let tail = rest.split_once('"').map_or("", |(_, tail)| tail);
                format!("{indent}\"hdr\": \"[hdr]\"{tail}\n")
            }
            None => format!("{line}\n"),
        })
        .collect()
}

#[test]
fn perfdash_is_etcds_layout_with_each_operations_percentiles_in_ms() {
    let set = ReportSet::new(vec![put_report(), mixed_interrupted_report()]);
    let doc: serde_json::Value =
        serde_json::from_str(&render::perfdash(&set)).expect("perfdash output is JSON");
    assert_eq!(doc.as_object().unwrap().keys().collect::<Vec<_>>(), ["dataItems", "version"]);
    assert_eq!(doc["version"], "v1");
    let items = doc["dataItems"].as_array().unwrap();
    // put-256b's put, and the mixed run's put (its ranges all failed, so have no percentiles).
    assert_eq!(items.len(), 2, "{doc:#}");
    let put = put_report();
    let latency = &put.op(OpKind::Put).latency;
    for (item, test) in items.iter().zip(["put-256b", "mixed"]) {
        assert_eq!(
            item.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["data", "labels", "unit"]
        );
        assert_eq!(item["unit"], "ms");
        assert_eq!(
            item["labels"],
            serde_json::json!({ "Metric": "latency", "Operation": "PUT", "Test": test })
        );
        for (field, q) in [("Perc50", 0.5), ("Perc90", 0.9), ("Perc99", 0.99)] {
            let ms = item["data"][field].as_f64().unwrap();
            assert_eq!(ms, latency.quantile_us(q) as f64 / 1e3, "{field}");
        }
        assert_eq!(item["data"].as_object().unwrap().len(), 3);
    }
    // One run: no run names, as etcd's tool writes it.
    let one: serde_json::Value =
        serde_json::from_str(&render::perfdash(&ReportSet::new(vec![put_report()]))).unwrap();
    assert_eq!(
        one["dataItems"][0]["labels"],
        serde_json::json!({ "Metric": "latency", "Operation": "PUT" })
    );
}

#[test]
fn a_server_figure_its_etcd_does_not_export_is_said_unavailable_on_that_version() {
    // m2 of the range run did not export the database size; a single member's traffic to
    // peers it does not have is only missing.
    let mut report = range_report();
    let version = report.target.etcd_version.clone();
    let unavailable = format!("unavailable on etcd {version}");
    let text = render::text(&report, &TextOptions::default());
    let server = text.split("\nServer:\n").nth(1).expect("a Server section");
    let m2 = server.lines().find(|l| l.trim_start().starts_with("m2:")).expect("a line for m2");
    assert!(m2.contains(&format!("db {unavailable},")), "{m2}");
    let page = render::html(&ReportSet::new(vec![report.clone()]));
    let row = page.lines().find(|l| l.starts_with("<tr><td>DB size</td>")).expect("a DB size row");
    assert_eq!(row.matches(&unavailable).count(), 1, "{row}");

    report.target.members = 1;
    report.server.truncate(1);
    report.server[0].peer_sent_bytes = None;
    report.server[0].not_exported = vec![etcdlat_core::metrics::metric::PEER_SENT.to_owned()];
    let page = render::html(&ReportSet::new(vec![report]));
    let row = page.lines().find(|l| l.starts_with("<tr><td>Peer sent</td>")).expect("a row");
    assert!(!row.contains("unavailable"), "{row}");
}

/// The text's resources section: a line per member and for the client, the disk once
/// (machine-wide), and dbtester's figures that etcd's layout does not show; a member etcdlat
/// did not start has what its `/metrics` gave, and says what it lacks and why, as do the
/// dbtester figures that need it.
#[test]
fn text_resources_section() {
    let studied = TextOptions { dbtester_rows: true, ..TextOptions::default() };
    let text = render::text(&external_member_report(), &studied);
    let section = text.split("\nServer and client resources:\n").nth(1).expect("the section");
    insta::assert_snapshot!(section);
    assert!(!render::text(&put_report(), &TextOptions::default()).contains("resources:"));
}

/// One run reads as one run: etcd's layout and a line per member, without dbtester's
/// upper-case rows, which say again what those lines say; they are printed when asked
/// (`--dbtester-rows`, a dbtester scenario), and always in a study's runs side by side.
#[test]
fn a_single_runs_text_has_dbtesters_rows_only_when_asked() {
    let report = external_member_report();
    let upper_case_rows = |text: &str| -> Vec<String> {
        let rows = Row::ALL.map(|r| format!("  {}:\t", r.label()));
        text.lines()
            .filter(|l| rows.iter().any(|r| l.starts_with(r.as_str())))
            .map(str::to_owned)
            .collect()
    };
    let plain = render::text(&report, &TextOptions::default());
    assert!(plain.contains("\nServer and client resources:\n  m0:"), "{plain}");
    assert_eq!(upper_case_rows(&plain), Vec::<String>::new(), "{plain}");
    assert!(!plain.contains("SERVER-") && !plain.contains("-THROUGHPUT"), "{plain}");

    let studied = TextOptions { dbtester_rows: true, ..TextOptions::default() };
    let asked = render::text(&report, &studied);
    let rows = upper_case_rows(&asked);
    assert!(rows.len() >= 10, "{asked}");
    assert!(rows.iter().any(|r| r.starts_with("  SERVER-MAX-CPU-USAGE:")), "{rows:?}");
    // Everything else is the same text.
    let rest: Vec<&str> = asked.lines().filter(|l| !rows.iter().any(|r| r == l)).collect();
    assert_eq!(rest, plain.lines().collect::<Vec<_>>());

    // Runs side by side (a study) have them, whatever the text options.
    let table = etcdlat_render::columns::Columns::new(&[report.clone(), report]).text();
    assert!(table.contains("SERVER-MAX-CPU-USAGE"), "{table}");
}

/// A member killed during the run: its line says how long it was down, and the members'
/// average CPU counts it, at 0, over every member.
#[test]
fn a_member_down_is_shown_down_and_averaged_as_nothing() {
    let mut report = range_report();
    let down = &mut report.server[2].resources.samples[1];
    (down.down_s, down.cpu_percent, down.cpu_max_percent) = (Some(1.0), Some(0.0), Some(0.0));
    let text = render::text(&report, &TextOptions::default());
    let section = text.split("\nServer and client resources:\n").nth(1).expect("the section");
    let m2 = section.lines().find(|l| l.trim_start().starts_with("m2:")).expect("a line for m2");
    assert!(m2.contains("down 1.0 s"), "{m2}");
    let m1 = section.lines().find(|l| l.trim_start().starts_with("m1:")).expect("a line for m1");
    assert!(!m1.contains("down"), "{m1}");
    let avg = etcdlat_core::report::study::members_average(&report.server, |s| s.cpu_percent);
    let second: Vec<f64> =
        report.server.iter().map(|m| m.resources.samples[1].cpu_percent.unwrap()).collect();
    assert_eq!(avg[1].1, second.iter().sum::<f64>() / 3.0, "{avg:?}");
}

/// The machine the run ran on, in a line of the text.
#[test]
fn text_names_the_machine() {
    let text = render::text(&full_report(), &TextOptions::default());
    let line = text.lines().find(|l| l.starts_with("Machine: ")).expect("a Machine line");
    assert_eq!(
        line,
        "Machine: 4 CPUs, 16.0 GB memory (9.2 GB available), load average 0.52 0.40 0.33, \
         Linux 6.1.0-18-amd64; client and members, emulator and members share CPUs."
    );
    assert!(!render::text(&range_report(), &TextOptions::default()).contains("Machine:"));
}

/// The text's network section: each link's bytes and how late it delivered, and the
/// emulator's own CPU; a link late beyond its bound at p99 ends the report with a finding
/// naming it, and only that link.
#[test]
fn text_network_section_and_the_emulators_verdict() {
    let mut report = full_report();
    let text = render::text(&report, &TextOptions::default());
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Network:"))
        .take_while(|l| !l.is_empty())
        .collect();
    insta::assert_snapshot!(section.join("\n"));
    // 95 µs late at p99 on a link of no latency: within the 200 µs floor.
    assert!(!text.contains("emulated network's"), "{text}");

    let network = report.target.network.as_mut().unwrap();
    network.links[0].latency_us = 1_000;
    network.links[0].late_p99_us = Some(4_031);
    network.links[1].late_p50_us = Some(100);
    // 2 ms of latency allows 200 µs, the floor as well.
    network.links[1].late_p99_us = Some(200);
    let text = render::text(&report, &TextOptions::default());
    let warning = text.lines().last().unwrap();
    assert!(warning.starts_with("  the latency may be the emulated network's"), "{text}");
    assert!(warning.contains("client -> m0 4031 µs late at p99 (bound 200 µs)"), "{warning}");
    assert!(!warning.contains("m0 -> m1"), "{warning}");

    report.target.network.as_mut().unwrap().links[1].late_p99_us = Some(201);
    let text = render::text(&report, &TextOptions::default());
    assert!(text.lines().last().unwrap().contains(", m0 -> m1 201 µs late"), "{text}");
    // Its threads at ordinary priority, it says so, and how to raise them.
    let warning = text.lines().last().unwrap();
    assert!(warning.contains("its threads ran at ordinary priority"), "{warning}");
    assert!(warning.contains("CAP_SYS_NICE"), "{warning}");
    let emulator = report.target.network.as_mut().unwrap().emulator.as_mut().unwrap();
    emulator.realtime = true;
    let text = render::text(&report, &TextOptions::default());
    assert!(text.contains("not in the client's figures), real-time threads"), "{text}");
    assert!(!text.contains("ordinary priority"), "{text}");
    assert!(text.lines().last().unwrap().contains("m0 -> m1 201 µs late"), "{text}");
}
