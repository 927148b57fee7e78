//! The error type of `cfeval-guidelines`.

/// What can go wrong loading a guideline rule table.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("failed to read guideline table {path}")]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to parse guideline table {origin}: {source}")]
    Parse {
        origin: String,
        #[source]
        source: serde_norway::Error,
    },
    #[error("invalid guideline table {origin}, rule {rule}: {message}")]
    Invalid {
        origin: String,
        rule: String,
        message: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
