//! Cohen's κ, unweighted and with linear or quadratic disagreement weights.

/// How disagreements between ordered categories are weighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weights {
    /// Every disagreement counts 1 (Cohen's κ).
    None,
    /// |i − j|.
    Linear,
    /// (i − j)².
    Quadratic,
}

/// Cohen's κ of two raters over `categories` ordered categories; each pair is
/// `(rater_a, rater_b)` category indices. `None` without pairs, for an index
/// out of range, or when chance disagreement is zero (both raters constant
/// and equal).
pub fn cohen_kappa(pairs: &[(usize, usize)], categories: usize, weights: Weights) -> Option<f64> {
    if pairs.is_empty() || categories == 0 {
        return None;
    }
    let mut observed = vec![0.0; categories * categories];
    let mut row = vec![0.0; categories];
    let mut column = vec![0.0; categories];
    for &(a, b) in pairs {
        if a >= categories || b >= categories {
            return None;
        }
        observed[a * categories + b] += 1.0;
        row[a] += 1.0;
        column[b] += 1.0;
    }
    let n = pairs.len() as f64;
    let weight = |i: usize, j: usize| {
        let distance = i.abs_diff(j) as f64;
        match weights {
            Weights::None => f64::from(u8::from(i != j)),
            Weights::Linear => distance,
            Weights::Quadratic => distance * distance,
        }
    };
    let (mut disagreement, mut chance) = (0.0, 0.0);
    for i in 0..categories {
        for j in 0..categories {
            let w = weight(i, j);
            disagreement += w * observed[i * categories + j] / n;
            chance += w * row[i] * column[j] / (n * n);
        }
    }
    (chance > 0.0).then(|| 1.0 - disagreement / chance)
}

/// The category index of a CSS score (0, 0.5, 1 → 0, 1, 2).
pub fn css_category(score: f64) -> Option<usize> {
    if score == 0.0 {
        Some(0)
    } else if score == 0.5 {
        Some(1)
    } else if score == 1.0 {
        Some(2)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_agreement_is_one() {
        let pairs = [(0, 0), (1, 1), (2, 2), (2, 2)];
        for weights in [Weights::None, Weights::Linear, Weights::Quadratic] {
            assert!((cohen_kappa(&pairs, 3, weights).expect("kappa") - 1.0).abs() < 1e-12);
        }
    }

    #[test]
    fn textbook_two_by_two() {
        // 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: p_o = 0.7, p_e = 0.5.
        let mut pairs = Vec::new();
        pairs.extend(std::iter::repeat_n((1, 1), 20));
        pairs.extend(std::iter::repeat_n((1, 0), 5));
        pairs.extend(std::iter::repeat_n((0, 1), 10));
        pairs.extend(std::iter::repeat_n((0, 0), 15));
        let kappa = cohen_kappa(&pairs, 2, Weights::None).expect("kappa");
        assert!((kappa - 0.4).abs() < 1e-12);
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(cohen_kappa(&[], 3, Weights::None), None);
        assert_eq!(cohen_kappa(&[(1, 1), (1, 1)], 3, Weights::None), None);
        assert_eq!(cohen_kappa(&[(3, 1)], 3, Weights::None), None);
        assert_eq!(css_category(0.5), Some(1));
        assert_eq!(css_category(0.7), None);
    }
}
