//! Applying a catalog to one case: predicates, edits, the new chart, the
//! structured diff and the expected direction.

use std::collections::HashSet;
use std::ops::Range;

use cfeval_schema::vocab::BASELINE;
use cfeval_schema::{CaseRow, DiffEntry, Expected, Fact, Section, VariantRow, ids};

use crate::catalog::{Catalog, EditOp, ExpectedBranch, FactPattern, Intervention, Predicate};
use crate::coherence;
use crate::ops::{Chart, FactChange, Outcome, biomarker, control, finding, progression, stage, surgery};
use crate::text::OffsetMap;
use crate::vocab;

/// One variant with the edited source text its fact spans point into.
#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub row: VariantRow,
    /// The edited chart as free text (`None` for not-applicable rows; the
    /// case's own text for the baseline).
    pub text: Option<String>,
}

/// Applies every intervention of `catalog` to `case`: the baseline first,
/// then one row per intervention, applicable or not. Every chart is run
/// through the [coherence check](crate::coherence): the baseline carries
/// the case's own findings, and a variant whose chart has a finding its
/// baseline does not (the edit left a contradiction) is not applicable,
/// with the findings as its reason and in its `coherence` column.
pub fn apply(catalog: &Catalog, case: &CaseRow) -> Vec<VariantRow> {
    apply_with_text(catalog, case)
        .into_iter()
        .map(|variant| variant.row)
        .collect()
}

/// Like [`apply`], keeping each variant's edited source text.
pub fn apply_with_text(catalog: &Catalog, case: &CaseRow) -> Vec<Variant> {
    let mut out = Vec::with_capacity(catalog.interventions().len() + 1);
    out.push(Variant {
        row: VariantRow {
            run: case.run.clone(),
            case_id: case.case_id.clone(),
            variant_id: ids::variant_id(&case.case_id, BASELINE, catalog.hash()),
            intervention: BASELINE.into(),
            family: BASELINE.into(),
            applicable: true,
            not_applicable_reason: None,
            catalog_hash: catalog.hash().to_string(),
            expected_text: None,
            expected: None,
            sections: case.sections.clone(),
            facts: case.facts.clone(),
            diff: Vec::new(),
            coherence: if checks_coherence(catalog) {
                findings(&case.source_text, &case.facts, case)
            } else {
                Vec::new()
            },
        },
        text: Some(case.source_text.clone()),
    });
    let baseline = out[0].row.coherence.clone();
    let chart = Chart::new(case);
    let spans_valid = check_spans(case);
    for (index, intervention) in catalog.interventions().iter().enumerate() {
        let result = spans_valid
            .clone()
            .and_then(|()| variant(catalog, index, intervention, &chart));
        out.push(match result {
            Ok(variant) if checks_coherence(catalog) => {
                coherent(catalog, intervention, case, variant, &baseline)
            }
            Ok(variant) => variant,
            Err(reason) => not_applicable(catalog, intervention, case, reason),
        });
    }
    out
}

/// Whether the chart coherence check (stage, TNM, imaging, surgery wording,
/// regimen: oncology's) applies to the catalog's charts.
fn checks_coherence(catalog: &Catalog) -> bool {
    catalog.vocabulary().pack == "oncology"
}

/// The coherence findings of a chart, as the `coherence` column spells them.
fn findings(text: &str, facts: &[Fact], case: &CaseRow) -> Vec<String> {
    coherence::check(text, facts, case.cancer_type.as_deref())
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// `variant` with its findings; not applicable when the edit left a
/// contradiction the baseline does not have.
fn coherent(
    catalog: &Catalog,
    intervention: &Intervention,
    case: &CaseRow,
    mut variant: Variant,
    baseline: &[String],
) -> Variant {
    let text = variant.text.as_deref().unwrap_or_default();
    let found = findings(text, &variant.row.facts, case);
    let new: Vec<&String> = found
        .iter()
        .filter(|finding| !baseline.contains(finding))
        .collect();
    if new.is_empty() {
        variant.row.coherence = found;
        return variant;
    }
    let reason = format!(
        "the edit would leave the chart incoherent: {}",
        new.iter()
            .map(|finding| finding.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    );
    let mut refused = not_applicable(catalog, intervention, case, reason);
    refused.row.coherence = found;
    refused
}

fn not_applicable(catalog: &Catalog, intervention: &Intervention, case: &CaseRow, reason: String) -> Variant {
    Variant {
        row: VariantRow {
            run: case.run.clone(),
            case_id: case.case_id.clone(),
            variant_id: ids::variant_id(&case.case_id, &intervention.id, catalog.hash()),
            intervention: intervention.id.clone(),
            family: intervention.family.as_str().to_string(),
            applicable: false,
            not_applicable_reason: Some(reason),
            catalog_hash: catalog.hash().to_string(),
            expected_text: None,
            expected: None,
            sections: Vec::new(),
            facts: Vec::new(),
            diff: Vec::new(),
            coherence: Vec::new(),
        },
        text: None,
    }
}

/// Every span must lie on character boundaries of the source text.
fn check_spans(case: &CaseRow) -> Result<(), String> {
    let text = &case.source_text;
    let ok = |start: u64, end: u64| {
        start <= end
            && (end as usize) <= text.len()
            && text.is_char_boundary(start as usize)
            && text.is_char_boundary(end as usize)
    };
    for fact in &case.facts {
        if !ok(fact.span_start, fact.span_end) {
            return Err(format!(
                "the {} {} fact's span {}..{} is not a valid span of the source text",
                fact.kind, fact.name, fact.span_start, fact.span_end
            ));
        }
    }
    for section in &case.sections {
        if let (Some(start), Some(end)) = (section.span_start, section.span_end)
            && !ok(start, end)
        {
            return Err(format!(
                "section `{}` has an invalid span {start}..{end}",
                section.name
            ));
        }
    }
    Ok(())
}

fn variant(
    catalog: &Catalog,
    index: usize,
    intervention: &Intervention,
    chart: &Chart<'_>,
) -> Result<Variant, String> {
    let case = chart.case;
    if !holds(&intervention.applies_when, case) {
        return Err(format!(
            "applies_when is false: {}",
            explain(&intervention.applies_when, case)
        ));
    }
    let branch = expected_branch(intervention, case)
        .ok_or_else(|| "no pre-registered expected direction covers this case".to_string())?;
    let mut outcome = Outcome::default();
    for edit in &intervention.edits {
        let next = run_edit(catalog, index, edit, chart)?;
        merge(&mut outcome, next)?;
    }
    for section in &case.sections {
        if section.span_start.is_none()
            && intervention
                .edits
                .iter()
                .any(|edit| section_touched(catalog, index, edit, &section.text))
        {
            return Err(format!(
                "section `{}` is not anchored in the source text and mentions what the edit changes",
                section.name
            ));
        }
    }
    build(catalog, intervention, branch, chart, outcome)
}

fn run_edit(catalog: &Catalog, index: usize, edit: &EditOp, chart: &Chart<'_>) -> Result<Outcome, String> {
    match edit {
        EditOp::FlipBiomarker { name, also } => {
            let targets =
                biomarker::Targets::new(name, also).ok_or_else(|| format!("cannot flip `{name}`"))?;
            biomarker::flip(chart, &targets)
        }
        EditOp::StripBiomarker { name, also } => {
            let targets =
                biomarker::Targets::new(name, also).ok_or_else(|| format!("cannot strip `{name}`"))?;
            biomarker::strip(chart, &targets)
        }
        EditOp::SetSurgery {
            to,
            procedure_by_cancer,
            default_procedure,
        } => surgery::set_surgery(chart, *to, procedure_by_cancer, default_procedure),
        EditOp::InjectProgression {
            on,
            checkpoint_inhibitors,
        } => progression::inject(chart, *on, checkpoint_inhibitors),
        EditOp::SetStage { direction } => stage::set_stage(chart, *direction),
        EditOp::Paraphrase { reorder_sections, .. } => {
            let paraphraser = catalog
                .paraphraser(index)
                .ok_or_else(|| "the paraphrase list could not be compiled".to_string())?;
            control::paraphrase(chart, paraphraser, *reorder_sections)
        }
        EditOp::AddSentence { sentences, sections } => control::add_sentence(chart, sentences, sections),
        EditOp::FlipResult {
            target,
            replacements,
            default,
        } => finding::flip_result(chart, target, replacements, default),
        EditOp::RemoveResult { target } => finding::remove_result(chart, target),
        EditOp::SetFindings { values } => finding::set_findings(chart, values),
        EditOp::SwapSex { pairs, object_before } => finding::swap_sex(chart, pairs, object_before),
    }
}

fn section_touched(catalog: &Catalog, index: usize, edit: &EditOp, text: &str) -> bool {
    match edit {
        EditOp::FlipBiomarker { name, also } => {
            biomarker::Targets::new(name, also).is_some_and(|targets| biomarker::touches(text, &targets))
        }
        EditOp::StripBiomarker { name, also } => {
            biomarker::Targets::new(name, also).is_some_and(|targets| biomarker::touches(text, &targets))
        }
        EditOp::SetSurgery { .. } => surgery::touches(text),
        EditOp::InjectProgression { .. } => progression::touches(text),
        EditOp::SetStage { .. } => stage::touches(text),
        EditOp::Paraphrase { .. } => catalog.paraphraser(index).is_some_and(|p| p.touches(text)),
        EditOp::AddSentence { .. } => false,
        // They edit facts by span: an unanchored section holds none.
        EditOp::FlipResult { .. }
        | EditOp::RemoveResult { .. }
        | EditOp::SetFindings { .. }
        | EditOp::SwapSex { .. } => false,
    }
}

fn merge(into: &mut Outcome, next: Outcome) -> Result<(), String> {
    for edit in next.plan.sorted() {
        into.plan.push(edit.range, edit.replacement)?;
    }
    into.changes.extend(next.changes);
    into.reorder = into.reorder.take().or(next.reorder);
    into.regimen = into.regimen.take().or(next.regimen);
    into.procedure = into.procedure.take().or(next.procedure);
    into.progressed_line = into.progressed_line.or(next.progressed_line);
    into.order_test = into.order_test.take().or(next.order_test);
    Ok(())
}

fn build(
    catalog: &Catalog,
    intervention: &Intervention,
    branch: &ExpectedBranch,
    chart: &Chart<'_>,
    outcome: Outcome,
) -> Result<Variant, String> {
    let case = chart.case;
    let mut outcome = outcome;
    outcome.plan.tidy(&case.source_text);
    let (text, map) = outcome.plan.apply(&case.source_text);
    let mut removed = HashSet::new();
    let mut sets: Vec<Option<&FactChange>> = vec![None; case.facts.len()];
    for change in &outcome.changes {
        match change {
            FactChange::Remove { index } => {
                removed.insert(*index);
            }
            FactChange::Set { index, .. } => {
                if let Some(slot) = sets.get_mut(*index) {
                    *slot = Some(change);
                }
            }
        }
    }
    let mut diff = Vec::new();
    let mut facts = Vec::with_capacity(case.facts.len());
    for (index, fact) in case.facts.iter().enumerate() {
        if removed.contains(&index) {
            diff.push(DiffEntry {
                op: "remove_fact".into(),
                section: Some(fact.section.clone()),
                fact_kind: Some(fact.kind.clone()),
                fact_name: Some(fact.name.clone()),
                before: Some(describe(&fact.value, fact.detail.as_deref())),
                after: None,
            });
            continue;
        }
        let old = Chart::span(fact);
        let mut new_fact = fact.clone();
        let span = match sets[index] {
            Some(FactChange::Set {
                value,
                detail,
                anchor,
                polarity,
                name,
                ..
            }) => {
                new_fact.value = value.clone();
                new_fact.detail = detail.clone();
                if let Some(polarity) = polarity {
                    new_fact.polarity = polarity.clone();
                }
                if let Some(name) = name {
                    new_fact.name = name.clone();
                }
                let span = match anchor {
                    Some(anchor) => {
                        let start = map
                            .replacement_start(&anchor.edit)
                            .ok_or_else(|| "an anchored edit is missing".to_string())?;
                        start + anchor.within.start..start + anchor.within.end
                    }
                    None => map_span(&map, &old),
                };
                if new_fact.value != fact.value
                    || new_fact.detail != fact.detail
                    || new_fact.polarity != fact.polarity
                    || new_fact.name != fact.name
                {
                    diff.push(DiffEntry {
                        op: "set_fact".into(),
                        section: Some(fact.section.clone()),
                        fact_kind: Some(fact.kind.clone()),
                        fact_name: Some(fact.name.clone()),
                        before: Some(describe_fact(fact)),
                        after: Some(describe_fact(&new_fact)),
                    });
                }
                span
            }
            _ => {
                if map.deleted(&old) {
                    return Err(format!(
                        "the edit would delete the span of the {} {} fact {}",
                        fact.kind,
                        fact.name,
                        chart.quote(&old)
                    ));
                }
                map_span(&map, &old)
            }
        };
        let Some(span_text) = text.get(span.clone()).filter(|slice| !slice.trim().is_empty()) else {
            return Err(format!(
                "the {} {} fact has no text left after the edit",
                fact.kind, fact.name
            ));
        };
        new_fact.span_start = span.start as u64;
        new_fact.span_end = span.end as u64;
        new_fact.span_text = span_text.to_string();
        facts.push(new_fact);
    }
    for edit in outcome.plan.sorted() {
        let before = &case.source_text[edit.range.clone()];
        let op = if edit.range.is_empty() {
            "insert_text"
        } else if edit.replacement.is_empty() {
            "delete_text"
        } else {
            "replace_text"
        };
        diff.push(DiffEntry {
            op: op.into(),
            section: section_at(case, edit.range.start),
            fact_kind: None,
            fact_name: None,
            before: (!before.is_empty()).then(|| before.to_string()),
            after: (!edit.replacement.is_empty()).then(|| edit.replacement.clone()),
        });
    }
    let mut sections = Vec::with_capacity(case.sections.len());
    for section in &case.sections {
        let mut new_section = section.clone();
        if let (Some(start), Some(end)) = (section.span_start, section.span_end) {
            let span = map_span(&map, &(start as usize..end as usize));
            let slice = text
                .get(span.clone())
                .ok_or_else(|| format!("section `{}` lost its span in the edit", section.name))?;
            new_section.text = slice.to_string();
            new_section.span_start = Some(span.start as u64);
            new_section.span_end = Some(span.end as u64);
        }
        sections.push(new_section);
    }
    if let Some(order) = &outcome.reorder {
        let before: Vec<String> = sections.iter().map(|section| section.name.clone()).collect();
        let mut reordered: Vec<Section> = Vec::with_capacity(sections.len());
        for &at in order {
            if let Some(section) = sections.get(at) {
                reordered.push(section.clone());
            }
        }
        sections = reordered;
        diff.push(DiffEntry {
            op: "reorder".into(),
            section: None,
            fact_kind: None,
            fact_name: None,
            before: Some(before.join(", ")),
            after: Some(
                sections
                    .iter()
                    .map(|section| section.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        });
    }
    if diff.is_empty() {
        return Err("the edit changes nothing in this chart".into());
    }
    let (expected_text, expected) = resolve_expected(
        branch,
        outcome.regimen.as_deref(),
        outcome.procedure.as_deref(),
        outcome.progressed_line,
        outcome.order_test.as_deref(),
        case.reference.diagnosis.as_deref(),
    );
    Ok(Variant {
        row: VariantRow {
            run: case.run.clone(),
            case_id: case.case_id.clone(),
            variant_id: ids::variant_id(&case.case_id, &intervention.id, catalog.hash()),
            intervention: intervention.id.clone(),
            family: intervention.family.as_str().to_string(),
            applicable: true,
            not_applicable_reason: None,
            catalog_hash: catalog.hash().to_string(),
            expected_text: Some(expected_text),
            expected: Some(expected),
            sections,
            facts,
            diff,
            coherence: Vec::new(),
        },
        text: Some(text),
    })
}

fn map_span(map: &OffsetMap, old: &Range<usize>) -> Range<usize> {
    let start = map.start(old.start);
    let end = map.end(old.end).max(start);
    start..end
}

fn describe_fact(fact: &Fact) -> String {
    let mut out = describe(&fact.value, fact.detail.as_deref());
    if fact.polarity == "negated" {
        out.push_str(" [negated]");
    }
    out
}

fn describe(value: &str, detail: Option<&str>) -> String {
    match detail {
        Some(detail) => format!("{value} ({detail})"),
        None => value.to_string(),
    }
}

fn section_at(case: &CaseRow, offset: usize) -> Option<String> {
    case.sections
        .iter()
        .find_map(|section| match (section.span_start, section.span_end) {
            (Some(start), Some(end)) if (start as usize) <= offset && offset <= end as usize => {
                Some(section.name.clone())
            }
            _ => None,
        })
}

const ORDINALS: &[&str] = &["first", "second", "third", "fourth", "fifth", "sixth"];

/// The branch of `intervention`'s expected directions that covers `case`:
/// the first whose `when` holds.
fn expected_branch<'a>(intervention: &'a Intervention, case: &CaseRow) -> Option<&'a ExpectedBranch> {
    intervention
        .expected
        .iter()
        .find(|branch| branch.when.as_ref().is_none_or(|when| holds(when, case)))
}

/// The expected direction (words and machine-checkable part) that
/// `intervention` pre-registers for `case`, its placeholders filled with the
/// edit's `regimen` and `procedure` and `progressed_line` (1-based): what a
/// variant of the case carries. `None` when no branch covers the case.
pub fn expectation(
    intervention: &Intervention,
    case: &CaseRow,
    regimen: Option<&str>,
    procedure: Option<&str>,
    progressed_line: Option<usize>,
) -> Option<(String, Expected)> {
    expected_branch(intervention, case).map(|branch| {
        resolve_expected(
            branch,
            regimen,
            procedure,
            progressed_line,
            None,
            case.reference.diagnosis.as_deref(),
        )
    })
}

fn resolve_expected(
    branch: &ExpectedBranch,
    regimen: Option<&str>,
    procedure: Option<&str>,
    progressed_line: Option<usize>,
    test: Option<&str>,
    diagnosis: Option<&str>,
) -> (String, Expected) {
    let regimen = regimen.unwrap_or("the current regimen").to_string();
    let procedure = procedure.unwrap_or("the operation").to_string();
    let test_name = test.unwrap_or("the decisive test").to_string();
    // The case's diagnosis: the judge reads it, no subject does.
    let diagnosis = diagnosis.unwrap_or("the original diagnosis").to_string();
    let fill = |text: &str| {
        text.replace("{regimen}", &regimen)
            .replace("{procedure}", &procedure)
            .replace("{test}", &test_name)
            .replace("{diagnosis}", &diagnosis)
    };
    let switch_line = branch.switch_line.as_ref().map(|line| {
        if line == "next" {
            let next = progressed_line.unwrap_or(1);
            ORDINALS
                .get(next)
                .map_or_else(|| format!("line {}", next + 1), |word| (*word).to_string())
        } else {
            line.clone()
        }
    });
    let must_not_repeat = branch.must_not_repeat.as_ref().map(|what| {
        if what == "progressed_regimen" {
            regimen.clone()
        } else {
            what.clone()
        }
    });
    (
        fill(&branch.text),
        Expected {
            direction: branch.direction.as_str().to_string(),
            add: branch.add.clone(),
            remove: branch.remove.clone(),
            switch_line,
            intent: branch.intent.clone(),
            must_not_repeat,
            order_test: branch.order_test.as_ref().map(|what| {
                if what == "decisive" {
                    test_name.clone()
                } else {
                    what.clone()
                }
            }),
            diagnosis: branch.diagnosis.clone(),
            urgency: branch.urgency.clone(),
        },
    )
}

/// Whether `predicate` holds for `case`.
pub fn holds(predicate: &Predicate, case: &CaseRow) -> bool {
    match predicate {
        Predicate::All(items) => items.iter().all(|item| holds(item, case)),
        Predicate::Any(items) => items.iter().any(|item| holds(item, case)),
        Predicate::Not(inner) => !holds(inner, case),
        Predicate::Fact(pattern) => case.facts.iter().any(|fact| matches(pattern, fact)),
        Predicate::Reference(pattern) => case.reference.facts.iter().any(|fact| matches(pattern, fact)),
        Predicate::CancerType(types) => {
            cancer_type(case).is_some_and(|kind| vocab::contains(&as_strs(types), &kind))
        }
        Predicate::Metastatic(wanted) => metastatic(case) == *wanted,
        Predicate::Always(value) => *value,
    }
}

fn as_strs(items: &[String]) -> Vec<&str> {
    items.iter().map(String::as_str).collect()
}

fn cancer_type(case: &CaseRow) -> Option<String> {
    case.cancer_type.clone().or_else(|| {
        case.facts
            .iter()
            .find(|fact| fact.kind == "cancer_type")
            .map(|fact| fact.value.clone())
    })
}

fn metastatic(case: &CaseRow) -> bool {
    case.facts
        .iter()
        .any(|fact| match (fact.kind.as_str(), fact.name.as_str()) {
            ("stage", name) if name.eq_ignore_ascii_case("group") => vocab::stage_group(&fact.value) == "IV",
            ("stage", name) if name.eq_ignore_ascii_case("tnm") => fact.value.contains("M1"),
            ("metastatic", _) => fact.value == "true" && fact.polarity != "negated",
            _ => false,
        })
}

fn matches(pattern: &FactPattern, fact: &Fact) -> bool {
    if !fact.kind.eq_ignore_ascii_case(&pattern.kind) {
        return false;
    }
    if let Some(name) = &pattern.name
        && !fact.name.eq_ignore_ascii_case(name)
    {
        return false;
    }
    if let Some(needles) = &pattern.name_contains {
        let name = fact.name.to_ascii_lowercase();
        if !needles
            .iter()
            .any(|needle| name.contains(&needle.to_ascii_lowercase()))
        {
            return false;
        }
    }
    if let Some(values) = &pattern.value {
        let value = if fact.kind == "stage" && fact.name.eq_ignore_ascii_case("group") {
            vocab::stage_group(&fact.value)
        } else {
            fact.value.as_str()
        };
        if !values
            .items()
            .iter()
            .any(|wanted| wanted.eq_ignore_ascii_case(value))
        {
            return false;
        }
    }
    if let Some(polarity) = &pattern.polarity
        && fact.polarity != *polarity
    {
        return false;
    }
    true
}

/// Why `predicate` does not hold, in words.
fn explain(predicate: &Predicate, case: &CaseRow) -> String {
    match predicate {
        Predicate::All(items) => items
            .iter()
            .find(|item| !holds(item, case))
            .map_or_else(|| "all conditions hold".to_string(), |item| explain(item, case)),
        Predicate::Any(items) => format!(
            "none of: {}",
            items
                .iter()
                .map(|item| explain(item, case))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Predicate::Not(inner) => format!("excluded because {}", describe_predicate(inner)),
        Predicate::Fact(pattern) => format!("no fact {}", describe_pattern(pattern)),
        Predicate::Reference(pattern) => {
            let mut reason = format!("no reference fact {}", describe_pattern(pattern));
            // The rule that looked for a decisive test result, and found none.
            if pattern.kind == "decisive"
                && pattern.name.as_deref() == Some("test_result")
                && let Some(rule) = case.extra.iter().find(|entry| entry.key == "decisive_rule")
            {
                reason.push_str(&format!(" (decisive rule: {})", rule.value.trim_matches('"')));
            }
            if pattern.kind == "decisive"
                && pattern.name.as_deref() == Some("sex")
                && let Some(diagnosis) = &case.reference.diagnosis
            {
                reason.push_str(&format!(
                    ": the ontology does not mark {diagnosis} as occurring in one sex only"
                ));
            }
            reason
        }
        Predicate::CancerType(types) => format!(
            "cancer type is {}, not {}",
            cancer_type(case).unwrap_or_else(|| "unknown".into()),
            types.join(" or ")
        ),
        Predicate::Metastatic(true) => "the case is not metastatic".into(),
        Predicate::Metastatic(false) => "the case is metastatic".into(),
        Predicate::Always(_) => "the intervention never applies".into(),
    }
}

fn describe_predicate(predicate: &Predicate) -> String {
    match predicate {
        Predicate::All(items) => items
            .iter()
            .map(describe_predicate)
            .collect::<Vec<_>>()
            .join(" and "),
        Predicate::Any(items) => items
            .iter()
            .map(describe_predicate)
            .collect::<Vec<_>>()
            .join(" or "),
        Predicate::Not(inner) => format!("not ({})", describe_predicate(inner)),
        Predicate::Fact(pattern) => format!("the case has a fact {}", describe_pattern(pattern)),
        Predicate::Reference(pattern) => {
            format!("the case has a reference fact {}", describe_pattern(pattern))
        }
        Predicate::CancerType(types) => format!("cancer type is {}", types.join(" or ")),
        Predicate::Metastatic(true) => "the case is metastatic".into(),
        Predicate::Metastatic(false) => "the case is not metastatic".into(),
        Predicate::Always(value) => value.to_string(),
    }
}

fn describe_pattern(pattern: &FactPattern) -> String {
    let mut out = pattern.kind.clone();
    if let Some(name) = &pattern.name {
        out.push_str(&format!(" {name}"));
    }
    if let Some(needles) = &pattern.name_contains {
        out.push_str(&format!(" naming {}", needles.join("/")));
    }
    if let Some(values) = &pattern.value {
        out.push_str(&format!(" = {}", values.items().join("|")));
    }
    out
}
