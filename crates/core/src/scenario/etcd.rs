//! Which etcd a throwaway local cluster runs (`[cluster] etcd`): the system's, a released
//! version, or a binary by path.
//!
//! The scenario only holds the request. Finding the file is the binary's job: it knows the
//! environment (`ETCD_BIN`, `PATH`, the cache dir that `.ci/deps` builds versions into) and
//! checks every run's etcd before the first one starts; a library caller hands the file to
//! the driver's `LocalCluster::options().etcd_bin(..)` itself.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The etcd binary a throwaway local cluster runs, as a scenario or `--etcd` asks for it.
/// Written as a string: `"system"` (or `"debian"`), a version like `"v3.5.21"`, or a path
/// to an etcd binary, which has a `/` in it (`"./etcd"`, `"/opt/etcd/bin/etcd"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Etcd {
    /// The system's etcd: `ETCD_BIN` when set, else `etcd` on `PATH` (on Debian, the
    /// `etcd-server` package: etcd 3.4). What a local cluster runs when nothing is said.
    System,
    /// A released version, built from etcd's Go module into the cache of etcd versions.
    Version(EtcdVersion),
    /// An etcd binary by path; a relative one is read from the scenario file's directory
    /// (the working directory for `--etcd`).
    Path(PathBuf),
}

/// An etcd release, `vMAJOR.MINOR.PATCH` (`v3.5.21`): the name etcd's tags and Go module
/// versions use, and the name of its directory in the cache of etcd versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EtcdVersion {
    /// Major version (3).
    pub major: u32,
    /// Minor version (5).
    pub minor: u32,
    /// Patch version (21).
    pub patch: u32,
}

/// What `--etcd` and `cluster.etcd` take, for messages.
const EXPECTED: &str = "expected \"system\" (or \"debian\": the etcd on PATH, or ETCD_BIN), a version like \"v3.5.21\", or a path to an etcd binary (with a /, like \"./etcd\")";

impl std::str::FromStr for EtcdVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("etcd version {s:?}: expected vMAJOR.MINOR.PATCH, like \"v3.5.21\"");
        let Some(numbers) = s.strip_prefix('v') else {
            return Err(bad());
        };
        let mut parts = numbers.split('.').map(|n| {
            // `u32::from_str` takes a leading `+`: only digits are a version's.
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            n.parse::<u32>().map_err(|_| bad())
        });
        let (Some(major), Some(minor), Some(patch), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        Ok(Self { major: major?, minor: minor?, patch: patch? })
    }
}

impl std::fmt::Display for EtcdVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

impl std::str::FromStr for Etcd {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "system" | "debian" => Ok(Self::System),
            "" => Err(format!("empty: {EXPECTED}")),
            path if path.contains('/') => Ok(Self::Path(PathBuf::from(path))),
            version if version.starts_with('v') => version.parse().map(Self::Version),
            version if version.starts_with(|c: char| c.is_ascii_digit()) => Err(format!(
                "etcd version {version:?}: a version starts with v, like \"v{version}\""
            )),
            other => Err(format!("{other:?}: {EXPECTED}")),
        }
    }
}

impl std::fmt::Display for Etcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::System => f.write_str("system"),
            Self::Version(v) => v.fmt(f),
            Self::Path(p) => p.display().fmt(f),
        }
    }
}

impl TryFrom<String> for Etcd {
    type Error = String;

    /// Reads `cluster.etcd`, whose errors name the key.
    fn try_from(s: String) -> Result<Self, String> {
        s.parse().map_err(|e| format!("cluster.etcd: {e}"))
    }
}

impl From<Etcd> for String {
    fn from(e: Etcd) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn version(major: u32, minor: u32, patch: u32) -> Etcd {
        Etcd::Version(EtcdVersion { major, minor, patch })
    }

    #[test]
    fn etcd_is_the_system_a_version_or_a_path() {
        for (text, etcd) in [
            ("system", Etcd::System),
            ("debian", Etcd::System),
            ("v3.5.21", version(3, 5, 21)),
            ("v3.6.14", version(3, 6, 14)),
            ("v10.0.0", version(10, 0, 0)),
            ("./etcd", Etcd::Path("./etcd".into())),
            ("/opt/etcd/v3.5/etcd", Etcd::Path("/opt/etcd/v3.5/etcd".into())),
            ("bin/etcd", Etcd::Path("bin/etcd".into())),
        ] {
            assert_eq!(text.parse::<Etcd>().as_ref(), Ok(&etcd), "{text}");
        }
        // Written back as read, except "debian", which is another name for the system's.
        for text in ["system", "v3.5.21", "./etcd"] {
            assert_eq!(text.parse::<Etcd>().unwrap().to_string(), text);
        }
        assert_eq!("debian".parse::<Etcd>().unwrap().to_string(), "system");
    }

    #[test]
    fn versions_are_v_major_minor_patch() {
        for bad in ["v3.5", "v3.5.21.1", "v3..21", "v3.5.x", "v3.5.+1", "v", "v3.5.21-rc.1"] {
            let err = bad.parse::<Etcd>().unwrap_err();
            assert_eq!(
                err,
                format!("etcd version {bad:?}: expected vMAJOR.MINOR.PATCH, like \"v3.5.21\""),
            );
        }
        let err = "3.5.21".parse::<Etcd>().unwrap_err();
        assert_eq!(err, "etcd version \"3.5.21\": a version starts with v, like \"v3.5.21\"");
        for other in ["latest", "etcd", ""] {
            let err = other.parse::<Etcd>().unwrap_err();
            assert!(err.contains("expected \"system\""), "{other}: {err}");
            assert!(err.contains("\"v3.5.21\"") && err.contains("path"), "{other}: {err}");
        }
    }

    #[test]
    fn cluster_etcd_is_read_checked_and_named_in_errors() {
        let base = "[load]\ntotal = 1\n[op.put]\n[cluster]\n";
        let s = Scenario::from_toml_str(&format!("{base}etcd = \"v3.6.14\"\n")).unwrap();
        assert_eq!(s.cluster.etcd, Some(version(3, 6, 14)));
        let s = Scenario::from_toml_str(base).unwrap();
        assert_eq!(s.cluster.etcd, None, "nothing said: the system's, and not written back");
        assert!(!toml::to_string(&s).unwrap().contains("etcd"));

        let err = Scenario::from_toml_str(&format!("{base}etcd = \"v3.6\"\n")).unwrap_err();
        let msg = err.to_string();
        assert_eq!(
            msg,
            "line 5, column 8: cluster.etcd: etcd version \"v3.6\": expected vMAJOR.MINOR.PATCH, like \"v3.5.21\""
        );
        let err = Scenario::from_toml_str(&format!("{base}etcd = 3.6\n")).unwrap_err();
        assert!(err.to_string().starts_with("line 5, column 8: "), "{err}");

        // A cluster etcdlat does not start has the version it has.
        let err = Scenario::from_toml_str(&format!(
            "{base}etcd = \"v3.6.14\"\nendpoints = [\"127.0.0.1:2379\"]\n"
        ))
        .unwrap_err();
        assert_eq!(err.field(), Some("cluster.etcd"));
        assert!(err.to_string().contains("throwaway local cluster"), "{err}");
    }

    #[test]
    fn a_relative_path_is_read_from_the_scenario_files_directory() {
        let base = "[load]\ntotal = 1\n[op.put]\n[cluster]\n";
        let mut s = Scenario::from_toml_str(&format!("{base}etcd = \"bin/etcd\"\n")).unwrap();
        s.cluster.resolve_paths(std::path::Path::new("/scenarios"));
        assert_eq!(s.cluster.etcd, Some(Etcd::Path("/scenarios/bin/etcd".into())));
        let mut s = Scenario::from_toml_str(&format!("{base}etcd = \"v3.5.21\"\n")).unwrap();
        s.cluster.resolve_paths(std::path::Path::new("/scenarios"));
        assert_eq!(s.cluster.etcd, Some(version(3, 5, 21)));
    }

    #[test]
    fn versions_are_a_matrix_axis() {
        let text = "name = \"v\"\n[load]\ntotal = 10\n[op.put]\n\
                    [matrix]\n\"cluster.etcd\" = [\"debian\", \"v3.5.21\", \"v3.6.14\"]\n";
        let runs = Scenario::from_toml_str(text).unwrap().expand().unwrap();
        let names: Vec<&str> = runs.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["v [etcd=debian]", "v [etcd=v3.5.21]", "v [etcd=v3.6.14]"]);
        let etcds: Vec<Option<Etcd>> = runs.iter().map(|r| r.cluster.etcd.clone()).collect();
        assert_eq!(etcds, [Some(Etcd::System), Some(version(3, 5, 21)), Some(version(3, 6, 14))]);

        let bad =
            "[load]\ntotal = 10\n[op.put]\n[matrix]\n\"cluster.etcd\" = [\"v3.6.14\", \"3.5\"]\n";
        let err = Scenario::from_toml_str(bad).unwrap_err();
        assert_eq!(err.field(), Some("matrix.cluster.etcd"));
        assert!(
            err.to_string().contains("[etcd=3.5]: cluster.etcd: etcd version \"3.5\""),
            "{err}"
        );
        let against = "[load]\ntotal = 10\n[op.put]\n[cluster]\nendpoints = [\"h:1\"]\n\
                       [matrix]\n\"cluster.etcd\" = [\"v3.6.14\"]\n";
        let err = Scenario::from_toml_str(against).unwrap_err();
        assert!(err.to_string().contains("cluster.etcd: applies only"), "{err}");
    }
}
