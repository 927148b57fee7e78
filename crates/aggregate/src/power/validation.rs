//! The validation simulation (issue 20's must-show: "the simulated power at
//! the reported n is within ±2 points of the target"): a known population,
//! the number of cases `cfeval power` reports for it (stated mode from the
//! population's true D and σ; pilot mode from a 3,000-case pilot drawn from
//! it), then fresh studies of that many cases drawn from the population
//! itself — not from the pilot — each put to the same test.
//!
//! The population: a case has 1–6 tuples (uniform), each in family A, B or
//! C and decided with probability 0.9 (so some cases have none); a case
//! latent `z ~ N(0, 1)` is shared by every tuple of the case and a tuple
//! latent `w ~ N(0, 0.5²)` by both subjects' answers to the tuple; subject
//! A updates with probability `p = logistic(−0.2 + z + w)`, B with the log
//! odds shifted by `shift`; a tuple that does not update acknowledges the
//! edit (½) with probability `(1 − p)/4`, else ignores it (0).

use rayon::prelude::*;

use super::simulate::{CaseSum, Criticals, Estimate, estimate};
use super::{Settings, Stated, pilot, plan_rows, plan_stated};
use crate::stats::Rng;

#[derive(Debug, Clone, Copy)]
struct Generator {
    base: f64,
    shift: f64,
    case_sd: f64,
    tuple_sd: f64,
    max_tuples: u32,
    decided: f64,
}

const FAMILIES: [&str; 3] = ["A", "B", "C"];

fn logistic(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The expected score at update probability `p`.
fn mean_score(p: f64) -> f64 {
    p + (1.0 - p) / 8.0
}

fn score(rng: &mut Rng, p: f64) -> f64 {
    let u = rng.unit();
    if u < p {
        1.0
    } else if u < p + (1.0 - p) / 4.0 {
        0.5
    } else {
        0.0
    }
}

impl Generator {
    fn with_shift(shift: f64) -> Self {
        Self {
            base: -0.2,
            shift,
            case_sd: 1.0,
            tuple_sd: 0.5,
            max_tuples: 6,
            decided: 0.9,
        }
    }

    /// One case's decided tuples: (family index, A's score, B's score).
    fn case(&self, rng: &mut Rng) -> Vec<(usize, f64, f64)> {
        let z = self.case_sd * rng.normal();
        let tuples = 1 + rng.below(self.max_tuples);
        let mut out = Vec::with_capacity(tuples as usize);
        for _ in 0..tuples {
            let family = rng.below(FAMILIES.len() as u32) as usize;
            let w = self.tuple_sd * rng.normal();
            let a = score(rng, logistic(self.base + z + w));
            let b = score(rng, logistic(self.base + self.shift + z + w));
            if rng.unit() < self.decided {
                out.push((family, a, b));
            }
        }
        out
    }

    /// A case's sums over the family `family` (all families: `None`).
    fn sums(tuples: &[(usize, f64, f64)], family: Option<usize>) -> CaseSum {
        tuples
            .iter()
            .filter(|(index, ..)| family.is_none_or(|family| family == *index))
            .fold(CaseSum::default(), |sums, (_, a, b)| CaseSum {
                sum: sums.sum + b - a,
                tuples: sums.tuples + 1.0,
            })
    }

    /// The true difference per decided tuple (B − A), by quadrature over
    /// the latent `v = z + w ~ N(0, case_sd² + tuple_sd²)`.
    fn true_difference(&self) -> f64 {
        const STEPS: usize = 20_000;
        let sd = (self.case_sd.powi(2) + self.tuple_sd.powi(2)).sqrt();
        let step = 24.0 * sd / STEPS as f64;
        (0..=STEPS)
            .map(|index| {
                let v = -12.0 * sd + step * index as f64;
                let density = (-0.5 * (v / sd).powi(2)).exp() / (sd * (2.0 * std::f64::consts::PI).sqrt());
                let weight = if index == 0 || index == STEPS { 0.5 } else { 1.0 };
                weight
                    * step
                    * density
                    * (mean_score(logistic(self.base + self.shift + v)) - mean_score(logistic(self.base + v)))
            })
            .sum()
    }

    /// σ of the per-case difference, `√E[(d − D m)²] / E[m]`, by Monte
    /// Carlo over `cases` cases (at the exact D).
    fn true_sd(&self, difference: f64, cases: u64, family: Option<usize>) -> f64 {
        let (squares, tuples) = (0..cases)
            .into_par_iter()
            .map(|case| {
                let sums = Self::sums(&self.case(&mut Rng::new(99, case)), family);
                ((sums.sum - difference * sums.tuples).powi(2), sums.tuples)
            })
            .reduce(|| (0.0, 0.0), |left, right| (left.0 + right.0, left.1 + right.1));
        (squares / cases as f64).sqrt() / (tuples / cases as f64)
    }

    /// A pilot of `cases` cases.
    fn pilot(&self, cases: u64, seed: u64) -> pilot::Pilot {
        let mut rng = Rng::new(seed, u64::MAX);
        let ids: Vec<String> = (0..cases).map(|case| format!("case-{case:05}")).collect();
        let mut tuples = Vec::new();
        for id in &ids {
            for (family, a, b) in self.case(&mut rng) {
                tuples.push(pilot::Tuple {
                    case_id: id.clone(),
                    family: FAMILIES[family].into(),
                    reference: a,
                    value: b,
                });
            }
        }
        let families: Vec<String> = FAMILIES.map(String::from).to_vec();
        pilot::Pilot {
            run: "validation".into(),
            judged: tuples.len() as u64,
            scopes: pilot::sum_cases(&ids, &tuples, &families),
            cases: ids,
        }
    }

    /// The share of `studies` fresh studies of `cases` cases that the test
    /// rejects, over the family `family` (all: `None`); with `z`, against
    /// the normal quantile instead of Student's t.
    fn rejection_rate(&self, cases: u64, studies: u64, family: Option<usize>, alpha: f64, z: bool) -> f64 {
        let estimates: Vec<Option<Estimate>> = (0..studies)
            .into_par_iter()
            .map(|study| {
                let mut rng = Rng::new(2_024, study);
                let sums: Vec<CaseSum> = (0..cases)
                    .map(|_| Self::sums(&self.case(&mut rng), family))
                    .collect();
                estimate(&sums)
            })
            .collect();
        let mut criticals = Criticals::new(alpha);
        let quantile = crate::stats::normal::quantile(1.0 - alpha / 2.0);
        let rejected = estimates
            .iter()
            .flatten()
            .filter(|estimate| {
                if z {
                    estimate.difference.abs() > quantile * estimate.se
                } else {
                    criticals.rejects(estimate, 0.0)
                }
            })
            .count();
        rejected as f64 / studies as f64
    }
}

/// Fresh studies per check (Monte Carlo SE of a power of 0.8: 0.004).
const FRESH: u64 = 10_000;
/// The number of cases a scope's plan found.
fn planned(row: &super::Row) -> u64 {
    row.cases.unwrap_or_else(|| panic!("not reached: {row:?}"))
}

#[test]
fn the_reported_number_of_cases_has_the_target_power_on_fresh_studies() {
    let settings = Settings {
        simulations: 10_000,
        seed: 5,
        ..Settings::default()
    };
    let population = Generator::with_shift(0.45);
    let difference = population.true_difference();
    let sd = population.true_sd(difference, 1_000_000, None);
    let sd_a = population.true_sd(difference, 1_000_000, Some(0));

    // (a) Stated mode with the population's true D and σ.
    let stated = plan_stated(&Stated { difference, sd }, &settings).expect("stated plan");
    let stated_cases = planned(&stated.rows[0]);
    let stated_power = population.rejection_rate(stated_cases, FRESH, None, settings.alpha, false);

    // (b) Pilot mode from a 3,000-case pilot, planned for the true D; the
    // family's plan from a 30,000-case pilot. A pilot's error in σ is the
    // plan's error (1% in σ is about a point of power), and a family's σ,
    // from a third of the tuples and many cases without one, is the
    // noisier: the large pilot keeps that apart from what is checked here,
    // the simulation; `over_many_pilots` measures the pilots' spread.
    let pilot_settings = Settings {
        difference: Some(difference),
        ..settings
    };
    let plan = |cases: u64, seed: u64| {
        let pilot = population.pilot(cases, seed);
        let (targets, resampled) = pilot::targets(&pilot, &pilot_settings);
        plan_rows(&resampled, targets, &pilot_settings)
    };
    let rows = plan(3_000, 17);
    let overall = &rows[0];
    let family_rows = plan(30_000, 18);
    let family_a = &family_rows[1];
    assert_eq!((overall.group.as_str(), family_a.group.as_str()), ("all", "A"));
    let pilot_cases = planned(overall);
    let pilot_power = population.rejection_rate(pilot_cases, FRESH, None, settings.alpha, false);
    let family_cases = planned(family_a);
    let family_power = population.rejection_rate(family_cases, FRESH, Some(0), settings.alpha, false);

    // Type I error: the same test on a population with no difference.
    let null = Generator::with_shift(0.0);
    assert!(null.true_difference().abs() < 1e-15);
    let size = null.rejection_rate(pilot_cases, FRESH, None, settings.alpha, false);

    let range = overall.normal_cases_range.expect("a pilot range");
    eprintln!("validation: pilot range of the normal-approximation n {range:?}");
    assert!(
        range[0].is_some_and(|low| low < stated_cases) && range[1].is_some_and(|high| high > stated_cases)
    );
    eprintln!(
        "validation: D = {difference:.5}, σ = {sd:.5}; stated n = {stated_cases} (normal {:?}) → power {stated_power:.4}; \
         pilot n = {pilot_cases} (pilot σ {:.5}, normal {:?}) → power {pilot_power:.4}, verified on the pilot {:.4}, \
         size on the pilot {:.4}; family A n = {family_cases} (σ {sd_a:.5}, pilot σ {:.5}, normal {:?}) → power {family_power:.4}; \
         size at n = {pilot_cases} on the population {size:.4}",
        stated.rows[0].normal_cases,
        overall.sd,
        overall.normal_cases,
        overall.verified_power.unwrap_or_default(),
        overall.type_i_error.unwrap_or_default(),
        family_a.sd,
        family_a.normal_cases,
    );
    for (what, power) in [
        ("stated", stated_power),
        ("pilot, overall", pilot_power),
        ("pilot, family A", family_power),
    ] {
        assert!(
            (power - settings.power).abs() <= 0.02,
            "{what}: power {power} on fresh studies is not within 2 points of {}",
            settings.power
        );
    }
    assert!((size - settings.alpha).abs() <= 0.01, "type I error {size}");
    let reported_size = overall.type_i_error.unwrap_or_default();
    assert!((reported_size - settings.alpha).abs() <= 0.015, "{reported_size}");
    // The three agree with one another and with the normal approximation.
    let normal = overall.normal_cases.unwrap_or_default() as f64;
    assert!(
        (pilot_cases as f64 / normal - 1.0).abs() < 0.1,
        "{pilot_cases} vs {normal}"
    );
    assert!((stated_cases as f64 / pilot_cases as f64 - 1.0).abs() < 0.1);
}

#[test]
fn student_t_keeps_the_size_with_few_cases_where_the_normal_quantile_does_not() {
    let null = Generator::with_shift(0.0);
    let t = null.rejection_rate(12, 20_000, None, 0.05, false);
    let z = null.rejection_rate(12, 20_000, None, 0.05, true);
    eprintln!("12 cases, no difference: t test rejects {t:.4}, z test {z:.4}");
    assert!((t - 0.05).abs() <= 0.012, "t: {t}");
    assert!(z > t + 0.01, "z {z} vs t {t}");
}

#[test]
fn stated_mode_matches_the_noncentral_t_power() {
    // scipy: n = 34, D/σ = 0.5, t_{0.975, 33}:
    // 1 − nct.cdf(c, 33, 0.5·√34) + nct.cdf(−c, 33, 0.5·√34) = 0.80778.
    let settings = Settings {
        simulations: 20_000,
        seed: 9,
        ..Settings::default()
    };
    let plan = plan_stated(
        &Stated {
            difference: 0.15,
            sd: 0.3,
        },
        &settings,
    )
    .expect("plan");
    let row = &plan.rows[0];
    let at_34 = row
        .curve
        .iter()
        .find(|point| point.cases == 34)
        .map(|point| point.power);
    let verified = row.verified_power.unwrap_or_default();
    eprintln!(
        "stated D/σ = 0.5: n = {:?}, power at 34 {at_34:?}, verified {verified:.4}",
        row.cases
    );
    assert_eq!(row.cases, Some(34));
    // Within 3 Monte Carlo SEs (0.0028) of the exact power at 34.
    assert!((verified - 0.80778).abs() < 0.0085, "{verified}");
}

/// The pilot-mode validation over many pilots of 3,000 cases, for
/// BENCHMARKS.md (about three minutes):
/// `cargo test -p cfeval-aggregate --lib power::validation -- --ignored --nocapture`.
/// Besides the power of each pilot's n on fresh studies, how often the
/// pilot's range of the normal-approximation n holds the n of the true σ.
#[test]
#[ignore = "about three minutes; run for BENCHMARKS.md"]
fn over_many_pilots() {
    const PILOTS: u64 = 40;
    let settings = Settings {
        simulations: 2_000,
        seed: 0,
        ..Settings::default()
    };
    let population = Generator::with_shift(0.45);
    let difference = population.true_difference();
    let sd = population.true_sd(difference, 1_000_000, None);
    let sd_a = population.true_sd(difference, 1_000_000, Some(0));
    let true_normal = |sd: f64| super::normal_cases(&settings, difference, sd).unwrap_or_default();
    let (true_overall, true_family) = (true_normal(sd), true_normal(sd_a));
    let null = Generator::with_shift(0.0);
    let covers = |row: &super::Row, truth: u64| matches!(row.normal_cases_range, Some([Some(low), high]) if low <= truth && high.is_none_or(|high| truth <= high));
    // Per pilot: overall power, family A power, type I error, range covers (overall, family).
    let mut results = Vec::new();
    for pilot_seed in 0..PILOTS {
        let pilot = population.pilot(3_000, 1_000 + pilot_seed);
        let pilot_settings = Settings {
            difference: Some(difference),
            seed: pilot_seed,
            ..settings
        };
        let (targets, resampled) = pilot::targets(&pilot, &pilot_settings);
        let rows = plan_rows(&resampled, targets, &pilot_settings);
        let (cases, family_cases) = (planned(&rows[0]), planned(&rows[1]));
        let power = population.rejection_rate(cases, 20_000, None, settings.alpha, false);
        let family_power = population.rejection_rate(family_cases, 20_000, Some(0), settings.alpha, false);
        let size = null.rejection_rate(cases, 20_000, None, settings.alpha, false);
        eprintln!(
            "pilot {pilot_seed}: overall n = {cases} → power {power:.4}, type I error {size:.4}; \
             family A n = {family_cases} → power {family_power:.4}"
        );
        results.push((
            power,
            family_power,
            size,
            covers(&rows[0], true_overall),
            covers(&rows[1], true_family),
        ));
    }
    let summary = |values: Vec<f64>| {
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let spread =
            values.iter().map(|value| (value - mean).powi(2)).sum::<f64>() / (values.len() - 1) as f64;
        let (low, high) = values.iter().fold((1.0_f64, 0.0_f64), |(low, high), &value| {
            (low.min(value), high.max(value))
        });
        (
            mean,
            format!(
                "mean {mean:.4}, SD {:.4}, range {low:.4}–{high:.4}",
                spread.sqrt()
            ),
        )
    };
    let (overall_mean, overall) = summary(results.iter().map(|result| result.0).collect());
    let (_, family) = summary(results.iter().map(|result| result.1).collect());
    let (size_mean, size) = summary(results.iter().map(|result| result.2).collect());
    let share = |covered: usize| covered as f64 / PILOTS as f64;
    eprintln!(
        "over {PILOTS} pilots of 3,000 cases (true D {difference:.5}; σ {sd:.5}, family A {sd_a:.5}): \
         overall power {overall}; family A power {family}; type I error {size}; \
         pilot range holds the true-σ n ({true_overall}, family A {true_family}) in {:.2} and {:.2} of pilots",
        share(results.iter().filter(|result| result.3).count()),
        share(results.iter().filter(|result| result.4).count()),
    );
    assert!((overall_mean - settings.power).abs() <= 0.01, "{overall}");
    assert!((size_mean - settings.alpha).abs() <= 0.005, "{size}");
}
