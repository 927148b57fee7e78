//! An answer is an answer: against the test server with faults of every
//! kind (HTTP errors, hangs, broken bodies, broken tool arguments, empty
//! 200s, refusals, replies cut off by the token limit), no unusable reply is
//! stored as `ok`, reruns retry what is not `ok`, and `cfeval run` exits 2
//! naming what is left.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use crate::support::catalog;
use cfeval_model::testing::{BackgroundServer, FaultRates, ServerConfig};
use cfeval_schema::{ResponseRow, ShardStore};

fn write_pipeline(dir: &Path, url: &str, max_tries: u32) -> PathBuf {
    let text = format!(
        r#"[run]
name = "answers"
seed = 7

[cases]
cohort = {{ cases = 3, seed = 3 }}

[catalog]
path = "{catalog}"

[infer]
max-tries = {max_tries}

[[subjects]]
name = "vllm/flaky"
base-url = "{url}"
modes = ["single_shot", "agent"]
max-tokens = 64
limits = {{ attempt-timeout-secs = 0.3, max-attempts = 2, backoff-base-secs = 0.0, backoff-max-secs = 0.0, max-retry-after-secs = 0.0 }}

[[judges]]
name = "rule"

[aggregate]
resamples = 50
"#,
        catalog = catalog()
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, text).expect("write pipeline");
    path
}

fn cfeval(cwd: &Path, args: &[&str]) -> Output {
    crate::support::cfeval_in(cwd, args)
}

fn run(cwd: &Path, pipeline: &Path) -> Output {
    cfeval(
        cwd,
        &[
            "run",
            &pipeline.display().to_string(),
            "--run-dir",
            "runs/answers",
        ],
    )
}

fn responses(run: &Path) -> Vec<ResponseRow> {
    let store = ShardStore::open_table::<ResponseRow>(run).expect("open");
    store
        .read_rows::<ResponseRow>()
        .expect("scan")
        .flat_map(|batch| batch.expect("batch"))
        .collect()
}

/// Every `ok` row holds a usable answer, and every tuple has one row.
fn check_rows(rows: &[ResponseRow]) {
    let rules = cfeval_infer::reply::ReplyRules::bundled();
    for row in rows.iter().filter(|row| row.status == "ok") {
        let text = row.text.as_deref().unwrap_or_default();
        assert!(
            !cfeval_infer::reply::is_empty_text(text),
            "ok row with no text: {row:?}"
        );
        assert!(!rules.is_refusal(text), "ok row that refuses: {text}");
        assert_ne!(row.finish_reason.as_deref(), Some("length"), "ok row cut off");
        assert!(row.recommendation.is_some());
    }
    for row in rows.iter().filter(|row| row.status != "ok") {
        assert!(row.recommendation.is_none() && row.error.is_some(), "{row:?}");
        assert!(
            cfeval_schema::ResponseStatus::parse(&row.status).is_some(),
            "{}",
            row.status
        );
    }
    let mut tuples: Vec<(&str, &str)> = rows
        .iter()
        .map(|row| (row.mode.as_str(), row.variant_id.as_str()))
        .collect();
    tuples.sort_unstable();
    let before = tuples.len();
    tuples.dedup();
    assert_eq!(tuples.len(), before, "one row per tuple");
}

fn server(rate: f64, seed: u64) -> BackgroundServer {
    BackgroundServer::start(ServerConfig {
        faults: FaultRates::every_kind(rate),
        hang_for: Duration::from_millis(600),
        seed,
        ..ServerConfig::default()
    })
    .expect("server")
}

#[test]
fn at_30_percent_faults_reruns_converge_to_no_errors() {
    let server = server(0.3, 5);
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), 10);
    let run_dir = dir.path().join("runs/answers");
    let mut codes = Vec::new();
    for _ in 0..6 {
        let output = run(dir.path(), &pipeline);
        let code = output.status.code();
        check_rows(&responses(&run_dir));
        codes.push(code);
        if code == Some(0) {
            break;
        }
        assert_eq!(code, Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    }
    assert_eq!(codes.last(), Some(&Some(0)), "reruns converge: {codes:?}");
    let rows = responses(&run_dir);
    assert!(rows.iter().all(|row| row.status == "ok"));
    assert!(rows.iter().any(|row| row.tries > 1) || codes.len() == 1);
    let status = cfeval(dir.path(), &["status", "runs/answers"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(!text.contains("incomplete"), "{text}");
}

#[test]
fn at_80_percent_faults_what_is_left_is_reported_and_the_exit_code_says_so() {
    let server = server(0.8, 9);
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), 2);
    let run_dir = dir.path().join("runs/answers");
    for _ in 0..2 {
        let output = run(dir.path(), &pipeline);
        check_rows(&responses(&run_dir));
        assert_eq!(output.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("subject=vllm/flaky/mode="), "{stderr}");
        assert!(stderr.contains("cfeval run"), "{stderr}");
        assert!(stderr.contains("not ok"), "{stderr}");
    }
    let rows = responses(&run_dir);
    let bad = rows.iter().filter(|row| row.status != "ok").count();
    assert!(bad > 0);
    assert!(
        rows.iter()
            .filter(|row| row.status != "ok")
            .all(|row| row.tries == 2)
    );
    let status = cfeval(dir.path(), &["status", "runs/answers"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("incomplete ("), "{text}");
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap_or_default();
    if !report.is_empty() {
        assert!(report.contains("Not fully scored"), "{report}");
        assert!(!report.contains("No blind spots:"), "{report}");
    }
}
