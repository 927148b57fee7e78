//! The error type of `cfeval-synthesize`.

use std::path::PathBuf;

/// What can stop E-Synthesis or the cohort generator. A single bad case is
/// never an error: it becomes a `cases_quarantine` row.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot tell the format of {path}: {why}; pass --format text|jsonl|agentclinic|csv")]
    UnknownFormat { path: PathBuf, why: String },
    #[error(
        "{path}: CSV header has neither a `text` column nor any known section column ({known}); columns found: {found}"
    )]
    CsvMissingColumn {
        path: PathBuf,
        known: String,
        found: String,
    },
    #[error("no input cases: {0}")]
    NoInput(String),
    #[error("the guideline table could not be loaded")]
    Guidelines(#[from] cfeval_guidelines::Error),
    #[error("failed to write the `{table}` table")]
    Shards {
        table: String,
        #[source]
        source: cfeval_schema::Error,
    },
    #[error("failed to encode the cohort as JSON")]
    Json(#[from] serde_json::Error),
    /// The extractor lexicon (or the ontology it takes drug names from)
    /// is not valid YAML of its shape; the source names the line.
    #[error("failed to parse the extractor lexicon {origin}")]
    LexiconParse {
        origin: String,
        #[source]
        source: serde_norway::Error,
    },
    /// The extractor lexicon parsed but says something impossible.
    #[error("invalid extractor lexicon {origin}: {message}")]
    Lexicon { origin: String, message: String },
    #[error("invalid configuration: {0}")]
    Config(String),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
