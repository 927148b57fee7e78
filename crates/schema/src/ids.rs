//! Stable content-hash identifiers and fingerprints.
//!
//! Every id is the first 16 bytes (32 hex digits) of a BLAKE3 hash over a
//! domain tag and length-prefixed parts, so that ids are stable across runs,
//! machines and shards, and two different tuples of parts never collide by
//! concatenation.

use serde::Serialize;

/// Hashes `parts` under `domain` into a 32-hex-digit id.
pub fn content_id(domain: &str, parts: &[&str]) -> String {
    let mut hasher = blake3::Hasher::new();
    hasher.update(domain.as_bytes());
    hasher.update(&[0]);
    for part in parts {
        hasher.update(&(part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    let hash = hasher.finalize();
    hash.to_hex()[..32].to_string()
}

/// The full 64-hex-digit BLAKE3 hash of some bytes (file contents, catalogs).
pub fn hash_bytes(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

/// A stable 64-bit hash of an id (the first 8 bytes of its BLAKE3): for
/// slicing and bucketing work by id, and for seeded choices per id.
pub fn id_hash(id: &str) -> u64 {
    let hash = blake3::hash(id.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_le_bytes(bytes)
}

/// [`hash_bytes`] of everything `reader` yields, read a block at a time.
pub fn hash_reader(reader: impl std::io::Read) -> std::io::Result<String> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(reader)?;
    Ok(hasher.finalize().to_hex().to_string())
}

/// Fingerprint of any serialisable settings value: BLAKE3 over its canonical
/// JSON (object keys sorted), so field order never changes a fingerprint.
pub fn fingerprint<T: Serialize + ?Sized>(value: &T) -> String {
    let json = serde_json::to_value(value).unwrap_or(serde_json::Value::Null);
    hash_bytes(canonical_json(&json).as_bytes())
}

/// Serialises a JSON value with object keys sorted at every level.
pub fn canonical_json(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let items: Vec<String> = keys
                .into_iter()
                .map(|key| format!("{}:{}", Value::String(key.clone()), canonical_json(&map[key])))
                .collect();
            format!("{{{}}}", items.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(canonical_json).collect();
            format!("[{}]", items.join(","))
        }
        other => other.to_string(),
    }
}

/// The id of a case: its input format, its own identifier and its full text.
pub fn case_id(source_format: &str, source_id: &str, source_text: &str) -> String {
    content_id("case", &[source_format, source_id, source_text])
}

/// The id of a variant of a case under an intervention of a catalog.
pub fn variant_id(case_id: &str, intervention: &str, catalog_hash: &str) -> String {
    content_id("variant", &[case_id, intervention, catalog_hash])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_unambiguous() {
        assert_eq!(content_id("x", &["ab", "c"]), content_id("x", &["ab", "c"]));
        assert_ne!(content_id("x", &["ab", "c"]), content_id("x", &["a", "bc"]));
        assert_ne!(content_id("x", &["a"]), content_id("y", &["a"]));
        assert_eq!(content_id("x", &["a"]).len(), 32);
    }

    #[test]
    fn fingerprint_ignores_key_order() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b":1,"a":{"d":2,"c":[1,2]}}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"a":{"c":[1,2],"d":2},"b":1}"#).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        let c: serde_json::Value = serde_json::from_str(r#"{"a":{"c":[2,1],"d":2},"b":1}"#).unwrap();
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }
}
