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
//! A failed call never stops the stage: it becomes a row with `status = error`.

pub mod control;
mod error;
pub mod prompt;
pub mod respond;
mod run;

pub use control::{Control, ControlKind};
pub use error::{Error, Result};
pub use prompt::Prompts;
pub use respond::{CallSettings, Mode, Subject, respond, single_shot_request};
pub use run::{Config, Report, Slice, fingerprint, run, run_async, unit};

/// A stable 64-bit hash of an id (the first 8 bytes of its BLAKE3), for
/// slicing work and for the erratic control's seeded choice.
pub(crate) fn id_hash(id: &str) -> u64 {
    let hash = blake3::hash(id.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(bytes)
}
