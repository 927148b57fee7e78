//! `cfeval-schema` owns every table cfeval writes and how it is written.
//!
//! - [`tables`]: the row types of `cases`, `variants`, `responses`,
//!   `judgments`, `scores`, the quarantine tables and `cfeval compare`'s
//!   `comparison` (written outside runs), each with its Arrow
//!   schema derived through [`Table`].
//! - [`shard`]: the shard writer (schema checked per batch, ZSTD, bounded row
//!   groups, rolled by size, `part-NNNNN.parquet`), the streaming reader, and
//!   the commit protocol (temp file → fsync → rename → manifest entry) that
//!   makes stages resumable and crash-safe.
//! - [`ids`]: stable BLAKE3 content-hash ids and settings fingerprints.
//! - [`lineage`]: what each unit was computed from, whether it is complete
//!   and current, what a stage may take as input ([`lineage::require_input`])
//!   and the catalog lock.
//! - [`status`]: the statuses of a response row (`ok`, `error` and the
//!   unusable replies) and the normalised finish reasons.
//! - [`units`]: how each stage names its units of work.
//! - [`verify`]: every check of a whole run, none fatal (`cfeval verify`).
//!
//! Every shard's footer records the schema version, the cfeval version, the
//! run, the unit of work, the settings fingerprint and the catalog hash.

pub mod atomic;
pub mod error;
pub mod ids;
pub mod lineage;
pub mod pack;
pub mod progress;
pub mod sample;
pub mod shard;
pub mod status;
mod table;
pub mod tables;
pub mod units;
pub mod verify;
pub mod vocab;

pub use atomic::write_atomic;
pub use error::{Error, Result};
pub use progress::Progress;
pub use shard::{
    Provenance, Scan, ShardEntry, ShardStore, ShardWriter, StoreOptions, UnitRecord, set_verify_reads,
    verify_reads,
};
pub use status::{RESPONSE_ERROR, ResponseStatus, normalize_finish_reason};
pub use table::{Table, TableName};
pub use tables::*;

/// Version of the table schemas; bumped on any column change. 2:
/// `responses.finish_reason` and `tries`, `variants.coherence`. 3:
/// `responses.sample` and `judgments.sample` (repeated samples). 4:
/// `variants.expected.diagnosis` and `urgency` (diagnosis packs). 5:
/// `responses.dialogue` and the trace's `speaker`, tokens and latency
/// (dialogue mode). 6: `responses.harness` (harness mode).
pub const SCHEMA_VERSION: u32 = 6;

/// The cfeval version that wrote a shard.
pub const CFEVAL_VERSION: &str = env!("CARGO_PKG_VERSION");
