//! Reading raw cases: free text, JSON lines (a text field and/or per-field
//! columns, with optional reference), AgentClinic OSCE JSON lines and CSV.
//! Format detection, and quarantine of bad inputs with the reason.

mod agentclinic;
mod csv;
mod fields;

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

/// Expands directories (their files, sorted; sub-folders are not entered).
pub fn expand(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for input in inputs {
        if input.is_dir() {
            let mut entries: Vec<PathBuf> = fs_err::read_dir(input)
                .map_err(|source| Error::Read {
                    path: input.clone(),
                    source,
                })?
                .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                .filter(|path| path.is_file())
                .collect();
            entries.sort();
            files.extend(entries);
        } else {
            files.push(input.clone());
        }
    }
    if files.is_empty() {
        return Err(Error::NoInput(format!(
            "{} named no files",
            inputs
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(files)
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
            .is_some_and(|value| value.get("OSCE_Examination").is_some())
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

/// Reads one file in `format` (`Auto` detects it).
pub fn read(path: &Path, format: InputFormat, max_case_bytes: usize) -> Result<Read> {
    let bytes = fs_err::read(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut read = Read::default();
    if bytes.iter().all(u8::is_ascii_whitespace) {
        read.rejected.push(reject(
            path,
            None,
            None,
            "empty file: no case in it".into(),
            &bytes,
        ));
        return Ok(read);
    }
    let format = match format {
        InputFormat::Auto => detect(path, &bytes)?,
        other => other,
    };
    match format {
        InputFormat::Text | InputFormat::Auto => read_text(path, &bytes, max_case_bytes, &mut read),
        InputFormat::Jsonl => {
            for_each_line(path, &bytes, max_case_bytes, &mut read, |line, number, read| {
                match fields::case_from_object(line, "jsonl", path, number) {
                    Ok(case) => read.cases.push(case),
                    Err(reason) => {
                        read.rejected
                            .push(reject(path, Some(number), None, reason, line.as_bytes()))
                    }
                }
            });
        }
        InputFormat::Agentclinic => {
            for_each_line(path, &bytes, max_case_bytes, &mut read, |line, number, read| {
                match agentclinic::case_from_line(line, path, number) {
                    Ok(case) => read.cases.push(case),
                    Err(reason) => {
                        read.rejected
                            .push(reject(path, Some(number), None, reason, line.as_bytes()))
                    }
                }
            });
        }
        InputFormat::Csv => csv::read(path, &bytes, max_case_bytes, &mut read),
    }
    Ok(read)
}

fn read_text(path: &Path, bytes: &[u8], max_case_bytes: usize, read: &mut Read) {
    let source_id = path
        .file_stem()
        .and_then(|stem| stem.to_str())
        .unwrap_or("case")
        .to_string();
    if bytes.len() > max_case_bytes {
        read.rejected.push(reject(
            path,
            None,
            Some(source_id),
            too_big(bytes.len(), max_case_bytes),
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
        "case is {size} bytes, over the limit of {limit} bytes per case (raise max_case_bytes to accept it)"
    )
}

fn line_of(bytes: &[u8], offset: usize) -> u64 {
    bytes[..offset].iter().filter(|byte| **byte == b'\n').count() as u64 + 1
}

/// Calls `each` with every non-blank line (1-based number); invalid UTF-8
/// and oversized lines are rejected with their line number.
fn for_each_line(
    path: &Path,
    bytes: &[u8],
    max_case_bytes: usize,
    read: &mut Read,
    mut each: impl FnMut(&str, u64, &mut Read),
) {
    for (index, line) in bytes.split(|byte| *byte == b'\n').enumerate() {
        let number = index as u64 + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if line.len() > max_case_bytes {
            read.rejected.push(reject(
                path,
                Some(number),
                None,
                format!("line {number}: {}", too_big(line.len(), max_case_bytes)),
                line,
            ));
            continue;
        }
        match std::str::from_utf8(line) {
            Ok(text) => each(text, number, read),
            Err(error) => read.rejected.push(reject(
                path,
                Some(number),
                None,
                format!(
                    "line {number}: not valid UTF-8 (bad byte at column {})",
                    error.valid_up_to() + 1
                ),
                line,
            )),
        }
    }
}
