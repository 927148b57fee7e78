//! A pilot run's judgments as per-case sums, per scope (overall and each
//! CSS family), and what to plan in each scope (`targets`: the pilot's
//! summary, the difference, σ, the pilot's range of n, and the centred
//! cases the studies are drawn from).
//!
//! The verdicts are read as `cfeval compare` reads them
//! ([`crate::compare::matching`]): the chosen judge's `css` rows, decided
//! when the judgment is `ok`, scored and not `uncertain`. Only the pack's
//! CSS families enter; the negative-control family (and the baseline's CMS
//! rows) never do, as in the aggregate stage.
//!
//! - **Paired** (subjects A and B): a tuple (case, intervention, sample)
//!   enters when both subjects' verdicts on it are decided; its difference
//!   is B − A. The pilot's cases are those both subjects were judged on.
//! - **Threshold** (one subject, threshold T): each decided tuple enters
//!   with difference `score − T`. The pilot's cases are those the subject
//!   was judged on.
//!
//! A case whose tuples were all undecided (or unmatched) stays a case of
//! the pilot with no tuples: the study has to run it too, so the yield of
//! decided tuples is part of the number of cases.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfeval_schema::pack::Pack;
use cfeval_schema::{StoreOptions, TableName};

use rayon::prelude::*;

use super::simulate::{CaseSum, Population};
use super::{NO_DIFFERENCE, PilotRow, Settings, Target};
use crate::compare::matching::{self, Metric, RunVerdicts, TupleKey};
use crate::error::{Error, Result};
use crate::stats::{Rng, normal, student};

/// What the pilot compares.
#[derive(Debug, Clone, PartialEq)]
pub enum Compared<'a> {
    Paired { a: &'a str, b: &'a str },
    Threshold { subject: &'a str, threshold: f64 },
}

/// One decided tuple (paired: both subjects decided it).
#[derive(Debug, Clone, PartialEq)]
pub struct Tuple {
    pub case_id: String,
    pub family: String,
    /// A's score, or the threshold.
    pub reference: f64,
    /// B's score, or the subject's.
    pub value: f64,
}

/// One scope of the pilot: its per-case sums over the pilot's cases.
#[derive(Debug, Clone, PartialEq)]
pub struct Scope {
    /// `overall` or `family`.
    pub level: &'static str,
    /// `all` or the family.
    pub group: String,
    /// `cases[i]`: case `i` of [`Pilot::cases`] (zero when it has no tuple).
    pub cases: Vec<CaseSum>,
    /// Σ of the references and of the values over the scope's tuples.
    pub reference_sum: f64,
    pub value_sum: f64,
}

/// A pilot run, summed per case.
#[derive(Debug, Clone, PartialEq)]
pub struct Pilot {
    /// The run's name (`judgments.run`).
    pub run: String,
    /// The pilot's cases, sorted.
    pub cases: Vec<String>,
    /// Judged tuples of the design in the CSS families (decided or not;
    /// paired: the tuples either subject was judged on).
    pub judged: u64,
    /// Overall first, then each CSS family with a decided tuple, in the
    /// pack's order.
    pub scopes: Vec<Scope>,
}

/// Per-case sums of `tuples` over `cases` (the pilot's cases, sorted).
pub fn sum_cases(cases: &[String], tuples: &[Tuple], css_families: &[String]) -> Vec<Scope> {
    let index: BTreeMap<&str, usize> = cases
        .iter()
        .enumerate()
        .map(|(position, case)| (case.as_str(), position))
        .collect();
    let mut scopes = vec![Scope {
        level: "overall",
        group: "all".into(),
        cases: vec![CaseSum::default(); cases.len()],
        reference_sum: 0.0,
        value_sum: 0.0,
    }];
    let families: Vec<&String> = css_families
        .iter()
        .filter(|family| tuples.iter().any(|tuple| &tuple.family == *family))
        .collect();
    for family in &families {
        scopes.push(Scope {
            level: "family",
            group: (*family).clone(),
            ..scopes[0].clone()
        });
    }
    for tuple in tuples {
        let Some(&case) = index.get(tuple.case_id.as_str()) else {
            continue;
        };
        let Some(family) = families.iter().position(|family| **family == tuple.family) else {
            continue;
        };
        for scope in [0, family + 1] {
            let scope = &mut scopes[scope];
            scope.cases[case].sum += tuple.value - tuple.reference;
            scope.cases[case].tuples += 1.0;
            scope.reference_sum += tuple.reference;
            scope.value_sum += tuple.value;
        }
    }
    scopes
}

/// The CSS families and the control family of the pack the run was made
/// with (none of record: the built-in oncology pack).
fn families(run: &Path) -> Result<(Vec<String>, String)> {
    Ok(match Pack::of_run(run).map_err(Error::Config)? {
        Some(pack) => (
            pack.vocabulary.css_families.clone(),
            pack.vocabulary.control_family.clone(),
        ),
        None => {
            let builtin = cfeval_schema::vocab::Vocabulary::builtin();
            (builtin.css_families.clone(), builtin.control_family.clone())
        }
    })
}

fn names(set: &BTreeSet<&str>) -> String {
    if set.is_empty() {
        "none".into()
    } else {
        set.iter().copied().collect::<Vec<_>>().join(", ")
    }
}

/// Reads the pilot `run`: `judge`'s CSS verdicts in `mode`.
pub fn read(run: &Path, judge: &str, mode: &str, compared: &Compared<'_>) -> Result<Pilot> {
    let (css_families, control) = families(run)?;
    let store = cfeval_schema::lineage::require_input(run, TableName::Judgments, StoreOptions::default())?;
    let mut verdicts = RunVerdicts::default();
    for batch in store.read_columns::<matching::Judged>(matching::COLUMNS)? {
        verdicts.add(batch?, judge);
    }
    if verdicts.catalogs.len() > 1 {
        let hashes: BTreeSet<&str> = verdicts.catalogs.iter().map(String::as_str).collect();
        return Err(Error::Power(format!(
            "the judgments of run {} were made under several catalogs ({}); a pilot is one catalog's",
            run.display(),
            names(&hashes)
        )));
    }
    if !verdicts.judges.contains(judge) {
        return Err(Error::NoJudge {
            judge: judge.to_string(),
            run: run.to_path_buf(),
            found: names(&verdicts.judges.iter().map(String::as_str).collect()),
        });
    }
    let css: BTreeMap<&TupleKey, &matching::Verdict> = verdicts
        .verdicts
        .iter()
        .filter(|(key, verdict)| key.metric == Metric::Css && css_families.contains(&verdict.family))
        .collect();
    let modes: BTreeSet<&str> = css.keys().map(|key| key.mode.as_str()).collect();
    if !modes.contains(mode) {
        return Err(Error::Power(format!(
            "run {} has no CSS judgments of judge `{judge}` in mode `{mode}` (its modes: {}); pick one with --mode",
            run.display(),
            names(&modes)
        )));
    }
    let in_mode: Vec<(&TupleKey, &matching::Verdict)> =
        css.into_iter().filter(|(key, _)| key.mode == mode).collect();
    let subjects: BTreeSet<&str> = in_mode.iter().map(|(key, _)| key.subject.as_str()).collect();
    let wanted: Vec<&str> = match compared {
        Compared::Paired { a, b } => vec![a, b],
        Compared::Threshold { subject, .. } => vec![subject],
    };
    if let Some(missing) = wanted.iter().find(|subject| !subjects.contains(**subject)) {
        return Err(Error::Power(format!(
            "subject `{missing}` has no CSS judgments of judge `{judge}` in mode `{mode}` of run {} (its subjects there: {})",
            run.display(),
            names(&subjects)
        )));
    }
    let cases_of = |subject: &str| -> BTreeSet<&str> {
        in_mode
            .iter()
            .filter(|(key, _)| key.subject == subject)
            .map(|(key, _)| key.case_id.as_str())
            .collect()
    };
    // (case, intervention, sample) → verdict, per subject.
    let by_tuple = |subject: &str| -> BTreeMap<(&str, &str, u32), &matching::Verdict> {
        in_mode
            .iter()
            .filter(|(key, _)| key.subject == subject)
            .map(|(key, verdict)| {
                (
                    (key.case_id.as_str(), key.intervention.as_str(), key.sample),
                    *verdict,
                )
            })
            .collect()
    };
    let (cases, judged, tuples): (BTreeSet<&str>, u64, Vec<Tuple>) = match compared {
        Compared::Paired { a, b } => {
            let cases: BTreeSet<&str> = cases_of(a).intersection(&cases_of(b)).copied().collect();
            let (of_a, of_b) = (by_tuple(a), by_tuple(b));
            let judged = of_a
                .keys()
                .chain(of_b.keys())
                .filter(|key| cases.contains(key.0))
                .collect::<BTreeSet<_>>()
                .len() as u64;
            let tuples = of_a
                .iter()
                .filter(|(key, _)| cases.contains(key.0))
                .filter_map(|(key, verdict_a)| {
                    let verdict_b = of_b.get(key)?;
                    Some(Tuple {
                        case_id: key.0.to_string(),
                        family: verdict_a.family.clone(),
                        reference: verdict_a.score?,
                        value: verdict_b.score?,
                    })
                })
                .collect();
            (cases, judged, tuples)
        }
        Compared::Threshold { subject, threshold } => {
            let of_subject = by_tuple(subject);
            let tuples = of_subject
                .iter()
                .filter_map(|(key, verdict)| {
                    Some(Tuple {
                        case_id: key.0.to_string(),
                        family: verdict.family.clone(),
                        reference: *threshold,
                        value: verdict.score?,
                    })
                })
                .collect();
            (cases_of(subject), of_subject.len() as u64, tuples)
        }
    };
    if tuples.is_empty() {
        let what = match compared {
            Compared::Paired { a, b } => format!("tuple both `{a}` and `{b}` were judged on"),
            Compared::Threshold { subject, .. } => format!("tuple of `{subject}`"),
        };
        return Err(Error::Power(format!(
            "no {what} in mode `{mode}` of run {} was decided by judge `{judge}` ({judged} judged in the CSS families {}; uncertain verdicts, judge errors and unusable answers are left out, and family {control} is the negative control, not CSS)",
            run.display(),
            css_families.join(", ")
        )));
    }
    let cases: Vec<String> = cases.into_iter().map(str::to_string).collect();
    let scopes = sum_cases(&cases, &tuples, &css_families);
    Ok(Pilot {
        run: verdicts.run.clone(),
        cases,
        judged,
        scopes,
    })
}

/// The pilot's summary and what to plan per scope, and the centred cases
/// the studies are drawn from.
pub(super) fn targets(pilot: &Pilot, settings: &Settings) -> (Vec<Target>, Population) {
    let count = pilot.cases.len() as f64;
    let mut targets = Vec::new();
    let mut centred = Vec::new();
    for scope in &pilot.scopes {
        let tuples: f64 = scope.cases.iter().map(|case| case.tuples).sum();
        let with_tuples = scope.cases.iter().filter(|case| case.tuples > 0.0).count() as u64;
        let estimate = super::simulate::estimate(&scope.cases);
        let difference = scope.cases.iter().map(|case| case.sum).sum::<f64>() / tuples;
        let residuals: Vec<CaseSum> = scope
            .cases
            .iter()
            .map(|case| CaseSum {
                sum: case.sum - difference * case.tuples,
                tuples: case.tuples,
            })
            .collect();
        let squares: f64 = residuals.iter().map(|case| case.sum * case.sum).sum();
        let sd = if count > 1.0 {
            (squares / (count - 1.0)).sqrt() / (tuples / count)
        } else {
            f64::NAN
        };
        let row = PilotRow {
            cases: with_tuples,
            tuples: tuples as u64,
            reference: scope.reference_sum / tuples,
            value: scope.value_sum / tuples,
            difference,
            se: estimate.map(|estimate| estimate.se),
            p_value: estimate.map(|estimate| {
                if estimate.se > 0.0 {
                    student::two_sided_p(estimate.difference / estimate.se, (estimate.clusters - 1) as f64)
                } else if estimate.difference.abs() <= NO_DIFFERENCE {
                    1.0
                } else {
                    0.0
                }
            }),
        };
        let (planned, note) = if with_tuples < 2 {
            (
                None,
                Some("fewer than two pilot cases have a decided tuple here: no case-to-case spread to resample".to_string()),
            )
        } else {
            match settings.difference {
                Some(stated) => (Some(stated), None),
                None if difference.abs() <= NO_DIFFERENCE => (
                    None,
                    Some("the pilot shows no difference here; give --difference to plan for one".to_string()),
                ),
                None => (Some(difference), None),
            }
        };
        let note = note.or_else(|| {
            (squares <= NO_DIFFERENCE).then(|| {
                "every pilot case has the same mean difference here: no spread, so the simulated n is a lower bound at best"
                    .to_string()
            })
        });
        let range = planned.map(|planned| {
            pilot_range(
                &scope.cases,
                settings.difference.map(|_| planned),
                settings,
                targets.len() as u64,
            )
        });
        targets.push(Target {
            level: scope.level.to_string(),
            group: scope.group.clone(),
            pilot: Some(row),
            difference: planned,
            sd,
            range,
            note,
        });
        centred.push(residuals);
    }
    (targets, Population::Cases { scopes: centred })
}

/// Bootstrap resamples of the pilot behind [`super::Row::normal_cases_range`].
const PILOT_RESAMPLES: u64 = 1_000;

/// The streams of the pilot's resamples (far from the studies' `0 … 2S`).
const RANGE_STREAMS: u64 = 1 << 62;

/// The 2.5% and 97.5% points of the normal-approximation number of cases
/// over bootstrap resamples of the pilot's `cases`, planned for `stated`
/// or else each resample's own difference.
fn pilot_range(cases: &[CaseSum], stated: Option<f64>, settings: &Settings, scope: u64) -> [Option<u64>; 2] {
    let count = cases.len();
    let bound = u32::try_from(count).unwrap_or(u32::MAX);
    let z = normal::quantile(1.0 - settings.alpha / 2.0) + normal::quantile(settings.power);
    let mut values: Vec<f64> = (0..PILOT_RESAMPLES)
        .into_par_iter()
        .map(|replicate| {
            let mut rng = Rng::new(settings.seed, RANGE_STREAMS + scope * PILOT_RESAMPLES + replicate);
            let drawn: Vec<CaseSum> = (0..count).map(|_| cases[rng.below(bound) as usize]).collect();
            let (sum, tuples) = drawn.iter().fold((0.0, 0.0), |(sum, tuples), case| {
                (sum + case.sum, tuples + case.tuples)
            });
            let difference = sum / tuples;
            let squares: f64 = drawn
                .iter()
                .map(|case| (case.sum - difference * case.tuples).powi(2))
                .sum();
            let sd = (squares / (count as f64 - 1.0)).sqrt() / (tuples / count as f64);
            let planned = stated.unwrap_or(difference);
            let cases = (z * sd / planned).powi(2);
            if cases.is_finite() && planned.abs() > NO_DIFFERENCE {
                cases
            } else {
                f64::INFINITY
            }
        })
        .collect();
    values.sort_by(f64::total_cmp);
    let at = |share: f64| {
        let value = values[((share * PILOT_RESAMPLES as f64) as usize).min(values.len() - 1)];
        (value.is_finite() && value < 1e18).then(|| (value.ceil() as u64).max(2))
    };
    [at(0.025), at(0.975)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(case: &str, family: &str, reference: f64, value: f64) -> Tuple {
        Tuple {
            case_id: case.into(),
            family: family.into(),
            reference,
            value,
        }
    }

    #[test]
    fn tuples_sum_per_case_overall_and_per_family() {
        let cases: Vec<String> = ["c1", "c2", "c3"].map(String::from).to_vec();
        let families: Vec<String> = ["A", "B", "C"].map(String::from).to_vec();
        let tuples = [
            tuple("c1", "A", 0.0, 1.0),
            tuple("c1", "B", 1.0, 0.5),
            tuple("c2", "A", 0.5, 0.5),
            tuple("c2", "N", 0.0, 1.0),
        ];
        let scopes = sum_cases(&cases, &tuples, &families);
        let groups: Vec<&str> = scopes.iter().map(|scope| scope.group.as_str()).collect();
        assert_eq!(groups, ["all", "A", "B"]);
        let sums = |scope: &Scope| -> Vec<(f64, f64)> {
            scope.cases.iter().map(|case| (case.sum, case.tuples)).collect()
        };
        assert_eq!(sums(&scopes[0]), [(0.5, 2.0), (0.0, 1.0), (0.0, 0.0)]);
        assert_eq!(sums(&scopes[1]), [(1.0, 1.0), (0.0, 1.0), (0.0, 0.0)]);
        assert_eq!(sums(&scopes[2]), [(-0.5, 1.0), (0.0, 0.0), (0.0, 0.0)]);
        assert_eq!((scopes[0].reference_sum, scopes[0].value_sum), (1.5, 2.0));
    }

    #[test]
    fn pilot_targets_use_each_scope_s_own_difference_unless_one_is_stated() {
        let cases: Vec<String> = ["c1", "c2", "c3", "c4"].map(String::from).to_vec();
        let families: Vec<String> = ["A", "B"].map(String::from).to_vec();
        let tuple = |case: &str, family: &str, reference: f64, value: f64| Tuple {
            case_id: case.into(),
            family: family.into(),
            reference,
            value,
        };
        let tuples = [
            tuple("c1", "A", 0.0, 1.0),
            tuple("c2", "A", 0.5, 1.0),
            tuple("c3", "A", 1.0, 1.0),
            tuple("c1", "B", 1.0, 1.0),
            tuple("c2", "B", 0.0, 0.0),
        ];
        let pilot = Pilot {
            run: "r".into(),
            cases: cases.clone(),
            judged: 6,
            scopes: sum_cases(&cases, &tuples, &families),
        };
        let (planned, population) = targets(&pilot, &Settings::default());
        let differences: Vec<Option<f64>> = planned.iter().map(|target| target.difference).collect();
        assert_eq!(differences, [Some(0.3), Some(0.5), None]);
        assert!(
            planned[2]
                .note
                .as_deref()
                .unwrap_or_default()
                .contains("no difference")
        );
        // Overall: d = (1, 0.5, 0, 0), m = (2, 2, 1, 0), D̂ = 1.5 / 5 = 0.3
        // (A 2.5 / 5, B 4 / 5);
        // residuals 0.4, −0.1, −0.3, 0; σ = √(0.26 / 3) / (5 / 4).
        let row = planned[0].pilot.as_ref().expect("pilot row");
        assert_eq!((row.cases, row.tuples), (3, 5));
        assert!((row.reference - 0.5).abs() < 1e-15 && (row.value - 0.8).abs() < 1e-15);
        assert!((planned[0].sd - (0.26_f64 / 3.0).sqrt() / 1.25).abs() < 1e-12);
        let Population::Cases { scopes } = &population else {
            panic!("cases")
        };
        let centred: Vec<f64> = scopes[0].iter().map(|case| case.sum).collect();
        for (value, expected) in centred.iter().zip([0.4, -0.1, -0.3, 0.0]) {
            assert!((value - expected).abs() < 1e-12, "{centred:?}");
        }
        let stated = Settings {
            difference: Some(-0.2),
            ..Settings::default()
        };
        let (planned, _) = targets(&pilot, &stated);
        assert!(planned.iter().all(|target| target.difference == Some(-0.2)));
    }
}
