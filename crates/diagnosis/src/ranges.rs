//! Adult reference ranges of laboratory results (a pack's `ranges.yaml`):
//! a numeric result written without a range of its own (`WBC: 13,400/mm3`,
//! `Alkaline phosphatase: 460 U/L`) is read against the range of its
//! analyte in its unit. A result whose unit the file does not list for its
//! analyte stays unread (`unknown`): a range is never applied across units.
//!
//! The analyte is the entry with a label in the result's label (whole
//! words; the one ending last, then the longest, so `Complete Blood Count -
//! Hemoglobin` is hemoglobin). A label that names another specimen than
//! blood (`specimens`: `CSF - WBC`, `Urinalysis - Protein`) matches only an
//! entry whose own label names that specimen, so a blood range is never
//! read into a CSF or urine result.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::ontology::{check_version, line_of, parse_yaml};

/// The file of a pack's reference ranges.
pub const FILE: &str = "ranges.yaml";

/// A pack's reference ranges.
#[derive(Debug, Clone, Default)]
pub struct Ranges {
    entries: Vec<Entry>,
    specimens: Vec<String>,
}

#[derive(Debug, Clone)]
struct Entry {
    labels: Vec<String>,
    /// (unit spellings, low, high).
    units: Vec<(Vec<String>, f64, f64)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRanges {
    version: u32,
    #[serde(default)]
    specimens: Vec<String>,
    ranges: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    id: String,
    labels: Vec<String>,
    units: Vec<RawUnits>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUnits {
    units: Vec<String>,
    range: (f64, f64),
}

impl Ranges {
    /// Parses `ranges.yaml`; `origin` names it in errors, with the line:
    /// ids and labels once each across the file, labels and units lower
    /// case (units without spaces), every range's low end below its high
    /// end, every entry with a label and a unit.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let raw: RawRanges = parse_yaml(text, origin)?;
        let invalid = |line: usize, message: String| Error::Invalid(format!("{origin}:{line}: {message}"));
        check_version(raw.version, text, origin)?;
        let mut ids = BTreeSet::new();
        let mut labels = BTreeSet::new();
        let mut entries = Vec::new();
        for entry in raw.ranges {
            let line = line_of(text, &format!("id: {}", entry.id), 1);
            if !ids.insert(entry.id.clone()) {
                return Err(invalid(line, format!("duplicate id `{}`", entry.id)));
            }
            if entry.labels.is_empty() || entry.units.is_empty() {
                return Err(invalid(line, format!("`{}` needs labels and units", entry.id)));
            }
            for label in &entry.labels {
                if label.trim().is_empty() || label.to_lowercase() != *label {
                    return Err(invalid(
                        line,
                        format!("`{}`: label `{label}` is not lower case", entry.id),
                    ));
                }
                if !labels.insert(label.clone()) {
                    return Err(invalid(
                        line,
                        format!("`{}`: label `{label}` belongs to another entry", entry.id),
                    ));
                }
            }
            let mut units = Vec::new();
            for group in entry.units {
                let (low, high) = group.range;
                // NaN bounds fail too.
                if low.partial_cmp(&high) != Some(std::cmp::Ordering::Less) {
                    return Err(invalid(
                        line,
                        format!("`{}`: range [{low}, {high}] is not low < high", entry.id),
                    ));
                }
                if let Some(unit) = group
                    .units
                    .iter()
                    .find(|unit| unit.to_lowercase() != **unit || unit.contains(char::is_whitespace))
                {
                    return Err(invalid(
                        line,
                        format!("`{}`: unit `{unit}` is not lower case without spaces", entry.id),
                    ));
                }
                let spellings = group.units.iter().map(|unit| normal_unit(unit)).collect();
                units.push((spellings, low, high));
            }
            entries.push(Entry {
                labels: entry.labels,
                units,
            });
        }
        Ok(Ranges {
            entries,
            specimens: raw.specimens.iter().map(|word| word.to_lowercase()).collect(),
        })
    }

    /// `normal` or `abnormal` for a result `value` of the test `label`
    /// against its analyte's range in its unit; `None` when no entry names
    /// the label, the value has no number, or its unit is not the entry's.
    pub fn classify(&self, label: &str, value: &str) -> Option<&'static str> {
        let (number, low, high) = self.measure(label, value)?;
        Some(if low <= number && number <= high {
            "normal"
        } else {
            "abnormal"
        })
    }

    /// Whether a result is markedly abnormal: at least twice its range's
    /// upper end, or at most half its lower end (`ALP 460 U/L`, `CD4
    /// 36/mm3`), where a mildly abnormal one (`ESR 33 mm/hr`) is not.
    pub fn is_marked(&self, label: &str, value: &str) -> bool {
        self.measure(label, value)
            .is_some_and(|(number, low, high)| number >= 2.0 * high || (low > 0.0 && number <= low / 2.0))
    }

    /// A result's number and its analyte's range in its unit.
    fn measure(&self, label: &str, value: &str) -> Option<(f64, f64, f64)> {
        let label = label.replace('_', " ").to_lowercase();
        let (number, unit) = first_measure(value)?;
        let specimen = self
            .specimens
            .iter()
            .find(|word| phrase_at(&label, word).is_some());
        let entry = self
            .entries
            .iter()
            .filter_map(|entry| {
                if let Some(specimen) = specimen
                    && !entry.labels.iter().any(|own| phrase_at(own, specimen).is_some())
                {
                    return None;
                }
                // Under a specimen, an entry's label is also read without
                // the specimen's word (`csf wbc` in `CSF - WBC`).
                entry
                    .labels
                    .iter()
                    .flat_map(|own| {
                        let bare = specimen.map(|word| {
                            own.split_whitespace()
                                .filter(|part| part != word)
                                .collect::<Vec<_>>()
                                .join(" ")
                        });
                        [Some(own.clone()), bare].into_iter().flatten()
                    })
                    .filter_map(|own| phrase_at(&label, &own).map(|at| (at + own.len(), own.len())))
                    .max()
                    .map(|rank| (rank, entry))
            })
            .max_by_key(|(rank, _)| *rank)?
            .1;
        let (_, low, high) = entry
            .units
            .iter()
            .find(|(spellings, _, _)| spellings.contains(&unit))?;
        Some((number, *low, *high))
    }
}

/// Where `phrase` occurs in `text` as whole words (the last place), if it
/// does.
fn phrase_at(text: &str, phrase: &str) -> Option<usize> {
    crate::text::whole_word_places(text, phrase).last()
}

/// A unit as compared: lower case, no spaces, one micro sign, `³` as `^3`.
fn normal_unit(unit: &str) -> String {
    unit.to_lowercase()
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if c == '\u{b5}' { '\u{3bc}' } else { c })
        .collect::<String>()
        .replace('³', "^3")
        .replace('⁹', "^9")
        .trim_end_matches('.')
        .to_string()
}

/// The first number of a value and the unit written right after it:
/// `13,400/mm3` → (13400, `/mm3`), `460 U/L` → (460, `u/l`), `12 x 10^9/L`
/// → (12, `x10^9/l`), `7.35` → (7.35, ``). A number inside a word
/// (`HbA1c`) is not one.
fn first_measure(value: &str) -> Option<(f64, String)> {
    let bytes = value.as_bytes();
    let start = value
        .char_indices()
        .find(|&(at, c)| {
            c.is_ascii_digit()
                && value[..at]
                    .chars()
                    .next_back()
                    .is_none_or(|before| !before.is_alphanumeric())
        })?
        .0;
    let mut end = start;
    while end < bytes.len() {
        let c = bytes[end];
        let thousands = c == b','
            && bytes.len() >= end + 4
            && bytes[end + 1..end + 4].iter().all(u8::is_ascii_digit)
            && bytes.get(end + 4).is_none_or(|next| !next.is_ascii_digit());
        if c.is_ascii_digit()
            || (c == b'.' && bytes.get(end + 1).is_some_and(u8::is_ascii_digit))
            || thousands
        {
            end += 1;
        } else {
            break;
        }
    }
    let number: f64 = value[start..end].replace(',', "").parse().ok()?;
    let rest = &value[end..];
    let chunk = |text: &str| -> (String, usize) {
        let text_start = text.len() - text.trim_start().len();
        let trimmed = &text[text_start..];
        let length = trimmed
            .find(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')'))
            .unwrap_or(trimmed.len());
        (trimmed[..length].to_string(), text_start + length)
    };
    let (mut unit, used) = chunk(rest);
    if matches!(unit.as_str(), "x" | "×" | "*" | "X") {
        let (next, _) = chunk(&rest[used..]);
        unit.push_str(&next);
    }
    Some((number, normal_unit(&unit)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RANGES: &str = "version: 1
specimens: [csf, urine, urinalysis]
ranges:
  - id: wbc
    labels: [wbc, white blood cell count, leukocyte count]
    units:
      - units: [/mm3, cells/mm3, /μl]
        range: [4000, 11000]
      - units: [x10^9/l]
        range: [4.0, 11.0]
  - id: hemoglobin
    labels: [hemoglobin, hb]
    units:
      - units: [g/dl]
        range: [12.0, 17.5]
  - id: csf_wbc
    labels: [csf wbc, csf white cells]
    units:
      - units: [/mm3, cells/mm3]
        range: [0, 5]
  - id: ph
    labels: [ph]
    units:
      - units: ['']
        range: [7.35, 7.45]
";

    fn ranges() -> Ranges {
        Ranges::parse(RANGES, "ranges.yaml").unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn a_number_is_read_with_the_unit_written_after_it() {
        assert_eq!(first_measure("13,400/mm3"), Some((13400.0, "/mm3".into())));
        assert_eq!(first_measure("460 U/L"), Some((460.0, "u/l".into())));
        assert_eq!(first_measure("12 x 10^9/L"), Some((12.0, "x10^9/l".into())));
        assert_eq!(first_measure("7.35"), Some((7.35, String::new())));
        assert_eq!(
            first_measure("Elevated at 45 µL, repeat"),
            Some((45.0, "μl".into()))
        );
        assert_eq!(
            first_measure("HbA1c pending"),
            None,
            "a digit inside a word is no number"
        );
        assert_eq!(
            first_measure("1,2 mg"),
            Some((1.0, String::new())),
            "a comma is thousands only before three digits"
        );
        assert_eq!(first_measure("no number"), None);
    }

    #[test]
    fn a_result_is_read_against_its_analyte_in_its_unit() {
        let ranges = ranges();
        assert_eq!(
            ranges.classify("Complete Blood Count - Total Count WBC", "13,400/mm3"),
            Some("abnormal")
        );
        assert_eq!(
            ranges.classify("Leukocyte_count", "7,200 cells/mm3"),
            Some("normal")
        );
        assert_eq!(ranges.classify("WBC", "12.5 x 10^9/L"), Some("abnormal"));
        assert_eq!(
            ranges.classify("Blood Tests - Hemoglobin", "9.1 g/dL"),
            Some("abnormal")
        );
        assert_eq!(
            ranges.classify("Arterial blood gas - pH", "7.21"),
            Some("abnormal")
        );
        // Another unit than the entry's, no number, no entry: unread.
        assert_eq!(ranges.classify("Hemoglobin", "91 g/L"), None);
        assert_eq!(ranges.classify("Hemoglobin", "low"), None);
        assert_eq!(ranges.classify("Ferritin", "12 ng/mL"), None);
        // `hb` is a whole word of the label or nothing (`HbA1c` is not it).
        assert_eq!(ranges.classify("HbA1c", "9.1 g/dL"), None);
    }

    #[test]
    fn a_markedly_abnormal_result_is_twice_the_top_or_half_the_bottom() {
        let ranges = ranges();
        assert!(ranges.is_marked("WBC", "25,000/mm3"));
        assert!(ranges.is_marked("Hemoglobin", "5.9 g/dL"));
        assert!(!ranges.is_marked("WBC", "13,400/mm3"), "abnormal, not markedly");
        assert!(!ranges.is_marked("Hemoglobin", "13 g/dL"));
        assert!(
            !ranges.is_marked("Hemoglobin", "5.9 g/L"),
            "another unit is unread"
        );
    }

    #[test]
    fn a_blood_range_is_never_read_into_another_specimen() {
        let ranges = ranges();
        // Urine white cells: no urine entry, so unread (not a blood WBC of 3).
        assert_eq!(ranges.classify("Urinalysis - WBC", "3 /mm3"), None);
        // CSF white cells take the CSF entry.
        assert_eq!(ranges.classify("CSF - WBC", "3 cells/mm3"), Some("normal"));
        assert_eq!(ranges.classify("CSF WBC", "3 cells/mm3"), Some("normal"));
        assert_eq!(ranges.classify("CSF WBC", "250 cells/mm3"), Some("abnormal"));
    }

    #[test]
    fn the_file_is_checked_with_its_line() {
        let error = |text: &str| match Ranges::parse(text, "ranges.yaml") {
            Ok(_) => "no error".to_string(),
            Err(error) => error.to_string(),
        };
        let twice = RANGES.replace("labels: [hemoglobin, hb]", "labels: [hemoglobin, wbc]");
        assert_eq!(
            error(&twice),
            "ranges.yaml:11: `hemoglobin`: label `wbc` belongs to another entry"
        );
        let inverted = RANGES.replace("range: [12.0, 17.5]", "range: [17.5, 12.0]");
        assert_eq!(
            error(&inverted),
            "ranges.yaml:11: `hemoglobin`: range [17.5, 12] is not low < high"
        );
        let spaced = RANGES.replace("units: [g/dl]", "units: [g / dl]");
        assert_eq!(
            error(&spaced),
            "ranges.yaml:11: `hemoglobin`: unit `g / dl` is not lower case without spaces"
        );
        assert!(error("version: 2\nranges: []\n").starts_with("ranges.yaml:1: unsupported version"));
        assert!(error("version: 1\nranges: [{id: a}]\n").starts_with("ranges.yaml:2:"));
    }
}
