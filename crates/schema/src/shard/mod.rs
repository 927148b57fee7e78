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
//!
//! A shard is rewritten (a unit retrying some of its rows) by committing a
//! new shard whose entry lists the old one in `replaces`: that one rename is
//! the switch. From then on readers skip the replaced shard, which is then
//! retired (entry, then file); a crash before that leaves it for the next
//! writer that opens the table alone. So a kill at any point shows readers
//! either the old rows or the new ones, never both and never neither.
//!
//! What is read is verified. Opening a store reads its manifest and checks
//! every entry: it names a plain `part-NNNNN.parquet` of this folder (never
//! `../`, an absolute path or a sub-folder), the entry file's own name, this
//! table, and a plain file (not a symbolic link) of the entry's size. Before
//! a scan decodes a shard's first batch it streams the file through BLAKE3
//! and compares the manifest's hash (once per file and process: a file
//! already verified with the same size and modification time is not hashed
//! again), checks the footer's provenance (table, run, unit, schema version,
//! fingerprint, catalog hash) and row count against the entry, and after its
//! last batch the rows it yielded. [`StoreOptions::verify`] (the CLI's
//! `--no-verify`) skips only the hash. [`ShardStore::open_existing`] opens a
//! table for reading only: it creates nothing, takes no lock and removes no
//! orphan, so an archived, read-only run can be inspected.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};

use arrow_schema::SchemaRef;

use crate::error::{Error, Result};
use crate::table::Table;

mod files;
mod read;
mod writer;

pub use files::is_shard_name;
pub(crate) use files::{MANIFEST_DIR, entry_name, list_names, read_json, unit_record_name};
pub use read::Scan;
pub(crate) use read::{ShardRef, check_shard};
pub use writer::ShardWriter;

use files::{LOCK_FILE, TMP_DIR, part_index, remove_if_exists, remove_orphans, sync_dir, write_json_atomic};

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

static VERIFY_READS: AtomicBool = AtomicBool::new(true);

/// Whether stores opened from now on check each shard's BLAKE3 before
/// reading it ([`StoreOptions::default`]'s `verify`). On unless a binary
/// turned it off for a trusted store (`cfeval --no-verify`).
pub fn set_verify_reads(verify: bool) {
    VERIFY_READS.store(verify, Ordering::Relaxed);
}

/// See [`set_verify_reads`].
pub fn verify_reads() -> bool {
    VERIFY_READS.load(Ordering::Relaxed)
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
    /// Check each shard's BLAKE3 against its manifest entry before its first
    /// read (size, footer and row count are always checked). Defaults to
    /// [`verify_reads`].
    pub verify: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self {
            row_group_rows: 64 * 1024,
            row_group_bytes: 8 * 1024 * 1024,
            target_shard_bytes: 128 * 1024 * 1024,
            read_batch_rows: 8 * 1024,
            verify: verify_reads(),
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
    /// The shard's file name inside the table folder (`part-NNNNN.parquet`).
    pub file: String,
    pub table: String,
    /// The run that wrote the shard (as its footer says); absent in
    /// manifests written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    pub schema_version: u32,
    pub cfeval_version: String,
    pub rows: u64,
    pub bytes: u64,
    pub blake3: String,
    pub unit: String,
    pub fingerprint: String,
    pub catalog_hash: Option<String>,
    /// Shards of the same unit this shard replaces (see the module docs):
    /// readers skip them from the moment this entry exists.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaces: Vec<String>,
}

/// Drops the entries another entry replaces (a rewrite whose old shards
/// are not retired yet): what every reader of a manifest sees.
pub(crate) fn drop_replaced(entries: &mut Vec<ShardEntry>) -> Vec<ShardEntry> {
    let replaced: std::collections::BTreeSet<String> = entries
        .iter()
        .flat_map(|entry| entry.replaces.iter().cloned())
        .collect();
    if replaced.is_empty() {
        return Vec::new();
    }
    let (gone, kept) = std::mem::take(entries)
        .into_iter()
        .partition(|entry| replaced.contains(&entry.file));
    *entries = kept;
    gone
}

/// A completed unit of work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitRecord {
    pub unit: String,
    pub fingerprint: String,
    pub rows: u64,
    pub shards: Vec<String>,
    /// The digest ([`crate::lineage::table_digest`]) of each input table
    /// (by folder name) when the unit completed: the unit is stale once an
    /// input's digest differs. Empty in records written before lineage was
    /// recorded, and for tables with no inputs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub inputs: BTreeMap<String, String>,
}

/// One table folder: its committed shards and completed units.
#[derive(Debug)]
pub struct ShardStore {
    handle: Arc<StoreHandle>,
    entries: Vec<ShardEntry>,
    units: BTreeMap<String, UnitRecord>,
    /// Held shared for a writable store's lifetime, so that no other process
    /// removes our in-flight files as orphans.
    _lock: Option<File>,
}

#[derive(Debug)]
struct StoreHandle {
    dir: PathBuf,
    table: String,
    schema: SchemaRef,
    options: StoreOptions,
    /// False for a store opened with [`ShardStore::open_existing`].
    writable: bool,
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

    /// Opens (creating if needed) a table folder holding shards of `schema`,
    /// for writing.
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
                retire_replaced(dir)?;
                remove_orphans(dir)?;
                lock.unlock().map_err(|e| Error::io(&lock_path, e))?;
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                tracing::debug!(dir = %dir.display(), "other writers active; orphan cleanup skipped");
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&lock_path, e)),
        }
        lock.lock_shared().map_err(|e| Error::io(&lock_path, e))?;
        let mut store = Self::unopened(dir, table, schema, options, true);
        store._lock = Some(lock);
        store.refresh()?;
        Ok(store)
    }

    /// Opens an existing table folder for reading only: nothing is created,
    /// locked or removed, so a run the user cannot write can be read. A
    /// missing folder reads as `None`; a folder without its `_manifest/`
    /// is an error (its shards cannot be trusted).
    pub fn open_existing(dir: &Path, table: &str, schema: SchemaRef) -> Result<Option<Self>> {
        Self::open_read_only(dir, table, schema, StoreOptions::default())
    }

    /// [`ShardStore::open_existing`] with explicit options.
    pub fn open_read_only(
        dir: &Path,
        table: &str,
        schema: SchemaRef,
        options: StoreOptions,
    ) -> Result<Option<Self>> {
        match std::fs::metadata(dir) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => {
                return Err(Error::DamagedShard {
                    path: dir.to_path_buf(),
                    detail: "is not a folder".into(),
                    run: crate::error::run_of_table(dir),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(dir, e)),
        }
        if !dir.join(MANIFEST_DIR).is_dir() {
            return Err(Error::NoManifest {
                dir: dir.to_path_buf(),
                run: crate::error::run_of_table(dir),
            });
        }
        let mut store = Self::unopened(dir, table, schema, options, false);
        store.refresh()?;
        Ok(Some(store))
    }

    fn unopened(dir: &Path, table: &str, schema: SchemaRef, options: StoreOptions, writable: bool) -> Self {
        Self {
            handle: Arc::new(StoreHandle {
                dir: dir.to_path_buf(),
                table: table.to_string(),
                schema,
                options,
                writable,
            }),
            entries: Vec::new(),
            units: BTreeMap::new(),
            _lock: None,
        }
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
            writable: handle.writable,
        });
        self
    }

    /// The table folder.
    pub fn dir(&self) -> &Path {
        &self.handle.dir
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.handle.table
    }

    /// The table's schema.
    pub fn schema(&self) -> &SchemaRef {
        &self.handle.schema
    }

    /// The options the store reads and writes with.
    pub fn options(&self) -> &StoreOptions {
        &self.handle.options
    }

    /// Rereads the manifest (other processes may have committed since) and
    /// checks every entry and record (see the module docs).
    pub fn refresh(&mut self) -> Result<()> {
        let manifest_dir = self.handle.dir.join(MANIFEST_DIR);
        let mut entries = Vec::new();
        let mut units = BTreeMap::new();
        for name in list_names(&manifest_dir)? {
            let path = manifest_dir.join(&name);
            if name.starts_with("part-") && name.ends_with(".json") {
                // An entry (and then its shard) may be retired by another
                // writer between the listing and the read: gone is gone.
                let Some(entry) = read_json_if_exists::<ShardEntry>(&path)? else {
                    continue;
                };
                check_entry(&self.handle.table, &name, &path, &entry)?;
                match ShardRef::new(&self.handle.dir, &entry).check_size() {
                    Err(Error::MissingShard { .. }) if !path.exists() => continue,
                    checked => checked?,
                };
                entries.push(entry);
            } else if name.starts_with("unit-") && name.ends_with(".json") {
                let Some(record) = read_json_if_exists::<UnitRecord>(&path)? else {
                    continue;
                };
                check_record(&name, &path, &record)?;
                units.insert(record.unit.clone(), record);
            }
        }
        entries.sort_by(|a, b| a.file.cmp(&b.file));
        drop_replaced(&mut entries);
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

    /// The one catalog hash every committed shard carries, if there are
    /// shards and they all carry the same one.
    pub fn catalog_hash(&self) -> Option<&str> {
        let first = self.entries.first()?.catalog_hash.as_deref()?;
        self.entries
            .iter()
            .all(|entry| entry.catalog_hash.as_deref() == Some(first))
            .then_some(first)
    }

    /// A writer for new shards of this table.
    pub fn writer(&self, provenance: Provenance) -> ShardWriter {
        ShardWriter::new(
            Arc::clone(&self.handle),
            provenance,
            next_free_index(&self.handle.dir, &self.entries),
        )
    }

    /// A writer that rewrites the committed shards `old` (same unit and
    /// provenance): everything written goes into one new shard (never rolled
    /// by size) whose entry replaces them all; see the module docs. Call
    /// [`ShardStore::retire_replaced`] after its `finish`.
    pub fn replacing_writer(&self, provenance: Provenance, old: &[ShardEntry]) -> ShardWriter {
        let mut writer = self.writer(provenance);
        writer.replace(old.iter().map(|entry| entry.file.clone()).collect());
        writer
    }

    /// Removes `unit`'s completion record (its shards stay): the unit is
    /// being worked on again and reads as partial until it completes.
    pub fn mark_incomplete(&mut self, unit: &str) -> Result<()> {
        self.check_writable()?;
        let manifest_dir = self.handle.dir.join(MANIFEST_DIR);
        remove_if_exists(&manifest_dir.join(unit_record_name(unit)))?;
        sync_dir(&manifest_dir)?;
        self.units.remove(unit);
        Ok(())
    }

    /// Retires the shards that committed rewrites replaced (entry first,
    /// then file), and rereads the manifest.
    pub fn retire_replaced(&mut self) -> Result<()> {
        self.check_writable()?;
        retire_replaced(&self.handle.dir)?;
        self.refresh()
    }

    fn check_writable(&self) -> Result<()> {
        if self.handle.writable {
            Ok(())
        } else {
            Err(Error::ReadOnly {
                dir: self.handle.dir.clone(),
            })
        }
    }

    /// Records that `unit` is complete under `fingerprint` with these
    /// shards, and the digests of the input tables it was computed from.
    pub fn mark_complete(&mut self, unit: &str, fingerprint: &str, shards: &[ShardEntry]) -> Result<()> {
        self.check_writable()?;
        let record = UnitRecord {
            unit: unit.to_string(),
            fingerprint: fingerprint.to_string(),
            rows: shards.iter().map(|entry| entry.rows).sum(),
            shards: shards.iter().map(|entry| entry.file.clone()).collect(),
            inputs: crate::lineage::input_digests(&self.handle.dir, &self.handle.table)?,
        };
        let name = unit_record_name(unit);
        write_json_atomic(&self.handle.dir.join(MANIFEST_DIR), &name, &record)?;
        self.units.insert(unit.to_string(), record);
        Ok(())
    }

    /// Removes every shard and the completion record of `unit` (manifest
    /// entries first, so a crash midway never leaves a half-visible unit).
    pub fn retire_unit(&mut self, unit: &str) -> Result<u64> {
        self.check_writable()?;
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

    /// Retires every unit of the table (committed or completed); returns the
    /// rows removed.
    pub fn retire_all(&mut self) -> Result<u64> {
        let mut units: Vec<String> = self.units.keys().cloned().collect();
        units.extend(self.entries.iter().map(|entry| entry.unit.clone()));
        units.sort();
        units.dedup();
        let mut removed = 0;
        for unit in units {
            removed += self.retire_unit(&unit)?;
        }
        Ok(removed)
    }

    /// The committed shards with their paths.
    pub(crate) fn shards(&self) -> Vec<ShardRef> {
        self.entries
            .iter()
            .map(|entry| ShardRef::new(&self.handle.dir, entry))
            .collect()
    }

    /// Reads every committed shard in order, one batch at a time; each shard
    /// is checked against its manifest entry before its first batch.
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
        Ok(Scan::new(Arc::clone(&self.handle), self.shards(), columns))
    }

    /// Reads only the shards whose entry passes `keep` (every column when
    /// `projection` is `None`), each checked as [`ShardStore::scan`] does.
    pub fn scan_where(
        &self,
        projection: Option<&[&str]>,
        keep: impl Fn(&ShardEntry) -> bool,
    ) -> Result<Scan> {
        let mut scan = self.scan(projection)?;
        scan.retain_shards(keep);
        Ok(scan)
    }

    /// Reads the rows of the shards whose entry passes `keep`, as `T`.
    pub fn read_rows_where<T: Table, K: Fn(&ShardEntry) -> bool>(
        &self,
        keep: K,
    ) -> Result<impl Iterator<Item = Result<Vec<T>>> + use<T, K>> {
        Ok(self
            .scan_where(None, keep)?
            .map(|batch| batch.and_then(|batch| T::from_batch(&batch))))
    }

    /// Reads every committed row as `T`, one batch of rows at a time.
    pub fn read_rows<T: Table>(&self) -> Result<impl Iterator<Item = Result<Vec<T>>> + use<T>> {
        Ok(self
            .scan(None)?
            .map(|batch| batch.and_then(|batch| T::from_batch(&batch))))
    }

    /// [`ShardStore::read_columns`] of the shards whose entry passes `keep`.
    pub fn read_columns_where<T: serde::de::DeserializeOwned, K: Fn(&ShardEntry) -> bool>(
        &self,
        columns: &[&str],
        keep: K,
    ) -> Result<impl Iterator<Item = Result<Vec<T>>> + use<T, K>> {
        let table = self.handle.table.clone();
        Ok(self.scan_where(Some(columns), keep)?.map(move |batch| {
            batch.and_then(|batch| {
                serde_arrow::from_record_batch(&batch).map_err(|source| Error::Convert {
                    table: table.clone(),
                    source,
                })
            })
        }))
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

    /// Checks every committed shard against its manifest entry without
    /// decoding rows: BLAKE3 (a file this process already verified as it is
    /// now is not hashed again), footer and schema. Returns the bytes hashed.
    pub fn verify(&self) -> Result<u64> {
        let mut hashed = 0;
        for shard in self.shards() {
            hashed += check_shard(&self.handle.table, &self.handle.schema, &shard, true)?;
        }
        Ok(hashed)
    }
}

/// [`read_json`], or `None` when the file is gone.
fn read_json_if_exists<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    match read_json(path) {
        Ok(value) => Ok(Some(value)),
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// Checks a manifest entry read from `_manifest/{name}`: a plain shard name
/// matching the entry's own file name, of this table.
pub(crate) fn check_entry(table: &str, name: &str, path: &Path, entry: &ShardEntry) -> Result<()> {
    if !is_shard_name(&entry.file) {
        return Err(Error::bad_manifest(
            path,
            format!(
                "names shard {:?}, which is not a plain part-NNNNN.parquet file of its table folder \
                 (a path outside the folder, an absolute path or a sub-folder); refusing to read it",
                entry.file
            ),
        ));
    }
    if entry_name(&entry.file) != name {
        return Err(Error::bad_manifest(
            path,
            format!(
                "names shard {}, but the entry of that shard is {}",
                entry.file,
                entry_name(&entry.file)
            ),
        ));
    }
    if entry.table != table {
        return Err(Error::bad_manifest(
            path,
            format!("is an entry of table `{}`, not of `{table}`", entry.table),
        ));
    }
    Ok(())
}

/// Checks a unit record read from `_manifest/{name}`.
pub(crate) fn check_record(name: &str, path: &Path, record: &UnitRecord) -> Result<()> {
    if unit_record_name(&record.unit) != name {
        return Err(Error::bad_manifest(
            path,
            format!(
                "holds the record of unit `{}`, which belongs in {}",
                record.unit,
                unit_record_name(&record.unit)
            ),
        ));
    }
    if let Some(bad) = record.shards.iter().find(|file| !is_shard_name(file)) {
        return Err(Error::bad_manifest(
            path,
            format!("names shard {bad:?}, which is not a plain part-NNNNN.parquet file of its table folder"),
        ));
    }
    Ok(())
}

/// Retires every shard of `dir` that a committed rewrite replaced: its
/// manifest entry first (readers already skip it), then its file.
fn retire_replaced(dir: &Path) -> Result<()> {
    let manifest_dir = dir.join(MANIFEST_DIR);
    let mut entries = Vec::new();
    for name in list_names(&manifest_dir)? {
        if name.starts_with("part-")
            && name.ends_with(".json")
            && let Some(entry) = read_json_if_exists::<ShardEntry>(&manifest_dir.join(&name))?
        {
            entries.push(entry);
        }
    }
    let replaced = drop_replaced(&mut entries);
    for entry in &replaced {
        if !is_shard_name(&entry.file) {
            continue;
        }
        tracing::debug!(shard = %entry.file, "retiring a replaced shard");
        remove_if_exists(&manifest_dir.join(entry_name(&entry.file)))?;
        remove_if_exists(&dir.join(&entry.file))?;
    }
    if !replaced.is_empty() {
        sync_dir(&manifest_dir)?;
    }
    Ok(())
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
