//! AgentClinic OSCE cases (one JSON object per line, `OSCE_Examination`):
//! every field is kept in a named section, except `Correct_Diagnosis`,
//! which goes to `reference.diagnosis` and never into the chart text, and
//! `Reference_Evidence` (or `Evidence`: curated exact substrings of the
//! case, as Med-Evidence annotates them), which goes to the reference's
//! evidence.

use std::path::Path;

use cfeval_schema::{KeyValue, Reference};
use serde_json::Value;

use super::{Body, RawCase};

/// Section name for an OSCE field path.
fn section_for(path: &[&str]) -> String {
    match path {
        ["Objective_for_Doctor"] => "question".into(),
        ["Patient_Actor", "Demographics"] => "demographics".into(),
        ["Patient_Actor", "History"] => "history".into(),
        ["Patient_Actor", "Past_Medical_History"] => "comorbidities".into(),
        ["Patient_Actor", "Social_History"] => "social".into(),
        ["Patient_Actor", rest] => snake(rest),
        ["Physical_Examination_Findings", ..] => "physical_examination".into(),
        ["Test_Results", child, ..] if child.to_ascii_lowercase().contains("imaging") => "imaging".into(),
        ["Test_Results", ..] => "labs".into(),
        [first, ..] => snake(first),
        [] => "history".into(),
    }
}

fn snake(key: &str) -> String {
    key.to_ascii_lowercase().replace([' ', '-'], "_")
}

fn label(key: &str) -> String {
    key.replace('_', " ")
}

/// Flattens a JSON value into `Label: value` lines under a section.
fn render(value: &Value, prefix: &str, lines: &mut Vec<String>) {
    match value {
        Value::Object(fields) => {
            for (key, child) in fields {
                let name = if prefix.is_empty() {
                    label(key)
                } else {
                    format!("{prefix} - {}", label(key))
                };
                render(child, &name, lines);
            }
        }
        Value::Array(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|item| match item {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                })
                .collect();
            lines.push(format!("{prefix}: {}", parts.join("; ")));
        }
        Value::String(text) => lines.push(format!("{prefix}: {text}")),
        Value::Null => lines.push(format!("{prefix}: (none)")),
        other => lines.push(format!("{prefix}: {other}")),
    }
}

/// A case from one AgentClinic line.
pub fn case_from_line(line: &str, path: &Path, number: u64) -> Result<RawCase, String> {
    let mut top = super::fields::object_of_line(line, number)?;
    let Some(Value::Object(osce)) = top.remove("OSCE_Examination") else {
        return Err(format!(
            "line {number}: no `OSCE_Examination` object (is this an AgentClinic OSCE file?)"
        ));
    };
    for (key, value) in &osce {
        let expected = match key.as_str() {
            "Patient_Actor" | "Physical_Examination_Findings" | "Test_Results" => "an object",
            "Objective_for_Doctor" | "Correct_Diagnosis" => "a string",
            _ => continue,
        };
        let fits = match expected {
            "an object" => value.is_object(),
            _ => value.is_string(),
        };
        if !fits {
            return Err(format!(
                "line {number}: field `OSCE_Examination.{key}` is {}, not {expected}",
                super::fields::described(value)
            ));
        }
    }
    let mut reference = Reference::default();
    let mut sections: Vec<(String, String, String)> = Vec::new();
    let mut push = |name: String, lines: Vec<String>| {
        if lines.is_empty() {
            return;
        }
        let text = lines.join("\n");
        match sections.iter_mut().find(|(existing, _, _)| *existing == name) {
            Some((_, _, existing)) => {
                existing.push('\n');
                existing.push_str(&text);
            }
            None => sections.push((name.clone(), label_for(&name), text)),
        }
    };
    for (key, value) in &osce {
        match (key.as_str(), value) {
            ("Correct_Diagnosis", value) => {
                reference.diagnosis = Some(match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                });
            }
            // Curated reference evidence (exact substrings of the case),
            // which no subject sees.
            ("Reference_Evidence" | "Evidence", value) => {
                let spans = super::fields::evidence(value)
                    .map_err(|why| format!("line {number}: field `OSCE_Examination.{key}`: {why}"))?;
                reference.facts.extend(spans);
            }
            ("Patient_Actor" | "Test_Results", Value::Object(children)) => {
                for (child, child_value) in children {
                    let mut lines = Vec::new();
                    render_child(child, child_value, &mut lines);
                    push(section_for(&[key, child]), lines);
                }
            }
            (_, value) => {
                let mut lines = Vec::new();
                match value {
                    Value::Object(children) => render(&Value::Object(children.clone()), "", &mut lines),
                    other => render(other, &label(key), &mut lines),
                }
                push(section_for(&[key]), lines);
            }
        }
    }
    if sections.iter().all(|(_, _, text)| text.trim().is_empty()) {
        return Err(format!(
            "line {number}: `OSCE_Examination` holds no case text (no field besides `Correct_Diagnosis`)"
        ));
    }
    let source_id = osce
        .get("Objective_for_Doctor")
        .map(|_| format!("agentclinic-{number}"))
        .unwrap_or_else(|| format!("line-{number}"));
    let extra = top
        .into_iter()
        .map(|(key, value)| KeyValue {
            key,
            value: value.to_string(),
        })
        .collect();
    Ok(RawCase {
        source_id,
        source_format: "agentclinic",
        source_path: path.display().to_string(),
        source_line: Some(number),
        id_given: false,
        body: Body::Sections(sections),
        reference,
        extra,
    })
}

fn render_child(key: &str, value: &Value, lines: &mut Vec<String>) {
    render(value, &label(key), lines);
}

fn label_for(name: &str) -> String {
    let mut label = name.replace('_', " ");
    if let Some(first) = label.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnosis_goes_to_reference_only() {
        let line = r#"{"OSCE_Examination":{"Objective_for_Doctor":"Diagnose.","Patient_Actor":{"Demographics":"40-year-old man","Symptoms":{"Primary_Symptom":"cough","Secondary_Symptoms":["fever","night sweats"]}},"Test_Results":{"Imaging":{"Chest_X-Ray":"cavity"},"Blood":{"WBC":12}},"Correct_Diagnosis":"Tuberculosis"}}"#;
        let case = case_from_line(line, Path::new("a.jsonl"), 1).unwrap();
        assert_eq!(case.reference.diagnosis.as_deref(), Some("Tuberculosis"));
        assert!(case.reference.facts.is_empty());
        let Body::Sections(sections) = &case.body else {
            panic!("sections expected")
        };
        let names: Vec<&str> = sections.iter().map(|(name, _, _)| name.as_str()).collect();
        // serde_json objects iterate in key order.
        assert_eq!(
            names,
            vec!["question", "demographics", "symptoms", "labs", "imaging"]
        );
        assert!(sections.iter().all(|(_, _, text)| !text.contains("Tuberculosis")));
        assert!(sections[2].2.contains("fever; night sweats"));
        assert!(sections[3].2.contains("12"));
    }

    #[test]
    fn curated_evidence_goes_to_the_reference_only() {
        let line = r#"{"OSCE_Examination":{"Patient_Actor":{"Symptoms":{"Primary_Symptom":"cough"}},"Test_Results":{"Imaging":{"Chest_X-Ray":"cavity"}},"Reference_Evidence":["cavity"],"Correct_Diagnosis":"Tuberculosis"}}"#;
        let case = case_from_line(line, Path::new("a.jsonl"), 1).unwrap();
        let spans: Vec<&str> = case
            .reference
            .facts
            .iter()
            .map(|fact| fact.span_text.as_str())
            .collect();
        assert_eq!(spans, ["cavity"]);
        let Body::Sections(sections) = &case.body else {
            panic!("sections expected")
        };
        assert!(sections.iter().all(|(name, _, _)| !name.contains("evidence")));
        let bad = r#"{"OSCE_Examination":{"Test_Results":{"Imaging":"cavity"},"Evidence":[3],"Correct_Diagnosis":"Tuberculosis"}}"#;
        let error = case_from_line(bad, Path::new("a.jsonl"), 7).unwrap_err();
        assert!(
            error.starts_with("line 7: field `OSCE_Examination.Evidence`"),
            "{error}"
        );
    }
}
