//! The packed cache's files: segments of checksummed records and their
//! indexes.
//!
//! A **segment** (`<name>.seg`) starts with the 8 bytes `CFEVSEG1`, then
//! records, each
//!
//! ```text
//! "CFE1" | payload length u32 LE | checksum [8] | key [32] | payload
//! ```
//!
//! where the checksum is the first 8 bytes of BLAKE3(key ‖ payload) and the
//! payload is the entry's fields encoded with bincode 2 (the response kept
//! as its JSON text). A record is valid when its magic, length and checksum
//! agree; a reader that finds an invalid one looks for the next valid record
//! after it (a damaged record is skipped, never read as another entry) and,
//! when there is none, the rest of the file is a torn tail.
//!
//! An **index** (`<name>.idx`), written when a segment is sealed, lists the
//! segment's records sorted by key:
//!
//! ```text
//! "CFEVIDX1" | segment length u64 | count u64 | count × (key [32] | offset u64) | BLAKE3 [32]
//! ```
//!
//! and is trusted only while its checksum holds and the segment still has
//! the length it covers; otherwise the segment is scanned.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;

use serde::{Deserialize, Serialize};

use super::CacheKey;

pub(crate) const SEGMENT_MAGIC: &[u8; 8] = b"CFEVSEG1";
pub(crate) const RECORD_MAGIC: &[u8; 4] = b"CFE1";
pub(crate) const INDEX_MAGIC: &[u8; 8] = b"CFEVIDX1";
/// Magic, length, checksum and key.
pub(crate) const HEADER: usize = 4 + 4 + 8 + 32;
/// Index bytes per record.
const INDEX_ENTRY: usize = 32 + 8;
/// The largest payload a record may declare (a response is far smaller;
/// a longer length is damage).
pub(crate) const MAX_PAYLOAD: usize = 256 * 1024 * 1024;

/// An entry's stored fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Payload {
    pub format: u32,
    pub backend: String,
    pub subject: String,
    pub model: String,
    pub base_url: String,
    pub created_unix_ms: u64,
    /// The `ChatResponse` as JSON (its `raw` body is arbitrary JSON, which
    /// bincode cannot describe).
    pub response: String,
}

fn bincode_config() -> bincode::config::Configuration {
    bincode::config::standard()
}

impl Payload {
    pub fn encode(&self) -> Result<Vec<u8>, String> {
        bincode::serde::encode_to_vec(self, bincode_config()).map_err(|err| err.to_string())
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, String> {
        match bincode::serde::decode_from_slice::<Payload, _>(bytes, bincode_config()) {
            Ok((payload, read)) if read == bytes.len() => Ok(payload),
            Ok((_, read)) => Err(format!(
                "payload holds {} bytes after its fields",
                bytes.len() - read
            )),
            Err(err) => Err(err.to_string()),
        }
    }
}

pub(crate) fn checksum(key: &[u8; 32], payload: &[u8]) -> [u8; 8] {
    let mut hasher = blake3::Hasher::new();
    hasher.update(key);
    hasher.update(payload);
    let mut out = [0u8; 8];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..8]);
    out
}

/// A whole record.
pub(crate) fn encode_record(key: &CacheKey, payload: &[u8]) -> Vec<u8> {
    let mut record = Vec::with_capacity(HEADER + payload.len());
    record.extend_from_slice(RECORD_MAGIC);
    record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    record.extend_from_slice(&checksum(&key.0, payload));
    record.extend_from_slice(&key.0);
    record.extend_from_slice(payload);
    record
}

/// The record at the start of `bytes`, if a valid one is there: its key
/// and payload.
pub(crate) fn parse_record(bytes: &[u8]) -> Option<(CacheKey, &[u8])> {
    if bytes.len() < HEADER || &bytes[..4] != RECORD_MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(bytes[4..8].try_into().ok()?) as usize;
    if len > MAX_PAYLOAD || bytes.len() < HEADER + len {
        return None;
    }
    let key: [u8; 32] = bytes[16..48].try_into().ok()?;
    let payload = &bytes[HEADER..HEADER + len];
    (bytes[8..16] == checksum(&key, payload)).then_some((CacheKey(key), payload))
}

/// Reads the record at `offset` of `file`: its key and payload, or why it
/// is not a valid record.
pub(crate) fn read_record(file: &File, offset: u64) -> Result<(CacheKey, Vec<u8>), String> {
    let mut header = [0u8; HEADER];
    file.read_exact_at(&mut header, offset)
        .map_err(|err| format!("cannot read the record header: {err}"))?;
    if &header[..4] != RECORD_MAGIC {
        return Err("no record starts here".into());
    }
    let len = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as usize;
    if len > MAX_PAYLOAD {
        return Err(format!("record length {len} is beyond any entry"));
    }
    let mut payload = vec![0u8; len];
    file.read_exact_at(&mut payload, offset + HEADER as u64)
        .map_err(|err| format!("cannot read the record's {len} bytes: {err}"))?;
    let mut key = [0u8; 32];
    key.copy_from_slice(&header[16..48]);
    if header[8..16] != checksum(&key, &payload) {
        return Err("checksum mismatch".into());
    }
    Ok((CacheKey(key), payload))
}

/// What a scan of a segment found.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Scanned {
    /// Valid records: key and offset, in file order.
    pub records: Vec<(CacheKey, u64)>,
    /// Damaged stretches skipped between valid records: offset and length.
    pub damaged: Vec<(u64, u64)>,
    /// Where the valid records end: the file's length, or the start of a
    /// torn tail.
    pub end: u64,
    /// The length of the file scanned.
    pub len: u64,
}

impl Scanned {
    pub fn torn_bytes(&self) -> u64 {
        self.len - self.end
    }
}

/// Scans `file` from `from` (a record boundary, or 0 for the whole file)
/// to its end.
pub(crate) fn scan(file: &File, from: u64) -> std::io::Result<Scanned> {
    let len = file.metadata()?.len();
    let start = from.max(SEGMENT_MAGIC.len() as u64);
    let mut bytes = Vec::new();
    if len > start {
        let mut reader = file;
        reader.seek(SeekFrom::Start(start))?;
        reader.take(len - start).read_to_end(&mut bytes)?;
    }
    let mut scanned = Scanned {
        len: start + bytes.len() as u64,
        ..Scanned::default()
    };
    let mut at = 0usize;
    while at < bytes.len() {
        if let Some((key, payload)) = parse_record(&bytes[at..]) {
            scanned.records.push((key, start + at as u64));
            at += HEADER + payload.len();
            continue;
        }
        // The next valid record after this point, if any.
        let next = (at + 1..bytes.len().saturating_sub(HEADER - 1))
            .filter(|&candidate| &bytes[candidate..candidate + 4] == RECORD_MAGIC)
            .find(|&candidate| parse_record(&bytes[candidate..]).is_some());
        match next {
            Some(next) => {
                scanned.damaged.push((start + at as u64, (next - at) as u64));
                at = next;
            }
            None => break,
        }
    }
    scanned.end = start + at as u64;
    Ok(scanned)
}

/// Whether `file` starts as a segment.
pub(crate) fn is_segment(file: &File) -> bool {
    let mut magic = [0u8; 8];
    file.read_exact_at(&mut magic, 0).is_ok() && &magic == SEGMENT_MAGIC
}

/// The bytes of the index of a segment of `len` bytes holding `records`
/// (the last record of a key wins).
pub(crate) fn encode_index(len: u64, records: &[(CacheKey, u64)]) -> Vec<u8> {
    let mut sorted: Vec<(CacheKey, u64)> = records.to_vec();
    // Stable: among a key's records the last one written stays last.
    sorted.sort_by_key(|(key, _)| *key);
    let mut deduped: Vec<(CacheKey, u64)> = Vec::with_capacity(sorted.len());
    for (key, offset) in sorted {
        match deduped.last_mut() {
            Some(last) if last.0 == key => last.1 = offset,
            _ => deduped.push((key, offset)),
        }
    }
    let mut bytes = Vec::with_capacity(24 + deduped.len() * INDEX_ENTRY + 32);
    bytes.extend_from_slice(INDEX_MAGIC);
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes.extend_from_slice(&(deduped.len() as u64).to_le_bytes());
    for (key, offset) in &deduped {
        bytes.extend_from_slice(&key.0);
        bytes.extend_from_slice(&offset.to_le_bytes());
    }
    let hash = *blake3::hash(&bytes).as_bytes();
    bytes.extend_from_slice(&hash);
    bytes
}

/// An index file's segment length and records, or why it is not one.
pub(crate) fn decode_index(bytes: &[u8]) -> Result<(u64, Vec<(CacheKey, u64)>), String> {
    if bytes.len() < 24 + 32 || &bytes[..8] != INDEX_MAGIC {
        return Err("not a cache index".into());
    }
    let (body, hash) = bytes.split_at(bytes.len() - 32);
    if blake3::hash(body).as_bytes() != hash {
        return Err("index checksum mismatch".into());
    }
    let word = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().unwrap_or([0; 8]));
    let (len, count) = (word(8), word(16));
    if (body.len() - 24) as u64 != count.saturating_mul(INDEX_ENTRY as u64) {
        return Err(format!(
            "index declares {count} records but holds {} bytes",
            body.len() - 24
        ));
    }
    let records = body[24..]
        .chunks_exact(INDEX_ENTRY)
        .map(|chunk| {
            let mut key = [0u8; 32];
            key.copy_from_slice(&chunk[..32]);
            (
                CacheKey(key),
                u64::from_le_bytes(chunk[32..].try_into().unwrap_or([0; 8])),
            )
        })
        .collect();
    Ok((len, records))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn key(byte: u8) -> CacheKey {
        CacheKey([byte; 32])
    }

    fn segment(records: &[Vec<u8>]) -> (tempfile::NamedTempFile, Vec<u64>) {
        let mut file = tempfile::NamedTempFile::new().expect("temp");
        file.write_all(SEGMENT_MAGIC).expect("write");
        let mut offsets = Vec::new();
        let mut at = SEGMENT_MAGIC.len() as u64;
        for record in records {
            offsets.push(at);
            file.write_all(record).expect("write");
            at += record.len() as u64;
        }
        (file, offsets)
    }

    #[test]
    fn records_round_trip_and_any_flipped_byte_is_refused() {
        let record = encode_record(&key(7), b"payload bytes");
        let (parsed_key, payload) = parse_record(&record).expect("valid");
        assert_eq!((parsed_key, payload), (key(7), &b"payload bytes"[..]));
        for index in 0..record.len() {
            let mut damaged = record.clone();
            damaged[index] ^= 0x01;
            assert!(
                parse_record(&damaged).is_none(),
                "byte {index} flipped still parses"
            );
        }
        assert!(parse_record(&record[..record.len() - 1]).is_none());
    }

    #[test]
    fn a_scan_skips_a_damaged_record_and_stops_at_a_torn_tail() {
        let records: Vec<Vec<u8>> = (0..4u8)
            .map(|byte| encode_record(&key(byte), &vec![byte; 100 + usize::from(byte)]))
            .collect();
        let (file, offsets) = segment(&records);
        let scanned = scan(file.as_file(), 0).expect("scan");
        assert_eq!(scanned.records.len(), 4);
        assert_eq!(scanned.end, scanned.len);
        assert!(scanned.damaged.is_empty());

        // A flipped payload byte in record 1: skipped, the rest still read.
        let mut bytes = std::fs::read(file.path()).expect("read");
        bytes[offsets[1] as usize + HEADER + 3] ^= 0xff;
        // A torn last record.
        bytes.truncate(offsets[3] as usize + HEADER + 10);
        std::fs::write(file.path(), &bytes).expect("write");
        let scanned = scan(&File::open(file.path()).expect("open"), 0).expect("scan");
        let keys: Vec<CacheKey> = scanned.records.iter().map(|(key, _)| *key).collect();
        assert_eq!(keys, [key(0), key(2)]);
        assert_eq!(scanned.damaged, [(offsets[1], offsets[2] - offsets[1])]);
        assert_eq!(scanned.end, offsets[3]);
        assert_eq!(scanned.torn_bytes(), HEADER as u64 + 10);
        // A scan from a later record boundary reads only what follows.
        let later = scan(&File::open(file.path()).expect("open"), offsets[2]).expect("scan");
        assert_eq!(later.records, [(key(2), offsets[2])]);
    }

    #[test]
    fn indexes_round_trip_keep_the_last_record_of_a_key_and_refuse_damage() {
        let records = [(key(3), 8), (key(1), 100), (key(3), 200)];
        let bytes = encode_index(300, &records);
        let (len, decoded) = decode_index(&bytes).expect("index");
        assert_eq!(len, 300);
        assert_eq!(decoded, [(key(1), 100), (key(3), 200)]);
        let mut damaged = bytes.clone();
        damaged[30] ^= 1;
        assert!(decode_index(&damaged).unwrap_err().contains("checksum"));
        assert!(decode_index(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn payloads_round_trip_through_bincode() {
        let payload = Payload {
            format: 1,
            backend: "openai-chat".into(),
            subject: "vllm/m".into(),
            model: "m".into(),
            base_url: "http://x".into(),
            created_unix_ms: 42,
            response: r#"{"text":"é ✓"}"#.into(),
        };
        let bytes = payload.encode().expect("encode");
        assert_eq!(Payload::decode(&bytes).expect("decode"), payload);
        assert!(Payload::decode(&bytes[..bytes.len() - 2]).is_err());
    }
}
