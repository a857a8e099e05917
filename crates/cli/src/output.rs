//! Report files: checked before a run (so a long run never ends in "cannot write"), then
//! written atomically (a temp file in the same directory, renamed into place), so an
//! interrupted run never leaves a truncated file.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use etcdlat_core::Report;
use etcdlat_core::render::plot;

/// Where a report goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output.
    Stdout,
    /// A file, replaced atomically.
    File(PathBuf),
}

impl Target {
    /// `-` is standard output; anything else a file path.
    pub fn new(path: &Path) -> Self {
        if path == Path::new("-") { Self::Stdout } else { Self::File(path.to_owned()) }
    }

    /// Fails unless the file's directory exists and a file can be created in it.
    pub fn check(&self, flag: &str) -> Result<()> {
        let Self::File(path) = self else { return Ok(()) };
        if path.is_dir() {
            bail!("{flag} {}: is a directory", path.display());
        }
        let dir = parent(path);
        if !dir.is_dir() {
            bail!("{flag} {}: directory {} does not exist", path.display(), dir.display());
        }
        tempfile::NamedTempFile::new_in(dir).with_context(|| {
            format!("{flag} {}: cannot write in {}", path.display(), dir.display())
        })?;
        Ok(())
    }

    /// Writes `contents` in full, atomically for files.
    pub fn write(&self, contents: &str) -> Result<()> {
        match self {
            Self::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(contents.as_bytes()).context("writing to standard output")?;
                out.flush().context("writing to standard output")
            }
            Self::File(path) => {
                let mut tmp = tempfile::NamedTempFile::new_in(parent(path))
                    .with_context(|| format!("writing {}", path.display()))?;
                tmp.write_all(contents.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?;
                tmp.as_file().sync_all().with_context(|| format!("writing {}", path.display()))?;
                tmp.persist(path)
                    .map_err(|e| e.error)
                    .with_context(|| format!("writing {}", path.display()))?;
                Ok(())
            }
        }
    }
}

/// Fails unless `dir` is an existing directory that files can be created in (`--plots`).
pub fn check_dir(dir: &Path, flag: &str) -> Result<()> {
    if !dir.is_dir() {
        bail!("{flag} {}: no such directory", dir.display());
    }
    tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("{flag} {}: cannot write in it", dir.display()))?;
    Ok(())
}

/// Writes the SVG plots of every run into `dir`, each file atomically: for run `n` (from 1,
/// as the HTML page numbers them) `n-OP-latency.svg` and `n-OP-spectrum.svg` per operation
/// kind, and `n-throughput.svg`.
pub fn write_plots(dir: &Path, reports: &[Report]) -> Result<()> {
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

        let missing = Target::new(&dir.path().join("nope/r.json"));
        let err = missing.check("--json").unwrap_err().to_string();
        assert!(err.contains("does not exist"), "{err}");
        assert!(
            Target::new(dir.path())
                .check("--json")
                .unwrap_err()
                .to_string()
                .contains("is a directory")
        );
        assert_eq!(Target::new(Path::new("-")), Target::Stdout);
    }

    #[test]
    fn plot_directories_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        check_dir(dir.path(), "--plots").unwrap();
        let err = check_dir(&dir.path().join("nope"), "--plots").unwrap_err().to_string();
        assert!(err.contains("no such directory"), "{err}");
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        assert!(check_dir(&file, "--plots").is_err(), "a file is not a directory");
    }
}
