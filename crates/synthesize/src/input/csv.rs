//! CSV with a header row: a `text` column and/or section columns, plus
//! optional reference columns; every other column is kept in `extra`.

use std::path::Path;

use serde_json::{Map, Value};

use super::fields::{SECTION_COLUMNS, case_from_map};
use super::{Read, reject, too_big};

/// One CSV record: its fields and the 1-based line it starts on.
type Record = (Vec<String>, u64);

/// Splits CSV text into records (RFC 4180: quotes, doubled quotes,
/// line breaks inside quotes). An unterminated quote is an error.
fn records(text: &str) -> Result<Vec<Record>, String> {
    let mut records = Vec::new();
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut line = 1u64;
    let mut record_line = 1u64;
    let mut quote_line = 0u64;
    let mut characters = text.chars().peekable();
    let mut at_field_start = true;
    while let Some(character) = characters.next() {
        if quoted {
            match character {
                '"' if characters.peek() == Some(&'"') => {
                    characters.next();
                    field.push('"');
                }
                '"' => quoted = false,
                '\n' => {
                    line += 1;
                    field.push('\n');
                }
                other => field.push(other),
            }
            continue;
        }
        match character {
            '"' if at_field_start => {
                quoted = true;
                quote_line = line;
                at_field_start = false;
            }
            ',' => {
                fields.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            '\r' => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                if !(fields.len() == 1 && fields[0].is_empty()) {
                    records.push((std::mem::take(&mut fields), record_line));
                }
                fields.clear();
                line += 1;
                record_line = line;
                at_field_start = true;
            }
            other => {
                field.push(other);
                at_field_start = false;
            }
        }
    }
    if quoted {
        return Err(format!("line {quote_line}: a quoted field is never closed"));
    }
    if !field.is_empty() || !fields.is_empty() {
        fields.push(field);
        records.push((fields, record_line));
    }
    Ok(records)
}

pub fn read(path: &Path, bytes: &[u8], max_case_bytes: usize, read: &mut Read) {
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            let line = bytes[..error.valid_up_to()]
                .iter()
                .filter(|byte| **byte == b'\n')
                .count() as u64
                + 1;
            read.rejected.push(reject(
                path,
                Some(line),
                None,
                format!(
                    "line {line}: not valid UTF-8 (bad byte at offset {}); the CSV file was not read",
                    error.valid_up_to()
                ),
                bytes,
            ));
            return;
        }
    };
    let records = match records(text) {
        Ok(records) => records,
        Err(reason) => {
            read.rejected.push(reject(path, None, None, reason, bytes));
            return;
        }
    };
    let Some(((header, _), rows)) = records.split_first() else {
        read.rejected
            .push(reject(path, None, None, "empty CSV: no header row".into(), bytes));
        return;
    };
    let header: Vec<String> = header
        .iter()
        .map(|name| name.trim().trim_start_matches('\u{feff}').to_string())
        .collect();
    let normalised: Vec<String> = header
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
        read.rejected.push(reject(
            path,
            Some(1),
            None,
            format!(
                "CSV header is missing a `text` column (or a section column: {}); columns found: {}",
                known.join(", "),
                header.join(", ")
            ),
            bytes,
        ));
        return;
    }
    for (fields, line) in rows {
        let raw_line = fields.join(",");
        if fields.len() != header.len() {
            read.rejected.push(reject(
                path,
                Some(*line),
                None,
                format!(
                    "line {line}: {} fields where the header has {} columns",
                    fields.len(),
                    header.len()
                ),
                raw_line.as_bytes(),
            ));
            continue;
        }
        let size: usize = fields.iter().map(String::len).sum();
        if size > max_case_bytes {
            read.rejected.push(reject(
                path,
                Some(*line),
                None,
                format!("line {line}: {}", too_big(size, max_case_bytes)),
                raw_line.as_bytes(),
            ));
            continue;
        }
        let mut object = Map::new();
        for (name, value) in header.iter().zip(fields) {
            if !value.is_empty() {
                object.insert(name.clone(), Value::String(value.clone()));
            }
        }
        match case_from_map(object, "csv", path, *line) {
            Ok(case) => read.cases.push(case),
            Err(reason) => read
                .rejected
                .push(reject(path, Some(*line), None, reason, raw_line.as_bytes())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_fields_and_lines() {
        let parsed = records("id,text\n1,\"a, \"\"b\"\"\nc\"\n2,d\n").unwrap();
        assert_eq!(parsed[1], (vec!["1".to_string(), "a, \"b\"\nc".to_string()], 2));
        assert_eq!(parsed[2].1, 4);
        assert!(records("id,text\n1,\"open\n").unwrap_err().contains("line 2"));
    }
}
