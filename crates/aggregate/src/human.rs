//! Imported human labels: per-family failure rates human vs judge, and κ.
//!
//! The file is CSV with a header and the columns `subject`, `mode`,
//! `case_id`, `intervention` and `score` (0, 0.5 or 1), and optionally
//! `label` (`updated_wrong_direction` keeps a 0 apart from "ignored" in κ);
//! other columns are ignored. A tuple *fails* when its score is 0 (the
//! recommendation did not follow the edit). Labels of controls are not
//! compared (agreement is measured on the subjects under test).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfeval_schema::ScoreRow;

use crate::accumulate::{Accumulated, TupleKey};
use crate::error::{Error, Result};
use crate::scores::kappa_rows;
use crate::stats::kappa::{css_category, css_label_category};

/// One human label.
#[derive(Debug, Clone, PartialEq)]
pub struct HumanLabel {
    pub key: TupleKey,
    pub score: f64,
    /// The label column, when the file has one and the row fills it.
    pub label: Option<String>,
}

/// Reads the human-label CSV.
pub fn read_labels(path: &Path) -> Result<Vec<HumanLabel>> {
    let error = |row: u64, detail: String| Error::HumanLabels {
        path: path.to_path_buf(),
        row,
        detail,
    };
    let mut reader = csv::Reader::from_path(path).map_err(|e| error(0, e.to_string()))?;
    let headers = reader.headers().map_err(|e| error(1, e.to_string()))?.clone();
    let column = |name: &str| {
        headers
            .iter()
            .position(|header| header.trim() == name)
            .ok_or_else(|| {
                error(
                    1,
                    format!("no `{name}` column (need subject, mode, case_id, intervention, score)"),
                )
            })
    };
    let [subject, mode, case_id, intervention, score] = [
        column("subject")?,
        column("mode")?,
        column("case_id")?,
        column("intervention")?,
        column("score")?,
    ];
    let label = headers.iter().position(|header| header.trim() == "label");
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
        labels.push(HumanLabel {
            key: (field(subject), field(mode), field(case_id), field(intervention)),
            score: value,
            label: label.map(field).filter(|label| !label.is_empty()),
        });
    }
    Ok(labels)
}

/// The keys the judgments pass must capture judge scores for.
pub fn keys(labels: &[HumanLabel]) -> BTreeSet<TupleKey> {
    labels.iter().map(|label| label.key.clone()).collect()
}

/// Failure rates per family (human, and each judge on the same tuples) and κ
/// of each judge against the humans.
pub fn rows(run: &str, accumulated: &Accumulated, labels: &[HumanLabel]) -> Vec<ScoreRow> {
    let family_of = |intervention: &str| {
        accumulated
            .interventions
            .get(intervention)
            .map(|id| accumulated.intervention_family[id as usize].clone())
    };
    // (judge, family) → (failures, tuples); judge None = human.
    let mut failures: BTreeMap<(Option<u32>, String), (u64, u64)> = BTreeMap::new();
    let mut pairs: BTreeMap<u32, Vec<(usize, usize)>> = BTreeMap::new();
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
            }
        }
    }
    let mut rows = Vec::new();
    for ((judge, family), (failed, total)) in failures {
        let (judge_name, metric) = match judge {
            None => ("human".to_string(), "human_failure_rate"),
            Some(id) => (accumulated.judges.name(id).to_string(), "judge_failure_rate"),
        };
        rows.push(ScoreRow {
            run: run.to_string(),
            subject: "all".into(),
            is_control: false,
            mode: "all".into(),
            judge: judge_name,
            metric: metric.into(),
            level: "family".into(),
            group: family,
            value: failed as f64 / total as f64,
            ci_low: None,
            ci_high: None,
            ci_method: None,
            n_tuples: total,
            n_cases: 0,
        });
    }
    for (judge, pairs) in pairs {
        rows.extend(kappa_rows(
            run,
            &format!("human vs {}", accumulated.judges.name(judge)),
            "all",
            &pairs,
        ));
    }
    rows
}
