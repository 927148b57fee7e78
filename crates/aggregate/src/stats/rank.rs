//! Ranks, Spearman's ρ with an exact permutation p-value, and rank
//! probabilities over bootstrap replicates (rank swaps, ranking first).

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

/// How often, over bootstrap replicates, subjects rank first and the
/// ranking under one metric (CMS) disagrees with the ranking under another
/// (CSS). Subjects are in the caller's order; higher values rank first.
#[derive(Debug, Clone, PartialEq)]
pub struct RankProbabilities {
    /// Replicates where every value was defined (the denominator).
    pub replicates: usize,
    /// P(subject ranks first) under the first metric; a tie for first
    /// shares the replicate equally, so the column sums to 1.
    pub first_first: Vec<f64>,
    /// P(subject ranks first) under the second metric.
    pub first_second: Vec<f64>,
    /// P(the subject's rank under the second metric differs from its rank
    /// under the first).
    pub subject_swap: Vec<f64>,
    /// `pair_swap[i][j]` (i < j): P(the two metrics order i and j
    /// differently: one strictly above under the first, strictly below under
    /// the second).
    pub pair_swap: Vec<Vec<f64>>,
    /// P(at least one pair is ordered differently: the rankings differ).
    pub any_swap: f64,
}

/// Rank probabilities over `replicates`, each the values of every subject
/// under the two metrics. Replicates with a non-finite value are skipped;
/// `None` with fewer than two subjects or no usable replicate.
pub fn rank_probabilities<I>(subjects: usize, replicates: I) -> Option<RankProbabilities>
where
    I: IntoIterator<Item = (Vec<f64>, Vec<f64>)>,
{
    if subjects < 2 {
        return None;
    }
    let mut used = 0usize;
    let mut first_first = vec![0.0; subjects];
    let mut first_second = vec![0.0; subjects];
    let mut subject_swap = vec![0.0; subjects];
    let mut pair_swap = vec![vec![0.0; subjects]; subjects];
    let mut any_swap = 0.0;
    let share_first = |values: &[f64], into: &mut [f64]| {
        let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let tied = values.iter().filter(|&&value| value == best).count() as f64;
        for (slot, &value) in into.iter_mut().zip(values) {
            if value == best {
                *slot += 1.0 / tied;
            }
        }
    };
    for (first, second) in replicates {
        if first.len() != subjects
            || second.len() != subjects
            || first.iter().chain(&second).any(|value| !value.is_finite())
        {
            continue;
        }
        used += 1;
        share_first(&first, &mut first_first);
        share_first(&second, &mut first_second);
        let rank_first = descending_ranks(&first);
        let rank_second = descending_ranks(&second);
        for subject in 0..subjects {
            if rank_first[subject] != rank_second[subject] {
                subject_swap[subject] += 1.0;
            }
        }
        let mut any = false;
        for i in 0..subjects {
            for j in i + 1..subjects {
                if (first[i] - first[j]) * (second[i] - second[j]) < 0.0 {
                    pair_swap[i][j] += 1.0;
                    any = true;
                }
            }
        }
        any_swap += f64::from(u8::from(any));
    }
    if used == 0 {
        return None;
    }
    let total = used as f64;
    let scale = |values: &mut Vec<f64>| values.iter_mut().for_each(|value| *value /= total);
    scale(&mut first_first);
    scale(&mut first_second);
    scale(&mut subject_swap);
    pair_swap.iter_mut().for_each(scale);
    Some(RankProbabilities {
        replicates: used,
        first_first,
        first_second,
        subject_swap,
        pair_swap,
        any_swap: any_swap / total,
    })
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

    #[test]
    fn rank_probabilities_count_replicates_by_hand() {
        // Three subjects; CMS order a > b > c in every replicate. CSS:
        // replicate 1 the same order, replicate 2 b > a > c (a–b swap),
        // replicate 3 a = b > c (a tie for first), replicate 4 undefined.
        let cms = vec![0.9, 0.5, 0.1];
        let replicates = vec![
            (cms.clone(), vec![0.6, 0.4, 0.2]),
            (cms.clone(), vec![0.4, 0.6, 0.2]),
            (cms.clone(), vec![0.5, 0.5, 0.2]),
            (cms.clone(), vec![f64::NAN, 0.5, 0.2]),
        ];
        let p = rank_probabilities(3, replicates).expect("probabilities");
        assert_eq!(p.replicates, 3);
        assert_eq!(p.first_first, vec![1.0, 0.0, 0.0]);
        let expected_first = [(1.0 + 0.5) / 3.0, (1.0 + 0.5) / 3.0, 0.0];
        for (actual, expected) in p.first_second.iter().zip(expected_first) {
            assert!((actual - expected).abs() < 1e-12);
        }
        // a's rank differs in replicates 2 (2 vs 1) and 3 (1.5 vs 1).
        assert!((p.subject_swap[0] - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(p.subject_swap[2], 0.0);
        // A tie is not a swap: only replicate 2 orders a and b differently.
        assert!((p.pair_swap[0][1] - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(p.pair_swap[0][2], 0.0);
        assert!((p.any_swap - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(rank_probabilities(1, vec![(vec![1.0], vec![1.0])]), None);
    }
}
