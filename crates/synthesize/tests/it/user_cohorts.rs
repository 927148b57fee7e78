//! Users' own cohorts (JSONL, CSV) with reference and unknown fields, the
//! generated cohort's reference carried through, and extra fact sources.

use cfeval_schema::{Fact, Section};
use cfeval_synthesize::cohort::{self, CohortConfig};
use cfeval_synthesize::extract::{FactSource, locate_span};
use cfeval_synthesize::{Config, run, run_with_sources};

#[test]
fn cohort_jsonl_carries_the_reference_through() {
    let dir = tempfile::tempdir().unwrap();
    let cases = cohort::generate(&CohortConfig { cases: 24, seed: 9 }).unwrap();
    let written = cohort::write(&cases, dir.path()).unwrap();
    assert_eq!(std::fs::read_dir(&written.text_dir).unwrap().count(), 24);
    let report = run(
        &Config::default(),
        std::slice::from_ref(&written.jsonl),
        &dir.path().join("run"),
    )
    .unwrap();
    assert_eq!(
        (report.cases, report.quarantined, report.span_failures),
        (24, 0, 0)
    );
    // The folder holds each case twice (the JSONL and a text file of the
    // same id): read whole, every copy is quarantined, none doubled.
    let both = run(
        &Config::default(),
        &[dir.path().to_path_buf()],
        &dir.path().join("both"),
    )
    .unwrap();
    assert_eq!(both.cases, 0, "{both:?}");
    let duplicates = crate::quarantine_rows(&dir.path().join("both"))
        .into_iter()
        .filter(|row| row.reason.contains("duplicate case"))
        .count();
    assert_eq!(duplicates, 48);
    let rows = crate::case_rows(&dir.path().join("run"));
    for (row, case) in rows.iter().zip(&cases) {
        assert_eq!(row.source_id, case.id);
        assert_eq!(row.source_text, case.text);
        assert_eq!(row.reference.consensus, case.consensus);
        assert_eq!(row.reference.rules, case.rules);
        assert_eq!(row.reference.facts, case.facts);
        // Cohort fields cfeval does not interpret are kept.
        let keys: Vec<&str> = row.extra.iter().map(|pair| pair.key.as_str()).collect();
        assert_eq!(keys, vec!["cancer_type", "style"]);
        assert_eq!(row.cancer_type.as_deref(), Some(case.cancer_type.as_str()));
    }
    // The text files convert to the same facts as the JSONL.
    let text_run = dir.path().join("text-run");
    run(&Config::default(), &[written.text_dir], &text_run).unwrap();
    let text_rows = crate::case_rows(&text_run);
    assert_eq!(text_rows.len(), 24);
    assert_eq!(text_rows[0].facts, rows[0].facts);
}

#[test]
fn users_jsonl_and_csv_keep_reference_and_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("mine.jsonl");
    let line = serde_json::json!({
        "case_id": "u1",
        "pathology": "Invasive ductal carcinoma of the right breast.",
        "biomarkers": "ER-neg, PR-neg, HER2 3+",
        "staging": "Stage IIIA",
        "surgery": "s/p mastectomy",
        "consensus": [{"text": "adjuvant trastuzumab", "weight": 1.0}, {"text": "cardiac monitoring", "weight": 0.3}],
        "facts": [{"kind": "biomarker", "name": "HER2", "value": "positive"}],
        "hospital": "St Elsewhere",
    });
    std::fs::write(&jsonl, format!("{line}\n")).unwrap();
    let csv = dir.path().join("mine.csv");
    std::fs::write(
        &csv,
        "id,text,consensus,diagnosis,ward\nc1,\"Colon cancer stage III, MSS; s/p right hemicolectomy\",adjuvant FOLFOX: 1.0; surveillance: 0.2,colon adenocarcinoma,B2\n",
    )
    .unwrap();
    let run_dir = dir.path().join("run");
    let report = run(&Config::default(), &[jsonl, csv], &run_dir).unwrap();
    assert_eq!(
        (report.cases, report.quarantined),
        (2, 0),
        "{:?}",
        report.quarantine_reasons
    );
    let rows = crate::case_rows(&run_dir);
    let json_row = &rows[0];
    assert_eq!(json_row.source_format, "jsonl");
    let names: Vec<&str> = json_row
        .sections
        .iter()
        .map(|section| section.name.as_str())
        .collect();
    assert_eq!(names, vec!["pathology", "biomarkers", "staging", "surgery"]);
    assert_eq!(json_row.reference.consensus[1].weight, 0.3);
    assert_eq!(json_row.reference.facts[0].origin, "reference");
    assert_eq!(json_row.extra[0].key, "hospital");
    let her2 = json_row.facts.iter().find(|fact| fact.name == "HER2").unwrap();
    assert_eq!(
        (her2.value.as_str(), her2.section.as_str()),
        ("positive", "biomarkers")
    );
    let surgery = json_row.facts.iter().find(|fact| fact.kind == "surgery").unwrap();
    assert_eq!(
        (surgery.value.as_str(), surgery.name.as_str()),
        ("resected", "mastectomy")
    );
    let csv_row = &rows[1];
    assert_eq!(
        (csv_row.source_format.as_str(), csv_row.source_line),
        ("csv", Some(2))
    );
    assert_eq!(csv_row.reference.consensus.len(), 2);
    assert_eq!(
        csv_row.reference.diagnosis.as_deref(),
        Some("colon adenocarcinoma")
    );
    assert_eq!(csv_row.extra[0].key, "ward");
    let msi = csv_row.facts.iter().find(|fact| fact.name == "MSI").unwrap();
    assert_eq!(msi.value, "negative");
}

/// A stand-in for an LLM-assisted pass: one fact with a correct span, one
/// with a wrong one.
struct Quoting;

impl FactSource for Quoting {
    fn origin(&self) -> &str {
        "llm"
    }

    fn facts(&self, source_text: &str, _sections: &[Section]) -> Result<Vec<Fact>, String> {
        let quote = "ECOG 1";
        let (start, end) = locate_span(source_text, quote).ok_or("quote not found")?;
        let fact = |start: usize, end: usize, span_text: &str| Fact {
            kind: "intent".into(),
            name: "intent".into(),
            value: "palliative".into(),
            polarity: "affirmed".into(),
            certainty: "uncertain".into(),
            detail: None,
            section: String::new(),
            span_start: start as u64,
            span_end: end as u64,
            span_text: span_text.into(),
            origin: String::new(),
        };
        Ok(vec![fact(start, end, quote), fact(start + 1, end + 1, quote)])
    }
}

#[test]
fn extra_fact_sources_go_through_span_verification() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.txt");
    std::fs::write(&path, "Patient: 70M, ECOG 1.\nStaging: stage IV NSCLC.\n").unwrap();
    let report = run_with_sources(&Config::default(), &[path], &dir.path().join("run"), &[&Quoting]).unwrap();
    assert_eq!(report.span_failures, 1);
    let rows = crate::case_rows(&dir.path().join("run"));
    let llm: Vec<&Fact> = rows[0].facts.iter().filter(|fact| fact.origin == "llm").collect();
    assert_eq!(llm.len(), 1);
    assert_eq!(
        (llm[0].span_text.as_str(), llm[0].section.as_str()),
        ("ECOG 1", "demographics")
    );
}
