//! `cfeval-perturb`: the perturb stage. It applies the pre-registered
//! intervention catalog to every case and writes the `variants` table.
//!
//! - [`catalog`]: the YAML catalog (interventions in families A–E and the
//!   negative controls N, each with `applies_when`, `edits` and `expected`),
//!   its strict loader and [`catalog::check`], which reports every problem
//!   with a line and column. [`Catalog::hash`] is the BLAKE3 of the file: the
//!   pre-registration lock stamped on every variant and shard.
//! - [`apply`]: one case → the baseline plus one row per intervention. An
//!   applicable row carries the edited chart (sections and facts, spans
//!   pointing into the edited source text), a structured diff and the
//!   expected direction; otherwise the row says why not — a case is never
//!   silently dropped, and a chart that cannot be edited consistently (a
//!   mention the rules cannot rewrite, wording that presupposes the old
//!   fact) is not applicable rather than inconsistent.
//! - [`run`]: the stage over a run directory (`cases` → `variants`), CPU
//!   work on rayon, one shard writer, resumable by fingerprint.
//! - [`check_catalog_lock`]: the rule later stages apply to refuse shards
//!   made under different catalogs unless mixing is allowed (it lives in
//!   `cfeval_schema::lineage`, where every stage can reach it; re-exported).
//!   [`run`] holds the lock the other way round: perturbing a run whose
//!   later tables were made under another catalog is refused, or retires
//!   them when [`Config::retire_downstream`] says so.

pub mod catalog;
pub mod coherence;
mod engine;
pub mod error;
mod ops;
mod run;
mod text;
mod vocab;

pub use catalog::{
    Catalog, Diagnostic, Direction, EditOp, ExpectedBranch, FactPattern, Family, Intervention, Predicate,
};
pub use engine::{Variant, apply, apply_with_text, expectation, holds};
pub use error::{Error, Result};
pub use run::{Config, InterventionCount, Report, check_catalog_lock, check_store_catalog_lock, run};
