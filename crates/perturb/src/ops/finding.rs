//! Task-neutral edits of a structured case's findings, for packs whose facts
//! carry the span of a result's value (the diagnosis pack): flip the
//! decisive result to normal, remove its line, set findings to new values
//! (a red flag), swap the patient's sex. What they change is named by fact
//! kind and name, and the decisive item by the case's reference facts
//! (kind `decisive`), so a new pack needs no new code.

use cfeval_schema::Fact;
use regex::Regex;

use super::{Anchor, Chart, FactChange, NotApplicable, Outcome};
use crate::catalog::{FindingValue, Replacement};
use crate::text;

/// The chart fact the case's reference marks decisive of kind `target`,
/// with its index.
fn decisive<'a>(chart: &Chart<'a>, target: &str) -> Result<(usize, &'a Fact), NotApplicable> {
    let marked = chart
        .case
        .reference
        .facts
        .iter()
        .find(|fact| fact.kind == "decisive" && fact.name == target)
        .ok_or_else(|| format!("the case has no decisive {target} (no reference fact marks one)"))?;
    chart
        .facts()
        .find(|(_, fact)| {
            fact.kind == target && fact.span_start == marked.span_start && fact.span_end == marked.span_end
        })
        .ok_or_else(|| {
            format!(
                "the decisive {target} `{}` is not among the chart's facts",
                marked.value
            )
        })
}

/// Makes the decisive result normal.
pub(crate) fn flip_result(
    chart: &Chart<'_>,
    target: &str,
    replacements: &[Replacement],
    default: &str,
) -> Result<Outcome, NotApplicable> {
    let (index, fact) = decisive(chart, target)?;
    if fact.value == "normal" {
        return Err(format!("the decisive {target} `{}` is already normal", fact.name));
    }
    let written = fact.span_text.to_lowercase();
    let text = replacements
        .iter()
        .find(|replacement| {
            replacement
                .cue
                .iter()
                .any(|cue| has_word(&written, &cue.to_lowercase()))
        })
        .map_or(default, |replacement| replacement.text.as_str());
    let span = Chart::span(fact);
    let mut outcome = Outcome::default();
    outcome.plan.push(span.clone(), text)?;
    outcome.changes.push(FactChange::Set {
        index,
        value: "normal".into(),
        detail: Some(text.to_string()),
        anchor: Some(Anchor {
            edit: span,
            within: 0..text.len(),
        }),
        polarity: None,
        name: None,
    });
    outcome.order_test = Some(cfeval_diagnosis::control::readable_test(&fact.name));
    Ok(outcome)
}

/// Deletes the decisive result's line (on a section's first line, what
/// follows the section's label; a section left empty says `none recorded`).
pub(crate) fn remove_result(chart: &Chart<'_>, target: &str) -> Result<Outcome, NotApplicable> {
    let (index, fact) = decisive(chart, target)?;
    let span = Chart::span(fact);
    let source = chart.text;
    let line_start = source[..span.start].rfind('\n').map_or(0, |at| at + 1);
    let line_end = source[span.end..]
        .find('\n')
        .map_or(source.len(), |at| span.end + at);
    let section = chart
        .case
        .sections
        .iter()
        .find(|section| {
            section
                .span_start
                .zip(section.span_end)
                .is_some_and(|(start, end)| start as usize <= span.start && span.end <= end as usize)
        })
        .ok_or_else(|| format!("the decisive {target} lies in no anchored section"))?;
    let (section_start, section_end) = (
        section.span_start.unwrap_or_default() as usize,
        section.span_end.unwrap_or_default() as usize,
    );
    // The removed range: the line and its newline, or on the section's first
    // line the part after `Label: `.
    let content_start = if line_start == section_start {
        source[line_start..span.start]
            .find(": ")
            .map_or(line_start, |at| line_start + at + 2)
    } else {
        line_start
    };
    let only_line = line_start == section_start && line_end >= section_end;
    if let Some(other) = chart.other_facts_in(&(content_start..line_end), |other| std::ptr::eq(other, fact)) {
        return Err(format!(
            "the line of the decisive {target} also holds {} `{}`",
            other.kind, other.name
        ));
    }
    let mut outcome = Outcome::default();
    if only_line {
        outcome.plan.push(content_start..line_end, "none recorded")?;
    } else if line_start == section_start {
        // The next line moves up behind the label.
        outcome
            .plan
            .push(content_start..(line_end + 1).min(source.len()), "")?;
    } else {
        outcome.plan.push(line_start - 1..line_end, "")?;
    }
    outcome.changes.push(FactChange::Remove { index });
    outcome.order_test = Some(cfeval_diagnosis::control::readable_test(&fact.name));
    Ok(outcome)
}

/// Sets each named finding to its new text and value.
pub(crate) fn set_findings(chart: &Chart<'_>, values: &[FindingValue]) -> Result<Outcome, NotApplicable> {
    let mut outcome = Outcome::default();
    for finding in values {
        let named = |fact: &Fact| fact.kind == finding.kind && fact.name.eq_ignore_ascii_case(&finding.name);
        // A finding stated twice (a vital sign, and an examination line with
        // the same label): the statement not already at the new value.
        let (index, fact) = chart
            .facts()
            .find(|(_, fact)| named(fact) && fact.value != finding.value)
            .or_else(|| chart.facts().find(|(_, fact)| named(fact)))
            .ok_or_else(|| format!("the chart states no {} `{}`", finding.kind, finding.name))?;
        if fact.value == finding.value {
            return Err(format!(
                "the {} `{}` is already {} ({:?})",
                finding.kind, finding.name, finding.value, fact.span_text
            ));
        }
        let span = Chart::span(fact);
        outcome.plan.push(span.clone(), finding.text.clone())?;
        outcome.changes.push(FactChange::Set {
            index,
            value: finding.value.clone(),
            detail: Some(finding.text.clone()),
            anchor: Some(Anchor {
                edit: span,
                within: 0..finding.text.len(),
            }),
            polarity: None,
            name: None,
        });
    }
    Ok(outcome)
}

/// Swaps the patient's sex: every word of each pair for its counterpart
/// (whole words, the case kept); `her` becomes `him` when the next word is
/// one of `object_before` or the clause ends there, else `his`.
pub(crate) fn swap_sex(
    chart: &Chart<'_>,
    pairs: &[(String, String)],
    object_before: &[String],
) -> Result<Outcome, NotApplicable> {
    let sex = chart
        .facts()
        .find(|(_, fact)| fact.kind == "demographic" && fact.name == "sex")
        .ok_or_else(|| "the chart states no sex".to_string())?;
    let (sex_index, sex_fact) = sex;
    let to = match sex_fact.value.as_str() {
        "female" => "male",
        "male" => "female",
        other => return Err(format!("the chart's sex `{other}` cannot be swapped")),
    };
    let mut words: Vec<&str> = pairs
        .iter()
        .flat_map(|(left, right)| [left.as_str(), right.as_str()])
        .collect();
    words.push("her");
    words.sort_by_key(|word| std::cmp::Reverse(word.len()));
    let alternatives: Vec<String> = words.iter().map(|word| regex::escape(word)).collect();
    let pattern = Regex::new(&format!(r"(?i)\b(?:{})\b", alternatives.join("|")))
        .map_err(|error| format!("the sex-swap words do not compile: {error}"))?;
    let mut outcome = Outcome::default();
    let sex_span = Chart::span(sex_fact);
    let mut sex_anchor = None;
    for found in pattern.find_iter(chart.text) {
        let word = found.as_str();
        let lower = word.to_lowercase();
        let counterpart = if lower == "her" {
            let rest = chart.text[found.end()..].trim_start_matches([' ', '\t']);
            let next: String = rest
                .chars()
                .take_while(|c| c.is_alphabetic())
                .collect::<String>()
                .to_lowercase();
            let object = next.is_empty() || object_before.iter().any(|word| word.eq_ignore_ascii_case(&next));
            if object { "him" } else { "his" }.to_string()
        } else if let Some(other) = pairs.iter().find_map(|(left, right)| {
            if left.eq_ignore_ascii_case(word) {
                Some(right.clone())
            } else if right.eq_ignore_ascii_case(word) {
                Some(left.clone())
            } else {
                None
            }
        }) {
            other
        } else {
            continue;
        };
        let replacement = match_case(word, &counterpart);
        if found.range() == sex_span {
            sex_anchor = Some(Anchor {
                edit: found.range(),
                within: 0..replacement.len(),
            });
        }
        outcome.plan.push(found.range(), replacement)?;
    }
    if outcome.plan.is_empty() {
        return Err("no word of the chart names the patient's sex".into());
    }
    outcome.changes.push(FactChange::Set {
        index: sex_index,
        value: to.into(),
        detail: None,
        anchor: sex_anchor,
        polarity: None,
        name: None,
    });
    Ok(outcome)
}

/// `replacement` written in the case of `original` (`She` → `He`, `MAN` →
/// `WOMAN`).
fn match_case(original: &str, replacement: &str) -> String {
    if original.len() > 1 && original.chars().all(|c| !c.is_alphabetic() || c.is_uppercase()) {
        replacement.to_uppercase()
    } else if original.starts_with(|c: char| c.is_uppercase()) {
        text::capitalize(replacement)
    } else {
        replacement.to_lowercase()
    }
}

/// Whole-word containment (both lowercase).
fn has_word(haystack: &str, word: &str) -> bool {
    haystack.match_indices(word).any(|(at, _)| {
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + word.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_follows_the_original() {
        assert_eq!(match_case("She", "he"), "He");
        assert_eq!(match_case("she", "he"), "he");
        assert_eq!(match_case("MALE", "female"), "FEMALE");
    }

    #[test]
    fn words_match_whole() {
        assert!(has_word("present (elevated)", "present"));
        assert!(!has_word("presentation", "present"));
    }
}
