//! Sizes drawn from a distribution ([`SizeDistribution`]): a fixed size, or weighted ranges
//! each drawn from uniformly, read from TOML wherever a size is (`8KiB`, `1024`, or
//! `[{ min = "4KB", max = "15KB", weight = 90 }, ...]`), and drawn without state or
//! allocation from a 64-bit draw, so that the same draw always gives the same size.

use std::fmt;

use serde::de::{self, Deserializer, IntoDeserializer};
use serde::ser::Serializer;
use serde::{Deserialize, Serialize};

use super::{InvalidParam, check_val_size, invalid};
use crate::unit;

/// Points at which [`SizeDistribution::expected`] evaluates each range (fewer when the range
/// holds fewer sizes): enough that a step function of the size (whole pages) is averaged
/// to within a fraction of a percent.
const EXPECTATION_POINTS: u64 = 1024;

/// A size in bytes, fixed or drawn from weighted ranges. A plain size (`1024`, `"8KiB"`) is
/// fixed; an array of ranges (`[{ min = "4KB", max = "15KB", weight = 90 }, { min = "15KB",
/// max = "70KB", weight = 9 }, ...]`) draws a range by its weight (default 1) and a size
/// uniformly within it, `min` and `max` included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SizeDistribution {
    /// Always this many bytes.
    Fixed(u64),
    /// A range by weight, then a size uniformly within it.
    Ranges(Vec<SizeRange>),
}

/// One range of a [`SizeDistribution`]: sizes from `min` to `max` bytes, both included, drawn
/// `weight` times in the ranges' sum of weights.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeRange {
    /// The smallest size, bytes.
    #[serde(deserialize_with = "unit::size::deserialize")]
    pub min: u64,
    /// The largest size, bytes.
    #[serde(deserialize_with = "unit::size::deserialize")]
    pub max: u64,
    /// Its share of the draws, relative to the other ranges'. Default 1.
    #[serde(default = "one")]
    pub weight: u32,
}

impl Default for SizeDistribution {
    fn default() -> Self {
        Self::Fixed(0)
    }
}

impl From<u64> for SizeDistribution {
    fn from(bytes: u64) -> Self {
        Self::Fixed(bytes)
    }
}

impl SizeDistribution {
    /// The smallest size it draws, bytes.
    #[must_use]
    pub fn min(&self) -> u64 {
        match self {
            Self::Fixed(n) => *n,
            Self::Ranges(r) => r.iter().map(|r| r.min).min().unwrap_or(0),
        }
    }

    /// The largest size it draws, bytes: what a buffer that every draw is a slice of holds.
    #[must_use]
    pub fn max(&self) -> u64 {
        match self {
            Self::Fixed(n) => *n,
            Self::Ranges(r) => r.iter().map(|r| r.max).max().unwrap_or(0),
        }
    }

    /// The mean size, bytes.
    #[must_use]
    pub fn mean(&self) -> f64 {
        match self {
            Self::Fixed(n) => *n as f64,
            Self::Ranges(ranges) => {
                let total: f64 = ranges.iter().map(|r| f64::from(r.weight)).sum();
                let sum: f64 = ranges
                    .iter()
                    .map(|r| f64::from(r.weight) * (r.min as f64 + r.max as f64) / 2.0)
                    .sum();
                if total == 0.0 { 0.0 } else { sum / total }
            }
        }
    }

    /// The mean of `f` of the size: exact for a fixed size, else `f` averaged over up to
    /// 1,024 evenly spaced sizes of each range, weighted.
    #[must_use]
    pub fn expected(&self, f: impl Fn(u64) -> f64) -> f64 {
        match self {
            Self::Fixed(n) => f(*n),
            Self::Ranges(ranges) => {
                let total: f64 = ranges.iter().map(|r| f64::from(r.weight)).sum();
                if total == 0.0 {
                    return 0.0;
                }
                ranges
                    .iter()
                    .map(|r| {
                        let width = r.max.saturating_sub(r.min);
                        let points = width.saturating_add(1).min(EXPECTATION_POINTS);
                        // Midpoints of `points` equal slices of [min, max + 1).
                        let slice = (width as f64 + 1.0) / points as f64;
                        let sum: f64 =
                            (0..points).map(|i| f(r.min + ((i as f64 + 0.5) * slice) as u64)).sum();
                        sum / points as f64 * f64::from(r.weight) / total
                    })
                    .sum()
            }
        }
    }

    /// The size at `draw`, a uniformly distributed 64-bit number ([`draw`]): the range that
    /// the draw's high part falls in by weight, and the size within it from its remixed
    /// bits; the same draw always gives the same size.
    #[must_use]
    pub fn at(&self, draw: u64) -> u64 {
        let ranges = match self {
            Self::Fixed(n) => return *n,
            Self::Ranges(ranges) => ranges,
        };
        let total: u64 = ranges.iter().map(|r| u64::from(r.weight)).sum();
        let mut pick = scale(draw, total);
        let range = ranges
            .iter()
            .find(|r| {
                let hit = pick < u64::from(r.weight);
                pick = pick.saturating_sub(u64::from(r.weight));
                hit
            })
            .or(ranges.last());
        let Some(r) = range else { return 0 };
        let width = r.max.saturating_sub(r.min);
        r.min + scale(mix(draw), width.saturating_add(1))
    }

    /// Whether it always draws one size.
    #[must_use]
    pub fn is_fixed(&self) -> bool {
        self.min() == self.max()
    }

    /// Checks the ranges (at least one, `min` at most `max`, weights more than 0) and the
    /// largest size against what a value may be ([`super::MAX_VALUE_SIZE`]); errors name
    /// `{at}.{field}`, a range's key with its index.
    pub(crate) fn validate_at(&self, at: &str, field: &str) -> Result<(), InvalidParam> {
        let named = |e: InvalidParam, field: String| InvalidParam { field, message: e.message };
        match self {
            Self::Fixed(n) => check_val_size(at, *n).map_err(|e| named(e, format!("{at}.{field}"))),
            Self::Ranges(ranges) if ranges.is_empty() => {
                Err(invalid(at, field, "must hold at least one range"))
            }
            Self::Ranges(ranges) => {
                for (i, r) in ranges.iter().enumerate() {
                    let at = format!("{at}.{field}.{i}");
                    if r.min > r.max {
                        return Err(invalid(
                            &at,
                            "min",
                            format!("{} bytes is more than max ({} bytes)", r.min, r.max),
                        ));
                    }
                    if r.weight == 0 {
                        return Err(invalid(&at, "weight", "must be more than 0"));
                    }
                    check_val_size(&at, r.max).map_err(|e| named(e, format!("{at}.max")))?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for SizeDistribution {
    /// `8192 B`, or `mean 13200 B (4000..100000 B)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(n) => write!(f, "{n} B"),
            Self::Ranges(_) => {
                write!(f, "mean {:.0} B ({}..{} B)", self.mean(), self.min(), self.max())
            }
        }
    }
}

/// The `n`-th draw of the sequence `seed` names: a uniformly distributed 64-bit number that
/// depends on nothing else (splitmix64 of the two), for [`SizeDistribution::at`].
#[must_use]
pub fn draw(seed: u64, n: u64) -> u64 {
    mix(seed ^ mix(n.wrapping_add(0x9e37_79b9_7f4a_7c15)))
}

/// A stable 64-bit name of `text` (FNV-1a), for seeding [`draw`] with what names a family of
/// objects, the same from run to run and build to build.
#[must_use]
pub fn name_seed(text: &str) -> u64 {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// splitmix64's finaliser: every bit of the input moves about half of the output's.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `draw` scaled to `0..n` (`n` 0 gives 0), by its high bits.
fn scale(draw: u64, n: u64) -> u64 {
    ((u128::from(draw) * u128::from(n)) >> 64) as u64
}

fn one() -> u32 {
    1
}

impl Serialize for SizeDistribution {
    /// A fixed size as a plain integer (as a size was before), ranges as an array of tables.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Fixed(n) => s.serialize_u64(*n),
            Self::Ranges(ranges) => ranges.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for SizeDistribution {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DistributionVisitor)
    }
}

struct DistributionVisitor;

impl<'de> de::Visitor<'de> for DistributionVisitor {
    type Value = SizeDistribution;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "a size in bytes (an integer or a string like \"8KiB\") or an array of ranges like \
             [{ min = \"4KB\", max = \"15KB\", weight = 9 }]",
        )
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        unit::size::deserialize(v.into_deserializer()).map(SizeDistribution::Fixed)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        unit::size::deserialize(v.into_deserializer()).map(SizeDistribution::Fixed)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        unit::size::deserialize(v.into_deserializer()).map(SizeDistribution::Fixed)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Vec::<SizeRange>::deserialize(de::value::SeqAccessDeserializer::new(seq))
            .map(SizeDistribution::Ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::MAX_VALUE_SIZE;

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Holder {
        size: SizeDistribution,
    }

    fn read(value: &str) -> Result<SizeDistribution, String> {
        toml::from_str::<Holder>(&format!("size = {value}")).map(|h| h.size).map_err(|e| {
            let e = e.to_string();
            e.lines().last().unwrap_or_default().to_owned()
        })
    }

    fn pods() -> SizeDistribution {
        read(
            r#"[{ min = "4KB", max = "15KB", weight = 90 }, { min = "15KB", max = "70KB", weight = 9 },
                { min = "70KB", max = "100KB", weight = 1 }]"#,
        )
        .unwrap()
    }

    /// A plain size is fixed, as a size always was; an array of ranges is a distribution
    /// (weight 1 when not given); both written back as they were read.
    #[test]
    fn a_plain_size_stays_fixed_and_ranges_are_read() {
        assert_eq!(read("1024").unwrap(), SizeDistribution::Fixed(1024));
        assert_eq!(read("\"8KiB\"").unwrap(), SizeDistribution::Fixed(8192));
        let one = read(r#"[{ min = "1KiB", max = 2048 }]"#).unwrap();
        assert_eq!(
            one,
            SizeDistribution::Ranges(vec![SizeRange { min: 1024, max: 2048, weight: 1 }])
        );
        for size in [SizeDistribution::Fixed(1024), one, pods()] {
            let text = toml::to_string(&Holder { size: size.clone() }).unwrap();
            assert_eq!(toml::from_str::<Holder>(&text).unwrap().size, size, "{text}");
        }
        assert_eq!(toml::to_string(&Holder { size: 1024.into() }).unwrap(), "size = 1024\n");
    }

    /// What cannot be read says what was expected, in one line; what cannot be drawn from is
    /// named by its range and key.
    #[test]
    fn bad_input_is_named() {
        assert!(read("-1").unwrap_err().contains("must not be negative"), "{:?}", read("-1"));
        assert!(read("\"8 parsecs\"").unwrap_err().contains("unknown unit"));
        let err = read(r#"[{ min = 1, max = 2, wieght = 3 }]"#).unwrap_err();
        assert!(err.contains("unknown field `wieght`"), "{err}");
        let err = read(r#"[{ min = 1, max = 2, weight = -3 }]"#).unwrap_err();
        assert!(err.contains("-3"), "{err}");
        let err = read("true").unwrap_err();
        assert!(err.contains("an array of ranges"), "{err}");
        let bad = |d: SizeDistribution| d.validate_at("kubernetes", "pod-size").unwrap_err();
        let e = bad(read(r#"[{ min = 1, max = 2 }, { min = 9, max = 3 }]"#).unwrap());
        assert_eq!(e.field, "kubernetes.pod-size.1.min");
        assert_eq!(e.message, "9 bytes is more than max (3 bytes)");
        let e = bad(read(r#"[{ min = 1, max = 2, weight = 0 }]"#).unwrap());
        assert_eq!(
            (e.field.as_str(), e.message.as_str()),
            ("kubernetes.pod-size.0.weight", "must be more than 0")
        );
        assert_eq!(bad(read("[]").unwrap()).field, "kubernetes.pod-size");
        let huge = format!("[{{ min = 1, max = {} }}]", MAX_VALUE_SIZE + 1);
        assert_eq!(bad(read(&huge).unwrap()).field, "kubernetes.pod-size.0.max");
        assert_eq!(bad(SizeDistribution::Fixed(MAX_VALUE_SIZE + 1)).field, "kubernetes.pod-size");
        pods().validate_at("kubernetes", "pod-size").unwrap();
    }

    /// Draws from a seeded sequence fall in the ranges as often as their weights say, spread
    /// within each, with the distribution's mean; the same draw gives the same size.
    #[test]
    fn draws_follow_the_weights_and_the_mean() {
        let d = pods();
        assert_eq!((d.min(), d.max()), (4000, 100_000));
        // 0.9 * 9,500 + 0.09 * 42,500 + 0.01 * 85,000.
        assert!((d.mean() - 13_225.0).abs() < 1.0, "{}", d.mean());
        let n = 200_000u64;
        let sizes: Vec<u64> = (0..n).map(|i| d.at(draw(42, i))).collect();
        assert!(sizes.iter().all(|s| (4000..=100_000).contains(s)));
        let share = |lo: u64, hi: u64| {
            sizes.iter().filter(|s| (lo..hi).contains(*s)).count() as f64 / n as f64
        };
        assert!((share(4000, 15_000) - 0.90).abs() < 0.005, "{}", share(4000, 15_000));
        assert!((share(15_000, 70_000) - 0.09).abs() < 0.003, "{}", share(15_000, 70_000));
        assert!((share(70_000, 100_001) - 0.01).abs() < 0.001, "{}", share(70_000, 100_001));
        // Uniform within a range: its halves alike.
        assert!((share(4000, 9500) - share(9500, 15_000)).abs() < 0.005);
        let mean = sizes.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / d.mean() - 1.0).abs() < 0.01, "{mean} vs {}", d.mean());
        assert!(sizes.iter().any(|&s| s == 4000 || s == 4001) && sizes.iter().any(|&s| s > 99_000));
        assert_eq!(d.at(draw(42, 7)), sizes[7], "the same draw, the same size");
        assert_ne!(draw(42, 7), draw(43, 7));
        let fixed = SizeDistribution::Fixed(512);
        assert_eq!((fixed.at(draw(1, 2)), fixed.mean(), fixed.is_fixed()), (512, 512.0, true));
        assert!(!d.is_fixed());
    }

    /// The expectation of a step function (whole pages) is its weighted average, not the
    /// function of the mean.
    #[test]
    fn expectations_weigh_each_range() {
        let d =
            read(r#"[{ min = 1, max = 4096, weight = 3 }, { min = 4097, max = 8192 }]"#).unwrap();
        let pages = |size: u64| size.div_ceil(4096) as f64;
        assert!((d.expected(pages) - 1.25).abs() < 1e-9, "{}", d.expected(pages));
        assert!((d.mean() - (0.75 * 2048.5 + 0.25 * 6144.5)).abs() < 1.0, "{}", d.mean());
        assert_eq!(name_seed("/registry/pods/"), name_seed("/registry/pods/"));
        assert_ne!(name_seed("/registry/pods/"), name_seed("/registry/minions/"));
    }
}
