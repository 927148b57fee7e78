//! One setting decides the calls in flight: a pipeline's `[infer]
//! concurrency` and `cfeval infer --concurrency` both reach the model
//! client's limiter (whose default would cap them at 32).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cfeval_model::testing::{BackgroundServer, ServerConfig};

use crate::support::catalog;

fn succeeded(command: &mut Command, what: &str) {
    let output = command.output().expect(what);
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn cfeval(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cfeval"));
    command
        .current_dir(dir)
        .env("CFEVAL_PROGRESS", "plain")
        .env_remove("RUST_LOG")
        .env_remove("VLLM_API_KEY")
        .env_remove("VLLM_BASE_URL");
    command
}

#[test]
fn the_concurrency_setting_reaches_the_client() {
    let server = BackgroundServer::start(ServerConfig {
        latency: Duration::from_millis(250),
        ..ServerConfig::default()
    })
    .expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = dir.path().join("pipeline.toml");
    std::fs::write(
        &pipeline,
        format!(
            r#"[run]
name = "wide"

[cases]
cohort = {{ cases = 30, seed = 2 }}

[catalog]
path = "{catalog}"

[infer]
concurrency = 48
max-tokens = 32

[[subjects]]
name = "vllm/pipeline-model"
base-url = "{url}"

[[judges]]
name = "rule"

[aggregate]
resamples = 100
"#,
            catalog = catalog(),
            url = server.openai_base_url()
        ),
    )
    .expect("pipeline");
    succeeded(
        cfeval(dir.path())
            .arg("run")
            .arg(&pipeline)
            .args(["--run-dir", "runs/wide"]),
        "cfeval run",
    );
    let through_pipeline = server.max_in_flight();
    assert!(
        through_pipeline > 32,
        "[infer] concurrency = 48 gave {through_pipeline} calls in flight at most"
    );
    // A second endpoint, so that its own peak is measured.
    let second = BackgroundServer::start(ServerConfig {
        latency: Duration::from_millis(250),
        ..ServerConfig::default()
    })
    .expect("server");
    succeeded(
        cfeval(dir.path()).args([
            "infer",
            "--run",
            "runs/wide",
            "--subject",
            "vllm/command-model",
            "--base-url",
            &second.openai_base_url(),
            "--concurrency",
            "64",
            "--max-tokens",
            "32",
        ]),
        "cfeval infer",
    );
    assert!(
        second.max_in_flight() > 48,
        "--concurrency 64 gave {} calls in flight at most ({} calls)",
        second.max_in_flight(),
        second.requests()
    );
}
