//! Synthetic per-case CSS sums with within-case correlation and a known
//! truth, and the coverage simulation of the bootstrap built on them.
//!
//! Each case draws a latent propensity `z ~ N(0, 1)` shared by all of its
//! tuples in every family (a subject that reads a chart well does so for
//! every edit of it). A case has family `f` with probability `presence`,
//! and then `interventions` tuples in it; a tuple updates (score 1) with
//! probability `p = logistic(logit + case_sd · z)`, else acknowledges the
//! edit (score ½) with probability `(1 − p) / 4`, else ignores it (0).
//!
//! The truth is what the estimators converge to: tuple-weighted CSS is
//! `Σ_f presence_f · interventions_f · m_f / Σ_f presence_f · interventions_f`
//! and family-balanced CSS is `mean_f m_f`, with `m_f = E[p + (1 − p)/8]`
//! over `z`, integrated numerically.

use rayon::prelude::*;
use serde::Serialize;

use crate::error::Result;
use crate::stats::{self, Cells, Options, Resampling, Rng, Statistic};

/// One family of the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Family {
    pub name: String,
    /// Tuples per case that has the family.
    pub interventions: usize,
    /// Log-odds of an update for the average case (`z = 0`).
    pub logit: f64,
    /// Probability that a case has the family at all.
    pub presence: f64,
}

/// The data-generating model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Model {
    pub families: Vec<Family>,
    /// Standard deviation of the case propensity on the log-odds scale.
    pub case_sd: f64,
    /// Cases per data set, uniform over this inclusive range.
    pub cases: (u32, u32),
}

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

impl Model {
    /// Five families shaped like the CSS paper's (A–E: 3, 1, 2, 2, 2
    /// interventions; update rates about 0.55, 0.45, 0.40, 0.05 and 0.50 for
    /// the average case; D, the blind spot, and some others not in every
    /// case), a case propensity of SD 1 on the log-odds scale, 50–200 cases.
    pub fn paper_like() -> Self {
        let family = |name: &str, interventions, rate: f64, presence| Family {
            name: name.to_string(),
            interventions,
            logit: logit(rate),
            presence,
        };
        Self {
            families: vec![
                family("A", 3, 0.55, 1.0),
                family("B", 1, 0.45, 0.9),
                family("C", 2, 0.40, 0.8),
                family("D", 2, 0.05, 0.6),
                family("E", 2, 0.50, 0.7),
            ],
            case_sd: 1.0,
            cases: (50, 200),
        }
    }

    /// The expected score of one tuple of `family`, over the propensity.
    pub fn family_mean(&self, family: &Family) -> f64 {
        // Trapezoid rule on [-10, 10]: the integrand is smooth and the
        // normal density negligible beyond.
        const STEPS: usize = 8_000;
        let step = 20.0 / STEPS as f64;
        let density = |z: f64| (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        (0..=STEPS)
            .map(|index| {
                let z = -10.0 + step * index as f64;
                let p = logistic(family.logit + self.case_sd * z);
                let weight = if index == 0 || index == STEPS { 0.5 } else { 1.0 };
                weight * step * density(z) * (p + (1.0 - p) / 8.0)
            })
            .sum()
    }

    /// The true tuple-weighted CSS.
    pub fn true_css(&self) -> f64 {
        let (num, den) = self.families.iter().fold((0.0, 0.0), |(num, den), family| {
            let weight = family.presence * family.interventions as f64;
            (num + weight * self.family_mean(family), den + weight)
        });
        num / den
    }

    /// The true family-balanced CSS.
    pub fn true_css_balanced(&self) -> f64 {
        let sum: f64 = self.families.iter().map(|family| self.family_mean(family)).sum();
        sum / self.families.len() as f64
    }

    /// Data set `index` under `seed`: one series of per-case sums per family
    /// (in the model's order), and a seed for its bootstrap.
    pub fn data_set(&self, seed: u64, index: u64) -> (Vec<Cells>, u64) {
        let mut rng = Rng::new(seed, index);
        let bootstrap_seed = rng.next_u64();
        let (low, high) = self.cases;
        let cases = low + rng.below(high - low + 1);
        let mut series: Vec<Cells> = self
            .families
            .iter()
            .map(|family| Cells {
                family: family.name.clone(),
                cells: Vec::new(),
            })
            .collect();
        for case in 0..cases {
            let z = rng.normal();
            for (family, cells) in self.families.iter().zip(&mut series) {
                if rng.unit() >= family.presence {
                    continue;
                }
                let p = logistic(family.logit + self.case_sd * z);
                let mut sum = 0.0;
                for _ in 0..family.interventions {
                    let u = rng.unit();
                    sum += if u < p {
                        1.0
                    } else if u < p + (1.0 - p) / 4.0 {
                        0.5
                    } else {
                        0.0
                    };
                }
                cells.cells.push((case, sum, family.interventions as f64));
            }
        }
        (series, bootstrap_seed)
    }
}

/// Settings of a coverage simulation.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Simulation {
    pub data_sets: u64,
    /// Bootstrap resamples per data set.
    pub resamples: usize,
    pub level: f64,
    pub seed: u64,
}

/// How often the intervals of one statistic covered the truth.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Coverage {
    pub percentile: f64,
    pub bca: f64,
    /// Mean width of the percentile interval.
    pub mean_width: f64,
    /// Standard deviation of the point estimate over the data sets (the
    /// true sampling SD, to set beside the widths).
    pub estimate_sd: f64,
}

/// Coverage of overall CSS (tuple-weighted) and family-balanced CSS under
/// one resampling design.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DesignCoverage {
    pub resampling: Resampling,
    pub css: Coverage,
    pub css_balanced: Coverage,
}

/// Runs `simulation` on `model` under each design in `designs`. Every design
/// sees the same data sets and the same bootstrap seeds.
pub fn coverage(
    model: &Model,
    simulation: &Simulation,
    designs: &[Resampling],
) -> Result<Vec<DesignCoverage>> {
    let truth = [model.true_css(), model.true_css_balanced()];
    let families = model.families.len();
    let statistics = [
        Statistic::ratio((0..families).collect()),
        Statistic::mean_of_ratios((0..families).map(|family| vec![family]).collect()),
    ];
    designs
        .iter()
        .map(|&resampling| {
            // Per data set and statistic: (value, percentile hit, bca hit, width).
            let outcomes: Vec<[(f64, bool, bool, f64); 2]> = (0..simulation.data_sets)
                .into_par_iter()
                .map(|index| -> Result<[(f64, bool, bool, f64); 2]> {
                    let (series, seed) = model.data_set(simulation.seed, index);
                    let design = stats::clusters::layout(resampling, &series)?.design;
                    let options = Options {
                        resamples: simulation.resamples,
                        seed,
                        level: simulation.level,
                    };
                    let result = stats::bootstrap(&design, &statistics, &options)?;
                    let judge = |position: usize| {
                        let estimate = result.estimates[position];
                        let covers = |interval: Option<(f64, f64)>| {
                            interval
                                .is_some_and(|(low, high)| low <= truth[position] && truth[position] <= high)
                        };
                        let width = estimate.percentile.map_or(f64::NAN, |(low, high)| high - low);
                        (
                            estimate.value,
                            covers(estimate.percentile),
                            covers(estimate.bca),
                            width,
                        )
                    };
                    Ok([judge(0), judge(1)])
                })
                .collect::<Result<_>>()?;
            let summarize = |position: usize| {
                let n = outcomes.len() as f64;
                let share = |hit: fn(&(f64, bool, bool, f64)) -> bool| {
                    outcomes.iter().filter(|one| hit(&one[position])).count() as f64 / n
                };
                let values: Vec<f64> = outcomes.iter().map(|one| one[position].0).collect();
                let mean = values.iter().sum::<f64>() / n;
                let variance = values.iter().map(|value| (value - mean).powi(2)).sum::<f64>() / (n - 1.0);
                Coverage {
                    percentile: share(|one| one.1),
                    bca: share(|one| one.2),
                    mean_width: outcomes.iter().map(|one| one[position].3).sum::<f64>() / n,
                    estimate_sd: variance.sqrt(),
                }
            };
            Ok(DesignCoverage {
                resampling,
                css: summarize(0),
                css_balanced: summarize(1),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truth_matches_a_large_sample() {
        let model = Model::paper_like();
        let (num, den, balanced) = (0..20u64).fold((0.0, 0.0, vec![(0.0, 0.0); 5]), |mut acc, index| {
            let (series, _) = model.data_set(99, index);
            for (family, cells) in series.iter().enumerate() {
                for &(_, sum, count) in &cells.cells {
                    acc.0 += sum;
                    acc.1 += count;
                    acc.2[family].0 += sum;
                    acc.2[family].1 += count;
                }
            }
            acc
        });
        // ~2,500 cases: the sample means are within a few hundredths.
        assert!((num / den - model.true_css()).abs() < 0.02);
        let sample_balanced = balanced.iter().map(|(sum, count)| sum / count).sum::<f64>() / 5.0;
        assert!((sample_balanced - model.true_css_balanced()).abs() < 0.02);
        // Without case variation the family mean is the closed form.
        let flat = Model {
            case_sd: 0.0,
            ..Model::paper_like()
        };
        let p = 0.55;
        assert!((flat.family_mean(&flat.families[0]) - (p + (1.0 - p) / 8.0)).abs() < 1e-9);
    }

    #[test]
    fn data_sets_are_seeded() {
        let model = Model::paper_like();
        assert_eq!(model.data_set(1, 4), model.data_set(1, 4));
        assert_ne!(model.data_set(1, 4).0, model.data_set(1, 5).0);
    }
}
