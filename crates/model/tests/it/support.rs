//! Shared helpers.

use cfeval_model::testing::{ServerConfig, TestServer};
use cfeval_model::{ApiKey, BackendConfig, Limits, ModelClient, ModelClientBuilder, Protocol, http_backend};

/// Limits that make retries fast and hangs short, for tests.
pub fn fast_limits() -> Limits {
    Limits {
        max_concurrency: 16,
        attempt_timeout_secs: 1.0,
        total_timeout_secs: 30.0,
        max_attempts: 6,
        backoff_base_secs: 0.005,
        backoff_max_secs: 0.05,
        max_retry_after_secs: 2.0,
        ..Limits::default()
    }
}

pub async fn server(config: ServerConfig) -> TestServer {
    TestServer::start(config).await.expect("test server starts")
}

pub fn openai_config(server: &TestServer, subject: &str, key: Option<&str>) -> BackendConfig {
    BackendConfig::custom(
        subject,
        Protocol::OpenAiChat,
        server.openai_base_url(),
        key.map(ApiKey::new),
    )
    .expect("valid config")
    .with_limits(fast_limits())
}

pub fn anthropic_config(server: &TestServer, subject: &str, key: Option<&str>) -> BackendConfig {
    BackendConfig::custom(
        subject,
        Protocol::AnthropicMessages,
        server.base_url(),
        key.map(ApiKey::new),
    )
    .expect("valid config")
    .with_limits(fast_limits())
}

pub fn client_builder(config: BackendConfig) -> ModelClientBuilder {
    let limits = config.limits.clone();
    ModelClient::builder(http_backend(config).expect("backend")).limits(limits)
}

/// Runs futures concurrently on the current task and collects their outputs in order.
pub async fn join_all<F>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut outputs = Vec::with_capacity(handles.len());
    for handle in handles {
        outputs.push(handle.await.expect("task finished"));
    }
    outputs
}
