//! Integration tests of etcdlat-render and of the report data it writes, one module per
//! subject.
//!
//! - `fixture`: reports built from fixed measurements (offsets from one `Instant`), the same
//!   on every run and machine, shared by the tests of the renderers and the contract.
//! - `render`: snapshots of every renderer's output on the fixed reports.
//! - `plot`: the SVG plots and the HTML page parsed as XML, their outlines snapshotted and
//!   key properties asserted (series, ticks, escaping, nothing fetched).
//! - `json_contract`: the JSON output against mirror types with `deny_unknown_fields` and
//!   every field required; the contract's fields can only change with `SCHEMA_VERSION`.
//! - `merge`: the report tools on recorders fed fixed samples: `merge` of shards equal to one
//!   run, `compare` telling a change from noise, thresholds.
//! - `study`: dbtester's figures computed from fixed reports, each with dbtester's meaning,
//!   and each a report cannot know named with why.
//! - `columns`: runs side by side (`columns`, `overlay`, the HTML page's section) on the fixed
//!   reports: a column per run, `n/a` with why, a line per run.
//! - `heatmap`: heatmaps of a matrix over two axes on fixed reports: the outline
//!   snapshotted, each cell read back and checked against the median of its runs.
//! - `drawn`: a heatmap's cells read back from its SVG, shared with the cli's heatmap tests.

mod columns;
mod drawn;
mod fixture;
mod heatmap;
mod json_contract;
mod merge;
mod plot;
mod render;
mod study;
