//! CSV with a header row: a `text` column and/or section columns, plus
//! optional reference columns; every other column is kept in `extra`.

use std::path::Path;

use serde_json::{Map, Value};

use super::fields::{SECTION_COLUMNS, case_from_map};
use super::{Item, Line, Lines, reject, too_big};
use crate::error::Result;

/// One CSV record: its fields and the 1-based lines it starts and ends on.
type Record = (Vec<String>, u64, u64);

/// What feeding one line to the parser gave.
#[derive(Debug, PartialEq)]
enum Fed {
    /// The line ends inside a quoted field: the record goes on.
    Pending,
    /// A blank line outside any record.
    Blank,
    Record(Record),
    /// The record cannot be read (a closing quote followed by text); it
    /// started on `start`.
    Broken {
        start: u64,
        reason: String,
    },
}

/// An incremental RFC 4180 parser (quotes, doubled quotes, line breaks
/// inside quotes), fed a line at a time: a record comes out once its last
/// line is in. A closing quote must end its field (a `,` or the line end
/// follows); anything else breaks the record, so that a stray or missing
/// quote is caught where it happens instead of swallowing later rows.
struct Parser {
    fields: Vec<String>,
    field: String,
    quoted: bool,
    /// The last character closed a quoted field.
    closed: bool,
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
            closed: false,
            at_field_start: true,
            record_line: 0,
            quote_line: 0,
            bytes: 0,
        }
    }

    /// Feeds line `number` (without its line end).
    fn feed(&mut self, line: &str, number: u64) -> Fed {
        if self.record_line == 0 {
            self.record_line = number;
        }
        self.bytes += line.len() + 1;
        let mut characters = line.char_indices().peekable();
        while let Some((at, character)) = characters.next() {
            if self.quoted {
                match character {
                    '"' if characters.peek().map(|(_, next)| *next) == Some('"') => {
                        characters.next();
                        self.field.push('"');
                    }
                    '"' => {
                        self.quoted = false;
                        self.closed = true;
                    }
                    other => self.field.push(other),
                }
                continue;
            }
            match character {
                ',' => {
                    self.fields.push(std::mem::take(&mut self.field));
                    self.at_field_start = true;
                    self.closed = false;
                }
                '\r' if characters.peek().is_none() => {}
                '"' if self.at_field_start => {
                    self.quoted = true;
                    self.quote_line = number;
                    self.at_field_start = false;
                }
                other if self.closed => {
                    let start = self.record_line;
                    let column = line[..at].chars().count() + 1;
                    let reason = if self.quote_line == start && number == start {
                        format!(
                            "line {number}, column {column}: `{other}` follows the closing quote of a field (a quote inside a quoted field is written `\"\"`)"
                        )
                    } else {
                        format!(
                            "line {start}: the quoted field opened on line {} is not closed properly: on line {number}, column {column}, `{other}` follows a quote (a quote inside a quoted field is written `\"\"`); the lines after line {start} are read again as rows of their own",
                            self.quote_line
                        )
                    };
                    *self = Parser::new();
                    return Fed::Broken { start, reason };
                }
                other => {
                    self.field.push(other);
                    self.at_field_start = false;
                }
            }
        }
        if self.quoted {
            self.field.push('\n');
            return Fed::Pending;
        }
        self.fields.push(std::mem::take(&mut self.field));
        let fields = std::mem::take(&mut self.fields);
        let start = self.record_line;
        let blank = fields.len() == 1 && fields[0].is_empty() && !self.closed;
        *self = Parser::new();
        if blank {
            Fed::Blank
        } else {
            Fed::Record((fields, start, number))
        }
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
fn row_item(path: &Path, header: &[String], (fields, line, end): Record, max_case_bytes: usize) -> Item {
    let raw_line = fields.join(",");
    let rejected =
        |reason: String| Item::Rejected(reject(path, Some(line), None, reason, raw_line.as_bytes()));
    if fields.len() != header.len() {
        let span = if end > line {
            format!(" (the record spans lines {line}–{end}: a quoted field holds line breaks)")
        } else {
            String::new()
        };
        return rejected(format!(
            "line {line}: {} fields where the header has {} columns{span}",
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
/// A record whose quote never closes properly (or that grows past the size
/// limit inside a quote) is quarantined at the line it starts on, and the
/// lines after that are read again as rows of their own: a broken quote
/// never swallows later rows, and no fragment becomes a case unless it is a
/// well-formed row itself.
pub(super) fn read<R: std::io::BufRead>(
    path: &Path,
    first: Line,
    lines: &mut Lines<R>,
    max_case_bytes: usize,
    sink: &mut dyn FnMut(Item) -> Result<()>,
) -> Result<()> {
    let mut state = State {
        path,
        max_case_bytes,
        parser: Parser::new(),
        header: None,
        header_failed: false,
        pending: Vec::new(),
        replay: std::collections::VecDeque::new(),
    };
    let mut next = Some(first);
    loop {
        if state.header_failed {
            return Ok(());
        }
        if let Some((number, text)) = state.replay.pop_front() {
            state.feed(number, text, sink)?;
            continue;
        }
        let Some(line) = next.take() else {
            if state.parser.pending() {
                state.break_open("is never closed".into(), sink)?;
                continue;
            }
            break;
        };
        let number = line.number;
        if line.len > max_case_bytes || std::str::from_utf8(&line.bytes).is_err() {
            // A line that cannot be part of any record: the record in
            // progress (if any) breaks here, and the line is rejected.
            if state.parser.pending() {
                state.break_open(format!("runs into line {number}, which cannot be read"), sink)?;
                // The bad line comes back after the replayed ones.
                next = Some(line);
                continue;
            }
            let reason = if line.len > max_case_bytes {
                format!("line {number}: {}", too_big(line.len, max_case_bytes))
            } else {
                let column = std::str::from_utf8(&line.bytes)
                    .err()
                    .map_or(0, |error| error.valid_up_to() + 1);
                format!("line {number}: not valid UTF-8 (bad byte at column {column})")
            };
            sink(Item::Rejected(reject(
                path,
                Some(number),
                None,
                reason,
                &line.bytes,
            )))?;
        } else {
            let text = String::from_utf8(line.bytes).unwrap_or_default();
            state.feed(number, text, sink)?;
        }
        next = lines.next_line()?;
    }
    if state.header.is_none() {
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

/// The reader's state between lines.
struct State<'a> {
    path: &'a Path,
    max_case_bytes: usize,
    parser: Parser,
    header: Option<Vec<String>>,
    /// The header was refused: the file is done.
    header_failed: bool,
    /// The lines of the record in progress.
    pending: Vec<(u64, String)>,
    /// Lines to read again (after a broken record), before the file's next.
    replay: std::collections::VecDeque<(u64, String)>,
}

impl State<'_> {
    fn feed(&mut self, number: u64, text: String, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
        if self.parser.pending() && self.parser.bytes + text.len() > self.max_case_bytes {
            let size = self.parser.bytes + text.len();
            let what = format!(
                "reaches {size} bytes at line {number} ({})",
                too_big(size, self.max_case_bytes)
            );
            self.replay.push_front((number, text));
            return self.break_open(what, sink);
        }
        let fed = self.parser.feed(&text, number);
        self.pending.push((number, text));
        match fed {
            Fed::Pending => Ok(()),
            Fed::Blank => {
                self.pending.clear();
                Ok(())
            }
            Fed::Broken { start, reason } => self.broken(start, reason, sink),
            Fed::Record(record) => {
                self.pending.clear();
                match &self.header {
                    Some(header) => sink(row_item(self.path, header, record, self.max_case_bytes)),
                    None => match header(&record.0) {
                        Ok(found) => {
                            self.header = Some(found);
                            Ok(())
                        }
                        Err(reason) => {
                            self.header_failed = true;
                            let raw = record.0.join(",");
                            sink(Item::Rejected(reject(
                                self.path,
                                Some(record.1),
                                None,
                                reason,
                                raw.as_bytes(),
                            )))
                        }
                    },
                }
            }
        }
    }

    /// [`State::broken`] for the record in progress, whose quoted field
    /// `what` (is never closed, …).
    fn break_open(&mut self, what: String, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
        let start = self.parser.record_line;
        let reason = format!(
            "line {start}: the quoted field opened on line {} {what}; the lines after line {start} are read again as rows of their own",
            self.parser.quote_line
        );
        self.broken(start, reason, sink)
    }

    /// Quarantines the record in progress (which started on `start`) and
    /// queues its lines after the first to be read again.
    fn broken(&mut self, start: u64, reason: String, sink: &mut dyn FnMut(Item) -> Result<()>) -> Result<()> {
        self.parser = Parser::new();
        let lines = std::mem::take(&mut self.pending);
        let excerpt = lines.first().map(|(_, text)| text.clone()).unwrap_or_default();
        for line in lines.into_iter().skip(1).rev() {
            self.replay.push_front(line);
        }
        sink(Item::Rejected(reject(
            self.path,
            Some(start),
            None,
            reason,
            excerpt.as_bytes(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `text`, or the first broken record's reason.
    fn records(text: &str) -> Result<Vec<Record>, String> {
        let mut parser = Parser::new();
        let mut records = Vec::new();
        for (index, line) in text.split('\n').enumerate() {
            match parser.feed(line, index as u64 + 1) {
                Fed::Record(record) => records.push(record),
                Fed::Broken { reason, .. } => return Err(reason),
                Fed::Pending | Fed::Blank => {}
            }
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
        assert_eq!(
            parsed[1],
            (vec!["1".to_string(), "a, \"b\"\nc".to_string()], 2, 3)
        );
        assert_eq!(parsed[2].1, 4);
        assert!(records("id,text\n1,\"open\n").unwrap_err().contains("line 2"));
        let broken = records("id,text\n1,\"open\n2,ok\n3,\"x\" y\n").unwrap_err();
        assert!(
            broken.starts_with(
                "line 2: the quoted field opened on line 2 is not closed properly: on line 4, column 4"
            ),
            "{broken}"
        );
        let stray = records("id,text\n1,\"a\"b\n").unwrap_err();
        assert!(
            stray.starts_with("line 2, column 6: `b` follows the closing quote"),
            "{stray}"
        );
        // An empty quoted field is a field, not a blank line.
        assert_eq!(records("\"\"\n").unwrap(), vec![(vec![String::new()], 1, 1)]);
    }
}
