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
    #[error(
        "catalog lock: `{table}` of run {} was made under catalog {found}; perturbing with catalog {catalog} ({}) would mix two catalogs in one run. Perturb into a new run folder, or retire `{table}` and every later table: `cfeval perturb --run {} --catalog {} --retire-downstream` (in a pipeline: `cfeval run PIPELINE --from perturb`)",
        run.display(), file.display(), run.display(), file.display()
    )]
    CatalogLocked {
        run: PathBuf,
        table: String,
        found: String,
        catalog: String,
        file: PathBuf,
    },
    /// The run's pack and the catalog's disagree, or a pack does not load.
    #[error("{0}")]
    Pack(String),
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
