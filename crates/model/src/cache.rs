//! The content-addressed response cache.
//!
//! The key is the BLAKE3 hash of the canonical JSON of the backend kind, model, base URL
//! and the whole request (messages, tools, parameters, salt), so two models never share
//! an answer and any change to a request is a new key. Only successful responses are
//! stored; errors never are.
//!
//! **Layout.** Entries are records in append-only segment files under `<dir>/packed/`
//! (the `segment` module has the format, `packed` the writer and reader): each process appends
//! to a segment of its own, each record is checksummed, and each sealed segment has an
//! index. A sweep of a million calls leaves tens of files, not a million. A record that
//! does not check out is a miss (the call is made again), never another answer; the torn
//! tail a killed writer leaves is cut off by the next process that opens the cache.
//! `cfeval cache stats|verify|compact` look after a cache directory ([`maintain`]).
//!
//! **The one-file layout** of earlier cfeval versions — `<dir>/<2 hex>/<64 hex>.json`,
//! one JSON entry per file — is still read: a lookup the segments miss is looked up
//! there, and `cfeval cache compact` moves such files into segments. [`Layout::Files`]
//! still writes it (for comparison in the benchmarks).

pub mod maintain;
pub(crate) mod packed;
pub(crate) mod segment;

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::backend::BackendIdentity;
use crate::error::{Error, Result};
use crate::types::{ChatRequest, ChatResponse, canonical_json};

/// Bumped when the key derivation or the entry format changes.
pub const CACHE_FORMAT: u32 = 1;

/// A 256-bit content address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey(pub(crate) [u8; 32]);

impl CacheKey {
    /// The key of `request` sent to `identity`.
    pub fn new(identity: &BackendIdentity, request: &ChatRequest) -> Result<Self> {
        let value = json!({
            "format": CACHE_FORMAT,
            "backend": identity.backend,
            "model": identity.model,
            "base_url": identity.base_url,
            "request": serde_json::to_value(request).map_err(|err| Error::json("encode request for cache key", err))?,
        });
        let mut text = String::new();
        canonical_json(&value, &mut text);
        Ok(CacheKey(*blake3::hash(text.as_bytes()).as_bytes()))
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({})", self.to_hex())
    }
}

/// One stored answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    pub format: u32,
    pub key: String,
    pub backend: String,
    pub subject: String,
    pub model: String,
    pub base_url: String,
    pub created_unix_ms: u64,
    pub response: ChatResponse,
}

/// How new entries are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Checksummed records in segment files (the default).
    #[default]
    Packed,
    /// One JSON file per entry, as cfeval wrote before segments (read either way).
    Files,
}

impl Layout {
    /// `packed` or `files`.
    pub fn parse(text: &str) -> Option<Layout> {
        match text {
            "packed" => Some(Layout::Packed),
            "files" => Some(Layout::Files),
            _ => None,
        }
    }
}

/// A cache directory.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    inner: Arc<CacheInner>,
}

#[derive(Debug)]
struct CacheInner {
    dir: PathBuf,
    fsync: bool,
    layout: Layout,
    packed: Arc<packed::Packed>,
    /// Whether the directory holds one-file entries to read.
    files: std::sync::atomic::AtomicBool,
    counter: AtomicU64,
    /// Bounds the blocking threads doing cache I/O (a sweep submits thousands of calls
    /// at once; each would otherwise take a blocking-pool thread for its lookup).
    io_slots: tokio::sync::Semaphore,
}

/// Cache reads and writes running at once, at most.
const IO_SLOTS: usize = 8;

/// Whether a directory entry is a folder of the one-file layout (`<2 hex>`).
pub(crate) fn is_file_entry_folder(name: &std::ffi::OsStr, is_dir: bool) -> bool {
    let name = name.to_string_lossy();
    is_dir && name.len() == 2 && name.bytes().all(|byte| byte.is_ascii_hexdigit())
}

/// Whether `dir` holds entries of the one-file layout (a `<2 hex>` folder).
pub(crate) fn has_file_entries(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries.filter_map(std::result::Result::ok).any(|entry| {
            is_file_entry_folder(
                &entry.file_name(),
                entry.file_type().is_ok_and(|kind| kind.is_dir()),
            )
        })
    })
}

impl ResponseCache {
    /// Opens (creating) a cache at `dir`, writing the packed layout. With `fsync`, each
    /// entry is flushed to disk before the call counts as stored (survives power loss,
    /// not only a killed process).
    pub fn open(dir: impl Into<PathBuf>, fsync: bool) -> Result<Self> {
        Self::open_with(dir, fsync, Layout::Packed)
    }

    /// [`Self::open`], writing new entries in `layout`.
    pub fn open_with(dir: impl Into<PathBuf>, fsync: bool, layout: Layout) -> Result<Self> {
        let dir = dir.into();
        fs_err::create_dir_all(&dir).map_err(|err| Error::io("create cache directory", &dir, err))?;
        let packed = packed::Packed::open(&dir, fsync)
            .map_err(|err| Error::io("open the packed cache in", &dir, err))?;
        let files = has_file_entries(&dir);
        Ok(ResponseCache {
            inner: Arc::new(CacheInner {
                dir,
                fsync,
                layout,
                packed,
                files: std::sync::atomic::AtomicBool::new(files),
                counter: AtomicU64::new(0),
                io_slots: tokio::sync::Semaphore::new(IO_SLOTS),
            }),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where `key`'s entry lives in the one-file layout.
    pub fn path_of(&self, key: &CacheKey) -> PathBuf {
        let hex = key.to_hex();
        self.inner.dir.join(&hex[..2]).join(format!("{hex}.json"))
    }

    /// Whether the cache holds an entry for `key` (without reading it).
    pub fn contains(&self, key: &CacheKey) -> bool {
        self.inner.packed.contains(key)
            || (self.inner.files.load(Ordering::Relaxed) && self.path_of(key).is_file())
    }

    /// The keys in the packed segments (the one-file layout's are not counted).
    pub fn packed_len(&self) -> usize {
        self.inner.packed.len()
    }

    /// The stored response for `key`, if any (blocking file I/O; see [`Self::get`]).
    pub fn get_blocking(&self, key: &CacheKey) -> Result<Option<ChatResponse>> {
        if let Some(payload) = self.inner.packed.get(key) {
            match decode_payload(&payload, key) {
                Ok(response) => return Ok(Some(response)),
                Err(reason) => {
                    tracing::warn!(key = %key, %reason, "unusable cache record; ignored");
                }
            }
        }
        if self.inner.files.load(Ordering::Relaxed) {
            return self.get_file(key);
        }
        Ok(None)
    }

    /// A one-file entry.
    fn get_file(&self, key: &CacheKey) -> Result<Option<ChatResponse>> {
        let path = self.path_of(key);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(Error::io("read cache entry", path, err)),
        };
        match serde_json::from_slice::<CacheEntry>(&bytes) {
            Ok(entry) if entry.format == CACHE_FORMAT && entry.key == key.to_hex() => {
                Ok(Some(entry.response))
            }
            Ok(_) => {
                tracing::warn!(path = %path.display(), "cache entry of another format or key; ignored");
                Ok(None)
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), error = %err, "unreadable cache entry; ignored");
                Ok(None)
            }
        }
    }

    /// Stores `response` under `key` (blocking file I/O; see [`Self::put`]).
    pub fn put_blocking(
        &self,
        key: &CacheKey,
        identity: &BackendIdentity,
        response: &ChatResponse,
    ) -> Result<()> {
        if self.inner.layout == Layout::Files {
            return self.put_file(key, identity, response);
        }
        let payload = segment::Payload {
            format: CACHE_FORMAT,
            backend: identity.backend.clone(),
            subject: identity.subject.clone(),
            model: identity.model.clone(),
            base_url: identity.base_url.clone(),
            created_unix_ms: crate::journal::unix_ms(),
            response: serde_json::to_string(response)
                .map_err(|err| Error::json("encode cache entry", err))?,
        }
        .encode()
        .map_err(|reason| {
            Error::io(
                "encode cache entry for",
                self.dir(),
                std::io::Error::other(reason),
            )
        })?;
        self.inner
            .packed
            .put(key, &payload, self.inner.fsync)
            .map_err(|err| Error::io("write cache entry in", self.inner.packed.dir(), err))
    }

    /// Writes a one-file entry.
    fn put_file(&self, key: &CacheKey, identity: &BackendIdentity, response: &ChatResponse) -> Result<()> {
        let entry = CacheEntry {
            format: CACHE_FORMAT,
            key: key.to_hex(),
            backend: identity.backend.clone(),
            subject: identity.subject.clone(),
            model: identity.model.clone(),
            base_url: identity.base_url.clone(),
            created_unix_ms: crate::journal::unix_ms(),
            response: response.clone(),
        };
        let bytes = serde_json::to_vec(&entry).map_err(|err| Error::json("encode cache entry", err))?;
        let path = self.path_of(key);
        let Some(parent) = path.parent() else {
            return Err(Error::io(
                "find the directory of",
                &path,
                std::io::Error::other("no parent directory"),
            ));
        };
        fs_err::create_dir_all(parent).map_err(|err| Error::io("create cache directory", parent, err))?;
        self.inner.files.store(true, Ordering::Relaxed);
        let temp = parent.join(format!(
            ".tmp-{}-{}-{}",
            key.to_hex(),
            std::process::id(),
            self.inner.counter.fetch_add(1, Ordering::Relaxed)
        ));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(&bytes)?;
            if self.inner.fsync {
                file.sync_data()?;
            }
            std::fs::rename(&temp, &path)
        };
        write().map_err(|err| {
            let _ = std::fs::remove_file(&temp);
            Error::io("write cache entry", &path, err)
        })
    }

    async fn io_slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>> {
        self.inner
            .io_slots
            .acquire()
            .await
            .map_err(|_| Error::io("use cache", self.dir(), std::io::Error::other("cache closed")))
    }

    /// The stored response for `key`, read on the blocking pool.
    pub async fn get(&self, key: &CacheKey) -> Result<Option<ChatResponse>> {
        let _slot = self.io_slot().await?;
        let cache = self.clone();
        let key = *key;
        tokio::task::spawn_blocking(move || cache.get_blocking(&key))
            .await
            .map_err(|err| {
                Error::io(
                    "read cache entry",
                    self.dir(),
                    std::io::Error::other(err.to_string()),
                )
            })?
    }

    /// Stores `response` under `key`, written on the blocking pool.
    pub async fn put(
        &self,
        key: &CacheKey,
        identity: &BackendIdentity,
        response: &ChatResponse,
    ) -> Result<()> {
        let _slot = self.io_slot().await?;
        let cache = self.clone();
        let key = *key;
        let identity = identity.clone();
        let response = response.clone();
        tokio::task::spawn_blocking(move || cache.put_blocking(&key, &identity, &response))
            .await
            .map_err(|err| {
                Error::io(
                    "write cache entry",
                    self.dir(),
                    std::io::Error::other(err.to_string()),
                )
            })?
    }
}

/// The response in a packed record's payload, checked to be of this
/// format.
pub(crate) fn decode_payload(payload: &[u8], key: &CacheKey) -> std::result::Result<ChatResponse, String> {
    let payload = segment::Payload::decode(payload)?;
    if payload.format != CACHE_FORMAT {
        return Err(format!(
            "entry format {} (this cfeval reads {CACHE_FORMAT})",
            payload.format
        ));
    }
    serde_json::from_str(&payload.response).map_err(|err| format!("response of {key}: {err}"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::types::{ChatParams, Message, Usage};

    pub(crate) fn identity(model: &str, base_url: &str) -> BackendIdentity {
        BackendIdentity {
            backend: "openai-chat".into(),
            subject: format!("vllm/{model}"),
            model: model.into(),
            base_url: base_url.into(),
        }
    }

    pub(crate) fn response(text: &str) -> ChatResponse {
        ChatResponse {
            text: Some(text.into()),
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            usage: Usage::default(),
            model: None,
            raw: serde_json::json!({"id": text}),
        }
    }

    #[test]
    fn keys_separate_models_urls_and_requests() {
        let request = ChatRequest::new(vec![Message::user("hi")]);
        let a = CacheKey::new(&identity("m1", "http://x"), &request).unwrap();
        assert_eq!(a, CacheKey::new(&identity("m1", "http://x"), &request).unwrap());
        assert_ne!(a, CacheKey::new(&identity("m2", "http://x"), &request).unwrap());
        assert_ne!(a, CacheKey::new(&identity("m1", "http://y"), &request).unwrap());
        let seeded = request.clone().with_params(ChatParams {
            seed: Some(1),
            ..ChatParams::default()
        });
        assert_ne!(a, CacheKey::new(&identity("m1", "http://x"), &seeded).unwrap());
        let salted = ChatRequest {
            cache_salt: Some("sample-2".into()),
            ..request
        };
        assert_ne!(a, CacheKey::new(&identity("m1", "http://x"), &salted).unwrap());
        assert_eq!(a.to_hex().len(), 64);
    }

    fn key_of(text: &str) -> CacheKey {
        CacheKey::new(
            &identity("m1", "http://x"),
            &ChatRequest::new(vec![Message::user(text)]),
        )
        .unwrap()
    }

    /// The one segment file of a packed cache.
    fn only_segment(dir: &Path) -> PathBuf {
        let segments: Vec<PathBuf> = std::fs::read_dir(dir.join(packed::PACKED_DIR))
            .unwrap()
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "seg"))
            .collect();
        assert_eq!(segments.len(), 1, "{segments:?}");
        segments[0].clone()
    }

    #[test]
    fn one_file_entries_are_read_and_a_corrupt_one_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::open_with(dir.path(), true, Layout::Files).unwrap();
        let id = identity("m1", "http://x");
        let key = key_of("hi");
        assert_eq!(cache.get_blocking(&key).unwrap(), None);
        cache.put_blocking(&key, &id, &response("hello")).unwrap();
        assert!(cache.path_of(&key).is_file());
        assert_eq!(cache.get_blocking(&key).unwrap(), Some(response("hello")));
        std::fs::write(cache.path_of(&key), b"{\"format\":1,\"ke").unwrap();
        assert_eq!(cache.get_blocking(&key).unwrap(), None);
        cache.put_blocking(&key, &id, &response("again")).unwrap();
        assert_eq!(cache.get_blocking(&key).unwrap(), Some(response("again")));
        // No temporary files are left behind.
        let leftovers = std::fs::read_dir(cache.path_of(&key).parent().unwrap())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
            .count();
        assert_eq!(leftovers, 0);
        drop(cache);
        // The packed layout reads what the one-file layout wrote.
        let packed = ResponseCache::open(dir.path(), false).unwrap();
        assert!(packed.contains(&key));
        assert_eq!(packed.get_blocking(&key).unwrap(), Some(response("again")));
    }

    #[test]
    fn packed_entries_survive_reopening_and_a_damaged_record_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let id = identity("m1", "http://x");
        let (first, second) = (key_of("first"), key_of("second"));
        {
            let cache = ResponseCache::open(dir.path(), true).unwrap();
            cache.put_blocking(&first, &id, &response("one")).unwrap();
            cache.put_blocking(&second, &id, &response("two")).unwrap();
            assert_eq!(cache.get_blocking(&first).unwrap(), Some(response("one")));
            // A second opener in this process shares the writer.
            let again = ResponseCache::open(dir.path(), false).unwrap();
            assert_eq!(again.get_blocking(&second).unwrap(), Some(response("two")));
            assert!(!has_file_entries(dir.path()));
        }
        let segment = only_segment(dir.path());
        assert!(packed::index_path(&segment).is_file(), "sealed on close");
        let cache = ResponseCache::open(dir.path(), false).unwrap();
        assert_eq!(cache.packed_len(), 2);
        assert_eq!(cache.get_blocking(&second).unwrap(), Some(response("two")));
        drop(cache);

        // Flip a byte inside the first record's payload: that key is a miss,
        // the other is still read, and a new answer is stored and read.
        let mut bytes = std::fs::read(&segment).unwrap();
        bytes[segment::SEGMENT_MAGIC.len() + segment::HEADER + 5] ^= 0x20;
        std::fs::write(&segment, &bytes).unwrap();
        let cache = ResponseCache::open(dir.path(), false).unwrap();
        assert_eq!(cache.get_blocking(&first).unwrap(), None);
        assert_eq!(cache.get_blocking(&second).unwrap(), Some(response("two")));
        cache.put_blocking(&first, &id, &response("one again")).unwrap();
        assert_eq!(cache.get_blocking(&first).unwrap(), Some(response("one again")));
    }

    #[test]
    fn a_torn_tail_is_cut_off_by_the_next_opener_and_nothing_before_it_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let id = identity("m1", "http://x");
        let keys: Vec<CacheKey> = (0..5).map(|n| key_of(&format!("q{n}"))).collect();
        {
            let cache = ResponseCache::open(dir.path(), false).unwrap();
            for (n, key) in keys.iter().enumerate() {
                cache.put_blocking(key, &id, &response(&format!("a{n}"))).unwrap();
            }
        }
        // As a killed writer leaves it: no index, half a record at the end.
        let segment = only_segment(dir.path());
        std::fs::remove_file(packed::index_path(&segment)).unwrap();
        let whole = std::fs::metadata(&segment).unwrap().len();
        let mut file = std::fs::OpenOptions::new().append(true).open(&segment).unwrap();
        let torn = segment::encode_record(&key_of("torn"), b"0123456789abcdef");
        file.write_all(&torn[..30]).unwrap();
        drop(file);
        let cache = ResponseCache::open(dir.path(), false).unwrap();
        for (n, key) in keys.iter().enumerate() {
            assert_eq!(cache.get_blocking(key).unwrap(), Some(response(&format!("a{n}"))));
        }
        assert_eq!(std::fs::metadata(&segment).unwrap().len(), whole, "torn tail cut");
        assert!(packed::index_path(&segment).is_file(), "sealed by the opener");
    }
}
