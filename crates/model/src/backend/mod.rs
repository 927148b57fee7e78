//! The chat trait every backend implements, and the adapter that runs blocking
//! (CPU-bound, in-process) backends on tokio's blocking pool.

mod anthropic;
pub mod batch;
mod http;
mod openai;
pub mod strict;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use anthropic::AnthropicBackend;
pub use openai::OpenAiBackend;

use crate::error::{Error, Result};
use crate::subject::{BackendConfig, Protocol};
use crate::types::{ChatRequest, ChatResponse};

/// A boxed, sendable future (what [`ChatBackend::send`] returns, so the trait is
/// object-safe).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a backend is, for cache keys and messages. Two backends with equal identities
/// must answer equal requests equally (modulo sampling).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackendIdentity {
    /// The kind of backend: `openai-chat`, `anthropic-messages`, `gguf`, `control`, …
    pub backend: String,
    /// The subject name (`openai/gpt-5`).
    pub subject: String,
    /// The model name sent to the API (or loaded).
    pub model: String,
    /// Where it is served (`""` for in-process backends; a model file path for GGUF).
    pub base_url: String,
}

impl BackendIdentity {
    pub fn from_config(config: &BackendConfig) -> Self {
        let backend = match config.protocol {
            Protocol::OpenAiChat => "openai-chat",
            Protocol::AnthropicMessages => "anthropic-messages",
        };
        BackendIdentity {
            backend: backend.to_string(),
            subject: config.subject.clone(),
            model: config.model.clone(),
            base_url: config.base_url.clone(),
        }
    }
}

/// One chat model: messages, tools and parameters in; text, tool calls, usage and the
/// raw response out.
///
/// `send` makes exactly one attempt. Limits, retries, timeouts, the response cache, the
/// journal and cost accounting live in [`crate::ModelClient`], which wraps any backend.
/// Errors must say whether another attempt may help ([`Error::is_retryable`]).
pub trait ChatBackend: Send + Sync {
    fn identity(&self) -> &BackendIdentity;

    fn send<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse>>;

    /// The provider's batch endpoints, where it has them (see [`batch`]).
    fn batch(&self) -> Option<&dyn batch::BatchBackend> {
        None
    }
}

/// A backend that computes its answer synchronously (an embedded GGUF model, a control
/// subject). Wrap it in [`Blocking`] to get a [`ChatBackend`].
pub trait BlockingChatBackend: Send + Sync + 'static {
    fn identity(&self) -> &BackendIdentity;

    fn send_blocking(&self, request: &ChatRequest) -> Result<ChatResponse>;
}

/// Runs a [`BlockingChatBackend`] on tokio's blocking pool (`spawn_blocking`), so it
/// never stalls the async workers.
pub struct Blocking<B> {
    inner: Arc<B>,
}

impl<B: BlockingChatBackend> Blocking<B> {
    pub fn new(backend: B) -> Self {
        Blocking {
            inner: Arc::new(backend),
        }
    }

    pub fn inner(&self) -> &B {
        &self.inner
    }
}

impl<B: BlockingChatBackend> ChatBackend for Blocking<B> {
    fn identity(&self) -> &BackendIdentity {
        self.inner.identity()
    }

    fn send<'a>(&'a self, request: &'a ChatRequest) -> BoxFuture<'a, Result<ChatResponse>> {
        let inner = self.inner.clone();
        let request = request.clone();
        Box::pin(async move {
            let subject = inner.identity().subject.clone();
            tokio::task::spawn_blocking(move || inner.send_blocking(&request))
                .await
                .map_err(|err| Error::Blocking {
                    backend: subject,
                    message: err.to_string(),
                })?
        })
    }
}

/// The HTTP backend for `config`'s protocol.
pub fn http_backend(config: BackendConfig) -> Result<Arc<dyn ChatBackend>> {
    Ok(match config.protocol {
        Protocol::OpenAiChat => Arc::new(OpenAiBackend::new(config)?),
        Protocol::AnthropicMessages => Arc::new(AnthropicBackend::new(config)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Message, Usage};

    struct Echo {
        identity: BackendIdentity,
    }

    impl BlockingChatBackend for Echo {
        fn identity(&self) -> &BackendIdentity {
            &self.identity
        }

        fn send_blocking(&self, request: &ChatRequest) -> Result<ChatResponse> {
            let text = match request.messages.last() {
                Some(Message::User { content }) => content.to_uppercase(),
                _ => {
                    return Err(Error::Unsupported {
                        backend: "echo".into(),
                        reason: "last message must be a user turn".into(),
                    });
                }
            };
            Ok(ChatResponse {
                text: Some(text),
                tool_calls: Vec::new(),
                finish_reason: Some("stop".into()),
                usage: Usage::default(),
                model: None,
                raw: serde_json::Value::Null,
            })
        }
    }

    #[tokio::test]
    async fn blocking_backends_run_behind_the_async_trait() {
        let backend: Arc<dyn ChatBackend> = Arc::new(Blocking::new(Echo {
            identity: BackendIdentity {
                backend: "echo".into(),
                subject: "control/echo".into(),
                model: "echo".into(),
                base_url: String::new(),
            },
        }));
        let ok = backend.send(&ChatRequest::new(vec![Message::user("hi")])).await;
        assert_eq!(ok.ok().and_then(|r| r.text), Some("HI".to_string()));
        let err = backend.send(&ChatRequest::new(vec![Message::system("x")])).await;
        assert!(matches!(err, Err(Error::Unsupported { .. })));
    }
}
