//! Human-friendly quantities in scenarios: durations as strings ("30s", "250ms") and
//! sizes as integers or strings ("256", "1MiB", "1MB").

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

/// serde adapter for a [`Duration`] written as a string ("30s").
pub mod duration {
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
pub mod opt_duration {
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
pub mod size {
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
}
