//! The Kubernetes SLOs section: the apiserver's requests against Kubernetes' own SLOs, by
//! operation kind and then by resource and verb (the report's `kubernetes`).

use std::fmt::Write;

use super::Writer;
use etcdlat_core::report::Report;
use etcdlat_core::report::kubernetes::{
    KubernetesReport, RequestReport, SloVerdict, Verdict, WatchStreamReport,
};
use etcdlat_core::workload::kubernetes::Verb;

impl Writer<'_> {
    /// Each apiserver request's p99 against Kubernetes' SLO for its kind
    /// ([`etcdlat_core::workload::kubernetes::slo`]), with conflicts per update: only for runs
    /// that send them.
    pub(super) fn kubernetes_slos(&mut self, report: &Report) {
        let held: Vec<_> = report
            .ops
            .iter()
            // Counts and consistent-read probes are the apiserver's own calls: not held here.
            .filter(|(kind, _)| Verb::of(**kind).is_some_and(Verb::judged))
            .filter_map(|(kind, op)| {
                etcdlat_core::workload::kubernetes::slo(*kind).map(|slo| (*kind, op, slo))
            })
            .collect();
        if held.is_empty() && report.kubernetes.is_none() {
            return;
        }
        self.out.push_str("\nKubernetes SLOs (p99; Kubernetes' own are over a day):\n");
        if let Some(k) = &report.kubernetes {
            let _ = writeln!(self.out, "  Scope:\t{}.", k.scope.sentence());
        }
        for (kind, op, (class, limit)) in held {
            let _ = write!(self.out, "  {kind}:\tp99 ");
            let p99_us = op.latency.quantile_us(0.99);
            self.secs_us(p99_us as f64);
            if kind == etcdlat_core::OpKind::K8sList {
                // A whole list is many calls: its pages are judged by resource below.
                self.out.push_str(" (whole lists; each page is a call, judged below)\n");
                continue;
            }
            let verdict = match op.ok {
                0 => "no successful requests",
                _ if p99_us <= limit.as_micros() as u64 => "met",
                _ => "missed",
            };
            let _ = write!(self.out, " <= {}s ({class}): {verdict}", limit.as_secs());
            if op.errors_total > 0 {
                let _ = write!(self.out, ", {} errors", op.errors_total);
            }
            if kind == etcdlat_core::OpKind::K8sUpdate && op.ok > 0 {
                let _ = write!(
                    self.out,
                    "; {:.3} conflicts per update",
                    op.conflicts as f64 / op.ok as f64
                );
            }
            self.out.push('\n');
        }
        if let Some(k) = &report.kubernetes {
            self.kubernetes_requests(k);
        }
    }

    /// A line per (resource, verb): requests, p50, p99 and max, the verdict against its
    /// verb's SLO, and, for updates and deletes, conflicts and retries per request.
    fn kubernetes_requests(&mut self, k: &KubernetesReport) {
        self.out.push_str("  By resource and verb:\n");
        for r in &k.requests {
            if r.verb == Verb::Watch {
                self.kubernetes_watch(r, &k.watch_streams);
                continue;
            }
            let _ = write!(
                self.out,
                "    {} {}:\t{} ok, {} errors",
                r.resource,
                r.verb.name(),
                r.ok,
                r.errors_total
            );
            if r.compacted > 0 {
                let _ = write!(self.out, " ({} ErrCompacted)", r.compacted);
            }
            if r.ok > 0 {
                for (label, q) in [("p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
                    let _ = write!(self.out, ", {label} ");
                    self.secs_us(r.latency.quantile_us(q) as f64);
                }
            }
            if let Some(slo) = &r.slo {
                let _ = write!(
                    self.out,
                    "; etcd p99 per {} <= {}s: {} (whole SLO {}s, {}: {})",
                    slo.per,
                    slo.etcd_limit_s,
                    slo.verdict.name(),
                    slo.limit_s,
                    slo.class,
                    slo.whole_verdict.name()
                );
            } else if !r.judged {
                self.out.push_str("; the apiserver's own call: reported, not judged");
            }
            if matches!(r.verb, Verb::Update | Verb::Delete) && r.ok > 0 {
                let _ = write!(
                    self.out,
                    "; {:.3} conflicts, {:.3} retries per {}",
                    r.conflicts_per_request(),
                    r.retries as f64 / r.ok as f64,
                    r.verb.name()
                );
            }
            self.out.push('\n');
            if let Some(p) = &r.page_calls {
                let _ = write!(
                    self.out,
                    "      pages:\t{} calls, {} over the list SLO; each list's slowest page p99 ",
                    p.pages, p.over_limit
                );
                self.secs_us(p.slowest_p99_us as f64);
                self.out.push_str(", max ");
                self.secs_us(p.slowest_max_us as f64);
                if let Some(keys) = r.keys_per_list {
                    let _ = write!(self.out, "; {keys:.1} keys from etcd a list");
                }
                self.out.push('\n');
            }
            if !r.pages.is_empty() {
                self.out.push_str("      by pages:");
                for (i, b) in r.pages.iter().enumerate() {
                    let sep = if i == 0 { "\t" } else { "; " };
                    let _ = match b.pages_min == b.pages_max {
                        true => write!(self.out, "{sep}{}: ", b.pages_min),
                        false => write!(self.out, "{sep}{}-{}: ", b.pages_min, b.pages_max),
                    };
                    let _ = write!(self.out, "{} lists, p99 ", b.count);
                    self.secs_us(b.p99_us as f64);
                }
                self.out.push('\n');
            }
        }
        let _ = writeln!(
            self.out,
            "  ErrCompacted:\t{} requests or watches (mvcc: required revision has been compacted)",
            k.compacted
        );
        if let Some(n) = &k.node_leases {
            let _ = write!(
                self.out,
                "  Node leases:\t{} nodes, longest without a renewal max ",
                n.nodes
            );
            self.secs_us(n.max_gap_us as f64);
            self.out.push_str(", p99 ");
            self.secs_us(n.p99_gap_us as f64);
            let _ =
                writeln!(self.out, "; {} past {} s (NotReady)", n.not_ready, n.not_ready_after_s);
        }
        if let Some(st) = &k.steady_state {
            let _ = writeln!(
                self.out,
                "  Steady state:\t{} history writes and {} events on {} leases preloaded; {} compactions (to revision {}); {} leases expired, deleting {} keys ({} at most at once)",
                st.history_writes,
                st.preloaded_events,
                st.preloaded_event_leases,
                st.compactions,
                st.compacted_revision,
                st.leases_expired,
                st.keys_expired,
                st.largest_expiry_keys
            );
        }
        if !k.object_sizes.is_empty() {
            self.out.push_str("  Object sizes:\t");
            for (i, s) in k.object_sizes.iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                let _ = if s.min_bytes == s.max_bytes {
                    write!(self.out, "{sep}{} {} B", s.resource, s.mean_bytes)
                } else {
                    write!(
                        self.out,
                        "{sep}{} mean {} B ({} to {} B)",
                        s.resource, s.mean_bytes, s.min_bytes, s.max_bytes
                    )
                };
            }
            self.out.push('\n');
        }
        if let Some(nodes) = k.nodes {
            self.sustained(nodes, &k.verdict());
        }
    }

    /// A resource's watch: its own writes' events delivered and their lag, held to no SLO;
    /// its caches cancelled by compaction; its progress notifications and the consistent
    /// reads' waits for them; and each apiserver's own watch of the resource, with the
    /// events etcd sent it.
    fn kubernetes_watch(&mut self, r: &RequestReport, streams: &[WatchStreamReport]) {
        let _ = write!(
            self.out,
            "    {} watch:\t{} own writes delivered, {} errors",
            r.resource, r.ok, r.errors_total
        );
        if r.ok > 0 {
            for (label, q) in [("lag p50", 0.5), ("p99", 0.99), ("max", 1.0)] {
                let _ = write!(self.out, ", {label} ");
                self.secs_us(r.latency.quantile_us(q) as f64);
            }
        }
        self.out.push_str("; no SLO (Kubernetes has no official one for watches)\n");
        if r.compacted > 0 {
            let _ = writeln!(
                self.out,
                "      stopped:\t{} watches cancelled by a compaction (ErrCompacted): the \
                 cache stopped being fed",
                r.compacted
            );
        }
        let of_resource = streams.iter().filter(|w| w.resource == r.resource);
        for (i, w) in of_resource.enumerate() {
            let sep = if i == 0 { "      streams:\t" } else { "; " };
            let _ = write!(self.out, "{sep}apiserver {}", w.apiserver);
            if let Some(namespace) = &w.namespace {
                let _ = write!(self.out, " ({namespace})");
            }
            let _ = write!(self.out, ": {} events", w.events);
            if w.compacted > 0 {
                self.out.push_str(" (cancelled by a compaction)");
            }
        }
        if streams.iter().any(|w| w.resource == r.resource) {
            self.out.push('\n');
        }
        if let Some(p) = &r.progress {
            let _ = write!(
                self.out,
                "      progress:\t{} notifications; {} consistent reads waited for one",
                p.notifications, p.waits
            );
            if p.waits > 0 {
                self.out.push_str(", max ");
                self.secs_us(p.wait_max_us as f64);
                self.out.push_str(", p99 ");
                self.secs_us(p.wait_p99_us as f64);
            }
            self.out.push('\n');
        }
    }

    /// The section's last line, for a run of `[kubernetes] nodes`: whether it sustained
    /// them, and if not, what missed.
    fn sustained(&mut self, nodes: u64, v: &Verdict) {
        if v.sustained {
            let _ = writeln!(self.out, "  Sustained nodes = {nodes} within SLO.");
            return;
        }
        let _ = write!(self.out, "  Not sustained at nodes = {nodes}:");
        for (i, m) in v.missed.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            let _ = write!(self.out, "{sep}{} {} ", m.resource, m.verb.name());
            match m.verdict {
                SloVerdict::NoSuccesses => self.out.push_str("had no successful request"),
                _ if m.pages_over.is_some() => {
                    let (over, pages) = m.pages_over.unwrap_or_default();
                    let _ = write!(self.out, "pages: {over} of {pages} over {}s", m.limit_s);
                }
                _ => {
                    self.out.push_str("p99 ");
                    self.secs_us(m.p99_us as f64);
                    let _ = write!(self.out, " over {}s", m.limit_s);
                }
            }
        }
        if v.not_ready > 0 {
            let sep = if v.missed.is_empty() { " " } else { "; " };
            let _ = write!(self.out, "{sep}{} nodes NotReady", v.not_ready);
        }
        self.out.push_str(".\n");
    }
}
