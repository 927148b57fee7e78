//! OpenAI-compatible chat completions (`POST {base}/chat/completions`): OpenAI, xAI,
//! vLLM, SGLang, llama.cpp server, Ollama, LiteLLM.

use serde_json::{Map, Value, json};

use super::batch;
use super::http::{HttpTransport, count};
use super::{BackendIdentity, BoxFuture, ChatBackend};
use crate::error::{Error, Result};
use crate::subject::BackendConfig;
use crate::types::{ChatRequest, ChatResponse, Message, ResponseFormat, ToolCall, ToolChoice, Usage};

/// A chat-completions endpoint.
pub struct OpenAiBackend {
    config: BackendConfig,
    identity: BackendIdentity,
    url: String,
    http: HttpTransport,
}

impl std::fmt::Debug for OpenAiBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiBackend")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiBackend {
    pub fn new(config: BackendConfig) -> Result<Self> {
        let http = HttpTransport::new(&config.base_url, config.limits.max_concurrency)?;
        Ok(OpenAiBackend {
            identity: BackendIdentity::from_config(&config),
            url: config.endpoint(),
            config,
            http,
        })
    }

    /// The JSON body this backend sends for `request`.
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        build_body(&self.config, request)
    }
}

impl ChatBackend for OpenAiBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn batch(&self) -> Option<&dyn batch::BatchBackend> {
        Some(self)
    }

    fn send<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse>> {
        Box::pin(async move {
            let body = build_body(&self.config, request);
            let secret: Vec<(&'static str, String)> = match &self.config.api_key {
                Some(key) => vec![("authorization", format!("Bearer {}", key.expose()))],
                None => Vec::new(),
            };
            let raw = self
                .http
                .post_json(&self.config, &self.url, &[], &secret, &body)
                .await?;
            parse_response(&self.url, raw)
        })
    }
}

impl OpenAiBackend {
    fn secret(&self) -> Vec<(&'static str, String)> {
        match &self.config.api_key {
            Some(key) => vec![("authorization", format!("Bearer {}", key.expose()))],
            None => Vec::new(),
        }
    }

    fn base(&self) -> &str {
        &self.config.base_url
    }

    async fn file_lines(&self, file: &str) -> Result<Vec<Value>> {
        let url = format!("{}/files/{file}/content", self.base());
        let body = self
            .http
            .send(
                &self.config,
                reqwest::Method::GET,
                &url,
                &[],
                &self.secret(),
                None,
            )
            .await?;
        batch::jsonl(&url, &body)
    }
}

/// The path every batch line and the batch itself name.
const BATCH_ENDPOINT: &str = "/v1/chat/completions";

impl batch::BatchBackend for OpenAiBackend {
    fn prepare<'a>(&'a self, items: &'a [batch::BatchItem]) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            let mut lines = Vec::new();
            for item in items {
                let line = json!({
                    "custom_id": item.custom_id,
                    "method": "POST",
                    "url": BATCH_ENDPOINT,
                    "body": build_body(&self.config, &item.request),
                });
                serde_json::to_writer(&mut lines, &line)
                    .map_err(|err| Error::json("encode batch line", err))?;
                lines.push(b'\n');
            }
            let (content_type, body) =
                batch::multipart(&[("purpose", "batch")], ("file", "batch.jsonl", &lines));
            let url = format!("{}/files", self.base());
            let answer = self
                .http
                .send(
                    &self.config,
                    reqwest::Method::POST,
                    &url,
                    &[],
                    &self.secret(),
                    Some((content_type, body)),
                )
                .await?;
            let file: Value =
                serde_json::from_slice(&answer).map_err(|err| Error::json("read the uploaded file", err))?;
            let id = file
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::MalformedResponse {
                    endpoint: url.clone(),
                    message: "the uploaded file has no id".into(),
                })?;
            Ok(Some(id.to_string()))
        })
    }

    fn create<'a>(
        &'a self,
        _items: &'a [batch::BatchItem],
        prepared: Option<&'a str>,
        tag: &'a str,
    ) -> BoxFuture<'a, Result<String>> {
        Box::pin(async move {
            let url = format!("{}/batches", self.base());
            let Some(file) = prepared else {
                return Err(Error::InvalidSetting {
                    what: "batch".into(),
                    reason: "an OpenAI batch needs its uploaded input file".into(),
                });
            };
            let body = json!({
                "input_file_id": file,
                "endpoint": BATCH_ENDPOINT,
                "completion_window": "24h",
                "metadata": {"cfeval_submission": tag},
            });
            let answer = self
                .http
                .post_json(&self.config, &url, &[], &self.secret(), &body)
                .await?;
            batch::created_id(url, &answer)
        })
    }

    fn find<'a>(
        &'a self,
        prepared: Option<&'a str>,
        tag: &'a str,
        _count: usize,
        _known: &'a [String],
    ) -> BoxFuture<'a, Result<Option<String>>> {
        Box::pin(async move {
            let mut after: Option<String> = None;
            // At most 10 pages of 100: a batch made moments before a crash
            // is among the newest.
            for _ in 0..10 {
                let mut url = format!("{}/batches?limit=100", self.base());
                if let Some(after) = &after {
                    url.push_str(&format!("&after={after}"));
                }
                let page = self
                    .http
                    .get_json(&self.config, &url, &[], &self.secret())
                    .await?;
                let data = page
                    .get("data")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for batch in &data {
                    let by_file =
                        prepared.is_some() && batch.get("input_file_id").and_then(Value::as_str) == prepared;
                    let by_tag = batch
                        .pointer("/metadata/cfeval_submission")
                        .and_then(Value::as_str)
                        == Some(tag);
                    if by_file || by_tag {
                        return Ok(batch.get("id").and_then(Value::as_str).map(str::to_string));
                    }
                }
                let more = page.get("has_more").and_then(Value::as_bool).unwrap_or(false);
                after = data
                    .last()
                    .and_then(|batch| batch.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                if !more || after.is_none() {
                    break;
                }
            }
            Ok(None)
        })
    }

    fn poll<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<batch::BatchPoll>> {
        Box::pin(async move {
            let url = format!("{}/batches/{id}", self.base());
            let batch = self
                .http
                .get_json(&self.config, &url, &[], &self.secret())
                .await?;
            let status = batch.get("status").and_then(Value::as_str).unwrap_or_default();
            let files = || {
                ["output_file_id", "error_file_id"]
                    .iter()
                    .filter_map(|field| batch.get(*field).and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            Ok(match status {
                "completed" | "expired" | "cancelled" => batch::BatchPoll::Ended { results: files() },
                "failed" => batch::BatchPoll::Failed {
                    reason: batch
                        .pointer("/errors/data/0/message")
                        .and_then(Value::as_str)
                        .unwrap_or("the batch failed")
                        .to_string(),
                },
                _ => batch::BatchPoll::Running {
                    done: count(batch.pointer("/request_counts/completed").unwrap_or(&Value::Null))
                        + count(batch.pointer("/request_counts/failed").unwrap_or(&Value::Null)),
                    total: count(batch.pointer("/request_counts/total").unwrap_or(&Value::Null)),
                },
            })
        })
    }

    fn results<'a>(
        &'a self,
        results: &'a str,
        _items: &'a [batch::BatchItem],
    ) -> BoxFuture<'a, Result<batch::BatchResults>> {
        Box::pin(async move {
            let mut out = Vec::new();
            for file in results.split_whitespace() {
                for line in self.file_lines(file).await? {
                    let Some(id) = line.get("custom_id").and_then(Value::as_str) else {
                        continue;
                    };
                    let endpoint = format!("{} (batch result {id})", self.url);
                    let status = line.pointer("/response/status_code").and_then(Value::as_u64);
                    let result = match (status, line.pointer("/response/body")) {
                        (Some(200), Some(body)) => parse_response(&endpoint, body.clone()),
                        (status, body) => Err(Error::Status {
                            endpoint,
                            status: status.and_then(|code| u16::try_from(code).ok()).unwrap_or(500),
                            retry_after: None,
                            body: self.config.redact(
                                line.pointer("/error/message")
                                    .or_else(|| body.and_then(|body| body.pointer("/error/message")))
                                    .and_then(Value::as_str)
                                    .unwrap_or("the batch request failed"),
                            ),
                        }),
                    };
                    out.push((id.to_string(), result));
                }
            }
            Ok(out)
        })
    }
}

fn build_body(config: &BackendConfig, request: &ChatRequest) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(config.model));
    body.insert("messages".into(), Value::Array(messages));
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    let params = &request.params;
    match &params.tool_choice {
        ToolChoice::Auto => {}
        ToolChoice::None => {
            body.insert("tool_choice".into(), json!("none"));
        }
        ToolChoice::Required => {
            body.insert("tool_choice".into(), json!("required"));
        }
        ToolChoice::Tool(name) => {
            body.insert(
                "tool_choice".into(),
                json!({"type": "function", "function": {"name": name}}),
            );
        }
    }
    if let Some(temperature) = params.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = params.top_p {
        body.insert("top_p".into(), json!(top_p));
    }
    if let Some(seed) = params.seed {
        body.insert("seed".into(), json!(seed));
    }
    if let Some(max_tokens) = params.max_tokens {
        let field = if config.use_max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(field.into(), json!(max_tokens));
    }
    if !params.stop.is_empty() {
        body.insert("stop".into(), json!(params.stop));
    }
    match &params.response_format {
        None => {}
        Some(ResponseFormat::JsonObject) => {
            body.insert("response_format".into(), json!({"type": "json_object"}));
        }
        Some(ResponseFormat::JsonSchema { name, schema, strict }) => {
            let subset;
            let schema = if *strict && config.strict_schema_subset {
                subset = super::strict::subset(schema);
                &subset
            } else {
                schema
            };
            body.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": name, "schema": schema, "strict": strict}
                }),
            );
        }
    }
    Value::Object(body)
}

fn message_json(message: &Message) -> Value {
    match message {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => json!({"role": "user", "content": content}),
        Message::Assistant { content, tool_calls } => {
            let mut out = Map::new();
            out.insert("role".into(), json!("assistant"));
            out.insert("content".into(), json!(content));
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": call.arguments},
                        })
                    })
                    .collect();
                out.insert("tool_calls".into(), Value::Array(calls));
            }
            Value::Object(out)
        }
        Message::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

fn parse_response(endpoint: &str, raw: Value) -> Result<ChatResponse> {
    let malformed = |message: &str| Error::MalformedResponse {
        endpoint: endpoint.to_string(),
        message: message.to_string(),
    };
    let choice = raw
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| choices.first())
        .ok_or_else(|| malformed("no choices[0]"))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| malformed("choices[0] has no message object"))?;
    let text = match message.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        // Some servers return content parts; keep their text.
        Some(Value::Array(parts)) => Some(
            parts
                .iter()
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(""),
        ),
        Some(_) => return Err(malformed("message.content is neither text nor null")),
    };
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (index, call) in calls.iter().enumerate() {
            let function = call
                .get("function")
                .ok_or_else(|| malformed("tool call without function"))?;
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed("tool call without function.name"))?;
            let arguments = match function.get("arguments") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(text)) => text.clone(),
                // A few servers send the object itself.
                Some(other) => other.to_string(),
            };
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map_or_else(|| format!("call_{index}"), str::to_string);
            tool_calls.push(ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
        }
    }
    let usage = raw.get("usage").map_or_else(Usage::default, |usage| Usage {
        input_tokens: count(&usage["prompt_tokens"]),
        output_tokens: count(&usage["completion_tokens"]),
        cached_input_tokens: count(&usage["prompt_tokens_details"]["cached_tokens"]),
    });
    Ok(ChatResponse {
        text,
        tool_calls,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
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

    fn config(max_completion: bool) -> BackendConfig {
        let mut config = BackendConfig::custom(
            "openai/gpt-test",
            Protocol::OpenAiChat,
            "http://127.0.0.1:1/v1",
            Some(ApiKey::new("sk-test-key")),
        )
        .unwrap_or_else(|err| panic!("{err}"));
        config.use_max_completion_tokens = max_completion;
        config
    }

    #[test]
    fn openai_gets_the_strict_subset_and_other_servers_the_schema_as_it_is() {
        let schema = json!({
            "type": "object",
            "properties": {"hypothesis": {"type": "string", "maxLength": 80}},
            "required": ["hypothesis"],
            "additionalProperties": false
        });
        let request = |strict: bool| {
            ChatRequest::new(vec![Message::user("hi")]).with_params(ChatParams {
                response_format: Some(ResponseFormat::JsonSchema {
                    name: "step".into(),
                    schema: schema.clone(),
                    strict,
                }),
                ..ChatParams::default()
            })
        };
        let sent = |config: &BackendConfig, strict: bool| {
            build_body(config, &request(strict))["response_format"]["json_schema"]["schema"].clone()
        };
        // The subject name decides: `openai/…` is OpenAI's own API.
        let openai = crate::subject::SubjectSpec::new("openai/gpt-5")
            .resolve_with(&|name: &str| (name == "OPENAI_API_KEY").then(|| "sk-test".to_string()))
            .unwrap_or_else(|err| panic!("{err}"));
        let vllm = BackendConfig::custom("vllm/qwen", Protocol::OpenAiChat, "http://127.0.0.1:1/v1", None)
            .unwrap_or_else(|err| panic!("{err}"));
        assert!(openai.strict_schema_subset && !vllm.strict_schema_subset);
        let to_openai = sent(&openai, true);
        assert!(super::super::strict::unsupported(&to_openai).is_empty());
        assert_eq!(
            to_openai["properties"]["hypothesis"]["description"],
            "At most 80 characters"
        );
        // A grammar-decoding server keeps the bound; a schema that is only
        // a hint (not strict) goes as it is everywhere.
        assert_eq!(sent(&vllm, true), schema);
        assert_eq!(sent(&openai, false), schema);
    }

    #[test]
    fn body_carries_tools_seed_temperature_and_schema() {
        let request = ChatRequest::new(vec![
            Message::system("sys"),
            Message::user("hi"),
            Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: "{}".into(),
                }],
            },
            Message::tool_result("c1", "done"),
        ])
        .with_tools(vec![ToolSpec {
            name: "read".into(),
            description: "read a section".into(),
            parameters: json!({"type": "object"}),
        }])
        .with_params(ChatParams {
            temperature: Some(0.0),
            seed: Some(42),
            max_tokens: Some(100),
            tool_choice: ToolChoice::Tool("read".into()),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "verdict".into(),
                schema: json!({"type": "object"}),
                strict: true,
            }),
            ..ChatParams::default()
        });
        let body = build_body(&config(true), &request);
        assert_eq!(body["model"], "gpt-test");
        assert_eq!(body["seed"], 42);
        assert_eq!(body["temperature"], 0.0);
        assert_eq!(body["max_completion_tokens"], 100);
        assert!(body.get("max_tokens").is_none());
        assert_eq!(body["tools"][0]["function"]["name"], "read");
        assert_eq!(body["tool_choice"]["function"]["name"], "read");
        assert_eq!(body["response_format"]["json_schema"]["name"], "verdict");
        assert_eq!(body["messages"][2]["tool_calls"][0]["id"], "c1");
        assert_eq!(body["messages"][3]["role"], "tool");
        assert_eq!(build_body(&config(false), &request)["max_tokens"], 100);
        // The key is never in the body.
        assert!(!body.to_string().contains("sk-test-key"));
    }

    #[test]
    fn parses_text_tool_calls_and_usage() {
        let raw = json!({
            "model": "gpt-test-2026",
            "choices": [{"finish_reason": "tool_calls", "message": {
                "content": null,
                "tool_calls": [{"id": "x", "type": "function",
                    "function": {"name": "read", "arguments": "{\"name\": \"labs\""}}]
            }}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3,
                      "prompt_tokens_details": {"cached_tokens": 4}}
        });
        let response = parse_response("e", raw).unwrap_or_else(|err| panic!("{err}"));
        assert_eq!(response.text, None);
        assert_eq!(response.tool_calls.len(), 1);
        assert!(response.tool_calls[0].arguments_json().is_err());
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 12,
                output_tokens: 3,
                cached_input_tokens: 4
            }
        );
        assert_eq!(response.finish_reason.as_deref(), Some("tool_calls"));
        assert!(matches!(
            parse_response("e", json!({"choices": []})),
            Err(Error::MalformedResponse { .. })
        ));
    }
}
