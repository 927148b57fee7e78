//! Batch sweeps end to end: a pipeline whose subjects say `batch = true`
//! (one OpenAI-compatible, one Anthropic) sends every request through the
//! test server's batch endpoints, makes no live call, and ends with the
//! live sweep's tables; killed (SIGKILL) while it polls and started again,
//! it polls the batches it had submitted — no second submission — and ends
//! with the same tables. A subject that cannot batch is refused with the
//! reason.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cfeval_model::testing::{BackgroundServer, ServerConfig};

use crate::driver::{assert_same_tables, tables};
use crate::support::{catalog, succeeded};

const OPENAI_MODEL: &str = "batch-gpt";
const ANTHROPIC_MODEL: &str = "batch-claude";

fn pipeline(dir: &Path, server: &BackgroundServer, batch: bool) -> std::path::PathBuf {
    let switch = if batch {
        "batch = true\nbatch-poll-secs = 0.02\n"
    } else {
        ""
    };
    let text = format!(
        "[run]\nname = \"batch\"\nseed = 5\n\n[cases]\ncohort = {{ cases = 5, seed = 9 }}\n\n[catalog]\npath = \"{catalog}\"\n\n\
         [[subjects]]\nname = \"openai/{OPENAI_MODEL}\"\nbase-url = \"{openai}\"\nmax-tokens = 64\n{switch}\n\
         [[subjects]]\nname = \"anthropic/{ANTHROPIC_MODEL}\"\nbase-url = \"{anthropic}\"\nmax-tokens = 64\n{switch}\n\
         [[judges]]\nname = \"rule\"\n\n[aggregate]\nresamples = 100\n",
        catalog = catalog(),
        openai = server.openai_base_url(),
        anthropic = server.base_url(),
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, text).expect("pipeline");
    path
}

fn command(dir: &Path, pipeline: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cfeval"));
    command
        .current_dir(dir)
        .arg("run")
        .arg(pipeline)
        .args(["--run-dir", "runs/batch"])
        .env("CFEVAL_PROGRESS", "plain")
        .env("OPENAI_API_KEY", "sk-test-batch")
        .env("ANTHROPIC_API_KEY", "sk-ant-test-batch")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("RUST_LOG");
    command
}

fn run(dir: &Path, pipeline: &Path, what: &str) -> String {
    succeeded(command(dir, pipeline).output().expect("cfeval run"), what)
}

/// Batch ids recorded in the run's batch state files.
fn recorded_batches(run: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(run.join("batches")) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read_to_string(entry.path()).ok())
        .map(|text| text.matches("\"batch_id\": \"").count())
        .sum()
}

/// The tables with each row's `request_hash` left out.
fn without_request_hash(
    tables: &std::collections::BTreeMap<String, Vec<String>>,
) -> std::collections::BTreeMap<String, Vec<String>> {
    tables
        .iter()
        .map(|(table, rows)| {
            let mut rows: Vec<String> = rows
                .iter()
                .map(|row| {
                    let mut value: serde_json::Value = serde_json::from_str(row).expect("json row");
                    if let Some(object) = value.as_object_mut() {
                        object.remove("request_hash");
                    }
                    value.to_string()
                })
                .collect();
            rows.sort();
            (table.clone(), rows)
        })
        .collect()
}

#[test]
fn a_batch_sweep_equals_the_live_one_and_resumes_after_kill() {
    let server = BackgroundServer::start(ServerConfig {
        batch_polls: 40,
        ..ServerConfig::default()
    })
    .expect("server");
    let live_dir = tempfile::tempdir().expect("tempdir");
    let live_pipeline = pipeline(live_dir.path(), &server, false);
    run(live_dir.path(), &live_pipeline, "live sweep");
    let live = tables(&live_dir.path().join("runs/batch"));
    let live_calls = (
        server.requests_for_model(OPENAI_MODEL),
        server.requests_for_model(ANTHROPIC_MODEL),
    );
    assert!(live_calls.0 > 10 && live_calls.1 > 10, "{live_calls:?}");
    assert_eq!(server.batches_created(), 0);

    // The same sweep in batch mode: no live call, one batch per subject.
    let batch_dir = tempfile::tempdir().expect("tempdir");
    let batch_pipeline = pipeline(batch_dir.path(), &server, true);
    run(batch_dir.path(), &batch_pipeline, "batch sweep");
    assert_same_tables(
        &live,
        &tables(&batch_dir.path().join("runs/batch")),
        "batch sweep",
    );
    assert_eq!(
        (
            server.requests_for_model(OPENAI_MODEL),
            server.requests_for_model(ANTHROPIC_MODEL)
        ),
        live_calls,
        "no live call in batch mode"
    );
    assert_eq!(server.batches_created(), 2);
    assert_eq!(server.batch_requests_for_model(OPENAI_MODEL), live_calls.0);
    assert_eq!(server.batch_requests_for_model(ANTHROPIC_MODEL), live_calls.1);

    // Killed while polling, then run again: the submitted batches are
    // polled, none is submitted twice, and the tables are the live ones.
    // A server of its own: one that already holds the same-sized batches
    // of the sweep above would let a process killed with its create call
    // in flight find one of those (the same requests, so the same tables,
    // but one batch fewer to count).
    let server = BackgroundServer::start(ServerConfig {
        batch_polls: 40,
        ..ServerConfig::default()
    })
    .expect("server");
    let kill_dir = tempfile::tempdir().expect("tempdir");
    let kill_pipeline = pipeline(kill_dir.path(), &server, true);
    let run_dir = kill_dir.path().join("runs/batch");
    let plan = succeeded(
        command(kill_dir.path(), &kill_pipeline)
            .arg("--dry-run")
            .output()
            .expect("dry run"),
        "dry run",
    );
    let row = plan
        .lines()
        .find(|line| line.contains(OPENAI_MODEL))
        .expect("the subject's plan row");
    assert!(
        row.trim_end().ends_with("batch"),
        "the plan says the calls go in a batch: {plan}"
    );
    let mut child = command(kill_dir.path(), &kill_pipeline)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    while recorded_batches(&run_dir) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "no batch was submitted"
        );
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the run ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().expect("kill -9");
    child.wait().expect("reap");
    assert!(
        server.batches_created() >= 1,
        "{} batches on the server, {} recorded",
        server.batches_created(),
        recorded_batches(&run_dir)
    );
    let stdout = run(kill_dir.path(), &kill_pipeline, "resumed batch sweep");
    assert!(stdout.contains("5 aggregate"), "{stdout}");
    assert_eq!(server.batches_created(), 2, "one batch per subject, none twice");
    // The request hash names the endpoint (this server's port); the rest
    // of every row is the live sweep's.
    assert_same_tables(
        &without_request_hash(&live),
        &without_request_hash(&tables(&run_dir)),
        "resumed batch sweep",
    );
    assert_eq!(
        (
            server.requests_for_model(OPENAI_MODEL),
            server.requests_for_model(ANTHROPIC_MODEL)
        ),
        (0, 0),
        "no live call after the resume either"
    );
}

#[test]
fn subjects_that_cannot_batch_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (subject, why) in [
        ("name = \"control/reference\"\nbatch = true", "not a control"),
        ("name = \"embedded/smollm2-135m\"\nbatch = true", "embedded"),
        (
            "name = \"vllm/m\"\nbase-url = \"http://127.0.0.1:9/v1\"\nmodes = [\"agent\"]\nbatch = true",
            "single_shot only",
        ),
        (
            "name = \"vllm/m\"\nbase-url = \"http://127.0.0.1:9/v1\"\nbatch-poll-secs = 1",
            "needs batch = true",
        ),
        (
            "name = \"vllm/m\"\nbase-url = \"http://127.0.0.1:9/v1\"\nbatch = true\nbatch-poll-secs = 0",
            "not in (0, 86400]",
        ),
    ] {
        let path = dir.path().join("bad.toml");
        std::fs::write(
            &path,
            format!(
                "[run]\nname = \"bad\"\n[cases]\ncohort = {{ cases = 2, seed = 1 }}\n[catalog]\npath = \"{}\"\n[[subjects]]\n{subject}\n[[judges]]\nname = \"rule\"\n",
                catalog()
            ),
        )
        .expect("write");
        let output = Command::new(env!("CARGO_BIN_EXE_cfeval"))
            .current_dir(dir.path())
            .args(["run", "bad.toml", "--dry-run"])
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{subject}: accepted");
        assert!(stderr.contains(why), "{subject}: {stderr}");
        assert!(stderr.contains("bad.toml:"), "names the file and line: {stderr}");
    }
}
