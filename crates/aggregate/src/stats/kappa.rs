//! Cohen's κ, unweighted and with linear or quadratic disagreement weights,
//! and the CSS scale it is computed on: the ordered scores 0 / ½ / 1 plus a
//! nominal fourth category, "updated in the wrong direction" (score 0 like
//! "ignored", but a different failure: the answer moved, the wrong way).

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
    weighted_kappa(pairs, categories, |i, j| {
        let distance = i.abs_diff(j) as f64;
        match weights {
            Weights::None => f64::from(u8::from(i != j)),
            Weights::Linear => distance,
            Weights::Quadratic => distance * distance,
        }
    })
}

/// Weighted κ, `1 − Σ w·observed / Σ w·chance`, with the disagreement
/// weight `weight(i, j)` (0 on the diagonal).
pub fn weighted_kappa(
    pairs: &[(usize, usize)],
    categories: usize,
    weight: impl Fn(usize, usize) -> f64,
) -> Option<f64> {
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

/// Categories of the CSS scale: 0, ½, 1 (ordered) and wrong direction.
pub const CSS_CATEGORIES: usize = 4;

/// The category of "updated in the wrong direction".
pub const WRONG_DIRECTION: usize = 3;

/// κ over the CSS scale. The scores 0 / ½ / 1 are ordered: `weights` apply
/// to them with the largest disagreement (0 against 1) weighing 1 (linear:
/// ½ per step; quadratic: ¼ then 1). Wrong direction is nominal: against any
/// other category it weighs 1, the full disagreement, under every scheme.
/// On pairs without a wrong-direction label this equals
/// [`cohen_kappa`] over three categories (κ does not change when every
/// weight is scaled).
pub fn css_kappa(pairs: &[(usize, usize)], weights: Weights) -> Option<f64> {
    weighted_kappa(pairs, CSS_CATEGORIES, |i, j| {
        if i == j {
            0.0
        } else if i == WRONG_DIRECTION || j == WRONG_DIRECTION {
            1.0
        } else {
            let distance = i.abs_diff(j) as f64 / 2.0;
            match weights {
                Weights::None => 1.0,
                Weights::Linear => distance,
                Weights::Quadratic => distance * distance,
            }
        }
    })
}

/// The CSS category of a judgment: its label when it names one
/// (`ignored`, `acknowledged_unchanged`, `updated_correct`,
/// `updated_wrong_direction`), else its score.
pub fn css_label_category(label: Option<&str>, score: f64) -> Option<usize> {
    match label {
        Some("ignored") => Some(0),
        Some("acknowledged_unchanged") => Some(1),
        Some("updated_correct") => Some(2),
        Some("updated_wrong_direction") => Some(WRONG_DIRECTION),
        _ => css_category(score),
    }
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

    #[test]
    fn wrong_direction_is_its_own_nominal_category() {
        // Without wrong-direction labels the CSS κ is the 3-category κ.
        let pairs = [(0, 0), (0, 1), (1, 1), (2, 2), (2, 1), (1, 0), (2, 2), (0, 2)];
        for weights in [Weights::None, Weights::Linear, Weights::Quadratic] {
            let three = cohen_kappa(&pairs, 3, weights).expect("kappa");
            let four = css_kappa(&pairs, weights).expect("kappa");
            assert!((three - four).abs() < 1e-12, "{weights:?}");
        }
        // By hand, in categories (0 = score 0, 1 = ½, 2 = 1, 3 = wrong
        // direction): pairs (3, 3), (3, 0), (0, 0), (2, 2). Observed
        // disagreement 1/4 (3 against 0 weighs 1). Marginals a = (1, 0, 1, 2)/4
        // and b = (2, 0, 1, 1)/4; category 1 is unused, so every off-diagonal
        // cell with mass (0–2, 0–3, 2–3) weighs 1 under every scheme and
        // chance disagreement = 1 − Σ a_i b_i = 1 − (2 + 1 + 2)/16 = 11/16.
        // κ = 1 − (1/4)/(11/16) = 7/11.
        let pairs = [(3, 3), (3, 0), (0, 0), (2, 2)];
        for weights in [Weights::None, Weights::Linear, Weights::Quadratic] {
            let kappa = css_kappa(&pairs, weights).expect("kappa");
            assert!((kappa - 7.0 / 11.0).abs() < 1e-12, "{weights:?}: {kappa}");
        }
        // Folding wrong direction into "ignored" would call these perfect.
        let fold = |category: usize| if category == WRONG_DIRECTION { 0 } else { category };
        let folded: Vec<(usize, usize)> = pairs.iter().map(|&(a, b)| (fold(a), fold(b))).collect();
        assert_eq!(cohen_kappa(&folded, 3, Weights::None), Some(1.0));
        assert_eq!(css_label_category(Some("updated_wrong_direction"), 0.0), Some(3));
        assert_eq!(css_label_category(Some("ignored"), 0.0), Some(0));
        assert_eq!(css_label_category(None, 0.5), Some(1));
        assert_eq!(css_label_category(Some("uncertain"), 0.7), None);
    }
}
