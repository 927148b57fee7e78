//! Family B: progression on a line of therapy injected. The line's outcome
//! becomes progression in the sentence that states it, and every sentence
//! that reports a response to it is rewritten or removed.

use std::sync::OnceLock;

use cfeval_schema::Fact;
use regex::Regex;

use super::{Chart, NotApplicable, Outcome, re};
use crate::catalog::ProgressionTarget;
use crate::text;

fn response_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"(?xi)\b(?:(?P<verb>achieved|attained|had|showed|shows|demonstrated|demonstrates|with)\s+)?
        (?:(?:a\s+)?(?:partial|complete|good|excellent|major|near-complete|radiographic|clinical|durable|ongoing|sustained)\s+(?:radiographic\s+|clinical\s+)?response
          |stable\s+disease|disease\s+control|no\s+evidence\s+of\s+(?:disease\s+)?progression|without\s+(?:evidence\s+of\s+)?progression
          |responding|interval\s+(?:decrease|improvement|regression)|decreased\s+in\s+size|(?:partial|complete)\s+remission)\b",
    )
}

/// Marks the chosen line as progressed.
pub(crate) fn inject(
    chart: &Chart<'_>,
    on: ProgressionTarget,
    inhibitors: &[String],
) -> Result<Outcome, NotApplicable> {
    let lines: Vec<(usize, &Fact)> = chart
        .facts()
        .filter(|(_, fact)| fact.kind == "prior_line")
        .collect();
    let candidate = lines.iter().rev().find(|(_, fact)| {
        matches!(fact.value.as_str(), "response" | "ongoing")
            && match on {
                ProgressionTarget::CurrentLine => true,
                ProgressionTarget::Immunotherapy => {
                    let name = fact.name.to_ascii_lowercase();
                    inhibitors
                        .iter()
                        .any(|drug| name.contains(&drug.to_ascii_lowercase()))
                }
            }
    });
    let Some(&(index, fact)) = candidate else {
        return Err(
            "no line of therapy with an ongoing response or ongoing treatment to mark as progressed".into(),
        );
    };
    if lines
        .iter()
        .any(|(other, line)| *other != index && line.name.eq_ignore_ascii_case(&fact.name))
    {
        return Err(format!("the regimen `{}` is recorded more than once", fact.name));
    }
    let span = Chart::span(fact);
    let sentence = chart
        .sentence_at(span.start)
        .ok_or_else(|| format!("the line's span {} is in no sentence", chart.quote(&span)))?;
    let mut outcome = Outcome {
        regimen: Some(fact.name.clone()),
        progressed_line: Some(
            lines
                .iter()
                .position(|(other, _)| *other == index)
                .map_or(1, |at| at + 1),
        ),
        ..Outcome::default()
    };
    let slice = &chart.text[sentence.clone()];
    let mut rewrote = false;
    for captures in response_regex().captures_iter(slice) {
        let Some(whole) = captures.get(0) else { continue };
        let range = sentence.start + whole.start()..sentence.start + whole.end();
        let replacement = match captures
            .name("verb")
            .map(|verb| verb.as_str().to_ascii_lowercase())
        {
            Some(verb)
                if matches!(
                    verb.as_str(),
                    "with" | "showed" | "shows" | "demonstrated" | "demonstrates"
                ) =>
            {
                format!("{verb} radiographic disease progression")
            }
            Some(_) => "developed radiographic disease progression".to_string(),
            None if whole.as_str().eq_ignore_ascii_case("responding") => "progressing".to_string(),
            None if whole.as_str().to_ascii_lowercase().starts_with("stable") => {
                "progressive disease".to_string()
            }
            None => "radiographic disease progression".to_string(),
        };
        let replacement = if whole.as_str().starts_with(|c: char| c.is_ascii_uppercase()) {
            text::capitalize(&replacement)
        } else {
            replacement
        };
        outcome.plan.push(range, replacement)?;
        rewrote = true;
    }
    if !rewrote {
        let end = sentence.end;
        let last = slice.chars().last().unwrap_or(' ');
        let insert_at = if matches!(last, '.' | '!' | '?' | ';') {
            end - 1
        } else {
            end
        };
        outcome.plan.push(
            insert_at..insert_at,
            ", with radiographic disease progression on the most recent restaging scan",
        )?;
    }
    // Any other report of response now contradicts the chart.
    for other in &chart.sentences {
        if *other == sentence || !response_regex().is_match(&chart.text[other.clone()]) {
            continue;
        }
        if let Some(carried) = chart.other_facts_in(other, |_| false) {
            return Err(format!(
                "{} reports a response and also states {} {}",
                chart.quote(other),
                carried.kind,
                carried.name
            ));
        }
        outcome.plan.push(text::deletion_range(chart.text, other), "")?;
    }
    super::set(&mut outcome, index, "progression", fact.detail.clone(), None);
    Ok(outcome)
}

/// Whether text reports a response (for unanchored sections).
pub(crate) fn touches(text: &str) -> bool {
    response_regex().is_match(text)
}
