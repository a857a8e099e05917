//! Human-friendly quantities: in scenarios, durations as strings ("30s", "250ms") and sizes
//! as integers or strings ("256", "1MiB", "1MB"); in reports, counts with thousands
//! separators ("1,234,567"), which the report's figures (`report::study`) and every
//! renderer write alike.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer, de};

/// Parses a duration such as `"30s"`, `"250ms"`, `"1m 30s"` or `"0"`.
///
/// # Errors
/// A message naming what is wrong with the text.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(text).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// Formats a duration the way [`parse_duration`] reads it back.
#[must_use]
pub fn format_duration(d: Duration) -> String {
    if d.is_zero() { "0s".to_owned() } else { humantime::format_duration(d).to_string() }
}

/// Parses a size in bytes: a plain integer, or a number with a unit
/// (`B`, `KB`/`MB`/`GB` powers of 1000, `KiB`/`MiB`/`GiB` powers of 1024).
///
/// # Errors
/// A message naming what is wrong with the text.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '_').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: u64 = num.replace('_', "").parse().map_err(|_| {
        format!("invalid size {text:?}: expected a number of bytes like 256 or \"1MiB\"")
    })?;
    let mult: u64 = match unit.trim() {
        "" | "B" | "b" => 1,
        "KB" | "kB" | "K" | "k" => 1_000,
        "MB" | "M" => 1_000_000,
        "GB" | "G" => 1_000_000_000,
        "KiB" | "Ki" => 1 << 10,
        "MiB" | "Mi" => 1 << 20,
        "GiB" | "Gi" => 1 << 30,
        other => {
            return Err(format!(
                "invalid size {text:?}: unknown unit {other:?} (use B, KB, MB, GB, KiB, MiB or GiB)"
            ));
        }
    };
    num.checked_mul(mult).ok_or_else(|| format!("invalid size {text:?}: too large"))
}

/// Parses a line rate into bytes per second: a number (decimals allowed) with a unit of bytes
/// (`B`, `KB`, `MB`, `GB`, `KiB`, `MiB`, `GiB`) or of bits (`bit`, `Kbit`, `Mbit`, `Gbit`),
/// per second (`/s`, optional): `"100MB/s"`, `"1Gbit/s"`, `"12.5MiB/s"`, `"125000000"`.
///
/// # Errors
/// A message naming what is wrong with the text.
pub fn parse_bandwidth(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t.strip_suffix("/s").or_else(|| t.strip_suffix("ps")).unwrap_or(t).trim_end();
    let split = t.find(|c: char| !c.is_ascii_digit() && c != '.' && c != '_').unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || {
        format!(
            "invalid bandwidth {text:?}: expected a rate like \"100MB/s\", \"1Gbit/s\" or a number of bytes per second"
        )
    };
    let num: f64 = num.replace('_', "").parse().map_err(|_| bad())?;
    let bytes_per_unit: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "bit" | "b" => 1.0 / 8.0,
        "Kbit" | "kbit" | "Kb" | "kb" => 1e3 / 8.0,
        "Mbit" | "mbit" | "Mb" => 1e6 / 8.0,
        "Gbit" | "gbit" | "Gb" => 1e9 / 8.0,
        other => {
            return Err(format!(
                "invalid bandwidth {text:?}: unknown unit {other:?} (bytes: B, KB, MB, GB, KiB, MiB, GiB; bits: bit, Kbit, Mbit, Gbit; per second)"
            ));
        }
    };
    let rate = num * bytes_per_unit;
    if !rate.is_finite() || rate < 1.0 || rate > u64::MAX as f64 {
        return Err(format!("invalid bandwidth {text:?}: must be at least 1 byte per second"));
    }
    Ok(rate.round() as u64)
}

/// Formats a line rate the way [`parse_bandwidth`] reads it back (`"100MB/s"`).
#[must_use]
pub fn format_bandwidth(bytes_per_s: u64) -> String {
    for (unit, size) in [("GB", 1_000_000_000), ("MB", 1_000_000), ("KB", 1_000)] {
        if bytes_per_s >= size && bytes_per_s.is_multiple_of(size / 1000) {
            let whole = bytes_per_s / size;
            let frac = bytes_per_s % size / (size / 1000);
            return if frac == 0 {
                format!("{whole}{unit}/s")
            } else {
                format!("{whole}.{}{unit}/s", format!("{frac:03}").trim_end_matches('0'))
            };
        }
    }
    format!("{bytes_per_s}B/s")
}

/// `1234567` as `1,234,567`.
pub fn thousands(n: u64) -> String {
    group_digits(&n.to_string())
}

/// Inserts a comma every three digits from the right of a string of digits.
pub fn group_digits(digits: &str) -> String {
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// serde adapter for an optional line rate written as a string (`"100MB/s"`) or a number of
/// bytes per second.
pub(crate) mod opt_bandwidth {
    use super::{Deserializer, Serializer, de, format_bandwidth, parse_bandwidth};
    use std::fmt;

    struct RateVisitor;

    impl de::Visitor<'_> for RateVisitor {
        type Value = Option<u64>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(
                "a line rate: bytes per second, or a string like \"100MB/s\" or \"1Gbit/s\"",
            )
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
            if v == 0 {
                return Err(E::custom("bandwidth must be more than 0 bytes/s"));
            }
            Ok(Some(v))
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
            let v = u64::try_from(v)
                .map_err(|_| E::custom(format!("bandwidth must not be negative, got {v}")))?;
            self.visit_u64(v)
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
            parse_bandwidth(v).map(Some).map_err(E::custom)
        }
    }

    /// Serializes as a human-readable string, or nothing.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(rate: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match rate {
            Some(r) => s.serialize_str(&format_bandwidth(*r)),
            None => s.serialize_none(),
        }
    }

    /// Deserializes from a number or a string.
    ///
    /// # Errors
    /// When the value is not a line rate.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        d.deserialize_any(RateVisitor)
    }
}

/// serde adapter for a [`Duration`] written as a string ("30s").
pub(crate) mod duration {
    use super::{
        Deserialize, Deserializer, Duration, Serializer, de, format_duration, parse_duration,
    };

    /// Serializes as a human-readable string.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*d))
    }

    /// Deserializes from a string such as "30s".
    ///
    /// # Errors
    /// When the text is not a duration.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map_err(de::Error::custom)
    }
}

/// serde adapter for an optional [`Duration`] written as a string.
pub(crate) mod opt_duration {
    use super::{
        Deserialize, Deserializer, Duration, Serializer, de, format_duration, parse_duration,
    };

    /// Serializes as a human-readable string, or nothing.
    ///
    /// # Errors
    /// Those of the serializer.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format_duration(*d)),
            None => s.serialize_none(),
        }
    }

    /// Deserializes from a string such as "30s".
    ///
    /// # Errors
    /// When the text is not a duration.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        parse_duration(&text).map(Some).map_err(de::Error::custom)
    }
}

/// serde adapter for a size in bytes written as an integer or a string ("1MiB").
pub(crate) mod size {
    use super::{Deserializer, de, parse_size};
    use std::fmt;

    struct SizeVisitor;

    impl de::Visitor<'_> for SizeVisitor {
        type Value = u64;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a size in bytes: a non-negative integer or a string like \"1MiB\"")
        }

        fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
            Ok(v)
        }

        fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
            u64::try_from(v).map_err(|_| E::custom(format!("size must not be negative, got {v}")))
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
            parse_size(v).map_err(E::custom)
        }
    }

    /// Deserializes from an integer or a string.
    ///
    /// # Errors
    /// When the value is not a size.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        d.deserialize_any(SizeVisitor)
    }
}

/// An optional size (`Option<u64>`), read as [`size`]; written as a plain integer.
pub(crate) mod opt_size {
    use super::Deserializer;

    /// Deserializes from an integer or a string.
    ///
    /// # Errors
    /// When the value is not a size.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        super::size::deserialize(d).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("256").unwrap(), 256);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1_000_000);
        assert_eq!(parse_size("1_000").unwrap(), 1000);
        assert!(parse_size("12 parsecs").unwrap_err().contains("unknown unit"));
        assert!(parse_size("MiB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(
            parse_duration(&format_duration(Duration::from_secs(90))).unwrap(),
            Duration::from_secs(90)
        );
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn bandwidths() {
        assert_eq!(parse_bandwidth("100MB/s").unwrap(), 100_000_000);
        assert_eq!(parse_bandwidth("1Gbit/s").unwrap(), 125_000_000);
        assert_eq!(parse_bandwidth("12.5MiB/s").unwrap(), 13_107_200);
        assert_eq!(parse_bandwidth("125000000").unwrap(), 125_000_000);
        assert!(parse_bandwidth("-1MB/s").is_err());
        assert!(parse_bandwidth("0MB/s").is_err());
        assert!(parse_bandwidth("fast").is_err());
        assert!(parse_bandwidth("10 parsecs/s").unwrap_err().contains("unknown unit"));
        for r in [100_000_000, 125_000_000, 1_500_000, 999] {
            assert_eq!(parse_bandwidth(&format_bandwidth(r)).unwrap(), r);
        }
    }
}
