//! Family E: the stage moved up to IV (M0 → M1, negative metastasis
//! statements made positive, curative framing made palliative) or down from
//! IV to III (M1 → M0, distant-metastasis mentions removed, palliative
//! framing made curative).

use std::ops::Range;
use std::sync::OnceLock;

use regex::{Captures, Regex};

use cfeval_guidelines::staging::{Basis, Staging, split_group};

use super::{Anchor, Chart, NotApplicable, Outcome, re};
use crate::catalog::StageDirection;
use crate::coherence;
use crate::text;
use crate::vocab;

pub(crate) fn group_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"(?i)\bstage\s+(?:group\s+)?(?P<group>IV|I{1,3}|[1-4])(?P<sub>[A-D][12]?)?\b",
    )
}

pub(crate) fn tnm_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"\b(?P<pre>[cpy]{0,2})T(?P<t>is|[0-4x])[a-d]?\s?N(?P<n>[0-3x])[a-c]?(?:\s?(?P<m>M(?:[01x])[a-c]?))?\b",
    )
}

pub(crate) fn roman(group: &str) -> &str {
    match group {
        "1" => "I",
        "2" => "II",
        "3" => "III",
        "4" => "IV",
        other => other,
    }
}

/// Moves the stage.
pub(crate) fn set_stage(chart: &Chart<'_>, direction: StageDirection) -> Result<Outcome, NotApplicable> {
    let (from, to): (&[&str], &str) = match direction {
        StageDirection::UpToFour => (&["I", "II", "III"], "IV"),
        StageDirection::DownToThree => (&["IV"], "III"),
    };
    let mut outcome = Outcome::default();
    let mut mentions: Vec<Range<usize>> = Vec::new();
    for captures in group_regex().captures_iter(chart.text) {
        let Some(group) = captures.name("group") else {
            continue;
        };
        let value = roman(&group.as_str().to_ascii_uppercase()).to_string();
        if !from.contains(&value.as_str()) {
            return Err(format!(
                "{} states stage {value}, which this intervention does not move",
                chart.quote(&group.range())
            ));
        }
        let end = captures.name("sub").map_or(group.end(), |sub| sub.end());
        let range = group.start()..end;
        outcome.plan.push(range.clone(), to)?;
        mentions.push(captures.get(0).map_or(range, |whole| whole.range()));
    }
    let groups: Vec<usize> = chart
        .facts()
        .filter(|(_, fact)| fact.kind == "stage" && fact.name.eq_ignore_ascii_case("group"))
        .map(|(index, _)| index)
        .collect();
    if groups.is_empty() {
        return Err("no stage group fact".into());
    }
    for &index in &groups {
        let fact = &chart.case.facts[index];
        let span = Chart::span(fact);
        if !from.contains(&vocab::stage_group(&fact.value)) {
            return Err(format!(
                "stage group {} is not one this intervention moves",
                fact.value
            ));
        }
        if !mentions
            .iter()
            .any(|mention| mention.start < span.end && span.start < mention.end)
        {
            return Err(format!(
                "the stage fact's span {} is not a `stage …` mention this edit can rewrite",
                chart.quote(&span)
            ));
        }
        super::set(&mut outcome, index, to, None, None);
    }
    for captures in tnm_regex().captures_iter(chart.text) {
        tnm_edit(chart, &captures, direction, &mut outcome)?;
        if let Some(whole) = captures.get(0) {
            mentions.push(whole.range());
        }
    }
    // A metastatic fact read from a stage or TNM mention (stage IV, M1, or
    // the group of a non-metastatic stage) follows the mention's new value.
    let metastatic = if direction == StageDirection::UpToFour {
        "true"
    } else {
        "false"
    };
    for mention in &mentions {
        retarget_facts(chart, mention, &mut outcome, "metastatic", metastatic);
    }
    match direction {
        StageDirection::UpToFour => up_framing(chart, &mut outcome)?,
        StageDirection::DownToThree => down_framing(chart, &mut outcome)?,
    }
    Ok(outcome)
}

fn tnm_edit(
    chart: &Chart<'_>,
    captures: &Captures<'_>,
    direction: StageDirection,
    outcome: &mut Outcome,
) -> Result<(), NotApplicable> {
    let Some(whole) = captures.get(0) else {
        return Ok(());
    };
    let Some(m) = captures.name("m") else {
        return Ok(());
    };
    let new_m = match direction {
        StageDirection::UpToFour => {
            if m.as_str().starts_with("M1") {
                return Err(format!("{} is already M1", chart.quote(&whole.range())));
            }
            "M1"
        }
        StageDirection::DownToThree => {
            without_metastases_is_three(chart, captures)?;
            "M0"
        }
    };
    outcome.plan.push(m.range(), new_m)?;
    for (index, fact) in chart.facts() {
        let span = Chart::span(fact);
        if fact.kind == "stage"
            && fact.name.eq_ignore_ascii_case("tnm")
            && span.start <= m.start()
            && m.end() <= span.end
        {
            let value = match fact.value.rfind('M') {
                Some(at) => format!("{}{new_m}", &fact.value[..at]),
                None => fact.value.clone(),
            };
            super::set(outcome, index, &value, fact.detail.clone(), None);
        }
    }
    Ok(())
}

/// Down to III: the TNM without metastases must be stage III in the
/// cancer's AJCC table (`data/packs/oncology/staging.yaml`); T1N1M0 NSCLC is stage II.
fn without_metastases_is_three(chart: &Chart<'_>, captures: &Captures<'_>) -> Result<(), NotApplicable> {
    let number = |name: &str| {
        captures
            .name(name)
            .and_then(|found| found.as_str().parse::<u8>().ok())
    };
    let (Some(t), Some(n)) = (number("t"), number("n")) else {
        return Ok(());
    };
    let Some(table) = chart.staging_table() else {
        return Ok(());
    };
    let basis = Basis::from_prefix(captures.name("pre").map_or("", |pre| pre.as_str()));
    let groups = table.groups(basis, t, n, 0);
    if groups.iter().any(|group| split_group(group).0 == "III") {
        return Ok(());
    }
    Err(format!(
        "{} without metastases would be stage {} ({}), not III",
        chart.quote(&captures.get(0).map_or(0..0, |whole| whole.range())),
        if groups.is_empty() {
            "?".to_string()
        } else {
            groups.join(" or ")
        },
        Staging::builtin().map_or("AJCC", |staging| staging.edition())
    ))
}

/// Up to IV: "no distant metastases" → "distant metastases", "locally
/// advanced" → "metastatic", curative → palliative.
fn up_framing(chart: &Chart<'_>, outcome: &mut Outcome) -> Result<(), NotApplicable> {
    static NEGATIVE: OnceLock<Regex> = OnceLock::new();
    let negative = re(
        &NEGATIVE,
        r"(?xi)
        \b(?P<noevidence>no\ (?:evidence|sign)\ of\ (?:distant\ )?(?:metastatic\ disease|metastas[ie]s|distant\ disease))
        |\b(?P<no>no\ (?:distant\ )?(?:metastatic\ disease|metastas[ie]s))
        |\b(?P<without>without\ (?:evidence\ of\ )?(?:distant\ )?(?:metastatic\ disease|metastas[ie]s))
        |\b(?P<negfor>negative\ for\ (?:distant\ )?(?:metastatic\ disease|metastas[ie]s))
        |\b(?P<nonmet>non-?metastatic)\b
        |\b(?P<local>locally\ advanced|localized|localised|early[-\ ]stage|limited[-\ ]stage|resectable)\b
        |\b(?P<curative>curative)\b
        |\b(?P<adjuvant>adjuvant\ )",
    );
    for captures in negative.captures_iter(chart.text) {
        let Some(whole) = captures.get(0) else { continue };
        let range = whole.range();
        if outcome.plan.touches(&range) {
            continue;
        }
        let before = &chart.text[..range.start];
        let replacement = if captures.name("noevidence").is_some() {
            "evidence of distant metastatic disease".to_string()
        } else if captures.name("no").is_some() {
            "distant metastases".to_string()
        } else if captures.name("without").is_some() {
            "with distant metastases".to_string()
        } else if captures.name("negfor").is_some() {
            "positive for distant metastases".to_string()
        } else if captures.name("nonmet").is_some() || captures.name("local").is_some() {
            if whole.as_str().eq_ignore_ascii_case("resectable") {
                if before.to_ascii_lowercase().ends_with("un")
                    || before.to_ascii_lowercase().ends_with("non-")
                {
                    continue;
                }
                return Err(format!(
                    "{} presupposes non-metastatic disease",
                    chart.quote(&range)
                ));
            }
            keep_case(whole.as_str(), "metastatic")
        } else if captures.name("curative").is_some() {
            keep_case(whole.as_str(), "palliative")
        } else {
            // "adjuvant": only as framing, never as treatment received.
            if before.to_ascii_lowercase().ends_with("neo") {
                continue;
            }
            if let Some(sentence) = chart.sentence_at(range.start)
                && chart
                    .other_facts_in(&sentence, |fact| fact.kind != "prior_line")
                    .is_some()
            {
                continue;
            }
            String::new()
        };
        let replacement = keep_case(whole.as_str(), &replacement);
        outcome.plan.push(range.clone(), replacement)?;
        retarget_facts(chart, &range, outcome, "metastatic", "true");
        retarget_facts(chart, &range, outcome, "intent", "palliative");
    }
    // What else says there is no distant disease ("CT: no distant disease",
    // "PET/CT: FDG-avid primary only") is restated as the lexicon says.
    for (range, rewrite) in coherence::lexicon().no_distant_matches(chart.text) {
        if outcome.plan.touches(&range) {
            continue;
        }
        let Some(rewrite) = rewrite else {
            return Err(format!(
                "{} states there is no distant disease, and this edit cannot restate it",
                chart.quote(&range)
            ));
        };
        outcome
            .plan
            .push(range.clone(), keep_case(&chart.text[range.clone()], rewrite))?;
        retarget_facts(chart, &range, outcome, "metastatic", "true");
    }
    Ok(())
}

/// Down to III: sentences about distant metastases go, "metastatic" becomes
/// "locally advanced", palliative becomes curative.
fn down_framing(chart: &Chart<'_>, outcome: &mut Outcome) -> Result<(), NotApplicable> {
    if let Some((_, fact)) = chart.facts().find(|(_, fact)| fact.kind == "prior_line") {
        return Err(format!(
            "the chart records a prior line (`{}`), which presupposes the metastatic setting",
            fact.name
        ));
    }
    // Distant-disease mentions the lexicon restates ("CT: liver lesions,
    // largest 2 cm" → "CT: no distant disease").
    for (range, rewrite) in coherence::lexicon().distant_matches(chart.text) {
        if let Some(rewrite) = rewrite
            && !outcome.plan.touches(&range)
            && chart.other_facts_in(&range, |_| false).is_none()
        {
            outcome
                .plan
                .push(range.clone(), keep_case(&chart.text[range.clone()], rewrite))?;
        }
    }
    if let Some(negative) = coherence::lexicon().node_negative_matches(chart.text).first()
        && let Some(table) = chart.staging_table()
        && !table.node_negative_can_be("III")
    {
        return Err(format!(
            "{} says node-negative, and node-negative {} without metastases is never stage III",
            chart.quote(negative),
            chart.cancer_type().unwrap_or_default()
        ));
    }
    static METASTASIS: OnceLock<Regex> = OnceLock::new();
    let metastasis = re(
        &METASTASIS,
        r"(?i)\b(?:metastas[ie]s|mets|spread\s+to|deposits|carcinomatosis|oligometastatic|M1[a-c]?|widely\s+metastatic|metastatic\s+to)\b|\bmetastatic\s+\(",
    );
    static CLAUSE: OnceLock<Regex> = OnceLock::new();
    let clause = re(
        &CLAUSE,
        r"(?xi)
        ,?\s*(?:and\s+|with\s+)?(?:widely\s+)?metastatic\ +(?:to\ +(?:the\ +)?[\w\ -]*\w|\([^)]*\))
        |,?\s*(?:and\s+|with\s+)?(?:multiple\s+|numerous\s+|several\s+|innumerable\s+|scattered\s+|bilobar\s+|a\s+solitary\s+|solitary\s+|distant\s+)?
          (?:(?:liver|hepatic|lung|pulmonary|bone|osseous|brain|peritoneal|peritoneum|adrenal|distant|nodal|subcutaneous|soft\s+tissue|tissue|pleural|contralateral\s+lung)(?:\ +and\ +|,\ *|\ +)){0,3}
          metastas[ie]s(?:\ +(?:to|in)\ +(?:the\ +)?[\w\ -]*\w)?",
    );
    // Whole sentences about metastases (no other fact) and clauses of
    // sentences that carry other facts; the first becomes the statement that
    // there are no distant metastases, the rest go.
    let mut whole: Vec<Range<usize>> = Vec::new();
    let mut clauses: Vec<Range<usize>> = Vec::new();
    for sentence in &chart.sentences {
        let slice = &chart.text[sentence.clone()];
        if !metastasis.is_match(slice) {
            continue;
        }
        if !outcome.plan.touches(sentence)
            && chart
                .other_facts_in(sentence, |fact| fact.kind == "metastatic")
                .is_none()
        {
            whole.push(sentence.clone());
            continue;
        }
        let mut left = slice.to_string();
        for found in clause.find_iter(slice) {
            if found.as_str().is_empty() {
                continue;
            }
            let range = sentence.start + found.start()..sentence.start + found.end();
            if let Some(fact) = chart.case.facts.iter().find(|fact| {
                let span = Chart::span(fact);
                fact.kind != "metastatic" && span.start < range.end && range.start < span.end
            }) {
                return Err(format!(
                    "{} overlaps the span of {} {}",
                    chart.quote(&range),
                    fact.kind,
                    fact.name
                ));
            }
            clauses.push(range);
            left = left.replacen(found.as_str(), "", 1);
        }
        if let Some(found) = metastasis.find(&left) {
            return Err(format!(
                "the sentence {} says `{}` and carries other facts; it cannot be rewritten safely",
                chart.quote(sentence),
                found.as_str()
            ));
        }
    }
    let metastatic_facts: Vec<usize> = chart
        .facts()
        .filter(|(_, fact)| fact.kind == "metastatic")
        .map(|(index, _)| index)
        .collect();
    let statement = "There is no evidence of distant metastatic disease.";
    let clause_statement = ", with no distant metastases";
    let placement = if metastatic_facts.is_empty() {
        None
    } else if let Some(first) = whole.first() {
        outcome.plan.push(first.clone(), statement)?;
        Some(Anchor {
            edit: first.clone(),
            within: 0..statement.len(),
        })
    } else if let Some(first) = clauses.first() {
        outcome.plan.push(first.clone(), clause_statement)?;
        Some(Anchor {
            edit: first.clone(),
            within: 2..clause_statement.len(),
        })
    } else {
        return Err("the metastatic fact is not in a statement this edit can rewrite".into());
    };
    for sentence in &whole {
        if placement.as_ref().is_none_or(|anchor| anchor.edit != *sentence) {
            outcome
                .plan
                .push(text::deletion_range(chart.text, sentence), "")?;
        }
    }
    for range in &clauses {
        if placement.as_ref().is_none_or(|anchor| anchor.edit != *range) {
            outcome.plan.push(range.clone(), "")?;
        }
    }
    if let Some(anchor) = placement {
        for (position, &index) in metastatic_facts.iter().enumerate() {
            let fact = &chart.case.facts[index];
            if position == 0 {
                super::set_status(outcome, fact, index, "false", None, Some(anchor.clone()));
            } else {
                // One statement now says it; the extra mentions are gone.
                outcome.changes.push(super::FactChange::Remove { index });
            }
        }
    }
    static FRAMING: OnceLock<Regex> = OnceLock::new();
    let framing = re(&FRAMING, r"(?i)\b(?:metastatic|palliative)\b");
    for found in framing.find_iter(chart.text) {
        let range = found.range();
        if outcome.plan.touches(&range) {
            continue;
        }
        let replacement = if found.as_str().eq_ignore_ascii_case("palliative") {
            keep_case(found.as_str(), "curative")
        } else {
            keep_case(found.as_str(), "locally advanced")
        };
        outcome.plan.push(range.clone(), replacement)?;
        retarget_facts(chart, &range, outcome, "intent", "curative");
    }
    Ok(())
}

fn retarget_facts(chart: &Chart<'_>, range: &Range<usize>, outcome: &mut Outcome, kind: &str, value: &str) {
    for (index, fact) in chart.facts() {
        let span = Chart::span(fact);
        if fact.kind == kind && span.start < range.end && range.start < span.end && fact.value != value {
            super::set_status(outcome, fact, index, value, fact.detail.clone(), None);
        }
    }
}

fn keep_case(original: &str, word: &str) -> String {
    if original.starts_with(|c: char| c.is_ascii_uppercase()) && !word.is_empty() {
        text::capitalize(word)
    } else {
        word.to_string()
    }
}

/// Whether text states a stage (for unanchored sections).
pub(crate) fn touches(text: &str) -> bool {
    group_regex().is_match(text) || tnm_regex().is_match(text)
}
