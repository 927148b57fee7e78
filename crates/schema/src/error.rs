//! The schema crate's error type.

use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading or writing cfeval tables.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("I/O error on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to read shard {path}: {source}")]
    ReadShard {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("failed to write shard {path}: {source}")]
    WriteShard {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("shard {path} has the wrong schema for table `{table}`: {detail}")]
    WrongSchema {
        path: PathBuf,
        table: String,
        detail: String,
    },
    #[error("batch does not match the schema of table `{table}`: {detail}")]
    BatchSchema { table: String, detail: String },
    #[error("manifest {manifest} names shard {path}, which is missing")]
    MissingShard { manifest: PathBuf, path: PathBuf },
    #[error("shard {path} does not match its manifest entry: {detail}")]
    CorruptShard { path: PathBuf, detail: String },
    #[error("invalid manifest entry {path}: {source}")]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("failed to convert rows of table `{table}`: {source}")]
    Convert {
        table: String,
        #[source]
        source: serde_arrow::Error,
    },
    #[error("arrow error in table `{table}`: {source}")]
    Arrow {
        table: String,
        #[source]
        source: arrow_schema::ArrowError,
    },
    #[error("unknown table `{0}` (known: cases, cases_quarantine, variants, responses, judgments, scores)")]
    UnknownTable(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
