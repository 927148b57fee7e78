//! Reading committed shards, and checking each against its manifest entry
//! before its first batch: size, BLAKE3 (streamed, once per file and
//! process), the footer's provenance, the Arrow schema and the row count.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::metadata::ParquetMetaData;

use super::files::{MANIFEST_DIR, entry_name, hash_file};
use super::{ShardEntry, StoreHandle, meta};
use crate::SCHEMA_VERSION;
use crate::error::{Error, Result};

/// A committed shard: its path, its manifest entry and where that lives.
#[derive(Debug, Clone)]
pub(crate) struct ShardRef {
    pub path: PathBuf,
    pub manifest: PathBuf,
    pub entry: ShardEntry,
}

impl ShardRef {
    pub(crate) fn new(dir: &Path, entry: &ShardEntry) -> Self {
        Self {
            path: dir.join(&entry.file),
            manifest: dir.join(MANIFEST_DIR).join(entry_name(&entry.file)),
            entry: entry.clone(),
        }
    }

    /// `_manifest/part-NNNNN.json`, as a message names it.
    fn manifest_name(&self) -> String {
        format!("{MANIFEST_DIR}/{}", entry_name(&self.entry.file))
    }

    /// A file that vanished between two looks at it (retired by another
    /// writer) is a missing shard, not an I/O failure: a scan skips it once
    /// its manifest entry is gone too.
    fn missing_if_gone(&self, error: Error) -> Error {
        match error {
            Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Error::MissingShard {
                    manifest: self.manifest.clone(),
                    path: self.path.clone(),
                }
            }
            other => other,
        }
    }

    fn damaged(&self, detail: impl std::fmt::Display) -> Error {
        Error::damaged(&self.path, detail.to_string())
    }

    /// Checks that the shard is a plain file of the entry's size.
    pub(crate) fn check_size(&self) -> Result<std::fs::Metadata> {
        let metadata = match std::fs::symlink_metadata(&self.path) {
            Ok(metadata) => metadata,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingShard {
                    manifest: self.manifest.clone(),
                    path: self.path.clone(),
                });
            }
            Err(e) => return Err(Error::io(&self.path, e)),
        };
        if metadata.file_type().is_symlink() {
            return Err(
                self.damaged("is a symbolic link; a shard must be a plain file inside its table folder")
            );
        }
        if !metadata.is_file() {
            return Err(self.damaged("is not a regular file"));
        }
        if metadata.len() != self.entry.bytes {
            return Err(self.damaged(format!(
                "{} bytes on disk, its manifest entry {} says {}",
                metadata.len(),
                self.manifest_name(),
                self.entry.bytes
            )));
        }
        Ok(metadata)
    }

    /// Checks size and BLAKE3 against the manifest entry, hashing the file
    /// only when this process has not verified it as it is now (same size
    /// and modification time); returns the bytes hashed.
    pub(crate) fn check_content(&self) -> Result<u64> {
        let metadata = self.check_size()?;
        let modified = metadata.modified().ok();
        let key = |hash: &str| Verified {
            bytes: metadata.len(),
            modified,
            blake3: hash.to_string(),
        };
        if modified.is_some()
            && verified_cache()
                .lock()
                .is_ok_and(|cache| cache.get(&self.path) == Some(&key(&self.entry.blake3)))
        {
            return Ok(0);
        }
        let hash = hash_file(&self.path).map_err(|error| self.missing_if_gone(error))?;
        if hash != self.entry.blake3 {
            return Err(self.damaged(format!(
                "BLAKE3 differs from its manifest entry {}",
                self.manifest_name()
            )));
        }
        if modified.is_some()
            && let Ok(mut cache) = verified_cache().lock()
        {
            cache.insert(self.path.clone(), key(&hash));
        }
        Ok(metadata.len())
    }

    /// Checks the footer's provenance and row count against the entry.
    pub(crate) fn check_footer(&self, table: &str, metadata: &ParquetMetaData) -> Result<()> {
        let file = metadata.file_metadata();
        let pairs = file.key_value_metadata();
        let value = |key: &str| {
            pairs
                .and_then(|pairs| pairs.iter().find(|pair| pair.key == key))
                .and_then(|pair| pair.value.clone())
        };
        let Some(found_table) = value(meta::TABLE) else {
            return Err(
                self.damaged("has no cfeval footer (not a shard written by cfeval: a foreign Parquet file?)")
            );
        };
        if found_table != table {
            return Err(Error::WrongSchema {
                path: self.path.clone(),
                table: table.to_string(),
                detail: format!("the file says it holds table {found_table:?}"),
            });
        }
        let entry = &self.entry;
        let mut expected: Vec<(&str, &str, Option<String>)> = vec![
            (
                "schema version",
                meta::SCHEMA_VERSION,
                Some(entry.schema_version.to_string()),
            ),
            ("unit", meta::UNIT, Some(entry.unit.clone())),
            ("fingerprint", meta::FINGERPRINT, Some(entry.fingerprint.clone())),
            ("catalog hash", meta::CATALOG_HASH, entry.catalog_hash.clone()),
        ];
        if let Some(run) = &entry.run {
            expected.push(("run", meta::RUN, Some(run.clone())));
        }
        for (what, key, want) in expected {
            let found = value(key);
            if found != want {
                return Err(self.damaged(format!(
                    "its footer says {what} {}, its manifest entry {} says {}",
                    show(found.as_deref()),
                    self.manifest_name(),
                    show(want.as_deref())
                )));
            }
        }
        if entry.schema_version != SCHEMA_VERSION {
            return Err(self.damaged(format!(
                "written with schema version {}, this cfeval reads version {SCHEMA_VERSION}",
                entry.schema_version
            )));
        }
        if u64::try_from(file.num_rows()).ok() != Some(entry.rows) {
            return Err(self.damaged(format!(
                "its footer says {} rows, its manifest entry {} says {}",
                file.num_rows(),
                self.manifest_name(),
                entry.rows
            )));
        }
        Ok(())
    }

    /// The error of a shard that yielded `rows` rows in all.
    fn check_rows_read(&self, rows: u64) -> Result<()> {
        if rows == self.entry.rows {
            return Ok(());
        }
        Err(self.damaged(format!(
            "{rows} rows read, its manifest entry {} says {}",
            self.manifest_name(),
            self.entry.rows
        )))
    }
}

fn show(value: Option<&str>) -> String {
    value.map_or_else(|| "nothing".to_string(), |value| format!("{value:?}"))
}

/// A shard this process has hashed and found matching its manifest entry.
#[derive(Debug, PartialEq)]
struct Verified {
    bytes: u64,
    modified: Option<SystemTime>,
    blake3: String,
}

fn verified_cache() -> &'static Mutex<HashMap<PathBuf, Verified>> {
    static CACHE: OnceLock<Mutex<HashMap<PathBuf, Verified>>> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// Streams the batches of a table's committed shards.
pub struct Scan {
    handle: Arc<StoreHandle>,
    shards: Vec<ShardRef>,
    next_file: usize,
    columns: Option<Vec<usize>>,
    current: Option<Current>,
}

struct Current {
    shard: usize,
    reader: ParquetRecordBatchReader,
    rows: u64,
}

impl Scan {
    pub(super) fn new(handle: Arc<StoreHandle>, shards: Vec<ShardRef>, columns: Option<Vec<usize>>) -> Self {
        Self {
            handle,
            shards,
            next_file: 0,
            columns,
            current: None,
        }
    }

    /// Keeps only the shards whose manifest entry passes `keep`.
    pub(super) fn retain_shards(&mut self, keep: impl Fn(&ShardEntry) -> bool) {
        self.shards.retain(|shard| keep(&shard.entry));
    }

    fn open_next(&mut self) -> Option<Result<()>> {
        loop {
            let index = self.next_file;
            let shard = self.shards.get(index)?;
            self.next_file += 1;
            match open_shard_reader(&self.handle, shard, self.columns.as_deref()) {
                Ok(reader) => {
                    self.current = Some(Current {
                        shard: index,
                        reader,
                        rows: 0,
                    });
                    return Some(Ok(()));
                }
                // Retired by another writer since the scan began (its entry
                // goes first, then its file): gone is gone, as in `refresh`.
                Err(Error::MissingShard { .. }) if !shard.manifest.exists() => continue,
                Err(error) => return Some(Err(error)),
            }
        }
    }

    /// Stops the scan after an error.
    fn fail(&mut self, error: Error) -> Option<Result<RecordBatch>> {
        self.current = None;
        self.next_file = self.shards.len();
        Some(Err(error))
    }
}

impl Iterator for Scan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(current) = self.current.as_mut() {
                let shard = &self.shards[current.shard];
                match current.reader.next() {
                    Some(Ok(batch)) => {
                        current.rows += batch.num_rows() as u64;
                        return Some(Ok(batch));
                    }
                    Some(Err(source)) => {
                        let error = Error::Arrow {
                            table: format!("{} ({})", self.handle.table, shard.path.display()),
                            source,
                        };
                        return self.fail(error);
                    }
                    None => {
                        let checked = shard.check_rows_read(current.rows);
                        self.current = None;
                        if let Err(error) = checked {
                            return self.fail(error);
                        }
                    }
                }
            }
            match self.open_next()? {
                Ok(()) => continue,
                Err(error) => return self.fail(error),
            }
        }
    }
}

/// Opens one shard for reading after checking it against its entry.
fn open_shard_reader(
    handle: &StoreHandle,
    shard: &ShardRef,
    columns: Option<&[usize]>,
) -> Result<ParquetRecordBatchReader> {
    let (builder, _) = open_checked(&handle.table, &handle.schema, shard, handle.options.verify)?;
    let mut builder = builder.with_batch_size(handle.options.read_batch_rows);
    if let Some(columns) = columns {
        let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
        builder = builder.with_projection(mask);
    }
    builder.build().map_err(|source| Error::ReadShard {
        path: shard.path.clone(),
        source,
    })
}

/// Checks a whole shard without decoding its rows: its content (when
/// `hash`; its size always), footer and schema. Returns the bytes hashed.
pub(crate) fn check_shard(table: &str, schema: &Schema, shard: &ShardRef, hash: bool) -> Result<u64> {
    open_checked(table, schema, shard, hash).map(|(_, hashed)| hashed)
}

/// Checks a shard (content when `hash`, size always; then footer and
/// schema) and returns its reader builder and the bytes hashed.
fn open_checked(
    table: &str,
    schema: &Schema,
    shard: &ShardRef,
    hash: bool,
) -> Result<(ParquetRecordBatchReaderBuilder<File>, u64)> {
    let hashed = if hash {
        shard.check_content()?
    } else {
        shard.check_size()?;
        0
    };
    let path = &shard.path;
    let file = File::open(path).map_err(|e| shard.missing_if_gone(Error::io(path, e)))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|source| Error::ReadShard {
        path: path.to_path_buf(),
        source,
    })?;
    shard.check_footer(table, builder.metadata())?;
    check_schema(table, schema, builder.schema().as_ref()).map_err(|error| match error {
        Error::BatchSchema { detail, .. } => Error::WrongSchema {
            path: path.to_path_buf(),
            table: table.to_string(),
            detail,
        },
        other => other,
    })?;
    Ok((builder, hashed))
}

/// Checks that `actual` has exactly the fields of `expected` (metadata aside).
pub(crate) fn check_schema(table: &str, expected: &Schema, actual: &Schema) -> Result<()> {
    let detail = if expected.fields().len() != actual.fields().len() {
        Some(format!(
            "{} columns, expected {}",
            actual.fields().len(),
            expected.fields().len()
        ))
    } else {
        expected
            .fields()
            .iter()
            .zip(actual.fields().iter())
            .find_map(|(want, got)| {
                (want.name() != got.name()
                    || want.data_type() != got.data_type()
                    || want.is_nullable() != got.is_nullable())
                .then(|| {
                    format!(
                        "column `{}` is {}{}, expected `{}` {}{}",
                        got.name(),
                        got.data_type(),
                        if got.is_nullable() { " (nullable)" } else { "" },
                        want.name(),
                        want.data_type(),
                        if want.is_nullable() { " (nullable)" } else { "" },
                    )
                })
            })
    };
    match detail {
        Some(detail) => Err(Error::BatchSchema {
            table: table.to_string(),
            detail,
        }),
        None => Ok(()),
    }
}
