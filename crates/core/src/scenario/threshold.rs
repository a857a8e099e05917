//! Thresholds as a scenario writes them (`thresholds = [...]`): pass/fail conditions on a
//! report's figures, in a small expression language. They are checked against a report in
//! [`crate::threshold`].
//!
//! ```
//! use etcdlat_core::Threshold;
//!
//! let t: Threshold = r#"put.p99 < "20ms""#.parse()?;
//! assert_eq!(t.to_string(), "put.p99 < 20ms");
//! assert!("error_rate < 0.001".parse::<Threshold>().is_ok());
//! assert!("p99 < 20".parse::<Threshold>().is_err()); // a latency needs a unit
//! # Ok::<(), etcdlat_core::ThresholdError>(())
//! ```
//!
//! An expression is `[OP.]METRIC COMPARISON LIMIT`:
//!
//! - `OP` scopes it to one operation kind by its report name (`put`, `range`, `txn-put`, ...).
//!   Unscoped, it applies to the run's combined figures: the `all` row when the run has one
//!   (a mix of several kinds), otherwise to each kind the run measured except background
//!   compaction (normally the run's one kind). So `throughput > 5000` on a mix means the
//!   mix's total, and `p99 < "20ms"` the p99 of every request together.
//! - `METRIC` is a latency (`p50`, `p90`, `p99`, `p99_9`, `p99_99`, `max`, `mean`,
//!   `stddev`), or
//!   `error_rate` (failed requests / requests), `errors` (failed requests), `throughput`
//!   (successful requests per second) or `ok` (successful requests). `p99.9` and `p99.99`
//!   are read as `p99_9` and `p99_99`.
//! - `COMPARISON` is one of `<`, `<=`, `>`, `>=`, `==`, `!=`.
//! - `LIMIT` is a duration for latencies (`"20ms"`, quotes optional: `20ms`), and a number
//!   for the others.

use std::fmt;

use crate::op::OpKind;
use crate::unit::parse_duration;

/// A figure a threshold reads from a report row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Metric {
    /// Latency median.
    P50,
    /// Latency 90th percentile.
    P90,
    /// Latency 99th percentile.
    P99,
    /// Latency 99.9th percentile.
    P99_9,
    /// Latency 99.99th percentile.
    P99_99,
    /// Largest latency.
    Max,
    /// Mean latency.
    Mean,
    /// Standard deviation of latency (etcdctl check perf's rule holds it to 100 ms).
    Stddev,
    /// Failed requests divided by requests (ok plus failed).
    ErrorRate,
    /// Failed requests.
    Errors,
    /// Successful requests per second of measured wall time.
    Throughput,
    /// Successful requests.
    Ok,
}

impl Metric {
    /// Every metric, as written in expressions.
    pub const ALL: [Metric; 12] = [
        Self::P50,
        Self::P90,
        Self::P99,
        Self::P99_9,
        Self::P99_99,
        Self::Max,
        Self::Mean,
        Self::Stddev,
        Self::ErrorRate,
        Self::Errors,
        Self::Throughput,
        Self::Ok,
    ];

    /// The name used in expressions (`p99_9`, `error_rate`).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P90 => "p90",
            Self::P99 => "p99",
            Self::P99_9 => "p99_9",
            Self::P99_99 => "p99_99",
            Self::Max => "max",
            Self::Mean => "mean",
            Self::Stddev => "stddev",
            Self::ErrorRate => "error_rate",
            Self::Errors => "errors",
            Self::Throughput => "throughput",
            Self::Ok => "ok",
        }
    }

    /// A latency, compared in microseconds and limited by a duration.
    #[must_use]
    pub fn is_latency(self) -> bool {
        matches!(
            self,
            Self::P50
                | Self::P90
                | Self::P99
                | Self::P99_9
                | Self::P99_99
                | Self::Max
                | Self::Mean
                | Self::Stddev
        )
    }

    /// A value of this metric as a person reads it: latencies with a unit (`31.2ms`),
    /// counts as integers.
    #[must_use]
    pub fn format(self, value: f64) -> String {
        match self {
            _ if self.is_latency() => format_us(value),
            Self::Errors | Self::Ok => format!("{value:.0}"),
            Self::Throughput => trim(format!("{value:.1}")),
            _ => trim(format!("{value:.6}")),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How a figure is compared with its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Comparator {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Comparator {
    /// The operator as written.
    #[must_use]
    pub fn symbol(self) -> &'static str {
        match self {
            Self::Lt => "<",
            Self::Le => "<=",
            Self::Gt => ">",
            Self::Ge => ">=",
            Self::Eq => "==",
            Self::Ne => "!=",
        }
    }

    /// Whether `value` satisfies the comparison with `limit`.
    #[must_use]
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Self::Lt => value < limit,
            Self::Le => value <= limit,
            Self::Gt => value > limit,
            Self::Ge => value >= limit,
            Self::Eq => value == limit,
            Self::Ne => value != limit,
        }
    }
}

/// One parsed threshold expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The operation kind it is scoped to; `None` applies it to the run's combined figures.
    pub op: Option<OpKind>,
    /// The figure compared.
    pub metric: Metric,
    /// How it is compared.
    pub comparison: Comparator,
    /// The limit, in the metric's unit (microseconds for latencies).
    pub limit: f64,
    /// The limit as written, without quotes (`20ms`).
    limit_text: String,
}

/// Why a threshold expression cannot be read. Every variant names the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ThresholdError {
    /// Not of the form `METRIC COMPARISON LIMIT`.
    #[error(
        "threshold {expression:?}: expected METRIC COMPARISON LIMIT, like p99 < \"20ms\" or errors == 0"
    )]
    Syntax {
        /// The expression as given.
        expression: String,
    },
    /// A comparison operator that is not one of `<`, `<=`, `>`, `>=`, `==`, `!=`.
    #[error("threshold {expression:?}: unknown comparison {operator:?} (<, <=, >, >=, ==, !=)")]
    Comparison {
        /// The expression as given.
        expression: String,
        /// The operator found.
        operator: String,
    },
    /// A metric name that is not one of [`Metric::ALL`].
    #[error(
        "threshold {expression:?}: unknown metric {metric:?} (p50, p90, p99, p99_9, p99_99, max, mean, stddev, error_rate, errors, throughput, ok)"
    )]
    Metric {
        /// The expression as given.
        expression: String,
        /// The metric found.
        metric: String,
    },
    /// A scope that is not an operation kind's name.
    #[error("threshold {expression:?}: unknown operation {op:?} (put, range, txn-put, ...)")]
    Op {
        /// The expression as given.
        expression: String,
        /// The scope found.
        op: String,
    },
    /// A latency limit that is not a duration.
    #[error(
        "threshold {expression:?}: {metric} is a latency; its limit is a duration like \"20ms\", not {limit:?}"
    )]
    Duration {
        /// The expression as given.
        expression: String,
        /// The metric.
        metric: &'static str,
        /// The limit found.
        limit: String,
    },
    /// A limit of a count or a rate that is not a number.
    #[error("threshold {expression:?}: the limit of {metric} is a number, not {limit:?}")]
    Number {
        /// The expression as given.
        expression: String,
        /// The metric.
        metric: &'static str,
        /// The limit found.
        limit: String,
    },
}

impl std::str::FromStr for Threshold {
    type Err = ThresholdError;

    fn from_str(expression: &str) -> Result<Self, ThresholdError> {
        let owned = || expression.to_owned();
        let at = expression
            .find(['<', '>', '=', '!'])
            .ok_or_else(|| ThresholdError::Syntax { expression: owned() })?;
        let (lhs, rest) = expression.split_at(at);
        let op_len = rest.bytes().take_while(|b| b"<>=!".contains(b)).count();
        let (operator, rhs) = rest.split_at(op_len);
        let comparison = match operator {
            "<" => Comparator::Lt,
            "<=" => Comparator::Le,
            ">" => Comparator::Gt,
            ">=" => Comparator::Ge,
            "==" => Comparator::Eq,
            "!=" => Comparator::Ne,
            other => {
                return Err(ThresholdError::Comparison {
                    expression: owned(),
                    operator: other.to_owned(),
                });
            }
        };
        let (lhs, rhs) = (lhs.trim(), rhs.trim());
        if lhs.is_empty() || rhs.is_empty() {
            return Err(ThresholdError::Syntax { expression: owned() });
        }
        // `p99.9` reads as `p99_9`, not as metric `9` of an operation `p99`.
        let lhs = lhs.replace("p99.99", "p99_99").replace("p99.9", "p99_9");
        let (scope, metric_name) = match lhs.rsplit_once('.') {
            Some((scope, metric)) => (Some(scope.trim()), metric.trim()),
            None => (None, lhs.as_str()),
        };
        let op = scope
            .map(|s| {
                OpKind::ALL
                    .into_iter()
                    .find(|k| k.name() == s)
                    .ok_or_else(|| ThresholdError::Op { expression: owned(), op: s.to_owned() })
            })
            .transpose()?;
        let metric =
            Metric::ALL.into_iter().find(|m| m.name() == metric_name).ok_or_else(|| {
                ThresholdError::Metric { expression: owned(), metric: metric_name.to_owned() }
            })?;
        let quoted = rhs.len() >= 2
            && (rhs.starts_with('"') && rhs.ends_with('"')
                || rhs.starts_with('\'') && rhs.ends_with('\''));
        let limit_text = if quoted { rhs[1..rhs.len() - 1].trim() } else { rhs };
        let limit = if metric.is_latency() {
            let bad = || ThresholdError::Duration {
                expression: owned(),
                metric: metric.name(),
                limit: rhs.to_owned(),
            };
            // A bare number has no unit: refuse it rather than guess microseconds.
            if limit_text.parse::<f64>().is_ok() {
                return Err(bad());
            }
            parse_duration(limit_text).map_err(|_| bad())?.as_secs_f64() * 1e6
        } else {
            match limit_text.parse::<f64>() {
                Ok(x) if !quoted && x.is_finite() => x,
                _ => {
                    return Err(ThresholdError::Number {
                        expression: owned(),
                        metric: metric.name(),
                        limit: rhs.to_owned(),
                    });
                }
            }
        };
        Ok(Self { op, metric, comparison, limit, limit_text: limit_text.to_owned() })
    }
}

impl fmt::Display for Threshold {
    /// The expression in its canonical form, without quotes: `put.p99 < 20ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(op) = self.op {
            write!(f, "{op}.")?;
        }
        write!(f, "{} {} {}", self.metric, self.comparison.symbol(), self.limit_text)
    }
}

impl Threshold {
    /// Reads every expression of a list (a scenario's `thresholds`).
    ///
    /// # Errors
    /// The first expression that cannot be read.
    pub fn parse_all<S: AsRef<str>>(expressions: &[S]) -> Result<Vec<Threshold>, ThresholdError> {
        expressions.iter().map(|e| e.as_ref().parse()).collect()
    }

    /// The limit as written, without quotes (`20ms`).
    pub(crate) fn limit_text(&self) -> &str {
        &self.limit_text
    }
}

/// Microseconds as a short duration: `850us`, `31.2ms`, `1.5s`.
fn format_us(us: f64) -> String {
    if us < 1e3 {
        trim(format!("{us:.1}")) + "us"
    } else if us < 1e6 {
        trim(format!("{:.1}", us / 1e3)) + "ms"
    } else {
        trim(format!("{:.1}", us / 1e6)) + "s"
    }
}

/// `20.0` as `20`, `0.001000` as `0.001`.
fn trim(text: String) -> String {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_forms_of_the_language() {
        let t: Threshold = r#"put.p99 < "20ms""#.parse().unwrap();
        assert_eq!(t.op, Some(OpKind::Put));
        assert_eq!(t.metric, Metric::P99);
        assert_eq!(t.comparison, Comparator::Lt);
        assert!((t.limit - 20_000.0).abs() < 1e-9);
        assert_eq!(t.to_string(), "put.p99 < 20ms");
        let t: Threshold = "txn-put.p99_9<=5ms".parse().unwrap();
        assert_eq!(
            (t.op, t.metric, t.comparison),
            (Some(OpKind::TxnPut), Metric::P99_9, Comparator::Le)
        );
        let t: Threshold = " error_rate < 0.001 ".parse().unwrap();
        assert_eq!((t.op, t.metric), (None, Metric::ErrorRate));
        assert!((t.limit - 0.001).abs() < 1e-12);
        for (text, cmp) in [
            ("ok > 1", Comparator::Gt),
            ("ok >= 1", Comparator::Ge),
            ("errors == 0", Comparator::Eq),
            ("errors != 3", Comparator::Ne),
        ] {
            assert_eq!(text.parse::<Threshold>().unwrap().comparison, cmp, "{text}");
        }
        assert!((("mean < '1.5s'".parse::<Threshold>().unwrap().limit) - 1.5e6).abs() < 1e-6);
        let t: Threshold = "put.stddev <= 100ms".parse().unwrap();
        assert_eq!((t.metric, t.limit), (Metric::Stddev, 100_000.0));
        assert!("stddev < 1".parse::<Threshold>().is_err(), "a latency needs a unit");
    }

    #[test]
    fn bad_expressions_are_named() {
        let err = |text: &str| text.parse::<Threshold>().unwrap_err().to_string();
        assert!(err("p99 20ms").starts_with("threshold \"p99 20ms\": expected METRIC"));
        assert!(err("p99 < ").contains("expected METRIC"));
        assert_eq!("put.p99.9 < 1s".parse::<Threshold>().unwrap().metric, Metric::P99_9);
        assert!(err("p99 = 5ms").contains("unknown comparison \"=\""));
        assert!(err("p98 < 5ms").contains("unknown metric \"p98\""));
        assert!(err("putt.p99 < 5ms").contains("unknown operation \"putt\""));
        assert!(err("p99 < 20").contains("p99 is a latency"));
        assert!(err("p99 < \"soon\"").contains("p99 is a latency"));
        assert!(err("errors == lots").contains("the limit of errors is a number"));
        assert!(err("errors == \"0\"").contains("is a number"));
    }

    #[test]
    fn values_read_like_durations() {
        assert_eq!(format_us(31_234.0), "31.2ms");
        assert_eq!(format_us(20_000.0), "20ms");
        assert_eq!(format_us(850.0), "850us");
        assert_eq!(format_us(1_500_000.0), "1.5s");
        assert_eq!(Metric::ErrorRate.format(0.0025), "0.0025");
        assert_eq!(Metric::Errors.format(5.0), "5");
        assert_eq!(Metric::Throughput.format(4321.26), "4321.3");
    }
}
