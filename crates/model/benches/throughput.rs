//! Throughput of `ModelClient` against the crate's local test server, and of the Python
//! `openai` asyncio client doing the same work against the same server in the same run.
//!
//! (a) Efficiency: achieved / ideal throughput at 200 ms server latency, 256 calls in
//!     flight (ideal = 256 / 0.2 s = 1280 calls/s). Goal ≥ 0.95.
//! (b) Calls per second at zero latency, 64 in flight; ratio to Python. Goal ≥ 5×.
//!
//! The server and the Rust client each get a one-worker tokio runtime (the Python
//! client is one asyncio process), so the two clients compete on equal terms.
//!
//! `cargo bench -p cfeval-model --bench throughput`
//! Environment: `CFEVAL_BENCH_PYTHON` (default `python3`), `CFEVAL_BENCH_ROUNDS`
//! (200 ms rounds, default 20), `CFEVAL_BENCH_REQUESTS` (zero-latency calls, default
//! 10000). The Python side needs `pip install openai`; without it that row is skipped.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use cfeval_model::testing::{ServerConfig, TestServer};
use cfeval_model::{
    BackendConfig, ChatParams, ChatRequest, Journal, Limits, Message, ModelClient, Protocol, ResponseCache,
    http_backend,
};

mod support;
use support::{env_number, runtime};

fn client(server: &TestServer, concurrency: usize, store: Option<&Path>) -> ModelClient {
    let limits = Limits {
        max_concurrency: concurrency,
        attempt_timeout_secs: 60.0,
        ..Limits::default()
    };
    let config = BackendConfig::custom(
        "vllm/bench-model",
        Protocol::OpenAiChat,
        server.openai_base_url(),
        None,
    )
    .expect("config")
    .with_limits(limits.clone());
    let mut builder = ModelClient::builder(http_backend(config).expect("backend")).limits(limits);
    if let Some(dir) = store {
        let (journal, _) = Journal::open(dir.join("calls.jsonl"), true).expect("journal");
        builder = builder
            .cache(ResponseCache::open(dir.join("cache"), false).expect("cache"))
            .journal(journal);
    }
    builder.build().expect("client")
}

/// Makes `count` distinct calls (labelled `label`), all submitted at once; the client's
/// limiter keeps its concurrency. Returns (seconds, errors).
fn run(runtime: &tokio::runtime::Runtime, client: &ModelClient, label: &str, count: usize) -> (f64, usize) {
    runtime.block_on(async {
        let start = Instant::now();
        let tasks: Vec<_> = (0..count)
            .map(|index| {
                let client = client.clone();
                let request = ChatRequest::new(vec![Message::user(format!("{label} case {index}"))])
                    .with_params(ChatParams {
                        temperature: Some(0.0),
                        seed: Some(1),
                        ..ChatParams::default()
                    });
                tokio::spawn(async move { client.chat(&request).await.is_ok() })
            })
            .collect();
        let mut errors = 0;
        for task in tasks {
            if !matches!(task.await, Ok(true)) {
                errors += 1;
            }
        }
        (start.elapsed().as_secs_f64(), errors)
    })
}

#[derive(serde::Deserialize)]
struct PythonResult {
    requests: usize,
    seconds: f64,
    requests_per_second: f64,
    errors: usize,
    openai_version: String,
}

fn python(server: &TestServer, requests: usize, concurrency: usize) -> Option<PythonResult> {
    let python = std::env::var("CFEVAL_BENCH_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/openai_client.py");
    let output = Command::new(&python)
        .arg(&script)
        .args(["--base-url", &server.openai_base_url()])
        .args(["--requests", &requests.to_string()])
        .args(["--concurrency", &concurrency.to_string()])
        .output();
    match output {
        Ok(output) if output.status.success() => {
            let text = String::from_utf8_lossy(&output.stdout);
            serde_json::from_str(text.trim()).ok()
        }
        Ok(output) => {
            eprintln!(
                "python client failed (pip install openai?): {}",
                String::from_utf8_lossy(&output.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            );
            None
        }
        Err(err) => {
            eprintln!("could not run {python}: {err}");
            None
        }
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument is not supported.
    let rounds = env_number("CFEVAL_BENCH_ROUNDS", 20);
    let zero_latency_requests = env_number("CFEVAL_BENCH_REQUESTS", 10_000);
    let server_runtime = runtime();
    let client_runtime = runtime();
    let store = tempfile::tempdir().expect("temporary directory");

    // (a) Efficiency at 200 ms, 256 in flight.
    let latency = Duration::from_millis(200);
    let concurrency = 256;
    let server = server_runtime
        .block_on(TestServer::start(ServerConfig {
            latency,
            ..ServerConfig::default()
        }))
        .expect("test server");
    let requests = concurrency * rounds;
    let ideal = concurrency as f64 / latency.as_secs_f64();
    println!("## (a) efficiency: latency 200 ms, concurrency {concurrency}, {requests} calls");
    println!("| client | calls | seconds | calls/s | ideal calls/s | efficiency | errors |");
    println!("|---|---|---|---|---|---|---|");
    let plain = client(&server, concurrency, None);
    run(&client_runtime, &plain, "warm-up", concurrency);
    let (seconds, errors) = run(&client_runtime, &plain, "plain", requests);
    let achieved = requests as f64 / seconds;
    println!(
        "| cfeval-model | {requests} | {seconds:.3} | {achieved:.1} | {ideal:.0} | {:.4} | {errors} |",
        achieved / ideal
    );
    let stored = client(&server, concurrency, Some(store.path()));
    run(&client_runtime, &stored, "warm-up-stored", concurrency);
    let (seconds, errors) = run(&client_runtime, &stored, "stored", requests);
    let achieved = requests as f64 / seconds;
    println!(
        "| cfeval-model + cache + fsynced journal | {requests} | {seconds:.3} | {achieved:.1} | {ideal:.0} | {:.4} | {errors} |",
        achieved / ideal
    );
    if let Some(result) = python(&server, requests, concurrency) {
        println!(
            "| python openai {} (asyncio) | {} | {:.3} | {:.1} | {ideal:.0} | {:.4} | {} |",
            result.openai_version,
            result.requests,
            result.seconds,
            result.requests_per_second,
            result.requests_per_second / ideal,
            result.errors
        );
    }
    drop(server);

    // (b) Zero latency, 64 in flight.
    let concurrency = 64;
    let requests = zero_latency_requests;
    let server = server_runtime
        .block_on(TestServer::start(ServerConfig::default()))
        .expect("test server");
    println!();
    println!("## (b) zero latency, concurrency {concurrency}, {requests} calls");
    println!("| client | calls | seconds | calls/s | errors |");
    println!("|---|---|---|---|---|");
    let plain = client(&server, concurrency, None);
    run(&client_runtime, &plain, "warm-up", concurrency);
    let (seconds, errors) = run(&client_runtime, &plain, "fast", requests);
    let rust_rate = requests as f64 / seconds;
    println!("| cfeval-model | {requests} | {seconds:.3} | {rust_rate:.0} | {errors} |");
    match python(&server, requests, concurrency) {
        Some(result) => {
            println!(
                "| python openai {} (asyncio) | {} | {:.3} | {:.0} | {} |",
                result.openai_version,
                result.requests,
                result.seconds,
                result.requests_per_second,
                result.errors
            );
            println!();
            println!(
                "ratio cfeval-model / python openai: {:.1}x",
                rust_rate / result.requests_per_second
            );
        }
        None => println!("| python openai (asyncio) | skipped: could not run the script | | | |"),
    }
}
