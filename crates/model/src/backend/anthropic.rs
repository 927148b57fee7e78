//! Anthropic Messages (`POST {base}/v1/messages`) with tool use.
//!
//! A JSON `response_format` is emulated the usual way: one forced tool whose input
//! schema is the wanted schema; its input comes back as the response text.

use serde_json::{Map, Value, json};

use super::batch;
use super::http::{HttpTransport, count};
use super::{BackendIdentity, BoxFuture, ChatBackend};
use crate::error::{Error, Result};
use crate::subject::BackendConfig;
use crate::types::{ChatRequest, ChatResponse, Message, ResponseFormat, ToolCall, ToolChoice, Usage};

/// The API version header value sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is sent when the request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A Messages endpoint.
pub struct AnthropicBackend {
    config: BackendConfig,
    identity: BackendIdentity,
    url: String,
    http: HttpTransport,
}

impl std::fmt::Debug for AnthropicBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicBackend")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl AnthropicBackend {
    pub fn new(config: BackendConfig) -> Result<Self> {
        let http = HttpTransport::new(&config.base_url, config.limits.max_concurrency)?;
        Ok(AnthropicBackend {
            identity: BackendIdentity::from_config(&config),
            url: config.endpoint(),
            config,
            http,
        })
    }

    /// The JSON body this backend sends for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Result<Value> {
        build_body(&self.config, request).map(|(body, _)| body)
    }
}

impl ChatBackend for AnthropicBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn batch(&self) -> Option<&dyn batch::BatchBackend> {
        Some(self)
    }

    fn send<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse>> {
        Box::pin(async move {
            let (body, format_tool) = build_body(&self.config, request)?;
            let secret: Vec<(&'static str, String)> = match &self.config.api_key {
                Some(key) => vec![("x-api-key", key.expose().to_string())],
                None => Vec::new(),
            };
            let headers = [("anthropic-version", ANTHROPIC_VERSION.to_string())];
            let raw = self
                .http
                .post_json(&self.config, &self.url, &headers, &secret, &body)
                .await?;
            parse_response(&self.url, raw, format_tool.as_deref())
        })
    }
}

impl AnthropicBackend {
    fn secret(&self) -> Vec<(&'static str, String)> {
        match &self.config.api_key {
            Some(key) => vec![("x-api-key", key.expose().to_string())],
            None => Vec::new(),
        }
    }

    fn batches_url(&self) -> String {
        format!("{}/v1/messages/batches", self.config.base_url)
    }
}

fn version_header() -> [(&'static str, String); 1] {
    [("anthropic-version", ANTHROPIC_VERSION.to_string())]
}

impl batch::BatchBackend for AnthropicBackend {
    fn prepare<'a>(&'a self, _items: &'a [batch::BatchItem]) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async { Ok(None) })
    }

    fn create<'a>(
        &'a self,
        items: &'a [batch::BatchItem],
        _prepared: Option<&'a str>,
        _tag: &'a str,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let mut requests = Vec::with_capacity(items.len());
            for item in items {
                let (params, _) = build_body(&self.config, &item.request)?;
                requests.push(json!({"custom_id": item.custom_id, "params": params}));
            }
            let url = self.batches_url();
            let answer = self
                .http
                .post_json(
                    &self.config,
                    &url,
                    &version_header(),
                    &self.secret(),
                    &json!({"requests": requests}),
                )
                .await?;
            batch::created_id(url, &answer)
        })
    }

    fn find<'a>(
        &'a self,
        _prepared: Option<&'a str>,
        _tag: &'a str,
        count: usize,
        known: &'a [String],
    ) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            // Newest first; the first page holds a batch made moments ago.
            let url = format!("{}?limit=100", self.batches_url());
            let page = self
                .http
                .get_json(&self.config, &url, &version_header(), &self.secret())
                .await?;
            let size = |batch: &Value| -> u64 {
                ["processing", "succeeded", "errored", "canceled", "expired"]
                    .iter()
                    .map(|field| {
                        batch
                            .pointer(&format!("/request_counts/{field}"))
                            .and_then(Value::as_u64)
                            .unwrap_or(0)
                    })
                    .sum()
            };
            Ok(page
                .get("data")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|batch| size(batch) == count as u64)
                .filter_map(|batch| batch.get("id").and_then(Value::as_str))
                .find(|id| !known.iter().any(|known| known == id))
                .map(str::to_string))
        })
    }

    fn poll<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<batch::BatchPoll>> {
        Box::pin(async move {
            let url = format!("{}/{id}", self.batches_url());
            let batch = self
                .http
                .get_json(&self.config, &url, &version_header(), &self.secret())
                .await?;
            let counts = |field: &str| {
                batch
                    .pointer(&format!("/request_counts/{field}"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
            };
            let done = counts("succeeded") + counts("errored") + counts("canceled") + counts("expired");
            Ok(match batch.get("processing_status").and_then(Value::as_str) {
                Some("ended") => match batch.get("results_url").and_then(Value::as_str) {
                    Some(results) => batch::BatchPoll::Ended {
                        results: results.to_string(),
                    },
                    None => batch::BatchPoll::Failed {
                        reason: "the batch ended without a results_url".into(),
                    },
                },
                _ => batch::BatchPoll::Running {
                    done,
                    total: done + counts("processing"),
                },
            })
        })
    }

    fn results<'a>(
        &'a self,
        results: &'a str,
        items: &'a [batch::BatchItem],
    ) -> BoxFuture<'a, Result<batch::BatchResults>> {
        Box::pin(async move {
            let body = self
                .http
                .send(
                    &self.config,
                    reqwest::Method::GET,
                    results,
                    &version_header(),
                    &self.secret(),
                    None,
                )
                .await?;
            let requests = batch::by_id(items);
            let mut out = Vec::new();
            for line in batch::jsonl(results, &body)? {
                let Some(id) = line.get("custom_id").and_then(Value::as_str) else {
                    continue;
                };
                let endpoint = format!("{} (batch result {id})", self.url);
                let result = match (
                    line.pointer("/result/type").and_then(Value::as_str),
                    line.pointer("/result/message"),
                ) {
                    (Some("succeeded"), Some(message)) => {
                        // The live call's reading: a JSON format emulated by a tool.
                        let format_tool = match requests.get(id) {
                            Some(request) => build_body(&self.config, request)?.1,
                            None => None,
                        };
                        parse_response(&endpoint, message.clone(), format_tool.as_deref())
                    }
                    (kind, _) => Err(Error::Status {
                        endpoint,
                        status: 500,
                        retry_after: None,
                        body: self.config.redact(&format!(
                            "batch result {}: {}",
                            kind.unwrap_or("unknown"),
                            line.pointer("/result/error/error/message")
                                .or_else(|| line.pointer("/result/error/message"))
                                .and_then(Value::as_str)
                                .unwrap_or("no message")
                        )),
                    }),
                };
                out.push((id.to_string(), result));
            }
            Ok(out)
        })
    }
}

/// The body, and the name of the tool that emulates a JSON response format (if any).
fn build_body(config: &BackendConfig, request: &ChatRequest) -> Result<(Value, Option<String>)> {
    let unsupported = |reason: &str| Error::Unsupported {
        backend: format!("anthropic-messages ({})", config.subject),
        reason: reason.to_string(),
    };
    let mut system = Vec::new();
    // (role, content blocks); consecutive turns of one role are merged.
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, block: Value| match turns.last_mut() {
        Some((last, blocks)) if *last == role => blocks.push(block),
        _ => turns.push((role, vec![block])),
    };
    for message in &request.messages {
        match message {
            Message::System { content } => system.push(content.clone()),
            Message::User { content } => push("user", json!({"type": "text", "text": content})),
            Message::Assistant { content, tool_calls } => {
                if let Some(text) = content.as_deref().filter(|t| !t.is_empty()) {
                    push("assistant", json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    let input = match call.arguments_json() {
                        Ok(Value::Object(map)) => Value::Object(map),
                        Ok(other) => json!({ "value": other }),
                        Err(_) => json!({ "unparsed_arguments": call.arguments }),
                    };
                    push(
                        "assistant",
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                    );
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => push(
                "user",
                json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content}),
            ),
        }
    }
    let params = &request.params;
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert(
        "max_tokens".into(),
        json!(params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)),
    );
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    let mut tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters})
        })
        .collect();
    let mut tool_choice = match &params.tool_choice {
        ToolChoice::Auto => None,
        ToolChoice::None => Some(json!({"type": "none"})),
        ToolChoice::Required => Some(json!({"type": "any"})),
        ToolChoice::Tool(name) => Some(json!({"type": "tool", "name": name})),
    };
    let format_tool = match &params.response_format {
        None => None,
        Some(format) => {
            if !request.tools.is_empty() {
                return Err(unsupported("a JSON response format together with tools"));
            }
            let (name, schema) = match format {
                ResponseFormat::JsonObject => ("json_response".to_string(), json!({"type": "object"})),
                ResponseFormat::JsonSchema { name, schema, .. } => (name.clone(), schema.clone()),
            };
            tools.push(json!({
                "name": name,
                "description": "Respond with your answer as this tool's input.",
                "input_schema": schema,
            }));
            tool_choice = Some(json!({"type": "tool", "name": name}));
            Some(name)
        }
    };
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = tool_choice {
        body.insert("tool_choice".into(), choice);
    }
    if let Some(temperature) = params.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = params.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if !params.stop.is_empty() {
        body.insert("stop_sequences".into(), json!(params.stop));
    }
    // The Messages API has no seed; it stays in the request (and so in the cache key).
    Ok((Value::Object(body), format_tool))
}

fn parse_response(endpoint: &str, raw: Value, format_tool: Option<&str>) -> Result<ChatResponse> {
    let malformed = |message: &str| Error::MalformedResponse {
        endpoint: endpoint.to_string(),
        message: message.to_string(),
    };
    let blocks = raw
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed("no content array"))?;
    let mut text: Option<String> = None;
    let mut tool_calls = Vec::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => {
                let part = block
                    .get("text")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("text block without text"))?;
                text.get_or_insert_with(String::new).push_str(part);
            }
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("tool_use block without name"))?;
                let input = block.get("input").cloned().unwrap_or(Value::Null);
                if Some(name) == format_tool {
                    text = Some(input.to_string());
                    continue;
                }
                tool_calls.push(ToolCall {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    name: name.to_string(),
                    arguments: input.to_string(),
                });
            }
            // thinking, redacted_thinking, server tool blocks: kept in `raw` only.
            _ => {}
        }
    }
    let usage = raw.get("usage").map_or_else(Usage::default, |usage| {
        let cached = count(&usage["cache_read_input_tokens"]);
        Usage {
            input_tokens: count(&usage["input_tokens"])
                + cached
                + count(&usage["cache_creation_input_tokens"]),
            output_tokens: count(&usage["output_tokens"]),
            cached_input_tokens: cached,
        }
    });
    Ok(ChatResponse {
        text,
        tool_calls,
        finish_reason: raw.get("stop_reason").and_then(Value::as_str).map(str::to_string),
        usage,
        model: raw.get("model").and_then(Value::as_str).map(str::to_string),
        raw,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::subject::{ApiKey, Protocol};
    use crate::types::{ChatParams, ToolSpec};

    fn config() -> BackendConfig {
        BackendConfig::custom(
            "anthropic/claude-test",
            Protocol::AnthropicMessages,
            "http://127.0.0.1:1",
            Some(ApiKey::new("ant-test-key")),
        )
        .unwrap()
    }

    #[test]
    fn body_merges_tool_results_and_lifts_system() {
        let request = ChatRequest::new(vec![
            Message::system("a"),
            Message::system("b"),
            Message::user("hi"),
            Message::Assistant {
                content: Some("reading".into()),
                tool_calls: vec![
                    ToolCall {
                        id: "t1".into(),
                        name: "read".into(),
                        arguments: r#"{"name":"labs"}"#.into(),
                    },
                    ToolCall {
                        id: "t2".into(),
                        name: "read".into(),
                        arguments: "not json".into(),
                    },
                ],
            },
            Message::tool_result("t1", "Hb 9"),
            Message::tool_result("t2", "error"),
        ])
        .with_tools(vec![ToolSpec {
            name: "read".into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
        }])
        .with_params(ChatParams {
            temperature: Some(0.0),
            seed: Some(1),
            tool_choice: ToolChoice::Required,
            ..ChatParams::default()
        });
        let (body, format_tool) = build_body(&config(), &request).unwrap();
        assert_eq!(format_tool, None);
        assert_eq!(body["system"], "a\n\nb");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[1]["content"].as_array().map(Vec::len), Some(3));
        assert_eq!(messages[1]["content"][1]["input"]["name"], "labs");
        assert_eq!(
            messages[1]["content"][2]["input"]["unparsed_arguments"],
            "not json"
        );
        assert_eq!(messages[2]["content"][1]["tool_use_id"], "t2");
        assert_eq!(body["tool_choice"]["type"], "any");
        assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
        assert!(body.get("seed").is_none());
    }

    #[test]
    fn json_schema_is_emulated_with_a_forced_tool() {
        let request = ChatRequest::new(vec![Message::user("judge")]).with_params(ChatParams {
            response_format: Some(ResponseFormat::JsonSchema {
                name: "verdict".into(),
                schema: json!({"type": "object", "properties": {"score": {"type": "number"}}}),
                strict: true,
            }),
            ..ChatParams::default()
        });
        let (body, format_tool) = build_body(&config(), &request).unwrap();
        assert_eq!(format_tool.as_deref(), Some("verdict"));
        assert_eq!(body["tool_choice"]["name"], "verdict");
        let raw = json!({
            "model": "claude-test",
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "u", "name": "verdict", "input": {"score": 1.0}}],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2}
        });
        let response = parse_response("e", raw, format_tool.as_deref()).unwrap();
        assert_eq!(response.text.as_deref(), Some(r#"{"score":1.0}"#));
        assert!(response.tool_calls.is_empty());
        assert_eq!(response.usage.input_tokens, 12);
        assert_eq!(response.usage.cached_input_tokens, 2);
        let with_tools = request.clone().with_tools(vec![ToolSpec {
            name: "x".into(),
            description: String::new(),
            parameters: json!({}),
        }]);
        assert!(matches!(
            build_body(&config(), &with_tools),
            Err(Error::Unsupported { .. })
        ));
    }

    #[test]
    fn parses_text_and_tool_use() {
        let raw = json!({
            "content": [
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "Let me read. "},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"name": "labs"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 4}
        });
        let response = parse_response("e", raw, None).unwrap();
        assert_eq!(response.text.as_deref(), Some("Let me read. "));
        assert_eq!(response.tool_calls[0].id, "toolu_1");
        assert_eq!(
            response.tool_calls[0].arguments_json().ok(),
            Some(json!({"name": "labs"}))
        );
        assert!(parse_response("e", json!({"type": "error"}), None).is_err());
    }
}
