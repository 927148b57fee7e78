//! Errors of the aggregate stage.

use std::path::PathBuf;

/// What can go wrong while aggregating judgments into scores.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read or write a table")]
    Schema(#[from] cfeval_schema::Error),
    #[error("judgments batch: column `{column}` is missing or has an unexpected type")]
    Column { column: String },
    #[error("invalid bootstrap design: {0}")]
    Design(String),
    #[error("invalid aggregate settings: {0}")]
    Config(String),
    #[error(
        "run {run} has no judgments (nothing to aggregate in {path}); run `cfeval judge --run {run} --judge JUDGE` first"
    )]
    NoJudgments { run: String, path: PathBuf },
    #[error(
        "judgments were made under different intervention catalogs ({first} and {second}); pass `allow_mixed_catalogs` to aggregate them anyway"
    )]
    MixedCatalogs { first: String, second: String },
    #[error("runs {} and {} cannot be compared: {reason}", a.display(), b.display())]
    Incomparable { a: PathBuf, b: PathBuf, reason: String },
    #[error("judge `{judge}` has no judgments in run {} (its judges: {found}); pick one with --judge", run.display())]
    NoJudge {
        judge: String,
        run: PathBuf,
        found: String,
    },
    /// `cfeval power`: a setting, or a pilot, it cannot plan from.
    #[error("cannot plan the number of cases: {0}")]
    Power(String),
    #[error("failed to read human labels {path}, row {row}: {detail}")]
    HumanLabels { path: PathBuf, row: u64, detail: String },
    #[error("failed to render the report: {0}")]
    Render(String),
    #[error("failed to read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Result with the aggregate stage's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
