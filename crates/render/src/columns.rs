//! Runs side by side: dbtester's figures of each run ([`Study`]) in rows and the runs in
//! columns, as dbtester published its comparisons (etcd v3.2 beside v3.3 beside v3.4): the
//! first column names the figure, then a column per run.
//!
//! [`Columns`] is the table, built from the runs of one command (a matrix, several
//! scenarios: [`Columns::new`]) or of several report files (`etcdlat compare`:
//! [`Columns::of_files`]). It writes itself as a box table for a terminal
//! ([`Columns::text`]) or as markdown ([`Columns::markdown`]); the HTML page
//! ([`crate::html()`]) draws it from its parts.
//!
//! Each column's header says, in lines, what sets its run apart from the others:
//! - the file it was read from ([`Columns::of_files`]);
//! - the values its matrix gave it (`clients=1, val-size=256`, the part in brackets of
//!   `put [clients=1, val-size=256]`) when every run is of one matrix, whose name then heads
//!   the first column; else its name, unless every run has the same one (which then heads
//!   the first column);
//! - `etcd 3.5.21`, the version its members said they run, when the runs' versions differ.
//!
//! A figure a run cannot know is `n/a`, never 0, and [`Columns::notes`] says why, from
//! [`Study::unknown`].
//!
//! When runs are repeats of one cell (`[matrix] repeat`, `run --repeat`), the table has a
//! column per cell instead of per run ([`Repeats`]): each figure is the mean of the repeats
//! ± the half width of its 95% confidence interval (Student's t), then rows of each
//! operation's throughput, percentiles and errors, and the table says the order the runs
//! ran in.
//!
//! ```
//! use etcdlat_render::columns::Columns;
//! # fn show(runs: &[etcdlat_core::Report]) {
//! let table = Columns::new(runs);
//! print!("{}", table.text());
//! # }
//! ```

use std::fmt::Write;

use etcdlat_core::comparison::Figure;
use etcdlat_core::op::OpKind;
use etcdlat_core::repeat::{Estimate, Repeats};
use etcdlat_core::report::{Report, Row, Study};

use crate::comparison::cell as op_cell;

/// How a header's lines are joined where a header takes one line (markdown, notes, legends).
const LINE_JOIN: &str = " · ";

/// The runs' figures side by side: a row per figure of [`Row::ALL`], a column per run.
#[derive(Debug, Clone, PartialEq)]
pub struct Columns {
    /// The top-left cell: what every run has in common (the matrix's name, or the name every
    /// run has), or empty.
    pub corner: String,
    /// Each column's header, in lines (at least one).
    pub headers: Vec<Vec<String>>,
    /// The figures, in dbtester's order.
    pub rows: Vec<Figures>,
    /// With repeats: each operation kind's figures, after dbtester's.
    pub op_rows: Vec<OpFigures>,
    /// With repeats: the cells, their figures over their repeats and the order they ran in.
    pub repeats: Option<Repeats>,
}

/// One figure of an operation kind in every cell: a row of a table of repeats.
#[derive(Debug, Clone, PartialEq)]
pub struct OpFigures {
    /// The kind.
    pub kind: OpKind,
    /// The figure.
    pub figure: Figure,
    /// Each cell's figure, in the columns' order.
    pub cells: Vec<Cell>,
}

/// One figure of every run: a row of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Figures {
    /// The figure.
    pub row: Row,
    /// Each run's cell, in the columns' order.
    pub cells: Vec<Cell>,
}

/// One run's figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// The figure as dbtester writes it ([`Row::format`]), or
    /// [`NOT_AVAILABLE`](etcdlat_core::report::study::NOT_AVAILABLE) (`n/a`).
    pub text: String,
    /// Why the run cannot know the figure, when it cannot.
    pub why_unknown: Option<String>,
}

impl Columns {
    /// The table of `runs`, a column each, in order.
    #[must_use]
    pub fn new<'a>(runs: impl IntoIterator<Item = &'a Report>) -> Self {
        Self::build(runs.into_iter().map(|r| (None, r)).collect())
    }

    /// The table of the runs of several report files: each file's runs in order, the files
    /// in order, each column headed by its file's name first.
    #[must_use]
    pub fn of_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a [Report])>) -> Self {
        let runs = files
            .into_iter()
            .flat_map(|(file, runs)| runs.iter().map(move |r| (Some(file), r)))
            .collect();
        Self::build(runs)
    }

    fn build(runs: Vec<(Option<&str>, &Report)>) -> Self {
        if let Some(repeats) = Repeats::of_labeled(runs.iter().copied()) {
            return Self::of_repeats(&runs, repeats);
        }
        let (corner, names) = names(runs.iter().map(|(_, r)| r.name.as_str()));
        let versions_differ =
            runs.windows(2).any(|w| w[0].1.target.etcd_version != w[1].1.target.etcd_version);
        let headers = runs
            .iter()
            .zip(names)
            .enumerate()
            .map(|(i, ((file, run), name))| {
                let version = match run.target.etcd_version.as_str() {
                    "" => "etcd unknown".to_owned(),
                    v => format!("etcd {v}"),
                };
                let lines: Vec<String> =
                    [file.map(str::to_owned), name, versions_differ.then_some(version)]
                        .into_iter()
                        .flatten()
                        .collect();
                if lines.is_empty() { vec![format!("run {}", i + 1)] } else { lines }
            })
            .collect();
        let studies: Vec<Study> = runs.iter().map(|(_, r)| r.study()).collect();
        let rows = Row::ALL
            .into_iter()
            .map(|row| Figures {
                row,
                cells: studies
                    .iter()
                    .map(|s| Cell {
                        text: s.cell(row),
                        why_unknown: s.value(row).is_none().then(|| {
                            s.why_unknown(row).unwrap_or("not known to this run").to_owned()
                        }),
                    })
                    .collect(),
            })
            .collect();
        Self { corner, headers, rows, op_rows: Vec::new(), repeats: None }
    }

    /// The table of cells of repeats: a column per cell, each figure `mean ± half width`.
    fn of_repeats(runs: &[(Option<&str>, &Report)], repeats: Repeats) -> Self {
        let (corner, names) = names(repeats.cells.iter().map(|c| c.name.as_str()));
        let first = |c: &etcdlat_core::repeat::Cell| runs[c.runs[0]].1;
        let versions_differ = repeats
            .cells
            .windows(2)
            .any(|w| first(&w[0]).target.etcd_version != first(&w[1]).target.etcd_version);
        let headers = repeats
            .cells
            .iter()
            .zip(names)
            .enumerate()
            .map(|(i, (cell, name))| {
                let version = match first(cell).target.etcd_version.as_str() {
                    "" => "etcd unknown".to_owned(),
                    v => format!("etcd {v}"),
                };
                let mut lines: Vec<String> =
                    [name, versions_differ.then_some(version)].into_iter().flatten().collect();
                if lines.is_empty() {
                    lines.push(format!("cell {}", i + 1));
                }
                lines.push(format!("{} runs", cell.repeats()));
                lines
            })
            .collect();
        let why = |cell: &etcdlat_core::repeat::Cell, row: Row| {
            cell.runs
                .iter()
                .find_map(|&i| runs[i].1.study().why_unknown(row).map(str::to_owned))
                .unwrap_or_else(|| "not known to this cell's runs".to_owned())
        };
        let rows = Row::ALL
            .into_iter()
            .map(|row| Figures {
                row,
                cells: repeats
                    .cells
                    .iter()
                    .map(|c| match c.figure(row) {
                        Some(e) => {
                            Cell { text: estimated(e, |v| row.format(v)), why_unknown: None }
                        }
                        None => Cell {
                            text: etcdlat_core::report::study::NOT_AVAILABLE.to_owned(),
                            why_unknown: Some(why(c, row)),
                        },
                    })
                    .collect(),
            })
            .collect();
        let mut kinds: Vec<OpKind> =
            repeats.cells.iter().flat_map(|c| c.ops.keys().copied()).collect();
        kinds.sort_unstable();
        kinds.dedup();
        let op_rows = kinds
            .into_iter()
            .flat_map(|kind| Figure::ALL.into_iter().map(move |figure| (kind, figure)))
            .map(|(kind, figure)| OpFigures {
                kind,
                figure,
                cells: repeats
                    .cells
                    .iter()
                    .map(|c| Cell {
                        text: c.op(kind, figure).map_or_else(
                            || "-".to_owned(),
                            |e| estimated(e, |v| op_cell(figure, v)),
                        ),
                        why_unknown: None,
                    })
                    .collect(),
            })
            .collect();
        Self { corner, headers, rows, op_rows, repeats: Some(repeats) }
    }

    /// Every row as its label and cells: dbtester's figures, then each operation's.
    pub(crate) fn labelled(&self) -> Vec<(String, &[Cell])> {
        let figures = self.rows.iter().map(|f| (f.row.label().to_owned(), &f.cells[..]));
        let ops =
            self.op_rows.iter().map(|f| (format!("{} {}", f.kind, f.figure.title()), &f.cells[..]));
        figures.chain(ops).collect()
    }

    /// With repeats, what the table's figures are and the order the runs ran in, a line
    /// each: `each figure: mean ± ...`, `order: interleaved (1 2 1 2 1 2)`.
    #[must_use]
    pub fn method(&self) -> Vec<String> {
        let Some(repeats) = &self.repeats else { return Vec::new() };
        let sequence: Vec<String> = repeats.sequence.iter().map(|c| (c + 1).to_string()).collect();
        let cells: Vec<String> =
            (0..self.headers.len()).map(|i| format!("{} = {}", i + 1, self.label(i))).collect();
        vec![
            format!("each figure: {}", repeats.interval),
            format!(
                "order: {} ({}), each run on a fresh cluster when etcdlat started it; cells: {}",
                repeats.order.describe(),
                sequence.join(" "),
                cells.join("; ")
            ),
        ]
    }

    /// The legend of each of `runs` (those the table was built from) in the plots that
    /// overlay them: its column's label ([`Columns::label`]); with repeats, whose columns
    /// are cells, each run's own name.
    #[must_use]
    pub fn line_labels(&self, runs: &[Report]) -> Vec<String> {
        if self.repeats.is_some() {
            runs.iter().map(|r| r.name.clone()).collect()
        } else {
            (0..runs.len()).map(|i| self.label(i)).collect()
        }
    }

    /// Column `i`'s header on one line: `clients=1 · etcd 3.5.21`.
    #[must_use]
    pub fn label(&self, i: usize) -> String {
        self.headers.get(i).map_or_else(String::new, |lines| lines.join(LINE_JOIN))
    }

    /// Why the `n/a` cells are unknown, a line each: the figures, the runs (`every run`
    /// when all of them) and the reason, for each reason that the same runs give for the
    /// same figures: `SERVER-MAX-CPU-USAGE, CLIENT-MAX-CPU-USAGE (every run): ...`.
    #[must_use]
    pub fn notes(&self) -> Vec<String> {
        // (why, the columns that give it) -> the figures, in the order first met.
        let mut groups: Vec<(&str, Vec<usize>, Vec<&str>)> = Vec::new();
        for figures in &self.rows {
            let mut reasons: Vec<(&str, Vec<usize>)> = Vec::new();
            for (i, cell) in figures.cells.iter().enumerate() {
                let Some(why) = cell.why_unknown.as_deref() else { continue };
                match reasons.iter_mut().find(|(w, _)| *w == why) {
                    Some((_, columns)) => columns.push(i),
                    None => reasons.push((why, vec![i])),
                }
            }
            for (why, columns) in reasons {
                let label = figures.row.label();
                match groups.iter_mut().find(|(w, c, _)| *w == why && *c == columns) {
                    Some((_, _, labels)) => labels.push(label),
                    None => groups.push((why, columns, vec![label])),
                }
            }
        }
        groups
            .into_iter()
            .map(|(why, columns, labels)| {
                let runs = if columns.len() == self.headers.len() {
                    "every run".to_owned()
                } else {
                    columns.iter().map(|&i| self.label(i)).collect::<Vec<_>>().join("; ")
                };
                format!("{} ({runs}): {why}", labels.join(", "))
            })
            .collect()
    }

    /// The table as a terminal shows it: box-drawing lines, each column as wide as its
    /// widest cell, the headers centred, the figures' names and values right-aligned (as
    /// dbtester's tables are); then the notes on `n/a` cells.
    #[must_use]
    pub fn text(&self) -> String {
        let width = |s: &str| s.chars().count();
        let rows = self.labelled();
        let mut widths = vec![
            rows.iter()
                .map(|(label, _)| width(label))
                .chain([width(&self.corner)])
                .max()
                .unwrap_or(0),
        ];
        for (i, header) in self.headers.iter().enumerate() {
            let cells = rows.iter().map(|(_, cells)| width(&cells[i].text));
            widths.push(header.iter().map(|l| width(l)).chain(cells).max().unwrap_or(0));
        }
        let rule = |left: &str, middle: &str, right: &str| {
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(w + 2)).collect();
            format!("{left}{}{right}\n", parts.join(middle))
        };
        let line = |cells: &[String]| {
            let mut out = String::from("│");
            for cell in cells {
                let _ = write!(out, " {cell} │");
            }
            out.push('\n');
            out
        };
        let mut out = rule("┌", "┬", "┐");
        let height = self.headers.iter().map(Vec::len).max().unwrap_or(1);
        for n in 0..height {
            let corner = if n == 0 { self.corner.as_str() } else { "" };
            let mut cells = vec![centred(corner, widths[0])];
            for (i, header) in self.headers.iter().enumerate() {
                cells.push(centred(header.get(n).map_or("", String::as_str), widths[i + 1]));
            }
            out.push_str(&line(&cells));
        }
        out.push_str(&rule("├", "┼", "┤"));
        for (label, row) in &rows {
            let mut cells = vec![format!("{label:>w$}", w = widths[0])];
            for (cell, w) in row.iter().zip(&widths[1..]) {
                cells.push(format!("{:>w$}", cell.text));
            }
            out.push_str(&line(&cells));
        }
        out.push_str(&rule("└", "┴", "┘"));
        for line in self.method() {
            out.push_str(&wrapped(&line, NOTE_WIDTH));
        }
        let notes = self.notes();
        if !notes.is_empty() {
            out.push_str("n/a:\n");
            for note in notes {
                out.push_str(&wrapped(&note, NOTE_WIDTH));
            }
        }
        out
    }

    /// The table as GitHub markdown: the figures' names left-aligned, the values
    /// right-aligned, each header on one line (`clients=1 · etcd 3.5.21`); then the notes on
    /// `n/a` cells as a list.
    #[must_use]
    pub fn markdown(&self) -> String {
        let cell = |s: &str| s.replace('|', "\\|");
        let mut out = format!("| {} |", cell(&self.corner));
        for i in 0..self.headers.len() {
            let _ = write!(out, " {} |", cell(&self.label(i)));
        }
        out.push_str("\n| --- |");
        out.push_str(&" ---: |".repeat(self.headers.len()));
        out.push('\n');
        for (label, cells) in self.labelled() {
            let _ = write!(out, "| {label} |");
            for c in cells {
                let _ = write!(out, " {} |", cell(&c.text));
            }
            out.push('\n');
        }
        let method = self.method();
        if !method.is_empty() {
            out.push('\n');
            for line in method {
                let _ = writeln!(out, "- {line}");
            }
        }
        let notes = self.notes();
        if !notes.is_empty() {
            out.push_str("\nn/a:\n\n");
            for note in notes {
                let _ = writeln!(out, "- {note}");
            }
        }
        out
    }
}

/// An estimate as a cell: `mean ± half width` in the figure's format, or the mean alone
/// for one run (no interval).
fn estimated(e: &Estimate, format: impl Fn(f64) -> String) -> String {
    match e.half_width {
        Some(h) => format!("{} ± {}", format(e.mean), format(h)),
        None => format(e.mean),
    }
}

/// Where the text table's notes wrap: they name many figures, and a terminal's own wrapping
/// would lose their indentation.
const NOTE_WIDTH: usize = 100;

/// A note as lines of at most `width` characters (a longer word stands alone), the first
/// indented by two spaces, the others by four.
fn wrapped(note: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = String::from("  ");
    for word in note.split(' ') {
        let indent = if out.is_empty() { 2 } else { 4 };
        if line.chars().count() > indent && line.chars().count() + 1 + word.chars().count() > width
        {
            out.push_str(&line);
            out.push('\n');
            line = "    ".to_owned();
        }
        if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// `text` centred in `width` characters (the extra space on the right).
fn centred(text: &str, width: usize) -> String {
    let pad = width.saturating_sub(text.chars().count());
    format!("{}{text}{}", " ".repeat(pad / 2), " ".repeat(pad - pad / 2))
}

/// The top-left cell and each run's name line: the matrix's values when every run is of one
/// matrix (its name in the corner), nothing when every run has the same name (in the
/// corner), else each name.
fn names<'a>(names: impl Iterator<Item = &'a str>) -> (String, Vec<Option<String>>) {
    let names: Vec<&str> = names.collect();
    let Some(first) = names.first() else { return (String::new(), Vec::new()) };
    if names.iter().all(|n| n == first) {
        return ((*first).to_owned(), vec![None; names.len()]);
    }
    let split: Option<Vec<(&str, &str)>> = names.iter().map(|n| matrix_values(n)).collect();
    if let Some(split) = split
        && split.iter().all(|(base, _)| *base == split[0].0)
    {
        let values = split.iter().map(|(_, v)| Some((*v).to_owned())).collect();
        return (split[0].0.to_owned(), values);
    }
    (String::new(), names.iter().map(|n| Some((*n).to_owned())).collect())
}

/// A matrix run's name split into the scenario's name and the values in brackets that the
/// matrix appends (`put [clients=1]`: `put`, `clients=1`).
fn matrix_values(name: &str) -> Option<(&str, &str)> {
    let (base, values) = name.rsplit_once(" [")?;
    Some((base, values.strip_suffix(']')?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matrix_is_named_once_and_its_runs_by_their_values() {
        let (corner, lines) = names(["put [clients=1]", "put [clients=10]"].into_iter());
        assert_eq!(corner, "put");
        assert_eq!(lines, [Some("clients=1".to_owned()), Some("clients=10".to_owned())]);
        let (corner, lines) = names(["put", "put"].into_iter());
        assert_eq!((corner.as_str(), lines), ("put", vec![None, None]));
        let (corner, lines) = names(["put [a=1]", "range [a=1]"].into_iter());
        assert_eq!(corner, "");
        assert_eq!(lines, [Some("put [a=1]".to_owned()), Some("range [a=1]".to_owned())]);
        assert_eq!(matrix_values("x [y] [z=1]"), Some(("x [y]", "z=1")));
        assert_eq!(matrix_values("x [y] z"), None);
    }

    #[test]
    fn notes_wrap_with_a_hanging_indent() {
        assert_eq!(wrapped("a b c", 100), "  a b c\n");
        assert_eq!(wrapped("aaa bbb ccc ddd", 9), "  aaa bbb\n    ccc\n    ddd\n");
        assert_eq!(wrapped("averyveryverylongword x", 9), "  averyveryverylongword\n    x\n");
    }

    #[test]
    fn headers_are_centred() {
        assert_eq!(centred("ab", 5), " ab  ");
        assert_eq!(centred("abcdef", 3), "abcdef");
        assert_eq!(centred("", 2), "  ");
    }
}
