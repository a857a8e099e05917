//! A run's Kubernetes section: the apiserver's calls by resource and verb against
//! Kubernetes' SLOs, each list page a call of its own, etcd's side judged against its share
//! and the whole SLO beside it, the apiserver's own calls reported, not judged, and the
//! verdict with what it assumed.

use super::*;
use etcdlat_core::report::kubernetes::{KubernetesReport, SloVerdict};

impl Page {
    pub(super) fn kubernetes(&mut self, k: &KubernetesReport) {
        self.heading(3, "Kubernetes SLOs");
        self.raw("<p class=\"description\">");
        self.text(&format!("{}.", k.scope.sentence()));
        self.raw("</p>\n");
        if let Some(nodes) = k.nodes {
            let v = k.verdict();
            self.raw(if v.sustained {
                "<p class=\"description\">"
            } else {
                "<p class=\"failure\">"
            });
            let what = if v.sustained { "Sustained" } else { "Not sustained at" };
            let mut line = format!("{what} nodes = {nodes} within SLO (etcd-side)");
            for (i, m) in v.missed.iter().enumerate() {
                let sep = if i == 0 { ": " } else { ", " };
                let _ = write!(line, "{sep}{} missed", m.binding());
            }
            if v.not_ready > 0 {
                let _ = write!(line, "; {} nodes NotReady", v.not_ready);
            }
            line.push('.');
            self.text(&line);
            self.raw("</p>\n");
        }
        let rows = k
            .requests
            .iter()
            .map(|r| {
                let latency = |q: f64| {
                    if r.ok == 0 { MISSING.to_owned() } else { ms(r.latency.quantile_us(q)) }
                };
                let (per, etcd_limit, verdict, whole) = match &r.slo {
                    Some(slo) => (
                        cell(&slo.per),
                        num(format!("{}", slo.etcd_limit_s)),
                        Cell { bad: slo.verdict != SloVerdict::Met, ..cell(slo.verdict.name()) },
                        cell(format!(
                            "{} s ({}): {}",
                            slo.limit_s,
                            slo.class,
                            slo.whole_verdict.name()
                        )),
                    ),
                    None if r.judged => {
                        (cell(MISSING), num(MISSING), cell("no SLO"), cell(MISSING))
                    }
                    None => (
                        cell(MISSING),
                        num(MISSING),
                        cell("not judged (the apiserver's own)"),
                        cell(MISSING),
                    ),
                };
                let pages = r.page_calls.as_ref().map_or_else(
                    || MISSING.to_owned(),
                    |p| format!("{} of {} over", thousands(p.over_limit), thousands(p.pages)),
                );
                vec![
                    cell(&r.resource),
                    cell(r.verb.name()),
                    num(thousands(r.ok)),
                    fault(r.errors_total),
                    num(latency(0.5)),
                    num(latency(0.99)),
                    num(latency(1.0)),
                    num(pages),
                    per,
                    etcd_limit,
                    verdict,
                    whole,
                ]
            })
            .collect();
        self.table(
            &[
                "Resource",
                "Verb",
                "OK",
                "Errors",
                "p50 (ms)",
                "p99 (ms)",
                "Max (ms)",
                "Pages (calls)",
                "Per",
                "etcd limit (s)",
                "etcd verdict",
                "Whole SLO",
            ],
            rows,
        );
    }
}
