//! Reading a structured diagnostic case (AgentClinic OSCE lines,
//! `Label - Sub-label: value`) into facts, each with the exact span of its
//! value, and choosing the case's decisive items — over the pack's
//! `facts.yaml` and ontology.
//!
//! Fact kinds: `demographic` (`age` in years, `sex`), `symptom`, `history`,
//! `vital` and `exam` and `test_result` (value `normal` | `abnormal` |
//! `unknown`, the result as written in `detail`).
//!
//! **The decisive test result** (the rule, in order; the first that finds
//! one decides, and the rule's name is recorded):
//! 1. `names_diagnosis`: a test result whose value names the reference
//!    diagnosis (any ontology name or synonym: "compatible with Hirschsprung
//!    disease");
//! 2. `confirming`: a test result, not normal, whose label or value holds
//!    one of the reference diagnosis's `confirming` phrases in the ontology;
//! 3. `sole_abnormal_study`: the only result of a confirmatory study (a
//!    label holding one of the pack's `studies` words: biopsy, culture,
//!    imaging, ECG… — routine panels are left out, since they are abnormal
//!    in many diagnoses) that reads abnormal;
//! 4. `sole_abnormal_definitive_study`: when several studies read
//!    abnormal, the only abnormal one of a study that establishes a
//!    diagnosis by itself (the pack's `definitive_studies`: biopsy,
//!    culture, stain… — a CT and a biopsy both abnormal: the biopsy);
//! 5. none: the case has no decisive test result, and the interventions that
//!    need one say so.
//!
//! A reference diagnosis the ontology does not know (a case cfeval has never
//! seen) still goes through rules 1 (by its own name, and the abbreviation
//! it gives in parentheses) and 3.
//!
//! Within a rule, the first such result in chart order is chosen. The
//! choice is a reference fact (kind `decisive`, name `test_result`, value
//! the test's label, span the result's), which no subject sees. When the
//! ontology marks the reference diagnosis sex-specific, a second reference
//! fact (`decisive`/`sex`) records it.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;

use cfeval_schema::{Fact, Section};
use regex::Regex;
use serde::Deserialize;

use crate::ontology::Ontology;
use crate::{Error, Result};

/// The pack's chart-reading data (`facts.yaml`).
#[derive(Debug, Clone)]
pub struct Lexicon {
    sections: BTreeMap<String, String>,
    vitals: Vec<Vital>,
    normal: Vec<String>,
    abnormal: Regex,
    negation: Regex,
    unavailable: Vec<String>,
    female: Vec<String>,
    male: Vec<String>,
    ages: Vec<(Regex, f64)>,
    studies: Vec<String>,
    definitive: Vec<String>,
    range_cues: Vec<String>,
    /// Where the result starts in a line with no `Label:` (`Peripheral
    /// smear with schistocytes`): a number, a result cue, or an opener.
    result_start: Regex,
    /// The `result_openers` words, lower case.
    openers: Vec<String>,
    /// Reference ranges of numeric results (the pack's `ranges.yaml`).
    ranges: crate::ranges::Ranges,
    hash: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVital {
    labels: Vec<String>,
    #[serde(default)]
    range: Option<(f64, f64)>,
    #[serde(default)]
    fahrenheit_range: Option<(f64, f64)>,
    #[serde(default)]
    systolic: Option<(f64, f64)>,
    #[serde(default)]
    diastolic: Option<(f64, f64)>,
}

#[derive(Debug, Clone)]
struct Vital {
    id: String,
    spec: RawVital,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAge {
    pattern: String,
    unit: f64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLexicon {
    version: u32,
    sections: BTreeMap<String, String>,
    vitals: BTreeMap<String, RawVital>,
    normal: Vec<String>,
    abnormal: Vec<String>,
    negation: Vec<String>,
    unavailable: Vec<String>,
    sex: BTreeMap<String, Vec<String>>,
    age: Vec<RawAge>,
    /// Optional: without it, no result is decisive by elimination.
    #[serde(default)]
    studies: Vec<String>,
    /// Optional: the studies (a subset of `studies`' sense) that establish a
    /// diagnosis by themselves (tissue, microbiology), which decide when
    /// several studies read abnormal.
    #[serde(default)]
    definitive_studies: Vec<String>,
    /// Optional: the words that open a reference range a value states
    /// itself (`(reference range, 120 to 250)`).
    #[serde(default)]
    reference_range: Vec<String>,
    /// Optional: words that open the result in a line with no `Label:`
    /// (`with`, `showed`), besides numbers and the result cues.
    #[serde(default)]
    result_openers: Vec<String>,
}

const KINDS: &[&str] = &[
    "demographic",
    "symptom",
    "history",
    "vital",
    "exam",
    "test_result",
];

fn words_pattern(words: &[String]) -> std::result::Result<Regex, regex::Error> {
    let mut sorted: Vec<&String> = words.iter().collect();
    sorted.sort_by_key(|word| std::cmp::Reverse(word.len()));
    let alternatives: Vec<String> = sorted.iter().map(|word| regex::escape(word)).collect();
    Regex::new(&format!(r"(?i)\b(?:{})\b", alternatives.join("|")))
}

impl Lexicon {
    /// Parses `facts.yaml`; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let invalid = |message: String| Error::Invalid(format!("{origin}: {message}"));
        let raw: RawLexicon = serde_norway::from_str(text).map_err(|error| invalid(error.to_string()))?;
        if raw.version != 1 {
            return Err(invalid(format!("version {} is not 1", raw.version)));
        }
        for (section, kind) in &raw.sections {
            if !KINDS.contains(&kind.as_str()) {
                return Err(invalid(format!(
                    "section `{section}` gives kind `{kind}`, not one of {}",
                    KINDS.join(", ")
                )));
            }
        }
        for (id, vital) in &raw.vitals {
            let ranges = [
                vital.range,
                vital.fahrenheit_range,
                vital.systolic,
                vital.diastolic,
            ];
            if ranges.iter().flatten().any(|(low, high)| low > high) {
                return Err(invalid(format!(
                    "vital `{id}` has a range whose low end is above its high end"
                )));
            }
            if vital.labels.is_empty() {
                return Err(invalid(format!("vital `{id}` has no labels")));
            }
        }
        let mut female = Vec::new();
        let mut male = Vec::new();
        for (sex, words) in raw.sex {
            match sex.as_str() {
                "female" => female = words,
                "male" => male = words,
                other => return Err(invalid(format!("sex `{other}` is not female or male"))),
            }
        }
        let mut ages = Vec::new();
        for age in raw.age {
            let pattern = Regex::new(&format!("(?i){}", age.pattern))
                .map_err(|error| invalid(format!("age pattern `{}`: {error}", age.pattern)))?;
            if pattern.captures_len() != 2 || age.unit <= 0.0 {
                return Err(invalid(format!(
                    "age pattern `{}` needs exactly one capture and a positive unit",
                    age.pattern
                )));
            }
            ages.push((pattern, age.unit));
        }
        Ok(Lexicon {
            sections: raw.sections,
            vitals: raw
                .vitals
                .into_iter()
                .map(|(id, spec)| Vital { id, spec })
                .collect(),
            normal: raw.normal.iter().map(|cue| cue.to_lowercase()).collect(),
            abnormal: words_pattern(&raw.abnormal).map_err(|error| invalid(error.to_string()))?,
            negation: words_pattern(&raw.negation).map_err(|error| invalid(error.to_string()))?,
            unavailable: raw.unavailable.iter().map(|cue| cue.to_lowercase()).collect(),
            female,
            male,
            ages,
            studies: raw.studies.iter().map(|word| word.to_lowercase()).collect(),
            definitive: raw
                .definitive_studies
                .iter()
                .map(|word| word.to_lowercase())
                .collect(),
            range_cues: raw
                .reference_range
                .iter()
                .map(|word| word.to_lowercase())
                .collect(),
            result_start: {
                let mut words: Vec<String> = raw.result_openers.clone();
                words.extend(raw.normal.iter().cloned());
                words.extend(raw.abnormal.iter().cloned());
                words.extend(raw.negation.iter().cloned());
                words_pattern(&words).map_err(|error| invalid(error.to_string()))?
            },
            openers: raw
                .result_openers
                .iter()
                .map(|word| word.to_lowercase())
                .collect(),
            ranges: crate::ranges::Ranges::default(),
            hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
        })
    }

    /// Loads `facts.yaml` from a pack folder, with `ranges.yaml` when the
    /// pack has one.
    pub fn load(pack_dir: &Path) -> Result<Self> {
        let read = |path: &Path| {
            std::fs::read_to_string(path).map_err(|source| Error::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        let path = pack_dir.join("facts.yaml");
        let lexicon = Self::parse(&read(&path)?, &path.display().to_string())?;
        let ranges = pack_dir.join(crate::ranges::FILE);
        if !ranges.exists() {
            return Ok(lexicon);
        }
        lexicon.with_ranges(&read(&ranges)?, &ranges.display().to_string())
    }

    /// The lexicon reading numeric results without a range of their own
    /// against `ranges.yaml` (`origin` names it in errors); the file joins
    /// the hash.
    pub fn with_ranges(mut self, text: &str, origin: &str) -> Result<Self> {
        self.ranges = crate::ranges::Ranges::parse(text, origin)?;
        self.hash = crate::chained_hash(&self.hash, text);
        Ok(self)
    }

    /// Whether the result `value` of the test `label` is markedly abnormal
    /// against the pack's reference range ([`crate::ranges::Ranges::is_marked`]).
    pub fn is_marked(&self, label: &str, value: &str) -> bool {
        self.ranges.is_marked(label, value)
    }

    /// `normal`, `abnormal` or `unknown` for the result `value` of the test
    /// `label`: its cues and its own range first ([`Lexicon::classify`]),
    /// then, for a number they leave unread, the pack's reference range.
    pub fn classify_result(&self, label: &str, value: &str) -> &'static str {
        match self.classify(value) {
            "unknown" => self.ranges.classify(label, value).unwrap_or("unknown"),
            status => status,
        }
    }

    /// Whether a test's label names a confirmatory study (biopsy, culture,
    /// imaging, …: the pack's `studies` words, whole words of the label).
    pub fn is_study(&self, label: &str) -> bool {
        let label = normal_label(label);
        self.studies.iter().any(|word| contains_phrase(&label, word))
    }

    /// Whether a test's label names a study that establishes a diagnosis by
    /// itself (the pack's `definitive_studies` words).
    pub fn is_definitive(&self, label: &str) -> bool {
        let label = normal_label(label);
        self.definitive.iter().any(|word| contains_phrase(&label, word))
    }

    /// Where the result starts in a line with no `Label:` (`Direct
    /// antiglobulin test positive for C3d` → at `positive`; `Platelet count
    /// 11,000 per cubic millimeter` → at `11,000`): the first number or
    /// result cue after the first word. `None` when there is none.
    fn result_start(&self, line: &str) -> Option<usize> {
        let first_word_end = line.find(char::is_whitespace)?;
        let digit = line[first_word_end..]
            .char_indices()
            .find(|&(at, c)| {
                c.is_ascii_digit()
                    && line[..first_word_end + at]
                        .chars()
                        .next_back()
                        .is_some_and(char::is_whitespace)
            })
            .map(|(at, _)| first_word_end + at);
        let cue = self
            .result_start
            .find_iter(line)
            .map(|found| found.start())
            .find(|&at| at > first_word_end);
        [digit, cue].into_iter().flatten().min()
    }

    /// A value against the reference range it states itself: `35664 U per
    /// liter (reference range, 120 to 250)` is abnormal, `494 (reference
    /// range: 414 to 1123)` normal, `74% (reference value, <2%)` abnormal.
    /// `None` when the value states no range, or no number before it.
    fn against_stated_range(&self, lower: &str) -> Option<&'static str> {
        // The cue opens a bracket: `(reference range, ...`.
        let (cue_at, cue) = self
            .range_cues
            .iter()
            .filter_map(|cue| {
                lower
                    .match_indices(cue.as_str())
                    .find(|(at, _)| lower[..*at].trim_end().ends_with(['(', '[']))
                    .map(|(at, _)| (at, cue))
            })
            .min_by_key(|(at, cue)| (*at, std::cmp::Reverse(cue.len())))?;
        let value = *numbers(&lower[..cue_at]).first()?;
        let range_text = &lower[cue_at + cue.len()..];
        let range_text = &range_text[..range_text.find(')').unwrap_or(range_text.len())];
        let bounds = numbers(range_text);
        let below = range_text.contains('<') || range_text.contains('≤');
        let above = range_text.contains('>') || range_text.contains('≥');
        let within = match bounds[..] {
            [low, high, ..] if !below && !above => low <= value && value <= high,
            [limit, ..] if below => value <= limit,
            [limit, ..] if above => value >= limit,
            _ => return None,
        };
        Some(if within { "normal" } else { "abnormal" })
    }

    /// Whether a result as written says there is none (`Not specified`,
    /// `pending`: the pack's `unavailable` cues, after an opener).
    pub fn is_unavailable(&self, value: &str) -> bool {
        let lower = value.trim().trim_end_matches('.').to_lowercase();
        let lower = self
            .openers
            .iter()
            .find_map(|opener| {
                lower
                    .strip_prefix(opener.as_str())
                    .filter(|rest| rest.starts_with(' '))
                    .map(|rest| rest.trim_start().to_string())
            })
            .unwrap_or(lower);
        self.unavailable.iter().any(|cue| {
            lower == *cue || lower.starts_with(&format!("{cue} ")) || lower.starts_with(&format!("{cue},"))
        })
    }

    /// BLAKE3 of the file.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// `normal`, `abnormal` or `unknown` for a result as written.
    pub fn classify(&self, value: &str) -> &'static str {
        let mut lower = value.trim().to_lowercase();
        // A result that opens with an opener (`with normal coronary
        // arteries`, `showed no mass`) reads from the word after it.
        if let Some(rest) = self.openers.iter().find_map(|opener| {
            lower
                .strip_prefix(opener.as_str())
                .filter(|rest| rest.starts_with(' '))
                .map(|rest| rest.trim_start().to_string())
        }) {
            lower = rest;
        }
        if lower.is_empty()
            || self
                .unavailable
                .iter()
                .any(|cue| lower == *cue || lower.starts_with(cue.as_str()))
        {
            return "unknown";
        }
        if let Some(status) = self.against_stated_range(&lower) {
            return status;
        }
        if self.has_unnegated_abnormal(&lower) {
            return "abnormal";
        }
        let starts_normal = self.normal.iter().any(|cue| {
            lower == *cue
                || lower
                    .strip_prefix(cue.as_str())
                    .is_some_and(|rest| rest.starts_with(|c: char| !c.is_alphanumeric()))
        });
        // "(within normal limits)" after a number.
        let says_normal = self
            .normal
            .iter()
            .any(|cue| cue.contains(' ') && lower.contains(cue.as_str()));
        // A result that opens by negating ("No fracture or effusion",
        // "Negative for bacterial growth") and states nothing abnormal.
        let opens_negated = self.negation.find(&lower).is_some_and(|found| found.start() == 0);
        if starts_normal || says_normal || opens_negated {
            "normal"
        } else {
            "unknown"
        }
    }

    /// Whether an abnormal cue occurs outside a negation's scope. A
    /// negation reaches over a list ("no fracture, dislocation or
    /// effusion") to the end of its sentence, or to a contrast word
    /// (`but`, `however`, `although`, `except`, `with`).
    fn has_unnegated_abnormal(&self, lower: &str) -> bool {
        self.abnormal.find_iter(lower).any(|cue| {
            let before = &lower[..cue.start()];
            let mut scope_start = before.rfind(['.', ';', '(']).map_or(0, |at| at + 1);
            for contrast in [" but ", " however", " although ", " except ", " with "] {
                if let Some(at) = before[scope_start..].rfind(contrast) {
                    scope_start = scope_start + at + contrast.len();
                }
            }
            !self.negation.is_match(&before[scope_start..])
        })
    }

    /// The vital a label names, if any.
    fn vital(&self, label: &str) -> Option<&Vital> {
        let label = normal_label(label);
        let last = label.rsplit(" - ").next().unwrap_or(&label).to_string();
        self.vitals.iter().find(|vital| {
            vital
                .spec
                .labels
                .iter()
                .any(|name| last == *name || last.starts_with(&format!("{name} ")))
        })
    }

    /// A vital sign's value against its range.
    fn classify_vital(&self, vital: &Vital, value: &str) -> &'static str {
        let numbers = numbers(value);
        let within = |range: Option<(f64, f64)>, number: f64| {
            range.is_none_or(|(low, high)| low <= number && number <= high)
        };
        if vital.id == "blood_pressure" || vital.spec.systolic.is_some() {
            if let [systolic, diastolic, ..] = numbers[..] {
                return if within(vital.spec.systolic, systolic) && within(vital.spec.diastolic, diastolic) {
                    "normal"
                } else {
                    "abnormal"
                };
            }
        } else if let Some(&number) = numbers.first() {
            let fahrenheit = value.contains('F') && !value.contains('C');
            let range = if fahrenheit {
                vital.spec.fahrenheit_range.or(vital.spec.range)
            } else {
                vital.spec.range
            };
            return if within(range, number) {
                "normal"
            } else {
                "abnormal"
            };
        }
        self.classify(value)
    }

    fn sex_of(&self, text: &str) -> Option<(&'static str, Range<usize>)> {
        let mut best: Option<(&'static str, Range<usize>)> = None;
        for (sex, words) in [("female", &self.female), ("male", &self.male)] {
            let Ok(pattern) = words_pattern(words) else {
                continue;
            };
            if let Some(found) = pattern.find(text)
                && best.as_ref().is_none_or(|(_, range)| found.start() < range.start)
            {
                best = Some((sex, found.range()));
            }
        }
        best
    }

    fn age_of(&self, text: &str) -> Option<(String, Range<usize>)> {
        self.ages.iter().find_map(|(pattern, unit)| {
            let captures = pattern.captures(text)?;
            let whole = captures.get(0)?;
            let number: f64 = captures.get(1)?.as_str().parse().ok()?;
            let years = number / unit;
            let value = if years.fract() == 0.0 {
                format!("{years}")
            } else {
                format!("{years:.2}")
            };
            Some((value, whole.range()))
        })
    }
}

fn normal_label(label: &str) -> String {
    label.replace(['_'], " ").to_lowercase().trim().to_string()
}

/// The numbers in a value, in order (`125/80 mmHg` → 125, 80).
fn numbers(value: &str) -> Vec<f64> {
    let mut out = Vec::new();
    let mut current = String::new();
    for character in value.chars().chain([' ']) {
        if character.is_ascii_digit() || (character == '.' && !current.is_empty()) {
            current.push(character);
        } else if character == ',' && !current.is_empty() {
            // thousands separator: 12,000
        } else {
            if let Ok(number) = current.trim_end_matches('.').parse::<f64>() {
                out.push(number);
            }
            current.clear();
        }
    }
    out
}

/// One `label: value` line of a chart section.
#[derive(Debug, Clone)]
struct Line {
    label: String,
    value: Range<usize>,
}

/// The `label: value` lines of a section (offsets into the source text). The
/// section's own label (`Labs: `) is skipped on its first line.
fn lines(source: &str, section: &Section, lexicon: Option<&Lexicon>) -> Vec<Line> {
    let (Some(start), Some(end)) = (section.span_start, section.span_end) else {
        return Vec::new();
    };
    let (start, end) = (start as usize, end as usize);
    let Some(text) = source.get(start..end) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut offset = start;
    for (index, raw_line) in text.split_inclusive('\n').enumerate() {
        let line_start = offset;
        offset += raw_line.len();
        let mut content = raw_line.trim_end_matches(['\n', '\r']);
        let mut content_start = line_start;
        if index == 0
            && let Some(at) = content.find(": ")
        {
            content_start += at + 2;
            content = &content[at + 2..];
        }
        match content.find(": ") {
            Some(at) => {
                let value_start = content_start + at + 2;
                let value_text = &content[at + 2..];
                let trimmed = value_text.trim_end();
                if trimmed.is_empty() {
                    continue;
                }
                out.push(Line {
                    label: content[..at].trim().to_string(),
                    value: value_start..value_start + trimmed.len(),
                });
            }
            None if !content.trim().is_empty() => {
                let end = content_start + content.trim_end().len();
                // A result stated without `Label:` is cut where its result
                // starts, so the label names the test.
                match lexicon.and_then(|lexicon| lexicon.result_start(content.trim_end())) {
                    Some(at) => out.push(Line {
                        label: content[..at].trim().to_string(),
                        value: content_start + at..end,
                    }),
                    None => out.push(Line {
                        label: String::new(),
                        value: content_start..end,
                    }),
                }
            }
            None => {}
        }
    }
    out
}

fn fact(
    kind: &str,
    name: &str,
    value: &str,
    detail: Option<String>,
    section: &str,
    source: &str,
    span: Range<usize>,
) -> Fact {
    Fact {
        kind: kind.to_string(),
        name: name.to_string(),
        value: value.to_string(),
        polarity: "affirmed".into(),
        certainty: "certain".into(),
        detail,
        section: section.to_string(),
        span_start: span.start as u64,
        span_end: span.end as u64,
        span_text: source[span].to_string(),
        origin: "rule".into(),
    }
}

/// The facts of a structured diagnostic chart.
pub fn read(lexicon: &Lexicon, source: &str, sections: &[Section]) -> Vec<Fact> {
    let mut facts = Vec::new();
    for section in sections {
        let Some(kind) = lexicon.sections.get(&section.name) else {
            continue;
        };
        let results = matches!(kind.as_str(), "test_result" | "exam");
        for line in lines(source, section, results.then_some(lexicon)) {
            let value = &source[line.value.clone()];
            match kind.as_str() {
                "demographic" => {
                    if let Some((years, span)) = lexicon.age_of(value) {
                        let span = line.value.start + span.start..line.value.start + span.end;
                        facts.push(fact(
                            "demographic",
                            "age",
                            &years,
                            None,
                            &section.name,
                            source,
                            span,
                        ));
                    }
                    if let Some((sex, span)) = lexicon.sex_of(value) {
                        let span = line.value.start + span.start..line.value.start + span.end;
                        facts.push(fact("demographic", "sex", sex, None, &section.name, source, span));
                    }
                }
                "symptom" => {
                    let mut item_start = line.value.start;
                    for item in value.split("; ") {
                        let trimmed = item.trim();
                        if !trimmed.is_empty() {
                            let lead = item.len() - item.trim_start().len();
                            let span = item_start + lead..item_start + lead + trimmed.len();
                            facts.push(fact(
                                "symptom",
                                &trimmed.to_lowercase(),
                                "present",
                                None,
                                &section.name,
                                source,
                                span,
                            ));
                        }
                        item_start += item.len() + 2;
                    }
                }
                "history" => {
                    let name = if line.label.is_empty() {
                        section.name.clone()
                    } else {
                        normal_label(&line.label)
                    };
                    facts.push(fact(
                        "history",
                        &name,
                        "stated",
                        None,
                        &section.name,
                        source,
                        line.value.clone(),
                    ));
                }
                "exam" | "test_result" => {
                    let label = if line.label.is_empty() {
                        section.name.replace('_', " ")
                    } else {
                        line.label.clone()
                    };
                    if let Some(vital) = lexicon.vital(&label) {
                        let status = lexicon.classify_vital(vital, value);
                        facts.push(fact(
                            "vital",
                            &vital.id,
                            status,
                            Some(value.to_string()),
                            &section.name,
                            source,
                            line.value.clone(),
                        ));
                        continue;
                    }
                    let status = if kind == "test_result" {
                        lexicon.classify_result(&label, value)
                    } else {
                        lexicon.classify(value)
                    };
                    facts.push(fact(
                        kind,
                        &label,
                        status,
                        Some(value.to_string()),
                        &section.name,
                        source,
                        line.value.clone(),
                    ));
                }
                _ => {}
            }
        }
    }
    facts
}

/// The decisive items of a case with reference diagnosis `reference`:
/// reference facts (kind `decisive`), and the rule that chose the test.
pub fn decisive(
    lexicon: &Lexicon,
    ontology: &Ontology,
    facts: &[Fact],
    reference: &str,
) -> (Vec<Fact>, &'static str) {
    let mut out = Vec::new();
    let diagnosis = ontology.resolve(reference);
    let names = diagnosis_names(ontology, reference);
    // A result is decisive only where its label names it alone: an edit or
    // an order of a label that several results share (`Imaging studies:`
    // three findings) would not say which one it means.
    let label_count = |name: &str| {
        facts
            .iter()
            .filter(|fact| fact.kind == "test_result" && fact.name == name)
            .count()
    };
    // A result the chart says it does not have (`Not specified`) decides
    // nothing, whatever its label names.
    let tests = || {
        facts.iter().filter(move |fact| {
            fact.kind == "test_result"
                && label_count(&fact.name) == 1
                && !lexicon.is_unavailable(&fact.span_text)
        })
    };
    let names_it = |fact: &&Fact| names_diagnosis(fact, &names);
    let confirms = |fact: &&Fact| confirms_diagnosis(fact, diagnosis);
    let abnormal: Vec<&Fact> = tests()
        .filter(|fact| fact.value == "abnormal" && lexicon.is_study(&fact.name))
        .collect();
    let definitive: Vec<&Fact> = abnormal
        .iter()
        .copied()
        .filter(|fact| lexicon.is_definitive(&fact.name))
        .collect();
    // A result that names or confirms the diagnosis decides only if no
    // definitive study besides it reads abnormal: with a biopsy showing
    // giant-cell arteritis, a normal ESR would not move the diagnosis.
    let stands_alone = |found: &&Fact| {
        lexicon.is_definitive(&found.name) || definitive.iter().all(|other| other.name == found.name)
    };
    let named = tests().find(names_it).or_else(|| tests().find(confirms));
    let (chosen, rule) = if let Some(found) = named.filter(stands_alone) {
        let rule = if names_it(&found) {
            "names_diagnosis"
        } else {
            "confirming"
        };
        (Some(found), rule)
    } else if let (None, [only]) = (named, abnormal.as_slice()) {
        (Some(*only), "sole_abnormal_study")
    } else if let [only] = definitive.as_slice() {
        (Some(*only), "sole_abnormal_definitive_study")
    } else if named.is_some() {
        (None, "several_definitive_studies")
    } else if diagnosis.is_none() {
        (None, "reference_not_in_ontology")
    } else {
        (None, "none")
    };
    if let Some(test) = chosen {
        out.push(Fact {
            kind: "decisive".into(),
            name: "test_result".into(),
            value: test.name.clone(),
            detail: Some(rule.to_string()),
            origin: "reference".into(),
            ..test.clone()
        });
    }
    if let Some(sex) = diagnosis.and_then(|diagnosis| diagnosis.sex.as_ref())
        && let Some(stated) = facts
            .iter()
            .find(|fact| fact.kind == "demographic" && fact.name == "sex")
    {
        out.push(Fact {
            kind: "decisive".into(),
            name: "sex".into(),
            value: sex.clone(),
            detail: diagnosis.map(|diagnosis| format!("{} is sex-specific", diagnosis.name)),
            origin: "reference".into(),
            ..stated.clone()
        });
    }
    (out, rule)
}

/// The lowercase names of a reference diagnosis: the ontology's name and
/// synonyms (of at least four characters) and the reference's own
/// ([`own_names`]).
pub(crate) fn diagnosis_names(ontology: &Ontology, reference: &str) -> Vec<String> {
    let mut names: Vec<String> = ontology
        .resolve(reference)
        .into_iter()
        .flat_map(|diagnosis| std::iter::once(&diagnosis.name).chain(&diagnosis.synonyms))
        .map(|name| name.to_lowercase())
        .filter(|name| name.chars().count() >= 4)
        .collect();
    names.extend(own_names(reference));
    names
}

/// Whether a fact's span names one of `names` (whole words).
pub(crate) fn names_diagnosis(fact: &Fact, names: &[String]) -> bool {
    let value = fact.span_text.to_lowercase();
    names.iter().any(|name| contains_phrase(&value, name))
}

/// Whether a fact that is not normal holds, in its label or span, one of
/// the diagnosis's confirming phrases (the ontology's).
pub(crate) fn confirms_diagnosis(fact: &Fact, diagnosis: Option<&crate::ontology::Diagnosis>) -> bool {
    fact.value != "normal"
        && diagnosis.is_some_and(|diagnosis| {
            let text = format!("{} {}", fact.name.replace('_', " "), fact.span_text).to_lowercase();
            diagnosis
                .confirming
                .iter()
                .any(|phrase| contains_phrase(&text, &phrase.to_lowercase()))
        })
}

/// The names a reference diagnosis gives itself: the whole string, the part
/// before a parenthesis, and what the parenthesis holds (`Progressive
/// multifocal leukoencephalopathy (PML)`), each of at least four characters
/// or an abbreviation of at least two capitals.
fn own_names(reference: &str) -> Vec<String> {
    let mut out = vec![reference.trim().to_lowercase()];
    if let Some((before, after)) = reference.split_once('(') {
        out.push(before.trim().to_lowercase());
        let inner = after.trim_end_matches(')').trim();
        out.push(inner.to_lowercase());
    }
    out.retain(|name| {
        name.chars().count() >= 4 || (name.len() >= 2 && reference.contains(&name.to_uppercase()))
    });
    out.sort();
    out.dedup();
    out
}

/// Whole-word containment (`needle` already lowercase).
fn contains_phrase(haystack: &str, needle: &str) -> bool {
    crate::text::whole_word_places(haystack, needle).next().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexicon() -> Lexicon {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/general-medicine");
        Lexicon::load(&path).unwrap()
    }

    #[test]
    fn classifies_results_by_their_cues_and_negation() {
        let lexicon = lexicon();
        assert_eq!(lexicon.classify("Present (elevated)"), "abnormal");
        assert_eq!(
            lexicon.classify("Normal, no thymoma or other masses detected."),
            "normal"
        );
        assert_eq!(
            lexicon.classify("Decreased muscle response with repetitive stimulation"),
            "abnormal"
        );
        assert_eq!(lexicon.classify("7,000 /μL (within normal limits)"), "normal");
        assert_eq!(lexicon.classify("Negative"), "normal");
        assert_eq!(lexicon.classify("Negative for bacterial growth"), "normal");
        assert_eq!(lexicon.classify("Not provided"), "unknown");
        assert_eq!(
            lexicon.classify("No fracture, dislocation, or appreciable joint effusion."),
            "normal"
        );
        assert_eq!(lexicon.classify("No masses, but a small effusion"), "abnormal");
        assert_eq!(lexicon.classify("96 mg/dL"), "unknown");
        assert_eq!(
            lexicon.classify("A transition zone in the distal colon, compatible with Hirschsprung disease"),
            "abnormal"
        );
    }

    #[test]
    fn a_result_without_a_label_is_cut_where_its_result_starts() {
        let lexicon = lexicon();
        fn cut<'a>(lexicon: &Lexicon, line: &'a str) -> Option<(&'a str, &'a str)> {
            lexicon.result_start(line).map(|at| (&line[..at], &line[at..]))
        }
        let cut = |line| cut(&lexicon, line);
        assert_eq!(
            cut("Direct antiglobulin test positive for C3d"),
            Some(("Direct antiglobulin test ", "positive for C3d"))
        );
        assert_eq!(
            cut("Platelet count 11,000 per cubic millimeter"),
            Some(("Platelet count ", "11,000 per cubic millimeter"))
        );
        assert_eq!(
            cut("CT of the head without acute abnormality"),
            Some(("CT of the head ", "without acute abnormality"))
        );
        assert_eq!(
            cut("Peripheral smear with numerous schistocytes"),
            Some(("Peripheral smear ", "with numerous schistocytes"))
        );
        // A digit inside a word (`HbA1c`) starts nothing; a lone word has no cut.
        assert_eq!(cut("HbA1c 9.1%"), Some(("HbA1c ", "9.1%")));
        assert_eq!(cut("Haptoglobin"), None);
    }

    #[test]
    fn a_value_is_read_against_the_range_it_states() {
        let lexicon = lexicon();
        let classify = |value: &str| lexicon.classify(value);
        assert_eq!(
            classify("35664 U per liter (reference range, 120 to 250)"),
            "abnormal"
        );
        assert_eq!(
            classify("494 per cubic millimeter (Reference range: 414 to 1123)"),
            "normal"
        );
        assert_eq!(classify("74% eosinophils (reference value, <2%)"), "abnormal");
        assert_eq!(
            classify("450 copies per milliliter (reference range, <20)"),
            "abnormal"
        );
        assert_eq!(classify("Sodium 140 mmol/L (normal 135-145)"), "normal");
        assert_eq!(classify("eGFR 50 (normal, >60)"), "abnormal");
        // An opener is read past.
        assert_eq!(classify("with normal coronary artery dimensions"), "normal");
        assert_eq!(classify("showed no mass"), "normal");
        // A cue that opens no bracket, or a bracket with no range, decides nothing.
        assert_eq!(classify("Normal (within normal limits)"), "normal");
        assert_eq!(classify("12,000/mm3 (normal)"), "unknown");
    }

    #[test]
    fn vitals_are_read_against_their_ranges() {
        let lexicon = lexicon();
        let bp = lexicon.vital("Vital Signs - Blood Pressure").unwrap();
        assert_eq!(lexicon.classify_vital(bp, "125/80 mmHg"), "normal");
        assert_eq!(lexicon.classify_vital(bp, "82/50 mmHg"), "abnormal");
        let temperature = lexicon.vital("Vital Signs - Temperature").unwrap();
        assert_eq!(lexicon.classify_vital(temperature, "36.6°C (97.9°F)"), "normal");
        assert_eq!(lexicon.classify_vital(temperature, "101.2°F"), "abnormal");
        assert_eq!(lexicon.classify_vital(temperature, "Normothermic"), "normal");
        let rate = lexicon.vital("Heart_Rate").unwrap();
        assert_eq!(lexicon.classify_vital(rate, "118 bpm"), "abnormal");
        assert!(lexicon.vital("Vital Signs - Weight").is_none());
    }

    #[test]
    fn a_reference_names_itself_whole_before_and_inside_its_parenthesis() {
        assert_eq!(
            own_names("Progressive multifocal leukoencephalopathy (PML)"),
            vec![
                "pml".to_string(),
                "progressive multifocal leukoencephalopathy".to_string(),
                "progressive multifocal leukoencephalopathy (pml)".to_string()
            ]
        );
        assert_eq!(own_names("Gout"), vec!["gout".to_string()]);
        assert!(own_names("Flu").is_empty());
    }

    fn test_fact(name: &str, value: &str, text: &str) -> Fact {
        fact(
            "test_result",
            name,
            value,
            Some(text.into()),
            "labs",
            text,
            0..text.len(),
        )
    }

    #[test]
    fn the_decisive_rules_apply_in_order_and_without_the_ontology() {
        let empty =
            Ontology::parse("version: 1\ndiagnoses: []\n", "version: 1\ntests: []\n", "empty").unwrap();
        let named = [
            test_fact("CBC", "abnormal", "Low"),
            test_fact("Biopsy", "abnormal", "Findings compatible with sarcoidosis"),
        ];
        let lexicon = lexicon();
        let (facts, rule) = decisive(&lexicon, &empty, &named, "Sarcoidosis");
        assert_eq!((rule, facts[0].value.as_str()), ("names_diagnosis", "Biopsy"));
        let sole = [
            test_fact("Complete Blood Count - Platelets", "abnormal", "Low"),
            test_fact("Skin Biopsy - Findings", "abnormal", "Epidermal necrosis"),
        ];
        let (facts, rule) = decisive(&lexicon, &empty, &sole, "Unheard-of syndrome");
        assert_eq!(
            (rule, facts[0].value.as_str()),
            ("sole_abnormal_study", "Skin Biopsy - Findings")
        );
        let two = [
            test_fact("Chest CT - Findings", "abnormal", "Mass"),
            test_fact("Skin Biopsy - Findings", "abnormal", "Epidermal necrosis"),
        ];
        let (facts, rule) = decisive(&lexicon, &empty, &two, "Unheard-of syndrome");
        assert_eq!(
            (rule, facts[0].value.as_str()),
            ("sole_abnormal_definitive_study", "Skin Biopsy - Findings")
        );
        let two_definitive = [
            test_fact("Chest CT - Findings", "abnormal", "Mass"),
            test_fact("Skin Biopsy - Findings", "abnormal", "Epidermal necrosis"),
            test_fact("Wound culture", "abnormal", "Grew S. aureus"),
        ];
        let (facts, rule) = decisive(&lexicon, &empty, &two_definitive, "Unheard-of syndrome");
        assert_eq!((rule, facts.len()), ("reference_not_in_ontology", 0));
        let routine = [test_fact(
            "Complete Blood Count - Platelets",
            "abnormal",
            "Slightly elevated",
        )];
        let (facts, _) = decisive(&lexicon, &empty, &routine, "Unheard-of syndrome");
        assert!(
            facts.is_empty(),
            "a routine panel is never decisive by elimination"
        );
    }

    #[test]
    fn a_confirming_result_decides_only_where_no_definitive_study_stands_besides_it() {
        let empty =
            Ontology::parse("version: 1\ndiagnoses: []\n", "version: 1\ntests: []\n", "empty").unwrap();
        let lexicon = lexicon();
        let with_biopsy = [
            test_fact("ESR", "abnormal", "96 mm/hr, typical of giant cell arteritis"),
            test_fact("Temporal artery biopsy", "abnormal", "Granulomas"),
        ];
        let (facts, rule) = decisive(&lexicon, &empty, &with_biopsy, "Giant cell arteritis");
        assert_eq!(
            (rule, facts[0].value.as_str()),
            ("sole_abnormal_definitive_study", "Temporal artery biopsy")
        );
        let two = [
            test_fact("ESR", "abnormal", "96 mm/hr, typical of giant cell arteritis"),
            test_fact("Temporal artery biopsy", "abnormal", "Granulomas"),
            test_fact("Blood culture", "abnormal", "Grew streptococci"),
        ];
        let (facts, rule) = decisive(&lexicon, &empty, &two, "Giant cell arteritis");
        assert_eq!((rule, facts.len()), ("several_definitive_studies", 0));
        // A definitive study that names the diagnosis decides over others.
        let named = [
            test_fact("Temporal artery biopsy", "abnormal", "Giant cell arteritis"),
            test_fact("Blood culture", "abnormal", "Grew streptococci"),
        ];
        let (facts, rule) = decisive(&lexicon, &empty, &named, "Giant cell arteritis");
        assert_eq!(
            (rule, facts[0].value.as_str()),
            ("names_diagnosis", "Temporal artery biopsy")
        );
    }

    #[test]
    fn a_label_several_results_share_is_never_decisive() {
        let empty =
            Ontology::parse("version: 1\ndiagnoses: []\n", "version: 1\ntests: []\n", "empty").unwrap();
        let lexicon = lexicon();
        let shared = [
            test_fact("Imaging studies", "abnormal", "Pleural effusion"),
            test_fact("Imaging studies", "abnormal", "Liver metastases"),
        ];
        let (facts, _) = decisive(&lexicon, &empty, &shared, "Unheard-of syndrome");
        assert!(facts.is_empty(), "{facts:?}");
        let named = [
            test_fact("Biopsy", "abnormal", "Sarcoidosis"),
            test_fact("Biopsy", "normal", "No sarcoidosis"),
            test_fact("Chest CT", "abnormal", "Hilar nodes"),
        ];
        let (facts, rule) = decisive(&lexicon, &empty, &named, "Sarcoidosis");
        assert_eq!(
            (rule, facts[0].value.as_str()),
            ("sole_abnormal_study", "Chest CT")
        );
    }

    #[test]
    fn numbers_read_thousands_and_ratios() {
        assert_eq!(numbers("125/80 mmHg"), vec![125.0, 80.0]);
        assert_eq!(numbers("12,000/mm3"), vec![12000.0, 3.0]);
        assert_eq!(numbers("36.6°C"), vec![36.6]);
    }

    #[test]
    fn reads_demographics_symptoms_and_results_with_exact_spans() {
        let lexicon = lexicon();
        let source = "Demographics: 35-year-old female\nSymptoms: Primary Symptom: Double vision\nSecondary Symptoms: Difficulty climbing stairs; Weakness in upper limbs\nPhysical examination: Vital Signs - Blood Pressure: 125/80 mmHg\nLabs: Blood Tests - Acetylcholine Receptor Antibodies: Present (elevated)\n";
        let mut sections = Vec::new();
        let mut offset = 0;
        for (name, line_count) in [
            ("demographics", 1),
            ("symptoms", 2),
            ("physical_examination", 1),
            ("labs", 1),
        ] {
            let start = offset;
            let mut end = start;
            for _ in 0..line_count {
                end += source[end..].find('\n').unwrap() + 1;
            }
            sections.push(Section {
                name: name.into(),
                text: source[start..end - 1].into(),
                span_start: Some(start as u64),
                span_end: Some(end as u64 - 1),
            });
            offset = end;
        }
        let facts = read(&lexicon, source, &sections);
        for fact in &facts {
            assert_eq!(
                &source[fact.span_start as usize..fact.span_end as usize],
                fact.span_text
            );
        }
        let find = |kind: &str, name: &str| {
            facts
                .iter()
                .find(|fact| fact.kind == kind && fact.name == name)
                .unwrap()
        };
        assert_eq!(find("demographic", "age").value, "35");
        assert_eq!(find("demographic", "sex").value, "female");
        assert_eq!(find("symptom", "double vision").span_text, "Double vision");
        assert_eq!(
            find("symptom", "weakness in upper limbs").span_text,
            "Weakness in upper limbs"
        );
        assert_eq!(find("vital", "blood_pressure").value, "normal");
        let test = find("test_result", "Blood Tests - Acetylcholine Receptor Antibodies");
        assert_eq!(
            (test.value.as_str(), test.span_text.as_str()),
            ("abnormal", "Present (elevated)")
        );
    }
}
