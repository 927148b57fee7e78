//! The schema crate's error type.
//!
//! Messages say what was being done and name the file; a wrapped cause is
//! kept as the error's source (printed once, by whoever prints the chain),
//! never repeated in the message.

use std::path::{Path, PathBuf};

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while reading or writing cfeval tables.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file operation failed.
    #[error("I/O error on {path}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Parquet could not read a shard (after its size and hash matched, or
    /// with verification off).
    #[error("failed to read shard {path}")]
    ReadShard {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// Parquet could not write a shard.
    #[error("failed to write shard {path}")]
    WriteShard {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A shard holds another table or other columns than its folder's.
    #[error("shard {path} has the wrong schema for table `{table}`: {detail}")]
    WrongSchema {
        path: PathBuf,
        table: String,
        detail: String,
    },
    /// A batch handed to the writer does not have the table's columns.
    #[error("batch does not match the schema of table `{table}`: {detail}")]
    BatchSchema { table: String, detail: String },
    /// A manifest entry names a shard file that is not there.
    #[error("manifest {manifest} names shard {path}, which is missing; run `cfeval verify {}`", run_of_shard(path).display())]
    MissingShard { manifest: PathBuf, path: PathBuf },
    /// A committed shard does not match its manifest entry (size, BLAKE3,
    /// footer, row count) or is not a plain file.
    #[error("{}: {detail} — the shard is damaged; run `cfeval verify {}`", path.display(), run.display())]
    DamagedShard {
        path: PathBuf,
        detail: String,
        /// The run folder, for the hint.
        run: PathBuf,
    },
    /// A manifest entry or unit record names what it must not (a path
    /// outside its table folder, another entry's shard, another table).
    #[error("{}: {detail}; run `cfeval verify {}`", path.display(), run.display())]
    BadManifest {
        path: PathBuf,
        detail: String,
        /// The run folder, for the hint.
        run: PathBuf,
    },
    /// A manifest entry or unit record is not valid JSON of its kind.
    #[error("invalid manifest entry {path}")]
    Manifest {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A table folder has no `_manifest/`: none of its shards is committed.
    #[error(
        "{} has no manifest folder (_manifest/ is missing), so none of its shards can be trusted; run `cfeval verify {}`",
        dir.display(),
        run.display()
    )]
    NoManifest {
        dir: PathBuf,
        /// The run folder, for the hint.
        run: PathBuf,
    },
    /// A write was attempted through a store opened for reading only.
    #[error("table folder {dir} was opened for reading only")]
    ReadOnly { dir: PathBuf },
    /// A stage's input table is missing, partial, stale or damaged; `detail`
    /// says what is wrong, then which command makes it ready.
    #[error("table `{table}` of run {} is not ready: {detail}", run.display())]
    InputNotReady {
        table: String,
        run: PathBuf,
        detail: String,
    },
    /// Shards a stage reads were made under different catalogs.
    #[error("table `{table}` holds shards made under {} different intervention catalogs ({}); pass --allow-mixed-catalogs to combine them", .hashes.len(), .hashes.join(", "))]
    MixedCatalogs { table: String, hashes: Vec<String> },
    /// A shard a stage reads carries no catalog hash.
    #[error("table `{table}` has shard {file} without a catalog hash; it was not made by the perturb stage")]
    MissingCatalogHash { table: String, file: String },
    /// Rows could not be converted to or from Arrow.
    #[error("failed to convert rows of table `{table}`")]
    Convert {
        table: String,
        #[source]
        source: serde_arrow::Error,
    },
    /// An Arrow operation failed (a projection naming an unknown column, a
    /// batch that cannot be decoded).
    #[error("arrow error in table `{table}`")]
    Arrow {
        table: String,
        #[source]
        source: arrow_schema::ArrowError,
    },
    /// A table name that is not one of the run's tables.
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

    /// A damaged shard (or table folder) at `path`.
    pub(crate) fn damaged(path: &Path, detail: String) -> Self {
        Self::DamagedShard {
            path: path.to_path_buf(),
            detail,
            run: run_of_shard(path),
        }
    }

    /// A bad manifest file at `path` (`RUN/TABLE/_manifest/NAME.json`).
    pub(crate) fn bad_manifest(path: &Path, detail: String) -> Self {
        Self::BadManifest {
            path: path.to_path_buf(),
            detail,
            run: run_of_shard(path.parent().unwrap_or(path)),
        }
    }
}

/// The run folder of a file inside a table folder (`RUN/TABLE/FILE`).
pub(crate) fn run_of_shard(path: &Path) -> PathBuf {
    path.parent().map_or_else(|| PathBuf::from("."), run_of_table)
}

/// The run folder of a table folder (`RUN/TABLE`).
pub(crate) fn run_of_table(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
