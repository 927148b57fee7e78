//! OpenAI's strict structured outputs take a subset of JSON Schema and
//! refuse a request whose schema uses anything else (`'maxLength' is not
//! permitted`). cfeval's schemas bound their strings (`maxLength`) so that a
//! small model under a grammar cannot loop inside one until its tokens run
//! out; servers that decode with a grammar (vLLM, llama.cpp, the embedded
//! model) keep those bounds. For OpenAI's own API [`subset`] moves every
//! keyword outside the subset into the schema's `description`, in words
//! ("at most 80 characters"), so the request is accepted and the model is
//! still told the bound. Nothing is dropped.

use serde_json::{Map, Value};

/// The keywords of a schema object OpenAI's strict mode accepts (its
/// "Supported schemas": types, objects, arrays, enums, `anyOf`,
/// definitions, and the constraints it lists for strings, numbers and
/// arrays).
const SUPPORTED: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$defs",
    "definitions",
    "$ref",
    "description",
    "title",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
];

/// Keywords whose values are maps from names to schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions"];

/// Keywords whose values are a schema or a list of schemas.
const SCHEMA_VALUES: &[&str] = &["items", "anyOf", "additionalProperties"];

/// `schema` with every keyword outside OpenAI's strict subset moved into
/// the `description` of the schema object that held it.
pub fn subset(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(subset_object(map)),
        other => other.clone(),
    }
}

fn subset_object(map: &Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    let mut moved = Vec::new();
    for (key, value) in map {
        if SCHEMA_MAPS.contains(&key.as_str()) {
            let children = match value {
                Value::Object(children) => Value::Object(
                    children
                        .iter()
                        .map(|(name, child)| (name.clone(), subset(child)))
                        .collect(),
                ),
                other => other.clone(),
            };
            out.insert(key.clone(), children);
        } else if SCHEMA_VALUES.contains(&key.as_str()) {
            let child = match value {
                Value::Array(items) => Value::Array(items.iter().map(subset).collect()),
                other => subset(other),
            };
            out.insert(key.clone(), child);
        } else if SUPPORTED.contains(&key.as_str()) {
            out.insert(key.clone(), value.clone());
        } else {
            moved.push(in_words(key, value));
        }
    }
    if !moved.is_empty() {
        let said = moved.join("; ");
        let description = match out.get("description").and_then(Value::as_str) {
            Some(text) if !text.trim().is_empty() => format!("{} ({said})", text.trim_end()),
            _ => capitalised(&said),
        };
        out.insert("description".into(), Value::String(description));
    }
    out
}

/// A keyword and its value as a phrase of a description.
fn in_words(key: &str, value: &Value) -> String {
    let number = value.as_u64();
    match (key, number) {
        ("maxLength", Some(n)) => format!("at most {n} {}", plural(n, "character")),
        ("minLength", Some(n)) => format!("at least {n} {}", plural(n, "character")),
        ("maxProperties", Some(n)) => format!("at most {n} properties"),
        ("minProperties", Some(n)) => format!("at least {n} properties"),
        ("uniqueItems", _) if value.as_bool() == Some(true) => "no item twice".into(),
        _ => format!("{key}: {value}"),
    }
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The keywords of `schema` outside OpenAI's strict subset, each with the
/// path of the schema object that holds it (`/properties/argument`): empty
/// for a schema OpenAI accepts.
pub fn unsupported(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}

fn walk(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Value::Object(map) = schema else {
        return;
    };
    for (key, value) in map {
        let here = format!("{path}/{key}");
        if SCHEMA_MAPS.contains(&key.as_str()) {
            if let Value::Object(children) = value {
                for (name, child) in children {
                    walk(child, &format!("{here}/{name}"), out);
                }
            }
        } else if SCHEMA_VALUES.contains(&key.as_str()) {
            match value {
                Value::Array(items) => {
                    for (index, item) in items.iter().enumerate() {
                        walk(item, &format!("{here}/{index}"), out);
                    }
                }
                other => walk(other, &here, out),
            }
        } else if !SUPPORTED.contains(&key.as_str()) {
            out.push(format!("{} at {}", key, if path.is_empty() { "/" } else { path }));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn bounds_outside_the_subset_move_into_the_description() {
        let schema = json!({
            "type": "object",
            "properties": {
                "hypothesis": {"type": "string", "maxLength": 80},
                "note": {"type": "string", "description": "A short note.", "minLength": 1, "maxLength": 240},
                "items": {"type": "array", "maxItems": 8, "uniqueItems": true, "items": {"type": "string", "maxLength": 5}},
                "score": {"type": "integer", "minimum": 1, "maximum": 10}
            },
            "required": ["hypothesis", "note", "items", "score"],
            "additionalProperties": false
        });
        let out = subset(&schema);
        assert!(unsupported(&out).is_empty(), "{:?}", unsupported(&out));
        let properties = &out["properties"];
        assert_eq!(
            properties["hypothesis"],
            json!({"type": "string", "description": "At most 80 characters"})
        );
        assert_eq!(
            properties["note"]["description"],
            "A short note. (at most 240 characters; at least 1 character)"
        );
        assert_eq!(properties["items"]["maxItems"], 8, "maxItems is in the subset");
        assert_eq!(properties["items"]["description"], "No item twice");
        assert_eq!(
            properties["items"]["items"]["description"],
            "At most 5 characters"
        );
        assert_eq!(properties["score"], schema["properties"]["score"]);
        assert_eq!(out["required"], schema["required"]);
        assert_eq!(out["additionalProperties"], false);
    }

    #[test]
    fn property_names_are_not_read_as_keywords() {
        // A property called `maxLength` or `uniqueItems` is a name, not a bound.
        let schema = json!({
            "type": "object",
            "properties": {"maxLength": {"type": "integer"}, "uniqueItems": {"type": "boolean"}},
            "required": ["maxLength", "uniqueItems"],
            "additionalProperties": false
        });
        assert!(unsupported(&schema).is_empty());
        assert_eq!(subset(&schema), schema);
    }

    #[test]
    fn unsupported_names_each_keyword_and_where_it_is() {
        let schema = json!({
            "type": "object",
            "minProperties": 1,
            "properties": {"a": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}},
            "$defs": {"b": {"type": "string", "minLength": 2}}
        });
        assert_eq!(
            unsupported(&schema),
            vec![
                "minLength at /$defs/b".to_string(),
                "minProperties at /".to_string(),
                "maxLength at /properties/a/anyOf/0".to_string(),
            ]
        );
        assert!(unsupported(&subset(&schema)).is_empty());
    }
}
