//! All 107 AgentClinic OSCE cases convert with every field kept.

use std::path::PathBuf;

use cfeval_synthesize::{Config, InputFormat, run};
use serde_json::Value;

fn dataset() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/external/agentclinic_medqa.jsonl");
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "SKIPPED: AgentClinic data not found at {} (it is never copied into the repo)",
            path.display()
        );
        None
    }
}

fn leaves(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(fields) => fields.values().for_each(|child| leaves(child, out)),
        Value::Array(items) => items.iter().for_each(|child| leaves(child, out)),
        Value::String(text) => out.push(text.clone()),
        Value::Null => {}
        other => out.push(other.to_string()),
    }
}

#[test]
fn every_osce_case_converts_with_every_field_kept() {
    let Some(path) = dataset() else { return };
    let dir = tempfile::tempdir().unwrap();
    let report = run(&Config::default(), std::slice::from_ref(&path), dir.path()).unwrap();
    assert_eq!(report.cases, 107, "{report:?}");
    assert_eq!(report.quarantined, 0, "{:?}", report.quarantine_reasons);
    assert_eq!(report.span_failures, 0);
    assert_eq!(report.by_format.get("agentclinic"), Some(&107));
    let rows = crate::case_rows(dir.path());
    let source = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = source.lines().filter(|line| !line.trim().is_empty()).collect();
    assert_eq!(rows.len(), lines.len());
    for (row, line) in rows.iter().zip(&lines) {
        let value: Value = serde_json::from_str(line).unwrap();
        let osce = &value["OSCE_Examination"];
        let diagnosis = osce["Correct_Diagnosis"].as_str().unwrap();
        assert_eq!(row.reference.diagnosis.as_deref(), Some(diagnosis));
        let mut fields = Vec::new();
        for (key, child) in osce.as_object().unwrap() {
            if key != "Correct_Diagnosis" {
                leaves(child, &mut fields);
            }
        }
        // The diagnosis field never reaches what a subject sees: the
        // diagnosis text shows only where another field itself says it.
        assert!(
            !row.source_text.contains("Correct Diagnosis") && !row.source_text.contains("Correct_Diagnosis")
        );
        if row.source_text.contains(diagnosis) {
            assert!(
                fields.iter().any(|field| field.contains(diagnosis)),
                "{}: diagnosis leaked",
                row.source_id
            );
        }
        for field in fields {
            assert!(
                row.sections.iter().any(|section| section.text.contains(&field)),
                "{}: field value {field:?} is in no section",
                row.source_id
            );
        }
        for section in &row.sections {
            let (start, end) = (
                section.span_start.unwrap() as usize,
                section.span_end.unwrap() as usize,
            );
            assert_eq!(&row.source_text[start..end], section.text);
        }
        for fact in &row.facts {
            assert_eq!(
                &row.source_text[fact.span_start as usize..fact.span_end as usize],
                fact.span_text
            );
        }
        let names: Vec<&str> = row.sections.iter().map(|section| section.name.as_str()).collect();
        assert!(
            names.contains(&"question") && names.contains(&"demographics"),
            "{names:?}"
        );
    }
    // Negated findings are facts ("denies ... chest pain").
    let negated = rows
        .iter()
        .flat_map(|row| &row.facts)
        .filter(|fact| fact.kind == "finding" && fact.polarity == "negated")
        .count();
    assert!(negated > 10, "only {negated} negated findings");
    // The format is detected.
    let explicit = run(
        &Config {
            format: InputFormat::Agentclinic,
            ..Config::default()
        },
        &[path],
        &dir.path().join("explicit"),
    )
    .unwrap();
    assert_eq!(explicit.cases, 107);
}
