//! Reading raw cases: free text, JSON lines (a text field and/or per-field
//! columns, with optional reference), AgentClinic OSCE and NEJM JSON lines
//! and CSV.
//! Format detection, and quarantine of bad inputs with the reason.

pub(crate) mod agentclinic;
mod csv;
mod duplicates;
mod fields;
mod nejm;

pub use duplicates::Duplicates;

use std::path::{Path, PathBuf};

use cfeval_schema::{KeyValue, Reference};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The input formats E-Synthesis reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputFormat {
    Auto,
    Text,
    Jsonl,
    Agentclinic,
    Csv,
}

impl InputFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            InputFormat::Auto => "auto",
            InputFormat::Text => "text",
            InputFormat::Jsonl => "jsonl",
            InputFormat::Agentclinic => "agentclinic",
            InputFormat::Csv => "csv",
        }
    }
}

/// A case's body: free text to be sectioned, or named fields.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    Text(String),
    /// (section name, header label, text), in order.
    Sections(Vec<(String, String, String)>),
}

/// One raw case, before extraction.
#[derive(Debug, Clone, PartialEq)]
pub struct RawCase {
    pub source_id: String,
    pub source_format: &'static str,
    pub source_path: String,
    pub source_line: Option<u64>,
    /// The record named its id (an `id` field); otherwise the id was made
    /// up from the file name or line number.
    pub id_given: bool,
    pub body: Body,
    pub reference: Reference,
    pub extra: Vec<KeyValue>,
}

/// An input that could not become a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    pub source_path: String,
    pub source_line: Option<u64>,
    pub source_id: Option<String>,
    pub reason: String,
    pub excerpt: Option<String>,
}

/// What reading one input produced.
#[derive(Debug, Default)]
pub struct Read {
    pub cases: Vec<RawCase>,
    pub rejected: Vec<Rejected>,
}

/// The start of an input, for a quarantine row (at most 2 KiB, valid UTF-8).
pub fn excerpt(bytes: &[u8]) -> Option<String> {
    if bytes.is_empty() {
        return None;
    }
    let cut = &bytes[..bytes.len().min(2048)];
    Some(String::from_utf8_lossy(cut).into_owned())
}

fn reject(path: &Path, line: Option<u64>, id: Option<String>, reason: String, bytes: &[u8]) -> Rejected {
    Rejected {
        source_path: path.display().to_string(),
        source_line: line,
        source_id: id,
        reason,
        excerpt: excerpt(bytes),
    }
}

/// One file to read, and whether it was found inside an `--input` folder
/// (where a file of unknown format is skipped with a warning row, not an
/// error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub path: PathBuf,
    pub in_folder: bool,
}

/// The files named by the inputs, and the entries skipped on the way.
#[derive(Debug, Default)]
pub struct Expanded {
    pub files: Vec<Source>,
    /// Hidden entries, symbolic links not followed, unreadable entries: one
    /// warning row each.
    pub skipped: Vec<Rejected>,
}

/// How deep folders are entered (a guard against link loops and
/// pathological trees).
const MAX_FOLDER_DEPTH: usize = 64;

/// Expands the inputs into files. A named file is read as named (a link
/// included). A folder is read recursively, entries sorted by name; inside
/// folders, entries whose name starts with `.` are skipped with a warning
/// row, and so are symbolic links unless `follow_symlinks`. The folders in
/// `exclude` (the run being written) are not entered.
pub fn expand(inputs: &[PathBuf], follow_symlinks: bool, exclude: &[PathBuf]) -> Result<Expanded> {
    let mut expanded = Expanded::default();
    for input in inputs {
        if input.is_dir() {
            let mut visited: Vec<PathBuf> = exclude
                .iter()
                .filter_map(|path| fs_err::canonicalize(path).ok())
                .collect();
            walk(input, 0, follow_symlinks, &mut visited, &mut expanded)?;
        } else {
            expanded.files.push(Source {
                path: input.clone(),
                in_folder: false,
            });
        }
    }
    if expanded.files.is_empty() && expanded.skipped.is_empty() {
        return Err(Error::NoInput(format!(
            "{} named no files",
            inputs
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(expanded)
}

fn skipped(path: &Path, reason: String) -> Rejected {
    Rejected {
        source_path: path.display().to_string(),
        source_line: None,
        source_id: None,
        reason: format!("skipped: {reason}"),
        excerpt: None,
    }
}

fn walk(
    folder: &Path,
    depth: usize,
    follow_symlinks: bool,
    visited: &mut Vec<PathBuf>,
    expanded: &mut Expanded,
) -> Result<()> {
    if depth > MAX_FOLDER_DEPTH {
        expanded.skipped.push(skipped(
            folder,
            format!("folder nested deeper than {MAX_FOLDER_DEPTH} levels"),
        ));
        return Ok(());
    }
    // A followed link may lead back up: each real folder is entered once.
    if let Ok(real) = fs_err::canonicalize(folder) {
        if visited.contains(&real) {
            if depth > 0 {
                expanded.skipped.push(skipped(
                    folder,
                    "a folder already read, or the run being written".into(),
                ));
            }
            return Ok(());
        }
        visited.push(real);
    }
    let mut entries: Vec<PathBuf> = fs_err::read_dir(folder)
        .map_err(|source| Error::Read {
            path: folder.to_path_buf(),
            source,
        })?
        .map(|entry| {
            entry.map(|entry| entry.path()).map_err(|source| Error::Read {
                path: folder.to_path_buf(),
                source,
            })
        })
        .collect::<Result<_>>()?;
    entries.sort();
    for path in entries {
        let hidden = path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with('.'));
        let metadata = match fs_err::symlink_metadata(&path) {
            Ok(metadata) => metadata,
            Err(error) => {
                expanded
                    .skipped
                    .push(skipped(&path, format!("cannot be read: {error}")));
                continue;
            }
        };
        if hidden {
            expanded.skipped.push(skipped(
                &path,
                "hidden (a name starting with `.` is not read from a folder)".into(),
            ));
            continue;
        }
        let is_link = metadata.file_type().is_symlink();
        if is_link && !follow_symlinks {
            let target = fs_err::read_link(&path)
                .map_or_else(|_| "?".to_string(), |target| target.display().to_string());
            expanded.skipped.push(skipped(
                &path,
                format!(
                    "symbolic link to {target} (links are not followed; pass --follow-symlinks or set `follow-symlinks = true` in [cases])"
                ),
            ));
            continue;
        }
        if path.is_dir() {
            walk(&path, depth + 1, follow_symlinks, visited, expanded)?;
        } else if path.is_file() {
            expanded.files.push(Source {
                path,
                in_folder: true,
            });
        } else {
            expanded.skipped.push(skipped(
                &path,
                if is_link {
                    "a broken symbolic link".into()
                } else {
                    "not a regular file".into()
                },
            ));
        }
    }
    Ok(())
}

/// Detects the format of one file from its extension and first line.
pub fn detect(path: &Path, bytes: &[u8]) -> Result<InputFormat> {
    let extension = path
        .extension()
        .and_then(|extension| extension.to_str())
        .map(str::to_ascii_lowercase);
    let first_line = bytes
        .split(|byte| *byte == b'\n')
        .find(|line| line.iter().any(|byte| !byte.is_ascii_whitespace()));
    let looks_like_json = first_line.is_some_and(|line| line.trim_ascii_start().starts_with(b"{"));
    let agentclinic = first_line.is_some_and(|line| {
        serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .is_some_and(|value| value.get("OSCE_Examination").is_some() || nejm::looks_like(&value))
    });
    match extension.as_deref() {
        Some("jsonl" | "ndjson" | "json") if agentclinic => Ok(InputFormat::Agentclinic),
        Some("jsonl" | "ndjson" | "json") => Ok(InputFormat::Jsonl),
        Some("csv") => Ok(InputFormat::Csv),
        Some("txt" | "text" | "md") => Ok(InputFormat::Text),
        _ if agentclinic => Ok(InputFormat::Agentclinic),
        _ if looks_like_json => Ok(InputFormat::Jsonl),
        other => Err(Error::UnknownFormat {
            path: path.to_path_buf(),
            why: match other {
                Some(extension) => format!(
                    "the extension `.{extension}` is not one cfeval knows and the content does not start with a JSON object"
                ),
                None => "it has no extension and the content does not start with a JSON object".to_string(),
            },
        }),
    }
}

/// One thing reading an input yields: a case, or an input that could not
/// become one.
#[derive(Debug)]
pub enum Item {
    Case(RawCase),
    Rejected(Rejected),
}

/// Reads one file in `format` (`Auto` detects it), handing each case and
/// each rejected input to `sink` in file order. JSON lines, AgentClinic and
/// CSV are streamed a line at a time (a CSV record may span lines inside
/// quotes), so a file of any size is read in bounded memory; a text file is
/// one case.
pub fn read(
    path: &Path,
    format: InputFormat,
    max_case_bytes: usize,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    let read_error = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let file = fs_err::File::open(path).map_err(read_error)?;
    let mut lines = Lines {
        reader: std::io::BufReader::with_capacity(64 * 1024, file),
        path: path.to_path_buf(),
        number: 0,
        keep: max_case_bytes.saturating_add(1),
    };
    // The first non-blank line says whether the file is empty, and its format.
    let first = loop {
        match lines.next_line()? {
            Some(line) if line.is_blank() => continue,
            other => break other,
        }
    };
    let Some(first) = first else {
        return sink(Item::Rejected(reject(
            path,
            None,
            None,
            "empty file: no case in it".into(),
            &[],
        )));
    };
    let format = match format {
        InputFormat::Auto => detect(path, &first.bytes)?,
        other => other,
    };
    match format {
        InputFormat::Jsonl | InputFormat::Agentclinic => {
            let mut next = Some(first);
            while let Some(line) = next {
                if !line.is_blank() {
                    sink(line_item(path, &line, max_case_bytes, format))?;
                }
                next = lines.next_line()?;
            }
        }
        InputFormat::Csv => csv::read(path, first, &mut lines, max_case_bytes, sink)?,
        InputFormat::Text | InputFormat::Auto => {
            drop(lines);
            // One case: never more than the limit (and one byte) is read.
            let size = fs_err::metadata(path).map_err(read_error)?.len();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut std::io::Read::take(
                    fs_err::File::open(path).map_err(read_error)?,
                    max_case_bytes as u64 + 1,
                ),
                &mut bytes,
            )
            .map_err(read_error)?;
            let size = usize::try_from(size).unwrap_or(usize::MAX).max(bytes.len());
            let mut read = Read::default();
            read_text(path, &bytes, size, max_case_bytes, &mut read);
            for rejected in read.rejected {
                sink(Item::Rejected(rejected))?;
            }
            for case in read.cases {
                sink(Item::Case(case))?;
            }
        }
    }
    Ok(())
}

/// One line of an input: its 1-based number, its first `keep` bytes (no
/// line end), and its whole length.
struct Line {
    number: u64,
    bytes: Vec<u8>,
    len: usize,
}

impl Line {
    fn is_blank(&self) -> bool {
        self.bytes.len() == self.len && self.bytes.iter().all(u8::is_ascii_whitespace)
    }
}

/// Lines of a reader, each kept only up to `keep` bytes: an oversized line is
/// measured and rejected without ever being held whole.
struct Lines<R> {
    reader: R,
    /// The file, for read errors.
    path: PathBuf,
    number: u64,
    keep: usize,
}

impl<R: std::io::BufRead> Lines<R> {
    fn next_line(&mut self) -> Result<Option<Line>> {
        self.read_line().map_err(|source| Error::Read {
            path: self.path.clone(),
            source,
        })
    }

    fn read_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut bytes = Vec::new();
        let mut len = 0usize;
        let mut any = false;
        let mut last = None;
        loop {
            let (used, done) = {
                let buffer = self.reader.fill_buf()?;
                if buffer.is_empty() {
                    break;
                }
                any = true;
                let (chunk, done) = match buffer.iter().position(|byte| *byte == b'\n') {
                    Some(at) => (&buffer[..at], true),
                    None => (buffer, false),
                };
                let room = self.keep.saturating_sub(bytes.len());
                bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
                len += chunk.len();
                last = chunk.last().copied().or(last);
                (chunk.len() + usize::from(done), done)
            };
            self.reader.consume(used);
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.number += 1;
        if last == Some(b'\r') {
            if bytes.len() == len {
                bytes.pop();
            }
            len -= 1;
        }
        Ok(Some(Line {
            number: self.number,
            bytes,
            len,
        }))
    }
}

/// A non-blank JSON line as a case, or why it is rejected (too big, not
/// UTF-8, not a case).
fn line_item(path: &Path, line: &Line, max_case_bytes: usize, format: InputFormat) -> Item {
    let number = line.number;
    let rejected =
        |reason: String, bytes: &[u8]| Item::Rejected(reject(path, Some(number), None, reason, bytes));
    if line.len > max_case_bytes {
        return rejected(
            format!("line {number}: {}", too_big(line.len, max_case_bytes)),
            &line.bytes,
        );
    }
    let text = match std::str::from_utf8(&line.bytes) {
        Ok(text) => text,
        Err(error) => {
            return rejected(
                format!(
                    "line {number}: not valid UTF-8 (bad byte at column {})",
                    error.valid_up_to() + 1
                ),
                &line.bytes,
            );
        }
    };
    let parsed = match format {
        InputFormat::Agentclinic if is_nejm(text) => nejm::case_from_line(text, path, number),
        InputFormat::Agentclinic => agentclinic::case_from_line(text, path, number),
        _ => fields::case_from_object(text, "jsonl", path, number),
    };
    match parsed {
        Ok(case) => Item::Case(case),
        Err(reason) => rejected(reason, text.as_bytes()),
    }
}

/// Whether an AgentClinic line is a NEJM case (`physical_exams` and
/// `answers`) rather than an OSCE one.
fn is_nejm(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text).is_ok_and(|value| nejm::looks_like(&value))
}

/// A text file (`bytes`: at most its first `max_case_bytes + 1` bytes; `size`:
/// its whole length) as one case.
fn read_text(path: &Path, bytes: &[u8], size: usize, max_case_bytes: usize, read: &mut Read) {
    let source_id = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("case")
        .to_string();
    if size > max_case_bytes {
        read.rejected.push(reject(
            path,
            None,
            Some(source_id),
            too_big(size, max_case_bytes),
            bytes,
        ));
        return;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => read.cases.push(RawCase {
            source_id,
            source_format: "text",
            source_path: path.display().to_string(),
            source_line: None,
            // The file's name is the case's id: two files of one name are
            // duplicates, as two records of one id are.
            id_given: true,
            body: Body::Text(text.to_string()),
            reference: Reference::default(),
            extra: Vec::new(),
        }),
        Err(error) => read.rejected.push(reject(
            path,
            Some(line_of(bytes, error.valid_up_to())),
            Some(source_id),
            format!("not valid UTF-8 (bad byte at offset {})", error.valid_up_to()),
            bytes,
        )),
    }
}

pub(crate) fn too_big(size: usize, limit: usize) -> String {
    format!(
        "case is {size} bytes, over the limit of {limit} bytes per case (raise it with --max-case-bytes, or `max-case-bytes` in [cases] of a pipeline)"
    )
}

fn line_of(bytes: &[u8], offset: usize) -> u64 {
    bytes[..offset].iter().filter(|byte| **byte == b'\n').count() as u64 + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &[u8], capacity: usize, keep: usize) -> Vec<(u64, Vec<u8>, usize)> {
        let mut lines = Lines {
            reader: std::io::BufReader::with_capacity(capacity, text),
            path: PathBuf::from("test"),
            number: 0,
            keep,
        };
        let mut out = Vec::new();
        while let Some(line) = lines.next_line().expect("in-memory read") {
            out.push((line.number, line.bytes, line.len));
        }
        out
    }

    #[test]
    fn lines_across_buffer_edges_keep_numbers_and_bound_what_is_held() {
        let text = b"{\"a\":1}\r\n\n  \nabcdefghijklmnop\r\nlast";
        for capacity in [1, 2, 3, 5, 8, 64] {
            let got = lines(text, capacity, 6);
            assert_eq!(
                got,
                vec![
                    (1, b"{\"a\":1".to_vec(), 7),
                    (2, Vec::new(), 0),
                    (3, b"  ".to_vec(), 2),
                    (4, b"abcdef".to_vec(), 16),
                    (5, b"last".to_vec(), 4),
                ],
                "buffer of {capacity} bytes"
            );
        }
        // Within the limit a CR before LF is dropped, as the whole-file reader did.
        assert_eq!(
            lines(b"x\r\ny\n", 2, 100),
            vec![(1, b"x".to_vec(), 1), (2, b"y".to_vec(), 1)]
        );
        assert!(lines(b"", 4, 10).is_empty());
    }

    fn summary(path: &Path, max_case_bytes: usize) -> Vec<String> {
        let mut items = Vec::new();
        read(path, InputFormat::Auto, max_case_bytes, &mut |item| {
            items.push(match item {
                Item::Case(case) => format!("case {} line {:?}", case.source_id, case.source_line),
                Item::Rejected(rejected) => {
                    format!("rejected line {:?}: {}", rejected.source_line, rejected.reason)
                }
            });
            Ok(())
        })
        .expect("read");
        items
    }

    #[test]
    fn streamed_csv_spans_quoted_lines_and_quarantines_one_bad_row_not_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cases.csv");
        let mut text = Vec::new();
        text.extend_from_slice(b"id,text\r\n");
        text.extend_from_slice(b"a,\"HPI: 60F.\nPathology: breast, \"\"ER+\"\".\"\r\n");
        text.extend_from_slice(b"bad,\"caf\xe9\"\n");
        text.extend_from_slice(format!("big,{}\n", "x".repeat(600)).as_bytes());
        text.extend_from_slice(b"b,HPI: 50M.\n\n");
        text.extend_from_slice(b"c,\"never closed\nstill open\n");
        std::fs::write(&path, &text).expect("write");
        let got = summary(&path, 500);
        assert_eq!(got.len(), 6, "{got:#?}");
        assert_eq!(got[0], "case a line Some(2)");
        assert!(
            got[1].starts_with("rejected line Some(4): line 4: not valid UTF-8"),
            "{}",
            got[1]
        );
        assert!(
            got[2].starts_with("rejected line Some(5): line 5: case is 604 bytes"),
            "{}",
            got[2]
        );
        assert_eq!(got[3], "case b line Some(6)");
        assert!(
            got[4].starts_with(
                "rejected line Some(8): line 8: the quoted field opened on line 8 is never closed"
            ),
            "{}",
            got[4]
        );
        // The line the open quote swallowed is read again, as a row of its own.
        assert_eq!(
            got[5],
            "rejected line Some(9): line 9: 1 fields where the header has 2 columns"
        );
        // A header without a text column rejects the file, once.
        std::fs::write(&path, "id,notes\n1,HER2 positive\n2,x\n").expect("write");
        let got = summary(&path, 500);
        assert_eq!(got.len(), 1, "{got:#?}");
        assert!(got[0].contains("missing a `text` column"), "{}", got[0]);
    }

    #[test]
    fn streamed_jsonl_rejects_big_and_broken_lines_by_number_and_reads_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cases.jsonl");
        let big = format!("{{\"id\":\"big\",\"text\":\"{}\"}}", "x".repeat(5000));
        let mut text = Vec::new();
        text.extend_from_slice(b"{\"id\":\"a\",\"text\":\"HPI: 60F with breast cancer.\"}\r\n\n");
        text.extend_from_slice(big.as_bytes());
        text.extend_from_slice(
            b"\n{\"id\":\"bad\",\"text\":\"\xff\"}\n{\"id\":\"b\",\"text\":\"HPI: 50M.\"}",
        );
        std::fs::write(&path, &text).expect("write");
        let mut items = Vec::new();
        read(&path, InputFormat::Auto, 1000, &mut |item| {
            items.push(item);
            Ok(())
        })
        .expect("read");
        let summary: Vec<String> = items
            .iter()
            .map(|item| match item {
                Item::Case(case) => format!("case {} line {:?}", case.source_id, case.source_line),
                Item::Rejected(rejected) => {
                    format!("rejected line {:?}: {}", rejected.source_line, rejected.reason)
                }
            })
            .collect();
        assert_eq!(summary.len(), 4, "{summary:#?}");
        assert_eq!(summary[0], "case a line Some(1)");
        assert!(
            summary[1].starts_with("rejected line Some(3): line 3: case is 5022 bytes"),
            "{}",
            summary[1]
        );
        assert!(
            summary[2].starts_with("rejected line Some(4): line 4: not valid UTF-8"),
            "{}",
            summary[2]
        );
        assert_eq!(summary[3], "case b line Some(5)");
        let Item::Rejected(big) = &items[1] else {
            unreachable!()
        };
        assert!(big.excerpt.as_ref().is_some_and(|excerpt| excerpt.len() <= 2048));
    }
}
