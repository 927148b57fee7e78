//! A fault-injecting OpenAI- and Anthropic-compatible HTTP/1.1 server for tests and
//! benchmarks (feature `testing`). Hand-written on tokio so it can misbehave in ways a
//! real HTTP library would not let it: hang, cut a body short, send broken JSON.
//!
//! It serves `POST /v1/chat/completions` (and `/chat/completions`) and
//! `POST /v1/messages` on `127.0.0.1:<free port>`. Answers are deterministic:
//! the text is `"[<model>] <last user text>"`; when tools are offered and no tool
//! result has come back yet, it calls the first tool (or the forced one) with
//! `{"query": <last user text>}`. Faults come from a script (exact sequence) or at
//! random with given rates, seeded. Every request is counted, per model too.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use cfeval_model::testing::{ServerConfig, TestServer, Fault};
//! let server = TestServer::start(ServerConfig::default()).await?;
//! server.script([Fault::RateLimited { retry_after: Some("0".into()) }, Fault::ServerError]);
//! let base_url = server.openai_base_url(); // http://127.0.0.1:PORT/v1
//! # Ok(()) }
//! ```

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod batch;
mod reply;
pub use reply::REFUSAL_TEXT;
mod wire;

use serde_json::Value;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use reply::{Answer, Protocol, reply};
use wire::{Request, error_body, read_request, write_response};

/// One way to answer a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// A correct answer.
    None,
    /// 429, with this `Retry-After` header value (seconds or an HTTP-date) if any.
    RateLimited { retry_after: Option<String> },
    /// 500.
    ServerError,
    /// 400 (a terminal client error).
    BadRequest,
    /// Never answer (until the server stops or `hang_for` passes).
    Hang,
    /// 200 with a body that is not JSON.
    MalformedJson,
    /// 200 whose body stops halfway (`Content-Length` says more), then the connection
    /// closes.
    TruncatedBody,
    /// A tool call whose `arguments` are broken JSON (only when tools are offered;
    /// otherwise a correct answer).
    BadToolJson,
    /// 200 with no text at all (`finish_reason: stop`).
    EmptyReply,
    /// 200 whose text declines to answer.
    Refusal,
    /// 200 whose text is cut off (`finish_reason: length`, Anthropic
    /// `stop_reason: max_tokens`).
    Length,
}

/// Random fault rates (each a probability; they should add up to at most 1).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FaultRates {
    pub rate_limited: f64,
    pub server_error: f64,
    pub hang: f64,
    pub malformed_json: f64,
    pub truncated_body: f64,
    pub bad_tool_json: f64,
    /// Terminal 400s.
    pub bad_request: f64,
    pub empty_reply: f64,
    pub refusal: f64,
    pub length: f64,
}

impl FaultRates {
    /// `total` split evenly over 429, 500, hang, malformed JSON and truncated bodies.
    pub fn mixed(total: f64) -> Self {
        let each = total / 5.0;
        FaultRates {
            rate_limited: each,
            server_error: each,
            hang: each,
            malformed_json: each,
            truncated_body: each,
            ..FaultRates::default()
        }
    }

    /// `total` split evenly over every kind of fault: 429, 500, terminal
    /// 400, hang, malformed JSON, truncated body, broken tool arguments, and
    /// the unusable 200s (empty, refusal, cut off by the token limit).
    pub fn every_kind(total: f64) -> Self {
        let each = total / 10.0;
        FaultRates {
            rate_limited: each,
            server_error: each,
            hang: each,
            malformed_json: each,
            truncated_body: each,
            bad_tool_json: each,
            bad_request: each,
            empty_reply: each,
            refusal: each,
            length: each,
        }
    }
}

/// Computes the answer text from the model name, the last user text and the
/// request's `seed` (OpenAI protocol; `None` when absent), replacing the default
/// `"[<model>] <text>"`: e.g. to return a judge's JSON verdict, or to answer
/// differently per seed as a sampling model does.
pub type Responder = Arc<dyn Fn(&str, &str, Option<u64>) -> String + Send + Sync>;

/// How the server behaves.
#[derive(Clone)]
pub struct ServerConfig {
    /// Added before every answer.
    pub latency: Duration,
    pub faults: FaultRates,
    pub seed: u64,
    /// `Retry-After` value sent with random 429s.
    pub retry_after: Option<String>,
    /// How long a hang lasts at most.
    pub hang_for: Duration,
    /// When set, requests must carry this key (`Authorization: Bearer` or `x-api-key`);
    /// others get 401 with the key they sent echoed in the body, as real providers do.
    pub require_key: Option<String>,
    /// Custom answer text (tool calls are unaffected).
    pub responder: Option<Responder>,
    /// Keep every request's JSON body ([`TestServer::bodies`]), for tests
    /// that inspect what a model was sent.
    pub record_bodies: bool,
    /// Polls of a batch (the batch endpoints) before it has ended.
    pub batch_polls: u32,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("latency", &self.latency)
            .field("faults", &self.faults)
            .field("seed", &self.seed)
            .field("retry_after", &self.retry_after)
            .field("hang_for", &self.hang_for)
            .field("require_key", &self.require_key.as_ref().map(|_| "<redacted>"))
            .field("responder", &self.responder.as_ref().map(|_| "<fn>"))
            .field("record_bodies", &self.record_bodies)
            .field("batch_polls", &self.batch_polls)
            .finish()
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            latency: Duration::ZERO,
            faults: FaultRates::default(),
            seed: 0,
            retry_after: Some("0".into()),
            hang_for: Duration::from_secs(120),
            require_key: None,
            responder: None,
            record_bodies: false,
            batch_polls: 2,
        }
    }
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    answered_ok: AtomicU64,
    faults: AtomicU64,
    unauthorized: AtomicU64,
    connections: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    per_model: Mutex<HashMap<String, u64>>,
    last_body: Mutex<Option<Value>>,
    bodies: Mutex<Vec<Value>>,
    batches_created: AtomicU64,
    batch_per_model: Mutex<HashMap<String, u64>>,
}

struct State {
    config: ServerConfig,
    batches: Mutex<batch::Store>,
    script: Mutex<VecDeque<Fault>>,
    counters: Counters,
    sequence: AtomicU64,
}

/// A running test server; it stops when dropped.
pub struct TestServer {
    address: SocketAddr,
    state: Arc<State>,
    shutdown: watch::Sender<bool>,
}

impl std::fmt::Debug for TestServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestServer")
            .field("address", &self.address)
            .field("requests", &self.requests())
            .finish()
    }
}

impl TestServer {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime.
    pub async fn start(config: ServerConfig) -> std::io::Result<TestServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let address = listener.local_addr()?;
        let state = Arc::new(State {
            config,
            batches: Mutex::new(batch::Store::default()),
            script: Mutex::new(VecDeque::new()),
            counters: Counters::default(),
            sequence: AtomicU64::new(0),
        });
        let (shutdown, stop) = watch::channel(false);
        let accept_state = state.clone();
        tokio::spawn(async move {
            let mut stop_accept = stop.clone();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        let _ = stream.set_nodelay(true);
                        accept_state.counters.connections.fetch_add(1, Ordering::Relaxed);
                        let state = accept_state.clone();
                        let stop = stop.clone();
                        tokio::spawn(async move {
                            if let Err(err) = serve_connection(stream, state, stop).await {
                                tracing::trace!(error = %err, "test server connection ended");
                            }
                        });
                    }
                    _ = stop_accept.changed() => break,
                }
            }
        });
        Ok(TestServer {
            address,
            state,
            shutdown,
        })
    }

    /// Batches created on the batch endpoints.
    pub fn batches_created(&self) -> u64 {
        self.state.counters.batches_created.load(Ordering::Relaxed)
    }

    /// Requests for `model` sent inside batches.
    pub fn batch_requests_for_model(&self, model: &str) -> u64 {
        self.state
            .counters
            .batch_per_model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(model)
            .copied()
            .unwrap_or(0)
    }

    /// `http://127.0.0.1:PORT` (the Anthropic base URL).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// `http://127.0.0.1:PORT/v1` (the OpenAI-compatible base URL).
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// A config for `subject` (`provider/model`) talking OpenAI chat completions to this
    /// server, without a key and with default limits.
    pub fn openai_config(&self, subject: &str) -> crate::Result<crate::BackendConfig> {
        crate::BackendConfig::custom(subject, crate::Protocol::OpenAiChat, self.openai_base_url(), None)
    }

    /// A config for `subject` talking Anthropic Messages to this server.
    pub fn anthropic_config(&self, subject: &str) -> crate::Result<crate::BackendConfig> {
        crate::BackendConfig::custom(subject, crate::Protocol::AnthropicMessages, self.base_url(), None)
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Queues faults for the next requests, in arrival order (before random faults).
    pub fn script(&self, faults: impl IntoIterator<Item = Fault>) {
        let mut script = self
            .state
            .script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        script.extend(faults);
    }

    /// Complete requests received.
    pub fn requests(&self) -> u64 {
        self.state.counters.requests.load(Ordering::Relaxed)
    }

    /// The most requests that were being answered at one moment.
    pub fn max_in_flight(&self) -> u64 {
        self.state.counters.max_in_flight.load(Ordering::SeqCst)
    }

    /// Requests naming `model`.
    pub fn requests_for_model(&self, model: &str) -> u64 {
        let per_model = self
            .state
            .counters
            .per_model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        per_model.get(model).copied().unwrap_or(0)
    }

    /// Requests answered correctly (200 with a well-formed body).
    pub fn answered_ok(&self) -> u64 {
        self.state.counters.answered_ok.load(Ordering::Relaxed)
    }

    /// Requests answered with an injected fault.
    pub fn faults_injected(&self) -> u64 {
        self.state.counters.faults.load(Ordering::Relaxed)
    }

    /// Requests refused for a wrong or missing key.
    pub fn unauthorized(&self) -> u64 {
        self.state.counters.unauthorized.load(Ordering::Relaxed)
    }

    /// The JSON body of the last request received.
    pub fn last_body(&self) -> Option<Value> {
        self.state
            .counters
            .last_body
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Every request's JSON body, in arrival order (with
    /// [`ServerConfig::record_bodies`]; empty otherwise).
    pub fn bodies(&self) -> Vec<Value> {
        self.state
            .counters
            .bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// TCP connections accepted.
    pub fn connections(&self) -> u64 {
        self.state.counters.connections.load(Ordering::Relaxed)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// A [`TestServer`] on its own one-worker runtime, for synchronous tests and benches
/// (no runtime needed by the caller). Derefs to the server; stops when dropped.
pub struct BackgroundServer {
    server: Option<TestServer>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl BackgroundServer {
    pub fn start(config: ServerConfig) -> std::io::Result<BackgroundServer> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("cfeval-test-server")
            .enable_all()
            .build()?;
        let server = runtime.block_on(TestServer::start(config))?;
        Ok(BackgroundServer {
            server: Some(server),
            runtime: Some(runtime),
        })
    }
}

impl std::ops::Deref for BackgroundServer {
    type Target = TestServer;

    fn deref(&self) -> &TestServer {
        match &self.server {
            Some(server) => server,
            None => unreachable!("the server is only taken in drop"),
        }
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        drop(self.server.take());
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn serve_connection(
    stream: TcpStream,
    state: Arc<State>,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream);
    loop {
        let request = tokio::select! {
            request = read_request(&mut reader) => request?,
            _ = stop.changed() => return Ok(()),
        };
        let Some(request) = request else {
            return Ok(());
        };
        let keep_going = tokio::select! {
            keep_going = answer(&mut reader, &state, &request) => keep_going?,
            _ = stop.changed() => return Ok(()),
        };
        if !keep_going || request.close {
            let _ = reader.get_mut().shutdown().await;
            return Ok(());
        }
    }
}

fn unit(seed: u64, index: u64) -> f64 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

fn pick_fault(state: &State) -> Fault {
    let scripted = state
        .script
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .pop_front();
    if let Some(fault) = scripted {
        return fault;
    }
    let index = state.sequence.fetch_add(1, Ordering::Relaxed);
    let rates = &state.config.faults;
    let mut draw = unit(state.config.seed, index);
    let choices = [
        (
            rates.rate_limited,
            Fault::RateLimited {
                retry_after: state.config.retry_after.clone(),
            },
        ),
        (rates.server_error, Fault::ServerError),
        (rates.hang, Fault::Hang),
        (rates.malformed_json, Fault::MalformedJson),
        (rates.truncated_body, Fault::TruncatedBody),
        (rates.bad_tool_json, Fault::BadToolJson),
        (rates.bad_request, Fault::BadRequest),
        (rates.empty_reply, Fault::EmptyReply),
        (rates.refusal, Fault::Refusal),
        (rates.length, Fault::Length),
    ];
    for (rate, fault) in choices {
        if draw < rate {
            return fault;
        }
        draw -= rate;
    }
    Fault::None
}

/// Counts a request in flight while it is being answered.
struct InFlight<'a>(&'a Counters);

impl<'a> InFlight<'a> {
    fn enter(counters: &'a Counters) -> Self {
        let now = counters.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        counters.max_in_flight.fetch_max(now, Ordering::SeqCst);
        InFlight(counters)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Answers one request; `Ok(false)` closes the connection.
async fn answer(
    reader: &mut BufReader<TcpStream>,
    state: &State,
    request: &Request,
) -> std::io::Result<bool> {
    let counters = &state.counters;
    counters.requests.fetch_add(1, Ordering::Relaxed);
    let _in_flight = InFlight::enter(counters);
    let stream = reader.get_mut();
    let base_url = stream
        .local_addr()
        .map(|address| format!("http://{address}"))
        .unwrap_or_default();
    if let Some((status, body)) = batch::route(state, request, &base_url) {
        write_response(stream, status, &[], &body).await?;
        return Ok(true);
    }
    let protocol = match (request.method.as_str(), request.path.as_str()) {
        ("POST", "/v1/chat/completions" | "/chat/completions") => Protocol::OpenAi,
        ("POST", "/v1/messages") => Protocol::Anthropic,
        _ => {
            write_response(stream, 404, &[], &error_body("no such route")).await?;
            return Ok(true);
        }
    };
    let body: Value = match serde_json::from_slice(&request.body) {
        Ok(body) => body,
        Err(err) => {
            write_response(
                stream,
                400,
                &[],
                &error_body(&format!("request is not JSON: {err}")),
            )
            .await?;
            return Ok(true);
        }
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    *counters
        .per_model
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(model.clone())
        .or_default() += 1;
    *counters
        .last_body
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(body.clone());
    if state.config.record_bodies {
        counters
            .bodies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(body.clone());
    }
    if let Some(expected) = &state.config.require_key {
        let sent = match protocol {
            Protocol::OpenAi => request
                .header("authorization")
                .and_then(|v| v.strip_prefix("Bearer "))
                .unwrap_or_default(),
            Protocol::Anthropic => request.header("x-api-key").unwrap_or_default(),
        };
        if sent != expected {
            counters.unauthorized.fetch_add(1, Ordering::Relaxed);
            let message = format!("Incorrect API key provided: {sent}");
            write_response(stream, 401, &[], &error_body(&message)).await?;
            return Ok(true);
        }
    }
    if protocol == Protocol::Anthropic && request.header("anthropic-version").is_none() {
        write_response(stream, 400, &[], &error_body("anthropic-version header required")).await?;
        return Ok(true);
    }
    if !state.config.latency.is_zero() {
        tokio::time::sleep(state.config.latency).await;
    }
    let fault = pick_fault(state);
    if fault != Fault::None && fault != Fault::BadToolJson {
        counters.faults.fetch_add(1, Ordering::Relaxed);
    }
    match fault {
        Fault::RateLimited { retry_after } => {
            let headers: Vec<(&str, String)> = retry_after.into_iter().map(|v| ("retry-after", v)).collect();
            write_response(stream, 429, &headers, &error_body("rate limited (injected)")).await?;
            Ok(true)
        }
        Fault::ServerError => {
            write_response(stream, 500, &[], &error_body("internal error (injected)")).await?;
            Ok(true)
        }
        Fault::BadRequest => {
            write_response(stream, 400, &[], &error_body("bad request (injected)")).await?;
            Ok(true)
        }
        Fault::Hang => {
            tokio::time::sleep(state.config.hang_for).await;
            Ok(false)
        }
        Fault::MalformedJson => {
            write_response(
                stream,
                200,
                &[],
                br#"{"choices": [{"message": {"content": "unterminated"#,
            )
            .await?;
            Ok(true)
        }
        Fault::TruncatedBody => {
            let full = reply(
                protocol,
                &body,
                &model,
                Answer::Normal,
                state.config.responder.as_ref(),
            )
            .to_string()
            .into_bytes();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                full.len()
            );
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(&full[..full.len() / 2]).await?;
            stream.flush().await?;
            Ok(false)
        }
        Fault::None | Fault::BadToolJson | Fault::EmptyReply | Fault::Refusal | Fault::Length => {
            let answer = match fault {
                Fault::BadToolJson => Answer::BadToolJson,
                Fault::EmptyReply => Answer::Empty,
                Fault::Refusal => Answer::Refusal,
                Fault::Length => Answer::Length,
                _ => Answer::Normal,
            };
            let out = reply(protocol, &body, &model, answer, state.config.responder.as_ref());
            write_response(stream, 200, &[], out.to_string().as_bytes()).await?;
            counters.answered_ok.fetch_add(1, Ordering::Relaxed);
            Ok(true)
        }
    }
}
