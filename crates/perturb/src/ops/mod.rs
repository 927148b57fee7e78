//! The edit operations. Each turns a chart into a [`Outcome`] (text edits
//! and fact changes) or says why the case cannot be edited safely.

pub(crate) mod biomarker;
pub(crate) mod control;
pub(crate) mod finding;
pub(crate) mod progression;
pub(crate) mod stage;
pub(crate) mod surgery;

use std::ops::Range;
use std::sync::OnceLock;

use cfeval_schema::{CaseRow, Fact};
use regex::Regex;

use crate::text::{self, Plan};

/// A case prepared for editing.
pub(crate) struct Chart<'a> {
    pub case: &'a CaseRow,
    pub text: &'a str,
    pub sentences: Vec<Range<usize>>,
    pub pronoun: Pronoun,
}

/// The pronouns a chart uses for its patient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pronoun {
    She,
    He,
    Neutral,
}

impl Pronoun {
    pub fn subject(self) -> &'static str {
        match self {
            Pronoun::She => "she",
            Pronoun::He => "he",
            Pronoun::Neutral => "the patient",
        }
    }

    pub fn possessive(self) -> &'static str {
        match self {
            Pronoun::She => "her",
            Pronoun::He => "his",
            Pronoun::Neutral => "the patient's",
        }
    }

    /// Verb agreement for "is/has" after the subject.
    pub fn fill(self, template: &str) -> String {
        template
            .replace("{She}", &text::capitalize(self.subject()))
            .replace("{she}", self.subject())
            .replace("{Her}", &text::capitalize(self.possessive()))
            .replace("{her}", self.possessive())
    }
}

impl<'a> Chart<'a> {
    pub fn new(case: &'a CaseRow) -> Self {
        let text = case.source_text.as_str();
        Chart {
            case,
            text,
            sentences: text::sentences(text),
            pronoun: pronoun(text),
        }
    }

    /// Facts whose span is valid in the source text, with their index.
    pub fn facts(&self) -> impl Iterator<Item = (usize, &'a Fact)> + '_ {
        self.case.facts.iter().enumerate()
    }

    pub fn span(fact: &Fact) -> Range<usize> {
        fact.span_start as usize..fact.span_end as usize
    }

    /// The sentence containing byte `offset`.
    pub fn sentence_at(&self, offset: usize) -> Option<Range<usize>> {
        self.sentences
            .iter()
            .find(|sentence| sentence.start <= offset && offset < sentence.end.max(sentence.start + 1))
            .cloned()
    }

    /// Facts (other than those `allowed` accepts) whose span meets `range`.
    pub fn other_facts_in(&self, range: &Range<usize>, allowed: impl Fn(&Fact) -> bool) -> Option<&'a Fact> {
        self.case.facts.iter().find(|fact| {
            let span = Self::span(fact);
            span.start < range.end && range.start < span.end && !allowed(fact)
        })
    }

    /// The cancer type (the case's column, else a `cancer_type` fact).
    pub fn cancer_type(&self) -> Option<String> {
        self.case.cancer_type.clone().or_else(|| {
            self.case
                .facts
                .iter()
                .find(|fact| fact.kind == "cancer_type")
                .map(|fact| fact.value.to_ascii_lowercase())
        })
    }

    /// The AJCC stage-group table of the chart's cancer type, when there is one.
    pub fn staging_table(&self) -> Option<&'static cfeval_guidelines::staging::CancerTable> {
        let staging = cfeval_guidelines::Staging::builtin().ok()?;
        staging.table(&self.cancer_type()?)
    }

    /// A short quote of the text around `range`, for reasons.
    pub fn quote(&self, range: &Range<usize>) -> String {
        quote(self.text, range)
    }
}

pub(crate) fn quote(text: &str, range: &Range<usize>) -> String {
    let mut start = range.start.saturating_sub(20);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let mut end = (range.end + 20).min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    format!("\"{}\"", text[start..end].replace('\n', " "))
}

fn pronoun(text: &str) -> Pronoun {
    static SHE: OnceLock<Regex> = OnceLock::new();
    static HE: OnceLock<Regex> = OnceLock::new();
    let she = SHE
        .get_or_init(|| {
            Regex::new(r"(?i)\b(?:she|her|hers|woman|female|Mrs|Ms)\b").unwrap_or_else(|_| unreachable())
        })
        .find_iter(text)
        .count();
    let he = HE
        .get_or_init(|| Regex::new(r"(?i)\b(?:he|him|his|man|male|Mr)\b").unwrap_or_else(|_| unreachable()))
        .find_iter(text)
        .count();
    match she.cmp(&he) {
        std::cmp::Ordering::Greater => Pronoun::She,
        std::cmp::Ordering::Less => Pronoun::He,
        std::cmp::Ordering::Equal => Pronoun::Neutral,
    }
}

/// Compiles a fixed pattern. The patterns are literals of this crate and
/// covered by its tests, so a failure is a bug here, not bad input.
pub(crate) fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| match Regex::new(pattern) {
        Ok(regex) => regex,
        Err(error) => panic!("invalid built-in pattern {pattern}: {error}"),
    })
}

fn unreachable() -> Regex {
    panic!("invalid built-in pronoun pattern")
}

/// Where a changed or added fact's span lies in the new text: inside the
/// replacement of the edit at `edit` (an old-text range), at `within`.
#[derive(Debug, Clone)]
pub(crate) struct Anchor {
    pub edit: Range<usize>,
    pub within: Range<usize>,
}

/// One change to the facts list.
#[derive(Debug, Clone)]
pub(crate) enum FactChange {
    Set {
        index: usize,
        value: String,
        detail: Option<String>,
        anchor: Option<Anchor>,
        /// A new polarity (`None`: unchanged).
        polarity: Option<String>,
        /// A new name (`None`: unchanged).
        name: Option<String>,
    },
    Remove {
        index: usize,
    },
}

/// What an edit operation does to one chart.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub plan: Plan,
    pub changes: Vec<FactChange>,
    /// A new order of the sections (indices into the case's sections).
    pub reorder: Option<Vec<usize>>,
    /// Values the expected direction's placeholders take.
    pub regimen: Option<String>,
    pub procedure: Option<String>,
    /// 1-based line number of the line that progressed.
    pub progressed_line: Option<usize>,
    /// The test whose result was flipped or removed (the `{test}` of the
    /// expected text, and an expected `order_test: decisive`).
    pub order_test: Option<String>,
}

/// Why a case cannot take an edit.
pub(crate) type NotApplicable = String;

/// Appends a fact change that sets `index` to `value`, anchored on `anchor`.
pub(crate) fn set(
    outcome: &mut Outcome,
    index: usize,
    value: &str,
    detail: Option<String>,
    anchor: Option<Anchor>,
) {
    outcome.changes.push(FactChange::Set {
        index,
        value: value.to_string(),
        detail,
        anchor,
        polarity: None,
        name: None,
    });
}

/// The polarity a value is written with under the "a negative finding is a
/// negated fact" convention (`negative`, `false`).
fn conventional_polarity(value: &str) -> &'static str {
    if matches!(value, "negative" | "false" | "absent") {
        "negated"
    } else {
        "affirmed"
    }
}

/// Sets a fact to `value`, moving its polarity along when the fact follows
/// the negated-negative convention (and leaving it alone otherwise).
pub(crate) fn set_status(
    outcome: &mut Outcome,
    fact: &Fact,
    index: usize,
    value: &str,
    detail: Option<String>,
    anchor: Option<Anchor>,
) {
    let polarity = (fact.polarity == conventional_polarity(&fact.value))
        .then(|| conventional_polarity(value).to_string());
    outcome.changes.push(FactChange::Set {
        index,
        value: value.to_string(),
        detail,
        anchor,
        polarity,
        name: None,
    });
}

/// Case-insensitive containment of any needle.
pub(crate) fn mentions_any(text: &str, needles: &[&str]) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    needles
        .iter()
        .filter_map(|needle| lower.find(&needle.to_ascii_lowercase()))
        .min()
}
