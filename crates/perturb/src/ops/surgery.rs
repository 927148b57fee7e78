//! Family D: surgery status toggled (resected ⇄ unresected).
//!
//! The paper's universal blind spot, so the edit is thorough: the sentence
//! that states the operation is replaced; every other sentence that only
//! makes sense after (or before) an operation is deleted or stripped of the
//! clause that does (margins, `R0`, node yields, `postoperative`, operative
//! notes; `unresectable`, `not a surgical candidate`, `encasement`, planned
//! surgery); pathologic TNM (`pT3N1`) becomes clinical (`cT3N1`); and the
//! adjuvant / neoadjuvant framing follows the new status. Sentences in the
//! past medical history (`s/p appendectomy`) are left alone.

use std::ops::Range;
use std::sync::OnceLock;

use cfeval_schema::Fact;
use regex::Regex;

use cfeval_guidelines::staging::{Basis, CancerTable};

use super::{Anchor, Chart, NotApplicable, Outcome, re, stage};
use crate::catalog::SurgeryTarget;
use crate::text;

const UNRELATED_SECTIONS: &[&str] = &[
    "comorbidities",
    "social",
    "past_medical_history",
    "family_history",
    "medications",
];

fn resection_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"(?xi)
        \b(?:resect(?:ed|ion|ions)|(?:hemi)?colectomy|sigmoidectomy|proctectomy|low\ anterior|abdominoperineal|
        mastectomy|lumpectomy|breast[-\ ]conserving|quadrantectomy|lobectomy|pneumonectomy|segmentectomy|
        bilobectomy|gastrectomy|esophagectomy|oesophagectomy|pancreaticoduodenectomy|pancreatectomy|whipple|
        wide\ local\ excision|excised|excision|hepatectomy|metastasectomy|nephrectomy|cystectomy|prostatectomy|
        debulking|cytoreduct(?:ive|ion)|lymphadenectomy|dissection|margins?|R0|R1|R2|post-?op(?:erative(?:ly)?)?|
        operative|(?:surgical|resection|operative)\ (?:specimen|pathology)|sentinel|operated|s/p|status\ post|
        underwent\ (?:a\ |an\ )?(?:[a-z-]+\ ){0,3}(?:surgery|resection|operation|procedure)|surgery|surgically|
        lymph\ nodes?\ (?:were\ )?(?:examined|retrieved|harvested|removed|sampled)|\d+\s*/\s*\d+\s+(?:lymph\ )?nodes?)\b",
    )
}

fn unresectable_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"(?xi)
        \b(?:unresectable|not\ resectable|non-?resectable|inoperable|borderline\ resectable|resectab(?:le|ility)|
        not\ (?:a\ )?(?:surgical\ )?candidate|not\ amenable\ to\ (?:surgical\ )?resection|
        encase(?:s|d|ment)?|abut(?:s|ment|ting)?|
        (?:declined|deferred)\ surgery|surgery\ (?:was\ |is\ )?(?:deferred|declined|not\ (?:performed|pursued|offered|possible))|
        no\ (?:prior\ )?(?:surgery|resection)|has\ not\ (?:undergone|had)|not\ (?:been\ )?(?:resected|operated)|
        (?:planned|scheduled|referred|pending|awaiting)\ (?:for\ )?(?:surgery|resection|surgical)|
        surgical\ (?:consultation|evaluation|referral|review)|candidate\ for\ (?:surgery|resection))\b",
    )
}

fn adjuvant_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(&CELL, r"(?i)\b(?:post-?operative\s+)?adjuvant\s+")
}

fn pathologic_tnm_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"\b(?P<y>y?)(?P<p>p)(?P<rest>T(?:is|[0-4x])[a-d]?\s?N[0-3x])|(?i:\b(?P<word>pathologic(?:al)?)\s+stag)",
    )
}

fn is_surgery_fact(fact: &Fact) -> bool {
    fact.kind == "surgery"
}

fn section_of<'a>(chart: &'a Chart<'_>, offset: usize) -> Option<&'a str> {
    chart
        .case
        .sections
        .iter()
        .find_map(|section| match (section.span_start, section.span_end) {
            (Some(start), Some(end)) if (start as usize) <= offset && offset < end as usize => {
                Some(section.name.as_str())
            }
            _ => None,
        })
}

fn unrelated(chart: &Chart<'_>, offset: usize) -> bool {
    section_of(chart, offset).is_some_and(|name| UNRELATED_SECTIONS.contains(&name))
}

/// The procedure's name for the rewritten sentence, and the fact name it
/// gives: the procedure the chart (or the per-cancer table) names, or
/// `surgery` for the generic default.
fn procedure_name(
    fact: Option<&Fact>,
    chart: &Chart<'_>,
    by_cancer: &std::collections::BTreeMap<String, String>,
    default: &str,
) -> (String, String) {
    static GENERIC: OnceLock<Regex> = OnceLock::new();
    let generic = re(
        &GENERIC,
        r"(?i)^(?:surgery|resection|surgical resection|operation|none|not done|unresected|resected|)$",
    );
    let named = fact
        .map(|fact| {
            fact.name
                .trim()
                .trim_start_matches("s/p ")
                .trim_start_matches("status post ")
                .trim()
                .to_string()
        })
        .filter(|name| !generic.is_match(name));
    if let Some(named) = named {
        let name = fact.map_or_else(|| named.clone(), |fact| fact.name.clone());
        return (named, name);
    }
    match chart.cancer_type().and_then(|kind| by_cancer.get(&kind).cloned()) {
        Some(procedure) => {
            let name = procedure.to_lowercase();
            (procedure, name)
        }
        None => (default.to_string(), "surgery".to_string()),
    }
}

/// Toggles the surgery status.
pub(crate) fn set_surgery(
    chart: &Chart<'_>,
    to: SurgeryTarget,
    by_cancer: &std::collections::BTreeMap<String, String>,
    default: &str,
) -> Result<Outcome, NotApplicable> {
    let (from_values, new_value): (&[&str], &str) = match to {
        SurgeryTarget::Unresected => (&["resected"], "unresected"),
        SurgeryTarget::Resected => (&["unresected", "not_done"], "resected"),
    };
    let targets: Vec<(usize, &Fact)> = chart
        .facts()
        .filter(|(_, fact)| is_surgery_fact(fact) && from_values.contains(&fact.value.as_str()))
        .collect();
    let Some((_, primary)) = targets.first() else {
        return Err(format!("no surgery fact with value {}", from_values.join(" or ")));
    };
    if let Some((_, other)) = chart
        .facts()
        .find(|(_, fact)| is_surgery_fact(fact) && !from_values.contains(&fact.value.as_str()))
    {
        return Err(format!(
            "the chart also states surgery `{}` as {}; the status is not one thing to toggle",
            other.name, other.value
        ));
    }
    let primary_span = Chart::span(primary);
    let primary_sentence = chart.sentence_at(primary_span.start).ok_or_else(|| {
        format!(
            "the surgery fact's span {} is in no sentence",
            chart.quote(&primary_span)
        )
    })?;
    if let Some(other) = chart.other_facts_in(&primary_sentence, is_surgery_fact) {
        return Err(format!(
            "the sentence stating the operation {} also states {} {}; it cannot be rewritten without losing it",
            chart.quote(&primary_sentence),
            other.kind,
            other.name
        ));
    }
    let (procedure, named) = procedure_name(Some(primary), chart, by_cancer, default);
    let replacement = match to {
        SurgeryTarget::Unresected => format!(
            "{} was not performed: the tumor was judged unresectable, and {} is not a surgical candidate.",
            text::capitalize(&procedure),
            chart.pronoun.subject()
        ),
        SurgeryTarget::Resected => format!(
            "{} underwent {} with negative margins (R0 resection).",
            text::capitalize(chart.pronoun.subject()),
            with_article(&procedure)
        ),
    };
    let mut outcome = Outcome {
        procedure: Some(procedure.clone()),
        ..Outcome::default()
    };
    let sentence_len = replacement.len();
    outcome.plan.push(primary_sentence.clone(), replacement)?;
    let detail = match to {
        SurgeryTarget::Resected => Some("R0".to_string()),
        SurgeryTarget::Unresected => None,
    };
    for (index, fact) in &targets {
        let span = Chart::span(fact);
        let sentence = chart.sentence_at(span.start).unwrap_or(primary_sentence.clone());
        if sentence != primary_sentence {
            // A second statement of the same operation: deleted below.
            if let Some(other) = chart.other_facts_in(&sentence, is_surgery_fact) {
                return Err(format!(
                    "the sentence {} restates the operation and also states {} {}",
                    chart.quote(&sentence),
                    other.kind,
                    other.name
                ));
            }
            outcome
                .plan
                .push(text::deletion_range(chart.text, &sentence), "")?;
            outcome.changes.push(super::FactChange::Remove { index: *index });
            continue;
        }
        outcome.changes.push(super::FactChange::Set {
            index: *index,
            value: new_value.to_string(),
            detail: detail.clone(),
            anchor: Some(Anchor {
                edit: primary_sentence.clone(),
                within: 0..sentence_len,
            }),
            polarity: Some("affirmed".to_string()),
            name: (fact.name != named).then(|| named.clone()),
        });
    }
    let marker = match to {
        SurgeryTarget::Unresected => resection_regex(),
        SurgeryTarget::Resected => unresectable_regex(),
    };
    for sentence in &chart.sentences {
        if *sentence == primary_sentence || outcome.plan.touches(sentence) || unrelated(chart, sentence.start)
        {
            continue;
        }
        let slice = &chart.text[sentence.clone()];
        if !marker.is_match(slice) {
            continue;
        }
        let in_question = section_of(chart, sentence.start) == Some("question");
        if !in_question
            && chart.other_facts_in(sentence, is_surgery_fact).is_none()
            && !is_prior_line_sentence(chart, sentence)
        {
            outcome
                .plan
                .push(text::deletion_range(chart.text, sentence), "")?;
            continue;
        }
        strip_clauses(chart, sentence, to, &mut outcome)?;
    }
    // Framing: adjuvant ⇄ neoadjuvant.
    match to {
        SurgeryTarget::Unresected => {
            for found in adjuvant_regex().find_iter(chart.text) {
                let range = found.range();
                if outcome.plan.touches(&range) {
                    continue;
                }
                if chart.text[..range.start].to_ascii_lowercase().ends_with("neo") {
                    continue;
                }
                if let Some(sentence) = chart.sentence_at(range.start)
                    && is_prior_line_sentence(chart, &sentence)
                {
                    return Err(format!(
                        "the treatment history {} records adjuvant therapy, which presupposes the resection",
                        chart.quote(&range)
                    ));
                }
                outcome.plan.push(range, "")?;
            }
        }
        SurgeryTarget::Resected => {
            static NEOADJUVANT: OnceLock<Regex> = OnceLock::new();
            for found in re(&NEOADJUVANT, r"(?i)\bneo-?adjuvant\b").find_iter(chart.text) {
                let range = found.range();
                if outcome.plan.touches(&range) {
                    continue;
                }
                if let Some(sentence) = chart.sentence_at(range.start)
                    && is_prior_line_sentence(chart, &sentence)
                {
                    // Neoadjuvant therapy received, then the operation: consistent.
                    continue;
                }
                let replacement = if found.as_str().starts_with('N') {
                    "Adjuvant"
                } else {
                    "adjuvant"
                };
                outcome.plan.push(range, replacement)?;
            }
        }
    }
    tnm_to_clinical(chart, to, &mut outcome)?;
    Ok(outcome)
}

fn with_article(procedure: &str) -> String {
    let lower = procedure.to_ascii_lowercase();
    if lower.starts_with("a ") || lower.starts_with("an ") || lower.starts_with("the ") {
        return procedure.to_string();
    }
    let article = if lower.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {procedure}")
}

fn is_prior_line_sentence(chart: &Chart<'_>, sentence: &Range<usize>) -> bool {
    chart
        .other_facts_in(sentence, |fact| fact.kind != "prior_line")
        .is_some()
}

/// Removes the clauses that presuppose the old status from a sentence that
/// also carries other facts; errors when one remains.
fn strip_clauses(
    chart: &Chart<'_>,
    sentence: &Range<usize>,
    to: SurgeryTarget,
    outcome: &mut Outcome,
) -> Result<(), NotApplicable> {
    static RESECTED_CLAUSES: OnceLock<Regex> = OnceLock::new();
    static UNRESECTED_CLAUSES: OnceLock<Regex> = OnceLock::new();
    let clauses = match to {
        SurgeryTarget::Unresected => re(
            &RESECTED_CLAUSES,
            r"(?xi)
            ,?\s*(?:with\s+)?(?:widely\s+)?(?:negative|clear|free|uninvolved|close|positive|involved)\s+(?:surgical\s+|resection\s+)?margins?(?:\s*\([^)]*\))?
            |,?\s*(?:surgical\s+|resection\s+)?margins?\s+(?:were\s+|are\s+|was\s+)?(?:widely\s+)?(?:negative|clear|free|uninvolved|close|positive|involved)(?:\s*\([^)]*\))?
            |,?\s*\(?R[012]\s+resection\)?|,?\s*\(R[012]\)
            |,?\s*\(?\d+\s*/\s*\d+\s+(?:lymph\s+)?nodes?(?:\s+(?:were\s+)?(?:positive|involved|negative))?\)?
            |\bon\s+the\s+(?:surgical\s+|resection\s+)?specimen\b
            |\s*(?:after|following|post-?)\s*(?:surgical\s+)?(?:resection|surgery)\b",
        ),
        SurgeryTarget::Resected => re(
            &UNRESECTED_CLAUSES,
            r"(?xi)\b(?:borderline\s+)?(?:unresectable|resectable|inoperable|non-?resectable)\s+",
        ),
    };
    let slice = &chart.text[sentence.clone()];
    let mut removed: Vec<Range<usize>> = Vec::new();
    for found in clauses.find_iter(slice) {
        let range = sentence.start + found.start()..sentence.start + found.end();
        if let Some(fact) = chart.case.facts.iter().find(|fact| {
            let span = Chart::span(fact);
            span.start < range.end
                && range.start < span.end
                && !is_surgery_fact(fact)
                && !(span.start <= range.start && range.end <= span.end)
        }) {
            return Err(format!(
                "{} overlaps the span of {} {}",
                chart.quote(&range),
                fact.kind,
                fact.name
            ));
        }
        outcome.plan.push(range.clone(), "")?;
        removed.push(range);
    }
    // What is left of the sentence must no longer presuppose the old status.
    let mut left = String::new();
    let mut last = sentence.start;
    for range in &removed {
        left.push_str(&chart.text[last..range.start]);
        last = range.end;
    }
    left.push_str(&chart.text[last..sentence.end]);
    let marker = match to {
        SurgeryTarget::Unresected => resection_regex(),
        SurgeryTarget::Resected => unresectable_regex(),
    };
    let without_tnm = pathologic_tnm_regex().replace_all(&left, "");
    if let Some(found) = marker.find(&without_tnm) {
        return Err(format!(
            "the sentence {} still says `{}` and carries other facts; it cannot be rewritten safely",
            chart.quote(sentence),
            found.as_str()
        ));
    }
    Ok(())
}

/// Pathologic TNM (`pT3N1M0`) and "pathologic stage" describe a resection
/// specimen: without a resection they become clinical.
fn tnm_to_clinical(chart: &Chart<'_>, to: SurgeryTarget, outcome: &mut Outcome) -> Result<(), NotApplicable> {
    if to != SurgeryTarget::Unresected {
        return Ok(());
    }
    for captures in pathologic_tnm_regex().captures_iter(chart.text) {
        if let Some(word) = captures.name("word") {
            let range = word.range();
            if !outcome.plan.touches(&range) {
                let replacement = if word.as_str().starts_with('P') {
                    "Clinical"
                } else {
                    "clinical"
                };
                outcome.plan.push(range, replacement)?;
            }
            continue;
        }
        let (Some(y), Some(p)) = (captures.name("y"), captures.name("p")) else {
            continue;
        };
        if !y.as_str().is_empty() {
            return Err(format!(
                "post-neoadjuvant pathologic staging {} presupposes the resection",
                chart.quote(&y.range())
            ));
        }
        let range = p.range();
        if outcome.plan.touches(&range) {
            continue;
        }
        if let Some(rest) = captures.name("rest") {
            clinical_fits_the_group(chart, rest.as_str())?;
        }
        outcome.plan.push(range.clone(), "c")?;
        for (index, fact) in chart.facts() {
            let span = Chart::span(fact);
            if fact.kind == "stage"
                && span.start <= range.start
                && range.end <= span.end
                && fact.value.starts_with('p')
            {
                let value = format!("c{}", &fact.value[1..]);
                super::set(outcome, index, &value, fact.detail.clone(), None);
            }
        }
    }
    Ok(())
}

/// A pathologic TNM made clinical (`T2N3` of `pT2N3M0`) must still give the
/// stated stage group under the cancer's clinical AJCC table (gastric
/// cancer's clinical and pathologic tables differ).
fn clinical_fits_the_group(chart: &Chart<'_>, rest: &str) -> Result<(), NotApplicable> {
    let digits: Vec<u8> = rest
        .chars()
        .filter_map(|character| character.to_digit(10))
        .map(|digit| digit as u8)
        .collect();
    let [t, n] = digits[..] else {
        return Ok(());
    };
    let Some(table) = chart.staging_table() else {
        return Ok(());
    };
    let groups = table.groups(Basis::Clinical, t, n, 0);
    for captures in stage::group_regex().captures_iter(chart.text) {
        let (Some(whole), Some(group)) = (captures.get(0), captures.name("group")) else {
            continue;
        };
        let stated = format!(
            "{}{}",
            stage::roman(&group.as_str().to_ascii_uppercase()),
            captures.name("sub").map_or("", |sub| sub.as_str())
        );
        if !CancerTable::matches(&stated, &groups) {
            return Err(format!(
                "{} made clinical (cT{t}N{n}) would be stage {} by the clinical table, not {}",
                chart.quote(&whole.range()),
                groups.join(" or "),
                stated
            ));
        }
    }
    Ok(())
}

/// Whether text states a resection or its absence (for unanchored sections).
pub(crate) fn touches(text: &str) -> bool {
    resection_regex().is_match(text) || unresectable_regex().is_match(text)
}
