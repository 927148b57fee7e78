//! Provider-neutral chat types: what goes in ([`ChatRequest`]) and what comes back
//! ([`ChatResponse`]). Backends translate these to and from their wire formats.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions to the model.
    System { content: String },
    /// A user turn.
    User { content: String },
    /// A model turn: text, tool calls, or both.
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of a tool call, answering the call with id `tool_call_id`.
    Tool { tool_call_id: String, content: String },
}

impl Message {
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant {
            content: Some(content.into()),
            tool_calls: Vec::new(),
        }
    }

    /// The assistant turn that a response represents (to continue an agent loop).
    pub fn from_response(response: &ChatResponse) -> Self {
        Message::Assistant {
            content: response.text.clone(),
            tool_calls: response.tool_calls.clone(),
        }
    }

    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }

    /// Rough size in bytes of the text in this message (for token estimates).
    pub(crate) fn text_len(&self) -> usize {
        match self {
            Message::System { content } | Message::User { content } => content.len(),
            Message::Assistant { content, tool_calls } => {
                content.as_deref().map_or(0, str::len)
                    + tool_calls
                        .iter()
                        .map(|call| call.name.len() + call.arguments.len())
                        .sum::<usize>()
            }
            Message::Tool { content, .. } => content.len(),
        }
    }
}

/// A tool the model may call (a function with a JSON-schema for its arguments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: Value,
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model wrote them. Usually a JSON object, but models
    /// do write broken JSON: use [`ToolCall::arguments_json`] and record the error.
    pub arguments: String,
}

impl ToolCall {
    /// The arguments parsed as JSON, or the parse error (the agent records it and goes on).
    pub fn arguments_json(&self) -> Result<Value, serde_json::Error> {
        if self.arguments.trim().is_empty() {
            return Ok(Value::Object(serde_json::Map::new()));
        }
        serde_json::from_str(&self.arguments)
    }
}

/// How the model may use tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// This tool must be called.
    Tool(String),
}

/// Constrain the output format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Any JSON object.
    JsonObject,
    /// JSON matching `schema` (OpenAI `json_schema` with `strict`; emulated with a forced
    /// tool on Anthropic).
    JsonSchema {
        name: String,
        schema: Value,
        #[serde(default = "default_true")]
        strict: bool,
    },
}

fn default_true() -> bool {
    true
}

/// Sampling and output parameters. `None` means "the provider's default" and is not sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChatParams {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Passed through where the API has one (OpenAI-compatible); recorded always.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    #[serde(default, skip_serializing_if = "is_auto")]
    pub tool_choice: ToolChoice,
}

fn is_auto(choice: &ToolChoice) -> bool {
    *choice == ToolChoice::Auto
}

/// One chat call, independent of provider and model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    #[serde(default)]
    pub params: ChatParams,
    /// Not sent; only changes the cache key. Use it to draw several independent samples
    /// of the same request (e.g. `"sample-3"`) without them sharing a cache entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_salt: Option<String>,
}

impl ChatRequest {
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..ChatRequest::default()
        }
    }

    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    pub fn with_params(mut self, params: ChatParams) -> Self {
        self.params = params;
        self
    }

    /// A cheap upper-bound-ish token estimate (≈ 4 bytes a token) of the prompt, used to
    /// reserve tokens-per-minute budget before the real usage is known.
    pub fn estimated_input_tokens(&self) -> u64 {
        let bytes: usize = self.messages.iter().map(Message::text_len).sum::<usize>()
            + self
                .tools
                .iter()
                .map(|tool| tool.name.len() + tool.description.len() + tool.parameters.to_string().len())
                .sum::<usize>();
        (bytes as u64).div_ceil(4) + 4 * self.messages.len() as u64
    }
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache (billed lower), when reported.
    #[serde(default)]
    pub cached_input_tokens: u64,
}

impl Usage {
    /// Adds `other`'s tokens to these.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
    }

    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// What a model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text of the answer (`None` when the model only called tools).
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Why generation stopped, as the provider says it (`stop`, `tool_calls`, `end_turn`…).
    pub finish_reason: Option<String>,
    pub usage: Usage,
    /// The model name the provider reports (may carry a date suffix).
    pub model: Option<String>,
    /// The provider's whole response body, for the trace.
    pub raw: Value,
}

/// Writes `value` as JSON with object keys sorted at every level and no whitespace, so
/// equal values always give equal bytes (whatever serde_json's map ordering).
pub(crate) fn canonical_json(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical_json(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                canonical_json(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_json_sorts_keys_at_every_level() {
        let a = json!({"b": 1, "a": {"z": [1, {"y": 2, "x": 3}], "c": null}});
        let mut out = String::new();
        canonical_json(&a, &mut out);
        assert_eq!(out, r#"{"a":{"c":null,"z":[1,{"x":3,"y":2}]},"b":1}"#);
    }

    #[test]
    fn messages_round_trip_through_json() {
        let messages = vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: r#"{"name":"labs"}"#.into(),
                }],
            },
            Message::tool_result("c1", "Hb 9"),
        ];
        let text = serde_json::to_string(&messages).unwrap_or_default();
        let back: Vec<Message> = serde_json::from_str(&text).unwrap_or_default();
        assert_eq!(back, messages);
    }

    #[test]
    fn tool_call_arguments_parse_or_report() {
        let good = ToolCall {
            id: "1".into(),
            name: "f".into(),
            arguments: r#"{"x": 1}"#.into(),
        };
        assert_eq!(good.arguments_json().ok(), Some(json!({"x": 1})));
        let empty = ToolCall {
            arguments: String::new(),
            ..good.clone()
        };
        assert_eq!(empty.arguments_json().ok(), Some(json!({})));
        let broken = ToolCall {
            arguments: r#"{"x": 1"#.into(),
            ..good
        };
        assert!(broken.arguments_json().is_err());
    }

    #[test]
    fn token_estimate_grows_with_prompt() {
        let short = ChatRequest::new(vec![Message::user("hi")]);
        let long = ChatRequest::new(vec![Message::user("hi ".repeat(400))]);
        assert!(long.estimated_input_tokens() > short.estimated_input_tokens() + 250);
    }
}
