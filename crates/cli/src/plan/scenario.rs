//! `etcdlat run`'s scenarios: files, or shipped scenarios by name, with the flags that
//! change them (`--set` first; `--scale` on the file's values after its matrix is
//! expanded; then `--total`, `--duration`, `--rate`, `--warmup`, `--open-loop`, as given),
//! and TLS paths read relative to the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use etcdlat_core::scenario::{MAX_REPEAT, REPEAT_KEY};
use etcdlat_core::{Etcd, Scenario, Schedule};

use super::etcd::ETCD_AXIS;
use super::flag::duration_flag;
use super::security::missing_file;
use crate::builtin;
use crate::command_line::RunArgs;

/// Every run of the scenarios `args` names, in order, each validated; on `etcd` (`--etcd`)
/// when given: one etcd is the scenario's etcd, several its matrix's axis `cluster.etcd`
/// (as is one when the scenario has that axis), beside its other axes and repeats.
pub fn read(args: &RunArgs, etcd: &[Etcd]) -> Result<Vec<Scenario>> {
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
        let text = set_keys(&text, &with_repeat(&args.set, args.repeat)?, etcd)
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

/// `text` with each `KEY=VALUE` of `--set` written into it, then `--etcd`'s etcds: KEY a
/// dotted path of tables (made when missing), its parts bare or quoted as in TOML
/// (`matrix."cluster.etcd"`), VALUE a TOML value, or a string when it is not one. A key
/// under `matrix` names an axis whichever way the file writes it (`"cluster.etcd"` or
/// `cluster.etcd`), and replaces it. The scenario's own checks then judge the keys and
/// values as if the file had them.
fn set_keys(text: &str, sets: &[String], etcd: &[Etcd]) -> Result<String> {
    if sets.is_empty() && etcd.is_empty() {
        return Ok(text.to_owned());
    }
    // A file that is not TOML is named by the scenario's own parse, with its line.
    let Ok(mut doc) = text.parse::<toml::Table>() else { return Ok(text.to_owned()) };
    let mut etcd_axis_set = false;
    for set in sets {
        let (key, value) =
            set.split_once('=').ok_or_else(|| anyhow!("--set {set}: expected KEY=VALUE"))?;
        let path = key_path(key).map_err(|why| anyhow!("--set {set}: {why}"))?;
        let value = toml_value(value.trim());
        match path.split_first() {
            Some((matrix, axis)) if matrix == "matrix" && !axis.is_empty() => {
                etcd_axis_set |= axis.join(".") == ETCD_AXIS;
                set_axis(&mut doc, axis, value).map_err(|why| anyhow!("--set {set}: {why}"))?;
            }
            _ => set_path(&mut doc, &path, value).map_err(|why| anyhow!("--set {set}: {why}"))?,
        }
    }
    if !etcd.is_empty() {
        let remote =
            doc.get("cluster").and_then(|c| c.get("endpoints")).and_then(toml::Value::as_array);
        // Refused by the plan, in the words of the flag, once the scenario is read.
        if remote.is_none_or(Vec::is_empty) {
            if etcd_axis_set {
                bail!(
                    "--etcd and --set matrix.\"{ETCD_AXIS}\" both say which etcds the runs are on; give one"
                );
            }
            // The flag's paths are the working directory's; a file's, its directory's.
            let names = || {
                etcd.iter().map(|e| match e {
                    Etcd::Path(p) => std::path::absolute(p).unwrap_or_else(|_| p.clone()),
                    other => std::path::PathBuf::from(other.to_string()),
                })
            };
            let names = || names().map(|p| toml::Value::String(p.display().to_string()));
            let axis: Vec<String> = ETCD_AXIS.split('.').map(str::to_owned).collect();
            let has_axis = doc
                .get("matrix")
                .and_then(toml::Value::as_table)
                .is_some_and(|m| axis_of(m, &axis).is_some());
            if etcd.len() > 1 || has_axis {
                set_axis(&mut doc, &axis, toml::Value::Array(names().collect()))
                    .map_err(|why| anyhow!("--etcd: {why}"))?;
            } else {
                set_path(&mut doc, &axis, names().next().expect("one etcd"))
                    .map_err(|why| anyhow!("--etcd: {why}"))?;
            }
        }
    }
    if let Some(toml::Value::Table(matrix)) = doc.get_mut("matrix") {
        *matrix = flat_axes(std::mem::take(matrix), "");
    }
    Ok(toml::to_string(&doc)?)
}

/// The matrix's tables of axes as dotted keys (`load = { clients = [..] }` as
/// `"load.clients" = [..]`, the same axis to the matrix), in order: TOML writes a table's
/// tables after its values, which would change the axes' order, and so the runs'.
fn flat_axes(table: toml::Table, prefix: &str) -> toml::Table {
    let mut out = toml::Table::new();
    for (key, value) in table {
        let path = if prefix.is_empty() { key } else { format!("{prefix}.{key}") };
        match value {
            toml::Value::Table(inner) => out.extend(flat_axes(inner, &path)),
            value => {
                out.insert(path, value);
            }
        }
    }
    out
}

/// The parts of a `--set` key: a TOML dotted key, its parts bare (`load.total`) or quoted
/// (`matrix."cluster.etcd"`).
fn key_path(key: &str) -> Result<Vec<String>, String> {
    let key = key.trim();
    if !key.contains(['"', '\'']) {
        let parts: Vec<String> = key.split('.').map(|p| p.trim().to_owned()).collect();
        if parts.iter().any(String::is_empty) {
            return Err("the key has an empty part".to_owned());
        }
        return Ok(parts);
    }
    // TOML reads the key: `KEY = 0` is a table per part down to the 0.
    let table: toml::Table = format!("{key} = 0").parse().map_err(|_| {
        format!(
            "{key} is not a key: dotted parts, bare or quoted as in TOML, like load.total or matrix.\"cluster.etcd\""
        )
    })?;
    let mut parts = Vec::new();
    let mut table = &table;
    while let Some((part, value)) = table.iter().next() {
        parts.push(part.clone());
        match value {
            toml::Value::Table(inner) => table = inner,
            _ => break,
        }
    }
    Ok(parts)
}

/// Writes `value` at `path` in `doc`, making the tables on the way.
fn set_path(doc: &mut toml::Table, path: &[String], value: toml::Value) -> Result<(), String> {
    let (last, tables) = path.split_last().ok_or("the key is empty")?;
    let mut table = doc;
    for (i, name) in tables.iter().enumerate() {
        let entry =
            table.entry(name.clone()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let toml::Value::Table(inner) = entry else {
            return Err(format!("{} is not a table", tables[..=i].join(".")));
        };
        table = inner;
    }
    table.insert(last.clone(), value);
    Ok(())
}

/// Writes the matrix's axis `axis` (`cluster`, `etcd`) in place of the one the file has,
/// however it writes it (`"cluster.etcd" = [..]` or `cluster.etcd = [..]`), so that the
/// axes keep their order; a new axis goes last, written `"cluster.etcd"`.
fn set_axis(doc: &mut toml::Table, axis: &[String], value: toml::Value) -> Result<(), String> {
    let matrix = doc.entry("matrix").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let toml::Value::Table(matrix) = matrix else {
        return Err("matrix is not a table".to_owned());
    };
    // `"load.clients"` and `load.clients` are one axis to the matrix: its path's parts.
    let name = axis.join(".");
    let axis: Vec<String> = name.split('.').map(str::to_owned).collect();
    match axis_of(matrix, &axis) {
        // Where the file has it, so that the axes keep their order.
        Some(key) => set_path(matrix, &key, value),
        None => {
            matrix.insert(name, value);
            Ok(())
        }
    }
}

/// How `matrix` writes the axis `axis`: the keys down to it (`["cluster.etcd"]`, or
/// `["cluster", "etcd"]`), if it has it.
fn axis_of(matrix: &toml::Table, axis: &[String]) -> Option<Vec<String>> {
    (1..=axis.len()).find_map(|i| {
        let head = axis[..i].join(".");
        match (matrix.get(&head), i == axis.len()) {
            (Some(_), true) => Some(vec![head]),
            (Some(toml::Value::Table(inner)), false) => {
                let mut rest = axis_of(inner, &axis[i..])?;
                rest.insert(0, head);
                Some(rest)
            }
            _ => None,
        }
    })
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
        let sets = |s: &[&str]| {
            set_keys(text, &s.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>(), &[])
        };
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

    /// A matrix key names an axis however the file writes it, and replaces it in its
    /// place; `--etcd` is the etcd, or the `cluster.etcd` axis when several or the scenario
    /// has the axis; the two together are refused.
    #[test]
    fn set_and_etcd_address_matrix_axes() {
        let text = "name = \"m\"\n[load]\ntotal = 1\n[op.put]\n[matrix]\n\"cluster.etcd\" = [\"v3.5.21\"]\nload.clients = [1, 2]\n";
        let edit = |sets: &[&str], etcd: &[&str]| {
            let sets: Vec<String> = sets.iter().map(|s| (*s).to_owned()).collect();
            let etcd: Vec<Etcd> = etcd.iter().map(|e| e.parse().unwrap()).collect();
            set_keys(text, &sets, &etcd).map(|t| t.parse::<toml::Table>().unwrap())
        };
        let axes = |doc: &toml::Table| -> Vec<(String, toml::Value)> {
            doc["matrix"].as_table().unwrap().iter().map(|(k, v)| (k.clone(), v.clone())).collect()
        };
        let etcds = |names: &[&str]| {
            toml::Value::Array(names.iter().map(|n| toml::Value::String((*n).into())).collect())
        };
        // The matrix's axes come back as dotted keys, in the file's order.
        let clients = toml::Value::Array(vec![toml::Value::Integer(1), toml::Value::Integer(2)]);

        // Quoted, as the file writes it: replaced where it is.
        let doc = edit(&["matrix.\"cluster.etcd\"=[\"v3.6.16\", \"v3.7.3\"]"], &[]).unwrap();
        let both = etcds(&["v3.6.16", "v3.7.3"]);
        assert_eq!(
            axes(&doc),
            [("cluster.etcd".into(), both.clone()), ("load.clients".into(), clients.clone())]
        );
        // Bare: the same axis, not a second one.
        let doc = edit(&["matrix.cluster.etcd=[\"debian\"]"], &[]).unwrap();
        assert_eq!(
            axes(&doc),
            [("cluster.etcd".into(), etcds(&["debian"])), ("load.clients".into(), clients.clone())]
        );
        // The nested axis, written quoted: replaced where the file has it.
        let doc = edit(&["matrix.\"load.clients\"=[8]"], &[]).unwrap();
        let eight = toml::Value::Array(vec![toml::Value::Integer(8)]);
        assert_eq!(
            axes(&doc),
            [("cluster.etcd".into(), etcds(&["v3.5.21"])), ("load.clients".into(), eight)]
        );
        let scenario = Scenario::from_toml_str(
            &set_keys(text, &["matrix.\"cluster.etcd\"=[\"v3.6.16\",\"v3.7.3\"]".into()], &[])
                .unwrap(),
        )
        .unwrap();
        let names: Vec<String> = scenario.expand().unwrap().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "m [etcd=v3.6.16, clients=1]",
                "m [etcd=v3.6.16, clients=2]",
                "m [etcd=v3.7.3, clients=1]",
                "m [etcd=v3.7.3, clients=2]"
            ]
        );

        // --etcd: the axis, in its place.
        let doc = edit(&[], &["v3.6.16", "v3.7.3"]).unwrap();
        assert_eq!(axes(&doc), [("cluster.etcd".into(), both), ("load.clients".into(), clients)]);
        let doc = edit(&[], &["v3.7.3"]).unwrap();
        assert_eq!(axes(&doc)[0], ("cluster.etcd".into(), etcds(&["v3.7.3"])));
        // Without the axis: one etcd is the scenario's, several a new axis.
        let plain = "[load]\ntotal = 1\n[op.put]\n";
        let one: toml::Table =
            set_keys(plain, &[], &["v3.7.3".parse().unwrap()]).unwrap().parse().unwrap();
        assert_eq!(one["cluster"]["etcd"].as_str(), Some("v3.7.3"));
        assert!(!one.contains_key("matrix"));
        let two: toml::Table =
            set_keys(plain, &[], &from_flag_etcds(&["debian", "v3.7.3"])).unwrap().parse().unwrap();
        assert_eq!(two["matrix"]["cluster.etcd"], etcds(&["system", "v3.7.3"]));
        let msg = edit(&["matrix.\"cluster.etcd\"=[\"v3.6.16\"]"], &["v3.7.3"]).unwrap_err();
        assert!(msg.to_string().starts_with("--etcd and --set matrix.\"cluster.etcd\""), "{msg}");

        // A key that is not one is named.
        let msg = edit(&["matrix.\"cluster.etcd=[1]"], &[]).unwrap_err().to_string();
        assert!(msg.contains("is not a key") && !msg.contains('\n'), "{msg}");
    }

    fn from_flag_etcds(names: &[&str]) -> Vec<Etcd> {
        names.iter().map(|n| n.parse().unwrap()).collect()
    }
}
