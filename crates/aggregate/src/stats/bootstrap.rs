//! The paired bootstrap over resampling units.
//!
//! Resampling units (cases) live in strata. A *series* is one quantity's
//! per-unit sums — numerator (sum of scores) and denominator (number of scored
//! tuples) for each case of its stratum — computed once from the judgments.
//! One replicate draws, in every stratum, as many unit indices as the stratum
//! has units, with replacement, and adds the drawn units' sums; every series
//! of a stratum sees the same draws, so estimates of different subjects,
//! modes and judges are paired. [`super::clusters`] lays the judgments out as
//! one stratum of cases (the default: a case's tuples in every family move
//! together) or as one stratum per family (the earlier, stratified design).
//! A [`Statistic`] is a weighted sum of ratios of summed series: a mean over
//! tuples, a mean of family means, or the paired difference of two such.
//!
//! Replicate `b` uses the random stream `(seed, b)`, so the result is the same
//! for the same seed however rayon splits the work. Intervals are the
//! percentile interval and the BCa interval (bias correction from the share of
//! replicates below the estimate, acceleration from the jackknife that leaves
//! one unit of one stratum out, as in Efron & Tibshirani and
//! `scipy.stats.bootstrap`).

use rayon::prelude::*;

use super::normal;
use super::rng::Rng;
use crate::error::{Error, Result};

/// Per-unit sums of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Index of the series' stratum.
    pub stratum: usize,
    /// Per-unit numerators (sum of scores), one per unit of the stratum.
    pub num: Vec<f64>,
    /// Per-unit denominators (number of scored tuples).
    pub den: Vec<f64>,
}

/// The resampling design: strata of units and the series defined over them.
#[derive(Debug, Clone)]
pub struct Design {
    strata: Vec<StratumBlock>,
    /// For each series (in the caller's order): its stratum and column.
    location: Vec<(usize, usize)>,
}

#[derive(Debug, Clone)]
struct StratumBlock {
    units: usize,
    /// Number of series living in this stratum.
    width: usize,
    /// Offset of this stratum's columns in the accumulator (in series).
    offset: usize,
    /// Unit-major rows of `[num, den]` pairs: `units × 2·width`.
    rows: Vec<f64>,
}

/// One term of a [`Statistic`]: `weight · ratio(series)`, where
/// `ratio(S)` is the sum of the numerators of the series in `S` over the sum
/// of their denominators.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub weight: f64,
    pub series: Vec<usize>,
}

/// A statistic: `Σ weight · ratio(series)` over its terms (undefined when
/// any ratio has a zero denominator). A plain ratio is one term of weight 1
/// (the mean over tuples); the mean of family means has one term per family
/// of weight 1/k; a paired delta subtracts one statistic's terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statistic {
    pub terms: Vec<Term>,
}

impl Statistic {
    /// A plain ratio over `series` (the mean over their tuples).
    pub fn ratio(series: Vec<usize>) -> Self {
        Self {
            terms: vec![Term { weight: 1.0, series }],
        }
    }

    /// The unweighted mean of the ratios of `groups` (e.g. of family means).
    pub fn mean_of_ratios(groups: Vec<Vec<usize>>) -> Self {
        let weight = 1.0 / groups.len().max(1) as f64;
        Self {
            terms: groups.into_iter().map(|series| Term { weight, series }).collect(),
        }
    }

    /// The paired difference `plus − minus`.
    pub fn difference(plus: &Statistic, minus: &Statistic) -> Self {
        let mut terms = plus.terms.clone();
        terms.extend(minus.terms.iter().map(|term| Term {
            weight: -term.weight,
            series: term.series.clone(),
        }));
        Self { terms }
    }

    /// Every series the statistic reads (with repeats across terms).
    pub fn series(&self) -> impl Iterator<Item = usize> + '_ {
        self.terms.iter().flat_map(|term| term.series.iter().copied())
    }
}

/// Bootstrap settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub resamples: usize,
    pub seed: u64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            resamples: 10_000,
            seed: 0,
            level: 0.95,
        }
    }
}

/// A point estimate with its intervals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// The estimate on the full data (NaN when its denominator is zero).
    pub value: f64,
    pub percentile: Option<(f64, f64)>,
    pub bca: Option<(f64, f64)>,
    /// Replicates with a defined value (a replicate may draw no tuple).
    pub valid_replicates: usize,
}

/// The outcome of one bootstrap run.
#[derive(Debug, Clone)]
pub struct BootstrapResult {
    pub estimates: Vec<Estimate>,
    /// Replicate values, replicate-major: `replicates[b * statistics + s]`.
    pub replicates: Vec<f64>,
    pub statistics: usize,
    pub resamples: usize,
}

impl BootstrapResult {
    /// Replicate `b`'s value of statistic `s`.
    pub fn replicate(&self, b: usize, s: usize) -> f64 {
        self.replicates[b * self.statistics + s]
    }
}

impl Design {
    /// Builds the design from the stratum sizes and the series.
    pub fn new(stratum_units: &[usize], series: &[Series]) -> Result<Self> {
        let mut widths = vec![0usize; stratum_units.len()];
        let mut location = Vec::with_capacity(series.len());
        for (index, one) in series.iter().enumerate() {
            let Some(&units) = stratum_units.get(one.stratum) else {
                return Err(Error::Design(format!(
                    "series {index} names stratum {} of {}",
                    one.stratum,
                    stratum_units.len()
                )));
            };
            if one.num.len() != units || one.den.len() != units {
                return Err(Error::Design(format!(
                    "series {index} has {}/{} unit sums, its stratum has {units} units",
                    one.num.len(),
                    one.den.len()
                )));
            }
            location.push((one.stratum, widths[one.stratum]));
            widths[one.stratum] += 1;
        }
        let mut offset = 0;
        let mut strata: Vec<StratumBlock> = stratum_units
            .iter()
            .zip(&widths)
            .map(|(&units, &width)| {
                let block = StratumBlock {
                    units,
                    width,
                    offset,
                    rows: vec![0.0; units * 2 * width],
                };
                offset += width;
                block
            })
            .collect();
        for (one, &(stratum, column)) in series.iter().zip(&location) {
            let block = &mut strata[stratum];
            let stride = 2 * block.width;
            for unit in 0..block.units {
                block.rows[unit * stride + 2 * column] = one.num[unit];
                block.rows[unit * stride + 2 * column + 1] = one.den[unit];
            }
        }
        Ok(Self { strata, location })
    }

    /// Number of series.
    pub fn series(&self) -> usize {
        self.location.len()
    }

    fn accumulator_len(&self) -> usize {
        2 * self.strata.iter().map(|block| block.width).sum::<usize>()
    }

    fn slot(&self, series: usize) -> usize {
        let (stratum, column) = self.location[series];
        2 * (self.strata[stratum].offset + column)
    }

    /// Sums over every unit once (the full-data totals).
    fn totals(&self) -> Vec<f64> {
        let mut totals = vec![0.0; self.accumulator_len()];
        for block in &self.strata {
            let stride = 2 * block.width;
            let target = &mut totals[2 * block.offset..2 * block.offset + stride];
            for row in block.rows.chunks_exact(stride.max(1)).take(block.units) {
                add_into(target, row);
            }
        }
        totals
    }

    /// One replicate's totals: every stratum resampled with replacement.
    /// The draws are counted first (`counts`, one slot per unit of the
    /// stratum), then each drawn unit's sums are added once, times its count.
    fn resample_into(&self, rng: &mut Rng, counts: &mut Vec<u32>, totals: &mut [f64]) {
        totals.fill(0.0);
        for block in &self.strata {
            if block.units == 0 {
                continue;
            }
            let stride = 2 * block.width;
            let units = u32::try_from(block.units).unwrap_or(u32::MAX);
            counts.clear();
            counts.resize(block.units, 0);
            for _ in 0..block.units {
                counts[rng.below(units) as usize] += 1;
            }
            if stride == 0 {
                continue;
            }
            let target = &mut totals[2 * block.offset..2 * block.offset + stride];
            for (unit, &count) in counts.iter().enumerate() {
                if count > 0 {
                    add_scaled(
                        target,
                        &block.rows[unit * stride..(unit + 1) * stride],
                        f64::from(count),
                    );
                }
            }
        }
    }

    /// Number of units in stratum `stratum`.
    pub fn units(&self, stratum: usize) -> Option<usize> {
        self.strata.get(stratum).map(|block| block.units)
    }

    /// Number of strata.
    pub fn strata(&self) -> usize {
        self.strata.len()
    }
}

#[inline]
fn add_scaled(target: &mut [f64], row: &[f64], scale: f64) {
    for (sum, value) in target.iter_mut().zip(row) {
        *sum += scale * value;
    }
}

#[inline]
fn add_into(target: &mut [f64], row: &[f64]) {
    for (sum, value) in target.iter_mut().zip(row) {
        *sum += value;
    }
}

/// Resolved accumulator slots of a statistic's terms.
struct Compiled {
    terms: Vec<(f64, Vec<usize>)>,
}

impl Compiled {
    fn new(design: &Design, statistic: &Statistic) -> Result<Self> {
        if statistic.terms.is_empty() || statistic.terms.iter().any(|term| term.series.is_empty()) {
            return Err(Error::Design("statistic with no series".into()));
        }
        let terms = statistic
            .terms
            .iter()
            .map(|term| {
                let slots = term
                    .series
                    .iter()
                    .map(|&index| {
                        if index < design.series() {
                            Ok(design.slot(index))
                        } else {
                            Err(Error::Design(format!(
                                "statistic names series {index} of {}",
                                design.series()
                            )))
                        }
                    })
                    .collect::<Result<Vec<usize>>>()?;
                Ok((term.weight, slots))
            })
            .collect::<Result<_>>()?;
        Ok(Self { terms })
    }

    fn evaluate(&self, totals: &[f64]) -> f64 {
        self.evaluate_with(|slot| totals[slot])
    }

    /// The value when accumulator slot `s` holds `total(s)`.
    fn evaluate_with(&self, total: impl Fn(usize) -> f64) -> f64 {
        let mut value = 0.0;
        for (weight, slots) in &self.terms {
            let (num, den) = slots.iter().fold((0.0, 0.0), |(num, den), &slot| {
                (num + total(slot), den + total(slot + 1))
            });
            if den <= 0.0 {
                return f64::NAN;
            }
            value += weight * (num / den);
        }
        value
    }

    fn touches(&self, range: std::ops::Range<usize>) -> bool {
        self.terms
            .iter()
            .any(|(_, slots)| slots.iter().any(|slot| range.contains(slot)))
    }
}

/// Runs the bootstrap for every statistic over one shared set of resamples.
pub fn bootstrap(design: &Design, statistics: &[Statistic], options: &Options) -> Result<BootstrapResult> {
    if options.resamples == 0 {
        return Err(Error::Design("the bootstrap needs at least one resample".into()));
    }
    if !(options.level > 0.0 && options.level < 1.0) {
        return Err(Error::Design(format!(
            "confidence level {} is not in (0, 1)",
            options.level
        )));
    }
    let compiled: Vec<Compiled> = statistics
        .iter()
        .map(|statistic| Compiled::new(design, statistic))
        .collect::<Result<_>>()?;
    let width = compiled.len();
    let totals = design.totals();
    let values: Vec<f64> = compiled
        .iter()
        .map(|statistic| statistic.evaluate(&totals))
        .collect();
    let mut replicates = vec![0.0; options.resamples * width];
    if width > 0 {
        const CHUNK: usize = 32;
        replicates
            .par_chunks_mut(CHUNK * width)
            .enumerate()
            .for_each(|(chunk, out)| {
                let mut scratch = vec![0.0; design.accumulator_len()];
                let mut counts = Vec::new();
                for (offset, row) in out.chunks_exact_mut(width).enumerate() {
                    let replicate = (chunk * CHUNK + offset) as u64;
                    let mut rng = Rng::new(options.seed, replicate);
                    design.resample_into(&mut rng, &mut counts, &mut scratch);
                    for (slot, statistic) in row.iter_mut().zip(&compiled) {
                        *slot = statistic.evaluate(&scratch);
                    }
                }
            });
    }
    let estimates: Vec<Estimate> = (0..width)
        .into_par_iter()
        .map(|index| {
            let mut column: Vec<f64> = (0..options.resamples)
                .map(|b| replicates[b * width + index])
                .filter(|value| value.is_finite())
                .collect();
            column.sort_unstable_by(f64::total_cmp);
            let value = values[index];
            let percentile = percentile_interval(&column, options.level);
            let bca = if value.is_finite() {
                let jackknife = jackknife(design, &compiled[index], &totals);
                bca_interval(value, &column, &jackknife, options.level)
            } else {
                None
            };
            Estimate {
                value,
                percentile,
                bca,
                valid_replicates: column.len(),
            }
        })
        .collect();
    Ok(BootstrapResult {
        estimates,
        replicates,
        statistics: width,
        resamples: options.resamples,
    })
}

/// Leave-one-unit-out values of a statistic, per stratum that it touches.
fn jackknife(design: &Design, statistic: &Compiled, totals: &[f64]) -> Vec<Vec<f64>> {
    let mut out = Vec::new();
    for block in &design.strata {
        let start = 2 * block.offset;
        let end = start + 2 * block.width;
        if block.units == 0 || !statistic.touches(start..end) {
            continue;
        }
        let stride = 2 * block.width;
        let values = (0..block.units)
            .map(|unit| {
                let row = &block.rows[unit * stride..(unit + 1) * stride];
                statistic.evaluate_with(|slot| {
                    if (start..end).contains(&slot) {
                        totals[slot] - row[slot - start]
                    } else {
                        totals[slot]
                    }
                })
            })
            .collect();
        out.push(values);
    }
    out
}

/// Linear-interpolation quantile (NumPy's default) of sorted values.
pub fn quantile_sorted(sorted: &[f64], probability: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&probability) {
        return None;
    }
    let position = probability * (sorted.len() - 1) as f64;
    let low = position.floor() as usize;
    let high = (low + 1).min(sorted.len() - 1);
    let weight = position - low as f64;
    Some(sorted[low] + weight * (sorted[high] - sorted[low]))
}

/// The percentile interval of sorted replicate values.
pub fn percentile_interval(sorted: &[f64], level: f64) -> Option<(f64, f64)> {
    let alpha = (1.0 - level) / 2.0;
    Some((
        quantile_sorted(sorted, alpha)?,
        quantile_sorted(sorted, 1.0 - alpha)?,
    ))
}

/// The BCa interval from the estimate, the sorted replicate values and the
/// jackknife values of each stratum (`scipy.stats.bootstrap`'s formulas).
pub fn bca_interval(estimate: f64, sorted: &[f64], jackknife: &[Vec<f64>], level: f64) -> Option<(f64, f64)> {
    let (low, high) = bca_levels(estimate, sorted, jackknife, level)?;
    Some((quantile_sorted(sorted, low)?, quantile_sorted(sorted, high)?))
}

/// The two quantile levels of the BCa interval.
pub fn bca_levels(estimate: f64, sorted: &[f64], jackknife: &[Vec<f64>], level: f64) -> Option<(f64, f64)> {
    if sorted.is_empty() {
        return None;
    }
    let below = sorted.partition_point(|&value| value < estimate);
    let at_or_below = sorted.partition_point(|&value| value <= estimate);
    let share = (below + at_or_below) as f64 / (2.0 * sorted.len() as f64);
    let z0 = normal::quantile(share);
    let mut numerator = 0.0;
    let mut denominator = 0.0;
    for values in jackknife {
        let finite: Vec<f64> = values.iter().copied().filter(|value| value.is_finite()).collect();
        if finite.is_empty() {
            continue;
        }
        let n = finite.len() as f64;
        let mean = finite.iter().sum::<f64>() / n;
        let (cubes, squares) = finite.iter().fold((0.0, 0.0), |(cubes, squares), value| {
            let u = (n - 1.0) * (mean - value);
            (cubes + u * u * u, squares + u * u)
        });
        numerator += cubes / n.powi(3);
        denominator += squares / n.powi(2);
    }
    let acceleration = if denominator > 0.0 {
        numerator / (6.0 * denominator.powf(1.5))
    } else {
        0.0
    };
    let alpha = (1.0 - level) / 2.0;
    let adjust = |z_alpha: f64| {
        let shifted = z0 + z_alpha;
        normal::cdf(z0 + shifted / (1.0 - acceleration * shifted))
    };
    let low = adjust(normal::quantile(alpha));
    let high = adjust(normal::quantile(1.0 - alpha));
    (low.is_finite() && high.is_finite()).then_some((low, high))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_stratum(values: &[f64]) -> Design {
        Design::new(
            &[values.len()],
            &[Series {
                stratum: 0,
                num: values.to_vec(),
                den: vec![1.0; values.len()],
            }],
        )
        .expect("design")
    }

    #[test]
    fn point_estimate_is_the_tuple_mean() {
        let design = Design::new(
            &[2, 1],
            &[
                Series {
                    stratum: 0,
                    num: vec![1.0, 0.5],
                    den: vec![2.0, 1.0],
                },
                Series {
                    stratum: 1,
                    num: vec![3.0],
                    den: vec![3.0],
                },
            ],
        )
        .expect("design");
        let options = Options {
            resamples: 50,
            seed: 1,
            level: 0.95,
        };
        let result = bootstrap(
            &design,
            &[Statistic::ratio(vec![0, 1]), Statistic::ratio(vec![1])],
            &options,
        )
        .expect("bootstrap");
        assert!((result.estimates[0].value - 4.5 / 6.0).abs() < 1e-12);
        // A stratum of one unit always resamples to itself.
        assert!((0..50).all(|b| result.replicate(b, 1) == 1.0));
    }

    #[test]
    fn paired_difference_of_identical_series_is_zero_in_every_replicate() {
        let values: Vec<f64> = (0..30).map(|i| f64::from(i % 3) / 2.0).collect();
        let design = Design::new(
            &[30],
            &[
                Series {
                    stratum: 0,
                    num: values.clone(),
                    den: vec![1.0; 30],
                },
                Series {
                    stratum: 0,
                    num: values,
                    den: vec![1.0; 30],
                },
            ],
        )
        .expect("design");
        let result = bootstrap(
            &design,
            &[Statistic::difference(
                &Statistic::ratio(vec![0]),
                &Statistic::ratio(vec![1]),
            )],
            &Options::default(),
        )
        .expect("bootstrap");
        assert!(result.replicates.iter().all(|&value| value == 0.0));
        assert_eq!(result.estimates[0].percentile, Some((0.0, 0.0)));
    }

    #[test]
    fn bad_designs_are_errors() {
        let bad = Series {
            stratum: 1,
            num: vec![1.0],
            den: vec![1.0],
        };
        assert!(Design::new(&[1], &[bad]).is_err());
        let design = one_stratum(&[1.0, 2.0]);
        assert!(bootstrap(&design, &[Statistic::ratio(vec![3])], &Options::default()).is_err());
        let no_resamples = Options {
            resamples: 0,
            ..Options::default()
        };
        assert!(bootstrap(&design, &[Statistic::ratio(vec![0])], &no_resamples).is_err());
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let sorted = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&sorted, 0.5), Some(2.5));
        assert_eq!(quantile_sorted(&sorted, 0.0), Some(1.0));
        assert_eq!(quantile_sorted(&sorted, 1.0), Some(4.0));
        assert!((quantile_sorted(&sorted, 0.025).expect("q") - 1.075).abs() < 1e-12);
    }

    #[test]
    fn bca_equals_percentile_without_bias_or_skew() {
        // Symmetric replicates centred on the estimate, symmetric jackknife.
        let sorted: Vec<f64> = (-500..=500).map(|i| f64::from(i) / 100.0).collect();
        let jackknife = vec![vec![-1.0, 0.0, 1.0]];
        let (low, high) = bca_interval(0.0, &sorted, &jackknife, 0.95).expect("bca");
        let (p_low, p_high) = percentile_interval(&sorted, 0.95).expect("percentile");
        assert!((low - p_low).abs() < 1e-6 && (high - p_high).abs() < 1e-6);
    }

    /// Two families scored on the same two cases: case 0 updates in both,
    /// case 1 in neither.
    fn two_families(joint: bool) -> Design {
        let (strata, second): (&[usize], usize) = if joint { (&[2], 0) } else { (&[2, 2], 1) };
        Design::new(
            strata,
            &[
                Series {
                    stratum: 0,
                    num: vec![1.0, 0.0],
                    den: vec![1.0, 1.0],
                },
                Series {
                    stratum: second,
                    num: vec![1.0, 0.0],
                    den: vec![1.0, 1.0],
                },
            ],
        )
        .expect("design")
    }

    #[test]
    fn one_stratum_of_cases_moves_a_case_in_every_family_together() {
        let delta = [Statistic::difference(
            &Statistic::ratio(vec![0]),
            &Statistic::ratio(vec![1]),
        )];
        let options = Options {
            resamples: 2_000,
            seed: 3,
            level: 0.95,
        };
        let joint = bootstrap(&two_families(true), &delta, &options).expect("bootstrap");
        assert!(joint.replicates.iter().all(|&value| value == 0.0));
        let stratified = bootstrap(&two_families(false), &delta, &options).expect("bootstrap");
        assert!(stratified.replicates.iter().any(|&value| value != 0.0));
    }

    #[test]
    fn two_cases_resample_to_the_hand_computed_distribution() {
        // Overall mean of the two families: 1 (case 0 twice), 0 (case 1
        // twice) or 1/2, with probabilities 1/4, 1/4 and 1/2.
        let result = bootstrap(
            &two_families(true),
            &[Statistic::ratio(vec![0, 1])],
            &Options {
                resamples: 8_000,
                seed: 9,
                level: 0.95,
            },
        )
        .expect("bootstrap");
        let share =
            |target: f64| result.replicates.iter().filter(|&&value| value == target).count() as f64 / 8_000.0;
        assert!((share(1.0) - 0.25).abs() < 0.02, "{}", share(1.0));
        assert!((share(0.0) - 0.25).abs() < 0.02, "{}", share(0.0));
        assert!((share(0.5) - 0.5).abs() < 0.02, "{}", share(0.5));
        assert!((share(1.0) + share(0.0) + share(0.5) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn mean_of_ratios_weights_each_group_equally() {
        // Family 0: 3 tuples, mean 1; family 1: 1 tuple, mean 0.
        let design = Design::new(
            &[1],
            &[
                Series {
                    stratum: 0,
                    num: vec![3.0],
                    den: vec![3.0],
                },
                Series {
                    stratum: 0,
                    num: vec![0.0],
                    den: vec![1.0],
                },
            ],
        )
        .expect("design");
        let statistics = [
            Statistic::ratio(vec![0, 1]),
            Statistic::mean_of_ratios(vec![vec![0], vec![1]]),
        ];
        let result = bootstrap(&design, &statistics, &Options::default()).expect("bootstrap");
        assert!((result.estimates[0].value - 0.75).abs() < 1e-12);
        assert!((result.estimates[1].value - 0.5).abs() < 1e-12);
        let empty = Statistic::mean_of_ratios(vec![vec![0], Vec::new()]);
        assert!(bootstrap(&design, &[empty], &Options::default()).is_err());
    }
}
