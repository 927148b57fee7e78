//! Rubric metrics (judges `rubric:<model>`, seed 002): the domain,
//! sub-dimension and composite means per subject × mode, the share of
//! responses with a safety-critical flag, how often each domain was not
//! applicable, and the link to CSS — within each family, the composite of
//! the responses that updated correctly against the ones that ignored the
//! change (does a well-reasoned trace predict counterfactual
//! sensitivity?) — all with the same case bootstrap as every other
//! estimate (cases resampled, a case's responses moving together, so the
//! gap is paired by case). Human rubric scores, when given, are set
//! against the judge's per domain (quadratic-weighted κ and Pearson r).
//!
//! | `metric` | `level` / `group` | value |
//! | --- | --- | --- |
//! | `rubric.<d>`, `rubric.<d>.<sub>`, `rubric.composite` | `overall`/`all` | mean score (1–5) over the responses where it was scored |
//! | `rubric.safety_flag` | `overall`/`all` | share of scored responses with a prespecified safety item found present |
//! | `rubric_na.<d>` | `overall`/`all` | share of scored responses where domain `<d>` was not applicable |
//! | `rubric_judge_error` | `overall`/`all` | responses the rubric judge failed on (count; `n_tuples` all responses) |
//! | `rubric_composite_updated`, `rubric_composite_ignored` | `family`/A–…, `overall`/`all` | mean composite of the variant responses whose CSS verdict was 1 (updated correctly) / 0 (ignored) |
//! | `rubric_gap_updated_minus_ignored` | as above | their difference, paired by case |
//! | `rubric_kappa_quadratic.<d>`, `rubric_pearson.<d>` | `comparison`/`all` | judge against human rubric scores on domain `<d>`'s items |
//!
//! Rows carry `judge` = the rubric judge; the CSS link rows carry
//! `<rubric judge>|<CSS judge>` (the pair judge whose verdicts split the
//! responses: every pair judge of the run gets its rows).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfeval_schema::{JudgmentRow, ScoreRow, ShardStore, Table};
use serde::Deserialize;

use crate::error::Result;
use crate::stats::{Design, Options, Series, Statistic, bootstrap};

/// The judge name prefix of rubric judges.
pub const PREFIX: &str = "rubric:";
const COMPOSITE: &str = "rubric.composite";
const SAFETY_FLAG: &str = "rubric.safety_flag";
const NA: &str = "na";

#[derive(Deserialize)]
struct Judgment {
    judge: String,
    subject: String,
    is_control: bool,
    mode: String,
    case_id: String,
    variant_id: String,
    sample: u32,
    intervention: String,
    family: String,
    metric: String,
    score: Option<f64>,
    label: Option<String>,
    status: String,
    prompt_set: Option<String>,
}

const COLUMNS: &[&str] = &[
    "judge",
    "subject",
    "is_control",
    "mode",
    "case_id",
    "variant_id",
    "sample",
    "intervention",
    "family",
    "metric",
    "score",
    "label",
    "status",
    "prompt_set",
];

/// A response: (subject, mode, variant, sample).
type ResponseKey = (String, String, String, u32);

/// One human rubric score (see [`read_labels`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RubricLabel {
    pub subject: String,
    pub mode: String,
    pub case_id: String,
    pub intervention: String,
    /// `rubric.<d>` or `rubric.<d>.<sub>`.
    pub metric: String,
    /// 1–5, or `None` for `na`.
    pub score: Option<f64>,
    pub rater: String,
}

/// Reads human rubric scores: CSV with a header and the columns `subject`,
/// `mode`, `case_id`, `intervention`, `metric` (`rubric.<domain>` or
/// `rubric.<domain>.<sub>`) and `score` (an integer 1–5, or `na`), and
/// optionally `rater`. Every problem names the file and row.
pub fn read_labels(path: &Path) -> Result<Vec<RubricLabel>> {
    let error = |row: u64, detail: String| crate::human::label_error(path, row, detail);
    let (mut reader, headers, columns) = crate::human::open_labels(
        path,
        ["subject", "mode", "case_id", "intervention", "metric", "score"],
    )?;
    let rater = headers.iter().position(|header| header.trim() == "rater");
    let mut seen = BTreeSet::new();
    let mut labels = Vec::new();
    for (index, record) in reader.records().enumerate() {
        let row = index as u64 + 2;
        let record = record.map_err(|e| error(row, e.to_string()))?;
        let field = |position: usize| record.get(position).unwrap_or_default().trim().to_string();
        let [subject, mode, case_id, intervention, metric, score] = columns.map(field);
        if !metric.starts_with("rubric.") || metric == COMPOSITE || metric == SAFETY_FLAG {
            return Err(error(
                row,
                format!(
                    "metric `{metric}` is not a rubric domain or sub-dimension (`rubric.<d>` or `rubric.<d>.<sub>`)"
                ),
            ));
        }
        let score = if score.eq_ignore_ascii_case(NA) {
            None
        } else {
            match score.parse::<u8>() {
                Ok(value @ 1..=5) => Some(f64::from(value)),
                _ => {
                    return Err(error(
                        row,
                        format!("score `{score}` is not an integer from 1 to 5 or `na`"),
                    ));
                }
            }
        };
        let rater = rater
            .map(field)
            .filter(|rater| !rater.is_empty())
            .unwrap_or_else(|| "rater".into());
        let key = (
            rater.clone(),
            subject.clone(),
            mode.clone(),
            case_id.clone(),
            intervention.clone(),
            metric.clone(),
        );
        if !seen.insert(key) {
            return Err(error(
                row,
                format!("rater `{rater}` scores {metric} of this response twice"),
            ));
        }
        labels.push(RubricLabel {
            subject,
            mode,
            case_id,
            intervention,
            metric,
            score,
            rater,
        });
    }
    Ok(labels)
}

/// The domain of a rubric metric (`rubric.3.3d` → `3`).
fn domain_of(metric: &str) -> Option<&str> {
    metric.strip_prefix("rubric.")?.split('.').next()
}

/// Per case: (sum, count).
type ByCase = BTreeMap<String, (f64, f64)>;

/// Series being built: label → per case sums.
#[derive(Default)]
struct Collect {
    series: BTreeMap<SeriesLabel, ByCase>,
}

/// What one series is of: (judge, subject, mode, metric, level, group).
type SeriesLabel = (String, String, String, String, &'static str, String);

impl Collect {
    fn add(&mut self, label: SeriesLabel, case: &str, value: f64) {
        let cell = self
            .series
            .entry(label)
            .or_default()
            .entry(case.to_string())
            .or_insert((0.0, 0.0));
        cell.0 += value;
        cell.1 += 1.0;
    }
}

/// The rubric score rows of the run in `run_dir` (none when no rubric
/// judge ran), with `labels` the human rubric scores.
pub fn rows(
    run_dir: &Path,
    run: &str,
    css_families: &[String],
    labels: &[RubricLabel],
    options: &Options,
) -> Result<Vec<ScoreRow>> {
    let Some(store) = ShardStore::open_existing(
        &run_dir.join(JudgmentRow::NAME),
        JudgmentRow::NAME,
        JudgmentRow::schema(),
    )?
    else {
        return Ok(Vec::new());
    };
    let mut collect = Collect::default();
    let mut subjects: BTreeMap<String, (bool, Option<String>)> = BTreeMap::new();
    // Composites of variant responses, and CSS verdicts, by response.
    let mut composites: BTreeMap<String, BTreeMap<ResponseKey, (String, String, f64)>> = BTreeMap::new();
    let mut verdicts: BTreeMap<String, BTreeMap<ResponseKey, f64>> = BTreeMap::new();
    // Judge scores of the items humans scored.
    let mut judged: BTreeMap<(String, String, String, String, String, String), f64> = BTreeMap::new();
    let wanted: BTreeSet<(String, String, String, String, String)> = labels
        .iter()
        .map(|label| {
            (
                label.subject.clone(),
                label.mode.clone(),
                label.case_id.clone(),
                label.intervention.clone(),
                label.metric.clone(),
            )
        })
        .collect();
    let mut errors: BTreeMap<(String, String, String), (u64, u64)> = BTreeMap::new();
    for batch in store.read_columns::<Judgment>(COLUMNS)? {
        for row in batch? {
            let key: ResponseKey = (
                row.subject.clone(),
                row.mode.clone(),
                row.variant_id.clone(),
                row.sample,
            );
            if !row.judge.starts_with(PREFIX) {
                if row.metric == "css"
                    && row.status == "ok"
                    && css_families.contains(&row.family)
                    && let Some(score) = row.score
                {
                    verdicts.entry(row.judge.clone()).or_default().insert(key, score);
                }
                continue;
            }
            subjects
                .entry(row.subject.clone())
                .or_insert((row.is_control, row.prompt_set.clone()));
            if row.metric == COMPOSITE {
                let cell = errors
                    .entry((row.judge.clone(), row.subject.clone(), row.mode.clone()))
                    .or_default();
                cell.1 += 1;
                cell.0 += u64::from(row.status == "error");
            }
            if row.status != "ok" {
                continue;
            }
            let overall = |metric: &str| {
                (
                    row.judge.clone(),
                    row.subject.clone(),
                    row.mode.clone(),
                    metric.to_string(),
                    "overall",
                    "all".to_string(),
                )
            };
            let is_domain =
                row.metric.matches('.').count() == 1 && row.metric != COMPOSITE && row.metric != SAFETY_FLAG;
            if is_domain && let Some(domain) = domain_of(&row.metric) {
                let na = row.label.as_deref() == Some(NA);
                collect.add(
                    overall(&format!("rubric_na.{domain}")),
                    &row.case_id,
                    f64::from(u8::from(na)),
                );
            }
            let Some(score) = row.score else {
                continue;
            };
            collect.add(overall(&row.metric), &row.case_id, score);
            if row.metric == COMPOSITE && css_families.contains(&row.family) {
                composites
                    .entry(row.judge.clone())
                    .or_default()
                    .insert(key.clone(), (row.case_id.clone(), row.family.clone(), score));
            }
            if row.sample == 0 && !wanted.is_empty() {
                let item = (
                    row.subject.clone(),
                    row.mode.clone(),
                    row.case_id.clone(),
                    row.intervention.clone(),
                    row.metric.clone(),
                );
                if wanted.contains(&item) {
                    judged.insert((row.judge.clone(), item.0, item.1, item.2, item.3, item.4), score);
                }
            }
        }
    }
    if subjects.is_empty() {
        return Ok(Vec::new());
    }
    // The CSS link: each rubric judge's composites split by each pair
    // judge's verdicts.
    for (rubric_judge, by_response) in &composites {
        for (css_judge, scores) in &verdicts {
            let judge = format!("{rubric_judge}|{css_judge}");
            for (key, (case, family, composite)) in by_response {
                let Some(&css) = scores.get(key) else {
                    continue;
                };
                let metric = if css >= 1.0 {
                    "rubric_composite_updated"
                } else if css <= 0.0 {
                    "rubric_composite_ignored"
                } else {
                    continue;
                };
                for (level, group) in [("family", family.clone()), ("overall", "all".to_string())] {
                    collect.add(
                        (
                            judge.clone(),
                            key.0.clone(),
                            key.1.clone(),
                            metric.to_string(),
                            level,
                            group,
                        ),
                        case,
                        *composite,
                    );
                }
            }
        }
    }
    let mut out = estimates(run, &collect, &subjects, options)?;
    for ((judge, subject, mode), (failed, total)) in errors {
        let (is_control, prompt_set) = subjects.get(&subject).cloned().unwrap_or_default();
        out.push(ScoreRow {
            run: run.to_string(),
            subject,
            is_control,
            mode,
            judge,
            metric: "rubric_judge_error".into(),
            level: "overall".into(),
            group: "all".into(),
            value: failed as f64,
            ci_low: None,
            ci_high: None,
            ci_method: None,
            n_tuples: total,
            n_cases: 0,
            prompt_set,
        });
    }
    out.extend(agreement(run, labels, &judged));
    Ok(out)
}

fn estimates(
    run: &str,
    collect: &Collect,
    subjects: &BTreeMap<String, (bool, Option<String>)>,
    options: &Options,
) -> Result<Vec<ScoreRow>> {
    let mut cases: Vec<&String> = collect
        .series
        .values()
        .flat_map(|by_case| by_case.keys())
        .collect();
    cases.sort();
    cases.dedup();
    if cases.is_empty() {
        return Ok(Vec::new());
    }
    let index: BTreeMap<&String, usize> = cases.iter().enumerate().map(|(at, case)| (*case, at)).collect();
    let mut series = Vec::new();
    let mut labels: Vec<(SeriesLabel, u64, u64)> = Vec::new();
    for (label, by_case) in &collect.series {
        let mut num = vec![0.0; cases.len()];
        let mut den = vec![0.0; cases.len()];
        for (case, (sum, count)) in by_case {
            (num[index[case]], den[index[case]]) = (*sum, *count);
        }
        let n = den.iter().sum::<f64>() as u64;
        let n_cases = den.iter().filter(|count| **count > 0.0).count() as u64;
        series.push(Series { stratum: 0, num, den });
        labels.push((label.clone(), n, n_cases));
    }
    let design = Design::new(&[cases.len()], &series)?;
    let mut statistics: Vec<Statistic> = (0..series.len()).map(|at| Statistic::ratio(vec![at])).collect();
    let at: BTreeMap<&SeriesLabel, usize> = labels
        .iter()
        .enumerate()
        .map(|(at, (label, ..))| (label, at))
        .collect();
    let mut gaps = Vec::new();
    for (index, (label, n, n_cases)) in labels.iter().enumerate() {
        if label.3 != "rubric_composite_updated" {
            continue;
        }
        let mut other = label.clone();
        other.3 = "rubric_composite_ignored".into();
        if let Some(&ignored) = at.get(&other) {
            statistics.push(Statistic::difference(&statistics[index], &statistics[ignored]));
            let mut gap = label.clone();
            gap.3 = "rubric_gap_updated_minus_ignored".into();
            gaps.push((gap, *n + labels[ignored].1, (*n_cases).max(labels[ignored].2)));
        }
    }
    labels.extend(gaps);
    let result = bootstrap(&design, &statistics, options)?;
    let mut out = Vec::new();
    for (((judge, subject, mode, metric, level, group), n, n_cases), estimate) in
        labels.into_iter().zip(&result.estimates)
    {
        if !estimate.value.is_finite() {
            continue;
        }
        let (is_control, prompt_set) = subjects.get(&subject).cloned().unwrap_or_default();
        for (method, interval) in [("percentile", estimate.percentile), ("bca", estimate.bca)] {
            out.push(ScoreRow {
                run: run.to_string(),
                subject: subject.clone(),
                is_control,
                mode: mode.clone(),
                judge: judge.clone(),
                metric: metric.clone(),
                level: level.into(),
                group: group.clone(),
                value: estimate.value,
                ci_low: interval.map(|(low, _)| low),
                ci_high: interval.map(|(_, high)| high),
                ci_method: interval.map(|_| method.to_string()),
                n_tuples: n,
                n_cases,
                prompt_set: prompt_set.clone(),
            });
        }
    }
    Ok(out)
}

/// Judge against human rubric scores, per rubric judge and domain:
/// quadratic-weighted κ over the 1–5 scale (a domain mean is rounded to
/// its nearest score) and Pearson r over the raw scores; items a rater
/// marked `na` or the judge did not score are left out.
fn agreement(
    run: &str,
    labels: &[RubricLabel],
    judged: &BTreeMap<(String, String, String, String, String, String), f64>,
) -> Vec<ScoreRow> {
    let judges: BTreeSet<&String> = judged.keys().map(|key| &key.0).collect();
    let mut out = Vec::new();
    for judge in judges {
        let mut pairs: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for label in labels {
            let (Some(human), Some(domain)) = (label.score, domain_of(&label.metric)) else {
                continue;
            };
            let key = (
                judge.clone(),
                label.subject.clone(),
                label.mode.clone(),
                label.case_id.clone(),
                label.intervention.clone(),
                label.metric.clone(),
            );
            if let Some(&machine) = judged.get(&key) {
                pairs
                    .entry(domain.to_string())
                    .or_default()
                    .push((human, machine));
            }
        }
        for (domain, pairs) in pairs {
            let categories: Vec<(usize, usize)> = pairs
                .iter()
                .map(|(human, machine)| (category(*human), category(*machine)))
                .collect();
            let kappa =
                crate::stats::kappa::cohen_kappa(&categories, 5, crate::stats::kappa::Weights::Quadratic);
            for (metric, value) in [
                (format!("rubric_kappa_quadratic.{domain}"), kappa),
                (format!("rubric_pearson.{domain}"), pearson(&pairs)),
            ] {
                let Some(value) = value else {
                    continue;
                };
                out.push(ScoreRow {
                    run: run.to_string(),
                    subject: "all".into(),
                    is_control: false,
                    mode: "all".into(),
                    judge: judge.clone(),
                    metric,
                    level: "comparison".into(),
                    group: "all".into(),
                    value,
                    ci_low: None,
                    ci_high: None,
                    ci_method: None,
                    n_tuples: pairs.len() as u64,
                    n_cases: 0,
                    prompt_set: None,
                });
            }
        }
    }
    out
}

/// A 1–5 score's category (0–4), a mean rounded to the nearest score.
fn category(score: f64) -> usize {
    (score.round().clamp(1.0, 5.0) as usize) - 1
}

/// Pearson's r (`None` with fewer than two pairs or a constant side).
pub fn pearson(pairs: &[(f64, f64)]) -> Option<f64> {
    if pairs.len() < 2 {
        return None;
    }
    let n = pairs.len() as f64;
    let (mean_x, mean_y) = (
        pairs.iter().map(|pair| pair.0).sum::<f64>() / n,
        pairs.iter().map(|pair| pair.1).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in pairs {
        sxy += (x - mean_x) * (y - mean_y);
        sxx += (x - mean_x).powi(2);
        syy += (y - mean_y).powi(2);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pearson_matches_reference_values() {
        // numpy.corrcoef([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])[0, 1] = 0.8
        let pairs = [(1.0, 2.0), (2.0, 1.0), (3.0, 4.0), (4.0, 3.0), (5.0, 5.0)];
        assert!((pearson(&pairs).expect("r") - 0.8).abs() < 1e-12);
        assert!((pearson(&[(1.0, 5.0), (2.0, 4.0), (3.0, 3.0)]).expect("r") + 1.0).abs() < 1e-12);
        assert_eq!(pearson(&[(1.0, 2.0)]), None);
        assert_eq!(pearson(&[(1.0, 2.0), (1.0, 3.0)]), None);
    }

    #[test]
    fn domains_are_read_from_metric_names() {
        assert_eq!(domain_of("rubric.3.3d"), Some("3"));
        assert_eq!(domain_of("rubric.7"), Some("7"));
        assert_eq!(category(3.4), 2);
        assert_eq!(category(4.5), 4);
    }

    #[test]
    fn label_files_name_their_rows() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("rubric.csv");
        std::fs::write(
            &file,
            "subject,mode,case_id,intervention,metric,score,rater\n\
             s,single_shot,c1,A1,rubric.1.1a,4,ann\n\
             s,single_shot,c1,A1,rubric.3.3d,na,ann\n\
             s,single_shot,c1,A1,rubric.1.1a,6,ann\n",
        )
        .expect("write");
        let error = read_labels(&file).expect_err("score 6").to_string();
        assert!(error.contains("row 4") || error.contains(":4"), "{error}");
        assert!(error.contains("not an integer from 1 to 5"), "{error}");
        std::fs::write(
            &file,
            "subject,mode,case_id,intervention,metric,score\ns,single_shot,c1,A1,rubric.composite,4\n",
        )
        .expect("write");
        assert!(
            read_labels(&file)
                .expect_err("composite")
                .to_string()
                .contains("not a rubric domain")
        );
        std::fs::write(
            &file,
            "subject,mode,case_id,intervention,metric,score\ns,single_shot,c1,A1,rubric.1.1a,4\ns,single_shot,c1,A1,rubric.3.3d,na\n",
        )
        .expect("write");
        let labels = read_labels(&file).expect("valid");
        assert_eq!(labels.len(), 2);
        assert_eq!(labels[1].score, None);
        assert_eq!(labels[0].rater, "rater");
    }
}
