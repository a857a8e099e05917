//! `etcdlat run`'s scenarios: files, or shipped scenarios by name, with the flags that
//! override them (`--total`, `--duration`, `--rate`, `--warmup`, `--open-loop`, `--scale`),
//! matrices expanded, and TLS paths read relative to the file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use etcdlat_core::{Scenario, Schedule};

use super::flag::duration_flag;
use super::security::missing_file;
use crate::builtin;
use crate::command_line::RunArgs;

/// Every run of the scenarios `args` names, in order, each validated.
pub fn read(args: &RunArgs) -> Result<Vec<Scenario>> {
    let duration = duration_flag("--duration", args.duration.as_deref())?;
    let warmup = duration_flag("--warmup", args.warmup.as_deref())?;
    if let Some(f) = args.scale
        && !(f.is_finite() && f > 0.0)
    {
        bail!("--scale must be more than 0, got {f}");
    }
    if args.scenarios.is_empty() {
        bail!(
            "run needs a scenario: a TOML file, or a shipped one by name (`etcdlat scenarios` lists them, e.g. `etcdlat run put-1mb`)"
        );
    }
    let mut out = Vec::new();
    for name in &args.scenarios {
        let path = PathBuf::from(name);
        // The directory a file's relative TLS paths are read from; none for shipped ones.
        let (text, label, dir) = if path.is_file() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading scenario {}", path.display()))?;
            (text, path.display().to_string(), Some(path.parent().unwrap_or(Path::new(""))))
        } else if let Some((builtin_name, text)) = builtin::find(name) {
            (text.to_owned(), format!("shipped scenario {builtin_name}"), None)
        } else if path.exists() {
            bail!("scenario {name}: not a file");
        } else {
            bail!(
                "scenario {name}: no such file, and no shipped scenario by that name (see `etcdlat scenarios`)"
            );
        };
        let mut s = Scenario::from_toml_str(&text).with_context(|| format!("scenario {label}"))?;
        if let Some(t) = args.total {
            s.load.total = Some(t);
        }
        if let Some(d) = duration {
            s.load.duration = Some(d);
            if args.total.is_none() {
                s.load.total = None;
            }
        }
        if let Some(r) = args.rate {
            s.load.rate = r;
        }
        if let Some(w) = warmup {
            s.load.warmup = w;
        }
        if args.open_loop {
            s.load.schedule = Schedule::Open;
        }
        let runs = s.expand().with_context(|| format!("scenario {label}"))?;
        for mut run in runs {
            if let Some(dir) = dir {
                run.cluster.resolve_paths(dir);
            }
            let c = &run.cluster;
            let files =
                [("cluster.cacert", &c.cacert), ("cluster.cert", &c.cert), ("cluster.key", &c.key)];
            if let Some((key, file)) = missing_file(files) {
                bail!("scenario {label}: {key} {}: no such file", file.display());
            }
            out.push(match args.scale {
                Some(f) => run.scaled(f),
                None => run,
            });
        }
    }
    Ok(out)
}
