//! The one shard writer: schema checked per batch, ZSTD, bounded row groups,
//! files rolled by size and committed through the protocol of [`super`].

use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow_array::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;

use super::files::{
    MANIFEST_DIR, TMP_DIR, entry_name, hash_file, remove_if_exists, sync_dir, write_json_atomic,
};
use super::read::check_schema;
use super::{Provenance, ShardEntry, StoreHandle, meta};
use crate::error::{Error, Result};
use crate::table::Table;
use crate::{CFEVAL_VERSION, SCHEMA_VERSION};

/// Writes shards of one table: checks each batch against the schema, rolls
/// files by size, and commits each file through the protocol above.
#[derive(Debug)]
pub struct ShardWriter {
    handle: Arc<StoreHandle>,
    provenance: Provenance,
    current: Option<OpenShard>,
    committed: Vec<ShardEntry>,
    next_index: u64,
    /// The shards this writer rewrites (then it writes one shard, never
    /// rolled by size).
    replaces: Vec<String>,
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
    pub(super) fn new(handle: Arc<StoreHandle>, provenance: Provenance, next_index: u64) -> Self {
        Self {
            handle,
            provenance,
            current: None,
            committed: Vec::new(),
            next_index,
            replaces: Vec::new(),
        }
    }

    /// Makes this writer's one shard replace `old` (see
    /// [`super::ShardStore::replacing_writer`]).
    pub(super) fn replace(&mut self, old: Vec<String>) {
        self.replaces = old;
    }

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
        if full && self.replaces.is_empty() {
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
        if !self.handle.writable {
            return Err(Error::ReadOnly {
                dir: self.handle.dir.clone(),
            });
        }
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
            run: Some(self.provenance.run.clone()),
            schema_version: SCHEMA_VERSION,
            cfeval_version: CFEVAL_VERSION.to_string(),
            rows,
            bytes,
            blake3,
            unit: self.provenance.unit.clone(),
            fingerprint: self.provenance.fingerprint.clone(),
            catalog_hash: self.provenance.catalog_hash.clone(),
            replaces: self.replaces.clone(),
        };
        let manifest_name = entry_name(&name);
        write_json_atomic(&self.handle.dir.join(MANIFEST_DIR), &manifest_name, &entry)?;
        tracing::debug!(shard = %name, rows, bytes, "committed shard");
        Ok(entry)
    }
}
