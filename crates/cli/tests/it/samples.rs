//! Repeated samples end to end: `samples = 3` in a pipeline gives three
//! responses per tuple (seeds moving on by the sample number), CSS pairs
//! judged sample by sample, every baseline re-sample judged against the
//! first baseline answer, and scores whose `resample_shift`,
//! `css_net_resample` and `css_within_tuple_var` equal what the judgments
//! say when counted here independently. Raising `samples` calls the model
//! for the new samples only.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};
use cfeval_schema::{JudgmentRow, ResponseRow, ScoreRow};

use crate::support::{catalog, rows};

const MODEL: &str = "sampling-model";

/// A response's sample number and seed.
type Sampled = (u32, Option<u64>);
const SEED: u64 = 7;

/// A sampling model: which plan it gives depends on the chart and the seed,
/// as a model at temperature > 0 does.
fn sampling_server() -> BackgroundServer {
    let responder: Responder = Arc::new(|_model: &str, prompt: &str, seed: Option<u64>| {
        let draw = cfeval_schema::ids::id_hash(&format!("{}:{prompt}", seed.unwrap_or(0))) % 3;
        match draw {
            0 => "Reasoning: the disease is controlled.\nRecommendation: continue the current therapy unchanged.",
            1 => "Reasoning: the chart calls for a change.\nRecommendation: switch to docetaxel.",
            _ => "Reasoning: local control matters most.\nRecommendation: surgical resection, then adjuvant radiotherapy.",
        }
        .to_string()
    });
    BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .expect("test server")
}

fn write_pipeline(dir: &Path, url: &str, samples: u32) -> PathBuf {
    let text = format!(
        r#"[run]
name = "samples"
seed = {SEED}

[cases]
cohort = {{ cases = 8, seed = 5 }}

[catalog]
path = "{catalog}"

[infer]
temperature = 0.7
samples = {samples}

[[subjects]]
name = "control/reference"

[[subjects]]
name = "vllm/{MODEL}"
base-url = "{url}"
max-tokens = 64

[[judges]]
name = "rule"

[aggregate]
resamples = 200
"#,
        catalog = catalog()
    );
    let path = dir.join("pipeline.toml");
    std::fs::write(&path, text).expect("write pipeline");
    path
}

fn run(dir: &Path, pipeline: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_cfeval"))
        .current_dir(dir)
        .arg("run")
        .arg(pipeline)
        .args(["--run-dir", "runs/samples"])
        .env("CFEVAL_PROGRESS", "plain")
        .env_remove("RUST_LOG")
        .env_remove("VLLM_API_KEY")
        .env_remove("VLLM_BASE_URL")
        .output()
        .expect("cfeval run");
    assert!(
        output.status.success(),
        "cfeval run failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn score<'a>(scores: &'a [ScoreRow], subject: &str, metric: &str) -> &'a ScoreRow {
    scores
        .iter()
        .find(|row| {
            row.subject == subject
                && row.metric == metric
                && row.level == "overall"
                && row.ci_method.as_deref() != Some("bca")
        })
        .unwrap_or_else(|| panic!("no overall {metric} row for {subject}"))
}

#[test]
fn repeated_samples_are_answered_judged_and_scored() {
    let server = sampling_server();
    let dir = tempfile::tempdir().expect("tempdir");
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), 3);
    run(dir.path(), &pipeline);
    let run_dir = dir.path().join("runs/samples");
    let subject = format!("vllm/{MODEL}");

    // Three responses per tuple, sample i with seed + i.
    let responses: Vec<ResponseRow> = rows(&run_dir);
    let mut per_tuple: BTreeMap<(String, String), Vec<Sampled>> = BTreeMap::new();
    for response in &responses {
        assert_eq!(response.status, "ok", "{response:?}");
        per_tuple
            .entry((response.subject.clone(), response.variant_id.clone()))
            .or_default()
            .push((response.sample, response.seed));
    }
    assert!(per_tuple.len() > 20, "{} tuples", per_tuple.len());
    for ((_, variant), samples) in &mut per_tuple {
        samples.sort_unstable();
        let expected: Vec<Sampled> = (0..3).map(|i| (i, Some(SEED + u64::from(i)))).collect();
        assert_eq!(*samples, expected, "{variant}");
    }
    let calls = server.requests_for_model(MODEL);
    assert!(calls > 0);

    // Every variant answer is paired with the baseline answer of its sample;
    // each baseline re-sample is judged against sample 0.
    let judgments: Vec<JudgmentRow> = rows(&run_dir);
    let resamples: Vec<&JudgmentRow> = judgments
        .iter()
        .filter(|row| row.metric == cfeval_schema::RESAMPLE)
        .collect();
    let baselines = responses
        .iter()
        .filter(|row| row.family == "baseline" && row.sample == 0)
        .count();
    assert_eq!(resamples.len(), 2 * baselines);
    assert!(
        resamples
            .iter()
            .all(|row| row.family == "baseline" && row.sample > 0)
    );
    for row in &judgments {
        assert!(row.sample < 3);
        assert_ne!(row.status, "error", "{row:?}");
    }

    // The scores agree with the judgments counted here.
    let scores: Vec<ScoreRow> = rows(&run_dir);
    let decided = |row: &&JudgmentRow| {
        row.status == "ok" && row.score.is_some() && row.label.as_deref() != Some("uncertain")
    };
    for who in ["control/reference", subject.as_str()] {
        let own: Vec<&JudgmentRow> = resamples
            .iter()
            .copied()
            .filter(|row| row.subject == who)
            .filter(decided)
            .collect();
        let shifted = own
            .iter()
            .filter(|row| row.label.as_deref() == Some("shifted_spuriously"))
            .count();
        let rate = shifted as f64 / own.len() as f64;
        let reported = score(&scores, who, "resample_shift");
        assert!(
            (reported.value - rate).abs() < 1e-12,
            "{who}: {} vs {rate}",
            reported.value
        );
        let css = score(&scores, who, "css").value;
        let net = score(&scores, who, "css_net_resample").value;
        assert!(
            (net - (css - rate)).abs() < 1e-12,
            "{who}: net {net}, css {css}, shift {rate}"
        );

        let mut tuples: HashMap<&str, Vec<f64>> = HashMap::new();
        for row in judgments.iter().filter(|row| {
            row.subject == who && row.metric == "css" && !["N", "baseline"].contains(&row.family.as_str())
        }) {
            if decided(&row) {
                tuples
                    .entry(&row.variant_id)
                    .or_default()
                    .push(row.score.unwrap_or_default());
            }
        }
        let variances: Vec<f64> = tuples
            .values()
            .filter(|scores| scores.len() >= 2)
            .map(|scores| {
                let mean = scores.iter().sum::<f64>() / scores.len() as f64;
                scores.iter().map(|score| (score - mean).powi(2)).sum::<f64>() / (scores.len() - 1) as f64
            })
            .collect();
        let variance = variances.iter().sum::<f64>() / variances.len() as f64;
        let reported = score(&scores, who, "css_within_tuple_var");
        assert!(
            (reported.value - variance).abs() < 1e-9,
            "{who}: {} vs {variance}",
            reported.value
        );
        if who.starts_with("control/") {
            // A control answers the same chart the same way every time.
            assert_eq!(rate, 0.0);
            assert_eq!(variance, 0.0);
        } else {
            assert!(rate > 0.2 && rate < 0.95, "a sampling model moves: {rate}");
            assert!(variance > 0.0, "its CSS varies within tuples");
        }
    }

    // A fourth sample: only it is asked of the model.
    let pipeline = write_pipeline(dir.path(), &server.openai_base_url(), 4);
    run(dir.path(), &pipeline);
    let added = server.requests_for_model(MODEL) - calls;
    assert_eq!(
        added * 3,
        calls,
        "one new call per chart for sample 3 ({calls} calls for samples 0-2)"
    );
    let responses: Vec<ResponseRow> = rows(&run_dir);
    assert_eq!(responses.len(), per_tuple.len() * 4);
}
