//! Report files: checked before a run (so a long run never ends in "cannot write"), then
//! written atomically (a temp file in the same directory, renamed into place), so an
//! interrupted run never leaves a truncated file. What is no regular file (`/dev/null`,
//! `/dev/stdout`, a FIFO) is written through, never replaced; a symlink's file is replaced,
//! not the link.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::{Report, ReportSet};
use etcdlat_render::columns::Columns;
use etcdlat_render::heatmap::{self, Heatmap};
use etcdlat_render::{self as render, overlay, plot};

/// Writes `text` to standard output. A reader that has gone away (`etcdlat scenarios | head`)
/// is not an error: what it did not read is dropped, and files and the exit code are as
/// they would have been. Any other failure to write is.
///
/// # Errors
/// When standard output cannot be written for another reason (a full disk, say).
pub fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("writing to standard output")
        }
        _ => Ok(()),
    }
}

/// Where `--jsonl` lines go: a file created when the first run starts (not atomically: it
/// is read while it grows), or standard output. Every write is flushed at once.
pub struct Lines {
    out: Box<dyn Write + Send>,
    path: Option<PathBuf>,
}

impl Lines {
    /// Creates (or empties) the file, or takes standard output.
    ///
    /// # Errors
    /// When the file cannot be created.
    pub fn open(target: &Target) -> Result<Self> {
        Ok(match target {
            Target::Stdout => Self { out: Box::new(std::io::stdout()), path: None },
            Target::File(path) => Self {
                out: Box::new(
                    std::fs::File::create(path)
                        .with_context(|| format!("--jsonl {}", path.display()))?,
                ),
                path: Some(path.clone()),
            },
        })
    }

    /// Writes `text` and flushes it. A reader of standard output that has gone away is not
    /// an error (as [`print()`]).
    ///
    /// # Errors
    /// When the file cannot be written.
    pub fn write(&mut self, text: &str) -> Result<()> {
        match self.out.write_all(text.as_bytes()).and_then(|()| self.out.flush()) {
            Err(e) if self.path.is_some() || e.kind() != std::io::ErrorKind::BrokenPipe => {
                let name = self
                    .path
                    .as_ref()
                    .map_or("standard output".into(), |p| p.display().to_string());
                Err(e).with_context(|| format!("writing --jsonl {name}"))
            }
            _ => Ok(()),
        }
    }
}

/// The report files a command writes, checked.
#[derive(Debug, Default)]
pub struct Outputs {
    /// JSON report destination.
    pub json: Option<Target>,
    /// Markdown tables destination.
    pub markdown: Option<Target>,
    /// Interval CSV destination.
    pub csv: Option<Target>,
    /// HTML page destination.
    pub html: Option<Target>,
    /// etcd's perfdash JSON destination.
    pub perfdash: Option<Target>,
    /// Where the JSON lines go, streamed while runs go (not by [`Outputs::write`]).
    pub jsonl: Option<Target>,
    /// Directory the SVG plots are written into.
    pub plots: Option<PathBuf>,
    /// Where the heatmaps of a matrix over two axes go.
    pub heatmap: Option<Heatmaps>,
}

impl Outputs {
    /// True when one of the files is standard output, which then carries nothing else.
    pub fn to_stdout(&self) -> bool {
        [&self.json, &self.markdown, &self.csv, &self.html, &self.perfdash, &self.jsonl]
            .iter()
            .any(|t| matches!(t, Some(Target::Stdout)))
    }

    /// Writes the runs of `set` into every file asked for; none when they cannot be drawn as
    /// the heatmaps asked for (a plan has checked that they can before running them).
    pub fn write(&self, set: &ReportSet) -> Result<()> {
        // Nothing ran (stopped before the first run): no heatmap to draw, and no error.
        let heatmaps = match &self.heatmap {
            Some(to) if !set.runs.is_empty() => {
                let maps = heatmap::of_runs(&set.runs).map_err(|e| anyhow!("--heatmap: {e}"))?;
                Some((to, maps))
            }
            _ => None,
        };
        if let Some(t) = &self.json {
            t.write(&render::json(set))?;
        }
        if let Some(t) = &self.markdown {
            t.write(&markdown(&set.runs))?;
        }
        if let Some(t) = &self.csv {
            t.write(&intervals_csv(&set.runs))?;
        }
        if let Some(t) = &self.html {
            t.write(&render::html(set))?;
        }
        if let Some(t) = &self.perfdash {
            t.write(&render::perfdash(set))?;
        }
        if let Some(dir) = &self.plots {
            write_plots(dir, &set.runs, &Columns::new(&set.runs))?;
        }
        if let Some((to, maps)) = heatmaps {
            to.write(&maps)?;
        }
        Ok(())
    }
}

/// Where `--heatmap` draws: every figure in one SVG file, or a file per figure in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heatmaps {
    /// One document, a panel per figure.
    File(PathBuf),
    /// `SLUG.svg` per figure (`read-throughput.svg`, `read-p99.svg`, ...).
    Dir(PathBuf),
}

impl Heatmaps {
    /// A path ending in `.svg` is one file; any other a directory, created if missing.
    /// Checked as the other report files are.
    pub fn new(path: &Path) -> Result<Self> {
        if path == Path::new("-") {
            bail!("--heatmap writes SVG files: give FILE.svg or a directory, not standard output");
        }
        if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) {
            Target::File(path.to_owned()).check("--heatmap")?;
            Ok(Self::File(path.to_owned()))
        } else {
            check_dir(path, "--heatmap")?;
            Ok(Self::Dir(path.to_owned()))
        }
    }

    /// Draws `maps`, each file atomically.
    pub fn write(&self, maps: &[Heatmap]) -> Result<()> {
        match self {
            Self::File(path) => Target::File(path.clone()).write(&heatmap::svg(maps)),
            Self::Dir(dir) => maps.iter().try_for_each(|map| {
                Target::File(dir.join(format!("{}.svg", map.slug)))
                    .write(&heatmap::svg(std::slice::from_ref(map)))
            }),
        }
    }
}

/// The report files named by `flags` (flag name, path), each checked; at most one of them
/// may be standard output (`-`).
pub fn targets<const N: usize>(flags: [(&str, Option<&Path>); N]) -> Result<[Option<Target>; N]> {
    let targets = flags.map(|(_, path)| path.map(Target::new));
    if targets.iter().filter(|t| matches!(t, Some(Target::Stdout))).count() > 1 {
        let names: Vec<&str> = flags.iter().map(|(name, _)| *name).collect();
        let (last, rest) = names.split_last().expect("two flags at least");
        bail!("only one of {} and {last} can write to standard output (-)", rest.join(", "));
    }
    for ((flag, _), target) in flags.iter().zip(&targets) {
        if let Some(t) = target {
            t.check(flag)?;
        }
    }
    Ok(targets)
}

/// The markdown of `runs`: the table in the columns of etcd's performance guide, then, with
/// several runs, the runs side by side (dbtester's figures, a column per run). The first
/// answers how a run compares with the guide's figures, the second how the runs compare
/// with each other, the servers' side too; both are cheap, so both are written.
fn markdown(runs: &[Report]) -> String {
    let mut text = render::markdown(runs);
    if runs.len() > 1 {
        text.push('\n');
        text.push_str(&Columns::new(runs).markdown());
    }
    text
}

/// The interval CSV of every run, under one header.
fn intervals_csv(runs: &[Report]) -> String {
    let mut text = String::new();
    for (i, r) in runs.iter().enumerate() {
        let csv = render::intervals_csv(r);
        text.push_str(if i == 0 {
            &csv
        } else {
            csv.split_once('\n').map_or("", |(_, rows)| rows)
        });
    }
    text
}

/// Where a report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output.
    Stdout,
    /// A file, replaced atomically.
    File(PathBuf),
}

impl Target {
    /// `-` is standard output, and so are its names in `/dev` and `/proc` (then nothing else
    /// is printed there, as with `-`); anything else a file path.
    pub fn new(path: &Path) -> Self {
        let stdout = ["-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"];
        if stdout.iter().any(|name| path == Path::new(name)) {
            Self::Stdout
        } else {
            Self::File(path.to_owned())
        }
    }

    /// Creates the file's directory if it is missing (as `-o`-style flags do), and fails
    /// unless a file can be created in it; for what is written through, unless it can be
    /// opened for writing.
    pub fn check(&self, flag: &str) -> Result<()> {
        let Self::File(path) = self else { return Ok(()) };
        if path.is_dir() {
            bail!("{flag} {}: is a directory", path.display());
        }
        let path = match destination(path) {
            // A FIFO is opened once its report is ready: opening it now would wait for a
            // reader.
            Destination::Through { fifo: true } => return Ok(()),
            Destination::Through { fifo: false } => {
                open_through(path)
                    .with_context(|| format!("{flag} {}: cannot write it", path.display()))?;
                return Ok(());
            }
            Destination::Replace(real) => real,
        };
        let path = path.as_path();
        let dir = parent(path);
        std::fs::create_dir_all(dir).with_context(|| {
            format!("{flag} {}: cannot create directory {}", path.display(), dir.display())
        })?;
        tempfile::NamedTempFile::new_in(dir).with_context(|| {
            format!("{flag} {}: cannot write in {}", path.display(), dir.display())
        })?;
        Ok(())
    }

    /// Writes `contents` in full, atomically for regular files, appended to anything else.
    pub fn write(&self, contents: &str) -> Result<()> {
        match self {
            Self::Stdout => print(contents),
            Self::File(given) => {
                let path = match destination(given) {
                    Destination::Through { .. } => {
                        return open_through(given)
                            .and_then(|mut out| out.write_all(contents.as_bytes()))
                            .with_context(|| format!("writing {}", given.display()));
                    }
                    Destination::Replace(real) => real,
                };
                // The mode a file created in the usual way gets (0644 under umask 022), not
                // the temp file's private 0600, which would survive the rename.
                let mut tmp = tempfile::Builder::new()
                    .permissions(std::fs::Permissions::from_mode(0o666))
                    .tempfile_in(parent(&path))
                    .with_context(|| format!("writing {}", path.display()))?;
                tmp.write_all(contents.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?;
                tmp.as_file().sync_all().with_context(|| format!("writing {}", path.display()))?;
                tmp.persist(&path)
                    .map_err(|e| e.error)
                    .with_context(|| format!("writing {}", path.display()))?;
                Ok(())
            }
        }
    }
}

/// How a report reaches a file path.
#[derive(Debug, PartialEq, Eq)]
enum Destination {
    /// Written through the path: a device, a FIFO, a socket, or a file descriptor's link
    /// in `/proc` (`/dev/stdout`, `/dev/fd/3`: a terminal, a pipe or the file the shell
    /// opened). Renaming onto `/dev/null` would replace the device for every process on the
    /// machine.
    Through {
        /// A FIFO: opening it waits for a reader.
        fifo: bool,
    },
    /// A regular file, or none yet: a temp file is renamed onto this path, the file a
    /// symlink names rather than the link.
    Replace(PathBuf),
}

/// Opens what is written through for appending: it is never created or emptied.
fn open_through(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().append(true).open(path)
}

fn destination(path: &Path) -> Destination {
    use std::os::unix::fs::FileTypeExt;
    // In /proc, or in a directory that is (`/dev/fd` links to `/proc/self/fd`); `/dev/shm`'s
    // files are regular files like any other.
    let special = |p: &Path| {
        p.starts_with("/proc")
            || std::fs::canonicalize(parent(p)).is_ok_and(|dir| dir.starts_with("/proc"))
    };
    // Symlinks followed one at a time (as the kernel does, at most 40), so that a link to a
    // file not made yet is replaced at the file's path, not the link's.
    let mut path = path.to_owned();
    for _ in 0..40 {
        if special(&path) {
            let fifo = std::fs::metadata(&path).is_ok_and(|m| m.file_type().is_fifo());
            return Destination::Through { fifo };
        }
        let Ok(target) = std::fs::read_link(&path) else { break };
        path = parent(&path).join(target);
    }
    match std::fs::metadata(&path) {
        Ok(m) if !m.is_file() => Destination::Through { fifo: m.file_type().is_fifo() },
        _ => Destination::Replace(path),
    }
}

/// Creates `dir` if it is missing (`--plots`), and fails unless files can be created in it.
pub fn check_dir(dir: &Path, flag: &str) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{flag} {}: cannot create directory", dir.display()))?;
    tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("{flag} {}: cannot write in it", dir.display()))?;
    Ok(())
}

/// Writes the SVG plots of every run into `dir`, each file atomically: for run `n` (from 1,
/// as the HTML page numbers them) `n-OP-latency.svg` and `n-OP-spectrum.svg` per operation
/// kind, `n-throughput.svg`, and `n-steps.svg` for a run with client steps; with several
/// runs, the plots that overlay them, a line each named as `table` (built from `runs`)
/// heads its column: `overlay-SLUG.svg` (`overlay-throughput.svg`, `overlay-p99.svg`, ...,
/// the slugs of [`overlay::over_time`], [`overlay::members_over_time`] and
/// [`overlay::by_keys_written`]).
pub fn write_plots(dir: &Path, reports: &[Report], table: &Columns) -> Result<()> {
    for (i, report) in reports.iter().enumerate() {
        let n = i + 1;
        for &kind in report.ops.keys() {
            Target::File(dir.join(format!("{n}-{kind}-latency.svg")))
                .write(&plot::latency_over_time(report, kind))?;
            Target::File(dir.join(format!("{n}-{kind}-spectrum.svg")))
                .write(&plot::percentile_spectrum(report, kind))?;
        }
        Target::File(dir.join(format!("{n}-throughput.svg")))
            .write(&plot::throughput_over_time(report))?;
        if !report.steps.is_empty() {
            Target::File(dir.join(format!("{n}-steps.svg"))).write(&plot::steps(report))?;
        }
    }
    if reports.len() > 1 {
        let labels = table.line_labels(reports);
        let runs: Vec<overlay::Run<'_>> = labels.iter().map(String::as_str).zip(reports).collect();
        let plots = [overlay::over_time, overlay::members_over_time, overlay::by_keys_written];
        for (slug, svg) in plots.into_iter().flat_map(|plot| plot(&runs)) {
            Target::File(dir.join(format!("overlay-{slug}.svg"))).write(&svg)?;
        }
    }
    Ok(())
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_atomically_and_checks_directories() {
        let dir = tempfile::tempdir().unwrap();
        let file = Target::new(&dir.path().join("r.json"));
        file.check("--json").unwrap();
        file.write("{}\n").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("r.json")).unwrap(), "{}\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left behind");

        let missing = Target::new(&dir.path().join("new/dir/r.json"));
        missing.check("--json").unwrap();
        assert!(dir.path().join("new/dir").is_dir(), "a missing directory is created");
        std::fs::write(dir.path().join("f"), "").unwrap();
        let under_a_file = Target::new(&dir.path().join("f/r.json"));
        let err = under_a_file.check("--json").unwrap_err().to_string();
        assert!(err.contains("cannot create directory"), "{err}");
        assert!(
            Target::new(dir.path())
                .check("--json")
                .unwrap_err()
                .to_string()
                .contains("is a directory")
        );
        assert_eq!(Target::new(Path::new("-")), Target::Stdout);
        assert_eq!(Target::new(Path::new("/dev/stdout")), Target::Stdout);
    }

    #[test]
    fn devices_fifos_and_symlinks_are_written_through_not_replaced() {
        // Decided, not written: a report renamed onto /dev/null would replace the device
        // for every process on the machine.
        for special in ["/dev/null", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"] {
            let d = destination(Path::new(special));
            assert!(matches!(d, Destination::Through { .. }), "{special}: {d:?}");
        }
        // A regular file under /dev (tmpfs) is replaced as any other.
        if Path::new("/dev/shm").is_dir() {
            let shm = Path::new("/dev/shm/etcdlat-no-such-report.json");
            assert_eq!(destination(shm), Destination::Replace(shm.to_owned()));
        }
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("new.json");
        assert_eq!(destination(&new), Destination::Replace(new.clone()));

        // A symlink: the file it names gets the report, and stays where the link points.
        let real = dir.path().join("real.md");
        std::fs::write(&real, "old").unwrap();
        let link = dir.path().join("link.md");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let target = Target::new(&link);
        target.check("--markdown").unwrap();
        target.write("| a |\n").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink(), "the link stays");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "| a |\n");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2, "no temp file left");

        // A FIFO: its reader gets the report; it stays a FIFO.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
        assert!(made.success());
        let target = Target::new(&fifo);
        target.check("--json").unwrap();
        let reader = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::read_to_string(fifo).unwrap()
        });
        target.write("{}\n").unwrap();
        assert_eq!(reader.join().unwrap(), "{}\n");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn one_report_file_at_most_goes_to_standard_output() {
        let dash = Some(Path::new("-"));
        let run = [("--json", dash), ("--markdown", None), ("--csv", dash), ("--html", None)];
        assert_eq!(
            targets(run).unwrap_err().to_string(),
            "only one of --json, --markdown, --csv and --html can write to standard output (-)"
        );
        let merge = [("--json", dash), ("--markdown", dash), ("--csv", None)];
        assert_eq!(
            targets(merge).unwrap_err().to_string(),
            "only one of --json, --markdown and --csv can write to standard output (-)"
        );
        let [json, markdown] = targets([("--json", dash), ("--markdown", None)]).unwrap();
        assert_eq!((json, markdown), (Some(Target::Stdout), None));
        let outputs = Outputs { json: Some(Target::Stdout), ..Outputs::default() };
        assert!(outputs.to_stdout());
        assert!(!Outputs::default().to_stdout());
    }

    #[test]
    fn plot_directories_are_created_when_missing() {
        let dir = tempfile::tempdir().unwrap();
        check_dir(dir.path(), "--plots").unwrap();
        check_dir(&dir.path().join("new/plots"), "--plots").unwrap();
        assert!(dir.path().join("new/plots").is_dir());
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(check_dir(&file, "--plots").is_err(), "a file is not a directory");
    }
}
