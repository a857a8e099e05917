//! One figure over a cell's repeats: its values, mean, median and the confidence interval
//! of the mean (Student's t).

use serde::{Deserialize, Serialize};

use super::student;

/// One figure over the repeats of a cell: each repeat's value, their mean and median, and
/// the [`CONFIDENCE`](super::CONFIDENCE) interval of the mean, from Student's t with n - 1
/// degrees of freedom: `mean ± t(0.975, n - 1) · sd / √n`, `sd` the sample standard
/// deviation. The unit is the figure's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Estimate {
    /// Each repeat's value, in the order the repeats ran (the repeats that knew the figure).
    pub values: Vec<f64>,
    /// The values' mean.
    pub mean: f64,
    /// The values' median (the mean of the middle two when their number is even).
    pub median: f64,
    /// The values' sample standard deviation (n - 1); `None` with one value.
    pub sd: Option<f64>,
    /// Half the interval's width: the mean is `mean ± half_width`; `None` with one value
    /// (one run: no interval).
    pub half_width: Option<f64>,
    /// The interval's lower end, `mean - half_width`.
    pub low: Option<f64>,
    /// The interval's upper end, `mean + half_width`.
    pub high: Option<f64>,
}

impl Estimate {
    /// The estimate of `values` at `confidence` (0.95 for a 95% interval); `None` when there
    /// is no value.
    #[must_use]
    pub fn of(values: Vec<f64>, confidence: f64) -> Option<Self> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = mean(&values);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let median =
            if n % 2 == 1 { sorted[n / 2] } else { (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 };
        let sd = (n > 1).then(|| variance(&values).sqrt());
        let half_width = sd.map(|sd| {
            let t = student::quantile(1.0 - (1.0 - confidence) / 2.0, (n - 1) as f64);
            t * sd / (n as f64).sqrt()
        });
        Some(Self {
            mean,
            median,
            sd,
            half_width,
            low: half_width.map(|h| mean - h),
            high: half_width.map(|h| mean + h),
            values,
        })
    }

    /// How many repeats knew the figure.
    #[must_use]
    pub fn n(&self) -> usize {
        self.values.len()
    }
}

/// The mean of `xs` (not empty).
pub(super) fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The sample variance of `xs` (n - 1 in the denominator; at least two values).
pub(super) fn variance(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_median_and_the_t_interval() {
        let e = Estimate::of(vec![10.0, 12.0, 11.0, 15.0, 9.0], 0.95).unwrap();
        assert_eq!((e.mean, e.median, e.n()), (11.4, 11.0, 5));
        // sd = √5.3; t(0.975, 4) = 2.776445.
        let sd = 5.3f64.sqrt();
        assert!((e.sd.unwrap() - sd).abs() < 1e-12);
        let half = 2.776_445_105 * sd / 5f64.sqrt();
        assert!((e.half_width.unwrap() - half).abs() < 1e-6, "{e:?}");
        assert!((e.low.unwrap() - (11.4 - half)).abs() < 1e-6);
        assert!((e.high.unwrap() - (11.4 + half)).abs() < 1e-6);
        assert_eq!(e.values, [10.0, 12.0, 11.0, 15.0, 9.0]);

        let even = Estimate::of(vec![4.0, 1.0, 3.0, 2.0], 0.95).unwrap();
        assert_eq!(even.median, 2.5);
        let one = Estimate::of(vec![7.0], 0.95).unwrap();
        assert_eq!((one.mean, one.median, one.half_width, one.low), (7.0, 7.0, None, None));
        let same = Estimate::of(vec![3.0, 3.0, 3.0], 0.95).unwrap();
        assert_eq!(same.half_width, Some(0.0));
        assert!(Estimate::of(Vec::new(), 0.95).is_none());
    }
}
