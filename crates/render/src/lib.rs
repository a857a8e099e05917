//! etcdlat's renderers: turn reports into text, JSON, JSON lines, markdown, CSV, SVG plots and
//! heatmaps, an HTML page and etcd's perfdash JSON, runs side by side into a table of
//! dbtester's figures, and comparisons of two runs into markdown (and heatmaps of the
//! change).
//!
//! Each renderer is a pure function from reports to a `String`; none prints, and none fails
//! but the heatmaps, which only runs of a matrix over two axes make. Writing the result
//! somewhere is the caller's business.
//!
//! ```
//! use etcdlat_render::{self as render, TextOptions};
//! # fn show(report: &etcdlat_core::Report) {
//! let text = render::text(report, &TextOptions { precise: true, ..TextOptions::default() });
//! let table = render::markdown(std::slice::from_ref(report));
//! # }
//! ```

pub mod columns;
pub mod comparison;
pub mod csv;
mod go;
pub mod heatmap;
pub mod html;
pub mod json;
pub mod jsonl;
pub mod markdown;
pub mod overlay;
pub mod perfdash;
pub mod plot;
pub mod text;

pub use csv::{INTERVALS_CSV_HEADER, intervals_csv};
pub use html::html;
pub use json::json;
pub use markdown::markdown;
pub use perfdash::perfdash;
pub use text::{TextOptions, text};

/// Bytes in decimal units with one decimal: `33.6 MB`, `10.0 kB`, `512 B`.
pub(crate) fn decimal_bytes(n: u64) -> String {
    let b = n as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{n} B")
    }
}
