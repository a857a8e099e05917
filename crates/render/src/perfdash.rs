//! The perfdash JSON that etcd's benchmark tool writes (`pkg/report/perfdash.go`), so that
//! dashboards reading etcd's output (Kubernetes' perfdash) read etcdlat's:
//!
//! ```json
//! {
//!   "version": "v1",
//!   "dataItems": [
//!     {
//!       "data": { "Perc50": 0.694, "Perc90": 1.95, "Perc99": 2.825 },
//!       "labels": { "Metric": "latency", "Operation": "PUT" },
//!       "unit": "ms"
//!     }
//!   ]
//! }
//! ```
//!
//! One item per run and operation kind that had a successful request: its latency
//! percentiles in milliseconds, rounded to four decimals as etcd's tool rounds them. When
//! the set holds several runs, each item is labelled with its run's name too (`Test`).

use std::collections::BTreeMap;

use serde::Serialize;

use etcdlat_core::report::ReportSet;

#[derive(Serialize)]
struct Perfdash {
    version: &'static str,
    #[serde(rename = "dataItems")]
    data_items: Vec<DataItem>,
}

/// Field order as etcd's `DataItem`: data, labels, unit.
#[derive(Serialize)]
struct DataItem {
    data: Percentiles,
    labels: BTreeMap<&'static str, String>,
    unit: &'static str,
}

#[derive(Serialize)]
#[allow(non_snake_case, reason = "perfdash's field names")]
struct Percentiles {
    Perc50: f64,
    Perc90: f64,
    Perc99: f64,
}

/// Renders `set` as perfdash JSON (version `v1`), pretty-printed, ending with a newline.
#[must_use]
pub fn perfdash(set: &ReportSet) -> String {
    let several = set.runs.len() > 1;
    let mut items = Vec::new();
    for run in &set.runs {
        for (kind, op) in run.ops.iter().filter(|(_, op)| op.ok > 0) {
            // Microseconds to milliseconds, rounded to four decimals.
            let ms = |q: f64| (op.latency.quantile_us(q) as f64 / 1e3 * 1e4).round() / 1e4;
            let mut labels = BTreeMap::from([
                ("Metric", "latency".to_owned()),
                ("Operation", kind.name().to_uppercase()),
            ]);
            if several {
                labels.insert("Test", run.name.clone());
            }
            items.push(DataItem {
                data: Percentiles { Perc50: ms(0.5), Perc90: ms(0.9), Perc99: ms(0.99) },
                labels,
                unit: "ms",
            });
        }
    }
    let doc = Perfdash { version: "v1", data_items: items };
    // Plain data with string keys into memory cannot fail to serialize.
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}
