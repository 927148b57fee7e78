//! The packed store: the segments of one cache directory, an in-memory
//! index of every key, and this process's writer.
//!
//! **Writers.** A process appends to one segment of its own at a time
//! (`<unix ms>-<pid>-<n>.seg`), holding an exclusive lock on it, so sharded
//! processes never write the same file. At 64 MiB, and when the process
//! lets go of the cache, the segment is sealed: its index is written
//! (temporary file, rename) and the lock released.
//!
//! **Readers.** Opening the directory reads every sealed segment's index
//! and scans the segments without one. A segment without an index whose
//! lock can be taken belongs to a writer that died (kill -9): its torn tail
//! is cut off and it is sealed then. One still locked belongs to a live
//! writer and is read up to its last whole record. A miss looks again (at
//! most every [`REFRESH`]) for what other processes have written since.
//!
//! **Lookups** read the one record the index points at and check its
//! checksum and key: a damaged record is a miss, never another answer.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use super::CacheKey;
use super::segment::{self, SEGMENT_MAGIC};

/// A segment is sealed once it reaches this size.
pub(crate) const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// A miss looks for other processes' new records at most this often.
pub(crate) const REFRESH: Duration = Duration::from_millis(200);

/// The folder of the packed store inside a cache directory.
pub(crate) const PACKED_DIR: &str = "packed";

/// Where a key's record is: its segment's number (20 bits) and the record's
/// offset (44 bits) in one word, so the index of a million keys takes
/// about 16 MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Location(u64);

const OFFSET_BITS: u32 = 44;

impl Location {
    fn new(segment: u32, offset: u64) -> Option<Location> {
        (u64::from(segment) < 1 << (64 - OFFSET_BITS) && offset < 1 << OFFSET_BITS)
            .then(|| Location((u64::from(segment) << OFFSET_BITS) | offset))
    }

    fn segment(self) -> usize {
        (self.0 >> OFFSET_BITS) as usize
    }

    fn offset(self) -> u64 {
        self.0 & ((1 << OFFSET_BITS) - 1)
    }
}

/// The index is keyed by a key's first 8 bytes (a BLAKE3 hash: uniform
/// already, so they are their own hash). Two keys sharing them — about one
/// chance in 10⁷ in a million — cost a miss, never a wrong answer: every
/// lookup checks the whole key in the record it reads.
fn prefix(key: &CacheKey) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&key.0[..8]);
    u64::from_le_bytes(bytes)
}

#[derive(Debug, Default, Clone, Copy)]
struct PrefixHasher(u64);

impl std::hash::Hasher for PrefixHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value;
    }
}

type Keys = HashMap<u64, Location, std::hash::BuildHasherDefault<PrefixHasher>>;

#[derive(Debug)]
struct Segment {
    name: OsString,
    file: File,
    /// Sealed (indexed) or written by this process: nothing new to read.
    settled: bool,
    /// Read up to here (a live writer's segment).
    scanned_to: u64,
}

#[derive(Debug, Default)]
struct Index {
    keys: Keys,
    segments: Vec<Segment>,
    by_name: HashMap<OsString, u32>,
    refreshed: Option<Instant>,
}

impl Index {
    fn insert_all(&mut self, segment: u32, records: Vec<(CacheKey, u64)>) {
        for (key, offset) in records {
            self.insert(&key, segment, offset);
        }
    }

    fn insert(&mut self, key: &CacheKey, segment: u32, offset: u64) {
        if let Some(location) = Location::new(segment, offset) {
            self.keys.insert(prefix(key), location);
        }
    }
}

#[derive(Debug)]
struct Writer {
    file: File,
    path: PathBuf,
    segment: u32,
    len: u64,
    records: Vec<(CacheKey, u64)>,
    durable: Arc<Durable>,
}

/// Group commit of one segment: a record is durable once an fsync that
/// began after it was written has returned. A writer that needs its record
/// durable waits for the fsync in progress and starts one only when that
/// one began before its record was written, so concurrent writers share
/// fsyncs instead of queueing one each behind the writer lock.
#[derive(Debug)]
struct Durable {
    /// The segment, opened again (an fsync of any handle covers the file).
    file: File,
    /// Bytes of the segment written so far.
    written: AtomicU64,
    /// Bytes known durable; held while an fsync runs.
    synced: Mutex<u64>,
    /// The fsyncs made.
    fsyncs: AtomicU64,
}

impl Durable {
    /// Returns once the segment's first `end` bytes are durable.
    fn sync_to(&self, end: u64) -> std::io::Result<()> {
        let mut synced = self
            .synced
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if *synced >= end {
            return Ok(());
        }
        // Everything written before this load is covered by the fsync.
        let upto = self.written.load(Ordering::Acquire);
        self.file.sync_data()?;
        self.fsyncs.fetch_add(1, Ordering::Relaxed);
        *synced = upto;
        Ok(())
    }
}

#[derive(Debug)]
pub(crate) struct Packed {
    dir: PathBuf,
    index: RwLock<Index>,
    writer: Mutex<Option<Writer>>,
    /// Whether sealing fsyncs the index (set when any opener asks for fsync).
    fsync: std::sync::atomic::AtomicBool,
    counter: AtomicU64,
}

/// Every packed store this process has open, by directory: one writer per
/// process and directory, however many clients open the cache.
static OPEN: Mutex<Vec<(PathBuf, Weak<Packed>)>> = Mutex::new(Vec::new());

fn io_error(what: &str, path: &Path, err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

impl Packed {
    /// The store of `cache_dir` (its `packed/` folder, created), shared with
    /// any other opener in this process.
    pub fn open(cache_dir: &Path, fsync: bool) -> std::io::Result<Arc<Packed>> {
        let dir = cache_dir.join(PACKED_DIR);
        fs_err::create_dir_all(&dir)?;
        let canonical = fs_err::canonicalize(&dir)?;
        let mut open = OPEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        open.retain(|(_, store)| store.strong_count() > 0);
        if let Some(store) = open
            .iter()
            .find(|(path, _)| *path == canonical)
            .and_then(|(_, store)| store.upgrade())
        {
            if fsync {
                store.fsync.store(true, Ordering::Relaxed);
            }
            return Ok(store);
        }
        let store = Arc::new(Packed {
            dir,
            index: RwLock::new(Index::default()),
            writer: Mutex::new(None),
            fsync: std::sync::atomic::AtomicBool::new(fsync),
            counter: AtomicU64::new(0),
        });
        store.refresh(true)?;
        open.push((canonical, Arc::downgrade(&store)));
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn read_index(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_index(&self) -> std::sync::RwLockWriteGuard<'_, Index> {
        self.index
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keys known (keys sharing their first 8 bytes count once).
    pub fn len(&self) -> usize {
        self.read_index().keys.len()
    }

    /// Whether `key` has a record (looking again for other processes'
    /// records when it has none).
    pub fn contains(&self, key: &CacheKey) -> bool {
        if self.read_index().keys.contains_key(&prefix(key)) {
            return true;
        }
        if let Err(err) = self.refresh(false) {
            tracing::warn!(error = %err, "could not look for new cache records");
        }
        self.read_index().keys.contains_key(&prefix(key))
    }

    /// The payload of `key`'s record; `None` when there is none or it is
    /// damaged (with a warning).
    pub fn get(&self, key: &CacheKey) -> Option<Vec<u8>> {
        if let Some(found) = self.read_at(key) {
            return found;
        }
        if let Err(err) = self.refresh(false) {
            tracing::warn!(error = %err, "could not look for new cache records");
        }
        self.read_at(key).flatten()
    }

    /// `None`: no record of the key; `Some(None)`: a damaged one.
    fn read_at(&self, key: &CacheKey) -> Option<Option<Vec<u8>>> {
        let index = self.read_index();
        let location = *index.keys.get(&prefix(key))?;
        let segment = index.segments.get(location.segment())?;
        match segment::read_record(&segment.file, location.offset()) {
            Ok((found, payload)) if found == *key => Some(Some(payload)),
            // Another key with the same first 8 bytes: this one has no record.
            Ok(_) => None,
            Err(reason) => {
                tracing::warn!(segment = ?segment.name, offset = location.offset(), %reason, "damaged cache record; ignored");
                Some(None)
            }
        }
    }

    /// Appends a record of `key` with `payload`; with `fsync`, returns once
    /// it is durable (group commit: see [`Durable`]).
    pub fn put(&self, key: &CacheKey, payload: &[u8], fsync: bool) -> std::io::Result<()> {
        let record = segment::encode_record(key, payload);
        let (durable, end, path) = {
            let mut writer = self
                .writer
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if writer.is_none() {
                *writer = Some(self.new_writer()?);
            }
            let Some(active) = writer.as_mut() else {
                return Err(std::io::Error::other("no cache writer"));
            };
            let offset = active.len;
            if let Err(err) = active.file.write_all(&record) {
                // Whatever part was written is a damaged record the next
                // reader skips; write on in a fresh segment.
                let path = active.path.clone();
                if let Some(broken) = writer.take() {
                    self.seal(broken);
                }
                return Err(io_error("append to cache segment", &path, err));
            }
            active.len += record.len() as u64;
            active.durable.written.store(active.len, Ordering::Release);
            active.records.push((*key, offset));
            self.write_index().insert(key, active.segment, offset);
            let written = (Arc::clone(&active.durable), active.len, active.path.clone());
            if active.len >= SEGMENT_BYTES
                && let Some(full) = writer.take()
            {
                self.seal(full);
            }
            written
        };
        if fsync {
            durable
                .sync_to(end)
                .map_err(|err| io_error("fsync cache segment", &path, err))?;
        }
        Ok(())
    }

    fn new_writer(&self) -> std::io::Result<Writer> {
        let (path, file) = create_segment(&self.dir, "", || self.counter.fetch_add(1, Ordering::Relaxed))?;
        let reader = File::open(&path).map_err(|err| io_error("open cache segment", &path, err))?;
        let name: OsString = path.file_name().map(OsString::from).unwrap_or_default();
        let mut index = self.write_index();
        let segment = index.segments.len() as u32;
        index.segments.push(Segment {
            name: name.clone(),
            file: reader,
            settled: true,
            scanned_to: 0,
        });
        index.by_name.insert(name, segment);
        let durable = Arc::new(Durable {
            file: file
                .try_clone()
                .map_err(|err| io_error("open cache segment", &path, err))?,
            written: AtomicU64::new(SEGMENT_MAGIC.len() as u64),
            synced: Mutex::new(0),
            fsyncs: AtomicU64::new(0),
        });
        Ok(Writer {
            file,
            path,
            segment,
            len: SEGMENT_MAGIC.len() as u64,
            records: Vec::new(),
            durable,
        })
    }

    /// Writes the index of the writer's segment and lets it go (its
    /// records made durable first, when the store fsyncs).
    fn seal(&self, writer: Writer) {
        if self.fsync.load(Ordering::Relaxed)
            && let Err(err) = writer.durable.sync_to(writer.len)
        {
            tracing::warn!(error = %err, "could not fsync a cache segment before sealing it");
        }
        if let Err(err) = write_index_file(
            &writer.path,
            writer.len,
            &writer.records,
            self.fsync.load(Ordering::Relaxed),
        ) {
            // Readers scan a segment without an index: nothing is lost.
            tracing::warn!(error = %err, "could not write a cache segment's index");
        }
    }

    /// Reads the segments this process does not know yet and what live
    /// writers appended since; with `force`, whatever the time since the
    /// last look.
    fn refresh(&self, force: bool) -> std::io::Result<()> {
        if !force
            && self
                .read_index()
                .refreshed
                .is_some_and(|at| at.elapsed() < REFRESH)
        {
            return Ok(());
        }
        let mut names: Vec<OsString> = fs_err::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .map(|entry| entry.file_name())
            .filter(|name| Path::new(name).extension().is_some_and(|ext| ext == "seg"))
            .collect();
        names.sort();
        let mut index = self.write_index();
        index.refreshed = Some(Instant::now());
        for name in names {
            let known = index.by_name.get(&name).copied();
            match known {
                Some(number) if index.segments[number as usize].settled => {}
                Some(number) => {
                    let path = self.dir.join(&name);
                    let from = index.segments[number as usize].scanned_to;
                    let (records, to, settled) = read_segment(&path, from)?;
                    let segment = &mut index.segments[number as usize];
                    segment.scanned_to = to;
                    segment.settled = settled;
                    index.insert_all(number, records);
                }
                None => {
                    let path = self.dir.join(&name);
                    let file = match File::open(&path) {
                        Ok(file) => file,
                        // Compacted away since the listing.
                        Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
                        Err(err) => return Err(io_error("open cache segment", &path, err)),
                    };
                    if !segment::is_segment(&file) {
                        if file.metadata().map(|meta| meta.len()).unwrap_or(0) >= SEGMENT_MAGIC.len() as u64 {
                            tracing::warn!(path = %path.display(), "not a cache segment; ignored");
                        }
                        continue;
                    }
                    let (records, to, settled) = read_segment(&path, 0)?;
                    let number = index.segments.len() as u32;
                    index.segments.push(Segment {
                        name: name.clone(),
                        file,
                        settled,
                        scanned_to: to,
                    });
                    index.by_name.insert(name, number);
                    index.insert_all(number, records);
                }
            }
        }
        Ok(())
    }
}

impl Drop for Packed {
    fn drop(&mut self) {
        let writer = self
            .writer
            .get_mut()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(writer) = writer {
            self.seal(writer);
        }
    }
}

/// A new segment in `dir`, `<unix ms>-<pid>-<tag><n>.seg` with `n` from
/// `next` (the next number where the name is taken), created, locked and
/// started with the segment magic: its path and the file, open to append.
pub(crate) fn create_segment(
    dir: &Path,
    tag: &str,
    mut next: impl FnMut() -> u64,
) -> std::io::Result<(PathBuf, File)> {
    loop {
        let path = dir.join(format!(
            "{}-{}-{tag}{}.seg",
            crate::journal::unix_ms(),
            std::process::id(),
            next()
        ));
        let mut file = match OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(err) => return Err(io_error("create cache segment", &path, err)),
        };
        file.try_lock().map_err(|err| {
            io_error(
                "lock cache segment",
                &path,
                std::io::Error::other(err.to_string()),
            )
        })?;
        file.write_all(SEGMENT_MAGIC)
            .map_err(|err| io_error("write cache segment", &path, err))?;
        return Ok((path, file));
    }
}

/// The index path of a segment.
pub(crate) fn index_path(segment: &Path) -> PathBuf {
    segment.with_extension("idx")
}

/// Writes `segment`'s index (temporary file, then rename).
pub(crate) fn write_index_file(
    segment: &Path,
    len: u64,
    records: &[(CacheKey, u64)],
    fsync: bool,
) -> std::io::Result<()> {
    let path = index_path(segment);
    let temp = path.with_extension("idx.tmp");
    let bytes = segment::encode_index(len, records);
    let write = || -> std::io::Result<()> {
        let mut file = File::create(&temp)?;
        file.write_all(&bytes)?;
        if fsync {
            file.sync_data()?;
        }
        std::fs::rename(&temp, &path)
    };
    write().map_err(|err| {
        let _ = std::fs::remove_file(&temp);
        io_error("write cache index", &path, err)
    })
}

/// The valid index of a segment of `len` bytes, if it has one.
pub(crate) fn load_index(segment: &Path, len: u64) -> Option<Vec<(CacheKey, u64)>> {
    let path = index_path(segment);
    let bytes = std::fs::read(&path).ok()?;
    match segment::decode_index(&bytes) {
        Ok((covered, records)) if covered == len => Some(records),
        Ok((covered, _)) => {
            tracing::warn!(path = %path.display(), covered, len, "cache index of another segment length; scanning the segment");
            None
        }
        Err(reason) => {
            tracing::warn!(path = %path.display(), %reason, "damaged cache index; scanning the segment");
            None
        }
    }
}

/// A segment's records from `from` on: from its index when it has a valid
/// one; else by a scan, and when no writer holds it (its writer died), its
/// torn tail cut off and its index written. Returns the records, where
/// they end and whether the segment is settled (sealed now).
/// A segment's records read from some offset on: the records (key,
/// offset), where they end, and whether the segment is settled.
type Records = (Vec<(CacheKey, u64)>, u64, bool);

fn read_segment(path: &Path, from: u64) -> std::io::Result<Records> {
    let (file, writable) = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(file) => (file, true),
        // A cache this process may only read: read it as it stands.
        Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => (
            File::open(path).map_err(|err| io_error("open cache segment", path, err))?,
            false,
        ),
        Err(err) => return Err(io_error("open cache segment", path, err)),
    };
    let len = file.metadata()?.len();
    if let Some(records) = load_index(path, len) {
        let records = records
            .into_iter()
            .filter(|(_, offset)| *offset >= from)
            .collect();
        return Ok((records, len, true));
    }
    let dead = match file.try_lock() {
        Ok(()) => writable,
        Err(TryLockError::WouldBlock) => false,
        Err(TryLockError::Error(err)) => return Err(io_error("lock cache segment", path, err)),
    };
    let scanned = segment::scan(&file, from)?;
    if !dead {
        return Ok((scanned.records, scanned.end, false));
    }
    // Its writer is gone: seal it as it stands. A scan from `from` only
    // saw the tail, so index the whole segment.
    let whole = if from > SEGMENT_MAGIC.len() as u64 {
        segment::scan(&file, 0)?
    } else {
        scanned.clone()
    };
    if whole.torn_bytes() > 0 {
        tracing::warn!(
            path = %path.display(),
            bytes = whole.torn_bytes(),
            "cache segment with a torn tail (its writer was killed); cutting it off"
        );
        file.set_len(whole.end)
            .map_err(|err| io_error("truncate cache segment", path, err))?;
    }
    if let Err(err) = write_index_file(path, whole.end, &whole.records, false) {
        tracing::warn!(error = %err, "could not index a cache segment");
    }
    let records = whole
        .records
        .into_iter()
        .filter(|(_, offset)| *offset >= from)
        .collect();
    Ok((records, whole.end, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_pack_segment_and_offset_and_refuse_what_does_not_fit() {
        let location = Location::new(1_000, 64 * 1024 * 1024 - 1).expect("fits");
        assert_eq!(
            (location.segment(), location.offset()),
            (1_000, 64 * 1024 * 1024 - 1)
        );
        assert!(Location::new(1 << 20, 0).is_none());
        assert!(Location::new(0, 1 << 44).is_none());
    }

    #[test]
    fn concurrent_durable_puts_share_their_fsyncs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Packed::open(dir.path(), true).expect("open");
        let threads = 16;
        let each = 25u8;
        let key = |thread: u8, n: u8| {
            let mut bytes = [9u8; 32];
            bytes[0] = thread;
            bytes[1] = n;
            CacheKey(bytes)
        };
        std::thread::scope(|scope| {
            for thread in 0..threads {
                let store = &store;
                let key = &key;
                scope.spawn(move || {
                    for n in 0..each {
                        store.put(&key(thread, n), &[thread, n], true).expect("put");
                    }
                });
            }
        });
        for thread in 0..threads {
            for n in 0..each {
                assert_eq!(store.get(&key(thread, n)).as_deref(), Some(&[thread, n][..]));
            }
        }
        let writer = store.writer.lock().expect("writer");
        let durable = &writer.as_ref().expect("a writer").durable;
        let puts = u64::from(threads) * u64::from(each);
        let fsyncs = durable.fsyncs.load(Ordering::Relaxed);
        // Every put returned durable: nothing written is past what was synced.
        assert_eq!(
            *durable.synced.lock().expect("synced"),
            durable.written.load(Ordering::Relaxed)
        );
        assert!(fsyncs >= 1 && fsyncs <= puts, "{fsyncs} fsyncs for {puts} puts");
        eprintln!("{fsyncs} fsyncs for {puts} durable puts from {threads} threads");
    }

    #[test]
    fn keys_sharing_a_prefix_are_a_miss_not_the_other_answer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Packed::open(dir.path(), false).expect("open");
        let first = CacheKey([7; 32]);
        let mut same_prefix = [7u8; 32];
        same_prefix[31] = 8;
        let second = CacheKey(same_prefix);
        store.put(&first, b"first answer", false).expect("put");
        assert_eq!(store.get(&first).as_deref(), Some(&b"first answer"[..]));
        assert_eq!(store.get(&second), None);
        assert!(store.contains(&second), "a prefix match is only an estimate");
        store.put(&second, b"second answer", false).expect("put");
        assert_eq!(store.get(&second).as_deref(), Some(&b"second answer"[..]));
        // The first is now a miss (its call would be made again), never the second's answer.
        assert_eq!(store.get(&first), None);
    }
}
