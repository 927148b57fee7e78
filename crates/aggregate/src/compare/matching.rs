//! Reading one run's verdicts and matching two runs' tuples.
//!
//! A tuple is (subject, mode, case, intervention, sample); CMS rows are the
//! baseline's (intervention `baseline`). Only the chosen judge's `css` and
//! `cms` rows are read. A verdict is *decided* when the judgment is `ok`,
//! has a score and the judge did not abstain (`uncertain`); the rest are
//! kept by key so that a tuple one run decided and the other did not is
//! named, not dropped.
//!
//! Samples: each tuple is compared on sample 0, unless both runs answered
//! it several times, then on the samples both have (0 … min − 1), sample
//! `i` against sample `i`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

/// The columns of `judgments` compare reads.
pub(crate) const COLUMNS: &[&str] = &[
    "run",
    "judge",
    "subject",
    "mode",
    "case_id",
    "intervention",
    "family",
    "sample",
    "catalog_hash",
    "metric",
    "score",
    "label",
    "status",
];

/// One judgment row, as compare reads it.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Judged {
    pub run: String,
    pub judge: String,
    pub subject: String,
    pub mode: String,
    pub case_id: String,
    pub intervention: String,
    pub family: String,
    pub sample: u32,
    pub catalog_hash: String,
    pub metric: String,
    pub score: Option<f64>,
    pub label: Option<String>,
    pub status: String,
}

/// The metric a tuple is compared on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// A CSS pair verdict (every family, the control family included).
    Css,
    /// A baseline answer's coverage score.
    Cms,
}

impl Metric {
    /// The `judgments.metric` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Css => "css",
            Metric::Cms => "cms",
        }
    }

    fn parse(metric: &str) -> Option<Self> {
        match metric {
            "css" => Some(Metric::Css),
            "cms" => Some(Metric::Cms),
            _ => None,
        }
    }
}

/// Which tuple.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TupleKey {
    pub metric: Metric,
    pub subject: String,
    pub mode: String,
    pub case_id: String,
    pub intervention: String,
    pub sample: u32,
}

impl TupleKey {
    /// The (subject, mode) the tuple belongs to.
    pub fn cell(&self) -> (String, String) {
        (self.subject.clone(), self.mode.clone())
    }
}

/// A judge's verdict on one tuple.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub family: String,
    /// The score, when decided.
    pub score: Option<f64>,
    /// The label `shifted_spuriously` (a negative control that moved).
    pub shifted: bool,
}

impl Verdict {
    /// Whether the verdict enters an estimate.
    pub fn decided(&self) -> bool {
        self.score.is_some()
    }
}

/// One run's verdicts of one judge.
#[derive(Debug, Clone, Default)]
pub struct RunVerdicts {
    /// The run's name (`judgments.run`).
    pub run: String,
    /// Catalog hashes of every judgment row (any judge).
    pub catalogs: BTreeSet<String>,
    /// Every judge of the run.
    pub judges: BTreeSet<String>,
    /// The chosen judge's verdicts, decided or not.
    pub verdicts: BTreeMap<TupleKey, Verdict>,
}

impl RunVerdicts {
    /// Adds judgment rows; only `judge`'s `css` and `cms` rows are kept.
    pub(crate) fn add(&mut self, rows: impl IntoIterator<Item = Judged>, judge: &str) {
        for row in rows {
            if self.run.is_empty() {
                self.run.clone_from(&row.run);
            }
            self.catalogs.insert(row.catalog_hash);
            if !self.judges.contains(&row.judge) {
                self.judges.insert(row.judge.clone());
            }
            let Some(metric) = Metric::parse(&row.metric) else {
                continue;
            };
            if row.judge != judge {
                continue;
            }
            let decided = row.status == "ok"
                && row.score.is_some_and(f64::is_finite)
                && row.label.as_deref() != Some("uncertain");
            let verdict = Verdict {
                family: row.family,
                score: if decided { row.score } else { None },
                shifted: row.label.as_deref() == Some("shifted_spuriously"),
            };
            let key = TupleKey {
                metric,
                subject: row.subject,
                mode: row.mode,
                case_id: row.case_id,
                intervention: row.intervention,
                sample: row.sample,
            };
            self.verdicts.entry(key).or_insert(verdict);
        }
    }

    /// Number of samples per (subject, mode): the largest sample + 1.
    fn samples(&self) -> BTreeMap<(String, String), u32> {
        let mut samples: BTreeMap<(String, String), u32> = BTreeMap::new();
        for key in self.verdicts.keys() {
            let count = samples.entry(key.cell()).or_default();
            *count = (*count).max(key.sample + 1);
        }
        samples
    }
}

/// A tuple both runs decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub key: TupleKey,
    pub family: String,
    pub a: f64,
    pub b: f64,
    pub a_shifted: bool,
    pub b_shifted: bool,
}

/// A tuple that cannot be paired, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unpaired {
    pub key: TupleKey,
    pub family: String,
    /// `only_a`, `only_b` (judged in one run only) or `undecided` (judged in
    /// both, decided in at most one).
    pub why: &'static str,
    pub a: Option<f64>,
    pub b: Option<f64>,
}

/// Two runs' tuples, matched.
#[derive(Debug, Clone, Default)]
pub struct Matching {
    pub pairs: Vec<Pair>,
    pub unpaired: Vec<Unpaired>,
    /// (subject, mode) judged in one run only, with their tuple counts.
    pub only_a: BTreeMap<(String, String), u64>,
    pub only_b: BTreeMap<(String, String), u64>,
    /// Samples compared per (subject, mode) both runs have.
    pub samples: BTreeMap<(String, String), u32>,
    /// Verdicts of samples past the ones both runs have (not compared).
    pub samples_left_out: u64,
}

/// Matches the tuples of `a` and `b` (see the module docs for samples).
pub fn match_tuples(a: &RunVerdicts, b: &RunVerdicts) -> Matching {
    let (samples_a, samples_b) = (a.samples(), b.samples());
    let mut matching = Matching::default();
    for (cell, &count) in &samples_a {
        match samples_b.get(cell) {
            Some(&other) => {
                let shared = if count > 1 && other > 1 {
                    count.min(other)
                } else {
                    1
                };
                matching.samples.insert(cell.clone(), shared);
            }
            None => {
                matching.only_a.insert(cell.clone(), 0);
            }
        }
    }
    for cell in samples_b.keys().filter(|cell| !samples_a.contains_key(*cell)) {
        matching.only_b.insert(cell.clone(), 0);
    }
    // A tuple is compared when its (subject, mode) is in both runs and its
    // sample is one both runs have.
    let shared_samples = matching.samples.clone();
    let matching_samples = |cell: &(String, String)| shared_samples.get(cell).copied().unwrap_or(0);
    let mut left_out = 0;
    for (key, verdict) in &a.verdicts {
        let cell = key.cell();
        if let Some(count) = matching.only_a.get_mut(&cell) {
            *count += 1;
            continue;
        }
        if key.sample >= matching_samples(&cell) {
            left_out += 1;
            continue;
        }
        match b.verdicts.get(key) {
            Some(other) => match (verdict.score, other.score) {
                (Some(score_a), Some(score_b)) => matching.pairs.push(Pair {
                    key: key.clone(),
                    family: verdict.family.clone(),
                    a: score_a,
                    b: score_b,
                    a_shifted: verdict.shifted,
                    b_shifted: other.shifted,
                }),
                (score_a, score_b) => matching.unpaired.push(Unpaired {
                    key: key.clone(),
                    family: verdict.family.clone(),
                    why: "undecided",
                    a: score_a,
                    b: score_b,
                }),
            },
            None => matching.unpaired.push(Unpaired {
                key: key.clone(),
                family: verdict.family.clone(),
                why: "only_a",
                a: verdict.score,
                b: None,
            }),
        }
    }
    for (key, verdict) in &b.verdicts {
        let cell = key.cell();
        if let Some(count) = matching.only_b.get_mut(&cell) {
            *count += 1;
            continue;
        }
        if key.sample >= matching_samples(&cell) {
            left_out += 1;
            continue;
        }
        if !a.verdicts.contains_key(key) {
            matching.unpaired.push(Unpaired {
                key: key.clone(),
                family: verdict.family.clone(),
                why: "only_b",
                a: None,
                b: verdict.score,
            });
        }
    }
    matching.samples_left_out = left_out;
    matching.unpaired.sort_by(|left, right| left.key.cmp(&right.key));
    matching
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn judged(
        subject: &str,
        case: &str,
        intervention: &str,
        sample: u32,
        score: Option<f64>,
    ) -> Judged {
        Judged {
            run: "r".into(),
            judge: "rule".into(),
            subject: subject.into(),
            mode: "single_shot".into(),
            case_id: case.into(),
            intervention: intervention.into(),
            family: intervention[..1].into(),
            sample,
            catalog_hash: "catalog".into(),
            metric: "css".into(),
            score,
            label: score.map(|_| "ignored".into()),
            status: "ok".into(),
        }
    }

    fn run(rows: Vec<Judged>) -> RunVerdicts {
        let mut run = RunVerdicts::default();
        run.add(rows, "rule");
        run
    }

    #[test]
    fn tuples_pair_by_subject_mode_case_intervention_and_sample() {
        let a = run(vec![
            judged("s", "c1", "D1", 0, Some(1.0)),
            judged("s", "c2", "D1", 0, Some(0.5)),
            judged("s", "c3", "A1", 0, Some(1.0)),
            judged("s", "c4", "A1", 0, None),
            judged("only-a", "c1", "A1", 0, Some(1.0)),
        ]);
        let b = run(vec![
            judged("s", "c1", "D1", 0, Some(0.0)),
            judged("s", "c2", "D1", 0, Some(1.0)),
            judged("s", "c4", "A1", 0, Some(1.0)),
            judged("s", "c5", "A1", 0, Some(0.0)),
            judged("only-b", "c1", "A1", 0, Some(1.0)),
            judged("only-b", "c2", "A1", 0, Some(1.0)),
        ]);
        let matching = match_tuples(&a, &b);
        let pairs: Vec<(&str, f64, f64)> = matching
            .pairs
            .iter()
            .map(|pair| (pair.key.case_id.as_str(), pair.a, pair.b))
            .collect();
        assert_eq!(pairs, [("c1", 1.0, 0.0), ("c2", 0.5, 1.0)]);
        let unpaired: Vec<(&str, &str)> = matching
            .unpaired
            .iter()
            .map(|tuple| (tuple.key.case_id.as_str(), tuple.why))
            .collect();
        assert_eq!(
            unpaired,
            [("c3", "only_a"), ("c4", "undecided"), ("c5", "only_b")]
        );
        let cell = |subject: &str| (subject.to_string(), "single_shot".to_string());
        assert_eq!(matching.only_a, BTreeMap::from([(cell("only-a"), 1)]));
        assert_eq!(matching.only_b, BTreeMap::from([(cell("only-b"), 2)]));
    }

    #[test]
    fn samples_past_sample_zero_count_only_when_both_runs_have_them() {
        let three = |score| (0..3).map(move |sample| judged("s", "c1", "A1", sample, Some(score)));
        let two = |score| (0..2).map(move |sample| judged("s", "c1", "A1", sample, Some(score)));
        let matching = match_tuples(&run(three(1.0).collect()), &run(two(0.0).collect()));
        assert_eq!(matching.pairs.len(), 2);
        assert_eq!(matching.samples_left_out, 1);
        let single = run(vec![judged("s", "c1", "A1", 0, Some(0.0))]);
        let matching = match_tuples(&run(three(1.0).collect()), &single);
        assert_eq!(matching.pairs.len(), 1);
        assert_eq!(matching.samples_left_out, 2);
        assert!(matching.unpaired.is_empty());
    }

    #[test]
    fn other_judges_and_metrics_are_not_read_but_their_catalogs_are() {
        let mut other = judged("s", "c1", "A1", 0, Some(1.0));
        other.judge = "openai/gpt-5".into();
        other.catalog_hash = "other".into();
        let mut resample = judged("s", "c2", "A1", 0, Some(1.0));
        resample.metric = "resample".into();
        let mut uncertain = judged("s", "c3", "A1", 0, Some(1.0));
        uncertain.label = Some("uncertain".into());
        let verdicts = run(vec![other, resample, uncertain]);
        assert_eq!(verdicts.catalogs.len(), 2);
        assert_eq!(verdicts.judges.len(), 2);
        assert_eq!(verdicts.verdicts.len(), 1);
        assert!(!verdicts.verdicts.values().next().expect("one").decided());
    }
}
