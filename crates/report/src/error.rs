//! Errors of the report.

use std::path::PathBuf;

/// What can go wrong while writing a run's report.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read the {table} table of run {run}")]
    Table {
        table: &'static str,
        run: PathBuf,
        #[source]
        source: cfeval_schema::Error,
    },
    #[error("failed to read columns of the {table} table of run {run}: {detail}")]
    Columns {
        table: &'static str,
        run: PathBuf,
        detail: String,
    },
    #[error("failed to draw plot {plot}: {detail}")]
    Plot { plot: String, detail: String },
    #[error("failed to render template {template}")]
    Template {
        template: String,
        #[source]
        source: minijinja::Error,
    },
    #[error("failed to write {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Result with the report's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
