//! The perturb crate's error type.

use std::path::PathBuf;

use crate::catalog::Diagnostic;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can stop the perturb stage (a case that cannot be edited
/// is never an error: it becomes a not-applicable row with its reason).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read catalog {path}: {source}")]
    ReadCatalog {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid catalog {path}:\n{}", render(path, .diagnostics))]
    InvalidCatalog {
        path: PathBuf,
        diagnostics: Vec<Diagnostic>,
    },
    #[error("table `{table}` holds shards made under {} different intervention catalogs ({}); pass --allow-mixed-catalogs to combine them", .hashes.len(), .hashes.join(", "))]
    MixedCatalogs { table: String, hashes: Vec<String> },
    #[error("table `{table}` has shard {file} without a catalog hash; it was not made by the perturb stage")]
    MissingCatalogHash { table: String, file: String },
    #[error("run {run} has no committed `cases` shards to perturb")]
    NoCases { run: PathBuf },
    #[error("perturb stage failed on run {run}: {source}")]
    Schema {
        run: PathBuf,
        #[source]
        source: cfeval_schema::Error,
    },
    #[error("failed to build the worker pool: {0}")]
    Pool(String),
}

fn render(path: &std::path::Path, diagnostics: &[Diagnostic]) -> String {
    diagnostics
        .iter()
        .map(|diagnostic| format!("  {}:{diagnostic}", path.display()))
        .collect::<Vec<_>>()
        .join("\n")
}
