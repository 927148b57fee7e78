//! CSV with a header row: a `text` column and/or section columns, plus
//! optional reference columns; every other column is kept in `extra`.

use std::path::Path;

use serde_json::{Map, Value};

use super::fields::{SECTION_COLUMNS, case_from_map};
use super::{Item, Line, Lines, reject, too_big};
use crate::error::Result;

/// One CSV record: its fields and the 1-based line it starts on.
type Record = (Vec<String>, u64);

/// An incremental RFC 4180 parser (quotes, doubled quotes, line breaks
/// inside quotes), fed a line at a time: a record comes out once its last
/// line is in.
struct Parser {
    fields: Vec<String>,
    field: String,
    quoted: bool,
    at_field_start: bool,
    /// The line the pending record starts on (0: none pending).
    record_line: u64,
    /// The line the open quote started on.
    quote_line: u64,
    /// Bytes of the pending record so far.
    bytes: usize,
}

impl Parser {
    fn new() -> Self {
        Parser {
            fields: Vec::new(),
            field: String::new(),
            quoted: false,
            at_field_start: true,
            record_line: 0,
            quote_line: 0,
            bytes: 0,
        }
    }

    /// Feeds line `number` (without its line end); returns the record it
    /// completes, if any (blank lines make none).
    fn feed(&mut self, line: &str, number: u64) -> Option<Record> {
        if self.record_line == 0 {
            self.record_line = number;
        }
        self.bytes += line.len() + 1;
        let mut characters = line.chars().peekable();
        while let Some(character) = characters.next() {
            if self.quoted {
                match character {
                    '"' if characters.peek() == Some(&'"') => {
                        characters.next();
                        self.field.push('"');
                    }
                    '"' => self.quoted = false,
                    other => self.field.push(other),
                }
                continue;
            }
            match character {
                '"' if self.at_field_start => {
                    self.quoted = true;
                    self.quote_line = number;
                    self.at_field_start = false;
                }
                ',' => {
                    self.fields.push(std::mem::take(&mut self.field));
                    self.at_field_start = true;
                }
                '\r' => {}
                other => {
                    self.field.push(other);
                    self.at_field_start = false;
                }
            }
        }
        if self.quoted {
            self.field.push('\n');
            return None;
        }
        self.fields.push(std::mem::take(&mut self.field));
        let fields = std::mem::take(&mut self.fields);
        let line = self.record_line;
        *self = Parser::new();
        (!(fields.len() == 1 && fields[0].is_empty())).then_some((fields, line))
    }

    /// A record has begun and not ended (an open quote).
    fn pending(&self) -> bool {
        self.record_line != 0
    }
}

/// The header's column names, or why the header cannot be used.
fn header(fields: &[String]) -> Result<Vec<String>, String> {
    let names: Vec<String> = fields
        .iter()
        .map(|name| name.trim().trim_start_matches('\u{feff}').to_string())
        .collect();
    let normalised: Vec<String> = names
        .iter()
        .map(|name| name.to_ascii_lowercase().replace([' ', '-'], "_"))
        .collect();
    let has_text = normalised.iter().any(|name| {
        matches!(
            name.as_str(),
            "text" | "narrative" | "note" | "case_text" | "source_text"
        )
    });
    let has_section = normalised
        .iter()
        .any(|name| SECTION_COLUMNS.iter().any(|(known, _)| known == name));
    if !has_text && !has_section {
        let known: Vec<&str> = SECTION_COLUMNS.iter().map(|(name, _)| *name).collect();
        return Err(format!(
            "CSV header is missing a `text` column (or a section column: {}); columns found: {}",
            known.join(", "),
            names.join(", ")
        ));
    }
    Ok(names)
}

/// One data row as a case, or why it is rejected.
fn row_item(path: &Path, header: &[String], (fields, line): Record, max_case_bytes: usize) -> Item {
    let raw_line = fields.join(",");
    let rejected =
        |reason: String| Item::Rejected(reject(path, Some(line), None, reason, raw_line.as_bytes()));
    if fields.len() != header.len() {
        return rejected(format!(
            "line {line}: {} fields where the header has {} columns",
            fields.len(),
            header.len()
        ));
    }
    let size: usize = fields.iter().map(String::len).sum();
    if size > max_case_bytes {
        return rejected(format!("line {line}: {}", too_big(size, max_case_bytes)));
    }
    let mut object = Map::new();
    for (name, value) in header.iter().zip(fields) {
        if !value.is_empty() {
            object.insert(name.clone(), Value::String(value));
        }
    }
    match case_from_map(object, "csv", path, line) {
        Ok(case) => Item::Case(case),
        Err(reason) => rejected(reason),
    }
}

/// Reads a CSV file a line at a time from `first` (its first non-blank
/// line) on. A bad line (not UTF-8, too long) or row is quarantined and the
/// rest is read; a header without a text or section column rejects the file.
pub(super) fn read<R: std::io::BufRead>(
    path: &Path,
    first: Line,
    lines: &mut Lines<R>,
    max_case_bytes: usize,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    let mut parser = Parser::new();
    let mut header_row: Option<Vec<String>> = None;
    let mut next = Some(first);
    while let Some(line) = next {
        let number = line.number;
        let rejected = |reason: String| Item::Rejected(reject(path, Some(number), None, reason, &line.bytes));
        let item = if parser.bytes + line.len > max_case_bytes {
            // A line, or a record spanning lines, over the limit.
            let size = parser.bytes + line.len;
            parser = Parser::new();
            Some(rejected(format!(
                "line {number}: {}",
                too_big(size, max_case_bytes)
            )))
        } else {
            match std::str::from_utf8(&line.bytes) {
                Err(error) => {
                    parser = Parser::new();
                    Some(rejected(format!(
                        "line {number}: not valid UTF-8 (bad byte at column {})",
                        error.valid_up_to() + 1
                    )))
                }
                Ok(text) => match (parser.feed(text, number), &header_row) {
                    (None, _) => None,
                    (Some(record), Some(header_row)) => {
                        Some(row_item(path, header_row, record, max_case_bytes))
                    }
                    (Some((fields, line)), None) => match header(&fields) {
                        Ok(found) => {
                            header_row = Some(found);
                            None
                        }
                        Err(reason) => {
                            let raw = fields.join(",");
                            return sink(Item::Rejected(reject(
                                path,
                                Some(line),
                                None,
                                reason,
                                raw.as_bytes(),
                            )));
                        }
                    },
                },
            }
        };
        if let Some(item) = item {
            sink(item)?;
        }
        next = lines.next_line()?;
    }
    if parser.pending() {
        let partial = parser.fields.join(",") + &parser.field;
        sink(Item::Rejected(reject(
            path,
            Some(parser.quote_line),
            None,
            format!("line {}: a quoted field is never closed", parser.quote_line),
            partial.as_bytes(),
        )))?;
    }
    if header_row.is_none() && !parser.pending() {
        sink(Item::Rejected(reject(
            path,
            None,
            None,
            "empty CSV: no header row".into(),
            &[],
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `text`, or the open quote's error.
    fn records(text: &str) -> Result<Vec<Record>, String> {
        let mut parser = Parser::new();
        let mut records = Vec::new();
        for (index, line) in text.split('\n').enumerate() {
            records.extend(parser.feed(line, index as u64 + 1));
        }
        if parser.pending() {
            return Err(format!(
                "line {}: a quoted field is never closed",
                parser.quote_line
            ));
        }
        Ok(records)
    }

    #[test]
    fn quoted_fields_and_lines() {
        let parsed = records("id,text\n1,\"a, \"\"b\"\"\nc\"\n2,d\n").unwrap();
        assert_eq!(parsed[1], (vec!["1".to_string(), "a, \"b\"\nc".to_string()], 2));
        assert_eq!(parsed[2].1, 4);
        assert!(records("id,text\n1,\"open\n").unwrap_err().contains("line 2"));
    }
}
