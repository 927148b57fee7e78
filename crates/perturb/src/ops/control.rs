//! Family N, the negative controls: paraphrase (no fact changed) and an
//! irrelevant salient sentence added.

use regex::Regex;

use super::{Chart, NotApplicable, Outcome};
use crate::text;

/// Compiled paraphrase pairs: each side as a whole-phrase, case-insensitive
/// pattern.
#[derive(Debug, Clone)]
pub(crate) struct Paraphraser {
    pattern: Regex,
    pairs: Vec<(String, String)>,
}

impl Paraphraser {
    pub fn new(pairs: &[(String, String)]) -> Option<Paraphraser> {
        let mut alternatives = Vec::new();
        for (left, right) in pairs {
            alternatives.push(format!("(?:{})", regex::escape(left)));
            alternatives.push(format!("(?:{})", regex::escape(right)));
        }
        let pattern = Regex::new(&format!(r"(?i)(?:^|\b)(?:{})(?:\b|$)", alternatives.join("|"))).ok()?;
        Some(Paraphraser {
            pattern,
            pairs: pairs.to_vec(),
        })
    }

    /// Whether any phrase of the list occurs in `text`.
    pub fn touches(&self, text: &str) -> bool {
        self.pattern.is_match(text)
    }

    fn counterpart(&self, found: &str) -> Option<&str> {
        self.pairs.iter().find_map(|(left, right)| {
            if found.eq_ignore_ascii_case(left) {
                Some(right.as_str())
            } else if found.eq_ignore_ascii_case(right) {
                Some(left.as_str())
            } else {
                None
            }
        })
    }
}

/// Rewords phrases outside every fact's span and rotates the middle sections.
pub(crate) fn paraphrase(
    chart: &Chart<'_>,
    paraphraser: &Paraphraser,
    reorder: bool,
) -> Result<Outcome, NotApplicable> {
    let mut outcome = Outcome::default();
    let spans: Vec<_> = chart.case.facts.iter().map(Chart::span).collect();
    for found in paraphraser.pattern.find_iter(chart.text) {
        let range = found.range();
        if spans
            .iter()
            .any(|span| span.start < range.end && range.start < span.end)
        {
            continue;
        }
        // Never across a section boundary or inside a header.
        let Some(counterpart) = paraphraser.counterpart(found.as_str()) else {
            continue;
        };
        let original = found.as_str();
        let before = chart.text[..found.start()].trim_end_matches([' ', '\t']);
        let sentence_start = before.is_empty() || before.ends_with(['.', ':', '\n', '?', '!']);
        let replacement = if sentence_start && original.starts_with(|c: char| c.is_ascii_uppercase()) {
            text::capitalize(counterpart)
        } else {
            counterpart.to_string()
        };
        outcome.plan.push(range, replacement)?;
    }
    let sections = chart.case.sections.len();
    if reorder && sections >= 4 {
        let mut order: Vec<usize> = (0..sections).collect();
        let moved = order.remove(1);
        order.insert(sections - 2, moved);
        outcome.reorder = Some(order);
    }
    if outcome.plan.is_empty() && outcome.reorder.is_none() {
        return Err(
            "no phrase of the paraphrase list occurs outside a fact, and too few sections to reorder".into(),
        );
    }
    Ok(outcome)
}

/// Appends one irrelevant sentence to the first of `preferred` the chart has.
pub(crate) fn add_sentence(
    chart: &Chart<'_>,
    sentences: &[String],
    preferred: &[String],
) -> Result<Outcome, NotApplicable> {
    if sentences.is_empty() {
        return Err("no sentences to add".into());
    }
    let pick = chart.case.case_id.bytes().fold(0usize, |hash, byte| {
        hash.wrapping_mul(31).wrapping_add(byte as usize)
    }) % sentences.len();
    let sentence = chart.pronoun.fill(&sentences[pick]);
    let sentence = text::capitalize(&sentence);
    let anchored = |name: &str| {
        chart.case.sections.iter().find(|section| {
            section.name == name
                && section.span_start.is_some()
                && section.span_end.is_some_and(|end| end > 0)
        })
    };
    let target = preferred
        .iter()
        .find_map(|name| anchored(name))
        .or_else(|| {
            chart
                .case
                .sections
                .iter()
                .rev()
                .find(|section| section.name != "question" && section.span_end.is_some_and(|end| end > 0))
        })
        .ok_or_else(|| "no section anchored in the source text to add a sentence to".to_string())?;
    let end = target.span_end.unwrap_or(0) as usize;
    if end == 0 || end > chart.text.len() || !chart.text.is_char_boundary(end) {
        return Err(format!("section `{}` has an invalid span", target.name));
    }
    // Replace the section's last character with itself plus the sentence, so
    // that the section's span grows to include it.
    let last = chart.text[..end].chars().next_back().unwrap_or(' ');
    let start = end - last.len_utf8();
    let joiner = if matches!(last, '.' | '!' | '?') {
        " "
    } else {
        ". "
    };
    let mut outcome = Outcome::default();
    outcome
        .plan
        .push(start..end, format!("{last}{joiner}{sentence}"))?;
    Ok(outcome)
}
