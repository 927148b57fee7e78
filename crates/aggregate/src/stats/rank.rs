//! Ranks and Spearman's ρ with an exact permutation p-value.

/// Largest n for which the exact p-value enumerates all n! permutations.
pub const EXACT_MAX_N: usize = 10;

/// Average ranks (1-based; tied values share the mean of their ranks).
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end; their mean:
        let rank = (start + end + 1) as f64 / 2.0;
        for &index in &order[start..end] {
            ranks[index] = rank;
        }
        start = end;
    }
    ranks
}

/// Ranks where the highest value ranks 1 (ties share the average rank).
pub fn descending_ranks(values: &[f64]) -> Vec<f64> {
    let negated: Vec<f64> = values.iter().map(|value| -value).collect();
    average_ranks(&negated)
}

fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len() as f64;
    let mean_x = x.iter().sum::<f64>() / n;
    let mean_y = y.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mean_x) * (b - mean_y);
        sxx += (a - mean_x) * (a - mean_x);
        syy += (b - mean_y) * (b - mean_y);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Spearman's ρ: Pearson's correlation of average ranks. `None` for fewer
/// than two pairs, different lengths, non-finite values, or a constant side.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    if x.len() != y.len() || x.len() < 2 || x.iter().chain(y).any(|value| !value.is_finite()) {
        return None;
    }
    pearson(&average_ranks(x), &average_ranks(y))
}

/// Spearman's ρ and its exact two-sided permutation p-value: every one of the
/// n! pairings of `y` with `x` is enumerated, and
/// `p = min(1, 2·min(P(ρ* ≥ ρ), P(ρ* ≤ ρ)))` (`scipy.stats.permutation_test`'s
/// two-sided rule). `None` when ρ is undefined or n > [`EXACT_MAX_N`].
pub fn spearman_exact(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    if x.len() > EXACT_MAX_N {
        return None;
    }
    let rho = spearman(x, y)?;
    let rank_x = average_ranks(x);
    let mut rank_y = average_ranks(y);
    let n = x.len();
    // ρ is an increasing affine function of Σ rank_x·rank_y (the rank
    // multisets are fixed), so compare that sum instead.
    let dot = |ys: &[f64]| rank_x.iter().zip(ys).map(|(a, b)| a * b).sum::<f64>();
    let observed = dot(&rank_y);
    let tolerance = 1e-9 * observed.abs().max(1.0);
    let (mut greater, mut less, mut total) = (0u64, 0u64, 0u64);
    let mut count = |value: f64| {
        total += 1;
        if value >= observed - tolerance {
            greater += 1;
        }
        if value <= observed + tolerance {
            less += 1;
        }
    };
    // Heap's algorithm, iterative.
    let mut state = vec![0usize; n];
    count(dot(&rank_y));
    let mut index = 1;
    while index < n {
        if state[index] < index {
            if index % 2 == 0 {
                rank_y.swap(0, index);
            } else {
                rank_y.swap(state[index], index);
            }
            count(dot(&rank_y));
            state[index] += 1;
            index = 1;
        } else {
            state[index] = 0;
            index += 1;
        }
    }
    let total = total as f64;
    let p = (2.0 * (greater as f64 / total).min(less as f64 / total)).min(1.0);
    Some((rho, p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_get_average_ranks() {
        assert_eq!(average_ranks(&[10.0, 20.0, 10.0, 30.0]), vec![1.5, 3.0, 1.5, 4.0]);
        assert_eq!(descending_ranks(&[0.1, 0.9, 0.5]), vec![3.0, 1.0, 2.0]);
    }

    #[test]
    fn perfect_agreement_and_reversal() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        let (rho, p) = spearman_exact(&x, &x).expect("rho");
        assert!((rho - 1.0).abs() < 1e-12);
        // Only the identity reaches ρ = 1: p = 2/120.
        assert!((p - 2.0 / 120.0).abs() < 1e-12);
        let reversed = [5.0, 4.0, 3.0, 2.0, 1.0];
        let (rho, p) = spearman_exact(&x, &reversed).expect("rho");
        assert!((rho + 1.0).abs() < 1e-12);
        assert!((p - 2.0 / 120.0).abs() < 1e-12);
    }

    #[test]
    fn undefined_cases() {
        assert_eq!(spearman(&[1.0], &[2.0]), None);
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(spearman(&[1.0, 2.0], &[1.0]), None);
        let eleven: Vec<f64> = (0..11).map(f64::from).collect();
        assert_eq!(spearman_exact(&eleven, &eleven), None);
        assert!(spearman(&eleven, &eleven).is_some());
    }
}
