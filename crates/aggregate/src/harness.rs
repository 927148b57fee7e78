//! Harness metrics (mode `harness`, EviDx's 3-level pyramid), from
//! `responses.harness`, with the same case bootstrap as every other
//! estimate (a case's episodes move together). Level 3, the outcome, is the
//! judges' own rows for mode `harness` (accuracy, CSS), and the paired
//! deltas against single-shot and agent (`delta_harness_minus_*`).
//!
//! | `metric` | level of the pyramid | value, per episode |
//! | --- | --- | --- |
//! | `harness_failed` | 1, execution | share of episodes with no usable answer (`status` not `ok`, a failed call; or outcome `no_answer`, the step limit with no answer ever proposed, which the judges grade as naming no diagnosis) |
//! | `harness_step_limit` | 1 | share that reached `max-steps` |
//! | `harness_schema_failures` | 1 | mean turns whose reply was not the step's JSON |
//! | `harness_invalid_beliefs` | 1 | mean turns with unusable numbers (negative, NaN, none above 0) |
//! | `harness_unknown_hypotheses` | 1 | mean hypotheses the ontology does not know |
//! | `harness_unknown_tools` | 1 | mean calls to tools the harness does not have |
//! | `harness_tool_errors` | 1 | mean failed tool calls |
//! | `harness_retries` | 1 | mean HTTP attempts beyond one per turn |
//! | `harness_language_fallbacks` | 1 | mean turns read from natural language |
//! | `harness_observer_blocks` | 2, reasoning dynamics | mean finishes the Observer refused |
//! | `harness_spurious_drops` | 2 | mean entropy falls with no new evidence before them |
//! | `harness_coverage` | 2 | mean coverage V at termination |
//! | `harness_entropy` | 2 | mean entropy H (bits) at termination, over episodes with a belief |
//! | `harness_steps` | 2 | mean turns to termination |
//! | `harness_consultations` | 2 | mean queries to the Consultant |
//! | `harness_evidence_read` | 3, outcomes | mean share of the case's reference evidence spans (those the served chart still holds) in sections the trajectory read |
//! | `harness_evidence_recall` | 3 | reference evidence recall: mean share of those spans the trajectory read and cited ([`cfeval_diagnosis::evidence`]: its consult queries and proposed answers name them) |
//!
//! | `harness_entropy_trajectory` | 2 | per step t (`level` `step`, `group` t): the median entropy H(t) over the episodes with a belief at step t, with the interquartile band as `ci_low`/`ci_high` (`ci_method` `interquartile`; not an interval of the median) |
//!
//! The evidence metrics count only episodes of cases with reference evidence
//! (`cases.reference.facts` of kind `evidence`, from E-Synthesis) on a
//! diagnosis pack's run; their stop words are the pack's `answer.yaml`.
//!
//! Every row has `level`/`group` `overall`/`all` and `family`/`baseline`,
//! and `judge = "none"`. Every episode counts (failed ones too), so that a
//! subject cannot look robust by failing.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfeval_diagnosis::answer::Reader;
use cfeval_diagnosis::evidence;
use cfeval_schema::{CaseRow, Fact, HarnessOutcome, ScoreRow, Section, ShardStore, Table, VariantRow};
use serde::Deserialize;

use crate::dialogue::{EpisodeRow, episode_scores};
use crate::error::{Error, Result};
use crate::stats::Options;
use crate::stats::bootstrap::quantile_sorted;

const METRICS: [&str; 17] = [
    "harness_failed",
    "harness_step_limit",
    "harness_schema_failures",
    "harness_invalid_beliefs",
    "harness_unknown_hypotheses",
    "harness_unknown_tools",
    "harness_tool_errors",
    "harness_retries",
    "harness_language_fallbacks",
    "harness_observer_blocks",
    "harness_spurious_drops",
    "harness_coverage",
    "harness_entropy",
    "harness_steps",
    "harness_consultations",
    "harness_evidence_read",
    "harness_evidence_recall",
];

/// One episode's quantities, in [`METRICS`] order (the evidence pair
/// filled in by [`Evidence::recall`]).
fn quantities(outcome: &HarnessOutcome, ok: bool) -> [Option<f64>; 17] {
    let count = |value: u32| Some(f64::from(value));
    [
        Some(f64::from(u8::from(!ok))),
        Some(f64::from(u8::from(
            outcome.outcome == "step_limit" || outcome.outcome == "no_answer",
        ))),
        count(outcome.schema_failures),
        count(outcome.invalid_beliefs),
        count(outcome.unknown_hypotheses),
        count(outcome.unknown_tools),
        count(outcome.tool_errors),
        count(outcome.retries),
        count(outcome.language_fallbacks),
        count(outcome.observer_blocks),
        count(outcome.spurious_drops),
        Some(outcome.final_coverage),
        outcome.final_entropy,
        count(outcome.steps),
        count(outcome.consultations),
        None,
        None,
    ]
}

/// The run's reference evidence: each case's spans and the charts its
/// variants served, with the pack's reader for citations.
struct Evidence {
    reader: Reader,
    spans: BTreeMap<String, Vec<Fact>>,
    sections: BTreeMap<String, Vec<Section>>,
}

#[derive(Deserialize)]
struct CaseView {
    case_id: String,
    reference: cfeval_schema::Reference,
}

#[derive(Deserialize)]
struct VariantView {
    case_id: String,
    variant_id: String,
    sections: Vec<Section>,
}

impl Evidence {
    /// The evidence of a diagnosis pack's run; none for another run, or one
    /// whose cases have no reference evidence.
    fn load(run_dir: &Path) -> Result<Option<Self>> {
        let pack = cfeval_schema::pack::Pack::of_run(run_dir).map_err(Error::Config)?;
        let Some(pack) = pack.filter(|pack| pack.task == cfeval_schema::vocab::TaskKind::Diagnosis) else {
            return Ok(None);
        };
        let Some(cases) =
            ShardStore::open_existing(&run_dir.join(CaseRow::NAME), CaseRow::NAME, CaseRow::schema())?
        else {
            return Ok(None);
        };
        let mut spans = BTreeMap::new();
        for batch in cases.read_columns::<CaseView>(&["case_id", "reference"])? {
            for case in batch? {
                let found: Vec<Fact> = case
                    .reference
                    .facts
                    .into_iter()
                    .filter(|fact| fact.kind == evidence::KIND)
                    .collect();
                if !found.is_empty() {
                    spans.insert(case.case_id, found);
                }
            }
        }
        if spans.is_empty() {
            return Ok(None);
        }
        let mut sections = BTreeMap::new();
        if let Some(variants) = ShardStore::open_existing(
            &run_dir.join(VariantRow::NAME),
            VariantRow::NAME,
            VariantRow::schema(),
        )? {
            for batch in variants.read_columns::<VariantView>(&["case_id", "variant_id", "sections"])? {
                for variant in batch? {
                    if spans.contains_key(&variant.case_id) {
                        sections.insert(variant.variant_id, variant.sections);
                    }
                }
            }
        }
        let reader = Reader::load(&pack.dir)
            .map_err(|error| Error::Config(format!("pack {}: {error}", pack.dir.display())))?;
        Ok(Some(Self {
            reader,
            spans,
            sections,
        }))
    }

    /// An episode's (read share, recall); none where its case has no
    /// evidence its chart still holds.
    fn recall(&self, row: &EpisodeRow, outcome: &HarnessOutcome) -> (Option<f64>, Option<f64>) {
        let (Some(spans), Some(sections)) =
            (self.spans.get(&row.case_id), self.sections.get(&row.variant_id))
        else {
            return (None, None);
        };
        // The Diagnostician's own words: its queries and proposed answers.
        let said: Vec<&str> = outcome
            .trajectory
            .iter()
            .filter(|step| matches!(step.action.as_str(), "consult" | "finish"))
            .filter_map(|step| step.argument.as_deref())
            .chain(outcome.answer.as_deref())
            .collect();
        let recall = evidence::recall(
            &self.reader,
            spans,
            sections,
            &row.sections_read,
            &said.join("\n"),
        );
        (recall.read_share(), recall.recall())
    }
}

/// The harness score rows of the run in `run_dir` (none when it has no
/// harness episodes).
pub fn rows(run_dir: &Path, run: &str, options: &Options) -> Result<Vec<ScoreRow>> {
    let evidence = Evidence::load(run_dir)?;
    let trajectories: RefCell<Trajectories> = RefCell::default();
    let mut out = episode_scores(run_dir, run, options, "harness", &METRICS, |row| {
        let outcome = row.harness.as_ref().filter(|_| row.mode == "harness")?;
        let mut values = quantities(outcome, row.status == "ok" && outcome.outcome != "no_answer");
        if let Some(evidence) = &evidence {
            (values[15], values[16]) = evidence.recall(row, outcome);
        }
        let mut trajectories = trajectories.borrow_mut();
        let steps = trajectories
            .entry((row.subject.clone(), row.is_control, row.prompt_set.clone()))
            .or_default();
        for step in &outcome.trajectory {
            if let Some(entropy) = step.entropy.filter(|entropy| entropy.is_finite()) {
                let (entropies, cases) = steps.entry(step.step).or_default();
                entropies.push(entropy);
                cases.insert(row.case_id.clone());
            }
        }
        Some(values.to_vec())
    })?;
    out.extend(trajectory_rows(run, &trajectories.into_inner()));
    Ok(out)
}

/// (subject, is_control, prompt set) → step → the entropies at that step
/// and the cases they came from.
type Trajectories = BTreeMap<(String, bool, String), BTreeMap<u32, (Vec<f64>, BTreeSet<String>)>>;

/// The `harness_entropy_trajectory` rows: per subject and step, the median
/// entropy and its interquartile band.
fn trajectory_rows(run: &str, trajectories: &Trajectories) -> Vec<ScoreRow> {
    let mut out = Vec::new();
    for ((subject, is_control, prompt_set), steps) in trajectories {
        for (step, (entropies, cases)) in steps {
            let mut sorted = entropies.clone();
            sorted.sort_by(f64::total_cmp);
            let quantile = |probability| quantile_sorted(&sorted, probability);
            let Some(median) = quantile(0.5) else {
                continue;
            };
            out.push(ScoreRow {
                run: run.to_string(),
                subject: subject.clone(),
                is_control: *is_control,
                mode: "harness".into(),
                judge: "none".into(),
                metric: "harness_entropy_trajectory".into(),
                level: "step".into(),
                group: step.to_string(),
                value: median,
                ci_low: quantile(0.25),
                ci_high: quantile(0.75),
                ci_method: Some("interquartile".into()),
                n_tuples: sorted.len() as u64,
                n_cases: cases.len() as u64,
                prompt_set: Some(prompt_set.clone()),
            });
        }
    }
    out
}
