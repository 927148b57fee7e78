//! Model access for cfeval: every subject and judge model behind one chat trait, with
//! the I/O a sweep of many thousand calls needs.
//!
//! - [`types`]: provider-neutral [`ChatRequest`] (messages, tools, parameters) and
//!   [`ChatResponse`] (text, tool calls, usage, raw body).
//! - [`backend`]: the [`ChatBackend`] trait (one attempt, object-safe), the
//!   OpenAI-compatible and Anthropic Messages HTTP backends, and [`Blocking`], which runs
//!   a synchronous backend (embedded GGUF model, control subject) on the blocking pool.
//! - [`subject`]: `provider/model` names as in inspect_ai (`openai/gpt-5`,
//!   `anthropic/claude-opus-4-7`, `xai/grok-4`, `vllm/<model>`) and their resolution from
//!   the usual environment variables to a [`BackendConfig`]. Keys live in [`ApiKey`],
//!   which never prints.
//! - [`ModelClient`]: a backend plus bounded, adaptive (AIMD) concurrency, requests- and
//!   tokens-per-minute buckets, retries with jittered exponential backoff honouring
//!   `Retry-After`, per-attempt and total timeouts, the content-addressed
//!   [`ResponseCache`], the crash-safe [`Journal`], and token/cost accounting from the
//!   [`PriceTable`] (`data/prices.yaml`).
//! - [`fence`]: data inside prompts (chart text, tool results, replies) between
//!   tags it cannot close, with chat-template control tokens broken.
//! - `testing` (feature `testing`): a fault-injecting OpenAI/Anthropic-compatible server
//!   for tests and benches of this and other crates.
//!
//! ```no_run
//! # async fn demo() -> cfeval_model::Result<()> {
//! use cfeval_model::{ChatRequest, Message, ModelClient, PriceTable, ResponseCache, SubjectSpec};
//! let config = SubjectSpec::new("openai/gpt-5").resolve()?;
//! let prices = PriceTable::bundled()?;
//! let client = ModelClient::from_config(config, Some(&prices))?
//!     .cache(ResponseCache::open("runs/cache", true)?)
//!     .build()?;
//! let done = client.chat(&ChatRequest::new(vec![Message::user("Hello")])).await?;
//! println!("{:?} cost {:?}", done.response.text, done.cost_usd);
//! # Ok(()) }
//! ```

pub mod backend;
pub mod batch;
pub mod cache;
mod client;
pub mod error;
pub mod fence;
mod join;
pub mod journal;
pub mod limit;
pub mod price;
mod retry;
pub mod subject;
#[cfg(feature = "testing")]
pub mod testing;
pub mod types;

pub use backend::{
    AnthropicBackend, BackendIdentity, Blocking, BlockingChatBackend, BoxFuture, ChatBackend, OpenAiBackend,
    http_backend,
};
pub use cache::{CacheKey, Layout as CacheLayout, ResponseCache, maintain as cache_maintenance};
pub use client::{
    CallFailure, ClientStats, Completion, ModelClient, ModelClientBuilder, ReplyCheck, Unusable,
};
pub use error::{Error, Result};
pub use join::join_all;
pub use journal::{CallOutcome, Journal, JournalRecord, Recovery, ReplayStats};
pub use limit::Limits;
pub use price::{Price, PriceTable};
pub use retry::parse_retry_after;
pub use subject::{ApiKey, BackendConfig, Protocol, SubjectSpec, parse_subject_name};
pub use types::{
    ChatParams, ChatRequest, ChatResponse, Message, ResponseFormat, ToolCall, ToolChoice, ToolSpec, Usage,
};
