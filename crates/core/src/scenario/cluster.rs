//! Where the load goes: the cluster (`[cluster]`: endpoints, or a throwaway local cluster's
//! members and etcd; TLS files, user) and which of its members (`target`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Etcd, ScenarioError};
use crate::unit;

/// The etcd cluster a scenario runs against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Cluster {
    /// gRPC endpoints, `host:port` or `http://host:port`. Empty: start a throwaway local
    /// cluster from the `etcd` binary.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    /// Members of the throwaway local cluster (only when no endpoints are given). Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<u32>,
    /// The etcd the throwaway local cluster runs (only when no endpoints are given):
    /// `"system"` (or `"debian"`), a version like `"v3.5.21"` from the cache of etcd
    /// versions, or a path to an etcd binary ([`Etcd`]). Absent: the system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd: Option<Etcd>,
    /// The throwaway local cluster's backend quota, etcd's `--quota-backend-bytes`: an
    /// integer or a size ("16MiB"). Default etcd's (2 GiB). Once a member's database
    /// reaches it, etcd raises the NOSPACE alarm and refuses writes.
    #[serde(
        default,
        deserialize_with = "unit::opt_size::deserialize",
        skip_serializing_if = "Option::is_none"
    )]
    pub quota_backend_bytes: Option<u64>,
    /// How long to wait for each connection to be established. Default 5 s.
    #[serde(default, with = "unit::opt_duration", skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,
    /// TLS: PEM file with the authorities that sign the members' certificates (as
    /// `--cacert`). Relative paths are read from the scenario file's directory. Any TLS
    /// flag on the command line replaces all four TLS settings here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacert: Option<PathBuf>,
    /// TLS: PEM file with the client's certificate, for members that ask for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<PathBuf>,
    /// TLS: PEM file with the client's private key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<PathBuf>,
    /// TLS: accept any server certificate (encrypted, not authenticated).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls_verify: bool,
    /// The etcd user to authenticate as. Its password never goes in a scenario: it comes
    /// from `ETCDLAT_PASSWORD` or the terminal. `--user` replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl Cluster {
    /// Makes the relative TLS file paths and etcd binary path relative to `dir` (the
    /// scenario file's directory).
    pub fn resolve_paths(&mut self, dir: &Path) {
        let etcd = match &mut self.etcd {
            Some(Etcd::Path(path)) => Some(path),
            _ => None,
        };
        let tls = [&mut self.cacert, &mut self.cert, &mut self.key];
        for path in tls.into_iter().flatten().chain(etcd) {
            if path.is_relative() {
                *path = dir.join(&*path);
            }
        }
    }

    /// Checks the `[cluster]` section.
    pub(super) fn validate(&self) -> Result<(), ScenarioError> {
        if let Some(m) = self.members {
            if !self.endpoints.is_empty() {
                return Err(ScenarioError::invalid(
                    "cluster.members",
                    "applies only to a throwaway local cluster; remove it or remove cluster.endpoints",
                ));
            }
            if !(1..=9).contains(&m) {
                return Err(ScenarioError::invalid(
                    "cluster.members",
                    format!("must be 1 to 9, got {m}"),
                ));
            }
        }
        if self.etcd.is_some() && !self.endpoints.is_empty() {
            return Err(ScenarioError::invalid(
                "cluster.etcd",
                "applies only to a throwaway local cluster (a cluster etcdlat did not start has the version it has); remove it or remove cluster.endpoints",
            ));
        }
        if let Some(q) = self.quota_backend_bytes {
            if !self.endpoints.is_empty() {
                return Err(ScenarioError::invalid(
                    "cluster.quota-backend-bytes",
                    "applies only to a throwaway local cluster; remove it or remove cluster.endpoints",
                ));
            }
            if q == 0 {
                return Err(ScenarioError::invalid(
                    "cluster.quota-backend-bytes",
                    "must be more than 0 (leave it out for etcd's default)",
                ));
            }
        }
        for ep in &self.endpoints {
            check_endpoint(ep).map_err(|m| ScenarioError::invalid("cluster.endpoints", m))?;
        }
        if self.dial_timeout.is_some_and(|d| d.is_zero()) {
            return Err(ScenarioError::invalid("cluster.dial-timeout", "must be more than 0"));
        }
        if self.cert.is_some() != self.key.is_some() {
            return Err(ScenarioError::invalid("cluster.cert", "give cert and key, or neither"));
        }
        if let Some(user) = &self.user
            && (user.is_empty() || user.contains(':'))
        {
            return Err(ScenarioError::invalid(
                "cluster.user",
                "the user name only: the password comes from ETCDLAT_PASSWORD or the \
                     terminal, never from a scenario file",
            ));
        }
        Ok(())
    }
}

/// Which members get the load. Written as a string: `endpoints` (default: the endpoints as
/// given, connections spread over them), `leader`, `followers`, `follower:N` (the N-th
/// follower, 1-based, by member name order), `member:NAME`, or `all` (every member).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Targeting {
    /// The endpoints as given.
    #[default]
    Endpoints,
    /// The leader only (etcd benchmark's `--target-leader`).
    Leader,
    /// Every follower, connections spread over them.
    Followers,
    /// One follower, 1-based in member name order.
    Follower(u32),
    /// One member, by name.
    Member(String),
    /// Every member, connections spread over them.
    All,
}

impl std::str::FromStr for Targeting {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "endpoints" | "" => Self::Endpoints,
            "leader" => Self::Leader,
            "followers" => Self::Followers,
            "all" => Self::All,
            other => {
                if let Some(n) =
                    other.strip_prefix("follower:").or_else(|| other.strip_prefix("follower-"))
                {
                    match n.parse::<u32>() {
                        Ok(n) if n >= 1 => Self::Follower(n),
                        _ => {
                            return Err(format!(
                                "target {other:?}: the follower number counts from 1"
                            ));
                        }
                    }
                } else if let Some(name) = other.strip_prefix("member:") {
                    if name.is_empty() {
                        return Err("target \"member:\" needs a member name".to_owned());
                    }
                    Self::Member(name.to_owned())
                } else {
                    return Err(format!(
                        "unknown target {other:?} (endpoints, leader, followers, follower:N, member:NAME or all)"
                    ));
                }
            }
        })
    }
}

impl std::fmt::Display for Targeting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Endpoints => f.write_str("endpoints"),
            Self::Leader => f.write_str("leader"),
            Self::Followers => f.write_str("followers"),
            Self::Follower(n) => write!(f, "follower:{n}"),
            Self::Member(name) => write!(f, "member:{name}"),
            Self::All => f.write_str("all"),
        }
    }
}

impl TryFrom<String> for Targeting {
    type Error = String;

    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<Targeting> for String {
    fn from(t: Targeting) -> String {
        t.to_string()
    }
}

/// Checks that an endpoint is `host:port`, `http://host:port` or `https://host:port`.
///
/// # Errors
/// A message naming the endpoint and what is missing.
pub fn check_endpoint(ep: &str) -> Result<(), String> {
    let rest = ep.strip_prefix("http://").or_else(|| ep.strip_prefix("https://")).unwrap_or(ep);
    let rest = rest.trim_end_matches('/');
    if rest.contains("://") {
        return Err(format!("endpoint {ep:?}: only http:// and https:// are supported"));
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => (h, p),
        _ => {
            return Err(format!(
                "endpoint {ep:?} has no port (expected host:port, like 127.0.0.1:2379)"
            ));
        }
    };
    if host.contains('/') || host.contains(' ') {
        return Err(format!("endpoint {ep:?}: invalid host {host:?}"));
    }
    match port.parse::<u16>() {
        Ok(p) if p > 0 => Ok(()),
        _ => Err(format!("endpoint {ep:?}: invalid port {port:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    #[test]
    fn cluster_tls_and_user_are_checked_and_paths_resolved() {
        let base = "[load]\ntotal = 1\n[op.put]\n[cluster]\n";
        let err = Scenario::from_toml_str(&format!("{base}cert = \"c.pem\"\n")).unwrap_err();
        assert_eq!(err.field(), Some("cluster.cert"));
        let err = Scenario::from_toml_str(&format!("{base}user = \"root:pw\"\n")).unwrap_err();
        assert_eq!(err.field(), Some("cluster.user"));
        assert!(!err.to_string().contains("pw\""), "the password is not echoed: {err}");
        let mut s = Scenario::from_toml_str(&format!(
            "{base}cacert = \"ca.pem\"\ncert = \"/abs/c.pem\"\nkey = \"k.pem\"\nuser = \"root\"\n"
        ))
        .unwrap();
        s.cluster.resolve_paths(Path::new("/scenarios"));
        assert_eq!(s.cluster.cacert.as_deref(), Some(Path::new("/scenarios/ca.pem")));
        assert_eq!(s.cluster.cert.as_deref(), Some(Path::new("/abs/c.pem")));
        assert_eq!(s.cluster.key.as_deref(), Some(Path::new("/scenarios/k.pem")));
        assert_eq!(s.cluster.user.as_deref(), Some("root"));
    }

    #[test]
    fn targets_parse() {
        for (text, t) in [
            ("leader", Targeting::Leader),
            ("followers", Targeting::Followers),
            ("follower:2", Targeting::Follower(2)),
            ("follower-1", Targeting::Follower(1)),
            ("member:m1", Targeting::Member("m1".into())),
            ("all", Targeting::All),
            ("endpoints", Targeting::Endpoints),
        ] {
            assert_eq!(text.parse::<Targeting>().unwrap(), t);
        }
        assert!("follower:0".parse::<Targeting>().is_err());
        assert!("moon".parse::<Targeting>().is_err());
    }

    #[test]
    fn endpoints() {
        assert!(check_endpoint("127.0.0.1:2379").is_ok());
        assert!(check_endpoint("http://localhost:2379").is_ok());
        assert!(check_endpoint("https://[::1]:2379").is_ok());
        assert!(check_endpoint("localhost").unwrap_err().contains("no port"));
        assert!(check_endpoint("localhost:http").unwrap_err().contains("invalid port"));
        assert!(check_endpoint("unix://x:1").is_err());
    }
}
