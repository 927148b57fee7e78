//! The notebook example (`notebooks/aggregate_scores.py`) runs as a script
//! on a freshly aggregated run: polars and duckdb load the scores and the
//! judgments, and the scores agree with a direct duckdb computation.

use std::path::PathBuf;
use std::process::Command;

use cfeval_aggregate::synthetic::{Shape, write_judgments};
use cfeval_aggregate::{Config, run};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `CFEVAL_PYTHON`, else the project's `.venv` made by `scripts/install.sh`.
fn python() -> PathBuf {
    std::env::var_os("CFEVAL_PYTHON").map_or_else(|| workspace_root().join(".venv/bin/python"), PathBuf::from)
}

#[test]
fn notebook_runs_as_a_script() {
    let python = python();
    assert!(
        python.exists(),
        "{} not found: run `bash scripts/install.sh` first (it installs polars and duckdb)",
        python.display()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    write_judgments(&Shape::standard(20, 1, 2), dir.path()).expect("write");
    run(
        &Config {
            resamples: 200,
            ..Config::default()
        },
        dir.path(),
    )
    .expect("aggregate");
    let output = Command::new(&python)
        .arg(workspace_root().join("notebooks/aggregate_scores.py"))
        .arg(dir.path())
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "notebook failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("scores agree with a direct duckdb computation"),
        "{stdout}"
    );
    assert!(stdout.contains("CMS #"), "{stdout}");
}
