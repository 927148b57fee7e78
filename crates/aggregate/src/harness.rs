//! Harness metrics (mode `harness`, EviDx's 3-level pyramid), from
//! `responses.harness`, with the same case bootstrap as every other
//! estimate (a case's episodes move together). Level 3, the outcome, is the
//! judges' own rows for mode `harness` (accuracy, CSS), and the paired
//! deltas against single-shot and agent (`delta_harness_minus_*`).
//!
//! | `metric` | level of the pyramid | value, per episode |
//! | --- | --- | --- |
//! | `harness_failed` | 1, execution | share of episodes with no usable answer (`status` not `ok`: a failed call, or the step limit with no answer) |
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
//!
//! Every row has `level`/`group` `overall`/`all` and `family`/`baseline`,
//! and `judge = "none"`. Every episode counts (failed ones too), so that a
//! subject cannot look robust by failing.

use std::path::Path;

use cfeval_schema::{HarnessOutcome, ScoreRow};

use crate::dialogue::episode_scores;
use crate::error::Result;
use crate::stats::Options;

const METRICS: [&str; 15] = [
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
];

/// One episode's quantities, in [`METRICS`] order.
fn quantities(outcome: &HarnessOutcome, ok: bool) -> [Option<f64>; 15] {
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
    ]
}

/// The harness score rows of the run in `run_dir` (none when it has no
/// harness episodes).
pub fn rows(run_dir: &Path, run: &str, options: &Options) -> Result<Vec<ScoreRow>> {
    episode_scores(run_dir, run, options, "harness", &METRICS, |row| {
        let outcome = row.harness.as_ref().filter(|_| row.mode == "harness")?;
        Some(quantities(outcome, row.status == "ok").to_vec())
    })
}
