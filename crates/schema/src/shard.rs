//! Shards on disk and the commit protocol that makes them crash-safe.
//!
//! A table lives in one folder of a run (`runs/<run>/<table>/`):
//!
//! ```text
//! part-00000.parquet        committed data (ZSTD, bounded row groups)
//! _manifest/part-00000.json one entry per committed shard: rows, bytes, BLAKE3, unit, fingerprint
//! _manifest/unit-<id>.json  one record per completed unit of work and its fingerprint
//! .tmp/                     files being written
//! .lock                     advisory lock: writers hold it shared, cleanup exclusive
//! ```
//!
//! The protocol: write to `.tmp/`, fsync, hard-link to the first free
//! `part-NNNNN.parquet` name (an atomic create-if-absent, so concurrent
//! processes never take the same name), fsync the folder, then write the
//! manifest entry (temp, fsync, rename). A shard exists only once its manifest
//! entry does. Opening the store with no other writer alive removes orphans:
//! temp files and part files the manifest does not name.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ids::content_id;
use crate::table::Table;
use crate::{CFEVAL_VERSION, SCHEMA_VERSION};

const MANIFEST_DIR: &str = "_manifest";
const TMP_DIR: &str = ".tmp";
const LOCK_FILE: &str = ".lock";

/// Footer metadata keys.
pub mod meta {
    pub const TABLE: &str = "cfeval.table";
    pub const SCHEMA_VERSION: &str = "cfeval.schema_version";
    pub const VERSION: &str = "cfeval.version";
    pub const RUN: &str = "cfeval.run";
    pub const UNIT: &str = "cfeval.unit";
    pub const FINGERPRINT: &str = "cfeval.fingerprint";
    pub const CATALOG_HASH: &str = "cfeval.catalog_hash";
}

/// Size limits of the shards a store writes and the batches it reads.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    /// Rows per Parquet row group, at most.
    pub row_group_rows: usize,
    /// A row group is closed once its buffered, encoded size reaches this
    /// many bytes: what a writer holds, and what a reader decodes at once,
    /// stays bounded however wide the rows are (a variant carries a chart).
    pub row_group_bytes: usize,
    /// A shard is closed and committed once it reaches this many bytes.
    pub target_shard_bytes: u64,
    /// Rows per record batch when reading.
    pub read_batch_rows: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            row_group_rows: 64 * 1024,
            row_group_bytes: 8 * 1024 * 1024,
            target_shard_bytes: 128 * 1024 * 1024,
            read_batch_rows: 8 * 1024,
        }
    }
}

/// What every shard records about how it was made.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The run the shard belongs to.
    pub run: String,
    /// The unit of work the shard belongs to (e.g. `subject=x/mode=y/slice=1-of-3`).
    pub unit: String,
    /// Fingerprint of the inputs and settings that produced the shard.
    pub fingerprint: String,
    /// Content hash of the intervention catalog, once there is one.
    pub catalog_hash: Option<String>,
}

/// The manifest entry of one committed shard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardEntry {
    pub file: String,
    pub table: String,
    pub schema_version: u32,
    pub cfeval_version: String,
    pub rows: u64,
    pub bytes: u64,
    pub blake3: String,
    pub unit: String,
    pub fingerprint: String,
    pub catalog_hash: Option<String>,
}

/// A completed unit of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitRecord {
    pub unit: String,
    pub fingerprint: String,
    pub rows: u64,
    pub shards: Vec<String>,
}

/// One table folder: its committed shards and completed units.
#[derive(Debug)]
pub struct ShardStore {
    handle: Arc<StoreHandle>,
    entries: Vec<ShardEntry>,
    units: BTreeMap<String, UnitRecord>,
    /// Held shared for the store's lifetime, so that no other process removes
    /// our in-flight files as orphans.
    _lock: File,
}

#[derive(Debug)]
struct StoreHandle {
    dir: PathBuf,
    table: String,
    schema: SchemaRef,
    options: StoreOptions,
}

impl ShardStore {
    /// Opens (creating if needed) the folder of table `T` inside `run_dir`.
    pub fn open_table<T: Table>(run_dir: &Path) -> Result<Self> {
        Self::open(
            &run_dir.join(T::NAME),
            T::NAME,
            T::schema(),
            StoreOptions::default(),
        )
    }

    /// Opens (creating if needed) a table folder holding shards of `schema`.
    pub fn open(dir: &Path, table: &str, schema: SchemaRef, options: StoreOptions) -> Result<Self> {
        for sub in [dir.to_path_buf(), dir.join(MANIFEST_DIR), dir.join(TMP_DIR)] {
            fs_err::create_dir_all(&sub).map_err(|e| Error::io(&sub, e))?;
        }
        let lock_path = dir.join(LOCK_FILE);
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| Error::io(&lock_path, e))?;
        match lock.try_lock() {
            Ok(()) => {
                remove_orphans(dir)?;
                lock.unlock().map_err(|e| Error::io(&lock_path, e))?;
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::debug!(dir = %dir.display(), "other writers active; orphan cleanup skipped");
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
        }
        lock.lock_shared().map_err(|e| Error::io(&lock_path, e))?;
        let mut store = Self {
            handle: Arc::new(StoreHandle {
                dir: dir.to_path_buf(),
                table: table.to_string(),
                schema,
                options,
            }),
            entries: Vec::new(),
            units: BTreeMap::new(),
            _lock: lock,
        };
        store.refresh()?;
        Ok(store)
    }

    /// Opens an existing table folder for reading; a missing folder reads as
    /// empty without being created.
    pub fn open_existing(dir: &Path, table: &str, schema: SchemaRef) -> Result<Option<Self>> {
        if !dir.join(MANIFEST_DIR).is_dir() {
            return Ok(None);
        }
        Self::open(dir, table, schema, StoreOptions::default()).map(Some)
    }

    /// Reads `rows` rows per batch from now on (wide rows, such as a case or
    /// a variant with its chart, are best read a few hundred at a time).
    pub fn with_read_batch_rows(mut self, rows: usize) -> Self {
        let handle = &self.handle;
        self.handle = Arc::new(StoreHandle {
            dir: handle.dir.clone(),
            table: handle.table.clone(),
            schema: Arc::clone(&handle.schema),
            options: StoreOptions {
                read_batch_rows: rows.max(1),
                ..handle.options.clone()
            },
        });
        self
    }

    /// The table folder.
    pub fn dir(&self) -> &Path {
        &self.handle.dir
    }

    /// The table's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.handle.schema
    }

    /// Rereads the manifest (other processes may have committed since).
    pub fn refresh(&mut self) -> Result<()> {
        let manifest_dir = self.handle.dir.join(MANIFEST_DIR);
        let mut entries = Vec::new();
        let mut units = BTreeMap::new();
        for name in list_names(&manifest_dir)? {
            let path = manifest_dir.join(&name);
            if name.starts_with("part-") && name.ends_with(".json") {
                let entry: ShardEntry = read_json(&path)?;
                let shard = self.handle.dir.join(&entry.file);
                match std::fs::metadata(&shard) {
                    Ok(meta) if meta.len() == entry.bytes => {}
                    Ok(meta) => {
                        return Err(Error::CorruptShard {
                            path: shard,
                            detail: format!("{} bytes on disk, manifest says {}", meta.len(), entry.bytes),
                        });
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Err(Error::MissingShard {
                            manifest: path,
                            path: shard,
                        });
                    }
                    Err(e) => return Err(Error::io(shard, e)),
                }
                entries.push(entry);
            } else if name.starts_with("unit-") && name.ends_with(".json") {
                let record: UnitRecord = read_json(&path)?;
                units.insert(record.unit.clone(), record);
            }
        }
        entries.sort_by(|a, b| a.file.cmp(&b.file));
        self.entries = entries;
        self.units = units;
        Ok(())
    }

    /// The committed shards, in part-number order.
    pub fn entries(&self) -> &[ShardEntry] {
        &self.entries
    }

    /// Total committed rows.
    pub fn rows(&self) -> u64 {
        self.entries.iter().map(|entry| entry.rows).sum()
    }

    /// The completed units of work.
    pub fn units(&self) -> impl Iterator<Item = &UnitRecord> {
        self.units.values()
    }

    /// When `unit` last completed (its completion record's modification
    /// time), if it did.
    pub fn completed_at(&self, unit: &str) -> Option<std::time::SystemTime> {
        let path = self.handle.dir.join(MANIFEST_DIR).join(unit_record_name(unit));
        std::fs::metadata(path)
            .and_then(|metadata| metadata.modified())
            .ok()
    }

    /// When the newest committed shard was committed (its manifest entry's
    /// modification time), if there is one.
    pub fn last_commit_at(&self) -> Option<std::time::SystemTime> {
        let manifest_dir = self.handle.dir.join(MANIFEST_DIR);
        self.entries
            .iter()
            .filter_map(|entry| {
                std::fs::metadata(manifest_dir.join(entry_name(&entry.file)))
                    .and_then(|metadata| metadata.modified())
                    .ok()
            })
            .max()
    }

    /// The completion record of `unit`, if it completed.
    pub fn unit(&self, unit: &str) -> Option<&UnitRecord> {
        self.units.get(unit)
    }

    /// Whether `unit` completed under exactly this fingerprint.
    pub fn is_complete(&self, unit: &str, fingerprint: &str) -> bool {
        self.units
            .get(unit)
            .is_some_and(|record| record.fingerprint == fingerprint)
    }

    /// A writer for new shards of this table.
    pub fn writer(&self, provenance: Provenance) -> ShardWriter {
        ShardWriter {
            handle: Arc::clone(&self.handle),
            provenance,
            current: None,
            committed: Vec::new(),
            next_index: next_free_index(&self.handle.dir, &self.entries),
        }
    }

    /// Records that `unit` is complete under `fingerprint` with these shards.
    pub fn mark_complete(&mut self, unit: &str, fingerprint: &str, shards: &[ShardEntry]) -> Result<()> {
        let record = UnitRecord {
            unit: unit.to_string(),
            fingerprint: fingerprint.to_string(),
            rows: shards.iter().map(|entry| entry.rows).sum(),
            shards: shards.iter().map(|entry| entry.file.clone()).collect(),
        };
        let name = unit_record_name(unit);
        write_json_atomic(&self.handle.dir.join(MANIFEST_DIR), &name, &record)?;
        self.units.insert(unit.to_string(), record);
        Ok(())
    }

    /// Removes every shard and the completion record of `unit` (manifest
    /// entries first, so a crash midway never leaves a half-visible unit).
    pub fn retire_unit(&mut self, unit: &str) -> Result<u64> {
        let manifest_dir = self.handle.dir.join(MANIFEST_DIR);
        let unit_file = manifest_dir.join(unit_record_name(unit));
        remove_if_exists(&unit_file)?;
        let mut removed = 0;
        for entry in self.entries.iter().filter(|entry| entry.unit == unit) {
            remove_if_exists(&manifest_dir.join(entry_name(&entry.file)))?;
            remove_if_exists(&self.handle.dir.join(&entry.file))?;
            removed += entry.rows;
        }
        sync_dir(&manifest_dir)?;
        self.refresh()?;
        Ok(removed)
    }

    /// Reads every committed shard in order, one batch at a time.
    pub fn scan(&self, projection: Option<&[&str]>) -> Result<Scan> {
        let columns = match projection {
            None => None,
            Some(names) => {
                let mut indices = Vec::with_capacity(names.len());
                for name in names {
                    let index = self.handle.schema.index_of(name).map_err(|source| Error::Arrow {
                        table: self.handle.table.clone(),
                        source,
                    })?;
                    indices.push(index);
                }
                Some(indices)
            }
        };
        Ok(Scan {
            handle: Arc::clone(&self.handle),
            files: self
                .entries
                .iter()
                .map(|entry| self.handle.dir.join(&entry.file))
                .collect(),
            next_file: 0,
            columns,
            current: None,
        })
    }

    /// Reads every committed row as `T`, one batch of rows at a time.
    pub fn read_rows<T: Table>(&self) -> Result<impl Iterator<Item = Result<Vec<T>>> + use<T>> {
        Ok(self
            .scan(None)?
            .map(|batch| batch.and_then(|batch| T::from_batch(&batch))))
    }

    /// Reads only `columns` of every committed row, as `T` (a struct whose
    /// fields are those columns), one batch of rows at a time: what a stage
    /// needs without decoding the wide columns it does not read.
    pub fn read_columns<T: serde::de::DeserializeOwned>(
        &self,
        columns: &[&str],
    ) -> Result<impl Iterator<Item = Result<Vec<T>>> + use<T>> {
        let table = self.handle.table.clone();
        Ok(self.scan(Some(columns))?.map(move |batch| {
            batch.and_then(|batch| {
                serde_arrow::from_record_batch(&batch).map_err(|source| Error::Convert {
                    table: table.clone(),
                    source,
                })
            })
        }))
    }

    /// Recomputes the BLAKE3 of every committed shard and checks it against
    /// the manifest.
    pub fn verify(&self) -> Result<()> {
        for entry in &self.entries {
            let path = self.handle.dir.join(&entry.file);
            let hash = hash_file(&path)?;
            if hash != entry.blake3 {
                return Err(Error::CorruptShard {
                    path,
                    detail: "BLAKE3 differs from the manifest".into(),
                });
            }
        }
        Ok(())
    }
}

/// Writes shards of one table: checks each batch against the schema, rolls
/// files by size, and commits each file through the protocol above.
#[derive(Debug)]
pub struct ShardWriter {
    handle: Arc<StoreHandle>,
    provenance: Provenance,
    current: Option<OpenShard>,
    committed: Vec<ShardEntry>,
    next_index: u64,
}

struct OpenShard {
    tmp_path: PathBuf,
    writer: ArrowWriter<File>,
    rows: u64,
}

impl std::fmt::Debug for OpenShard {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("OpenShard")
            .field("tmp_path", &self.tmp_path)
            .field("rows", &self.rows)
            .finish()
    }
}

/// Rows converted to one record batch by [`ShardWriter::write_rows`].
const WRITE_BATCH_ROWS: usize = 1024;

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ShardWriter {
    /// Appends rows, converting them a few at a time so that the row-group
    /// byte limit is checked often.
    pub fn write_rows<T: Table>(&mut self, rows: &[T]) -> Result<()> {
        let chunk = self.handle.options.row_group_rows.clamp(1, WRITE_BATCH_ROWS);
        for part in rows.chunks(chunk) {
            let batch = T::to_batch(part)?;
            self.write_batch(&batch)?;
        }
        Ok(())
    }

    /// Appends a record batch; it must have exactly the table's schema.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        check_schema(&self.handle.table, &self.handle.schema, batch.schema().as_ref())?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if self.current.is_none() {
            self.current = Some(self.open_shard()?);
        }
        let full = match self.current.as_mut() {
            Some(shard) => {
                shard.writer.write(batch).map_err(|source| Error::WriteShard {
                    path: shard.tmp_path.clone(),
                    source,
                })?;
                shard.rows += batch.num_rows() as u64;
                if shard.writer.in_progress_size() >= self.handle.options.row_group_bytes {
                    shard.writer.flush().map_err(|source| Error::WriteShard {
                        path: shard.tmp_path.clone(),
                        source,
                    })?;
                }
                (shard.writer.bytes_written() + shard.writer.in_progress_size()) as u64
                    >= self.handle.options.target_shard_bytes
            }
            None => false,
        };
        if full {
            self.flush()?;
        }
        Ok(())
    }

    /// Closes and commits the shard being written, if it has rows: a
    /// checkpoint after which those rows survive any crash.
    pub fn flush(&mut self) -> Result<Option<ShardEntry>> {
        let Some(shard) = self.current.take() else {
            return Ok(None);
        };
        let entry = self.commit(shard)?;
        self.committed.push(entry.clone());
        Ok(Some(entry))
    }

    /// Commits what is left and returns every shard this writer committed.
    pub fn finish(mut self) -> Result<Vec<ShardEntry>> {
        self.flush()?;
        Ok(std::mem::take(&mut self.committed))
    }

    /// The shards committed so far.
    pub fn committed(&self) -> &[ShardEntry] {
        &self.committed
    }

    fn open_shard(&self) -> Result<OpenShard> {
        let tmp_path = self.handle.dir.join(TMP_DIR).join(format!(
            "{}-{}.parquet",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let file = File::create(&tmp_path).map_err(|e| Error::io(&tmp_path, e))?;
        let mut metadata = vec![
            KeyValue::new(meta::TABLE.to_string(), self.handle.table.clone()),
            KeyValue::new(meta::SCHEMA_VERSION.to_string(), SCHEMA_VERSION.to_string()),
            KeyValue::new(meta::VERSION.to_string(), CFEVAL_VERSION.to_string()),
            KeyValue::new(meta::RUN.to_string(), self.provenance.run.clone()),
            KeyValue::new(meta::UNIT.to_string(), self.provenance.unit.clone()),
            KeyValue::new(meta::FINGERPRINT.to_string(), self.provenance.fingerprint.clone()),
        ];
        if let Some(hash) = &self.provenance.catalog_hash {
            metadata.push(KeyValue::new(meta::CATALOG_HASH.to_string(), hash.clone()));
        }
        let properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap_or_default()))
            .set_max_row_group_row_count(Some(self.handle.options.row_group_rows))
            .set_key_value_metadata(Some(metadata))
            .build();
        let writer = ArrowWriter::try_new(file, Arc::clone(&self.handle.schema), Some(properties)).map_err(
            |source| Error::WriteShard {
                path: tmp_path.clone(),
                source,
            },
        )?;
        Ok(OpenShard {
            tmp_path,
            writer,
            rows: 0,
        })
    }

    fn commit(&mut self, shard: OpenShard) -> Result<ShardEntry> {
        let OpenShard {
            tmp_path,
            writer,
            rows,
        } = shard;
        let file = writer.into_inner().map_err(|source| Error::WriteShard {
            path: tmp_path.clone(),
            source,
        })?;
        file.sync_all().map_err(|e| Error::io(&tmp_path, e))?;
        drop(file);
        let bytes = std::fs::metadata(&tmp_path)
            .map_err(|e| Error::io(&tmp_path, e))?
            .len();
        let blake3 = hash_file(&tmp_path)?;
        // Claim the first free part name atomically.
        let name = loop {
            let name = format!("part-{:05}.parquet", self.next_index);
            let target = self.handle.dir.join(&name);
            match std::fs::hard_link(&tmp_path, &target) {
                Ok(()) => break name,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.next_index += 1,
                Err(e) => return Err(Error::io(target, e)),
            }
        };
        self.next_index += 1;
        remove_if_exists(&tmp_path)?;
        sync_dir(&self.handle.dir)?;
        let entry = ShardEntry {
            file: name.clone(),
            table: self.handle.table.clone(),
            schema_version: SCHEMA_VERSION,
            cfeval_version: CFEVAL_VERSION.to_string(),
            rows,
            bytes,
            blake3,
            unit: self.provenance.unit.clone(),
            fingerprint: self.provenance.fingerprint.clone(),
            catalog_hash: self.provenance.catalog_hash.clone(),
        };
        let manifest_name = entry_name(&name);
        write_json_atomic(&self.handle.dir.join(MANIFEST_DIR), &manifest_name, &entry)?;
        tracing::debug!(shard = %name, rows, bytes, "committed shard");
        Ok(entry)
    }
}

/// Streams the batches of a table's committed shards.
pub struct Scan {
    handle: Arc<StoreHandle>,
    files: Vec<PathBuf>,
    next_file: usize,
    columns: Option<Vec<usize>>,
    current: Option<(PathBuf, ParquetRecordBatchReader)>,
}

impl Scan {
    fn open_next(&mut self) -> Option<Result<()>> {
        let path = self.files.get(self.next_file)?.clone();
        self.next_file += 1;
        Some(
            open_shard_reader(&self.handle, &path, self.columns.as_deref()).map(|reader| {
                self.current = Some((path, reader));
            }),
        )
    }
}

impl Iterator for Scan {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some((path, reader)) = self.current.as_mut() {
                match reader.next() {
                    Some(Ok(batch)) => return Some(Ok(batch)),
                    Some(Err(source)) => {
                        let path = path.clone();
                        self.current = None;
                        self.next_file = self.files.len();
                        return Some(Err(Error::Arrow {
                            table: format!("{} ({})", self.handle.table, path.display()),
                            source,
                        }));
                    }
                    None => self.current = None,
                }
            }
            match self.open_next()? {
                Ok(()) => continue,
                Err(error) => {
                    self.next_file = self.files.len();
                    return Some(Err(error));
                }
            }
        }
    }
}

fn open_shard_reader(
    handle: &StoreHandle,
    path: &Path,
    columns: Option<&[usize]>,
) -> Result<ParquetRecordBatchReader> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(|source| Error::ReadShard {
        path: path.to_path_buf(),
        source,
    })?;
    let file_table = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|pairs| pairs.iter().find(|pair| pair.key == meta::TABLE))
        .and_then(|pair| pair.value.clone());
    if file_table.as_deref() != Some(handle.table.as_str()) {
        return Err(Error::WrongSchema {
            path: path.to_path_buf(),
            table: handle.table.clone(),
            detail: format!(
                "the file says it holds table {:?}",
                file_table.unwrap_or_default()
            ),
        });
    }
    check_schema(&handle.table, &handle.schema, builder.schema().as_ref()).map_err(|error| match error {
        Error::BatchSchema { detail, .. } => Error::WrongSchema {
            path: path.to_path_buf(),
            table: handle.table.clone(),
            detail,
        },
        other => other,
    })?;
    let mut builder = builder.with_batch_size(handle.options.read_batch_rows);
    if let Some(columns) = columns {
        let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
        builder = builder.with_projection(mask);
    }
    builder.build().map_err(|source| Error::ReadShard {
        path: path.to_path_buf(),
        source,
    })
}

/// Checks that `actual` has exactly the fields of `expected` (metadata aside).
fn check_schema(table: &str, expected: &Schema, actual: &Schema) -> Result<()> {
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

fn next_free_index(dir: &Path, entries: &[ShardEntry]) -> u64 {
    let from_entries = entries.iter().filter_map(|entry| part_index(&entry.file)).max();
    let from_disk = list_names(dir)
        .unwrap_or_default()
        .iter()
        .filter_map(|name| part_index(name))
        .max();
    from_entries.max(from_disk).map_or(0, |index| index + 1)
}

fn part_index(name: &str) -> Option<u64> {
    name.strip_prefix("part-")?.strip_suffix(".parquet")?.parse().ok()
}

fn remove_orphans(dir: &Path) -> Result<()> {
    let tmp = dir.join(TMP_DIR);
    for name in list_names(&tmp)? {
        remove_if_exists(&tmp.join(name))?;
    }
    let manifest_dir = dir.join(MANIFEST_DIR);
    let manifest_names: BTreeSet<String> = list_names(&manifest_dir)?.into_iter().collect();
    for name in &manifest_names {
        if name.ends_with(".tmp") {
            remove_if_exists(&manifest_dir.join(name))?;
        }
    }
    for name in list_names(dir)? {
        if part_index(&name).is_some() {
            let entry = entry_name(&name);
            if !manifest_names.contains(&entry) {
                tracing::info!(shard = %dir.join(&name).display(), "removing orphan shard");
                remove_if_exists(&dir.join(&name))?;
            }
        }
    }
    Ok(())
}

fn list_names(dir: &Path) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(names),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for item in read {
        let item = item.map_err(|e| Error::io(dir, e))?;
        if let Some(name) = item.file_name().to_str() {
            names.push(name.to_string());
        }
    }
    names.sort();
    Ok(names)
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_slice(&text).map_err(|source| Error::Manifest {
        path: path.to_path_buf(),
        source,
    })
}

/// The manifest entry's file name of the shard `part-NNNNN.parquet`.
fn entry_name(shard: &str) -> String {
    format!("{}.json", shard.trim_end_matches(".parquet"))
}

/// The file name of `unit`'s completion record in `_manifest/`.
fn unit_record_name(unit: &str) -> String {
    format!("unit-{}.json", content_id("unit", &[unit]))
}

fn write_json_atomic<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<()> {
    let target = dir.join(name);
    let json = serde_json::to_vec_pretty(value).map_err(|source| Error::Manifest {
        path: target.clone(),
        source,
    })?;
    crate::atomic::write_atomic(&target, &json).map_err(|e| Error::io(&target, e))
}

fn remove_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|file| file.sync_all())
        .map_err(|e| Error::io(dir, e))
}

fn hash_file(path: &Path) -> Result<String> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = blake3::Hasher::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer).map_err(|e| Error::io(path, e))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hasher.finalize().to_hex().to_string())
}
