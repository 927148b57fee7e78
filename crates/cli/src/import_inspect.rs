//! Inspect AI logs as rows of `cfeval import responses`: the samples' final
//! answers of an `.eval` log (Inspect's zip format) or a `.json` log (its
//! older single-document format), so transcripts made with Inspect are
//! judged and aggregated like `cfeval infer`'s.
//!
//! A sample becomes the row fields `import_cmd` checks:
//! - `variant_id` from the sample's `metadata.variant_id`, else
//!   `metadata.case_id` + `metadata.intervention`, else the sample `id`;
//! - `subject` the log's `eval.model` (Inspect's `provider/model`, as
//!   cfeval names subjects), unless `--subject` is given;
//! - `mode` from `metadata.mode` (default single-shot); `sample` = epoch − 1;
//! - `text` the output's `completion`, else the last assistant message's
//!   text; `finish_reason` from the first choice's `stop_reason`
//!   (`max_tokens` and `model_length` are `length`); tokens from
//!   `output.usage`; `latency_ms` from `total_time`;
//! - a sample that ended in an error keeps it as `error` (an error row,
//!   never a judged answer).
//!
//! A sample entry that is not JSON, or a sample without an id, is a problem
//! of its own (quarantined with the entry's name); a file that is not an
//! Inspect log at all is refused whole.

use std::io::Read;
use std::path::Path;

use anyhow::Context;
use serde_json::{Map, Value};

use crate::import_cmd::{ReadRows, Row};

/// The rows of an Inspect log, `Err((position, reason))` for a sample that
/// cannot be read; `None` when `path` is not one (neither an `.eval` file
/// nor a `.json` document with `eval` and `samples`: a JSONL file).
pub fn read_rows(path: &Path, subject_given: bool) -> anyhow::Result<Option<ReadRows>> {
    let extension = path
        .extension()
        .map(|extension| extension.to_string_lossy().to_ascii_lowercase());
    let (model, samples) = match extension.as_deref() {
        Some("eval") => read_eval(path)?,
        Some("json") => match read_json(path)? {
            Some(log) => log,
            None => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(
        samples
            .into_iter()
            .enumerate()
            .map(|(index, (origin, sample))| {
                let position = index as u64 + 1;
                let sample = sample.map_err(|reason| (position, format!("{origin}: {reason}")))?;
                to_row(&sample, model.as_deref(), subject_given)
                    .map(|fields| Row {
                        line: position,
                        fields,
                        origin: Some(origin.clone()),
                    })
                    .map_err(|reason| (position, format!("{origin}: {reason}")))
            })
            .collect(),
    ))
}

type Samples = Vec<(String, Result<Value, String>)>;

/// An `.eval` zip: the model from `header.json` (or `_journal/start.json`
/// of a log still being written), the samples in entry-name order, a
/// re-logged sample's last entry winning as in Inspect's reader.
fn read_eval(path: &Path) -> anyhow::Result<(Option<String>, Samples)> {
    let file = fs_err::File::open(path)?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).with_context(|| {
        format!(
            "{} is not an Inspect .eval log (not a zip archive)",
            path.display()
        )
    })?;
    let mut names: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for index in 0..zip.len() {
        let entry = zip
            .by_index(index)
            .with_context(|| format!("{}: zip entry {index} cannot be read", path.display()))?;
        let name = entry
            .name()
            .with_context(|| format!("{}: zip entry {index} has no readable name", path.display()))?
            .to_string();
        names.insert(name, index);
    }
    let mut member = |name: &str| -> Result<Value, String> {
        let index = names[name];
        let mut entry = zip.by_index(index).map_err(|error| error.to_string())?;
        let mut text = String::new();
        entry
            .read_to_string(&mut text)
            .map_err(|error| format!("cannot be read: {error}"))?;
        serde_json::from_str(&text).map_err(|error| format!("not JSON: {error}"))
    };
    let header = ["header.json", "_journal/start.json"]
        .into_iter()
        .find(|name| names.contains_key(*name))
        .with_context(|| {
            format!(
                "{} is not an Inspect .eval log: it has neither header.json nor _journal/start.json",
                path.display()
            )
        })?;
    let header = member(header).map_err(|reason| anyhow::anyhow!("{}: {header} {reason}", path.display()))?;
    let model = model_of(&header);
    let sample_names: Vec<String> = names
        .keys()
        .filter(|name| name.starts_with("samples/") && name.ends_with(".json"))
        .cloned()
        .collect();
    let samples = sample_names
        .into_iter()
        .map(|name| {
            let sample = member(&name);
            (name, sample)
        })
        .collect();
    Ok((model, samples))
}

/// A `.json` log: one document with `eval` and `samples`; `None` for any
/// other `.json` file (read as JSONL by the caller).
fn read_json(path: &Path) -> anyhow::Result<Option<(Option<String>, Samples)>> {
    let text = fs_err::read_to_string(path)?;
    let Ok(document) = serde_json::from_str::<Value>(&text) else {
        return Ok(None);
    };
    let (Some(samples), Some(_)) = (
        document.get("samples").and_then(Value::as_array),
        document.get("eval"),
    ) else {
        return Ok(None);
    };
    let model = model_of(&document);
    Ok(Some((
        model,
        samples
            .iter()
            .enumerate()
            .map(|(index, sample)| (format!("samples[{index}]"), Ok(sample.clone())))
            .collect(),
    )))
}

fn model_of(header: &Value) -> Option<String> {
    header
        .pointer("/eval/model")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The text of a message's `content`: a string, or the `text` parts of a
/// list of content parts.
fn content_text(content: &Value) -> Option<String> {
    match content {
        Value::String(text) => Some(text.clone()),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        }
        _ => None,
    }
}

/// The final answer: the output's completion, else the last assistant
/// message with text.
fn answer_of(sample: &Value) -> Option<String> {
    let completion = sample
        .pointer("/output/completion")
        .and_then(Value::as_str)
        .filter(|text| !text.trim().is_empty());
    if let Some(text) = completion {
        return Some(text.to_string());
    }
    let from_choice = sample
        .pointer("/output/choices/0/message/content")
        .and_then(content_text)
        .filter(|text| !text.trim().is_empty());
    if from_choice.is_some() {
        return from_choice;
    }
    sample
        .get("messages")
        .and_then(Value::as_array)?
        .iter()
        .rev()
        .filter(|message| message.get("role").and_then(Value::as_str) == Some("assistant"))
        .find_map(|message| {
            message
                .get("content")
                .and_then(content_text)
                .filter(|text| !text.trim().is_empty())
        })
}

/// Inspect's stop reason as cfeval's finish reason.
fn finish_reason(stop_reason: &str) -> Option<&'static str> {
    match stop_reason {
        "stop" => Some("stop"),
        "max_tokens" | "model_length" => Some("length"),
        "tool_calls" => Some("tool_calls"),
        "content_filter" => Some("content_filter"),
        _ => None,
    }
}

/// The import row fields of one sample.
fn to_row(sample: &Value, model: Option<&str>, subject_given: bool) -> Result<Map<String, Value>, String> {
    let Some(object) = sample.as_object() else {
        return Err("the sample is not a JSON object".into());
    };
    let metadata = object.get("metadata").and_then(Value::as_object);
    let meta = |key: &str| {
        metadata
            .and_then(|metadata| metadata.get(key))
            .filter(|value| !value.is_null())
    };
    let mut fields = Map::new();
    match (meta("variant_id"), meta("case_id"), meta("intervention")) {
        (Some(variant), _, _) => {
            fields.insert("variant_id".into(), variant.clone());
        }
        (None, Some(case), Some(intervention)) => {
            fields.insert("case_id".into(), case.clone());
            fields.insert("intervention".into(), intervention.clone());
        }
        _ => match object.get("id") {
            Some(Value::String(id)) => {
                fields.insert("variant_id".into(), Value::String(id.clone()));
            }
            Some(Value::Number(id)) => {
                fields.insert("variant_id".into(), Value::String(id.to_string()));
            }
            _ => return Err("the sample has no `id` and no `metadata.variant_id`".into()),
        },
    }
    if !subject_given && let Some(model) = model {
        fields.insert("subject".into(), Value::String(model.to_string()));
    }
    if let Some(mode) = meta("mode") {
        fields.insert("mode".into(), mode.clone());
    }
    match object.get("epoch") {
        None | Some(Value::Null) => {}
        Some(Value::Number(epoch)) => match epoch.as_u64() {
            Some(epoch) if epoch >= 1 => {
                fields.insert("sample".into(), Value::from(epoch - 1));
            }
            _ => return Err(format!("`epoch` is {epoch}, not a whole number ≥ 1")),
        },
        Some(other) => return Err(format!("`epoch` is {other}, not a number")),
    }
    if let Some(text) = answer_of(sample) {
        fields.insert("text".into(), Value::String(text));
    }
    if let Some(reason) = sample
        .pointer("/output/choices/0/stop_reason")
        .and_then(Value::as_str)
        .and_then(finish_reason)
    {
        fields.insert("finish_reason".into(), Value::String(reason.into()));
    }
    for (field, pointer) in [
        ("input_tokens", "/output/usage/input_tokens"),
        ("output_tokens", "/output/usage/output_tokens"),
    ] {
        if let Some(value) = sample.pointer(pointer).filter(|value| !value.is_null()) {
            fields.insert(field.into(), value.clone());
        }
    }
    if let Some(seconds) = object.get("total_time").and_then(Value::as_f64)
        && seconds.is_finite()
        && seconds >= 0.0
    {
        fields.insert(
            "latency_ms".into(),
            Value::from((seconds * 1000.0).round() as u64),
        );
    }
    if let Some(error) = object.get("error").filter(|error| !error.is_null()) {
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| error.to_string(), str::to_string);
        fields.insert("error".into(), Value::String(message));
    }
    Ok(fields)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_sample_names_its_variant_by_metadata_or_id() {
        let by_meta = to_row(
            &json!({"id": 7, "metadata": {"variant_id": "v1"}}),
            Some("m/x"),
            false,
        )
        .unwrap();
        assert_eq!(by_meta["variant_id"], "v1");
        assert_eq!(by_meta["subject"], "m/x");
        let by_case = to_row(
            &json!({"id": 7, "metadata": {"case_id": "c1", "intervention": "D1"}}),
            None,
            false,
        )
        .unwrap();
        assert_eq!(
            (by_case["case_id"].as_str(), by_case["intervention"].as_str()),
            (Some("c1"), Some("D1"))
        );
        let by_id = to_row(&json!({"id": 7}), Some("m/x"), true).unwrap();
        assert_eq!(by_id["variant_id"], "7");
        assert!(
            !by_id.contains_key("subject"),
            "--subject wins over the log's model"
        );
        assert!(to_row(&json!({"metadata": {}}), None, false).is_err());
    }

    #[test]
    fn the_answer_is_the_completion_else_the_last_assistant_text() {
        let completion = json!({"output": {"completion": "Plan: X"}, "messages": [{"role": "assistant", "content": "old"}]});
        assert_eq!(answer_of(&completion).as_deref(), Some("Plan: X"));
        let parts = json!({"output": {"completion": ""}, "messages": [
            {"role": "assistant", "content": "first"},
            {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "…"}, {"type": "text", "text": "second"}]},
            {"role": "user", "content": "thanks"}
        ]});
        assert_eq!(answer_of(&parts).as_deref(), Some("second"));
        assert_eq!(answer_of(&json!({"output": {}})), None);
    }

    #[test]
    fn epochs_stop_reasons_tokens_time_and_errors_carry_over() {
        let row = to_row(
            &json!({
                "id": "v1", "epoch": 3, "total_time": 1.2345,
                "output": {"completion": "x", "choices": [{"stop_reason": "model_length"}],
                           "usage": {"input_tokens": 10, "output_tokens": 5}},
                "error": {"message": "boom", "traceback": ""}
            }),
            None,
            false,
        )
        .unwrap();
        assert_eq!(row["sample"], 2);
        assert_eq!(row["finish_reason"], "length");
        assert_eq!(
            (row["input_tokens"].as_u64(), row["output_tokens"].as_u64()),
            (Some(10), Some(5))
        );
        assert_eq!(row["latency_ms"], 1235);
        assert_eq!(row["error"], "boom");
        assert!(to_row(&json!({"id": "v1", "epoch": 0}), None, false).is_err());
        assert!(to_row(&json!({"id": "v1", "epoch": "two"}), None, false).is_err());
    }
}
