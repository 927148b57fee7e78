//! The content-addressed response cache.
//!
//! The key is the BLAKE3 hash of the canonical JSON of the backend kind, model, base URL
//! and the whole request (messages, tools, parameters, salt), so two models never share
//! an answer and any change to a request is a new key. Only successful responses are
//! stored; errors never are. Entries are files `<dir>/<2 hex>/<64 hex>.json`, written to a
//! temporary file, optionally fsynced, then renamed: a reader sees a whole entry or
//! none, and several processes (sharded runs) can share one directory. An entry that
//! does not parse (a crash mid-write on a filesystem without rename ordering) is a
//! miss and gets rewritten.

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
pub struct CacheKey([u8; 32]);

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

/// A cache directory.
#[derive(Debug, Clone)]
pub struct ResponseCache {
    inner: Arc<CacheInner>,
}

#[derive(Debug)]
struct CacheInner {
    dir: PathBuf,
    fsync: bool,
    counter: AtomicU64,
    /// Bounds the blocking threads doing cache I/O (a sweep submits thousands of calls
    /// at once; each would otherwise take a blocking-pool thread for its lookup).
    io_slots: tokio::sync::Semaphore,
}

/// Cache reads and writes running at once, at most.
const IO_SLOTS: usize = 8;

impl ResponseCache {
    /// Opens (creating) a cache at `dir`. With `fsync`, each entry is flushed to disk
    /// before it is renamed into place (survives power loss, not only a killed process).
    pub fn open(dir: impl Into<PathBuf>, fsync: bool) -> Result<Self> {
        let dir = dir.into();
        fs_err::create_dir_all(&dir).map_err(|err| Error::io("create cache directory", &dir, err))?;
        Ok(ResponseCache {
            inner: Arc::new(CacheInner {
                dir,
                fsync,
                counter: AtomicU64::new(0),
                io_slots: tokio::sync::Semaphore::new(IO_SLOTS),
            }),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Where `key`'s entry lives.
    pub fn path_of(&self, key: &CacheKey) -> PathBuf {
        let hex = key.to_hex();
        self.inner.dir.join(&hex[..2]).join(format!("{hex}.json"))
    }

    /// The stored response for `key`, if any (blocking file I/O; see [`Self::get`]).
    pub fn get_blocking(&self, key: &CacheKey) -> Result<Option<ChatResponse>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ChatParams, Message, Usage};

    fn identity(model: &str, base_url: &str) -> BackendIdentity {
        BackendIdentity {
            backend: "openai-chat".into(),
            subject: format!("vllm/{model}"),
            model: model.into(),
            base_url: base_url.into(),
        }
    }

    fn response(text: &str) -> ChatResponse {
        ChatResponse {
            text: Some(text.into()),
            tool_calls: Vec::new(),
            finish_reason: Some("stop".into()),
            usage: Usage::default(),
            model: None,
            raw: serde_json::json!({"id": 1}),
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

    #[test]
    fn stores_reads_and_ignores_corrupt_entries() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ResponseCache::open(dir.path(), true).unwrap();
        let id = identity("m1", "http://x");
        let key = CacheKey::new(&id, &ChatRequest::new(vec![Message::user("hi")])).unwrap();
        assert_eq!(cache.get_blocking(&key).unwrap(), None);
        cache.put_blocking(&key, &id, &response("hello")).unwrap();
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
    }
}
