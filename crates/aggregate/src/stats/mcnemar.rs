//! The exact McNemar test: whether two paired binary outcomes differ.
//!
//! Of the matched pairs, only the discordant ones carry information: `b`
//! pairs where the first outcome holds and the second does not, `c` the
//! reverse. Under the null hypothesis each discordant pair goes either way
//! with probability ½, so the two-sided p-value is the exact binomial one,
//!
//! ```text
//! p = min(1, 2 · Σ_{i ≤ min(b, c)} C(b + c, i) / 2^(b + c))
//! ```
//!
//! (`scipy.stats.binomtest(min(b, c), b + c, 0.5)`; `p = 1` when there is no
//! discordant pair). It is computed without overflow for any count: the
//! terms are summed relative to the largest one, `C(n, k) / 2^n` with
//! `k = min(b, c)`, whose logarithm is a sum of `k` small logarithms.
//!
//! The reference values in `tests/fixtures/mcnemar_scipy.csv` are scipy's:
//!
//! ```text
//! python -c 'from scipy.stats import binomtest; print(binomtest(min(b, c), b + c, 0.5).pvalue)'
//! ```

/// The exact two-sided McNemar p-value for `b` and `c` discordant pairs.
///
/// ```
/// use cfeval_aggregate::stats::mcnemar_exact;
/// assert_eq!(mcnemar_exact(0, 0), 1.0);
/// assert!((mcnemar_exact(6, 0) - 2.0 / 64.0).abs() < 1e-15);
/// ```
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    let k = b.min(c);
    if n == 0 || 2 * k + 1 >= n {
        // No discordant pair, or as even a split as n allows: the tail is
        // half the distribution or more, so p is exactly 1.
        return 1.0;
    }
    // ln(C(n, k) / 2^n) = Σ_{j=1..k} ln((n − k + j) / (2j)) − (n − k)·ln 2.
    let log_largest = (1..=k)
        .map(|j| ((n - k + j) as f64 / (2 * j) as f64).ln())
        .sum::<f64>()
        - (n - k) as f64 * std::f64::consts::LN_2;
    // Σ_{i ≤ k} C(n, i) / C(n, k), walking down from i = k: each term is
    // the one above times i / (n − i + 1), so every term is at most 1.
    let mut term = 1.0_f64;
    let mut sum = 1.0_f64;
    for i in (1..=k).rev() {
        term *= i as f64 / (n - i + 1) as f64;
        sum += term;
        if term < sum * f64::EPSILON * 1e-3 {
            break;
        }
    }
    (std::f64::consts::LN_2 + log_largest + sum.ln()).exp().min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `2 · Σ_{i ≤ k} C(n, i) / 2^n` with exact integer binomials (small n).
    fn by_integers(b: u64, c: u64) -> f64 {
        let n = b + c;
        let k = b.min(c);
        let mut binomial: u128 = 1;
        let mut total: u128 = 0;
        for i in 0..=k {
            if i > 0 {
                binomial = binomial * u128::from(n - i + 1) / u128::from(i);
            }
            total += binomial;
        }
        (2.0 * total as f64 / 2f64.powi(n as i32)).min(1.0)
    }

    #[test]
    fn small_counts_match_the_integer_sum() {
        for b in 0..40 {
            for c in 0..40 {
                let exact = by_integers(b, c);
                let p = mcnemar_exact(b, c);
                assert!(
                    (p - exact).abs() <= 1e-14 * exact.max(1e-300),
                    "({b}, {c}): {p} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn equals_scipy_to_1e_12() {
        let fixture = include_str!("../../tests/fixtures/mcnemar_scipy.csv");
        let mut checked = 0;
        for line in fixture.lines().filter(|line| !line.starts_with('#')).skip(1) {
            let fields: Vec<&str> = line.split(',').collect();
            let [b, c, expected] = fields[..] else {
                panic!("bad fixture line {line}");
            };
            let (b, c): (u64, u64) = (b.parse().expect("b"), c.parse().expect("c"));
            let expected: f64 = expected.parse().expect("p");
            let p = mcnemar_exact(b, c);
            assert!(
                (p - expected).abs() < 1e-12,
                "({b}, {c}): {p} vs scipy {expected}"
            );
            checked += 1;
        }
        assert!(checked >= 8, "{checked} reference values");
    }

    #[test]
    fn symmetric_and_bounded() {
        for (b, c) in [(0, 0), (1, 0), (5, 5), (40, 12), (300, 260), (3, 97)] {
            let p = mcnemar_exact(b, c);
            assert_eq!(p, mcnemar_exact(c, b));
            assert!((0.0..=1.0).contains(&p), "({b}, {c}): {p}");
        }
        assert_eq!(mcnemar_exact(1, 0), 1.0);
        assert_eq!(mcnemar_exact(5, 5), 1.0);
    }

    #[test]
    fn large_counts_neither_overflow_nor_vanish_early() {
        // 10^6 discordant pairs, evenly split ± 1000: p is small but positive.
        let p = mcnemar_exact(499_000, 501_000);
        assert!(p > 0.0 && p < 0.1, "{p}");
        assert_eq!(mcnemar_exact(1_000_000, 0), 0.0);
        assert!(mcnemar_exact(1_000_000, 999_999) > 0.99);
    }
}
