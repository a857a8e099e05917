//! Distributions of durations: an HDR histogram with its summary, serialized as both.

use std::time::Duration;

use base64::Engine;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{
    Deserializer as HdrDeserializer, Serializer as _, V2DeflateSerializer,
};
use serde::{Deserialize, Serialize};

use crate::recorder::new_histogram;

/// A distribution of durations: an HDR histogram in microseconds, with its summary.
///
/// Serialized as the summary (`min`, `mean`, `stddev`, `max`, `p10` .. `p99_99`, all in us)
/// plus `hdr`, the histogram in HdrHistogram's V2 compressed format, base64, from which it is
/// read back exactly.
#[derive(Debug, Clone, PartialEq)]
pub struct Distribution {
    histogram: Histogram<u64>,
}

/// The quantiles every summary lists, with their JSON names.
pub const QUANTILES: [(f64, &str); 11] = [
    (0.10, "p10"),
    (0.25, "p25"),
    (0.50, "p50"),
    (0.75, "p75"),
    (0.90, "p90"),
    (0.95, "p95"),
    (0.99, "p99"),
    (0.999, "p99_9"),
    (0.9999, "p99_99"),
    (0.99999, "p99_999"),
    (1.0, "p100"),
];

impl Distribution {
    /// Wraps a histogram of microseconds.
    #[must_use]
    pub fn new(histogram: Histogram<u64>) -> Self {
        Self { histogram }
    }

    /// The histogram, in microseconds.
    #[must_use]
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.histogram
    }

    /// Number of values.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    /// The value at quantile `q` (0.0 ..= 1.0).
    #[must_use]
    pub fn quantile(&self, q: f64) -> Duration {
        Duration::from_micros(self.quantile_us(q))
    }

    /// The value at quantile `q`, microseconds (0 when empty).
    #[must_use]
    pub fn quantile_us(&self, q: f64) -> u64 {
        if self.histogram.is_empty() { 0 } else { self.histogram.value_at_quantile(q) }
    }

    /// Smallest value, us (0 when empty).
    #[must_use]
    pub fn min_us(&self) -> u64 {
        if self.histogram.is_empty() { 0 } else { self.histogram.min() }
    }

    /// Largest value, us (0 when empty).
    #[must_use]
    pub fn max_us(&self) -> u64 {
        if self.histogram.is_empty() { 0 } else { self.histogram.max() }
    }

    /// Mean, us.
    #[must_use]
    pub fn mean_us(&self) -> f64 {
        if self.histogram.is_empty() { 0.0 } else { self.histogram.mean() }
    }

    /// Standard deviation, us.
    #[must_use]
    pub fn stddev_us(&self) -> f64 {
        if self.histogram.is_empty() { 0.0 } else { self.histogram.stdev() }
    }

    /// The mean as a duration.
    #[must_use]
    pub fn mean(&self) -> Duration {
        Duration::from_secs_f64(self.mean_us() / 1e6)
    }

    /// The histogram in V2 compressed format, base64.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut buf = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&self.histogram, &mut buf)
            .expect("writing to a Vec cannot fail");
        base64::engine::general_purpose::STANDARD.encode(buf)
    }

    /// Reads a histogram written by [`Distribution::encode`].
    ///
    /// # Errors
    /// A message when the text is not such a histogram.
    pub fn decode(text: &str) -> Result<Self, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("hdr: {e}"))?;
        let h: Histogram<u64> = HdrDeserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("hdr: {e:?}"))?;
        let mut histogram = new_histogram();
        histogram.add(&h).map_err(|e| format!("hdr: {e:?}"))?;
        Ok(Self { histogram })
    }
}

/// What [`Distribution`] is read from: the histogram alone, since the summary is derived
/// from it.
#[derive(Deserialize)]
struct DistributionRepr {
    hdr: String,
}

impl Serialize for Distribution {
    /// Writes the summary in reading order (`count`, `min`, `mean`, `stddev`, `max`, then the
    /// quantiles from `p10` to `p100`), then `hdr`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(6 + QUANTILES.len()))?;
        map.serialize_entry("count", &self.count())?;
        map.serialize_entry("min", &self.min_us())?;
        map.serialize_entry("mean", &round3(self.mean_us()))?;
        map.serialize_entry("stddev", &round3(self.stddev_us()))?;
        map.serialize_entry("max", &self.max_us())?;
        for (q, name) in QUANTILES {
            map.serialize_entry(name, &self.quantile_us(q))?;
        }
        map.serialize_entry("hdr", &self.encode())?;
        map.end()
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let repr = DistributionRepr::deserialize(d)?;
        Self::decode(&repr.hdr).map_err(serde::de::Error::custom)
    }
}

/// `x` rounded to three decimals, as the JSON report writes its floating-point figures.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_round_trips_exactly() {
        let mut h = new_histogram();
        for v in 1..10_000u64 {
            h.record(v * 7).unwrap();
        }
        let d = Distribution::new(h);
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["count"], 9999);
        assert_eq!(json["min"], 7);
        assert!(json["p99_9"].as_u64().unwrap() > json["p50"].as_u64().unwrap());
        let back: Distribution = serde_json::from_value(json).unwrap();
        assert_eq!(back, d);
    }
}
