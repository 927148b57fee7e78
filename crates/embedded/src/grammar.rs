//! JSON Schema → GBNF (llama.cpp grammar), for the subset cfeval's verdicts
//! and structured outputs use: objects with properties (all emitted, in
//! schema order), strings (optionally `enum`/`const`/`maxLength`), numbers,
//! integers, booleans, arrays (`items`, `maxItems`), `null`, `enum` of any
//! JSON scalars, and `anyOf`/`oneOf` of those.
//!
//! Constrained decoding with such a grammar makes even a 135M-parameter model
//! return parseable JSON of the right shape, so that it can serve as a judge.

use serde_json::Value;

use crate::error::{Error, Result};

/// Converts a JSON schema into a GBNF grammar whose root rule is `root`.
pub fn json_schema_to_gbnf(schema: &Value) -> Result<String> {
    let mut builder = Builder { rules: Vec::new() };
    let root = builder.visit(schema, "#", "value")?;
    let mut out = format!("root ::= {root}\n");
    for (name, body) in &builder.rules {
        out.push_str(&format!("{name} ::= {body}\n"));
    }
    out.push_str(PRIMITIVES);
    Ok(out)
}

const PRIMITIVES: &str = r#"ws ::= [ \t\n]{0,2}
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?
integer ::= "-"? ([0-9] | [1-9] [0-9]{0,15})
boolean ::= "true" | "false"
null ::= "null"
"#;

struct Builder {
    rules: Vec<(String, String)>,
}

fn literal(text: &str) -> String {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{escaped}\"")
}

fn json_literal(value: &Value) -> String {
    literal(&value.to_string())
}

impl Builder {
    fn add(&mut self, name: &str, body: String) -> String {
        let mut unique = name.replace(|c: char| !c.is_ascii_alphanumeric(), "-");
        while self.rules.iter().any(|(existing, _)| *existing == unique) {
            unique.push('x');
        }
        self.rules.push((unique.clone(), body));
        unique
    }

    fn visit(&mut self, schema: &Value, pointer: &str, name: &str) -> Result<String> {
        let unsupported = |detail: &str| Error::Schema {
            pointer: pointer.to_string(),
            detail: detail.to_string(),
        };
        let Some(object) = schema.as_object() else {
            return match schema {
                Value::Bool(true) => Err(unsupported("`true` schemas (any value) are not supported")),
                _ => Err(unsupported("a schema must be an object")),
            };
        };
        if let Some(value) = object.get("const") {
            return Ok(json_literal(value));
        }
        if let Some(values) = object.get("enum") {
            let values = values
                .as_array()
                .ok_or_else(|| unsupported("`enum` must be an array"))?;
            if values.is_empty() {
                return Err(unsupported("`enum` must not be empty"));
            }
            let body = values.iter().map(json_literal).collect::<Vec<_>>().join(" | ");
            return Ok(self.add(name, body));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = object.get(key) {
                let options = options
                    .as_array()
                    .ok_or_else(|| unsupported("`anyOf` must be an array"))?;
                let mut alternatives = Vec::new();
                for (index, option) in options.iter().enumerate() {
                    alternatives.push(self.visit(
                        option,
                        &format!("{pointer}/{key}/{index}"),
                        &format!("{name}-{index}"),
                    )?);
                }
                return Ok(self.add(name, alternatives.join(" | ")));
            }
        }
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.as_str(),
            Some(Value::Array(kinds)) => {
                let mut alternatives = Vec::new();
                for (index, kind) in kinds.iter().enumerate() {
                    let mut single = object.clone();
                    single.insert("type".into(), kind.clone());
                    alternatives.push(self.visit(
                        &Value::Object(single),
                        &format!("{pointer}/type/{index}"),
                        &format!("{name}-{index}"),
                    )?);
                }
                return Ok(self.add(name, alternatives.join(" | ")));
            }
            None if object.contains_key("properties") => "object",
            _ => return Err(unsupported("missing `type`")),
        };
        match kind {
            "string" => match object.get("maxLength").and_then(Value::as_u64) {
                Some(max) => Ok(self.add(name, format!("\"\\\"\" char{{0,{max}}} \"\\\"\""))),
                None => Ok("string".into()),
            },
            "number" => Ok("number".into()),
            "integer" => Ok("integer".into()),
            "boolean" => Ok("boolean".into()),
            "null" => Ok("null".into()),
            "array" => {
                let items = object
                    .get("items")
                    .ok_or_else(|| unsupported("arrays need `items`"))?;
                let item = self.visit(items, &format!("{pointer}/items"), &format!("{name}-item"))?;
                let body = match object.get("maxItems").and_then(Value::as_u64) {
                    Some(0) => "\"[\" ws \"]\"".to_string(),
                    Some(max) => format!(
                        "\"[\" ws ({item} (ws \",\" ws {item}){{0,{}}})? ws \"]\"",
                        max - 1
                    ),
                    None => format!("\"[\" ws ({item} (ws \",\" ws {item})*)? ws \"]\""),
                };
                Ok(self.add(name, body))
            }
            "object" => {
                let properties = object
                    .get("properties")
                    .and_then(Value::as_object)
                    .ok_or_else(|| unsupported("objects need `properties`"))?;
                let mut parts = Vec::new();
                for (key, property) in properties {
                    let rule = self.visit(
                        property,
                        &format!("{pointer}/properties/{key}"),
                        &format!("{name}-{key}"),
                    )?;
                    parts.push(format!("{} ws \":\" ws {rule}", literal(&format!("\"{key}\""))));
                }
                let body = if parts.is_empty() {
                    "\"{\" ws \"}\"".to_string()
                } else {
                    format!("\"{{\" ws {} ws \"}}\"", parts.join(" ws \",\" ws "))
                };
                Ok(self.add(name, body))
            }
            other => Err(unsupported(&format!("type `{other}` is not supported"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_schema_becomes_a_grammar() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "score": {"enum": [0.0, 0.5, 1.0]},
                "label": {"type": "string", "enum": ["ignored", "updated_correct"]},
                "rationale": {"type": "string", "maxLength": 40}
            },
            "required": ["score", "label", "rationale"]
        });
        let grammar = json_schema_to_gbnf(&schema).expect("grammar");
        assert!(grammar.starts_with("root ::= value\n"), "{grammar}");
        assert!(
            grammar.contains(r#"value-score ::= "0.0" | "0.5" | "1.0""#),
            "{grammar}"
        );
        assert!(
            grammar.contains(r#"value-label ::= "\"ignored\"" | "\"updated_correct\"""#),
            "{grammar}"
        );
        assert!(grammar.contains("char{0,40}"), "{grammar}");
        assert!(
            grammar.contains(r#""\"score\"" ws ":" ws value-score"#),
            "{grammar}"
        );
    }

    #[test]
    fn unsupported_schemas_name_the_place() {
        let schema = serde_json::json!({"type": "object", "properties": {"x": {"type": "date"}}});
        let error = json_schema_to_gbnf(&schema).expect_err("unsupported");
        assert!(error.to_string().contains("#/properties/x"), "{error}");
        let error = json_schema_to_gbnf(&serde_json::json!({"type": "array"})).expect_err("no items");
        assert!(error.to_string().contains("items"), "{error}");
    }
}
