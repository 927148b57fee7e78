//! Looking after a cache directory: `cfeval cache stats`, `verify` and
//! `compact`.
//!
//! - [`stats`]: files, segments (sealed, being written, left unsealed by a
//!   writer that died), records, distinct keys, bytes, one-file entries.
//! - [`verify`]: reads every record of every segment (not trusting the
//!   indexes) and every one-file entry, decodes each, and checks each index
//!   against its segment; one [`Problem`] per damaged record, stretch, index
//!   or file.
//! - [`compact`]: rewrites every segment no live writer holds, and the
//!   one-file entries, into as few segments as their size needs, one record
//!   per key (the newest), damaged records left out, then removes what it
//!   rewrote. Segments being written are left as they are; two compactions
//!   never run at once (`packed/compact.lock`).

use std::collections::HashMap;
use std::fs::{File, OpenOptions, TryLockError};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::packed::{self, PACKED_DIR, SEGMENT_BYTES};
use super::segment::{self, Payload, SEGMENT_MAGIC};
use super::{CACHE_FORMAT, CacheEntry, CacheKey};

/// What a cache directory holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Stats {
    pub dir: PathBuf,
    /// Every file under the directory.
    pub files: u64,
    pub bytes: u64,
    pub segments: u64,
    pub sealed_segments: u64,
    /// Locked by a live writer.
    pub active_segments: u64,
    /// Neither sealed nor locked: a writer died; the next opener seals them.
    pub unsealed_segments: u64,
    pub segment_bytes: u64,
    pub records: u64,
    pub keys: u64,
    /// Records of a key that has a newer one.
    pub duplicate_records: u64,
    pub damaged_bytes: u64,
    pub torn_bytes: u64,
    /// Entries of the one-file layout.
    pub file_entries: u64,
    pub file_entry_bytes: u64,
}

/// A problem [`verify`] found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub file: PathBuf,
    /// The byte offset in the file, where it applies.
    pub offset: Option<u64>,
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.offset {
            Some(offset) => write!(f, "{} at byte {offset}: {}", self.file.display(), self.what),
            None => write!(f, "{}: {}", self.file.display(), self.what),
        }
    }
}

/// What [`verify`] read.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Verified {
    pub records: u64,
    pub file_entries: u64,
    pub problems: Vec<Problem>,
}

/// What [`compact`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Compacted {
    pub files_before: u64,
    pub bytes_before: u64,
    pub files_after: u64,
    pub bytes_after: u64,
    /// Segments rewritten, and those left to their live writers.
    pub segments_rewritten: u64,
    pub segments_left: u64,
    pub file_entries_moved: u64,
    pub keys: u64,
    pub duplicates_dropped: u64,
    /// Records, stretches or one-file entries that did not check out.
    pub damaged_dropped: u64,
}

fn io(what: &str, path: &Path, err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

/// The segment files of a cache directory, sorted (oldest first).
fn segments(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let packed = dir.join(PACKED_DIR);
    if !packed.is_dir() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<PathBuf> = fs_err::read_dir(&packed)?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "seg"))
        .collect();
    paths.sort();
    Ok(paths)
}

/// The one-file entries: `<dir>/<2 hex>/*.json`, sorted.
fn file_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    if !dir.is_dir() {
        return Ok(paths);
    }
    for entry in fs_err::read_dir(dir)?.filter_map(Result::ok) {
        if !super::is_file_entry_folder(&entry.file_name(), entry.path().is_dir()) {
            continue;
        }
        for file in fs_err::read_dir(entry.path())?.filter_map(Result::ok) {
            if file.file_name().to_string_lossy().ends_with(".json") {
                paths.push(file.path());
            }
        }
    }
    paths.sort();
    Ok(paths)
}

/// Files and bytes under `dir`.
fn usage(dir: &Path) -> (u64, u64) {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => stack.push(entry.path()),
                Ok(_) => {
                    files += 1;
                    bytes += entry.metadata().map(|meta| meta.len()).unwrap_or(0);
                }
                Err(_) => {}
            }
        }
    }
    (files, bytes)
}

/// A segment file opened to read and lock; `None` when the file is not a
/// segment.
fn open_segment(path: &Path) -> std::io::Result<Option<File>> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|err| io("open", path, err))?;
    Ok(segment::is_segment(&file).then_some(file))
}

/// Who holds a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    Sealed,
    Writer,
    Nobody,
}

fn holder(path: &Path, file: &File) -> std::io::Result<Holder> {
    let len = file.metadata()?.len();
    if packed::load_index(path, len).is_some() {
        return Ok(Holder::Sealed);
    }
    match file.try_lock() {
        Ok(()) => {
            file.unlock()?;
            Ok(Holder::Nobody)
        }
        Err(TryLockError::WouldBlock) => Ok(Holder::Writer),
        Err(TryLockError::Error(err)) => Err(io("lock", path, err)),
    }
}

/// What `dir` (a cache directory) holds.
pub fn stats(dir: &Path) -> std::io::Result<Stats> {
    let (files, bytes) = usage(dir);
    let mut stats = Stats {
        dir: dir.to_path_buf(),
        files,
        bytes,
        ..Stats::default()
    };
    let mut keys: HashMap<CacheKey, u64> = HashMap::new();
    for path in segments(dir)? {
        let Some(file) = open_segment(&path)? else {
            continue;
        };
        stats.segments += 1;
        match holder(&path, &file)? {
            Holder::Sealed => stats.sealed_segments += 1,
            Holder::Writer => stats.active_segments += 1,
            Holder::Nobody => stats.unsealed_segments += 1,
        }
        let scanned = segment::scan(&file, 0).map_err(|err| io("read", &path, err))?;
        stats.segment_bytes += scanned.len;
        stats.records += scanned.records.len() as u64;
        stats.damaged_bytes += scanned.damaged.iter().map(|(_, len)| len).sum::<u64>();
        stats.torn_bytes += scanned.torn_bytes();
        for (key, _) in scanned.records {
            *keys.entry(key).or_default() += 1;
        }
    }
    for path in file_entries(dir)? {
        stats.file_entries += 1;
        stats.file_entry_bytes += fs_err::metadata(&path).map(|meta| meta.len()).unwrap_or(0);
    }
    stats.keys = keys.len() as u64;
    stats.duplicate_records = keys.values().map(|count| count - 1).sum();
    Ok(stats)
}

/// Reads every record and entry of `dir` and reports what does not check
/// out.
pub fn verify(dir: &Path) -> std::io::Result<Verified> {
    let mut verified = Verified::default();
    for path in segments(dir)? {
        let file = File::open(&path).map_err(|err| io("open", &path, err))?;
        let problem = |offset: Option<u64>, what: String| Problem {
            file: path.clone(),
            offset,
            what,
        };
        if !segment::is_segment(&file) {
            verified
                .problems
                .push(problem(None, "does not start as a cache segment".into()));
            continue;
        }
        let scanned = segment::scan(&file, 0).map_err(|err| io("read", &path, err))?;
        for (offset, len) in &scanned.damaged {
            verified.problems.push(problem(
                Some(*offset),
                format!("{len} damaged bytes (a record whose checksum does not match), skipped"),
            ));
        }
        let writer = holder(&path, &file)? == Holder::Writer;
        if scanned.torn_bytes() > 0 && !writer {
            verified.problems.push(problem(
                Some(scanned.end),
                format!(
                    "a torn tail of {} bytes (its writer was killed; the next opener cuts it off)",
                    scanned.torn_bytes()
                ),
            ));
        }
        for (key, offset) in &scanned.records {
            verified.records += 1;
            let checked = segment::read_record(&file, *offset)
                .and_then(|(_, payload)| super::decode_payload(&payload, key));
            if let Err(reason) = checked {
                verified.problems.push(problem(Some(*offset), reason));
            }
        }
        let index = packed::index_path(&path);
        if index.exists() {
            let bytes = fs_err::read(&index)?;
            match segment::decode_index(&bytes) {
                Err(reason) => verified.problems.push(Problem {
                    file: index.clone(),
                    offset: None,
                    what: format!("{reason} (the segment is scanned instead)"),
                }),
                Ok((covered, records)) => {
                    let expected =
                        segment::decode_index(&segment::encode_index(scanned.end, &scanned.records))
                            .map(|(_, records)| records)
                            .unwrap_or_default();
                    if covered != scanned.len || records != expected {
                        verified.problems.push(Problem {
                            file: index.clone(),
                            offset: None,
                            what: format!(
                                "does not match its segment ({} records for {covered} bytes; the segment has {} records in {} bytes)",
                                records.len(),
                                expected.len(),
                                scanned.len
                            ),
                        });
                    }
                }
            }
        }
    }
    for path in file_entries(dir)? {
        verified.file_entries += 1;
        let bytes = fs_err::read(&path)?;
        let stem = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let what = match serde_json::from_slice::<CacheEntry>(&bytes) {
            Ok(entry) if entry.format != CACHE_FORMAT => Some(format!("entry format {}", entry.format)),
            Ok(entry) if entry.key != stem => Some(format!("holds the entry of key {}", entry.key)),
            Ok(_) => None,
            Err(err) => Some(format!("unreadable entry: {err}")),
        };
        if let Some(what) = what {
            verified.problems.push(Problem {
                file: path,
                offset: None,
                what,
            });
        }
    }
    Ok(verified)
}

/// The key of a one-file entry's name.
fn key_of_hex(hex: &str) -> Option<CacheKey> {
    if hex.len() != 64 {
        return None;
    }
    let mut key = [0u8; 32];
    for (index, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(index * 2..index * 2 + 2)?, 16).ok()?;
    }
    Some(CacheKey(key))
}

/// One compacted segment being written.
struct Output {
    file: File,
    path: PathBuf,
    len: u64,
    records: Vec<(CacheKey, u64)>,
}

/// Rewrites `dir` into few segments (see the module docs).
pub fn compact(dir: &Path, fsync: bool) -> std::io::Result<Compacted> {
    let packed_dir = dir.join(PACKED_DIR);
    fs_err::create_dir_all(&packed_dir)?;
    let lock_path = packed_dir.join("compact.lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|err| io("open", &lock_path, err))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!("another `cfeval cache compact` is running on {}", dir.display()),
            ));
        }
        Err(TryLockError::Error(err)) => return Err(io("lock", &lock_path, err)),
    }
    let (files_before, bytes_before) = usage(dir);
    let mut report = Compacted {
        files_before,
        bytes_before,
        ..Compacted::default()
    };
    // Newest record of every key: (created, payload); the segments are
    // read oldest first, so a later record of a key replaces an earlier.
    let mut newest: HashMap<CacheKey, (u64, Vec<u8>)> = HashMap::new();
    let mut seen = 0u64;
    let mut keep = |key: CacheKey, created: u64, payload: Vec<u8>| {
        seen += 1;
        match newest.get(&key) {
            Some((existing, _)) if *existing > created => {}
            _ => {
                newest.insert(key, (created, payload));
            }
        }
    };
    let mut rewritten: Vec<(PathBuf, File)> = Vec::new();
    for path in segments(dir)? {
        let Some(file) = open_segment(&path)? else {
            continue;
        };
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                report.segments_left += 1;
                continue;
            }
            Err(TryLockError::Error(err)) => return Err(io("lock", &path, err)),
        }
        let scanned = segment::scan(&file, 0).map_err(|err| io("read", &path, err))?;
        report.damaged_dropped += scanned.damaged.len() as u64 + u64::from(scanned.torn_bytes() > 0);
        for (key, offset) in scanned.records {
            let checked = segment::read_record(&file, offset).and_then(|(_, payload)| {
                let decoded = Payload::decode(&payload)?;
                super::decode_payload(&payload, &key)?;
                Ok((decoded.created_unix_ms, payload))
            });
            match checked {
                Ok((created, payload)) => keep(key, created, payload),
                Err(_) => report.damaged_dropped += 1,
            }
        }
        // Held (locked) until it is removed, so no opener seals it meanwhile.
        rewritten.push((path, file));
    }
    let entries = file_entries(dir)?;
    for path in &entries {
        let bytes = fs_err::read(path)?;
        let stem = path
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parsed = serde_json::from_slice::<CacheEntry>(&bytes)
            .ok()
            .filter(|entry| entry.format == CACHE_FORMAT && entry.key == stem)
            .and_then(|entry| Some((key_of_hex(&entry.key)?, entry)));
        let Some((key, entry)) = parsed else {
            report.damaged_dropped += 1;
            continue;
        };
        let payload = Payload {
            format: CACHE_FORMAT,
            backend: entry.backend,
            subject: entry.subject,
            model: entry.model,
            base_url: entry.base_url,
            created_unix_ms: entry.created_unix_ms,
            response: serde_json::to_string(&entry.response).map_err(std::io::Error::other)?,
        }
        .encode()
        .map_err(std::io::Error::other)?;
        report.file_entries_moved += 1;
        keep(key, entry.created_unix_ms, payload);
    }
    report.keys = newest.len() as u64;
    report.duplicates_dropped = seen - report.keys;
    report.segments_rewritten = rewritten.len() as u64;

    // Write the kept records, by key (reproducible), into new segments.
    let mut keys: Vec<CacheKey> = newest.keys().copied().collect();
    keys.sort();
    let mut output: Option<Output> = None;
    let mut counter = 0u64;
    let seal = |output: Output| -> std::io::Result<()> {
        if fsync {
            output.file.sync_data()?;
        }
        packed::write_index_file(&output.path, output.len, &output.records, fsync)
    };
    for key in keys {
        let Some((_, payload)) = newest.remove(&key) else {
            continue;
        };
        let record = segment::encode_record(&key, &payload);
        if output.is_none() {
            let (path, file) = packed::create_segment(&packed_dir, "c", || {
                counter += 1;
                counter - 1
            })?;
            output = Some(Output {
                file,
                path,
                len: SEGMENT_MAGIC.len() as u64,
                records: Vec::new(),
            });
        }
        let Some(current) = output.as_mut() else {
            continue;
        };
        current
            .file
            .write_all(&record)
            .map_err(|err| io("write", &current.path, err))?;
        current.records.push((key, current.len));
        current.len += record.len() as u64;
        if current.len >= SEGMENT_BYTES
            && let Some(full) = output.take()
        {
            seal(full)?;
        }
    }
    if let Some(last) = output.take() {
        seal(last)?;
    }
    // Only now that every kept record is in a sealed segment: remove what
    // was rewritten.
    for (path, file) in rewritten {
        let index = packed::index_path(&path);
        if index.exists() {
            fs_err::remove_file(&index)?;
        }
        fs_err::remove_file(&path)?;
        drop(file);
    }
    for path in &entries {
        fs_err::remove_file(path)?;
        if let Some(parent) = path.parent() {
            // Empty once its last entry is gone.
            let _ = std::fs::remove_dir(parent);
        }
    }
    drop(lock);
    let _ = std::fs::remove_file(&lock_path);
    let (files_after, bytes_after) = usage(dir);
    report.files_after = files_after;
    report.bytes_after = bytes_after;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendIdentity;
    use crate::cache::{Layout, ResponseCache};
    use crate::types::{ChatRequest, ChatResponse, Message};

    fn identity() -> BackendIdentity {
        crate::cache::tests::identity("m", "http://x")
    }

    fn response(text: &str) -> ChatResponse {
        crate::cache::tests::response(text)
    }

    fn key(text: &str) -> CacheKey {
        CacheKey::new(&identity(), &ChatRequest::new(vec![Message::user(text)])).expect("key")
    }

    #[test]
    fn compaction_merges_segments_and_one_file_entries_into_one_and_keeps_every_answer() {
        let dir = tempfile::tempdir().expect("tempdir");
        // Three processes' worth of segments (each opener its own), one of
        // them answering a key again, and one-file entries beside them.
        for round in 0..3 {
            let cache = ResponseCache::open(dir.path(), false).expect("cache");
            for n in 0..20 {
                let text = format!("r{round}-{n}");
                cache
                    .put_blocking(&key(&text), &identity(), &response(&text))
                    .expect("put");
            }
            cache
                .put_blocking(&key("shared"), &identity(), &response(&format!("shared {round}")))
                .expect("put");
        }
        {
            let files = ResponseCache::open_with(dir.path(), false, Layout::Files).expect("cache");
            for n in 0..10 {
                let text = format!("old-{n}");
                files
                    .put_blocking(&key(&text), &identity(), &response(&text))
                    .expect("put");
            }
        }
        let before = stats(dir.path()).expect("stats");
        assert_eq!(
            (
                before.segments,
                before.sealed_segments,
                before.records,
                before.keys,
                before.file_entries
            ),
            (3, 3, 63, 61, 10)
        );
        assert_eq!(before.duplicate_records, 2);
        assert!(verify(dir.path()).expect("verify").problems.is_empty());

        let report = compact(dir.path(), false).expect("compact");
        assert_eq!(report.keys, 71);
        assert_eq!(report.duplicates_dropped, 2);
        assert_eq!(report.file_entries_moved, 10);
        assert_eq!((report.segments_rewritten, report.damaged_dropped), (3, 0));
        let after = stats(dir.path()).expect("stats");
        assert_eq!(
            (after.segments, after.records, after.keys, after.file_entries),
            (1, 71, 71, 0)
        );
        // The segment, its index, and nothing else.
        assert_eq!(after.files, 2);
        assert!(after.bytes < before.bytes);
        assert!(verify(dir.path()).expect("verify").problems.is_empty());
        let cache = ResponseCache::open(dir.path(), false).expect("cache");
        for round in 0..3 {
            for n in 0..20 {
                let text = format!("r{round}-{n}");
                assert_eq!(
                    cache.get_blocking(&key(&text)).expect("get"),
                    Some(response(&text))
                );
            }
        }
        for n in 0..10 {
            let text = format!("old-{n}");
            assert_eq!(
                cache.get_blocking(&key(&text)).expect("get"),
                Some(response(&text))
            );
        }
        // The newest answer of the key answered three times.
        assert_eq!(
            cache.get_blocking(&key("shared")).expect("get"),
            Some(response("shared 2"))
        );
    }

    #[test]
    fn verify_names_the_damaged_record_and_compaction_drops_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let cache = ResponseCache::open(dir.path(), false).expect("cache");
            for n in 0..4 {
                let text = format!("q{n}");
                cache
                    .put_blocking(&key(&text), &identity(), &response(&text))
                    .expect("put");
            }
        }
        let segment = segments(dir.path()).expect("segments").remove(0);
        let mut bytes = fs_err::read(&segment).expect("read");
        let second = segment::scan(&File::open(&segment).expect("open"), 0)
            .expect("scan")
            .records[1]
            .1;
        bytes[second as usize + segment::HEADER + 2] ^= 0x40;
        fs_err::write(&segment, &bytes).expect("write");
        let verified = verify(dir.path()).expect("verify");
        assert_eq!(verified.records, 3);
        let text: Vec<String> = verified.problems.iter().map(ToString::to_string).collect();
        assert!(
            text.iter()
                .any(|line| line.contains(&format!("at byte {second}: ")) && line.contains("damaged bytes")),
            "{text:?}"
        );
        // Its index no longer matches the segment's records either.
        assert!(
            text.iter()
                .any(|line| line.contains("does not match its segment")),
            "{text:?}"
        );
        let report = compact(dir.path(), false).expect("compact");
        assert_eq!((report.keys, report.damaged_dropped), (3, 1));
        assert!(verify(dir.path()).expect("verify").problems.is_empty());
    }
}
