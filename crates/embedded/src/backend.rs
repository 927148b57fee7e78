//! The embedded GGUF model as a `cfeval_model` [`BlockingChatBackend`], so that
//! it serves as a subject or a judge like any HTTP model (wrap it in
//! `cfeval_model::Blocking` to run it on the blocking pool).
//!
//! The model has no native tool calling: callers that need tools use a text
//! protocol (the infer stage's agent does). A `json_schema` response format
//! becomes a llama.cpp grammar, so the output always parses; `json_object`
//! becomes a grammar for any flat JSON object of strings, numbers and booleans.

use std::path::PathBuf;
use std::sync::Arc;

use cfeval_model::{
    BackendIdentity, BlockingChatBackend, ChatRequest, ChatResponse, Error, Message, ResponseFormat, Result,
    Usage,
};

use crate::grammar::json_schema_to_gbnf;
use crate::{EmbeddedModel, Options};

/// Default cap on generated tokens when a request sets none.
const DEFAULT_MAX_TOKENS: u32 = 256;

/// A loaded embedded model behind the chat trait.
pub struct EmbeddedBackend {
    model: Arc<EmbeddedModel>,
    identity: BackendIdentity,
}

impl std::fmt::Debug for EmbeddedBackend {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EmbeddedBackend")
            .field("identity", &self.identity)
            .finish()
    }
}

impl EmbeddedBackend {
    /// The model at `path` (default: [`crate::default_model_path`]) under
    /// the subject name `embedded/<name>`, loaded once per process for every
    /// backend that names the same file and options
    /// ([`EmbeddedModel::shared`]).
    pub fn load(name: &str, path: Option<PathBuf>, options: Options) -> Result<Self> {
        let path = path.unwrap_or_else(crate::default_model_path);
        let model = EmbeddedModel::shared(&path, options).map_err(|source| Error::Blocking {
            backend: format!("embedded/{name}"),
            message: source.to_string(),
        })?;
        Ok(Self::from_model(name, model))
    }

    /// Wraps an already loaded model (several subjects or judges can share one).
    pub fn from_model(name: &str, model: Arc<EmbeddedModel>) -> Self {
        let identity = Self::identity_of(name, model.path(), model.options().batch_tokens);
        Self { model, identity }
    }

    /// The identity (cache key part) of `embedded/<name>` served from the
    /// model file at `path` with prompt batches of `batch_tokens` (outputs
    /// depend on both), without loading it (a dry run's cache check).
    pub fn identity_of(name: &str, path: &std::path::Path, batch_tokens: u32) -> BackendIdentity {
        BackendIdentity {
            backend: "embedded-gguf".into(),
            subject: format!("embedded/{name}"),
            model: name.to_string(),
            base_url: format!("file://{}?batch={batch_tokens}", path.display()),
        }
    }

    /// The loaded model.
    pub fn model(&self) -> &Arc<EmbeddedModel> {
        &self.model
    }
}

fn to_messages(request: &ChatRequest) -> Vec<crate::Message> {
    request
        .messages
        .iter()
        .map(|message| match message {
            Message::System { content } => crate::Message::new("system", content.clone()),
            Message::User { content } => crate::Message::new("user", content.clone()),
            Message::Assistant { content, tool_calls } => {
                let mut text = content.clone().unwrap_or_default();
                for call in tool_calls {
                    text.push_str(&format!("\nACTION: {} {}", call.name, call.arguments));
                }
                crate::Message::new("assistant", text)
            }
            Message::Tool { content, .. } => crate::Message::new("user", format!("Tool result:\n{content}")),
        })
        .collect()
}

const ANY_FLAT_OBJECT: &str = r#"root ::= "{" ws (pair (ws "," ws pair)*)? ws "}"
pair ::= string ws ":" ws (string | number | boolean | "null")
ws ::= [ \t\n]{0,2}
string ::= "\"" char* "\""
char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
number ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})?
boolean ::= "true" | "false"
"#;

impl BlockingChatBackend for EmbeddedBackend {
    fn identity(&self) -> &BackendIdentity {
        &self.identity
    }

    fn send_blocking(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let grammar = match &request.params.response_format {
            None => None,
            Some(ResponseFormat::JsonObject) => Some(ANY_FLAT_OBJECT.to_string()),
            Some(ResponseFormat::JsonSchema { schema, .. }) => {
                Some(json_schema_to_gbnf(schema).map_err(|source| Error::Unsupported {
                    backend: self.identity.subject.clone(),
                    reason: source.to_string(),
                })?)
            }
        };
        let temperature = request.params.temperature.unwrap_or(0.0) as f32;
        let generation = self
            .model
            .generate(&crate::Request {
                messages: to_messages(request),
                max_tokens: request.params.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
                temperature,
                seed: request.params.seed.unwrap_or(0) as u32,
                grammar,
            })
            .map_err(|source| Error::Blocking {
                backend: self.identity.subject.clone(),
                message: source.to_string(),
            })?;
        let raw = serde_json::json!({
            "text": generation.text,
            "finish_reason": generation.finish_reason,
            "prompt_tokens": generation.prompt_tokens,
            "completion_tokens": generation.completion_tokens,
        });
        Ok(ChatResponse {
            text: Some(generation.text),
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: generation.prompt_tokens as u64,
                output_tokens: generation.completion_tokens as u64,
                cached_input_tokens: generation.reused_prompt_tokens as u64,
            },
            finish_reason: Some(generation.finish_reason.to_string()),
            model: Some(self.identity.model.clone()),
            raw,
        })
    }
}
