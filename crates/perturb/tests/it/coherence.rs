//! The chart coherence check over generated cohorts: every case (the
//! baseline row) and every variant of cohort seeds 0..10 has no finding,
//! and no intervention is refused for leaving the chart incoherent.
//!
//! 120 cases per seed (the default cohort is 224): every cancer type,
//! style and intervention occurs at that size, and the test stays quick on
//! two cores.

use cfeval_perturb::apply_with_text;
use cfeval_schema::{CaseRow, Reference, ids};
use cfeval_synthesize::cohort::{CohortCase, CohortConfig, generate};

use crate::edits::catalog;

/// The cohort case as the `cases` table holds it (reference facts).
fn case_row(case: &CohortCase) -> CaseRow {
    CaseRow {
        run: "coherence".into(),
        case_id: ids::case_id("cohort", &case.id, &case.text),
        source_id: case.id.clone(),
        source_format: "cohort".into(),
        source_path: "cohort".into(),
        source_line: None,
        source_text: case.text.clone(),
        cancer_type: Some(case.cancer_type.clone()),
        sections: Vec::new(),
        facts: case.facts.clone(),
        reference: Reference::default(),
        extra: Vec::new(),
    }
}

#[test]
fn ten_cohort_seeds_have_no_finding_in_any_case_or_variant() {
    let catalog = catalog();
    let mut findings = Vec::new();
    let (mut charts, mut refused) = (0usize, 0usize);
    for seed in 0..10 {
        for case in generate(&CohortConfig { cases: 120, seed }).unwrap_or_else(|error| panic!("{error}")) {
            let row = case_row(&case);
            for variant in apply_with_text(&catalog, &row) {
                let reason = variant.row.not_applicable_reason.as_deref().unwrap_or_default();
                if reason.contains("incoherent") {
                    refused += 1;
                }
                if variant.row.applicable {
                    charts += 1;
                }
                for finding in &variant.row.coherence {
                    findings.push(format!("{} {}: {finding}", case.id, variant.row.intervention));
                }
            }
        }
    }
    eprintln!(
        "{charts} charts checked, {} findings, {refused} variants refused as incoherent",
        findings.len()
    );
    let mut rules: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for finding in &findings {
        let rule = finding.split(": ").nth(1).unwrap_or_default().to_string();
        *rules.entry(rule).or_default() += 1;
    }
    eprintln!("{rules:?}");
    for finding in findings.iter().take(30) {
        eprintln!("{finding}");
    }
    assert!(findings.is_empty(), "{} findings", findings.len());
    assert_eq!(refused, 0, "variants refused for leaving the chart incoherent");
}
