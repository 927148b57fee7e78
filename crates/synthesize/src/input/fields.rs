//! Cases from records with named fields (JSON objects, CSV rows): the text
//! or per-section columns, the reference (consensus items, facts,
//! diagnosis, rules) and every other field kept in `extra`.

use std::path::Path;

use cfeval_schema::{ConsensusItem, Fact, KeyValue, Reference};
use serde_json::{Map, Value};

use super::{Body, RawCase};

/// Section columns cfeval knows, in chart order, with their header label.
pub const SECTION_COLUMNS: [(&str, &str); 12] = [
    ("demographics", "Demographics"),
    ("history", "History"),
    ("pathology", "Pathology"),
    ("biomarkers", "Biomarkers"),
    ("staging", "Staging"),
    ("surgery", "Surgery"),
    ("treatment_history", "Treatment history"),
    ("imaging", "Imaging"),
    ("labs", "Labs"),
    ("comorbidities", "Comorbidities"),
    ("social", "Social history"),
    ("question", "Question"),
];

const ID_KEYS: [&str; 3] = ["id", "case_id", "source_id"];
const TEXT_KEYS: [&str; 5] = ["text", "narrative", "note", "case_text", "source_text"];

fn normalise_key(key: &str) -> String {
    key.trim().to_ascii_lowercase().replace([' ', '-'], "_")
}

/// A case from one JSON line.
pub fn case_from_object(
    line: &str,
    format: &'static str,
    path: &Path,
    number: u64,
) -> Result<RawCase, String> {
    case_from_map(object_of_line(line, number)?, format, path, number)
}

/// The JSON object a line holds, or why it holds none.
pub(super) fn object_of_line(line: &str, number: u64) -> Result<serde_json::Map<String, Value>, String> {
    let value: Value =
        serde_json::from_str(line).map_err(|error| format!("line {number}: malformed JSON: {error}"))?;
    match value {
        Value::Object(object) => Ok(object),
        other => Err(format!(
            "line {number}: expected a JSON object, found {}",
            kind_of(&other)
        )),
    }
}

/// A value's kind and a short view of it, for a message: `null`, `a
/// number (12345)`, `an array (["a","b"])`.
pub(super) fn described(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        other => {
            let mut shown = other.to_string();
            if shown.len() > 40 {
                let mut cut = 40;
                while !shown.is_char_boundary(cut) {
                    cut -= 1;
                }
                shown.truncate(cut);
                shown.push('…');
            }
            format!("{} ({shown})", kind_of(other))
        }
    }
}

pub(super) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A case from named fields.
pub fn case_from_map(
    object: Map<String, Value>,
    format: &'static str,
    path: &Path,
    number: u64,
) -> Result<RawCase, String> {
    let mut source_id = None;
    let mut text: Option<String> = None;
    let mut sections: Vec<(usize, String)> = Vec::new();
    let mut reference = Reference::default();
    let mut extra = Vec::new();
    for (key, value) in object {
        let normalised = normalise_key(&key);
        if ID_KEYS.contains(&normalised.as_str()) && source_id.is_none() {
            source_id = Some(match &value {
                Value::String(text) if !text.trim().is_empty() => text.clone(),
                Value::Number(number) if number.is_u64() || number.is_i64() => number.to_string(),
                other => {
                    return Err(format!(
                        "line {number}: field `{key}` is {}; a case id must be a non-empty string or a whole number",
                        described(other)
                    ));
                }
            });
        } else if TEXT_KEYS.contains(&normalised.as_str()) && text.is_none() {
            text = Some(match &value {
                Value::String(content) => content.clone(),
                other => {
                    return Err(format!(
                        "line {number}: field `{key}` is {}; the case text must be a string",
                        described(other)
                    ));
                }
            });
        } else if let Some(position) = SECTION_COLUMNS.iter().position(|(name, _)| *name == normalised) {
            let content = match &value {
                Value::String(content) => content.clone(),
                Value::Null => String::new(),
                other => {
                    return Err(format!(
                        "line {number}: field `{key}` is {}; a section's text must be a string (or null)",
                        described(other)
                    ));
                }
            };
            if !content.trim().is_empty() {
                sections.push((position, content));
            }
        } else {
            match normalised.as_str() {
                "consensus" | "expert_consensus" | "consensus_items" => {
                    reference.consensus =
                        consensus(&value).map_err(|why| format!("line {number}: field `{key}`: {why}"))?;
                }
                "facts" | "reference_facts" => {
                    let given =
                        facts(&value).map_err(|why| format!("line {number}: field `{key}`: {why}"))?;
                    reference.facts.extend(given);
                }
                "evidence" | "reference_evidence" | "evidence_spans" => {
                    let given =
                        evidence(&value).map_err(|why| format!("line {number}: field `{key}`: {why}"))?;
                    reference.facts.extend(given);
                }
                "diagnosis" | "correct_diagnosis" => {
                    reference.diagnosis = match &value {
                        Value::String(diagnosis) => Some(diagnosis.clone()),
                        Value::Null => None,
                        other => {
                            return Err(format!(
                                "line {number}: field `{key}` is {}; a diagnosis must be a string",
                                described(other)
                            ));
                        }
                    };
                }
                "rules" => {
                    reference.rules = match &value {
                        Value::Array(items) => items
                            .iter()
                            .map(|item| match item {
                                Value::String(rule) => Ok(rule.clone()),
                                other => Err(format!(
                                    "line {number}: field `{key}` holds {}; each rule must be a string",
                                    described(other)
                                )),
                            })
                            .collect::<Result<_, _>>()?,
                        Value::String(_) | Value::Null => as_text(&value)
                            .split(';')
                            .map(|rule| rule.trim().to_string())
                            .filter(|rule| !rule.is_empty())
                            .collect(),
                        other => {
                            return Err(format!(
                                "line {number}: field `{key}` is {}; rules must be a list of strings or one `;`-separated string",
                                described(other)
                            ));
                        }
                    };
                }
                _ => extra.push(KeyValue {
                    key,
                    value: value.to_string(),
                }),
            }
        }
    }
    let body = match (text, sections.is_empty()) {
        (Some(text), true) if text.trim().is_empty() => {
            return Err(format!(
                "line {number}: the case text is empty (and the record has no section field)"
            ));
        }
        (Some(text), true) => Body::Text(text),
        (text, false) => {
            sections.sort_by_key(|(position, _)| *position);
            let mut named: Vec<(String, String, String)> = Vec::new();
            if let Some(text) = text.filter(|text| !text.trim().is_empty()) {
                named.push(("history".into(), "Narrative".into(), text));
            }
            named.extend(sections.into_iter().map(|(position, content)| {
                let (name, label) = SECTION_COLUMNS[position];
                (name.to_string(), label.to_string(), content)
            }));
            Body::Sections(named)
        }
        (None, true) => {
            let known: Vec<&str> = TEXT_KEYS
                .iter()
                .copied()
                .chain(SECTION_COLUMNS.iter().map(|(name, _)| *name))
                .collect();
            return Err(format!(
                "line {number}: no case text: the record needs a `text` field or a section field ({})",
                known.join(", ")
            ));
        }
    };
    Ok(RawCase {
        id_given: source_id.is_some(),
        source_id: source_id.unwrap_or_else(|| format!("line-{number}")),
        source_format: format,
        source_path: path.display().to_string(),
        source_line: Some(number),
        body,
        reference,
        extra,
    })
}

fn as_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Consensus items: `[{"text", "weight"}]`, `["item", …]` (weight 1), a
/// JSON string holding either, or `"item: 0.3; other: 1.0"`.
pub fn consensus(value: &Value) -> Result<Vec<ConsensusItem>, String> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(text) => Ok(ConsensusItem {
                    text: text.clone(),
                    weight: 1.0,
                }),
                Value::Object(fields) => {
                    let text = fields
                        .get("text")
                        .and_then(Value::as_str)
                        .ok_or_else(|| "a consensus item needs a `text` string".to_string())?;
                    let weight = match fields.get("weight") {
                        None => 1.0,
                        Some(weight) => weight
                            .as_f64()
                            .ok_or_else(|| format!("weight of `{text}` is not a number"))?,
                    };
                    check_weight(text, weight)?;
                    Ok(ConsensusItem {
                        text: text.to_string(),
                        weight,
                    })
                }
                other => Err(format!(
                    "a consensus item is {}, not a string or object",
                    kind_of(other)
                )),
            })
            .collect(),
        Value::String(text) if text.trim_start().starts_with('[') => {
            let parsed: Value = serde_json::from_str(text)
                .map_err(|error| format!("consensus is not valid JSON: {error}"))?;
            consensus(&parsed)
        }
        Value::String(text) => text
            .split(';')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(|item| match item.rsplit_once(':') {
                Some((text, weight)) if weight.trim().parse::<f64>().is_ok() => {
                    let weight = weight.trim().parse::<f64>().unwrap_or(1.0);
                    check_weight(text, weight)?;
                    Ok(ConsensusItem {
                        text: text.trim().to_string(),
                        weight,
                    })
                }
                _ => Ok(ConsensusItem {
                    text: item.to_string(),
                    weight: 1.0,
                }),
            })
            .collect(),
        other => Err(format!("consensus is {}, not a list", kind_of(other))),
    }
}

fn check_weight(text: &str, weight: f64) -> Result<(), String> {
    if weight.is_finite() && weight > 0.0 {
        Ok(())
    } else {
        Err(format!("weight {weight} of `{text}` must be a positive number"))
    }
}

/// Curated reference evidence: a list of exact substrings of the case's
/// text (or one string), kept as bare `evidence` facts that E-Synthesis
/// locates in the text.
pub fn evidence(value: &Value) -> Result<Vec<Fact>, String> {
    let spans: Vec<String> = match value {
        Value::Null => return Ok(Vec::new()),
        Value::String(span) => vec![span.clone()],
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                Value::String(span) if !span.trim().is_empty() => Ok(span.clone()),
                other => Err(format!(
                    "evidence span {} is {}; each must be a non-empty string (an exact substring of the case's text)",
                    index + 1,
                    kind_of(other)
                )),
            })
            .collect::<Result<_, _>>()?,
        other => return Err(format!("evidence is {}, not a list of strings", kind_of(other))),
    };
    Ok(spans
        .into_iter()
        .map(|span| Fact {
            detail: Some("curated".into()),
            // Located in the text at E-Synthesis.
            span_end: 0,
            ..Fact::spanned("evidence", "curated", "", "", 0, &span, "reference")
        })
        .collect())
}

/// Reference facts: objects with at least `kind`, `name`, `value`.
pub fn facts(value: &Value) -> Result<Vec<Fact>, String> {
    let items = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items.clone(),
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Array(items)) => items,
            _ => return Err("facts must be a JSON list of objects".into()),
        },
        other => return Err(format!("facts is {}, not a list", kind_of(other))),
    };
    items
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let field = |name: &str| item.get(name).and_then(Value::as_str).map(str::to_string);
            let required =
                |name: &str| field(name).ok_or_else(|| format!("fact {} has no `{name}`", index + 1));
            Ok(Fact {
                kind: required("kind")?,
                name: required("name")?,
                value: required("value")?,
                polarity: field("polarity").unwrap_or_else(|| "affirmed".into()),
                certainty: field("certainty").unwrap_or_else(|| "certain".into()),
                detail: field("detail"),
                section: field("section").unwrap_or_default(),
                span_start: item.get("span_start").and_then(Value::as_u64).unwrap_or(0),
                span_end: item.get("span_end").and_then(Value::as_u64).unwrap_or(0),
                span_text: field("span_text").unwrap_or_default(),
                origin: "reference".into(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_split_into_body_reference_and_extra() {
        let line = r#"{"id":"p1","pathology":"IDC","biomarkers":"HER2+","consensus":[{"text":"TCHP","weight":1.0}],"diagnosis":"breast cancer","site":"clinic A"}"#;
        let case = case_from_object(line, "jsonl", Path::new("x.jsonl"), 3).unwrap();
        assert_eq!(case.source_id, "p1");
        assert!(matches!(&case.body, Body::Sections(sections) if sections.len() == 2));
        assert_eq!(case.reference.consensus[0].text, "TCHP");
        assert_eq!(case.reference.diagnosis.as_deref(), Some("breast cancer"));
        assert_eq!(
            case.extra,
            vec![KeyValue {
                key: "site".into(),
                value: "\"clinic A\"".into()
            }]
        );
    }

    #[test]
    fn consensus_forms() {
        let items = consensus(&Value::String("osimertinib: 1.0; cardiac monitoring:0.3".into())).unwrap();
        assert_eq!(items[1].weight, 0.3);
        assert!(consensus(&serde_json::json!([{"text": "x", "weight": -1}])).is_err());
        assert_eq!(consensus(&serde_json::json!(["a", "b"])).unwrap().len(), 2);
    }

    #[test]
    fn errors_name_the_line() {
        let error = case_from_object("{\"id\": 1,", "jsonl", Path::new("x"), 7).unwrap_err();
        assert!(error.starts_with("line 7: malformed JSON"), "{error}");
        let error = case_from_object("{\"id\": 1}", "jsonl", Path::new("x"), 8).unwrap_err();
        assert!(error.contains("line 8") && error.contains("`text`"), "{error}");
    }
}
