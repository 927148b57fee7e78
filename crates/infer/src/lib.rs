//! The infer stage: every subject on every variant, in `single_shot` or
//! `agent` mode, into the `responses` table.
//!
//! - [`respond()`]: one subject answering one variant. Single-shot puts the
//!   whole chart in one prompt; the agent is a ReAct loop whose tools
//!   `list_chart_sections` and `read_chart_section(name)` serve the
//!   *variant's* chart (the intervention mutates what the tool returns), with
//!   native tool calling or a text protocol for models without it, and a
//!   recorded trace (step, tool, arguments, result hash, sections read, errors).
//! - [`control`]: the control subjects that validate the metric.
//! - [`run()`]: the stage over a run, resumable (answered variants are
//!   skipped; rows are committed chunk by chunk, in variant order) and sliceable
//!   (`--shard i/n`).
//!
//! - [`reply`]: when a reply is unusable (`empty`, `truncated`, `refused`,
//!   `bad_tool_args`; the refusal cues are data, `data/replies.yaml`).
//!
//! A failed call never stops the stage: it becomes a row with `status =
//! error` (or the unusable reply's status), and a rerun tries it again, up
//! to [`Config::max_tries`] times in all.

pub mod control;
pub mod dialogue;
mod error;
pub mod harness;
pub mod prompt;
pub mod reply;
pub mod respond;
mod run;

pub use control::{Control, ControlKind};
pub use error::{Error, Result};
pub use prompt::{Prompts, extract_recommendation};
pub use respond::{CallSettings, Mode, Subject, respond, single_shot_request};
pub use run::{
    BatchMode, Config, DEFAULT_MAX_TRIES, DialogueSetup, HarnessSetup, Report, Slice, answers,
    answers_variant, batch_state_path, fingerprint, run, run_async, unit,
};
