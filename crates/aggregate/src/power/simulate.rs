//! The test every simulated study applies, the simulated studies, and the
//! search for the smallest number of cases.
//!
//! A study of `n` cases is summarised per case `i` by `d_i`, the sum of its
//! tuples' differences, and `m_i`, its number of decided tuples. The test
//! ([`estimate`], [`Criticals`]) is cfeval's case-level analysis:
//!
//! ```text
//! D̂  = Σ d_i / Σ m_i                                  (tuple-weighted)
//! SE = √( G/(G − 1) · Σ (d_i − D̂ m_i)² ) / Σ m_i      (cluster-robust, by case)
//! reject H₀: D = 0 when |D̂| > t_{1−α/2, G−1} · SE
//! ```
//!
//! with `G` the cases that have a decided tuple (a case without one adds
//! nothing to either sum; it counts toward `n`, the cases one has to run,
//! but not toward the degrees of freedom). Student's t rather than the
//! normal quantile: with tens of cases the normal one rejects too often.
//! A difference of 10⁻¹² or less counts as zero.
//!
//! A simulated study is `n` cases drawn with replacement from the pilot's
//! (each case with all of its tuples), shifted to the alternative (see
//! [`Population`]), or `n` normal per-case differences in the stated mode.
//! Study `s` draws from its own stream `Rng::new(seed, s)`, and a study of
//! `n + k` cases begins with the study of `n`: common random numbers, so
//! the estimated power moves smoothly with `n` and the search sees the
//! same studies at every size.

use std::collections::HashMap;

use rayon::prelude::*;

use crate::stats::{Rng, student};

/// One case of a scope: the sum of its tuples' differences and its number
/// of decided tuples.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CaseSum {
    pub sum: f64,
    pub tuples: f64,
}

/// A study's estimate and its standard error.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// `D̂ = Σ d / Σ m`.
    pub difference: f64,
    /// The cluster-robust standard error.
    pub se: f64,
    /// Cases with at least one decided tuple (`G`).
    pub clusters: u64,
}

/// The estimate of a study, or `None` when fewer than two of its cases have
/// a decided tuple (no standard error).
pub fn estimate(cases: &[CaseSum]) -> Option<Estimate> {
    estimate_by(cases.len(), |index| cases[index])
}

/// [`estimate`] over the cases `case(0) … case(count − 1)`.
fn estimate_by(count: usize, case: impl Fn(usize) -> CaseSum) -> Option<Estimate> {
    let (mut sum, mut tuples, mut clusters) = (0.0, 0.0, 0u64);
    for index in 0..count {
        let CaseSum { sum: d, tuples: m } = case(index);
        sum += d;
        tuples += m;
        clusters += u64::from(m > 0.0);
    }
    if clusters < 2 || tuples <= 0.0 {
        return None;
    }
    let difference = sum / tuples;
    let mut squares = 0.0;
    for index in 0..count {
        let CaseSum { sum: d, tuples: m } = case(index);
        let residual = d - difference * m;
        squares += residual * residual;
    }
    let g = clusters as f64;
    Some(Estimate {
        difference,
        se: (g / (g - 1.0) * squares).sqrt() / tuples,
        clusters,
    })
}

/// Differences this close to zero are zero (rounding of the shifts).
const ZERO: f64 = 1e-12;

/// The two-sided critical values `t_{1−α/2, G−1}`, computed once per `G`.
#[derive(Debug, Clone)]
pub struct Criticals {
    alpha: f64,
    values: HashMap<u64, f64>,
}

impl Criticals {
    pub fn new(alpha: f64) -> Self {
        Self {
            alpha,
            values: HashMap::new(),
        }
    }

    /// `t_{1−α/2, clusters−1}` (`clusters ≥ 2`).
    pub fn value(&mut self, clusters: u64) -> f64 {
        let alpha = self.alpha;
        *self
            .values
            .entry(clusters)
            .or_insert_with(|| student::quantile(1.0 - alpha / 2.0, (clusters - 1) as f64))
    }

    /// Whether the test rejects `D = 0` for `estimate`, its difference
    /// shifted by `shift`.
    pub fn rejects(&mut self, estimate: &Estimate, shift: f64) -> bool {
        let difference = estimate.difference + shift;
        estimate.clusters >= 2 && difference.abs() - self.value(estimate.clusters) * estimate.se > ZERO
    }
}

/// What the simulated studies are drawn from.
#[derive(Debug, Clone)]
pub enum Population {
    /// The pilot's cases, per scope (`scopes[k][i]`: case `i` in scope `k`),
    /// each case's sum already centred: `e_i = d_i − D̂_pilot · m_i`. A study
    /// of difference `D` has `d_i = e_i + D · m_i`, so its population mean
    /// difference is exactly `D`, with the pilot's spread, within-case
    /// correlation and case sizes. Its `D̂` is `ê + D` and its standard
    /// error does not depend on `D`: one draw serves every difference.
    Cases { scopes: Vec<Vec<CaseSum>> },
    /// Stated: per-case differences `D + sd · z`, `z ~ N(0, 1)`, one tuple
    /// mean per case (one scope).
    Normal { sd: f64 },
}

impl Population {
    fn scopes(&self) -> usize {
        match self {
            Population::Cases { scopes } => scopes.len(),
            Population::Normal { .. } => 1,
        }
    }
}

/// How the studies are simulated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Simulation {
    pub studies: u64,
    pub seed: u64,
    /// Study `s` uses stream `first_stream + s`.
    pub first_stream: u64,
}

/// The centred estimate (`ê`, at `D = 0`) of every study of `cases` cases
/// in each of `scopes`; `None` where a study has fewer than two cases with
/// a decided tuple. `result[k][s]` is scope `scopes[k]`, study `s`.
pub fn studies(
    population: &Population,
    scopes: &[usize],
    cases: u64,
    simulation: &Simulation,
) -> Vec<Vec<Option<Estimate>>> {
    debug_assert!(scopes.iter().all(|&scope| scope < population.scopes()));
    let count = usize::try_from(cases).unwrap_or(usize::MAX);
    let per_study: Vec<Vec<Option<Estimate>>> = (0..simulation.studies)
        .into_par_iter()
        .map_init(
            || (Vec::<u32>::new(), Vec::<f64>::new()),
            |(drawn, normals), study| {
                let mut rng = Rng::new(simulation.seed, simulation.first_stream + study);
                match population {
                    Population::Cases { scopes: sums } => {
                        let size = sums.first().map_or(0, Vec::len);
                        let bound = u32::try_from(size).unwrap_or(u32::MAX);
                        drawn.clear();
                        if bound > 0 {
                            drawn.extend((0..count).map(|_| rng.below(bound)));
                        }
                        scopes
                            .iter()
                            .map(|&scope| {
                                let cases = &sums[scope];
                                estimate_by(drawn.len(), |index| cases[drawn[index] as usize])
                            })
                            .collect()
                    }
                    Population::Normal { sd } => {
                        normals.clear();
                        normals.extend((0..count).map(|_| sd * rng.normal()));
                        let estimate = estimate_by(normals.len(), |index| CaseSum {
                            sum: normals[index],
                            tuples: 1.0,
                        });
                        vec![estimate; scopes.len()]
                    }
                }
            },
        )
        .collect();
    (0..scopes.len())
        .map(|scope| per_study.iter().map(|study| study[scope]).collect())
        .collect()
}

/// The share of `studies` that reject at difference `difference`.
pub fn rejection_rate(studies: &[Option<Estimate>], difference: f64, criticals: &mut Criticals) -> f64 {
    if studies.is_empty() {
        return 0.0;
    }
    let rejected = studies
        .iter()
        .flatten()
        .filter(|estimate| criticals.rejects(estimate, difference))
        .count();
    rejected as f64 / studies.len() as f64
}

/// One evaluated number of cases: the simulated power and, on the same
/// studies, the rejection rate at difference 0.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    pub cases: u64,
    pub power: f64,
    pub type_i_error: f64,
}

/// What the search for the smallest number of cases found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The smallest `n ≤ max_cases` that meets the target (the first
    /// crossing: `n − 1` does not), or `None`.
    pub cases: Option<u64>,
    /// Where the search stopped: `cases`, or `max_cases` when not reached.
    pub evaluated: u64,
    /// The power there.
    pub power: f64,
    /// Every step the search evaluated, by `n`.
    pub steps: Vec<Step>,
}

/// Power of a scope as a function of the number of cases.
pub struct PowerFunction<'a> {
    pub population: &'a Population,
    pub scope: usize,
    pub difference: f64,
    pub simulation: Simulation,
    pub criticals: Criticals,
}

impl PowerFunction<'_> {
    /// The simulated power and type I error with `cases` cases.
    pub fn at(&mut self, cases: u64) -> Step {
        let studies = studies(self.population, &[self.scope], cases, &self.simulation);
        Step {
            cases,
            power: rejection_rate(&studies[0], self.difference, &mut self.criticals),
            type_i_error: rejection_rate(&studies[0], 0.0, &mut self.criticals),
        }
    }

    /// The smallest number of cases (2 … `max_cases`) whose power is at
    /// least `target` while the test holds its level — type I error at most
    /// `max_type_i_error` (with few cases, skewed pilots make the test
    /// over-reject, and that is no power): doubling from 2 until both hold,
    /// then bisection between the last size that failed and the first that
    /// met them.
    pub fn search(&mut self, target: f64, max_type_i_error: f64, max_cases: u64) -> Found {
        let mut steps = Vec::new();
        let meets = |step: &Step| step.power >= target && step.type_i_error <= max_type_i_error;
        let max_cases = max_cases.max(2);
        let mut below = 1_u64;
        let mut above = None;
        let mut last = None;
        let mut cases = 2_u64;
        loop {
            let step = self.at(cases);
            steps.push(step);
            if meets(&step) {
                above = Some(step);
                break;
            }
            below = cases;
            last = Some(step);
            if cases == max_cases {
                break;
            }
            cases = cases.saturating_mul(2).min(max_cases);
        }
        let Some(mut high) = above else {
            steps.sort_by_key(|step| step.cases);
            return Found {
                cases: None,
                evaluated: max_cases,
                power: last.map_or(0.0, |step| step.power),
                steps,
            };
        };
        while high.cases - below > 1 {
            let step = self.at(below + (high.cases - below) / 2);
            steps.push(step);
            if meets(&step) {
                high = step;
            } else {
                below = step.cases;
            }
        }
        steps.sort_by_key(|step| step.cases);
        Found {
            cases: Some(high.cases),
            evaluated: high.cases,
            power: high.power,
            steps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(sum: f64, tuples: f64) -> CaseSum {
        CaseSum { sum, tuples }
    }

    #[test]
    fn the_estimate_is_the_tuple_weighted_mean_with_the_cluster_robust_se() {
        // Three cases: d = (1, −0.5, 1.5), m = (2, 1, 3).
        // D̂ = 2 / 6 = 1/3; residuals 1 − 2/3 = 1/3, −0.5 − 1/3 = −5/6,
        // 1.5 − 1 = 1/2; Σ r² = 1/9 + 25/36 + 1/4 = 19/18;
        // SE = √(3/2 · 19/18) / 6 = √(19/12) / 6.
        let cases = [case(1.0, 2.0), case(-0.5, 1.0), case(1.5, 3.0)];
        let estimate = estimate(&cases).expect("estimate");
        assert!((estimate.difference - 1.0 / 3.0).abs() < 1e-15);
        assert!((estimate.se - (19.0_f64 / 12.0).sqrt() / 6.0).abs() < 1e-15);
        assert_eq!(estimate.clusters, 3);
    }

    #[test]
    fn cases_without_tuples_add_nothing_but_are_not_clusters() {
        let cases = [case(1.0, 2.0), case(0.0, 0.0), case(-0.5, 1.0), case(1.5, 3.0)];
        let with_empty = estimate(&cases).expect("estimate");
        let without = estimate(&[cases[0], cases[2], cases[3]]).expect("estimate");
        assert_eq!(with_empty, without);
        assert_eq!(estimate(&[case(1.0, 2.0), case(0.0, 0.0)]), None);
        assert_eq!(estimate(&[]), None);
    }

    #[test]
    fn equal_case_sizes_give_the_one_sample_t_test() {
        // m = 1: D̂ is the mean and SE = s / √n (sample SD s).
        let values = [0.2, -0.1, 0.4, 0.3, 0.0];
        let cases: Vec<CaseSum> = values.iter().map(|&value| case(value, 1.0)).collect();
        let estimate = estimate(&cases).expect("estimate");
        let mean = values.iter().sum::<f64>() / 5.0;
        let variance = values.iter().map(|value| (value - mean).powi(2)).sum::<f64>() / 4.0;
        assert!((estimate.difference - mean).abs() < 1e-15);
        assert!((estimate.se - (variance / 5.0).sqrt()).abs() < 1e-15);
        // t = 0.16 / (√(0.037) / √5) = 1.860; t_{0.975, 4} = 2.776: not rejected.
        let mut criticals = Criticals::new(0.05);
        assert!(!criticals.rejects(&estimate, 0.0));
        assert!((criticals.value(5) - 2.776_445_105_197_799).abs() < 1e-12);
        // At α = 0.2, t_{0.9, 4} = 1.533: rejected.
        assert!(Criticals::new(0.2).rejects(&estimate, 0.0));
    }

    #[test]
    fn no_spread_rejects_any_difference_but_not_zero() {
        let estimate = Estimate {
            difference: 1e-17,
            se: 0.0,
            clusters: 5,
        };
        let mut criticals = Criticals::new(0.05);
        assert!(!criticals.rejects(&estimate, 0.0));
        assert!(criticals.rejects(&estimate, 0.1));
        let one_case = Estimate {
            clusters: 1,
            ..estimate
        };
        assert!(!criticals.rejects(&one_case, 0.1));
    }

    #[test]
    fn studies_are_reproducible_and_nested() {
        let population = Population::Cases {
            scopes: vec![
                (0..50)
                    .map(|index| case(f64::from(index % 7) - 3.0, 2.0))
                    .collect(),
            ],
        };
        let simulation = Simulation {
            studies: 64,
            seed: 3,
            first_stream: 0,
        };
        let first = studies(&population, &[0], 40, &simulation);
        assert_eq!(first, studies(&population, &[0], 40, &simulation));
        // The studies of 40 cases are the first 40 draws of those of 80:
        // recompute study 0 of 40 cases by hand from its stream.
        let mut rng = Rng::new(3, 0);
        let Population::Cases { scopes } = &population else {
            unreachable!()
        };
        let drawn: Vec<CaseSum> = (0..40).map(|_| scopes[0][rng.below(50) as usize]).collect();
        assert_eq!(first[0][0], estimate(&drawn));
    }

    #[test]
    fn the_search_wants_the_test_to_hold_its_level() {
        // 29 cases with no difference and one with a difference of 1: a
        // study without that case has no spread (SE 0) and "detects" any
        // shift, also none — the type I error is about (29/30)^n, below 0.1
        // from n = 68 on.
        let mut cases = vec![case(0.0, 1.0); 29];
        cases.push(case(1.0, 1.0));
        let difference = 1.0 / 30.0;
        let centred: Vec<CaseSum> = cases
            .iter()
            .map(|case| CaseSum {
                sum: case.sum - difference * case.tuples,
                tuples: case.tuples,
            })
            .collect();
        let population = Population::Cases {
            scopes: vec![centred],
        };
        let mut function = PowerFunction {
            population: &population,
            scope: 0,
            difference: 0.2,
            simulation: Simulation {
                studies: 2_000,
                seed: 4,
                first_stream: 0,
            },
            criticals: Criticals::new(0.05),
        };
        let careless = function.search(0.8, 1.0, 10_000);
        assert_eq!(careless.cases, Some(2), "{careless:?}");
        assert!(careless.steps[0].type_i_error > 0.9);
        let found = function.search(0.8, 0.1, 10_000);
        let cases = found.cases.expect("reached");
        assert!(cases >= 50, "{found:?}");
        let step = function.at(cases);
        assert!(step.type_i_error <= 0.1 && step.power >= 0.8, "{step:?}");
    }

    #[test]
    fn the_search_finds_the_first_crossing() {
        // Stated: D = 0.5, sd = 1: the t test needs 34 cases for 80%
        // (noncentral t; the normal approximation says 31.4).
        let population = Population::Normal { sd: 1.0 };
        let mut function = PowerFunction {
            population: &population,
            scope: 0,
            difference: 0.5,
            simulation: Simulation {
                studies: 4_000,
                seed: 1,
                first_stream: 0,
            },
            criticals: Criticals::new(0.05),
        };
        let found = function.search(0.8, 1.0, 1_000);
        let cases = found.cases.expect("reached");
        assert!((31..=37).contains(&cases), "{found:?}");
        assert!(found.power >= 0.8);
        assert!(function.at(cases - 1).power < 0.8);
        let capped = function.search(0.8, 1.0, 20);
        assert_eq!(capped.cases, None);
        assert_eq!(capped.evaluated, 20);
        assert!(capped.power < 0.8 && capped.power > 0.4, "{capped:?}");
    }
}
