//! Student's t distribution: its CDF (from the regularized incomplete beta function) and its
//! quantiles (the CDF inverted by bisection), what the repeats' intervals and Welch's test
//! need, without a statistics crate.

/// `P(T <= t)` for Student's t with `df` degrees of freedom (`df > 0`, not necessarily
/// whole, as Welch's test gives).
#[must_use]
pub fn cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return if t > 0.0 { 1.0 } else { 0.0 };
    }
    // P(|T| > |t|) = I_x(df/2, 1/2) with x = df / (df + t²).
    let tail = incomplete_beta(df / 2.0, 0.5, df / (df + t * t)) / 2.0;
    if t > 0.0 { 1.0 - tail } else { tail }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (`0 < p < 1`).
#[must_use]
pub fn quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    let (mut lo, mut hi) = (-1.0, 1.0);
    while cdf(lo, df) > p {
        lo *= 2.0;
    }
    while cdf(hi, df) < p {
        hi *= 2.0;
    }
    // The CDF is monotone: bisection to the precision of f64.
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if mid == lo || mid == hi {
            break;
        }
        if cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// The regularized incomplete beta function `I_x(a, b)`, by its continued fraction
/// (modified Lentz), on the side of `x` where it converges fast.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(a, b, x) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function.
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { 1.0 / TINY } else { 1.0 / d };
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { 1.0 / TINY } else { 1.0 / d };
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine coefficients: about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the tables (and R's `qt`, `pt`).
    #[test]
    fn quantiles_and_cdf_match_the_tables() {
        for (p, df, t) in [
            (0.975, 1.0, 12.706_204_736),
            (0.975, 2.0, 4.302_652_730),
            (0.975, 4.0, 2.776_445_105),
            (0.975, 9.0, 2.262_157_163),
            (0.975, 30.0, 2.042_272_456),
            (0.95, 5.0, 2.015_048_373),
            (0.995, 3.0, 5.840_909_310),
            (0.975, 1e6, 1.959_966_393),
        ] {
            let q = quantile(p, df);
            assert!((q - t).abs() < 1e-6 * t, "qt({p}, {df}) = {q}, not {t}");
            assert!((cdf(t, df) - p).abs() < 1e-8, "pt({t}, {df}) = {}", cdf(t, df));
            assert!((cdf(-t, df) - (1.0 - p)).abs() < 1e-8);
        }
        // Fractional degrees of freedom, as Welch's test gives: the density integrated by
        // Simpson's rule.
        assert!((cdf(2.5, 3.7) - 0.964_088_988_5).abs() < 1e-9, "{}", cdf(2.5, 3.7));
        assert_eq!(cdf(0.0, 7.0), 0.5);
        assert!(quantile(0.0, 3.0).is_nan() && cdf(1.0, 0.0).is_nan());
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }
}
