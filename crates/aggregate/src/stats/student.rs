//! Student's t distribution: the survival function and the quantile, for
//! the t tests of `cfeval power` (small samples of cases, where the normal
//! quantile would make a test reject too often).
//!
//! The survival function is the regularized incomplete beta function,
//! `P(T > x) = ½ · I_{ν/(ν + x²)}(ν/2, ½)` for `x ≥ 0`, evaluated by its
//! continued fraction (modified Lentz); the prefactor's
//! `ln Γ(a + ½) − ln Γ(a)` is taken from the difference of the Stirling
//! series for large `a`, where subtracting two large `ln Γ` would lose
//! digits. The quantile is Newton's method on the survival function from a
//! Cornish–Fisher start (exact closed forms for ν = 1 and 2).
//!
//! Both agree with scipy to 1e-12 relative up to 10⁴ degrees of freedom
//! and to 1e-10 beyond (at ν = 10⁶, `ν/(ν + x²)` rounds to a double whose
//! error the continued fraction multiplies by about ν/2) — far below any
//! Monte Carlo error of a power simulation.
//!
//! The reference values in `tests/fixtures/student_t_scipy.csv` are scipy's,
//! one per line (`kind,df,x,value`):
//!
//! ```text
//! python -c 'from scipy.stats import t; print(float(t.ppf(0.975, 9)), float(t.sf(2.5, 9)))'
//! ```

use std::f64::consts::PI;

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine terms; relative error near
/// 1e-15).
fn ln_gamma(x: f64) -> f64 {
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
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        return (PI / (PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (index, coefficient) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += coefficient / (x + index as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The Stirling series' correction `ln Γ(z) − [(z − ½) ln z − z + ½ ln 2π]`
/// for `z ≥ 10` (five terms; error below 1e-17 there).
fn stirling_correction(z: f64) -> f64 {
    let inverse = 1.0 / z;
    let square = inverse * inverse;
    inverse
        * (1.0 / 12.0
            - square * (1.0 / 360.0 - square * (1.0 / 1260.0 - square * (1.0 / 1680.0 - square / 1188.0))))
}

/// `ln Γ(a + ½) − ln Γ(a)` for `a > 0`, without cancellation for large `a`.
fn ln_gamma_half_ratio(a: f64) -> f64 {
    if a < 10.0 {
        return ln_gamma(a + 0.5) - ln_gamma(a);
    }
    // (a)·ln(a + ½) − (a − ½)·ln a − ½ = a·ln(1 + 1/(2a)) + ½·ln a − ½.
    a * (0.5 / a).ln_1p() + 0.5 * a.ln() - 0.5 + stirling_correction(a + 0.5) - stirling_correction(a)
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPSILON: f64 = 1e-16;
    let max_terms = 1_000 + 20 * (a.max(b).sqrt() as usize);
    let (sum, plus, minus) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - sum * x / plus;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut fraction = d;
    for m in 1..=max_terms {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((minus + m2) * (a + m2));
        d = 1.0 + even * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + even / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        fraction *= d * c;
        let odd = -(a + m) * (sum + m) * x / ((a + m2) * (plus + m2));
        d = 1.0 + odd * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + odd / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let step = d * c;
        fraction *= step;
        if (step - 1.0).abs() < EPSILON {
            break;
        }
    }
    fraction
}

/// `P(T > x)` for `T` with `df` degrees of freedom (`df > 0`); NaN for a
/// NaN argument or a degree of freedom that is not positive.
///
/// ```
/// use cfeval_aggregate::stats::student;
/// assert_eq!(student::sf(0.0, 7.0), 0.5);
/// assert!((student::sf(1.0, 1.0) - 0.25).abs() < 1e-15);
/// ```
pub fn sf(x: f64, df: f64) -> f64 {
    if x.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if x < 0.0 {
        return 1.0 - sf(-x, df);
    }
    if x == 0.0 {
        return 0.5;
    }
    if x.is_infinite() {
        return 0.0;
    }
    // P(T > x) = ½ · I_z(ν/2, ½), z = ν / (ν + x²); 1 − z = x² / (ν + x²)
    // computed apart so that neither loses digits.
    let (a, b) = (0.5 * df, 0.5);
    let denominator = df + x * x;
    let (z, one_minus_z) = (df / denominator, x * x / denominator);
    // ln of z^a (1 − z)^b / B(a, b), with ln B(a, ½) = ln Γ(½) − [ln Γ(a + ½) − ln Γ(a)].
    let ln_beta = 0.5 * PI.ln() - ln_gamma_half_ratio(a);
    // ln z = −ln(1 + x²/ν) exactly for large ν (where z rounds near 1).
    let ln_front = -a * (x * x / df).ln_1p() + b * one_minus_z.ln() - ln_beta;
    let incomplete = if z < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(a, b, z) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(b, a, one_minus_z) / b
    };
    0.5 * incomplete
}

/// The density of `T` with `df` degrees of freedom at `x`.
fn pdf(x: f64, df: f64) -> f64 {
    let a = 0.5 * df;
    // Γ((ν+1)/2) / (√(νπ) Γ(ν/2)) · (1 + x²/ν)^(−(ν+1)/2)
    (ln_gamma_half_ratio(a) - 0.5 * (df * PI).ln() - (a + 0.5) * (x * x / df).ln_1p()).exp()
}

/// The `p` quantile of `T` with `df` degrees of freedom: ±∞ at 0 and 1,
/// NaN outside [0, 1] or for a degree of freedom that is not positive.
///
/// ```
/// use cfeval_aggregate::stats::student;
/// assert!((student::quantile(0.975, 9.0) - 2.262_157_162_798_205).abs() < 1e-12);
/// ```
pub fn quantile(p: f64, df: f64) -> f64 {
    if p.is_nan() || !(0.0..=1.0).contains(&p) || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    if p == 0.5 {
        return 0.0;
    }
    // Work with the tail probability: 1 − p is exact for p ≥ ½ (Sterbenz),
    // and a small p is used as it is.
    if p < 0.5 {
        -upper_quantile(p, df)
    } else {
        upper_quantile(1.0 - p, df)
    }
}

/// The `t > 0` with `P(T > t) = q`, for `0 < q < ½`.
fn upper_quantile(q: f64, df: f64) -> f64 {
    if df == 1.0 {
        // Cauchy: tan(π(½ − q)) = 1 / tan(πq).
        return 1.0 / (PI * q).tan();
    }
    if df == 2.0 {
        // P(T > t) = ½ (1 − t / √(2 + t²)).
        return (1.0 - 2.0 * q) / (2.0 * q * (1.0 - q)).sqrt();
    }
    // Newton on the upper tail from a Cornish–Fisher start.
    let z = -super::normal::quantile(q);
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    let mut t = z
        + (z3 + z) / (4.0 * df)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * df * df)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * df.powi(3));
    if !t.is_finite() || t <= 0.0 {
        t = z.max(f64::MIN_POSITIVE);
    }
    // Keep a bracket so that a wild step (far tails, few degrees of
    // freedom) falls back to bisection.
    let (mut low, mut high) = (0.0_f64, f64::INFINITY);
    for _ in 0..200 {
        let excess = sf(t, df) - q;
        if excess > 0.0 {
            low = t;
        } else {
            high = t;
        }
        let step = excess / pdf(t, df);
        let mut next = t + step;
        if !next.is_finite() || next <= low || next >= high {
            next = if high.is_finite() {
                0.5 * (low + high)
            } else {
                2.0 * t.max(1.0)
            };
        }
        if (next - t).abs() <= 1e-15 * t.abs().max(1e-300) {
            return next;
        }
        t = next;
    }
    t
}

/// The two-sided p-value of a t statistic with `df` degrees of freedom.
pub fn two_sided_p(t: f64, df: f64) -> f64 {
    (2.0 * sf(t.abs(), df)).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_scipy() {
        let fixture = include_str!("../../tests/fixtures/student_t_scipy.csv");
        let mut checked = 0;
        let mut failures = Vec::new();
        for line in fixture.lines().filter(|line| !line.starts_with('#')).skip(1) {
            let fields: Vec<&str> = line.split(',').collect();
            let [kind, df, x, expected] = fields[..] else {
                panic!("bad fixture line {line}");
            };
            let df: f64 = df.parse().expect("df");
            let x: f64 = x.parse().expect("x");
            let expected: f64 = expected.parse().expect("value");
            // 1e-12 relative (1e-10 past 10⁴ degrees of freedom, see the
            // module docs); absolutely below 1e-300.
            let relative = if df > 1e4 { 1e-10 } else { 1e-12 };
            let (value, tolerance) = match kind {
                "ppf" => (quantile(x, df), relative * expected.abs().max(1e-12)),
                "sf" => (sf(x, df), relative * expected.abs().max(1e-300)),
                other => panic!("unknown kind {other}"),
            };
            if (value - expected).abs() > tolerance {
                failures.push(format!(
                    "{kind}({x}, df {df}) = {value:e}, scipy {expected:e}, off by {:e}",
                    (value - expected).abs() / expected.abs()
                ));
            }
            checked += 1;
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(checked >= 300, "{checked} reference values");
    }

    #[test]
    fn quantile_inverts_the_survival_function() {
        for df in [1.5, 3.0, 8.0, 40.0, 2_000.0] {
            for p in [0.51, 0.7, 0.9, 0.975, 0.999] {
                let t = quantile(p, df);
                assert!((1.0 - sf(t, df) - p).abs() < 1e-13, "df {df}, p {p}");
            }
        }
    }

    #[test]
    fn edges() {
        assert_eq!(quantile(0.0, 5.0), f64::NEG_INFINITY);
        assert_eq!(quantile(1.0, 5.0), f64::INFINITY);
        assert!(quantile(1.5, 5.0).is_nan() && quantile(0.5, 0.0).is_nan());
        assert!(sf(1.0, -1.0).is_nan() && sf(f64::NAN, 3.0).is_nan());
        assert_eq!(sf(f64::INFINITY, 3.0), 0.0);
        assert_eq!(sf(f64::NEG_INFINITY, 3.0), 1.0);
        assert_eq!(two_sided_p(0.0, 4.0), 1.0);
        assert!((two_sided_p(-2.776_445_105_197_799, 4.0) - 0.05).abs() < 1e-12);
    }
}
