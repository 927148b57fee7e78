//! Fact-level precision and recall of the extractor against a cohort's
//! ground truth, per fact kind (biomarkers per marker).

use std::collections::BTreeMap;

use cfeval_schema::Fact;

use super::CohortCase;
use crate::extract::{extract_facts, normalise_regimen, sections};

/// Counts for one fact kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub true_positives: u64,
    pub false_positives: u64,
    pub false_negatives: u64,
}

impl Counts {
    pub fn precision(&self) -> f64 {
        let found = self.true_positives + self.false_positives;
        if found == 0 {
            1.0
        } else {
            self.true_positives as f64 / found as f64
        }
    }

    pub fn recall(&self) -> f64 {
        let truth = self.true_positives + self.false_negatives;
        if truth == 0 {
            1.0
        } else {
            self.true_positives as f64 / truth as f64
        }
    }
}

/// One disagreement, for diagnosis.
#[derive(Debug, Clone, PartialEq)]
pub struct Miss {
    pub case: String,
    pub group: String,
    /// `missed` (false negative) or `spurious` (false positive).
    pub what: &'static str,
    pub key: String,
}

/// Per-group counts and the disagreements.
#[derive(Debug, Clone, Default)]
pub struct Evaluation {
    pub groups: BTreeMap<String, Counts>,
    pub misses: Vec<Miss>,
}

/// The group a fact is scored in (`biomarker:HER2`, `stage:group`, …) and
/// the key it must match on.
pub fn key(fact: &Fact) -> (String, String) {
    match fact.kind.as_str() {
        "biomarker" => (format!("biomarker:{}", fact.name), fact.value.clone()),
        "stage" => (format!("stage:{}", fact.name), fact.value.clone()),
        "prior_line" => (
            "prior_line".into(),
            format!("{} => {}", normalise_regimen(&fact.name), fact.value),
        ),
        "comorbidity" | "finding" => (fact.kind.clone(), format!("{} => {}", fact.name, fact.value)),
        _ => (fact.kind.clone(), fact.value.clone()),
    }
}

/// Re-extracts every case's text and compares with its ground truth.
pub fn evaluate(cases: &[CohortCase]) -> Evaluation {
    let mut evaluation = Evaluation::default();
    for case in cases {
        let sections = sections::split(&case.text);
        let extracted = extract_facts(&case.text, &sections);
        score(&case.id, &case.facts, &extracted, &mut evaluation);
    }
    evaluation
}

/// Adds one case's comparison (a multiset match per group and key).
pub fn score(case: &str, truth: &[Fact], extracted: &[Fact], evaluation: &mut Evaluation) {
    let mut remaining: Vec<(String, String)> = extracted.iter().map(key).collect();
    for fact in truth {
        let (group, wanted) = key(fact);
        let counts = evaluation.groups.entry(group.clone()).or_default();
        match remaining
            .iter()
            .position(|(found_group, found)| *found_group == group && *found == wanted)
        {
            Some(position) => {
                remaining.swap_remove(position);
                counts.true_positives += 1;
            }
            None => {
                counts.false_negatives += 1;
                evaluation.misses.push(Miss {
                    case: case.to_string(),
                    group,
                    what: "missed",
                    key: wanted,
                });
            }
        }
    }
    for (group, found) in remaining {
        evaluation
            .groups
            .entry(group.clone())
            .or_default()
            .false_positives += 1;
        evaluation.misses.push(Miss {
            case: case.to_string(),
            group,
            what: "spurious",
            key: found,
        });
    }
}

impl Evaluation {
    /// A Markdown table of the figures.
    pub fn table(&self) -> String {
        let mut out =
            String::from("| fact kind | truth | found | precision | recall |\n|---|---:|---:|---:|---:|\n");
        for (group, counts) in &self.groups {
            out.push_str(&format!(
                "| {group} | {} | {} | {:.4} | {:.4} |\n",
                counts.true_positives + counts.false_negatives,
                counts.true_positives + counts.false_positives,
                counts.precision(),
                counts.recall()
            ));
        }
        out
    }
}
