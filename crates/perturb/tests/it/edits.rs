//! The shipped catalog applied to hand-written charts.

use cfeval_perturb::{Catalog, Variant, apply_with_text};
use cfeval_schema::CaseRow;
use proptest::prelude::*;

use crate::fixtures;

pub fn catalog() -> Catalog {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/oncology/catalog.yaml");
    match Catalog::load(&path) {
        Ok(catalog) => catalog,
        Err(error) => panic!("{error}"),
    }
}

fn variant(case: &CaseRow, id: &str) -> Variant {
    let catalog = catalog();
    apply_with_text(&catalog, case)
        .into_iter()
        .find(|variant| variant.row.intervention == id)
        .unwrap_or_else(|| panic!("no row for {id}"))
}

fn applied(case: &CaseRow, id: &str) -> (Variant, String) {
    let found = variant(case, id);
    assert!(
        found.row.applicable,
        "{id} on {}: {:?}",
        case.case_id, found.row.not_applicable_reason
    );
    let text = found.text.clone().unwrap_or_default();
    (found, text)
}

fn fact<'a>(variant: &'a Variant, kind: &str, name: &str) -> Option<&'a cfeval_schema::Fact> {
    variant
        .row
        .facts
        .iter()
        .find(|fact| fact.kind == kind && fact.name == name)
}

/// Every fact's span points at its span_text in the edited text, every
/// anchored section is the slice its span names, and the facts other than
/// `changed` are exactly the case's facts (value, name, kind).
fn assert_consistent(case: &CaseRow, variant: &Variant, changed: &[(&str, &str)]) {
    let text = variant.text.as_deref().unwrap_or_default();
    for fact in &variant.row.facts {
        assert_eq!(
            &text[fact.span_start as usize..fact.span_end as usize],
            fact.span_text
        );
    }
    for section in &variant.row.sections {
        if let (Some(start), Some(end)) = (section.span_start, section.span_end) {
            assert_eq!(&text[start as usize..end as usize], section.text);
        }
    }
    let key = |fact: &cfeval_schema::Fact| (fact.kind.clone(), fact.name.clone(), fact.value.clone());
    let untouched = |fact: &&cfeval_schema::Fact| {
        !changed.contains(&(fact.kind.as_str(), fact.name.as_str()))
            && !changed.contains(&(fact.kind.as_str(), "*"))
    };
    let before: Vec<_> = case.facts.iter().filter(untouched).map(key).collect();
    let after: Vec<_> = variant.row.facts.iter().filter(untouched).map(key).collect();
    assert_eq!(
        before, after,
        "{}: facts other than {changed:?} changed",
        variant.row.intervention
    );
}

#[test]
fn her2_flip_rewrites_ihc_score_and_fact() {
    let case = fixtures::gastric_metastatic();
    let (found, text) = applied(&case, "A1");
    assert!(text.contains("The tumor is HER2 0 by IHC."), "{text}");
    assert!(!text.contains("3+"));
    assert_eq!(
        fact(&found, "biomarker", "HER2").map(|fact| fact.value.as_str()),
        Some("negative")
    );
    let expected = found.row.expected.clone().unwrap_or_default();
    assert_eq!(expected.remove, vec!["her2_targeted"]);
    assert!(
        found
            .row
            .diff
            .iter()
            .any(|entry| entry.op == "set_fact" && entry.before.as_deref() == Some("positive"))
    );
    assert_consistent(&case, &found, &[("biomarker", "HER2")]);
}

#[test]
fn hormone_receptor_flip_moves_er_and_pr_together() {
    let case = fixtures::breast_resected();
    let (found, text) = applied(&case, "A2");
    assert!(
        text.contains("ER-negative (0%), PR-negative, HER2-negative (IHC 1+)"),
        "{text}"
    );
    assert_eq!(
        fact(&found, "biomarker", "PR").map(|fact| fact.value.as_str()),
        Some("negative")
    );
    assert_eq!(
        found.row.expected.as_ref().map(|e| e.remove.clone()),
        Some(vec![
            "endocrine_therapy".to_string(),
            "cdk46_inhibitor".to_string()
        ])
    );
    assert_consistent(&case, &found, &[("biomarker", "ER"), ("biomarker", "PR")]);
}

#[test]
fn presupposing_wording_makes_flip_and_strip_not_applicable() {
    let case = fixtures::breast_triple_negative();
    for id in ["A1", "A2", "C1", "C3"] {
        let found = variant(&case, id);
        assert!(!found.row.applicable);
        let reason = found.row.not_applicable_reason.unwrap_or_default();
        assert!(reason.contains("triple-negative"), "{id}: {reason}");
    }
    let case = fixtures::nsclc_on_io();
    let reason = variant(&case, "A3").row.not_applicable_reason.unwrap_or_default();
    assert!(reason.contains("pembrolizumab"), "{reason}");
}

#[test]
fn strip_removes_list_items_and_facts() {
    let case = fixtures::breast_resected();
    let (found, text) = applied(&case, "C1");
    assert!(
        text.contains("Biomarkers: ER-positive (90%), PR-positive."),
        "{text}"
    );
    assert!(!text.contains("HER2"));
    assert!(fact(&found, "biomarker", "HER2").is_none());
    assert_eq!(
        found
            .row
            .expected
            .as_ref()
            .and_then(|e| e.order_test.clone())
            .as_deref(),
        Some("HER2")
    );
    assert_consistent(&case, &found, &[("biomarker", "HER2")]);
    let (found, text) = applied(&case, "C3");
    assert!(text.contains("Biomarkers: HER2-negative (IHC 1+)."), "{text}");
    assert!(!text.contains("ER-") && !text.contains("PR-"));
    assert_consistent(&case, &found, &[("biomarker", "ER"), ("biomarker", "PR")]);
    // A sentence that says only the marker goes whole.
    let case = fixtures::gastric_metastatic();
    let (_, text) = applied(&case, "C1");
    assert!(text.contains("gastric body.\nCT"), "{text}");
}

#[test]
fn resected_to_unresected_rewrites_every_operative_statement() {
    let case = fixtures::colon_resected();
    let (found, text) = applied(&case, "D1");
    assert!(
        text.contains("Surgery: Right hemicolectomy was not performed: the tumor was judged unresectable"),
        "{text}"
    );
    for gone in ["R0", "3/18", "s/p right", "Adjuvant", "pT3"] {
        assert!(!text.contains(gone), "`{gone}` left in {text}");
    }
    assert!(text.contains("(cT3N1bM0)"));
    assert!(
        text.contains("PMH: HTN, s/p appendectomy."),
        "past history must stay: {text}"
    );
    assert!(!text.contains(" \n"), "trailing blank: {text:?}");
    assert_eq!(
        fact(&found, "surgery", "right hemicolectomy").map(|fact| fact.value.as_str()),
        Some("unresected")
    );
    assert_eq!(
        fact(&found, "stage", "tnm").map(|fact| fact.value.as_str()),
        Some("cT3N1bM0")
    );
    assert_consistent(
        &case,
        &found,
        &[("surgery", "right hemicolectomy"), ("stage", "tnm")],
    );
    let case = fixtures::breast_resected();
    let (_, text) = applied(&case, "D1");
    assert!(text.contains("Staging: Clinical stage IIA, cT2N0M0."), "{text}");
    assert!(!text.contains("Margins") && !text.contains("sentinel"), "{text}");
}

#[test]
fn unresected_to_resected_drops_unresectability_and_neoadjuvant_framing() {
    let case = fixtures::pancreas_unresected();
    let (found, text) = applied(&case, "D2");
    assert!(
        text.contains("She underwent a pancreaticoduodenectomy with negative margins (R0 resection)."),
        "{text}"
    );
    let surgery = found.row.facts.iter().find(|fact| fact.kind == "surgery");
    assert_eq!(
        surgery.map(|fact| (fact.name.as_str(), fact.value.as_str(), fact.polarity.as_str())),
        Some(("pancreaticoduodenectomy", "resected", "affirmed"))
    );
    for gone in [
        "unresectable",
        "encasement",
        "not a surgical candidate",
        "neoadjuvant",
    ] {
        assert!(!text.contains(gone), "`{gone}` left in {text}");
    }
    assert!(text.contains("Should she receive adjuvant chemotherapy?"));
    let expected = found.row.expected_text.clone().unwrap_or_default();
    assert!(expected.contains("pancreaticoduodenectomy"), "{expected}");
    assert_consistent(&case, &found, &[("surgery", "*")]);
}

#[test]
fn stage_up_and_down() {
    let case = fixtures::pancreas_unresected();
    let (found, text) = applied(&case, "E1");
    assert!(
        text.contains("Stage IV, cT4N1M1. Distant metastases on staging CT."),
        "{text}"
    );
    assert_eq!(
        fact(&found, "metastatic", "metastatic").map(|fact| fact.value.as_str()),
        Some("true")
    );
    assert_eq!(
        found
            .row
            .expected
            .as_ref()
            .and_then(|e| e.intent.clone())
            .as_deref(),
        Some("palliative")
    );
    assert_consistent(
        &case,
        &found,
        &[("stage", "group"), ("stage", "tnm"), ("metastatic", "metastatic")],
    );
    let case = fixtures::gastric_metastatic();
    let (found, text) = applied(&case, "E2");
    assert!(
        text.contains("There is no evidence of distant metastatic disease.\nClinical stage III, cT3N2M0."),
        "{text}"
    );
    assert!(!text.contains("liver metastases"));
    assert_consistent(
        &case,
        &found,
        &[("stage", "group"), ("stage", "tnm"), ("metastatic", "metastatic")],
    );
}

#[test]
fn progression_is_injected_and_expected_names_the_regimen() {
    let case = fixtures::nsclc_on_io();
    let (found, text) = applied(&case, "B2");
    assert!(
        text.contains("after 4 cycles showed radiographic disease progression."),
        "{text}"
    );
    assert!(!text.contains("partial response"));
    let expected = found.row.expected.clone().unwrap_or_default();
    assert_eq!(expected.switch_line.as_deref(), Some("second"));
    assert_eq!(expected.must_not_repeat.as_deref(), Some("immunotherapy"));
    let (found, _) = applied(&case, "B1");
    assert_eq!(
        found.row.expected.and_then(|e| e.must_not_repeat).as_deref(),
        Some("pembrolizumab")
    );
}

#[test]
fn negative_controls_change_no_fact() {
    let catalog = catalog();
    for case in fixtures::all() {
        for id in ["N1", "N2"] {
            let found = variant(&case, id);
            assert!(
                found.row.applicable,
                "{id} on {}: {:?}",
                case.case_id, found.row.not_applicable_reason
            );
            let reordered = found.row.diff.iter().any(|entry| entry.op == "reorder");
            assert!(
                reordered || found.text.as_deref() != Some(case.source_text.as_str()),
                "{id} changed nothing"
            );
            assert!(found.row.diff.iter().all(|entry| !entry.op.ends_with("_fact")));
            assert_consistent(&case, &found, &[]);
            assert_eq!(
                found.row.expected.as_ref().map(|e| e.direction.as_str()),
                Some("unchanged")
            );
        }
        assert_eq!(
            apply_with_text(&catalog, &case).len(),
            catalog.interventions().len() + 1
        );
    }
    let case = fixtures::gastric_metastatic();
    let (_, text) = applied(&case, "N1");
    assert!(text.contains("Computed tomography of the chest"), "{text}");
}

#[test]
fn every_row_is_accounted_for_and_ids_are_stable() {
    let catalog = catalog();
    for case in fixtures::all() {
        let rows = cfeval_perturb::apply(&catalog, &case);
        assert_eq!(rows[0].intervention, "baseline");
        assert_eq!(rows[0].facts, case.facts);
        for row in &rows {
            assert_eq!(row.catalog_hash, catalog.hash());
            assert_eq!(
                row.variant_id,
                cfeval_schema::ids::variant_id(&case.case_id, &row.intervention, catalog.hash())
            );
            assert_eq!(row.applicable, row.not_applicable_reason.is_none());
            assert_eq!(
                row.applicable,
                row.expected.is_some() || row.intervention == "baseline"
            );
        }
        assert_eq!(rows, cfeval_perturb::apply(&catalog, &case), "deterministic");
    }
}

#[test]
fn broken_spans_give_a_reason_not_a_panic() {
    let mut case = fixtures::breast_resected();
    case.facts[0].span_end = case.source_text.len() as u64 + 10;
    let rows = cfeval_perturb::apply(&catalog(), &case);
    assert!(rows[1..].iter().all(|row| !row.applicable));
    assert!(
        rows[1]
            .not_applicable_reason
            .as_deref()
            .unwrap_or_default()
            .contains("not a valid span")
    );
}

fn arbitrary_case() -> impl Strategy<Value = CaseRow> {
    (
        0..fixtures::all().len(),
        "[a-z]{1,8}",
        proptest::sample::select(vec!["She", "He"]),
        0usize..3,
    )
        .prop_map(|(index, suffix, pronoun, extra)| {
            let mut case = fixtures::all()[index].clone();
            case.case_id = format!("{}-{suffix}", case.case_id);
            // Prepend filler sentences to shift every offset.
            let filler = format!("{pronoun} was seen in clinic. ").repeat(extra);
            let shift = filler.len() as u64;
            case.source_text = format!("{filler}{}", case.source_text);
            for fact in &mut case.facts {
                fact.span_start += shift;
                fact.span_end += shift;
            }
            for section in &mut case.sections {
                section.span_start = section.span_start.map(|start| start + shift);
                section.span_end = section.span_end.map(|end| end + shift);
            }
            case
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// On shifted, renamed charts every applicable variant stays consistent:
    /// spans point at their text, sections at their slices, and only the
    /// facts the diff names change.
    #[test]
    fn edits_stay_consistent(case in arbitrary_case()) {
        let catalog = catalog();
        for variant in apply_with_text(&catalog, &case) {
            if !variant.row.applicable {
                continue;
            }
            let changed: Vec<(String, String)> = variant.row.diff.iter()
                .filter(|entry| entry.op.ends_with("_fact"))
                .filter_map(|entry| {
                    let kind = entry.fact_kind.clone()?;
                    // A surgery edit renames the procedure.
                    let name = if kind == "surgery" { "*".to_string() } else { entry.fact_name.clone()? };
                    Some((kind, name))
                })
                .collect();
            let changed: Vec<(&str, &str)> = changed.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            assert_consistent(&case, &variant, &changed);
        }
    }
}
