//! The crash-safe call journal: one JSON line per finished network call (its response,
//! or its terminal error), appended and fsynced before the call returns.
//!
//! One writer thread owns the file and commits in groups: it takes every record that
//! is waiting, writes them, fsyncs once and then acknowledges each caller. So a killed
//! run loses at most the calls in flight, and fsync cost is shared by concurrent calls.
//! Opening a journal cuts a torn last line (a write cut short by a kill) so that
//! appending goes on after the last whole record.

use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::types::ChatResponse;

/// How a journaled call ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    Ok {
        response: ChatResponse,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    Error {
        /// [`Error::kind`].
        kind: String,
        /// The error's message (redacted; never holds a key).
        message: String,
    },
}

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalRecord {
    /// The cache key of the request (hex).
    pub key: String,
    pub subject: String,
    pub model: String,
    /// The caller's label for the call (e.g. a case/variant id).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    pub unix_ms: u64,
    pub attempts: u32,
    pub latency_ms: u64,
    #[serde(flatten)]
    pub outcome: CallOutcome,
}

impl JournalRecord {
    pub fn is_ok(&self) -> bool {
        matches!(self.outcome, CallOutcome::Ok { .. })
    }
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What opening a journal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovery {
    /// Bytes of a torn last line that were cut off.
    pub truncated_bytes: u64,
    /// Size of the journal after recovery.
    pub length: u64,
}

/// What reading a journal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayStats {
    pub records: u64,
    /// Lines that did not parse (only a torn tail, unless the file was damaged).
    pub skipped_lines: u64,
}

type Ack = oneshot::Sender<Result<()>>;

/// An open journal. Clones share the one writer; the writer thread ends when the last
/// clone is dropped.
#[derive(Debug, Clone)]
pub struct Journal {
    sender: mpsc::Sender<(Vec<u8>, Ack)>,
    path: PathBuf,
}

/// Records taken in one group commit at most.
const MAX_BATCH: usize = 1024;

impl Journal {
    /// Opens (creating) the journal at `path` for appending, cutting a torn last line.
    /// With `fsync`, every group of records is flushed to disk before the callers are
    /// told it is written.
    pub fn open(path: impl Into<PathBuf>, fsync: bool) -> Result<(Self, Recovery)> {
        let path = path.into();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs_err::create_dir_all(parent)
                .map_err(|err| Error::io("create journal directory", parent, err))?;
        }
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|err| Error::io("open journal", &path, err))?;
        let recovery = cut_torn_tail(&mut file).map_err(|err| Error::io("recover journal", &path, err))?;
        if recovery.truncated_bytes > 0 {
            tracing::warn!(
                path = %path.display(),
                bytes = recovery.truncated_bytes,
                "journal ended in a torn line; cut it off"
            );
        }
        let (sender, receiver) = mpsc::channel(MAX_BATCH);
        let thread_path = path.clone();
        std::thread::Builder::new()
            .name("cfeval-journal".into())
            .spawn(move || writer_loop(file, &thread_path, fsync, receiver))
            .map_err(|err| Error::io("start journal writer for", &path, err))?;
        Ok((Journal { sender, path }, recovery))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `record`; returns once it is written (and fsynced, if so opened).
    pub async fn append(&self, record: &JournalRecord) -> Result<()> {
        let mut line = serde_json::to_vec(record).map_err(|err| Error::json("encode journal record", err))?;
        line.push(b'\n');
        let (ack, done) = oneshot::channel();
        let closed = |reason: &str| Error::JournalClosed {
            path: self.path.clone(),
            reason: reason.to_string(),
        };
        self.sender
            .send((line, ack))
            .await
            .map_err(|_| closed("the writer thread has stopped"))?;
        done.await.map_err(|_| closed("the writer thread has stopped"))?
    }

    /// Reads every whole record of the journal at `path`, in order, without loading the
    /// file at once. Lines that do not parse are skipped and counted.
    pub fn replay(path: &Path, mut each: impl FnMut(JournalRecord)) -> Result<ReplayStats> {
        let file = fs_err::File::open(path).map_err(|err| Error::io("open journal", path, err))?;
        let mut reader = std::io::BufReader::new(file);
        let mut stats = ReplayStats::default();
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .map_err(|err| Error::io("read journal", path, err))?;
            if read == 0 {
                break;
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<JournalRecord>(&line) {
                Ok(record) => {
                    stats.records += 1;
                    each(record);
                }
                Err(err) => {
                    stats.skipped_lines += 1;
                    tracing::warn!(path = %path.display(), error = %err, "skipped an unreadable journal line");
                }
            }
        }
        Ok(stats)
    }
}

/// Cuts everything after the last newline. Scans backwards in blocks, so it costs the
/// length of the last line, not of the file.
fn cut_torn_tail(file: &mut std::fs::File) -> std::io::Result<Recovery> {
    const BLOCK: u64 = 64 * 1024;
    let length = file.metadata()?.len();
    let mut end = length;
    let mut keep = 0;
    let mut buffer = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let chunk = &mut buffer[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if let Some(position) = chunk.iter().rposition(|byte| *byte == b'\n') {
            keep = start + position as u64 + 1;
            break;
        }
        end = start;
    }
    if keep < length {
        file.set_len(keep)?;
        file.sync_all()?;
    }
    Ok(Recovery {
        truncated_bytes: length - keep,
        length: keep,
    })
}

fn writer_loop(
    mut file: std::fs::File,
    path: &Path,
    fsync: bool,
    mut receiver: mpsc::Receiver<(Vec<u8>, Ack)>,
) {
    let mut failed: Option<String> = None;
    let mut batch: Vec<(Vec<u8>, Ack)> = Vec::new();
    while let Some(first) = receiver.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match receiver.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        if failed.is_none() {
            let mut buffer = Vec::with_capacity(batch.iter().map(|(line, _)| line.len()).sum());
            for (line, _) in &batch {
                buffer.extend_from_slice(line);
            }
            let written = file
                .write_all(&buffer)
                .and_then(|()| if fsync { file.sync_data() } else { Ok(()) });
            if let Err(err) = written {
                tracing::error!(path = %path.display(), error = %err, "journal write failed; journal closed");
                failed = Some(err.to_string());
            }
        }
        for (_, ack) in batch.drain(..) {
            let result = match &failed {
                None => Ok(()),
                Some(reason) => Err(Error::JournalClosed {
                    path: path.to_path_buf(),
                    reason: format!("a write failed: {reason}"),
                }),
            };
            // The caller may have gone away (cancelled); nothing to tell it then.
            let _ = ack.send(result);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Usage;

    fn record(tag: &str, ok: bool) -> JournalRecord {
        JournalRecord {
            key: "ab".repeat(32),
            subject: "vllm/m".into(),
            model: "m".into(),
            tag: Some(tag.into()),
            unix_ms: 1,
            attempts: 1,
            latency_ms: 5,
            outcome: if ok {
                CallOutcome::Ok {
                    response: ChatResponse {
                        text: Some("hi".into()),
                        tool_calls: Vec::new(),
                        finish_reason: None,
                        usage: Usage::default(),
                        model: None,
                        raw: serde_json::Value::Null,
                    },
                    cost_usd: Some(0.5),
                }
            } else {
                CallOutcome::Error {
                    kind: "http_status".into(),
                    message: "400".into(),
                }
            },
        }
    }

    fn tags(path: &Path) -> (Vec<String>, ReplayStats) {
        let mut tags = Vec::new();
        let stats = Journal::replay(path, |r| tags.push(r.tag.unwrap_or_default())).unwrap();
        (tags, stats)
    }

    #[tokio::test]
    async fn appends_and_replays_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j/calls.jsonl");
        let (journal, recovery) = Journal::open(&path, true).unwrap();
        assert_eq!(recovery, Recovery::default());
        journal.append(&record("a", true)).await.unwrap();
        journal.append(&record("b", false)).await.unwrap();
        let mut seen = Vec::new();
        Journal::replay(&path, |r| seen.push(r)).unwrap();
        assert_eq!(seen, vec![record("a", true), record("b", false)]);
    }

    #[tokio::test]
    async fn concurrent_appends_are_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        let (journal, _) = Journal::open(&path, true).unwrap();
        let mut tasks = Vec::new();
        for index in 0..200 {
            let journal = journal.clone();
            tasks.push(tokio::spawn(async move {
                journal.append(&record(&index.to_string(), index % 3 == 0)).await
            }));
        }
        for task in tasks {
            task.await.unwrap().unwrap();
        }
        let (mut seen, stats) = tags(&path);
        assert_eq!(stats.skipped_lines, 0);
        seen.sort_by_key(|t| t.parse::<u32>().unwrap_or(u32::MAX));
        let expected: Vec<String> = (0..200).map(|i: u32| i.to_string()).collect();
        assert_eq!(seen, expected);
    }

    #[tokio::test]
    async fn torn_last_line_is_cut_and_appending_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        {
            let (journal, _) = Journal::open(&path, false).unwrap();
            journal.append(&record("a", true)).await.unwrap();
            journal.append(&record("b", true)).await.unwrap();
        }
        // A kill in the middle of writing record "c".
        let whole = std::fs::read(&path).unwrap();
        let mut torn = whole.clone();
        let line = serde_json::to_vec(&record("c", true)).unwrap();
        torn.extend_from_slice(&line[..line.len() / 2]);
        std::fs::write(&path, &torn).unwrap();
        let (_, stats) = tags(&path);
        assert_eq!(stats.skipped_lines, 1);

        let (journal, recovery) = Journal::open(&path, true).unwrap();
        assert_eq!(recovery.truncated_bytes, (line.len() / 2) as u64);
        assert_eq!(recovery.length, whole.len() as u64);
        journal.append(&record("d", false)).await.unwrap();
        let (seen, stats) = tags(&path);
        assert_eq!(seen, vec!["a", "b", "d"]);
        assert_eq!(stats.skipped_lines, 0);
    }

    #[test]
    fn a_file_with_no_newline_is_cut_to_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("calls.jsonl");
        std::fs::write(&path, vec![b'x'; 200_000]).unwrap();
        let (_, recovery) = Journal::open(&path, false).unwrap();
        assert_eq!(recovery.truncated_bytes, 200_000);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    }
}
