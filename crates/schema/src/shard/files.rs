//! The file names of a table folder and the small file operations of the
//! commit protocol.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::ids::content_id;

pub(crate) const MANIFEST_DIR: &str = "_manifest";
pub(crate) const TMP_DIR: &str = ".tmp";
pub(crate) const LOCK_FILE: &str = ".lock";

/// The part number of `part-NNNNN.parquet`, if `name` is exactly such a
/// plain name (at least five digits, nothing before or after, no folder).
pub(crate) fn part_index(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("part-")?.strip_suffix(".parquet")?;
    if digits.len() < 5 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `name` is a plain shard name inside its table folder (no
/// `../`, no absolute path, no sub-folder, nothing but `part-NNNNN.parquet`).
pub fn is_shard_name(name: &str) -> bool {
    part_index(name).is_some()
}

/// The manifest entry's file name of the shard `part-NNNNN.parquet`.
pub(crate) fn entry_name(shard: &str) -> String {
    format!("{}.json", shard.trim_end_matches(".parquet"))
}

/// The file name of `unit`'s completion record in `_manifest/`.
pub(crate) fn unit_record_name(unit: &str) -> String {
    format!("unit-{}.json", content_id("unit", &[unit]))
}

/// The sorted file names of `dir` (none when it does not exist).
pub(crate) fn list_names(dir: &Path) -> Result<Vec<String>> {
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

pub(crate) fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_slice(&text).map_err(|source| Error::Manifest {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn write_json_atomic<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<()> {
    let target = dir.join(name);
    let json = serde_json::to_vec_pretty(value).map_err(|source| Error::Manifest {
        path: target.clone(),
        source,
    })?;
    crate::atomic::write_atomic(&target, &json).map_err(|e| Error::io(&target, e))
}

pub(crate) fn remove_if_exists(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(path, e)),
    }
}

pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|file| file.sync_all())
        .map_err(|e| Error::io(dir, e))
}

/// The BLAKE3 of a file, streamed.
pub(crate) fn hash_file(path: &Path) -> Result<String> {
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

/// Removes temp files and part files the manifest does not name (only with
/// no other writer alive: the caller holds the exclusive lock).
pub(crate) fn remove_orphans(dir: &Path) -> Result<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_part_names_are_shard_names() {
        for good in ["part-00000.parquet", "part-00042.parquet", "part-123456.parquet"] {
            assert!(is_shard_name(good), "{good}");
        }
        for bad in [
            "../../OTHER/responses/part-00000.parquet",
            "/tmp/part-00000.parquet",
            "sub/part-00000.parquet",
            "part-0.parquet",
            "part-00000.parquet/",
            "part-0000a.parquet",
            "part-+0001.parquet",
            "part-00000.parquet.bak",
            "",
        ] {
            assert!(!is_shard_name(bad), "{bad}");
        }
    }
}
