//! The JSON report: the project's data contract, read by scripts, plots and comparisons.
//!
//! The layout comes from the serde derives of [`crate::report`]; this function is the one
//! place that writes it, so every command produces the same bytes for the same reports.
//! Its shape is locked by the `json_contract` test, and [`ReportSet::schema_version`]
//! changes whenever it changes incompatibly.

use crate::report::ReportSet;

/// Renders `set` as pretty-printed JSON, ending with a newline.
#[must_use]
pub fn json(set: &ReportSet) -> String {
    // Serializing plain data with string map keys into memory cannot fail; the fallback
    // keeps rendering infallible should that ever change.
    let mut out = serde_json::to_string_pretty(set)
        .unwrap_or_else(|e| format!("{{\"error\": {}}}", serde_json::Value::String(e.to_string())));
    out.push('\n');
    out
}
