//! `etcdlat run`'s scenarios: files, or shipped scenarios by name, with the flags that
//! change them (`--set` first; `--scale` on the file's values after its matrix is
//! expanded; then `--total`, `--duration`, `--rate`, `--warmup`, `--open-loop`, as given),
//! and TLS paths read relative to the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::scenario::{MAX_REPEAT, REPEAT_KEY};
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
        let text = set_keys(&text, &with_repeat(&args.set, args.repeat)?)
            .with_context(|| format!("scenario {label}"))?;
        let s = Scenario::from_toml_str(&text).with_context(|| format!("scenario {label}"))?;
        let runs = s.expand().with_context(|| format!("scenario {label}"))?;
        // A flag in place of a value the matrix varies would run one value under every
        // cell's label.
        let varied = |f: &dyn Fn(&Scenario) -> bool| runs.iter().any(f);
        for (flag, given, key, varies) in [
            (
                "--total",
                args.total.is_some(),
                "load.total",
                varied(&|r| r.load.total != s.load.total),
            ),
            (
                "--duration",
                duration.is_some(),
                "load.duration",
                varied(&|r| r.load.duration != s.load.duration),
            ),
            // Which also takes the total's place.
            (
                "--duration",
                duration.is_some() && args.total.is_none(),
                "load.total",
                varied(&|r| r.load.total != s.load.total),
            ),
            ("--rate", args.rate.is_some(), "load.rate", varied(&|r| r.load.rate != s.load.rate)),
            (
                "--warmup",
                warmup.is_some(),
                "load.warmup",
                varied(&|r| r.load.warmup != s.load.warmup),
            ),
            (
                "--open-loop",
                args.open_loop,
                "load.schedule",
                varied(&|r| r.load.schedule != s.load.schedule),
            ),
        ] {
            if given && varies {
                bail!(
                    "{flag}: scenario {label} has a matrix that varies {key}; drop the flag or the axis"
                );
            }
        }
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
            let mut run = match args.scale {
                Some(f) => run.scaled(f),
                None => run,
            };
            // The flags' values are taken as given: `--scale` scales the file's.
            override_load(&mut run, args, duration, warmup);
            out.push(run);
        }
    }
    Ok(out)
}

/// `--set`'s keys, and `--repeat N` as the key it stands for (`matrix.repeat`), last so that
/// it wins.
fn with_repeat(sets: &[String], repeat: Option<u32>) -> Result<Vec<String>> {
    let mut sets = sets.to_vec();
    if let Some(n) = repeat {
        if !(1..=MAX_REPEAT).contains(&n) {
            bail!("--repeat runs each scenario N times: N from 1 to {MAX_REPEAT}, got {n}");
        }
        sets.push(format!("matrix.{REPEAT_KEY}={n}"));
    }
    Ok(sets)
}

/// `--total`, `--duration`, `--rate`, `--warmup` and `--open-loop` in place of the run's
/// own (the file's, or its matrix cell's, scaled or not).
fn override_load(
    run: &mut Scenario,
    args: &RunArgs,
    duration: Option<Duration>,
    warmup: Option<Duration>,
) {
    if let Some(t) = args.total {
        run.load.total = Some(t);
    }
    if let Some(d) = duration {
        run.load.duration = Some(d);
        if args.total.is_none() {
            run.load.total = None;
        }
    }
    if let Some(r) = args.rate {
        run.load.rate = r;
    }
    if let Some(w) = warmup {
        run.load.warmup = w;
    }
    if args.open_loop {
        run.load.schedule = Schedule::Open;
    }
}

/// `text` with each `KEY=VALUE` of `--set` written into it: KEY a dotted path of tables
/// (made when missing), VALUE a TOML value, or a string when it is not one. The scenario's
/// own checks then judge the keys and values as if the file had them.
fn set_keys(text: &str, sets: &[String]) -> Result<String> {
    if sets.is_empty() {
        return Ok(text.to_owned());
    }
    // A file that is not TOML is named by the scenario's own parse, with its line.
    let Ok(mut doc) = text.parse::<toml::Table>() else { return Ok(text.to_owned()) };
    for set in sets {
        let (key, value) =
            set.split_once('=').ok_or_else(|| anyhow!("--set {set}: expected KEY=VALUE"))?;
        let path: Vec<&str> = key.trim().split('.').map(str::trim).collect();
        let Some((last, tables)) = path.split_last().filter(|_| path.iter().all(|p| !p.is_empty()))
        else {
            bail!("--set {set}: the key has an empty part");
        };
        let mut table = &mut doc;
        for (i, name) in tables.iter().enumerate() {
            let entry =
                table.entry(*name).or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let toml::Value::Table(inner) = entry else {
                bail!("--set {set}: {} is not a table", tables[..=i].join("."));
            };
            table = inner;
        }
        table.insert((*last).to_owned(), toml_value(value.trim()));
    }
    Ok(toml::to_string(&doc)?)
}

/// `text` as a TOML value (`500`, `true`, `"1m"`, `[1, 2]`), or as a string.
fn toml_value(text: &str) -> toml::Value {
    format!("v = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys are set where their path says, tables made on the way; values are TOML, or
    /// strings; a path through a value, or a malformed flag, is named.
    #[test]
    fn set_writes_keys_into_the_scenario() {
        let text = "name = \"a\"\n[load]\ntotal = 10\n[kubernetes]\nnodes = 50\n";
        let sets =
            |s: &[&str]| set_keys(text, &s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        let out: toml::Table = sets(&[
            "kubernetes.nodes=500",
            "load.duration=\"1m\"",
            "cluster.members = 3",
            "description=words here",
        ])
        .unwrap()
        .parse()
        .unwrap();
        assert_eq!(out["kubernetes"]["nodes"].as_integer(), Some(500));
        assert_eq!(out["load"]["duration"].as_str(), Some("1m"));
        assert_eq!(out["load"]["total"].as_integer(), Some(10));
        assert_eq!(out["cluster"]["members"].as_integer(), Some(3));
        assert_eq!(out["description"].as_str(), Some("words here"));
        assert!(sets(&["name.x=1"]).unwrap_err().to_string().contains("name is not a table"));
        assert!(sets(&["kubernetes.nodes"]).unwrap_err().to_string().contains("KEY=VALUE"));
        assert!(sets(&["load..total=1"]).unwrap_err().to_string().contains("empty part"));
        assert_eq!(sets(&[]).unwrap(), text);
    }
}
