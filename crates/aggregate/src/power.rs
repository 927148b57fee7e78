//! `cfeval power`: how many cases a study needs to detect a CSS difference,
//! by simulating the study.
//!
//! **Designs.** *Paired*: subjects A and B on the same tuples (case,
//! intervention, sample), the difference B − A. *Threshold*: one subject's
//! CSS against a fixed threshold T, the difference CSS − T. *Stated*: no
//! pilot; a difference `D` and the standard deviation `σ` of the per-case
//! difference (one tuple mean per case).
//!
//! **The test** each simulated study applies is cfeval's case-level
//! analysis ([`simulate`]): the tuple-weighted mean difference over decided
//! tuples, a cluster-robust standard error over cases, and a two-sided t
//! test with G − 1 degrees of freedom (G: cases with a decided tuple).
//!
//! **The studies** are drawn from the pilot: `n` of its cases with
//! replacement, each with all of its tuples, every case's sum shifted to
//! the alternative (`d_i − D̂·m_i + D·m_i`, so the population's difference
//! is exactly `D` and its spread, within-case correlation, case sizes and
//! yield of decided tuples are the pilot's); in the stated mode, `n`
//! differences from N(D, σ²). Power(n) is the share of the `simulations`
//! studies that reject. Common random numbers (study `s` always draws from
//! stream `s`, and a study of `n + 1` cases extends the study of `n`) make
//! power(n) smooth in `n`; the smallest `n` with power ≥ the target is
//! found by doubling from 2 and then bisection, up to `max_cases` (beyond:
//! "not reached", with the power there). An `n` counts only where the test
//! does not grossly over-reject on the same studies (type I error at most
//! [`Plan::max_type_i_error`], 2α): with few cases a skewed pilot (a rare
//! score in a few of its cases) gives studies with no spread that "detect"
//! any difference, none included, and such power is no power; the row's
//! note says when that moved `n`, and when the test over-rejects somewhat
//! at the `n` reported (type I error above α by more than Monte Carlo
//! error: the power there is a little optimistic).
//!
//! **Checks beside it**, each on fresh studies (streams `simulations …
//! 2·simulations − 1`, so the search's selection does not flatter them):
//! the power at the `n` found (`verified_power`, with its Monte Carlo
//! standard error) and the rejection rate at D = 0 (`type_i_error`, which
//! should be near α); and the normal approximation
//! `((z_{1−α/2} + z_{power}) · σ / D)²`, with its range over bootstrap
//! resamples of the pilot (`normal_cases_range`: how far the pilot's own
//! sampling error moves the answer — a planned n is only as good as the
//! pilot's σ and, when it is the pilot's, its D).
//!
//! **Scopes**: overall (the CSS families' tuples) and each CSS family with
//! a decided tuple; the negative-control family is not CSS and never
//! enters, as in the aggregate stage. Every scope counts cases the same
//! way — the cases of the study, whether or not they have a decided tuple
//! in the scope — so the `n` of a family is the number of cases to run for
//! that family's test.
//!
//! `sd` (σ) is the standard deviation of the per-case difference that the
//! estimate's precision depends on: `√(Σ (d_i − D̂ m_i)² / (N − 1)) / m̄`
//! over the pilot's `N` cases (`m̄` their mean number of decided tuples);
//! with equal case sizes it is the SD of the per-case mean differences, and
//! it is what `--sd` states. The same inputs and seed give the same plan.

pub mod pilot;
pub mod simulate;
#[cfg(test)]
mod validation;

use std::path::PathBuf;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::stats::normal;
use simulate::{Criticals, Population, PowerFunction, Simulation};

/// The design of a pilot run.
#[derive(Debug, Clone, PartialEq)]
pub enum Design {
    /// B − A on the tuples both subjects decided.
    Paired { a: String, b: String },
    /// CSS − threshold.
    Threshold { subject: String, threshold: f64 },
}

/// A pilot run to plan from.
#[derive(Debug, Clone, PartialEq)]
pub struct PilotRun {
    pub run: PathBuf,
    pub judge: String,
    pub mode: String,
    pub design: Design,
}

/// A stated effect, without a pilot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stated {
    /// The CSS difference to detect.
    pub difference: f64,
    /// The standard deviation of the per-case difference.
    pub sd: f64,
}

/// Settings of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Settings {
    /// The power to reach (default 0.8).
    #[serde(rename = "target_power")]
    pub power: f64,
    /// The two-sided level of the test (default 0.05).
    pub alpha: f64,
    /// Simulated studies per number of cases (default 2,000).
    pub simulations: u64,
    pub seed: u64,
    /// The largest number of cases searched (default 100,000).
    pub max_cases: u64,
    /// The difference to detect; by default each scope's pilot difference.
    pub difference: Option<f64>,
    /// The number of cases a study is planned with: each scope also gets
    /// its power there ([`Row::planned_power`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_cases: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            power: 0.8,
            alpha: 0.05,
            simulations: 2_000,
            seed: 0,
            max_cases: 100_000,
            difference: None,
            planned_cases: None,
        }
    }
}

impl Settings {
    fn validate(&self) -> Result<()> {
        let unit = |name: &str, value: f64| {
            if value > 0.0 && value < 1.0 {
                Ok(())
            } else {
                Err(Error::Power(format!("{name} {value} is not in (0, 1)")))
            }
        };
        unit("power", self.power)?;
        unit("alpha", self.alpha)?;
        if self.simulations == 0 {
            return Err(Error::Power("simulations must be at least 1".into()));
        }
        if self.max_cases < 2 {
            return Err(Error::Power(format!(
                "max cases {} is below 2, the fewest a test can use",
                self.max_cases
            )));
        }
        if let Some(difference) = self.difference {
            check_difference(difference)?;
        }
        if self.planned_cases.is_some_and(|cases| cases < 2) {
            return Err(Error::Power(
                "planned cases: a test needs at least 2 cases".into(),
            ));
        }
        Ok(())
    }
}

fn check_difference(difference: f64) -> Result<()> {
    if !difference.is_finite() || difference.abs() > 1.0 {
        return Err(Error::Power(format!(
            "difference {difference} is not in [−1, 1] (CSS is on a 0–1 scale)"
        )));
    }
    if difference == 0.0 {
        return Err(Error::Power(
            "difference 0: there is nothing to detect; give a non-zero difference".into(),
        ));
    }
    Ok(())
}

/// One point of a power curve: the simulated power with `cases` cases and,
/// on the same studies, the rejection rate at difference 0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    pub cases: u64,
    pub power: f64,
    pub type_i_error: f64,
}

/// What the pilot shows in one scope.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PilotRow {
    /// Cases with a decided tuple in the scope.
    pub cases: u64,
    /// Decided (paired: matched) tuples.
    pub tuples: u64,
    /// CSS of subject A, or the threshold.
    pub reference: f64,
    /// CSS of subject B, or of the subject.
    pub value: f64,
    /// `value − reference`, tuple-weighted.
    pub difference: f64,
    /// Its cluster-robust standard error, and the two-sided p-value of the
    /// pilot's own t test (none with fewer than two cases).
    pub se: Option<f64>,
    pub p_value: Option<f64>,
}

/// The plan of one scope.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// `overall` or `family`.
    pub level: String,
    /// `all` or the family.
    pub group: String,
    pub pilot: Option<PilotRow>,
    /// The difference planned for (none: nothing to plan, see `note`).
    pub difference: Option<f64>,
    /// The SD of the per-case difference (see the module docs).
    pub sd: f64,
    /// The smallest number of cases with simulated power ≥ the target
    /// (none: not reached within `max_cases`, or nothing to plan).
    pub cases: Option<u64>,
    pub reached: bool,
    /// Where the powers below were simulated: `cases`, or `max_cases` when
    /// not reached.
    pub evaluated_cases: Option<u64>,
    /// The search's simulated power there.
    pub power: Option<f64>,
    /// The power there on fresh studies, and its Monte Carlo standard error.
    pub verified_power: Option<f64>,
    pub verified_se: Option<f64>,
    /// The rejection rate at difference 0 there, on the fresh studies.
    pub type_i_error: Option<f64>,
    /// The normal approximation `((z_{1−α/2} + z_{power}) · sd / difference)²`.
    pub normal_cases: Option<u64>,
    /// The pilot's own uncertainty: the 2.5% and 97.5% points of the normal
    /// approximation over 1,000 bootstrap resamples of the pilot's cases
    /// (its SD, and its difference when that is the one planned for); an
    /// upper end of none is unbounded (resamples with no difference).
    pub normal_cases_range: Option<[Option<u64>; 2]>,
    /// The power with [`Settings::planned_cases`] cases, on fresh studies,
    /// and its Monte Carlo standard error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_power: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_se: Option<f64>,
    /// The rejection rate at difference 0 on those studies: above
    /// [`Plan::max_type_i_error`], the planned power is not power.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub planned_type_i_error: Option<f64>,
    /// Why a scope has no plan, or what to keep in mind.
    pub note: Option<String>,
    /// Power against cases (the curve's grid and the search's steps).
    pub curve: Vec<CurvePoint>,
}

/// A whole plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// `paired`, `threshold` or `stated`.
    pub design: &'static str,
    pub run: Option<String>,
    pub run_dir: Option<PathBuf>,
    pub judge: Option<String>,
    pub mode: Option<String>,
    /// Paired: A then B; threshold: the subject.
    pub subjects: Vec<String>,
    pub threshold: Option<f64>,
    /// `stated` (`--difference`) or `pilot` (each scope's own).
    pub difference_from: &'static str,
    #[serde(flatten)]
    pub settings: Settings,
    /// The largest type I error (at difference 0, on the search's studies)
    /// a number of cases may have to count as reaching the target:
    /// `max(2α, α + 3 · √(α(1 − α)/simulations))`.
    pub max_type_i_error: f64,
    /// The pilot's cases, and its judged tuples in the CSS families.
    pub pilot_cases: Option<u64>,
    pub pilot_judged: Option<u64>,
    /// What each simulated study tests.
    pub test: String,
    pub rows: Vec<Row>,
}

/// The test, in words.
const TEST: &str = "two-sided t test (cases with a decided tuple − 1 df) of the tuple-weighted mean difference, cluster-robust SE over cases";

/// What to plan in one scope.
struct Target {
    level: String,
    group: String,
    pilot: Option<PilotRow>,
    difference: Option<f64>,
    sd: f64,
    range: Option<[Option<u64>; 2]>,
    note: Option<String>,
}

/// Plans from the pilot run.
#[tracing::instrument(skip_all, fields(stage = "power"))]
pub fn plan_pilot(pilot_run: &PilotRun, settings: &Settings) -> Result<Plan> {
    settings.validate()?;
    let (compared, subjects, threshold) = match &pilot_run.design {
        Design::Paired { a, b } => {
            if a == b {
                return Err(Error::Power(format!(
                    "the paired design needs two different subjects, got `{a}` twice"
                )));
            }
            (pilot::Compared::Paired { a, b }, vec![a.clone(), b.clone()], None)
        }
        Design::Threshold { subject, threshold } => {
            if !(0.0..=1.0).contains(threshold) {
                return Err(Error::Power(format!(
                    "threshold {threshold} is not on the CSS scale [0, 1]"
                )));
            }
            (
                pilot::Compared::Threshold {
                    subject,
                    threshold: *threshold,
                },
                vec![subject.clone()],
                Some(*threshold),
            )
        }
    };
    let pilot = pilot::read(&pilot_run.run, &pilot_run.judge, &pilot_run.mode, &compared)?;
    let (targets, population) = pilot::targets(&pilot, settings);
    let rows = plan_rows(&population, targets, settings);
    Ok(Plan {
        design: match pilot_run.design {
            Design::Paired { .. } => "paired",
            Design::Threshold { .. } => "threshold",
        },
        run: Some(pilot.run.clone()),
        run_dir: Some(pilot_run.run.clone()),
        judge: Some(pilot_run.judge.clone()),
        mode: Some(pilot_run.mode.clone()),
        subjects,
        threshold,
        difference_from: if settings.difference.is_some() {
            "stated"
        } else {
            "pilot"
        },
        settings: *settings,
        max_type_i_error: max_type_i_error(settings),
        pilot_cases: Some(pilot.cases.len() as u64),
        pilot_judged: Some(pilot.judged),
        test: TEST.into(),
        rows,
    })
}

/// Plans from a stated difference and SD.
#[tracing::instrument(skip_all, fields(stage = "power"))]
pub fn plan_stated(stated: &Stated, settings: &Settings) -> Result<Plan> {
    let settings = Settings {
        difference: Some(stated.difference),
        ..*settings
    };
    settings.validate()?;
    if !(stated.sd.is_finite() && stated.sd > 0.0) {
        return Err(Error::Power(format!(
            "sd {} is not a positive number (the standard deviation of the per-case difference)",
            stated.sd
        )));
    }
    let targets = vec![Target {
        level: "overall".into(),
        group: "all".into(),
        pilot: None,
        difference: Some(stated.difference),
        sd: stated.sd,
        range: None,
        note: None,
    }];
    let population = Population::Normal { sd: stated.sd };
    Ok(Plan {
        design: "stated",
        run: None,
        run_dir: None,
        judge: None,
        mode: None,
        subjects: Vec::new(),
        threshold: None,
        difference_from: "stated",
        settings,
        max_type_i_error: max_type_i_error(&settings),
        pilot_cases: None,
        pilot_judged: None,
        test: TEST.into(),
        rows: plan_rows(&population, targets, &settings),
    })
}

/// Differences this close to zero are none.
pub(crate) const NO_DIFFERENCE: f64 = 1e-12;

/// Points of the curve's grid: about 24, evenly spaced on a log scale from
/// 2 to `top`.
fn grid(top: u64) -> Vec<u64> {
    const POINTS: u32 = 24;
    let top = top.max(3);
    let ratio = (top as f64 / 2.0).ln() / f64::from(POINTS - 1);
    let mut points: Vec<u64> = (0..POINTS)
        .map(|index| ((2.0 * (ratio * f64::from(index)).exp()).round() as u64).clamp(2, top))
        .collect();
    points.push(top);
    points.sort_unstable();
    points.dedup();
    points
}

/// The largest type I error a number of cases may have (see
/// [`Plan::max_type_i_error`]).
fn max_type_i_error(settings: &Settings) -> f64 {
    (2.0 * settings.alpha).max(settings.alpha + 3.0 * monte_carlo_se(settings.alpha, settings.simulations))
}

/// The Monte Carlo standard error of a rejection rate `rate` over
/// `studies` studies.
fn monte_carlo_se(rate: f64, studies: u64) -> f64 {
    (rate * (1.0 - rate) / studies as f64).sqrt()
}

/// The normal-approximation number of cases.
fn normal_cases(settings: &Settings, difference: f64, sd: f64) -> Option<u64> {
    let z = normal::quantile(1.0 - settings.alpha / 2.0) + normal::quantile(settings.power);
    let cases = (z * sd / difference).powi(2).ceil();
    (cases.is_finite() && cases < 1e18).then(|| (cases as u64).max(2))
}

fn add_note(row: &mut Row, note: String) {
    row.note = Some(match row.note.take() {
        Some(earlier) => format!("{earlier}; {note}"),
        None => note,
    });
}

fn plan_rows(population: &Population, targets: Vec<Target>, settings: &Settings) -> Vec<Row> {
    let search = Simulation {
        studies: settings.simulations,
        seed: settings.seed,
        first_stream: 0,
    };
    let fresh = Simulation {
        first_stream: settings.simulations,
        ..search
    };
    let mut criticals = Criticals::new(settings.alpha);
    let mut rows = Vec::with_capacity(targets.len());
    for (scope, target) in targets.into_iter().enumerate() {
        let mut row = Row {
            level: target.level,
            group: target.group,
            pilot: target.pilot,
            difference: target.difference,
            sd: target.sd,
            cases: None,
            reached: false,
            evaluated_cases: None,
            power: None,
            verified_power: None,
            verified_se: None,
            type_i_error: None,
            normal_cases: None,
            normal_cases_range: target.range,
            planned_power: None,
            planned_se: None,
            planned_type_i_error: None,
            note: target.note,
            curve: Vec::new(),
        };
        if let Some(difference) = target.difference {
            tracing::info!(scope = %row.group, difference, "searching for the number of cases");
            let mut function = PowerFunction {
                population,
                scope,
                difference,
                simulation: search,
                criticals,
            };
            let bound = max_type_i_error(settings);
            let found = function.search(settings.power, bound, settings.max_cases);
            criticals = function.criticals;
            let studies = simulate::studies(population, &[scope], found.evaluated, &fresh);
            let verified = simulate::rejection_rate(&studies[0], difference, &mut criticals);
            let size = simulate::rejection_rate(&studies[0], 0.0, &mut criticals);
            row.cases = found.cases;
            row.reached = found.cases.is_some();
            row.evaluated_cases = Some(found.evaluated);
            row.power = Some(found.power);
            row.verified_power = Some(verified);
            row.verified_se = Some(monte_carlo_se(verified, settings.simulations));
            row.type_i_error = Some(size);
            row.normal_cases = normal_cases(settings, difference, row.sd);
            if let Some(planned) = settings.planned_cases {
                let studies = simulate::studies(population, &[scope], planned, &fresh);
                let power = simulate::rejection_rate(&studies[0], difference, &mut criticals);
                row.planned_power = Some(power);
                row.planned_se = Some(monte_carlo_se(power, settings.simulations));
                row.planned_type_i_error = Some(simulate::rejection_rate(&studies[0], 0.0, &mut criticals));
            }
            row.curve = found
                .steps
                .iter()
                .map(|step| CurvePoint {
                    cases: step.cases,
                    power: step.power,
                    type_i_error: step.type_i_error,
                })
                .collect();
            // Fewer cases that had the power only because the test
            // over-rejected there.
            let over_rejecting = found
                .steps
                .iter()
                .filter(|step| {
                    step.power >= settings.power
                        && step.type_i_error > bound
                        && found.cases.is_none_or(|cases| step.cases < cases)
                })
                .max_by_key(|step| step.cases);
            if let Some(step) = over_rejecting {
                let note = format!(
                    "with {} cases the power reached {:.2} only because the test over-rejects there (type I error {:.3} at difference 0); {} keeps its type I error ≤ {bound:.3}",
                    step.cases,
                    settings.power,
                    step.type_i_error,
                    if found.cases.is_some() {
                        "the n reported is the fewest cases where it also"
                    } else {
                        "no number of cases up to --max-cases reached the power where the test also"
                    }
                );
                add_note(&mut row, note);
            }
            let slack = settings.alpha + 3.0 * monte_carlo_se(settings.alpha, settings.simulations);
            if size > slack {
                add_note(
                    &mut row,
                    format!(
                        "the test over-rejects somewhat at {} cases (type I error {size:.3} against α {}): the pilot's differences are skewed, so this power is a little optimistic",
                        found.evaluated, settings.alpha
                    ),
                );
            }
        }
        rows.push(row);
    }
    // The curve: one grid for every scope, up to half again the largest n
    // reached (or max_cases when none was), the same studies for all.
    let planned: Vec<usize> = (0..rows.len())
        .filter(|&index| rows[index].difference.is_some())
        .collect();
    if planned.is_empty() {
        return rows;
    }
    let top = match planned.iter().filter_map(|&index| rows[index].cases).max() {
        Some(largest) => (largest + largest / 2).clamp(10, settings.max_cases),
        None => settings.max_cases,
    };
    for cases in grid(top) {
        let studies = simulate::studies(population, &planned, cases, &search);
        for (&index, studies) in planned.iter().zip(&studies) {
            let difference = rows[index].difference.unwrap_or_default();
            let power = simulate::rejection_rate(studies, difference, &mut criticals);
            let type_i_error = simulate::rejection_rate(studies, 0.0, &mut criticals);
            rows[index].curve.push(CurvePoint {
                cases,
                power,
                type_i_error,
            });
        }
    }
    for row in &mut rows {
        row.curve.sort_by_key(|point| point.cases);
        row.curve.dedup_by_key(|point| point.cases);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_outside_their_range_are_refused_with_the_name() {
        let stated = Stated {
            difference: 0.1,
            sd: 0.3,
        };
        let refused = |settings: Settings, stated: Stated| {
            plan_stated(&stated, &settings).expect_err("refused").to_string()
        };
        let base = Settings::default();
        assert!(refused(Settings { power: 1.0, ..base }, stated).contains("power 1 is not in (0, 1)"));
        assert!(refused(Settings { alpha: 0.0, ..base }, stated).contains("alpha 0 is not in (0, 1)"));
        assert!(
            refused(
                Settings {
                    simulations: 0,
                    ..base
                },
                stated
            )
            .contains("simulations")
        );
        assert!(refused(Settings { max_cases: 1, ..base }, stated).contains("max cases 1"));
        assert!(
            refused(
                base,
                Stated {
                    difference: 0.0,
                    ..stated
                }
            )
            .contains("nothing to detect")
        );
        assert!(
            refused(
                base,
                Stated {
                    difference: 1.5,
                    ..stated
                }
            )
            .contains("[−1, 1]")
        );
        assert!(refused(base, Stated { sd: 0.0, ..stated }).contains("sd 0 is not a positive number"));
        assert!(
            refused(
                base,
                Stated {
                    sd: f64::NAN,
                    ..stated
                }
            )
            .contains("sd NaN")
        );
    }

    #[test]
    fn a_stated_plan_is_reproducible_and_near_the_normal_approximation() {
        let settings = Settings {
            simulations: 1_000,
            ..Settings::default()
        };
        let stated = Stated {
            difference: -0.1,
            sd: 0.4,
        };
        let plan = plan_stated(&stated, &settings).expect("plan");
        assert_eq!(plan, plan_stated(&stated, &settings).expect("plan"));
        let row = &plan.rows[0];
        // (1.960 + 0.842)² · 16 = 125.6 → 126; the t test needs a little more.
        assert_eq!(row.normal_cases, Some(126));
        let cases = row.cases.expect("reached");
        assert!((118..=140).contains(&cases), "{row:?}");
        assert!(row.curve.windows(2).all(|pair| pair[0].cases < pair[1].cases));
        assert!(row.curve.iter().any(|point| point.cases == cases));
        let other_seed = plan_stated(&stated, &Settings { seed: 1, ..settings }).expect("plan");
        assert_ne!(other_seed.rows[0].curve, row.curve);
    }

    #[test]
    fn the_power_with_the_planned_cases_is_the_power_function_there() {
        let stated = Stated {
            difference: 0.1,
            sd: 0.4,
        };
        let at = |cases: u64| {
            let settings = Settings {
                simulations: 4_000,
                planned_cases: Some(cases),
                ..Settings::default()
            };
            let row = plan_stated(&stated, &settings).expect("plan").rows.remove(0);
            (
                row.planned_power.expect("planned power"),
                row.planned_se.expect("se"),
            )
        };
        // Normal approximation: Φ(0.1/0.4 · √n − 1.960); the t test is a
        // little below it.
        for (cases, normal) in [(60_u64, 0.490), (126, 0.801), (250, 0.977)] {
            let (power, se) = at(cases);
            assert!(
                power <= normal + 4.0 * se && power >= normal - 0.03 - 4.0 * se,
                "{cases} cases: {power} ± {se} against {normal}"
            );
        }
        assert!(at(60).0 < at(126).0);
        let refused = plan_stated(
            &stated,
            &Settings {
                planned_cases: Some(1),
                ..Settings::default()
            },
        )
        .expect_err("one case");
        assert!(refused.to_string().contains("at least 2 cases"), "{refused}");
        let unplanned = plan_stated(&stated, &Settings::default()).expect("plan");
        assert_eq!(unplanned.rows[0].planned_power, None);
    }

    #[test]
    fn not_reached_says_so_with_the_power_at_the_cap() {
        let settings = Settings {
            simulations: 500,
            max_cases: 50,
            ..Settings::default()
        };
        let plan = plan_stated(
            &Stated {
                difference: 0.05,
                sd: 0.5,
            },
            &settings,
        )
        .expect("plan");
        let row = &plan.rows[0];
        assert_eq!(
            (row.cases, row.reached, row.evaluated_cases),
            (None, false, Some(50))
        );
        assert!(row.power.expect("power") < 0.3, "{row:?}");
        assert_eq!(row.curve.last().map(|point| point.cases), Some(50));
    }

    #[test]
    fn the_grid_is_increasing_from_two_to_the_top() {
        let points = grid(1_000);
        assert_eq!(points.first(), Some(&2));
        assert_eq!(points.last(), Some(&1_000));
        assert!(points.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(grid(3), [2, 3]);
    }
}
