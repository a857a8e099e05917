//! Which etcd binary each throwaway local cluster runs: `[cluster] etcd` and `--etcd` (core's
//! [`Etcd`]: the system's, a version, or a path) found on disk before anything starts, so
//! that a matrix over versions with one missing fails at once, not after its first runs.
//!
//! A version `vX.Y.Z` is the file `vX.Y.Z/etcd` in the cache of etcd versions:
//! `${ETCD_CACHE:-~/.cache/etcdlat/etcd}`, where `.ci/deps --tests` builds the versions of
//! `.ci/etcd-versions` from etcd's Go module.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use etcdlat_core::{Etcd, EtcdVersion, Scenario};
use etcdlat_driver::DriverError;

use super::cluster::Cluster;

/// etcd's Go module, which a version is built from.
const ETCD_MODULE: &str = "go.etcd.io/etcd/server/v3";

/// Where etcd binaries are found, read from the environment once.
#[derive(Debug, Clone)]
pub struct EtcdSources {
    /// The system's etcd: `ETCD_BIN`, else `etcd`, looked up in `search_path`.
    pub system: PathBuf,
    /// `PATH`'s directories.
    pub search_path: Vec<PathBuf>,
    /// The cache of etcd versions: `ETCD_CACHE`, else `~/.cache/etcdlat/etcd`; `None` when
    /// neither it nor `HOME` is set.
    pub cache: Option<PathBuf>,
}

impl EtcdSources {
    /// The sources this process's environment names.
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        Self {
            system: var("ETCD_BIN").unwrap_or_else(|| PathBuf::from("etcd")),
            search_path: std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect())
                .unwrap_or_default(),
            cache: var("ETCD_CACHE")
                .or_else(|| var("HOME").map(|home| home.join(".cache/etcdlat/etcd"))),
        }
    }

    /// The binary `etcd` names, checked to be an executable file.
    ///
    /// # Errors
    /// One line: what is missing, every place looked at, and how to get it.
    pub fn find(&self, etcd: &Etcd) -> Result<PathBuf> {
        match etcd {
            Etcd::System => self.system(),
            Etcd::Version(v) => self.version(*v),
            Etcd::Path(path) => {
                executable(path)?;
                Ok(path.clone())
            }
        }
    }

    /// `ETCD_BIN`, or `etcd` on `PATH`; the driver's words when it is missing, as when it
    /// could not start it.
    fn system(&self) -> Result<PathBuf> {
        let found = if self.system.components().count() > 1 {
            self.system.is_file()
        } else {
            self.search_path.iter().any(|dir| executable(&dir.join(&self.system)).is_ok())
        };
        if !found {
            return Err(DriverError::EtcdNotFound { binary: self.system.clone() }.into());
        }
        Ok(self.system.clone())
    }

    /// `vX.Y.Z/etcd` in the cache.
    fn version(&self, v: EtcdVersion) -> Result<PathBuf> {
        let Some(cache) = &self.cache else {
            bail!(
                "etcd {v}: the cache of etcd versions is ${{ETCD_CACHE:-~/.cache/etcdlat/etcd}}, and neither ETCD_CACHE nor HOME is set; set ETCD_CACHE, or give a path to an etcd binary"
            );
        };
        let bin = cache.join(v.to_string()).join("etcd");
        if let Err(why) = executable(&bin) {
            let dir = bin.parent().unwrap_or(cache);
            bail!(
                "etcd {v}: {why:#} (the cache of etcd versions is $ETCD_CACHE, else ~/.cache/etcdlat/etcd: {} {}); build it with Go: mkdir -p {dir} && cd \"$(mktemp -d)\" && go mod init etcdlat.invalid/build && go get {ETCD_MODULE}@{v} && CGO_ENABLED=0 go build -o {bin} {ETCD_MODULE} (in etcdlat's repository `.ci/deps --tests` builds the versions of .ci/etcd-versions), or give a path to an etcd binary",
                cache.display(),
                holds(cache),
                dir = dir.display(),
                bin = bin.display(),
            );
        }
        Ok(bin)
    }
}

/// `--etcd`'s etcds: one, or several comma-separated (`v3.6.16,v3.7.3`), each once.
///
/// # Errors
/// One line naming the value that is not an etcd, or given twice.
pub fn from_flag(text: &str) -> Result<Vec<Etcd>> {
    let mut out: Vec<Etcd> = Vec::new();
    for part in text.split(',').map(str::trim) {
        let etcd = part.parse::<Etcd>().map_err(|e| anyhow!("--etcd: {e}"))?;
        if out.contains(&etcd) {
            bail!(
                "--etcd: {etcd} is given twice; each etcd runs once (--repeat N runs each N times)"
            );
        }
        out.push(etcd);
    }
    Ok(out)
}

/// etcd benchmark's commands' scenarios on `etcds` (`--etcd`): each on the one etcd, or, for
/// several, run once on each as the matrix axis `cluster.etcd` (as `run` writes it into its
/// scenarios before they are expanded).
///
/// # Errors
/// A run of the matrix that cannot be made, named as the matrix names it.
pub fn apply(scenarios: Vec<Scenario>, etcds: &[Etcd]) -> Result<Vec<Scenario>> {
    let mut out = Vec::with_capacity(scenarios.len() * etcds.len().max(1));
    for mut s in scenarios {
        match etcds {
            [] => out.push(s),
            [one] => {
                s.cluster.etcd = Some(one.clone());
                out.push(s);
            }
            several => {
                let axis = several.iter().map(|e| toml::Value::String(e.to_string())).collect();
                s.matrix.insert(ETCD_AXIS.to_owned(), toml::Value::Array(axis));
                out.extend(s.expand().map_err(|e| anyhow!("--etcd: {e}"))?);
            }
        }
    }
    Ok(out)
}

/// The matrix axis of the etcd a run's throwaway cluster runs.
pub const ETCD_AXIS: &str = "cluster.etcd";

/// Checks that `path` is a file that may be run.
fn executable(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("{}: no such file", path.display())
        }
        Err(e) => bail!("{}: {e}", path.display()),
        Ok(m) if !m.is_file() => bail!("{}: not a file", path.display()),
        Ok(m) if m.permissions().mode() & 0o111 == 0 => {
            bail!("{}: not executable", path.display())
        }
        Ok(_) => Ok(()),
    }
}

/// What the cache holds, for messages: `holds v3.5.21, v3.6.14`.
fn holds(cache: &Path) -> String {
    let Ok(entries) = std::fs::read_dir(cache) else {
        return "does not exist".to_owned();
    };
    let mut versions: Vec<EtcdVersion> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|v: &EtcdVersion| executable(&cache.join(v.to_string()).join("etcd")).is_ok())
        .collect();
    versions.sort_unstable();
    if versions.is_empty() {
        return "holds no version".to_owned();
    }
    let names: Vec<String> = versions.iter().map(EtcdVersion::to_string).collect();
    format!("holds {}", names.join(", "))
}

/// The etcd binary each scenario's throwaway local cluster runs, in the order of
/// `scenarios` (`None` for those that run against endpoints), every one found before any
/// runs. `flag` says the scenarios' etcd came from `--etcd`, for messages.
///
/// # Errors
/// One line naming the scenario and its etcd: a binary that is not there (and where it was
/// looked for), or an etcd asked of a cluster that etcdlat does not start.
pub fn binaries(
    scenarios: &[Scenario],
    cluster: &Cluster,
    flag: bool,
    sources: &EtcdSources,
) -> Result<Vec<Option<PathBuf>>> {
    let mut out = Vec::with_capacity(scenarios.len());
    for s in scenarios {
        let asked = s.cluster.etcd.as_ref();
        if cluster.endpoints_for(s).is_some() {
            if let Some(etcd) = asked {
                bail!(
                    "{}: cluster.etcd {etcd} asks for a throwaway local cluster of that etcd, but the run goes to --endpoints, a cluster etcdlat does not start, which has the version it has; remove one",
                    s.name
                );
            }
            out.push(None);
            continue;
        }
        let found = sources.find(asked.unwrap_or(&Etcd::System));
        out.push(Some(match (found, asked) {
            (Ok(bin), _) => bin,
            (Err(e), None) => return Err(e),
            (Err(e), Some(_)) if flag => return Err(e.context("--etcd")),
            (Err(e), Some(_)) => return Err(e.context(format!("{}: cluster.etcd", s.name))),
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sources with the cache at `cache`, whose system etcd is `system`.
    fn sources(system: &str, cache: &Path) -> EtcdSources {
        EtcdSources {
            system: PathBuf::from(system),
            search_path: vec![PathBuf::from("/nonexistent/bin")],
            cache: Some(cache.to_owned()),
        }
    }

    /// A file at `path` with `mode`.
    fn file(path: &Path, mode: u32) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn scenarios(text: &str) -> Vec<Scenario> {
        Scenario::from_toml_str(text).unwrap().expand().unwrap()
    }

    #[test]
    fn versions_are_found_in_the_cache() {
        let cache = tempfile::tempdir().unwrap();
        file(&cache.path().join("v3.6.14/etcd"), 0o755);
        file(&cache.path().join("v3.5.21/etcd"), 0o755);
        file(&cache.path().join("v3.4.0/etcd"), 0o644);
        std::fs::create_dir_all(cache.path().join("notes")).unwrap();
        let sources = sources("/nonexistent/etcd", cache.path());
        let v = |text: &str| sources.find(&text.parse().unwrap());
        assert_eq!(v("v3.6.14").unwrap(), cache.path().join("v3.6.14/etcd"));

        let msg = format!("{:#}", v("v3.5.9").unwrap_err());
        let bin = cache.path().join("v3.5.9/etcd");
        assert!(msg.starts_with(&format!("etcd v3.5.9: {}: no such file", bin.display())), "{msg}");
        // Where it looked, what is there (v3.4.0 cannot be run), and how to build it.
        assert!(msg.contains(&format!("{} holds v3.5.21, v3.6.14)", cache.path().display())));
        assert!(msg.contains(&format!(
            "go get go.etcd.io/etcd/server/v3@v3.5.9 && CGO_ENABLED=0 go build -o {} go.etcd.io/etcd/server/v3",
            bin.display()
        )));
        assert!(msg.contains(".ci/deps --tests") && !msg.contains('\n'), "{msg}");
        let msg = format!("{:#}", v("v3.4.0").unwrap_err());
        assert!(msg.contains("v3.4.0/etcd: not executable"), "{msg}");

        let none = EtcdSources { cache: None, ..sources.clone() };
        let msg = format!("{:#}", none.find(&"v3.6.14".parse().unwrap()).unwrap_err());
        assert!(msg.contains("neither ETCD_CACHE nor HOME is set"), "{msg}");
    }

    #[test]
    fn paths_and_the_system_etcd_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin/etcd");
        file(&bin, 0o755);
        let sources = sources(&bin.display().to_string(), dir.path());
        assert_eq!(sources.find(&Etcd::Path(bin.clone())).unwrap(), bin);
        assert_eq!(sources.find(&Etcd::System).unwrap(), bin);
        let msg = format!("{:#}", sources.find(&Etcd::Path(dir.path().join("etcd"))).unwrap_err());
        assert!(msg.ends_with("/etcd: no such file"), "{msg}");
        let msg = format!("{:#}", sources.find(&Etcd::Path(dir.path().join("bin"))).unwrap_err());
        assert!(msg.ends_with("/bin: not a file"), "{msg}");

        // `etcd` alone is looked up on PATH.
        let on_path = EtcdSources {
            system: PathBuf::from("etcd"),
            search_path: vec![PathBuf::from("/nonexistent"), dir.path().join("bin")],
            cache: None,
        };
        assert_eq!(on_path.find(&Etcd::System).unwrap(), PathBuf::from("etcd"));
        let nowhere = EtcdSources { search_path: vec![dir.path().to_owned()], ..on_path };
        let msg = format!("{:#}", nowhere.find(&Etcd::System).unwrap_err());
        assert!(
            msg.starts_with("no etcd binary found (etcd)") && msg.contains("ETCD_BIN"),
            "{msg}"
        );
    }

    #[test]
    fn the_flag_takes_several_etcds_each_once() {
        let etcds = from_flag("v3.6.16, v3.7.3,debian").unwrap();
        let v = |text: &str| Etcd::Version(text.parse().unwrap());
        assert_eq!(etcds, [v("v3.6.16"), v("v3.7.3"), Etcd::System]);
        assert_eq!(from_flag("./bin/etcd").unwrap(), [Etcd::Path(PathBuf::from("./bin/etcd"))]);
        assert_eq!(from_flag("/opt/etcd").unwrap(), [Etcd::Path(PathBuf::from("/opt/etcd"))]);
        let msg = |text: &str| format!("{:#}", from_flag(text).unwrap_err());
        assert!(msg("v3.6.16,v3.6.16").starts_with("--etcd: v3.6.16 is given twice"));
        assert!(msg("system,debian").starts_with("--etcd: system is given twice"));
        assert!(msg("v3.6.16,").starts_with("--etcd: empty"), "{}", msg("v3.6.16,"));
        assert!(msg("v3.6.16,3.7").starts_with("--etcd: etcd version \"3.7\""));
    }

    #[test]
    fn every_run_of_a_matrix_is_found_before_any_runs() {
        let cache = tempfile::tempdir().unwrap();
        file(&cache.path().join("v3.6.14/etcd"), 0o755);
        let system = cache.path().join("v3.6.14/etcd").display().to_string();
        let sources = sources(&system, cache.path());
        let matrix = |axis: &str| {
            scenarios(&format!(
                "name = \"m\"\n[load]\ntotal = 1\n[op.put]\n[matrix]\n\"cluster.etcd\" = {axis}\n"
            ))
        };
        let local = Cluster::FromScenario;
        let bins = binaries(&matrix("[\"debian\", \"v3.6.14\"]"), &local, false, &sources).unwrap();
        assert_eq!(bins, [Some(PathBuf::from(&system)), Some(cache.path().join("v3.6.14/etcd"))]);

        // The last run's version is missing: the plan fails, naming it.
        let runs = matrix("[\"debian\", \"v3.6.14\", \"v3.5.9\"]");
        let msg = format!("{:#}", binaries(&runs, &local, false, &sources).unwrap_err());
        assert!(msg.starts_with("m [etcd=v3.5.9]: cluster.etcd: etcd v3.5.9: "), "{msg}");
        let msg = format!("{:#}", binaries(&runs, &local, true, &sources).unwrap_err());
        assert!(msg.starts_with("--etcd: etcd v3.5.9: "), "{msg}");

        // Against endpoints, no etcd is looked for, and none may be asked for.
        let endpoints = Cluster::Endpoints(vec!["127.0.0.1:2379".into()]);
        let plain = scenarios("[load]\ntotal = 1\n[op.put]\n");
        assert_eq!(binaries(&plain, &endpoints, false, &sources).unwrap(), [None]);
        let msg = format!("{:#}", binaries(&runs, &endpoints, false, &sources).unwrap_err());
        assert!(
            msg.starts_with(
                "m [etcd=debian]: cluster.etcd system asks for a throwaway local cluster"
            ) && msg.contains("--endpoints"),
            "{msg}"
        );
    }
}
