//! Inspect AI interop: `cfeval export inspect` writes logs that the real
//! `inspect_ai` package lists and reads (its score counts and metrics equal
//! cfeval's tables), the export is byte-identical when repeated, and
//! `cfeval import responses` reads Inspect's own `.eval` and `.json` logs
//! back into answers that are judged exactly as the originals; a damaged log
//! has its bad samples quarantined with their entry, the rest imported.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use cfeval_model::testing::{BackgroundServer, ServerConfig};
use cfeval_schema::{JudgmentRow, QuarantineRow, ResponseRow, ScoreRow, ShardStore, StoreOptions, Table};

use crate::support::{catalog, cfeval_in as cfeval, rows, succeeded as ok, workspace_root};

const SUBJECT: &str = "vllm/inspected-model";

fn python() -> std::path::PathBuf {
    std::env::var_os("CFEVAL_PYTHON").map_or_else(|| workspace_root().join(".venv/bin/python"), Into::into)
}

/// (subject, mode, judge/metric) → numeric verdicts.
fn numeric_verdicts(judgments: &[JudgmentRow]) -> BTreeMap<(String, String), BTreeMap<String, u64>> {
    let mut counts: BTreeMap<(String, String), BTreeMap<String, u64>> = BTreeMap::new();
    for row in judgments.iter().filter(|row| row.score.is_some()) {
        *counts
            .entry((row.subject.clone(), row.mode.clone()))
            .or_default()
            .entry(format!("{}/{}", row.judge, row.metric))
            .or_default() += 1;
    }
    counts
}

fn verdicts(
    judgments: &[JudgmentRow],
    subject: &str,
    mode: &str,
) -> BTreeMap<(String, String), (Option<f64>, Option<String>)> {
    judgments
        .iter()
        .filter(|row| row.subject == subject && row.mode == mode)
        .map(|row| {
            (
                (row.variant_id.clone(), row.metric.clone()),
                (row.score, row.label.clone()),
            )
        })
        .collect()
}

fn import(dir: &Path, subject: &str, file: &Path) -> serde_json::Value {
    let stdout = ok(
        cfeval(
            dir,
            &[
                "import",
                "responses",
                "--run",
                "runs/insp",
                "--subject",
                subject,
                file.to_str().expect("utf-8"),
            ],
        ),
        "import",
    );
    serde_json::from_str(stdout.trim()).expect("import report")
}

#[test]
fn inspect_reads_the_exported_logs_and_its_own_logs_import_back() {
    let python = python();
    assert!(
        python.exists(),
        "{} not found: run `bash scripts/install.sh` first (it installs inspect-ai)",
        python.display()
    );
    let server = BackgroundServer::start(ServerConfig::default()).expect("server");
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = dir.path().join("pipeline.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[run]\nname = \"insp\"\n\n[cases]\ncohort = {{ cases = 6, seed = 11 }}\n\n[catalog]\npath = \"{catalog}\"\n\n[[subjects]]\nname = \"{SUBJECT}\"\nbase-url = \"{url}\"\nmodes = [\"single_shot\", \"agent\"]\nmax-tokens = 64\n\n[[subjects]]\nname = \"control/reference\"\n\n[[judges]]\nname = \"rule\"\n\n[aggregate]\nresamples = 200\n",
            catalog = catalog(),
            url = server.openai_base_url()
        ),
    )
    .expect("pipeline");
    ok(
        cfeval(
            dir.path(),
            &["run", pipeline.to_str().expect("utf-8"), "--run-dir", "runs/insp"],
        ),
        "cfeval run",
    );
    let run = dir.path().join("runs/insp");
    let stdout = ok(
        cfeval(dir.path(), &["export", "inspect", "runs/insp", "--out", "logs"]),
        "export inspect",
    );
    let summary: serde_json::Value = serde_json::from_str(stdout.trim()).expect("summary");
    let logs = summary["logs"].as_array().expect("logs");
    assert_eq!(
        logs.len(),
        3,
        "two modes of the model, one of the control: {summary}"
    );
    assert_eq!(summary["incomplete_units"].as_array().map(Vec::len), Some(0));

    // What cfeval's tables say each log must hold.
    let responses: Vec<ResponseRow> = rows(&run);
    let judgments: Vec<JudgmentRow> = rows(&run);
    let scores: Vec<ScoreRow> = rows(&run);
    let counts = numeric_verdicts(&judgments);
    let mut expected = serde_json::Map::new();
    let mut names = BTreeMap::new();
    for log in logs {
        let (subject, mode) = (
            log["subject"].as_str().expect("subject"),
            log["mode"].as_str().expect("mode"),
        );
        let file = Path::new(log["file"].as_str().expect("file"));
        let name = file.file_name().expect("name").to_string_lossy().to_string();
        let samples = responses
            .iter()
            .filter(|row| row.subject == subject && row.mode == mode)
            .count();
        assert_eq!(log["samples"], samples as u64);
        let scorers = counts
            .get(&(subject.to_string(), mode.to_string()))
            .cloned()
            .unwrap_or_default();
        assert!(
            scorers.contains_key("rule/css") && scorers.contains_key("rule/cms"),
            "{scorers:?}"
        );
        let metric = |metric: &str| {
            scores
                .iter()
                .find(|row| {
                    row.subject == subject
                        && row.mode == mode
                        && row.metric == metric
                        && row.level == "overall"
                })
                .map(|row| row.value)
                .expect("score row")
        };
        expected.insert(
            name.clone(),
            serde_json::json!({
                "samples": samples,
                "model": subject,
                "scorers": scorers,
                "metrics": {"rule/css": {"css": metric("css")}, "rule/cms": {"cms": metric("cms")}},
            }),
        );
        names.insert((subject.to_string(), mode.to_string()), name);
    }
    let expected_path = dir.path().join("expected.json");
    std::fs::write(&expected_path, serde_json::to_vec(&expected).expect("json")).expect("write");
    let rewritten = dir.path().join("rewritten");
    let output = Command::new(&python)
        .arg(workspace_root().join("tests/python/check_inspect.py"))
        .arg(dir.path().join("logs"))
        .arg(&expected_path)
        .arg(&rewritten)
        .output()
        .expect("run python");
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "inspect_ai disagrees:\n{said}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        said.lines().filter(|line| line.starts_with("agree ")).count(),
        3,
        "{said}"
    );

    // The same run exports the same bytes.
    ok(
        cfeval(dir.path(), &["export", "inspect", "runs/insp", "--out", "again"]),
        "export again",
    );
    for name in names.values() {
        let first = std::fs::read(dir.path().join("logs").join(name)).expect("first");
        let second = std::fs::read(dir.path().join("again").join(name)).expect("second");
        assert!(first == second, "{name} differs between two exports of one run");
    }

    // Inspect's own .eval and .json files import back and judge the same.
    let single = &names[&(SUBJECT.to_string(), "single_shot".to_string())];
    let stem = single.trim_end_matches(".eval");
    let samples = responses
        .iter()
        .filter(|row| row.subject == SUBJECT && row.mode == "single_shot")
        .count() as u64;
    for (subject, file) in [
        ("harness/from-eval", format!("{stem}.rewritten.eval")),
        ("harness/from-json", format!("{stem}.rewritten.json")),
    ] {
        let report = import(dir.path(), subject, &rewritten.join(file));
        assert_eq!(report["imported"], samples, "{report}");
        assert_eq!(report["quarantined"], 0, "{report}");
    }
    ok(
        cfeval(dir.path(), &["judge", "--run", "runs/insp", "--judge", "rule"]),
        "judge",
    );
    let judgments: Vec<JudgmentRow> = rows(&run);
    let original = verdicts(&judgments, SUBJECT, "single_shot");
    assert!(!original.is_empty());
    for subject in ["harness/from-eval", "harness/from-json"] {
        assert_eq!(
            verdicts(&judgments, subject, "single_shot"),
            original,
            "{subject}"
        );
    }
    let imported: Vec<ResponseRow> = rows(&run);
    let by_tuple = |subject: &str| -> BTreeMap<(String, u32), (Option<String>, u64, u64)> {
        imported
            .iter()
            .filter(|row| row.subject == subject && row.mode == "single_shot")
            .map(|row| {
                (
                    (row.variant_id.clone(), row.sample),
                    (row.text.clone(), row.input_tokens, row.output_tokens),
                )
            })
            .collect()
    };
    assert_eq!(
        by_tuple("harness/from-eval"),
        by_tuple(SUBJECT),
        "texts and tokens carried over"
    );

    // A damaged log: its two bad samples quarantined with their entries.
    let report = import(dir.path(), "harness/damaged", &rewritten.join("damaged.eval"));
    assert_eq!(report["imported"], samples - 1, "{report}");
    assert_eq!(report["quarantined"], 2, "{report}");
    let quarantine = ShardStore::open(
        &run.join("cases_quarantine"),
        "cases_quarantine",
        QuarantineRow::schema(),
        StoreOptions::default(),
    )
    .expect("quarantine");
    let reasons: Vec<String> = quarantine
        .read_rows::<QuarantineRow>()
        .expect("read")
        .flat_map(|batch| batch.expect("batch"))
        .filter(|row| row.stage == "import" && row.source_path.ends_with("damaged.eval"))
        .map(|row| row.reason)
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|reason| reason.contains("samples/no-such-variant_epoch_1.json")
                && reason.contains("not in the run's variants")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|reason| reason.contains("samples/zz-broken_epoch_1.json") && reason.contains("not JSON")),
        "{reasons:?}"
    );
}
