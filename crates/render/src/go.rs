//! Go's formatting of numbers and durations, so that the text report reads exactly like the
//! output of etcd's benchmark tool (a Go program) and existing readers can compare.

use std::fmt::Write;
use std::time::Duration;

/// Writes `x` as Go's `%g` (and `%v`) verb does: `strconv.FormatFloat(x, 'g', -1, 64)`.
///
/// The digits are the shortest that read back to the same `f64`. They are laid out in
/// exponent form (`1.5e-05`, `1e+06`: at least two exponent digits, always signed) when the
/// decimal exponent is below -4 or at least 6 — Go fixes the threshold at 6 when the
/// precision is the shortest — and in plain form otherwise (`0.0001`, `123456.7`).
/// Infinities are `+Inf` and `-Inf`, not-a-number is `NaN`.
pub(crate) fn write_g(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    // Rust's `{:e}` without a precision gives the same shortest round-trip digits as Go's
    // `-1` precision; only the layout differs.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).collect();
    if x.is_sign_negative() {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        out.push(char::from(digits[0]));
        if digits.len() > 1 {
            out.push('.');
            digits[1..].iter().for_each(|&d| out.push(char::from(d)));
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
        return;
    }
    // Plain form: `dp` digits before the point (zeros past the digits), the rest after it.
    let dp = exp + 1;
    let digit_at = |i: i32| {
        usize::try_from(i).ok().and_then(|i| digits.get(i)).map_or('0', |&d| char::from(d))
    };
    if dp > 0 {
        (0..dp).for_each(|i| out.push(digit_at(i)));
    } else {
        out.push('0');
    }
    let decimals = (digits.len() as i32 - dp).max(0);
    if decimals > 0 {
        out.push('.');
        (dp..dp + decimals).for_each(|i| out.push(digit_at(i)));
    }
}

/// `x` as Go's `%g`; see [`write_g`].
#[cfg(test)]
fn g(x: f64) -> String {
    let mut s = String::new();
    write_g(&mut s, x);
    s
}

/// Writes `d` as Go's `time.Duration.String` does: `0s`, `750ns`, `512µs`, `1.234ms`,
/// `2.5s`, `1m30s`, `1h2m3.5s`. Fractions keep up to nine significant places of the unit
/// and drop trailing zeros.
pub(crate) fn write_duration(out: &mut String, d: Duration) {
    let nanos = d.as_nanos();
    if nanos == 0 {
        out.push_str("0s");
        return;
    }
    if nanos < 1_000 {
        let _ = write!(out, "{nanos}ns");
        return;
    }
    if nanos < 1_000_000_000 {
        let (divisor, unit) = if nanos < 1_000_000 { (1_000, "µs") } else { (1_000_000, "ms") };
        out.push_str(&(nanos / divisor).to_string());
        push_fraction(out, nanos % divisor, divisor);
        out.push_str(unit);
        return;
    }
    let secs = nanos / 1_000_000_000;
    let (hours, minutes, seconds) = (secs / 3600, secs / 60 % 60, secs % 60);
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if secs >= 60 {
        let _ = write!(out, "{minutes}m");
    }
    let _ = write!(out, "{seconds}");
    push_fraction(out, nanos % 1_000_000_000, 1_000_000_000);
    out.push('s');
}

/// Writes `.fraction` for `numerator / divisor` (a power of ten), trailing zeros dropped,
/// nothing when it is zero.
fn push_fraction(out: &mut String, numerator: u128, divisor: u128) {
    if numerator == 0 {
        return;
    }
    let width = divisor.ilog10() as usize;
    let digits = format!("{numerator:0width$}");
    out.push('.');
    out.push_str(digits.trim_end_matches('0'));
}

/// `d` as Go's `Duration.String`; see [`write_duration`].
#[cfg(test)]
fn duration(d: Duration) -> String {
    let mut s = String::new();
    write_duration(&mut s, d);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_matches_go() {
        // Expected values from Go: fmt.Sprintf("%g", x).
        let cases = [
            (0.0, "0"),
            (-0.0, "-0"),
            (1.0, "1"),
            (0.1, "0.1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (0.000_012_345, "1.2345e-05"),
            (0.0012345, "0.0012345"),
            (123_456.7, "123456.7"),
            (999_999.0, "999999"),
            (1_000_000.0, "1e+06"),
            (1_234_567.0, "1.234567e+06"),
            (1e21, "1e+21"),
            (1.5e-300, "1.5e-300"),
            (2.0 / 3.0, "0.6666666666666666"),
            (-42.5, "-42.5"),
            (100.0, "100"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
        ];
        for (x, want) in cases {
            assert_eq!(g(x), want, "{x:e}");
        }
    }

    #[test]
    fn duration_matches_go() {
        // Expected values from Go: time.Duration(n).String().
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (999, "999ns"),
            (1_000, "1µs"),
            (1_500, "1.5µs"),
            (512_000, "512µs"),
            (1_234_000, "1.234ms"),
            (1_000_000, "1ms"),
            (999_999_999, "999.999999ms"),
            (1_000_000_000, "1s"),
            (2_500_000_000, "2.5s"),
            (60_000_000_000, "1m0s"),
            (90_000_000_000, "1m30s"),
            (3_723_500_000_000, "1h2m3.5s"),
            (3_600_000_000_000, "1h0m0s"),
            (1_000_000_001, "1.000000001s"),
        ];
        for (nanos, want) in cases {
            assert_eq!(duration(Duration::from_nanos(nanos)), want);
        }
    }
}
