//! Duplicate cases: two inputs with the same id (named in the record) or
//! the same case id (format, id and text) would be answered, judged and
//! scored twice. Every copy is quarantined, each naming where the others are,
//! and the rest of the input goes on.

use std::collections::HashMap;

use super::{RawCase, Rejected, excerpt};

/// Where each case key was seen, from a first pass over the inputs.
#[derive(Debug, Default)]
pub struct Duplicates {
    seen: HashMap<String, Vec<Location>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    path: String,
    line: Option<u64>,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}", self.path),
            None => write!(f, "{}", self.path),
        }
    }
}

/// The keys a case is known by: its case id, and its own id when the record
/// named one.
fn keys(case: &RawCase, case_id: &str) -> Vec<String> {
    let mut keys = vec![format!("case\u{0}{case_id}")];
    if case.id_given {
        keys.push(format!("id\u{0}{}", case.source_id));
    }
    keys
}

fn location(case: &RawCase) -> Location {
    Location {
        path: case.source_path.clone(),
        line: case.source_line,
    }
}

impl Duplicates {
    /// Notes one case of the first pass (`case_id`: its case id).
    pub fn note(&mut self, case: &RawCase, case_id: &str) {
        for key in keys(case, case_id) {
            self.seen.entry(key).or_default().push(location(case));
        }
    }

    /// The quarantine row for `case` when another input has its id.
    pub fn check(&self, case: &RawCase, case_id: &str, text: &str) -> Option<Rejected> {
        let here = location(case);
        let mut others: Vec<&Location> = Vec::new();
        for key in keys(case, case_id) {
            for other in self.seen.get(&key).into_iter().flatten() {
                if *other != here && !others.contains(&other) {
                    others.push(other);
                }
            }
        }
        if others.is_empty() {
            return None;
        }
        let shown: Vec<String> = others.iter().take(5).map(ToString::to_string).collect();
        let more = others.len().saturating_sub(shown.len());
        let line = case
            .source_line
            .map_or_else(String::new, |line| format!("line {line}: "));
        Some(Rejected {
            source_path: case.source_path.clone(),
            source_line: case.source_line,
            source_id: Some(case.source_id.clone()),
            reason: format!(
                "{line}duplicate case `{}`: also at {}{}; every copy is quarantined (give each case its own id, or remove the copies)",
                case.source_id,
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ),
            excerpt: excerpt(text.as_bytes()),
        })
    }
}
