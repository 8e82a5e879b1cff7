//! Is a change in per-step times more than step-to-step noise? Welch's two-sample t-test
//! and Hedges' g over two samples (A's steps and B's steps).
//!
//! Welch's test does not assume equal variances (a change in batch size or pipeline changes
//! the spread too):
//!
//! ```text
//!   t  = (mean_b − mean_a) / sqrt(var_a/n_a + var_b/n_b)
//!   df = (var_a/n_a + var_b/n_b)² / ((var_a/n_a)²/(n_a−1) + (var_b/n_b)²/(n_b−1))
//!   p  = 2 · P(T_df > |t|)                      (two-sided)
//! ```
//!
//! Hedges' g is the effect size: the difference of means in units of the pooled standard
//! deviation, corrected for small samples (`J = 1 − 3/(4(n_a+n_b) − 9)`); |g| ≈ 0.2 is
//! small, 0.5 medium, 0.8 large. A change is "beyond noise" when both samples have at least
//! [`crate::DiffOptions::min_steps`] values and `p < alpha` (0.05).
//!
//! Degenerate samples are decided without the distribution: two constant samples with
//! equal means give p = 1 (no change), with different means p = 0 (a change no step
//! contradicts), and g is then `None` (not finite).

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The outcome of Welch's t-test and Hedges' g on two samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TwoSampleTest {
    /// `"welch_t"`: Welch's unequal-variances t-test, two-sided.
    pub method: TestMethod,
    /// Sample sizes.
    pub n_a: usize,
    /// Sample sizes.
    pub n_b: usize,
    /// Sample standard deviations (n − 1 in the denominator).
    pub sd_a: f64,
    /// Sample standard deviation of B.
    pub sd_b: f64,
    /// The t statistic (positive: B larger); 0 when undefined.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (0 when undefined).
    pub df: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Hedges' g (B − A in pooled standard deviations); `None` when both samples are
    /// constant and differ (an infinite effect).
    pub hedges_g: Option<f64>,
}

/// The test used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TestMethod {
    /// Welch's unequal-variances t-test.
    WelchT,
}

/// Mean and sample variance.
fn mean_var(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// Welch's t-test and Hedges' g of `a` against `b`; `None` when a sample has fewer than
/// two values or holds a non-finite one.
pub fn welch(a: &[f64], b: &[f64]) -> Option<TwoSampleTest> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (mean_a, var_a) = mean_var(a);
    let (mean_b, var_b) = mean_var(b);
    let (n_a, n_b) = (a.len() as f64, b.len() as f64);
    let diff = mean_b - mean_a;
    let (se_a, se_b) = (var_a / n_a, var_b / n_b);
    let se2 = se_a + se_b;
    let pooled_var = ((n_a - 1.0) * var_a + (n_b - 1.0) * var_b) / (n_a + n_b - 2.0);
    let correction = 1.0 - 3.0 / (4.0 * (n_a + n_b) - 9.0);
    let (t, df, p_value, hedges_g) = if se2 <= 0.0 || !se2.is_finite() {
        // Two constant samples: no step contradicts their difference (or their equality).
        let same = diff == 0.0;
        (0.0, 0.0, if same { 1.0 } else { 0.0 }, if same { Some(0.0) } else { None })
    } else {
        let t = diff / se2.sqrt();
        let df = se2 * se2 / (se_a * se_a / (n_a - 1.0) + se_b * se_b / (n_b - 1.0));
        let p = StudentsT::new(0.0, 1.0, df).map(|dist| (2.0 * dist.sf(t.abs())).min(1.0)).unwrap_or(f64::NAN);
        let g = if pooled_var > 0.0 { Some(correction * diff / pooled_var.sqrt()) } else { None };
        (t, df, p, g)
    };
    Some(TwoSampleTest {
        method: TestMethod::WelchT,
        n_a: a.len(),
        n_b: b.len(),
        sd_a: var_a.sqrt(),
        sd_b: var_b.sqrt(),
        t,
        df,
        p_value,
        hedges_g,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    /// Reference values from SciPy 1.17.1 (`scipy.stats.ttest_ind(b, a, equal_var=False)`) on
    /// the same samples, and Hedges' g by the formula in the module docs (NumPy).
    #[test]
    fn matches_scipy_welch_t_test() {
        let a = [19.1, 20.3, 18.7, 21.0, 19.9, 20.4, 19.5];
        let b = [21.2, 22.0, 20.9, 23.1, 21.7, 22.4];
        let test = welch(&a, &b).unwrap();
        assert!(close(test.t, 4.574418822334138, 1e-9), "{test:?}");
        assert!(close(test.df, 10.679272567926002, 1e-9), "{test:?}");
        assert!(close(test.p_value, 0.0008605663105807403, 1e-9), "{test:?}");
        assert!(close(test.hedges_g.unwrap(), 2.3683653099705997, 1e-9), "{test:?}");
    }

    #[test]
    fn identical_samples_show_no_change() {
        let a = [3.0, 3.2, 2.9, 3.1, 3.05];
        let test = welch(&a, &a).unwrap();
        assert_eq!((test.t, test.p_value, test.hedges_g), (0.0, 1.0, Some(0.0)));
    }

    #[test]
    fn constant_samples_are_decided_without_the_distribution() {
        let same = welch(&[2.0; 6], &[2.0; 6]).unwrap();
        assert_eq!((same.p_value, same.hedges_g), (1.0, Some(0.0)));
        let moved = welch(&[2.0; 6], &[3.0; 6]).unwrap();
        assert_eq!((moved.p_value, moved.hedges_g), (0.0, None));
    }

    #[test]
    fn too_small_or_non_finite_samples_have_no_test() {
        assert!(welch(&[1.0], &[1.0, 2.0]).is_none());
        assert!(welch(&[1.0, f64::NAN], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn overlapping_noisy_samples_are_within_noise() {
        let a = [10.0, 12.0, 9.0, 11.0, 13.0, 10.5];
        let b = [10.5, 11.5, 9.5, 12.5, 10.0, 11.0];
        assert!(welch(&a, &b).unwrap().p_value > 0.5);
    }
}
