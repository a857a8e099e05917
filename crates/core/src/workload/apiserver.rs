//! The kube-apiserver release a model follows (`[kubernetes] apiserver = "1.37"`), and the
//! read path that release takes to etcd: where lists are served from, where their continue
//! pages are, whether its watch caches' consistency checker lists etcd, and whether those
//! lists stream. Each answer follows k8s.io/apiserver's own code of that release (the table
//! in docs/scenarios.md names the files).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A kube-apiserver release, `major.minor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ApiserverVersion {
    /// Always 1 so far.
    pub major: u32,
    /// The minor release (`37` of 1.37).
    pub minor: u32,
}

/// How often each apiserver's consistency checker lists a cached resource from etcd
/// (`cacher/consistency/checker.go`: `CheckPeriod` of 5 minutes, jittered by up to half of
/// it): on average 6.25 minutes.
pub const CHECK_PERIOD_MEAN: Duration = Duration::from_millis(375_000);

/// The consistency checker's page (`checkerListPageSize`).
pub const CHECK_PAGE: u64 = 10_000;

impl ApiserverVersion {
    /// The current Kubernetes release: the default, and the one the apiserver shape test
    /// drives (k8s.io/apiserver v0.37.2).
    pub const CURRENT: Self = Self { major: 1, minor: 37 };

    const fn at_least(self, minor: u32) -> bool {
        self.major > 1 || self.minor >= minor
    }

    /// Whether a list with no resourceVersion is served from the watch cache after a
    /// consistent-read probe (1.31 on, `ConsistentListFromCache`); before, it goes to etcd.
    #[must_use]
    pub const fn lists_from_cache(self) -> bool {
        self.at_least(31)
    }

    /// Whether the continue pages of a list come from the cache's snapshots (1.34 on,
    /// `ListFromCacheSnapshot`); before, from etcd.
    #[must_use]
    pub const fn continues_from_cache(self) -> bool {
        self.at_least(34)
    }

    /// Whether each apiserver's consistency checker lists every cached resource from etcd
    /// (1.34 on), and counts of cached resources come from the cache.
    #[must_use]
    pub const fn checks_consistency(self) -> bool {
        self.at_least(34)
    }

    /// Whether lists from etcd go through RangeStream where etcd has it (1.37 on, etcd 3.7
    /// on; `EtcdRangeStream`), falling back to Range on an older etcd.
    #[must_use]
    pub const fn streams_lists(self) -> bool {
        self.at_least(37)
    }
}

impl Default for ApiserverVersion {
    fn default() -> Self {
        Self::CURRENT
    }
}

impl fmt::Display for ApiserverVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl std::str::FromStr for ApiserverVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("`{s}` is not a Kubernetes release such as \"1.37\"");
        let (major, minor) = s.trim_start_matches('v').split_once('.').ok_or_else(bad)?;
        let (major, minor) = (major.parse().map_err(|_| bad())?, minor.parse().map_err(|_| bad())?);
        if major != 1 || minor < 20 {
            return Err(format!("{s}: releases 1.20 and later are modelled"));
        }
        Ok(Self { major, minor })
    }
}

impl Serialize for ApiserverVersion {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ApiserverVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_choose_their_read_path() {
        let v = |s: &str| s.parse::<ApiserverVersion>().unwrap();
        let path = |s: &str| {
            let r = v(s);
            (
                r.lists_from_cache(),
                r.continues_from_cache(),
                r.checks_consistency(),
                r.streams_lists(),
            )
        };
        assert_eq!(path("1.30"), (false, false, false, false));
        assert_eq!(path("1.31"), (true, false, false, false));
        assert_eq!(path("1.33"), (true, false, false, false));
        assert_eq!(path("1.34"), (true, true, true, false));
        assert_eq!(path("1.37"), (true, true, true, true));
        assert_eq!(ApiserverVersion::default(), v("1.37"));
        assert_eq!(v("v1.30").to_string(), "1.30");
        for bad in ["1", "1.x", "2.0", "1.19", ""] {
            assert!(bad.parse::<ApiserverVersion>().is_err(), "{bad}");
        }
    }
}
