//! One run's section of the page: what ran, its results, latency plots, client steps,
//! Kubernetes SLOs, members, faults, audit and notes.

use super::*;

impl Page {
    pub(super) fn run(&mut self, n: usize, run: &Report) {
        let _ = writeln!(self.out, "<section id=\"run-{n}\">");
        self.heading(2, &format!("Run {n}: {}", run.name));
        if !run.scenario.description.is_empty() {
            self.raw("<p class=\"description\">");
            self.text(&run.scenario.description);
            self.raw("</p>\n");
        }
        if run.interrupted {
            self.raw(
                "<p class=\"warning\">Interrupted: the figures cover what ran before the stop.",
            );
            self.raw("</p>\n");
        }
        if let Some(f) = run.scale {
            self.raw("<p class=\"description\">");
            self.text(&format!(
                "Scaled run (--scale {f}): the scenario's totals and durations multiplied by {f}."
            ));
            self.raw("</p>\n");
        }
        for failure in run.failures() {
            self.raw("<p class=\"failure\">Check failed: ");
            self.text(&failure);
            self.raw("</p>\n");
        }
        if !run.alarms.is_empty() {
            self.heading(3, "Alarms");
            self.raw(
                "<p class=\"warning\">etcd's alarms when the run ended. NOSPACE: the database \
                 reached its quota and the cluster refuses writes.</p>\n",
            );
            let rows = run.alarms.iter().map(|a| vec![cell(&a.member), cell(&a.alarm)]).collect();
            self.table(&["Member", "Alarm"], rows);
        }

        self.findings(run);

        self.heading(3, "What ran");
        self.raw("<div class=\"grid\">\n");
        self.kv_table("Target", &target_rows(run));
        self.kv_table("Load", &load_rows(run));
        self.raw("</div>\n");

        self.heading(3, "Results");
        self.results(run);

        for &kind in run.ops.keys() {
            self.heading(3, &format!("{kind}: latency"));
            self.raw("<div class=\"plots\">\n");
            self.figure(&plot::latency_over_time(run, kind));
            self.figure(&plot::percentile_spectrum(run, kind));
            self.raw("</div>\n");
        }
        self.heading(3, "Throughput");
        self.raw("<div class=\"plots\">\n");
        self.figure(&plot::throughput_over_time(run));
        self.raw("</div>\n");
        if !run.steps.is_empty() {
            self.steps(run);
        }
        if let Some(k) = &run.kubernetes {
            self.kubernetes(k);
        }

        if !run.members.is_empty() {
            self.heading(3, "Requests by member");
            let rows = run
                .members
                .iter()
                .map(|m| {
                    vec![
                        cell(&m.name),
                        cell(&m.id),
                        num(thousands(m.ok)),
                        num(qps(m.throughput)),
                        num(ms(m.latency.quantile_us(0.5))),
                        num(ms(m.latency.quantile_us(0.99))),
                        num(ms(m.latency.max_us())),
                    ]
                })
                .collect();
            self.table(
                &[
                    "Member",
                    "ID",
                    "OK",
                    "Throughput (ops/s)",
                    "Latency p50 (ms)",
                    "Latency p99 (ms)",
                    "Latency max (ms)",
                ],
                rows,
            );
        }
        if !run.leader_changes.is_empty() {
            self.heading(3, "Leader changes");
            let rows = run
                .leader_changes
                .iter()
                .map(|c| vec![num(format!("{:.3}", c.t_s)), cell(&c.from), cell(&c.to)])
                .collect();
            self.table(&["At (s since start)", "From", "To"], rows);
        }
        if !run.server.is_empty() {
            self.heading(3, "Server metrics");
            self.server(&run.server, &run.target);
        }
        if let Some(c) = &run.client {
            self.heading(3, "Client (etcdlat)");
            self.kv_table(
                "",
                &[
                    ("CPU user", num(format!("{:.2} s", c.user_cpu_s))),
                    ("CPU system", num(format!("{:.2} s", c.system_cpu_s))),
                    ("Max RSS", num(bytes(Some(c.max_rss_bytes)))),
                ],
            );
        }
        let sampled = run.server.iter().any(|m| !m.resources.is_empty())
            || run.client.as_ref().is_some_and(|c| !c.resources.is_empty());
        if sampled {
            self.heading(3, "Server and client resources");
            self.resources(run);
            self.raw("<div class=\"plots\">\n");
            for what in plot::Resource::ALL {
                self.figure(&plot::resource_over_time(run, what));
            }
            self.raw("</div>\n");
        }
        self.heading(3, "dbtester's figures");
        let study = run.study();
        let rows: Vec<(&str, Cell)> = Row::ALL
            .into_iter()
            .map(|row| {
                let text = match study.why_unknown(row) {
                    Some(why) => format!("{} ({why})", study.cell(row)),
                    None => study.cell(row),
                };
                (row.label(), num(text))
            })
            .collect();
        self.kv_table("", &rows);
        if let Some(w) = &run.watch {
            self.heading(3, "Watch accounting");
            let mut rows = vec![
                ("Streams", num(thousands(w.streams))),
                ("Watchers", num(thousands(w.watchers))),
                ("Puts", num(thousands(w.puts))),
                ("Events expected", num(thousands(w.expected))),
                ("Events received", num(thousands(w.received))),
            ];
            // As in the text report, only when there is something to say.
            if w.uncertain_puts > 0 {
                rows.push((
                    "Events from puts with unknown outcome",
                    num(format!(
                        "up to {} ({} puts)",
                        thousands(w.uncertain_events),
                        thousands(w.uncertain_puts)
                    )),
                ));
            }
            if w.unexplained > 0 {
                rows.push(("Unexplained", fault(w.unexplained)));
            }
            rows.extend([
                ("Missing", fault(w.missing)),
                ("Duplicate", fault(w.duplicate)),
                ("Out of order", fault(w.out_of_order)),
                ("Before put acknowledged", num(thousands(w.before_ack))),
            ]);
            self.kv_table("", &rows);
        }
        if let Some(h) = &run.hashkv {
            self.heading(3, "HashKV check");
            let mut rows = vec![
                ("Revision", num(h.revision.to_string())),
                ("Compact revision", num(h.compact_revision.to_string())),
            ];
            for (member, hash) in &h.members {
                rows.push((member.as_str(), num(hash.to_string())));
            }
            rows.push((
                "Consistent",
                Cell {
                    text: if h.consistent { "yes" } else { "NO" }.to_owned(),
                    numeric: false,
                    bad: !h.consistent,
                },
            ));
            self.kv_table("", &rows);
        }
        if let Some(a) = &run.audit {
            self.audit(a);
        }

        self.raw("<details>\n<summary>Scenario</summary>\n<pre>");
        let scenario = toml::to_string_pretty(&run.scenario)
            .or_else(|_| serde_json::to_string_pretty(&run.scenario))
            .unwrap_or_default();
        self.text(&scenario);
        self.raw("</pre>\n</details>\n</section>\n");
    }

    /// The client steps: a row per step (its errors flagged), and throughput and p99
    /// latency against clients.
    fn steps(&mut self, run: &Report) {
        self.heading(3, "Client steps");
        let rows = run
            .steps
            .iter()
            .map(|s| {
                let latency = |q: f64| {
                    num(if s.ok == 0 { MISSING.to_owned() } else { ms(s.latency.quantile_us(q)) })
                };
                vec![
                    num(thousands(u64::from(s.clients))),
                    num(thousands(s.active_clients)),
                    num(format!("{:.3}", s.start_s)),
                    num(format!("{:.3}", s.duration_s)),
                    num(thousands(s.requests())),
                    fault(s.errors_total),
                    num(qps(s.throughput)),
                    latency(0.5),
                    latency(0.9),
                    latency(0.99),
                    latency(0.999),
                ]
            })
            .collect();
        self.table(
            &[
                "Clients",
                "Clients that sent",
                "Start (s)",
                "Duration (s)",
                "Requests",
                "Errors",
                "Throughput (ops/s)",
                "p50 (ms)",
                "p90 (ms)",
                "p99 (ms)",
                "p99.9 (ms)",
            ],
            rows,
        );
        self.raw("<div class=\"plots\">\n");
        self.figure(&plot::steps(run));
        self.raw("</div>\n");
    }

    /// The audit: its counts (violations flagged), serializable staleness per member, and
    /// the first offending requests.
    fn audit(&mut self, a: &etcdlat_core::audit::AuditReport) {
        self.heading(3, "Audit");
        let mut rows = vec![
            (
                "Requests audited",
                num(format!("{} of {}", thousands(a.audited), thousands(a.issued))),
            ),
            ("Writes acknowledged", num(thousands(a.writes))),
            ("Revisions", num(format!("{} to {}", a.first_revision, a.last_revision))),
            ("Writes refused", num(thousands(a.failed_writes))),
            ("Writes of unknown outcome", num(thousands(a.unknown_outcome))),
        ];
        match &a.read_back_error {
            Some(e) => {
                rows.push(("Read back", Cell { text: e.clone(), numeric: false, bad: true }))
            }
            None => rows.extend([
                ("Keys read back", num(thousands(a.keys_read_back))),
                ("Puts read at their revision", num(thousands(a.puts_read_at_revision))),
                ("Puts compacted before read", num(thousands(a.puts_compacted))),
            ]),
        }
        rows.extend([
            ("Lost writes", fault(a.lost)),
            ("Order violations", fault(a.order_violations)),
            ("Duplicate revisions", fault(a.duplicate_revisions)),
            ("Linearizable reads", num(thousands(a.linearizable_reads))),
            ("Stale linearizable reads", fault(a.stale_reads)),
            ("Serializable reads", num(thousands(a.serializable_reads))),
        ]);
        self.kv_table("", &rows);
        if let Some(all) = &a.serializable_staleness {
            let row = |name: &str, s: &etcdlat_core::audit::Staleness| {
                vec![
                    cell(name),
                    num(thousands(s.reads)),
                    num(thousands(s.behind)),
                    num(s.p50_revisions.to_string()),
                    num(s.p99_revisions.to_string()),
                    num(s.max_revisions.to_string()),
                    num(format!("{:.3}", s.p50_ms)),
                    num(format!("{:.3}", s.p99_ms)),
                    num(format!("{:.3}", s.max_ms)),
                ]
            };
            let mut rows = vec![row("all", all)];
            rows.extend(a.members.iter().map(|m| row(&m.name, &m.staleness)));
            self.table(
                &[
                    "Serializable staleness",
                    "Reads",
                    "Behind",
                    "Revisions p50",
                    "Revisions p99",
                    "Revisions max",
                    "ms p50",
                    "ms p99",
                    "ms max",
                ],
                rows,
            );
        }
        if !a.violations.is_empty() {
            let rows = a
                .violations
                .iter()
                .map(|v| {
                    vec![Cell { text: v.check.clone(), numeric: false, bad: true }, cell(&v.detail)]
                })
                .collect();
            self.table(&["Check", "Offending request"], rows);
        }
    }

    /// One row per operation kind (and one for all kinds together, if the run has it).
    fn results(&mut self, run: &Report) {
        self.raw("<div class=\"scroll\">\n<table class=\"results\">\n<thead>\n<tr>");
        self.raw("<th rowspan=\"2\">Operation</th><th rowspan=\"2\" class=\"n\">OK</th>");
        self.raw("<th rowspan=\"2\" class=\"n\">Errors</th><th rowspan=\"2\">Errors by code</th>");
        self.raw("<th rowspan=\"2\" class=\"n\">Throughput (ops/s)</th>");
        self.raw("<th colspan=\"8\">Latency (ms)</th>");
        self.raw("<th colspan=\"2\">Service time (ms)</th></tr>\n<tr>");
        for h in ["min", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max", "p50", "p99"] {
            let _ = write!(self.out, "<th class=\"n\">{h}</th>");
        }
        self.raw("</tr>\n</thead>\n<tbody>\n");
        let all = run.all.as_ref().map(|a| ("all", a));
        for (name, op) in run.ops.iter().map(|(k, o)| (k.name(), o)).chain(all) {
            self.row(result_row(name, op));
        }
        self.raw("</tbody>\n</table>\n</div>\n");
        let mut notes = Vec::new();
        for (kind, op) in &run.ops {
            if op.clamped > 0 {
                notes.push(format!(
                    "{kind}: {} values outside 1 µs .. 1 h were clamped into the histograms",
                    thousands(op.clamped)
                ));
            }
            if op.retries > 0 {
                notes.push(format!(
                    "{kind}: {} retries (counted in latency)",
                    thousands(op.retries)
                ));
            }
            if op.keys > 0 || op.value_bytes > 0 {
                notes.push(format!(
                    "{kind}: {} keys, {} of values",
                    thousands(op.keys),
                    bytes(Some(op.value_bytes))
                ));
            }
        }
        self.notes(&notes);
    }

    /// A list of notes under a table; nothing when there are none.
    pub(super) fn notes(&mut self, notes: &[String]) {
        if notes.is_empty() {
            return;
        }
        self.raw("<ul class=\"notes\">\n");
        for n in notes {
            self.raw("<li>");
            self.text(n);
            self.raw("</li>\n");
        }
        self.raw("</ul>\n");
    }
}

fn result_row(name: &str, op: &OpReport) -> Vec<Cell> {
    let errors_by_code = if op.errors.is_empty() {
        MISSING.to_owned()
    } else {
        op.errors
            .iter()
            .map(|(code, n)| match op.error_messages.get(code) {
                Some(message) => format!("{code} {} ({message})", thousands(*n)),
                None => format!("{code} {}", thousands(*n)),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let lat = &op.latency;
    let svc = &op.service_time;
    let latency = |us: u64| if lat.count() > 0 { ms(us) } else { MISSING.to_owned() };
    let service = |us: u64| if svc.count() > 0 { ms(us) } else { MISSING.to_owned() };
    let mut row = vec![
        cell(name),
        num(thousands(op.ok)),
        fault(op.errors_total),
        Cell { text: errors_by_code, numeric: false, bad: op.errors_total > 0 },
        num(qps(op.throughput)),
        num(latency(lat.min_us())),
        num(if lat.count() > 0 {
            format!("{:.3}", lat.mean_us() / 1e3)
        } else {
            MISSING.to_owned()
        }),
    ];
    for q in [0.5, 0.9, 0.99, 0.999, 0.9999] {
        row.push(num(latency(lat.quantile_us(q))));
    }
    row.push(num(latency(lat.max_us())));
    row.push(num(service(svc.quantile_us(0.5))));
    row.push(num(service(svc.quantile_us(0.99))));
    row
}

fn target_rows(run: &Report) -> Vec<(&'static str, Cell)> {
    let t = &run.target;
    let or_missing = |s: &str| if s.is_empty() { MISSING.to_owned() } else { s.to_owned() };
    let endpoints =
        if t.endpoints.is_empty() { MISSING.to_owned() } else { t.endpoints.join(", ") };
    vec![
        ("Cluster", cell(if t.local { "throwaway local cluster" } else { "given endpoints" })),
        ("Endpoints", cell(endpoints)),
        ("Load sent to", cell(t.role_summary().unwrap_or_else(|| run.targeting().to_string()))),
        ("etcd version", cell(or_missing(&t.etcd_version))),
        ("Built with", cell(or_missing(&t.go_version))),
        ("Members", num(t.members.to_string())),
        ("Leader", cell(or_missing(&t.leader))),
        ("Cluster ID", cell(or_missing(&t.cluster_id))),
        ("Started", cell(or_missing(&run.started_at))),
        ("Measured time", num(format!("{:.3} s", run.duration_s))),
    ]
}

fn load_rows(run: &Report) -> Vec<(&'static str, Cell)> {
    let p = &run.params;
    let mut rows = vec![
        ("Operation", cell(&p.op)),
        ("Connections", num(thousands(u64::from(p.conns)))),
        ("Clients", num(thousands(u64::from(p.clients)))),
        ("Workers", num(thousands(u64::from(p.workers)))),
        (
            "Rate",
            num(if p.rate == 0 {
                "unlimited (closed loop)".to_owned()
            } else {
                format!("{} req/s (open loop)", thousands(p.rate))
            }),
        ),
    ];
    if let Some(total) = p.total {
        rows.push(("Total requests", num(thousands(total))));
    }
    if let Some(d) = p.duration_s {
        rows.push(("Duration", num(format!("{d} s"))));
    }
    if p.warmup_s > 0.0 {
        rows.push(("Warm-up", num(format!("{} s", p.warmup_s))));
    }
    if let Some(v) = p.key_size {
        rows.push(("Key size", num(format!("{} B", thousands(v)))));
    }
    if let Some(v) = p.val_size {
        rows.push(("Value size", num(format!("{} B", thousands(v)))));
    }
    if let Some(v) = p.key_space_size {
        rows.push(("Key space", num(thousands(v))));
    }
    if let Some(v) = p.sequential_keys {
        rows.push(("Sequential keys", cell(if v { "yes" } else { "no" })));
    }
    if let Some(c) = &p.consistency {
        let name = match c.as_str() {
            "l" => "linearizable (l)",
            "s" => "serializable (s)",
            other => other,
        };
        rows.push(("Consistency", cell(name)));
    }
    rows.push(("Seed", num(p.seed.to_string())));
    rows
}
