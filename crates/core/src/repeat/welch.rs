//! Welch's t-test: whether two sets of repeats differ in their mean, without assuming they
//! vary alike.

use serde::{Deserialize, Serialize};

use super::estimate::{mean, variance};
use super::student;

/// Welch's unequal-variance t-test of two samples' means, two-sided:
/// `t = (mean_b - mean_a) / √(s_a²/n_a + s_b²/n_b)`, its degrees of freedom by
/// Welch-Satterthwaite, and `p = 2 · P(T > |t|)`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Welch {
    /// The t statistic (positive when the second sample's mean is larger); infinite when
    /// neither sample varies and the means differ.
    pub t: f64,
    /// Degrees of freedom (Welch-Satterthwaite; not necessarily whole).
    pub df: f64,
    /// The two-sided p-value.
    pub p: f64,
}

impl Welch {
    /// The test of `a` against `b`; `None` when either has fewer than two values.
    #[must_use]
    pub fn test(a: &[f64], b: &[f64]) -> Option<Self> {
        if a.len() < 2 || b.len() < 2 {
            return None;
        }
        let (na, nb) = (a.len() as f64, b.len() as f64);
        let (va, vb) = (variance(a) / na, variance(b) / nb);
        let diff = mean(b) - mean(a);
        let se2 = va + vb;
        if se2 == 0.0 {
            // Neither varies: the same figure is no change, another one is.
            let df = na + nb - 2.0;
            return Some(if diff == 0.0 {
                Self { t: 0.0, df, p: 1.0 }
            } else {
                Self { t: diff.signum() * f64::INFINITY, df, p: 0.0 }
            });
        }
        let t = diff / se2.sqrt();
        let df = se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0));
        let p = (2.0 * (1.0 - student::cdf(t.abs(), df))).clamp(0.0, 1.0);
        Some(Self { t, df, p })
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use rand_distr::{Distribution, Normal};

    use super::*;

    /// Against a worked example, its p-value from the t density integrated by Simpson's rule.
    #[test]
    fn statistic_degrees_of_freedom_and_p() {
        let a = [27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0];
        let b = [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9];
        let w = Welch::test(&a, &b).unwrap();
        let (va, vb) = (variance(&a) / 13.0, variance(&b) / 13.0);
        let t = (mean(&b) - mean(&a)) / (va + vb).sqrt();
        assert!((w.t - t).abs() < 1e-12 && (w.t - 2.377_002).abs() < 1e-6, "{w:?}");
        assert!((w.df - 20.486_955).abs() < 1e-6, "{w:?}");
        assert!((w.p - 0.027_293_43).abs() < 1e-8, "{w:?}");
        // Symmetric, and the same sample is no change.
        let back = Welch::test(&b, &a).unwrap();
        assert!((back.t + w.t).abs() < 1e-12 && (back.p - w.p).abs() < 1e-12);
        assert_eq!(Welch::test(&a, &a).unwrap().p, 1.0);
        // Constant samples: equal is no change, different is one.
        assert_eq!(Welch::test(&[5.0, 5.0], &[5.0, 5.0, 5.0]).unwrap().p, 1.0);
        assert_eq!(Welch::test(&[5.0, 5.0], &[6.0, 6.0]).unwrap().p, 0.0);
        assert!(Welch::test(&[1.0], &[1.0, 2.0]).is_none());
    }

    /// A against A: 1,000 pairs of 5 repeats each, drawn from one distribution, are marked
    /// different at level 0.05 about 50 times; the count stays within 3 standard deviations
    /// of the binomial(1000, 0.05) (50 ± 20.7), so the test neither overstates nor hides
    /// changes. Then a real change (two standard deviations, 5 repeats each) is found most of
    /// the time, so the test is not blind either.
    #[test]
    fn a_against_a_is_marked_different_no_more_often_than_the_level() {
        const PAIRS: u32 = 1_000;
        const LEVEL: f64 = 0.05;
        let mut rng = StdRng::seed_from_u64(39);
        // Like a throughput's repeats: 10,000 ops/s, 4% run-to-run noise.
        let noise = Normal::new(10_000.0, 400.0).unwrap();
        let mut draw =
            |shift: f64| -> Vec<f64> { (0..5).map(|_| noise.sample(&mut rng) + shift).collect() };
        let mut marked = 0;
        for _ in 0..PAIRS {
            let (a, b) = (draw(0.0), draw(0.0));
            if Welch::test(&a, &b).unwrap().p < LEVEL {
                marked += 1;
            }
        }
        let expected = f64::from(PAIRS) * LEVEL;
        let margin = 3.0 * (expected * (1.0 - LEVEL)).sqrt();
        assert!(
            f64::from(marked) <= expected + margin && f64::from(marked) >= expected - margin,
            "{marked} of {PAIRS} A/A pairs marked at level {LEVEL}: expected {expected} ± {margin:.1}"
        );
        let mut found = 0;
        for _ in 0..PAIRS {
            let (a, b) = (draw(0.0), draw(800.0));
            if Welch::test(&a, &b).unwrap().p < LEVEL {
                found += 1;
            }
        }
        // Welch's power for a 2 sd shift with 5 and 5 is about 0.75.
        assert!(found > PAIRS / 2, "a change of 2 sd found in {found} of {PAIRS}");
    }
}
