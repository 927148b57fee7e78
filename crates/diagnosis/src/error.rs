//! Errors of the diagnosis crate.

use std::path::PathBuf;

/// What can go wrong loading the diagnostic task's data.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A data file could not be read.
    #[error("failed to read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A data file is malformed: `origin:line: what is wrong`.
    #[error("{0}")]
    Invalid(String),
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
