//! `cfeval import responses`: a subject's answers, exported from a run and
//! imported back under another name, are judged and scored exactly as the
//! originals; every malformed row is quarantined with its line and reason;
//! a second import of the same subject is refused unless `--replace`.

use std::collections::BTreeMap;
use std::sync::Arc;

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};
use cfeval_schema::{JudgmentRow, QuarantineRow, ResponseRow, ScoreRow, ShardStore, StoreOptions, Table};

use crate::support::{catalog, cfeval_in as cfeval, succeeded as ok};

const ORIGINAL: &str = "vllm/original-model";
const COPY: &str = "harness/copied-model";

fn rows<T: Table + serde::de::DeserializeOwned>(store: &ShardStore) -> Vec<T> {
    store
        .read_rows::<T>()
        .expect("read")
        .flat_map(|batch| batch.expect("batch"))
        .collect()
}

/// A model whose plan depends on the chart.
fn server() -> BackgroundServer {
    let responder: Responder = Arc::new(|_model: &str, prompt: &str, _seed: Option<u64>| {
        let draw = cfeval_schema::ids::id_hash(prompt) % 3;
        match draw {
            0 => "Recommendation: continue the current therapy unchanged.",
            1 => "Recommendation: switch to docetaxel.",
            _ => "Recommendation: surgical resection, then adjuvant radiotherapy.",
        }
        .to_string()
    });
    BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .expect("server")
}

#[test]
fn imported_answers_are_judged_like_their_originals_and_bad_rows_are_quarantined() {
    let server = server();
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = dir.path().join("pipeline.toml");
    std::fs::write(
        &pipeline,
        format!(
            "[run]\nname = \"imp\"\n\n[cases]\ncohort = {{ cases = 8, seed = 4 }}\n\n[catalog]\npath = \"{catalog}\"\n\n[[subjects]]\nname = \"{ORIGINAL}\"\nbase-url = \"{url}\"\nmax-tokens = 64\n\n[[judges]]\nname = \"rule\"\n\n[aggregate]\nresamples = 200\n",
            catalog = catalog(),
            url = server.openai_base_url()
        ),
    )
    .expect("pipeline");
    ok(
        cfeval(
            dir.path(),
            &["run", pipeline.to_str().expect("utf-8"), "--run-dir", "runs/imp"],
        ),
        "cfeval run",
    );
    let run = dir.path().join("runs/imp");
    let responses = ShardStore::open_table::<ResponseRow>(&run).expect("responses");
    let originals: Vec<ResponseRow> = rows(&responses);

    // The originals as another harness would hand them over, plus bad rows.
    let mut lines: Vec<String> = originals
        .iter()
        .map(|row| {
            serde_json::json!({
                "subject": COPY,
                "variant_id": row.variant_id,
                "text": row.text,
                "output_tokens": row.output_tokens,
            })
            .to_string()
        })
        .collect();
    let first = &originals[0];
    let bad = [
        serde_json::json!({"subject": COPY, "variant_id": "no-such-variant", "text": "x"}).to_string(),
        "{not json".to_string(),
        serde_json::json!({"subject": COPY, "variant_id": first.variant_id, "text": "x", "sample": "two"})
            .to_string(),
        serde_json::json!({"subject": COPY, "variant_id": first.variant_id, "text": "again"}).to_string(),
        serde_json::json!({"subject": "control/reference", "variant_id": first.variant_id, "text": "x"})
            .to_string(),
        serde_json::json!({"variant_id": first.variant_id, "text": "x", "mode": "agent"}).to_string(),
        serde_json::json!({"subject": COPY, "case_id": first.case_id, "intervention": "Z9", "text": "x"})
            .to_string(),
    ];
    let good = lines.len();
    lines.extend(bad.iter().cloned());
    let file = dir.path().join("answers.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").expect("write");
    let stdout = ok(
        cfeval(
            dir.path(),
            &["import", "responses", "--run", "runs/imp", "answers.jsonl"],
        ),
        "import",
    );
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("report");
    assert_eq!(report["imported"], good as u64, "{report}");
    assert_eq!(report["quarantined"], bad.len() as u64, "{report}");
    let quarantine = ShardStore::open(
        &run.join("cases_quarantine"),
        "cases_quarantine",
        QuarantineRow::schema(),
        StoreOptions::default(),
    )
    .expect("quarantine");
    let listed: Vec<QuarantineRow> = rows::<QuarantineRow>(&quarantine)
        .into_iter()
        .filter(|row| row.stage == "import")
        .collect();
    let by_line: BTreeMap<u64, String> = listed
        .iter()
        .map(|row| (row.source_line.expect("line"), row.reason.clone()))
        .collect();
    let line = |offset: usize| (good + offset + 1) as u64;
    assert!(
        by_line[&line(0)].contains("not in the run's variants"),
        "{by_line:?}"
    );
    assert!(by_line[&line(1)].contains("not JSON"), "{by_line:?}");
    assert!(by_line[&line(2)].contains("`sample`"), "{by_line:?}");
    assert!(by_line[&line(3)].contains("was given on line"), "{by_line:?}");
    assert!(by_line[&line(4)].contains("control"), "{by_line:?}");
    assert!(by_line[&line(5)].contains("no `subject`"), "{by_line:?}");
    assert!(by_line[&line(6)].contains("intervention `Z9`"), "{by_line:?}");

    // Judged and scored as the originals.
    ok(
        cfeval(dir.path(), &["judge", "--run", "runs/imp", "--judge", "rule"]),
        "judge",
    );
    let judgments: Vec<JudgmentRow> = rows(&ShardStore::open_table::<JudgmentRow>(&run).expect("judgments"));
    let verdicts = |subject: &str| -> BTreeMap<(String, String), (Option<f64>, Option<String>)> {
        judgments
            .iter()
            .filter(|row| row.subject == subject)
            .map(|row| {
                (
                    (row.variant_id.clone(), row.metric.clone()),
                    (row.score, row.label.clone()),
                )
            })
            .collect()
    };
    let (original, copied) = (verdicts(ORIGINAL), verdicts(COPY));
    assert_eq!(original.len(), copied.len());
    assert_eq!(original, copied);
    ok(
        cfeval(dir.path(), &["aggregate", "--run", "runs/imp"]),
        "aggregate",
    );
    let scores: Vec<ScoreRow> = rows(&ShardStore::open_table::<ScoreRow>(&run).expect("scores"));
    let css = |subject: &str| {
        scores
            .iter()
            .find(|row| row.subject == subject && row.metric == "css" && row.level == "overall")
            .map(|row| row.value)
            .expect("css")
    };
    assert_eq!(css(ORIGINAL), css(COPY));

    // A second import of the same subject is refused unless --replace.
    let again = cfeval(
        dir.path(),
        &["import", "responses", "--run", "runs/imp", "answers.jsonl"],
    );
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--replace"));
    ok(
        cfeval(
            dir.path(),
            &[
                "import",
                "responses",
                "--run",
                "runs/imp",
                "--replace",
                "answers.jsonl",
            ],
        ),
        "import --replace",
    );
    let responses = ShardStore::open_table::<ResponseRow>(&run).expect("responses");
    let copies = rows::<ResponseRow>(&responses)
        .into_iter()
        .filter(|row| row.subject == COPY)
        .count();
    assert_eq!(copies, good, "replaced, not doubled");
}
