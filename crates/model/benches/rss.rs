//! Memory over a long run: `CFEVAL_BENCH_CALLS` (default 100 000) distinct calls through
//! one `ModelClient` against the crate's zero-latency test server, with the response cache
//! and the call journal on, both fsynced, as the infer stage opens them (`cfeval infer`
//! builds its clients that way). The process's resident set (`VmRSS` from
//! `/proc/self/status`, which counts the test server too: it runs in this process) is
//! sampled after every `CFEVAL_BENCH_SAMPLE` (default 10 000) calls; the goal is a flat
//! line: the last sample no more than a few MiB above the first.
//!
//! `cargo bench -p cfeval-model --bench rss`
//! Environment: `CFEVAL_BENCH_CALLS`, `CFEVAL_BENCH_SAMPLE`, `CFEVAL_BENCH_CONCURRENCY`
//! (calls in flight, default 64), `CFEVAL_BENCH_DIR` (where the cache and journal go;
//! default a temporary folder, removed at the end).

use std::time::Instant;

use cfeval_model::testing::{ServerConfig, TestServer};
use cfeval_model::{
    BackendConfig, ChatParams, ChatRequest, Journal, Limits, Message, ModelClient, Protocol, ResponseCache,
    http_backend,
};

mod support;
use support::{env_number, runtime};

/// A `/proc/self/status` field in KiB (`VmRSS`, `VmHWM`).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Sends calls `from..to`, `concurrency` at a time; returns the number of errors.
async fn calls(client: &ModelClient, from: usize, to: usize, concurrency: usize) -> usize {
    let mut errors = 0;
    let mut tasks = tokio::task::JoinSet::new();
    for index in from..to {
        if tasks.len() >= concurrency
            && let Some(done) = tasks.join_next().await
        {
            errors += usize::from(!matches!(done, Ok(true)));
        }
        let client = client.clone();
        tasks.spawn(async move {
            let request = ChatRequest::new(vec![
                Message::system("You are an oncologist."),
                Message::user(format!("Case {index}: recommend a treatment plan.")),
            ])
            .with_params(ChatParams {
                temperature: Some(0.0),
                seed: Some(0),
                ..ChatParams::default()
            });
            client
                .chat_tagged(&request, Some(&format!("variant-{index}")))
                .await
                .is_ok()
        });
    }
    while let Some(done) = tasks.join_next().await {
        errors += usize::from(!matches!(done, Ok(true)));
    }
    errors
}

fn main() {
    let total = env_number("CFEVAL_BENCH_CALLS", 100_000);
    let sample = env_number("CFEVAL_BENCH_SAMPLE", 10_000).max(1);
    let concurrency = env_number("CFEVAL_BENCH_CONCURRENCY", 64).max(1);
    let temporary = tempfile::tempdir().expect("temporary directory");
    let dir = std::env::var_os("CFEVAL_BENCH_DIR").map_or_else(|| temporary.path().to_path_buf(), Into::into);

    let server_runtime = runtime();
    let client_runtime = runtime();
    let server = server_runtime
        .block_on(TestServer::start(ServerConfig::default()))
        .expect("test server");
    let limits = Limits {
        max_concurrency: concurrency,
        ..Limits::default()
    };
    let config = BackendConfig::custom(
        "vllm/rss-model",
        Protocol::OpenAiChat,
        server.openai_base_url(),
        None,
    )
    .expect("config")
    .with_limits(limits.clone());
    let client = client_runtime.block_on(async {
        let (journal, _) = Journal::open(dir.join("journal.jsonl"), true).expect("journal");
        ModelClient::builder(http_backend(config).expect("backend"))
            .limits(limits)
            .cache(ResponseCache::open(dir.join("cache"), true).expect("cache"))
            .journal(journal)
            .build()
            .expect("client")
    });

    let before = status_kib("VmRSS");
    println!(
        "{total} calls, {concurrency} in flight, cache + fsynced journal in {}",
        dir.display()
    );
    println!("RSS before the first call: {:.1} MiB", mib(before));
    println!();
    println!("| calls | VmRSS MiB | calls/s (this stretch) | errors |");
    println!("| --- | --- | --- | --- |");
    let mut samples = Vec::new();
    let mut errors = 0;
    let started = Instant::now();
    let mut done = 0;
    while done < total {
        let next = (done + sample).min(total);
        let stretch = Instant::now();
        let failed = client_runtime.block_on(calls(&client, done, next, concurrency));
        let rate = (next - done) as f64 / stretch.elapsed().as_secs_f64();
        errors += failed;
        done = next;
        let rss = status_kib("VmRSS");
        samples.push(rss);
        println!("| {done} | {:.1} | {rate:.0} | {failed} |", mib(rss));
    }
    let seconds = started.elapsed().as_secs_f64();
    let first = samples.first().copied().unwrap_or(before);
    let last = samples.last().copied().unwrap_or(before);
    let peak = samples.iter().copied().max().unwrap_or(before);
    println!();
    println!(
        "{done} calls in {seconds:.1} s ({:.0} calls/s), {errors} errors; server answered {}",
        done as f64 / seconds,
        server.answered_ok()
    );
    println!(
        "VmRSS first sample {:.1} MiB, last {:.1} MiB (last − first {:+.1} MiB), peak sample {:.1} MiB; VmHWM {:.1} MiB",
        mib(first),
        mib(last),
        mib(last) - mib(first),
        mib(peak),
        mib(status_kib("VmHWM"))
    );
    let stats = client.stats();
    println!("client: {} calls, {} succeeded", stats.calls, stats.succeeded);
}
