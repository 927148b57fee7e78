//! Imported human labels: per-family failure rates human vs judge, κ of each
//! judge against the raters and of the raters against each other (per
//! family, with bootstrap intervals over items), and per intervention how
//! often a rater found the expected direction clinically wrong.
//!
//! The file is CSV with a header and the columns `subject`, `mode`,
//! `case_id`, `intervention` and `score` (0, 0.5 or 1), and optionally
//! `label` (`updated_wrong_direction` keeps a 0 apart from "ignored" in κ),
//! `rater` (several raters may label the same tuple; `cfeval labels import`
//! writes this file) and `direction_wrong` (`true` when the rater holds the
//! catalog's expected direction clinically wrong for the pair); other
//! columns are ignored. A tuple *fails* when its score is 0 (the
//! recommendation did not follow the edit). Labels of controls are not
//! compared (agreement is measured on the subjects under test).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfeval_schema::ScoreRow;

use crate::accumulate::{Accumulated, TupleKey};
use crate::error::{Error, Result};
use crate::scores::compare::with_interval;
use crate::scores::kappa_rows;
use crate::stats::kappa::{Weights, css_category, css_label_category};
use crate::stats::{self, Rng};

/// One human label.
#[derive(Debug, Clone, PartialEq)]
pub struct HumanLabel {
    pub key: TupleKey,
    pub score: f64,
    /// The label column, when the file has one and the row fills it.
    pub label: Option<String>,
    /// Who labelled it (`rater` when the file has no rater column).
    pub rater: String,
    /// The rater holds the expected direction clinically wrong for this pair.
    pub direction_wrong: bool,
}

/// The error of row `row` (1: the header) of a labels file.
pub(crate) fn label_error(path: &Path, row: u64, detail: String) -> Error {
    Error::HumanLabels {
        path: path.to_path_buf(),
        row,
        detail,
    }
}

/// A labels CSV opened: its reader, its header, and the positions of the
/// `needed` columns (each must be there).
pub(crate) fn open_labels<const N: usize>(
    path: &Path,
    needed: [&str; N],
) -> Result<(csv::Reader<std::fs::File>, csv::StringRecord, [usize; N])> {
    let mut reader = csv::Reader::from_path(path).map_err(|e| label_error(path, 0, e.to_string()))?;
    let headers = reader
        .headers()
        .map_err(|e| label_error(path, 1, e.to_string()))?
        .clone();
    let mut columns = [0; N];
    for (at, name) in needed.iter().enumerate() {
        columns[at] = headers
            .iter()
            .position(|header| header.trim() == *name)
            .ok_or_else(|| {
                label_error(
                    path,
                    1,
                    format!("no `{name}` column (need {})", needed.join(", ")),
                )
            })?;
    }
    Ok((reader, headers, columns))
}

/// Reads the human-label CSV.
pub fn read_labels(path: &Path) -> Result<Vec<HumanLabel>> {
    let error = |row: u64, detail: String| label_error(path, row, detail);
    let (mut reader, headers, [subject, mode, case_id, intervention, score]) =
        open_labels(path, ["subject", "mode", "case_id", "intervention", "score"])?;
    let label = headers.iter().position(|header| header.trim() == "label");
    let rater = headers.iter().position(|header| header.trim() == "rater");
    let direction_wrong = headers
        .iter()
        .position(|header| header.trim() == "direction_wrong");
    let mut seen: BTreeSet<(String, TupleKey)> = BTreeSet::new();
    let mut labels = Vec::new();
    for (index, record) in reader.records().enumerate() {
        let row = index as u64 + 2;
        let record = record.map_err(|e| error(row, e.to_string()))?;
        let field = |position: usize| record.get(position).unwrap_or_default().trim().to_string();
        let value: f64 = field(score)
            .parse()
            .map_err(|_| error(row, format!("score `{}` is not a number", field(score))))?;
        if css_category(value).is_none() {
            return Err(error(row, format!("score {value} is not 0, 0.5 or 1")));
        }
        let rater = rater
            .map(field)
            .filter(|rater| !rater.is_empty())
            .unwrap_or_else(|| "rater".to_string());
        let direction_wrong = match direction_wrong.map(field).as_deref() {
            None | Some("" | "false" | "no" | "0") => false,
            Some("true" | "yes" | "1") => true,
            Some(other) => {
                return Err(error(
                    row,
                    format!("direction_wrong `{other}` is not true or false"),
                ));
            }
        };
        let key = (field(subject), field(mode), field(case_id), field(intervention));
        if !seen.insert((rater.clone(), key.clone())) {
            return Err(error(
                row,
                format!("rater `{rater}` labels this tuple twice (give each rater's labels a `rater`)"),
            ));
        }
        labels.push(HumanLabel {
            key,
            score: value,
            label: label.map(field).filter(|label| !label.is_empty()),
            rater,
            direction_wrong,
        });
    }
    Ok(labels)
}

/// The keys the judgments pass must capture judge scores for.
pub fn keys(labels: &[HumanLabel]) -> BTreeSet<TupleKey> {
    labels.iter().map(|label| label.key.clone()).collect()
}

/// Failure rates per family (human, and each judge on the same tuples), κ
/// of each judge against the humans (overall, and per family with an
/// interval), κ between raters, and the share of labels that dispute the
/// expected direction per intervention.
pub fn rows(
    run: &str,
    accumulated: &Accumulated,
    labels: &[HumanLabel],
    options: &stats::Options,
) -> Vec<ScoreRow> {
    let family_of = |intervention: &str| {
        accumulated
            .interventions
            .get(intervention)
            .map(|id| accumulated.intervention_family[id as usize].clone())
    };
    // (judge, family) → (failures, tuples); judge None = human.
    let mut failures: BTreeMap<(Option<u32>, String), (u64, u64)> = BTreeMap::new();
    let mut pairs: BTreeMap<u32, Vec<(usize, usize)>> = BTreeMap::new();
    let mut family_pairs: BTreeMap<(String, String), Vec<(usize, usize)>> = BTreeMap::new();
    for label in labels {
        let Some(judged) = accumulated.labelled.get(&label.key) else {
            continue;
        };
        let Some(family) = family_of(&label.key.3) else {
            continue;
        };
        let human_failed = u64::from(label.score == 0.0);
        let cell = failures.entry((None, family.clone())).or_default();
        cell.0 += human_failed;
        cell.1 += 1;
        let human = css_label_category(label.label.as_deref(), label.score);
        for verdict in judged {
            let cell = failures.entry((Some(verdict.judge), family.clone())).or_default();
            cell.0 += u64::from(verdict.score == 0.0);
            cell.1 += 1;
            if let (Some(human), Some(machine)) = (human, verdict.category) {
                pairs.entry(verdict.judge).or_default().push((human, machine));
                family_pairs
                    .entry((
                        format!("human vs {}", accumulated.judges.name(verdict.judge)),
                        family.clone(),
                    ))
                    .or_default()
                    .push((human, machine));
            }
        }
    }
    let mut rows = Vec::new();
    for ((judge, family), (failed, total)) in failures {
        let (judge_name, metric) = match judge {
            None => ("human".to_string(), "human_failure_rate"),
            Some(id) => (accumulated.judges.name(id).to_string(), "judge_failure_rate"),
        };
        rows.push(pooled_row(
            run,
            &judge_name,
            metric,
            ("family", &family),
            failed as f64 / total as f64,
            total,
        ));
    }
    for (judge, pairs) in pairs {
        rows.extend(kappa_rows(
            run,
            &format!("human vs {}", accumulated.judges.name(judge)),
            "all",
            &pairs,
        ));
    }
    // Raters against each other: every pair of raters on the tuples both
    // labelled, pooled per family and overall.
    let mut by_tuple: BTreeMap<&TupleKey, Vec<(&str, usize)>> = BTreeMap::new();
    for label in labels {
        if let Some(category) = css_label_category(label.label.as_deref(), label.score) {
            by_tuple
                .entry(&label.key)
                .or_default()
                .push((&label.rater, category));
        }
    }
    for (key, ratings) in &by_tuple {
        let Some(family) = family_of(&key.3) else {
            continue;
        };
        for (index, (first_rater, first)) in ratings.iter().enumerate() {
            for (second_rater, second) in &ratings[index + 1..] {
                if first_rater != second_rater {
                    for group in [family.clone(), "all".to_string()] {
                        family_pairs
                            .entry(("human vs human".to_string(), group))
                            .or_default()
                            .push((*first, *second));
                    }
                }
            }
        }
    }
    // Per family (and overall for the raters): the share of identical
    // labels, and κ with its interval where κ is defined (it is not when
    // every label is one category).
    for ((judge, group), pairs) in &family_pairs {
        let level = if group == "all" { "all" } else { "family" };
        let row = |metric: &str, value: f64| {
            pooled_row(run, judge, metric, (level, group), value, pairs.len() as u64)
        };
        let agreeing = pairs.iter().filter(|(first, second)| first == second).count();
        rows.push(row("agreement", agreeing as f64 / pairs.len() as f64));
        if let Some(kappa) = stats::css_kappa(pairs, Weights::None) {
            rows.push(with_interval(
                row("kappa", kappa),
                kappa_interval(pairs, options, &format!("{judge}/{group}")),
                "percentile",
            ));
        }
    }
    // How often raters hold the expected direction itself clinically wrong.
    let mut disputed: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for label in labels {
        let cell = disputed.entry(&label.key.3).or_default();
        cell.0 += u64::from(label.direction_wrong);
        cell.1 += 1;
    }
    for (intervention, (wrong, total)) in disputed {
        rows.push(pooled_row(
            run,
            "human",
            "direction_disputed_rate",
            ("intervention", intervention),
            wrong as f64 / total as f64,
            total,
        ));
    }
    rows
}

/// A row over every subject and mode (the human-label rows pool them), at
/// `(level, group)`, without an interval.
fn pooled_row(
    run: &str,
    judge: &str,
    metric: &str,
    (level, group): (&str, &str),
    value: f64,
    n_tuples: u64,
) -> ScoreRow {
    ScoreRow {
        run: run.to_string(),
        subject: "all".into(),
        is_control: false,
        mode: "all".into(),
        judge: judge.to_string(),
        metric: metric.to_string(),
        level: level.to_string(),
        group: group.to_string(),
        value,
        ci_low: None,
        ci_high: None,
        ci_method: None,
        n_tuples,
        n_cases: 0,
        prompt_set: None,
    }
}

/// A percentile bootstrap interval of κ over `pairs` (items resampled with
/// replacement), seeded by the options' seed and `name`; `None` when fewer
/// than half the resamples give a κ (one category only).
fn kappa_interval(pairs: &[(usize, usize)], options: &stats::Options, name: &str) -> Option<(f64, f64)> {
    if pairs.len() < 2 || options.resamples == 0 {
        return None;
    }
    // FNV-1a of the name: each κ its own stream of resamples.
    let stream = name.bytes().fold(0xCBF2_9CE4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01B3)
    });
    let mut values = Vec::with_capacity(options.resamples);
    let mut resample = Vec::with_capacity(pairs.len());
    let count = u32::try_from(pairs.len()).ok()?;
    for replicate in 0..options.resamples {
        let mut rng = Rng::new(options.seed ^ stream, replicate as u64);
        resample.clear();
        resample.extend((0..pairs.len()).map(|_| pairs[rng.below(count) as usize]));
        if let Some(kappa) = stats::css_kappa(&resample, Weights::None) {
            values.push(kappa);
        }
    }
    if values.len() * 2 < options.resamples {
        return None;
    }
    values.sort_by(f64::total_cmp);
    stats::bootstrap::percentile_interval(&values, options.level)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("human.csv");
        std::fs::write(&path, text).expect("write");
        (dir, path)
    }

    #[test]
    fn raters_and_disputed_directions_are_read_and_a_double_label_is_refused() {
        let (_dir, path) = write(
            "rater,subject,mode,case_id,intervention,score,label,direction_wrong\n\
             ana,s,single_shot,c1,A1,1,updated_correct,false\n\
             ben,s,single_shot,c1,A1,0.5,acknowledged_unchanged,true\n",
        );
        let labels = read_labels(&path).expect("labels");
        assert_eq!(labels[0].rater, "ana");
        assert!(!labels[0].direction_wrong && labels[1].direction_wrong);
        let (_dir, path) = write(
            "rater,subject,mode,case_id,intervention,score\nana,s,single_shot,c1,A1,1\nana,s,single_shot,c1,A1,0\n",
        );
        let error = read_labels(&path).expect_err("twice").to_string();
        assert!(error.contains("row 3") && error.contains("twice"), "{error}");
        // Without a rater column every row is one rater's.
        let (_dir, path) = write("subject,mode,case_id,intervention,score\ns,single_shot,c1,A1,1\n");
        assert_eq!(read_labels(&path).expect("labels")[0].rater, "rater");
    }

    #[test]
    fn kappa_interval_brackets_kappa_and_is_reproducible() {
        let pairs: Vec<(usize, usize)> = (0..60)
            .map(|index| (index % 3, if index % 10 == 0 { 0 } else { index % 3 }))
            .collect();
        let options = stats::Options {
            resamples: 400,
            seed: 3,
            level: 0.95,
        };
        let kappa = stats::css_kappa(&pairs, Weights::None).expect("kappa");
        let (low, high) = kappa_interval(&pairs, &options, "x").expect("interval");
        assert!(
            low <= kappa && kappa <= high && high - low > 0.0,
            "{low} {kappa} {high}"
        );
        assert_eq!(kappa_interval(&pairs, &options, "x"), Some((low, high)));
        // One category only: no kappa, no interval.
        assert_eq!(kappa_interval(&[(1, 1); 10], &options, "x"), None);
    }
}
