//! Mode `harness` end to end (issue 18), against a scripted server whose
//! Diagnosticians report given beliefs and actions step by step, over the
//! NEJM-style test cases of the general-medicine pack:
//!
//! - H(t) (bits) and V(T_t) equal the values computed here from the script
//!   and the variant's sections, at every step;
//! - a finish is blocked exactly when the step's thresholds say so (a
//!   coverage block at step 2; a spread belief blocked by entropy until
//!   τ_H relaxes), and approved when they hold;
//! - an episode that never satisfies the Observer ends at `max-steps` (50)
//!   with its last proposal and `step_limit`;
//! - malformed JSON, unusable numbers, unknown hypotheses, unknown tools and
//!   natural-language replies are counted, never fatal;
//! - a rerun is served from the cache with no new call, with the same rows;
//! - the aggregate stage writes the pyramid's rows with intervals, and the
//!   judge decides the harness answers like any other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};
use cfeval_schema::{HarnessOutcome, JudgmentRow, ResponseRow, ScoreRow, VariantRow};

use crate::support::{cfeval_in, rows, succeeded, workspace_root};

/// The scripted answer.
const ANSWER: &str = "Most likely diagnosis: Bullous pemphigoid\nReasoning: tense bullae, linear IgG and C3.";

fn step_of(last: &str) -> u32 {
    last.lines()
        .next()
        .and_then(|line| line.strip_prefix("Step "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .expect("every message to the Diagnostician opens with its step")
}

/// One protocol reply.
fn reply(belief: &[(&str, f64)], action: &str, argument: &str) -> String {
    let differential: Vec<serde_json::Value> = belief
        .iter()
        .map(|(hypothesis, belief)| serde_json::json!({"hypothesis": hypothesis, "belief": belief}))
        .collect();
    serde_json::json!({"differential": differential, "action": action, "argument": argument}).to_string()
}

const A: &str = "Bullous pemphigoid";
const B: &str = "Pemphigus vulgaris";

/// The `scripted` Diagnostician's beliefs and actions at step `t` (the
/// first three of `sections` are read at steps 3–5).
fn scripted(t: u32, sections: &[String]) -> String {
    match t {
        1 => reply(&[(A, 1.0), (B, 1.0)], "list_chart_sections", ""),
        // Coverage 0: blocked.
        2 => reply(&[(A, 0.5), (B, 0.5)], "finish", ANSWER),
        // The belief sharpens after a blocked finish: a spurious drop.
        3 => reply(&[(A, 0.9), (B, 0.1)], "read_chart_section", &sections[0]),
        4 => reply(&[(A, 0.9), (B, 0.1)], "read_chart_section", &sections[1]),
        5 => reply(&[(A, 95.0), (B, 5.0)], "read_chart_section", &sections[2]),
        6 => reply(
            &[(A, 0.95), (B, 0.05)],
            "consult",
            "tense bullae linear IgG basement membrane",
        ),
        _ => reply(&[(A, 1.0), (B, 0.0)], "finish", ANSWER),
    }
}

/// The `hesitant` one never settles: four even hypotheses (2 bits) and a
/// finish every step, never reading anything (coverage 0 never passes).
fn hesitant() -> String {
    reply(
        &[
            (A, 1.0),
            (B, 1.0),
            ("Dermatitis herpetiformis", 1.0),
            ("Bullous impetigo", 1.0),
        ],
        "finish",
        ANSWER,
    )
}

/// The `broken` one breaks the protocol every way, then recovers.
fn broken(t: u32, sections: &[String]) -> String {
    match t {
        1 => "Let me think about this patient carefully.".into(),
        2 => r#"{"differential": [{"hypothesis": "Bullous pemphigoid", "belief": -0.2}, {"hypothesis": "Pemphigus vulgaris", "belief": "NaN"}], "action": "read_chart_section", "argument": "no such section"}"#.into(),
        3 => reply(&[("Blorpitis", 1.0)], "fly", "away"),
        4 => format!("I will read the chart.\nACTION: read_chart_section {}", sections[0]),
        5 => "Most likely diagnosis: Bullous pemphigoid".into(),
        _ => reply(&[(A, 1.0)], "finish", ANSWER),
    }
}

fn responder(sections: Vec<String>) -> Responder {
    Arc::new(move |model: &str, last: &str, _seed: Option<u64>| {
        let t = step_of(last);
        match model {
            "scripted" => scripted(t, &sections),
            "hesitant" => hesitant(),
            _ => broken(t, &sections),
        }
    })
}

const LIMITS: &str =
    "{ max-attempts = 4, backoff-base-secs = 0.0, backoff-max-secs = 0.0, max-retry-after-secs = 0.0 }";

fn write_pipeline(dir: &Path, name: &str, url: Option<&str>) -> PathBuf {
    let root = workspace_root();
    let subjects: String = match url {
        Some(url) => ["vllm/scripted", "vllm/hesitant", "vllm/broken"]
            .iter()
            .map(|name| {
                format!(
                    "[[subjects]]\nname = \"{name}\"\nbase-url = \"{url}\"\nmodes = [\"harness\"]\nlimits = {LIMITS}\n\n"
                )
            })
            .collect(),
        None => String::new(),
    };
    let text = format!(
        r#"[run]
name = "{name}"
seed = 3
pack = "{pack}"

[cases]
inputs = ["{cases}"]
limit = 3

{subjects}[[subjects]]
name = "control/reference"
modes = ["harness"]

[harness]
max-steps = 50
protocol = "json"

[[judges]]
name = "rule"

[aggregate]
resamples = 100
"#,
        pack = root.join("data/packs/general-medicine").display(),
        cases = root.join("tests/data/nejm-style/cases.jsonl").display(),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write pipeline");
    path
}

fn run(dir: &Path, pipeline: &Path, run: &Path, extra: &[&str]) {
    let mut args = vec![
        "run".to_string(),
        pipeline.display().to_string(),
        "--run-dir".to_string(),
        run.display().to_string(),
    ];
    args.extend(extra.iter().map(|arg| arg.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    succeeded(cfeval_in(dir, &args), "cfeval run");
}

fn entropy(belief: &[f64]) -> f64 {
    let total: f64 = belief.iter().sum();
    belief
        .iter()
        .map(|b| b / total)
        .filter(|p| *p > 0.0)
        .map(|p| -p * p.log2())
        .sum()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_observer_regulates_scripted_diagnosticians_step_by_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The variants first (a controls-only run): the script reads sections
    // every variant has.
    let first = write_pipeline(dir.path(), "harness-controls", None);
    let controls_run = dir.path().join("runs/controls");
    run(dir.path(), &first, &controls_run, &[]);
    let common = common_sections(&controls_run);
    assert!(
        common.len() >= 3,
        "the script needs three sections every variant has: {common:?}"
    );

    let server = BackgroundServer::start(ServerConfig {
        responder: Some(responder(common.clone())),
        ..ServerConfig::default()
    })
    .expect("test server");
    let file = write_pipeline(dir.path(), "harness", Some(&server.openai_base_url()));
    let run_dir = dir.path().join("runs/harness");
    run(dir.path(), &file, &run_dir, &[]);

    let variants: BTreeMap<String, VariantRow> = rows::<VariantRow>(&run_dir)
        .into_iter()
        .map(|variant| (variant.variant_id.clone(), variant))
        .collect();
    let responses: Vec<ResponseRow> = rows(&run_dir);
    let thresholds = cfeval_infer::harness::Thresholds::default();
    fn of<'a>(responses: &'a [ResponseRow], subject: &'a str) -> impl Iterator<Item = &'a ResponseRow> {
        responses
            .iter()
            .filter(move |row| row.subject == subject && row.mode == "harness")
    }
    assert!(of(&responses, "vllm/scripted").count() >= 3);

    // The scripted Diagnostician, step by step.
    for row in of(&responses, "vllm/scripted") {
        let outcome: &HarnessOutcome = row.harness.as_ref().expect("a harness row keeps its outcome");
        let total = variants[&row.variant_id].sections.len() as f64;
        let beliefs: [&[f64]; 7] = [
            &[1.0, 1.0],
            &[0.5, 0.5],
            &[0.9, 0.1],
            &[0.9, 0.1],
            &[95.0, 5.0],
            &[0.95, 0.05],
            &[1.0, 0.0],
        ];
        let read_after = [0.0, 0.0, 1.0, 2.0, 3.0, 3.0, 3.0];
        assert_eq!(outcome.trajectory.len(), 7, "{outcome:?}");
        for (at, step) in outcome.trajectory.iter().enumerate() {
            let t = at as u32 + 1;
            assert_eq!(step.step, t);
            let h = step
                .entropy
                .unwrap_or_else(|| panic!("step {t} has no belief: {step:?}"));
            assert!(
                close(h, entropy(beliefs[at])),
                "step {t}: H = {h}, by hand {}",
                entropy(beliefs[at])
            );
            assert!(
                close(step.coverage, read_after[at] / total),
                "step {t}: V = {}",
                step.coverage
            );
            assert!(close(step.max_entropy, thresholds.max_entropy_at(t)));
            assert!(close(step.min_coverage, thresholds.min_coverage_at(t)));
            let probabilities: f64 = step.belief.iter().map(|b| b.probability).sum();
            assert!(close(probabilities, 1.0), "normalised");
        }
        // Step 5's raw numbers are kept as written.
        assert_eq!(outcome.trajectory[4].belief[0].raw, 95.0);
        // Step 2: blocked for coverage (H = 1 ≤ τ_H = 1 passes).
        let blocked = outcome.trajectory[1]
            .blocked
            .as_deref()
            .expect("step 2 is blocked");
        assert!(blocked.contains("coverage 0.00 < 0.40"), "{blocked}");
        assert!(!blocked.contains("uncertainty"), "{blocked}");
        assert!(outcome.trajectory.iter().filter(|s| s.blocked.is_some()).count() == 1);
        // New evidence: after the blocked finish there is none (step 3's
        // fall of 0.53 bits is spurious); after each first read there is.
        let new: Vec<bool> = outcome.trajectory.iter().map(|s| s.new_evidence).collect();
        assert_eq!(new, [true, false, false, true, true, true, true]);
        assert_eq!(outcome.spurious_drops, 1);
        assert_eq!(outcome.observer_blocks, 1);
        assert_eq!(outcome.outcome, "approved");
        assert_eq!(outcome.consultations, 1);
        assert_eq!(row.status, "ok");
        assert_eq!(row.text.as_deref(), Some(ANSWER));
        assert_eq!(outcome.final_entropy, Some(0.0));
        assert_eq!(
            (
                outcome.schema_failures,
                outcome.invalid_beliefs,
                outcome.unknown_tools,
                outcome.tool_errors
            ),
            (0, 0, 0, 0)
        );
        // The consultant's passages are in the trace, and the same query
        // returned the same passages in every episode.
        let consult = row
            .trace
            .iter()
            .find(|step| step.kind == "consult")
            .expect("consult step");
        assert!(
            consult
                .text
                .as_deref()
                .is_some_and(|text| text.contains("pemphigoid")),
            "{consult:?}"
        );
    }
    let passages: std::collections::BTreeSet<Option<String>> = of(&responses, "vllm/scripted")
        .map(|row| {
            row.trace
                .iter()
                .find(|s| s.kind == "consult")
                .and_then(|s| s.result_hash.clone())
        })
        .collect();
    assert_eq!(passages.len(), 1, "deterministic retrieval");

    // The hesitant one: entropy 2 bits passes once τ_H reaches 2 (step 15),
    // coverage 0 never passes the floor of 0.1: 50 steps, then the limit.
    for row in of(&responses, "vllm/hesitant") {
        let outcome = row.harness.as_ref().expect("outcome");
        assert_eq!(outcome.steps, 50);
        assert_eq!(outcome.trajectory.len(), 50);
        assert_eq!(outcome.observer_blocks, 50);
        assert_eq!(outcome.outcome, "step_limit");
        assert_eq!(
            row.text.as_deref(),
            Some(ANSWER),
            "the last proposal is the answer"
        );
        for step in &outcome.trajectory {
            let message = step.blocked.as_deref().expect("every finish is blocked");
            let over_entropy = 2.0 > thresholds.max_entropy_at(step.step) + 1e-12;
            assert_eq!(
                message.contains("uncertainty"),
                over_entropy,
                "step {}: {message}",
                step.step
            );
            assert!(message.contains("coverage 0.00 <"), "{message}");
        }
    }

    // The broken one: every fault counted, none fatal.
    for row in of(&responses, "vllm/broken") {
        let outcome = row.harness.as_ref().expect("outcome");
        assert_eq!(row.status, "ok", "{row:?}");
        // Steps 1, 4 and 5 are not JSON; 2's second belief is not a number
        // (read as NaN, so the belief is unusable, not a schema failure).
        assert_eq!(outcome.schema_failures, 3, "{outcome:?}");
        assert_eq!(outcome.language_fallbacks, 2, "the ACTION line and the diagnosis");
        assert_eq!(outcome.invalid_beliefs, 1);
        assert_eq!(outcome.unknown_hypotheses, 1, "Blorpitis");
        assert_eq!(outcome.unknown_tools, 1);
        // The unknown section and the unknown tool.
        assert_eq!(outcome.tool_errors, 2);
        assert_eq!(outcome.trajectory[0].action, "none");
        assert_eq!(outcome.trajectory[3].action, "read_chart_section");
        assert!(outcome.trajectory[1].belief.is_empty());
        assert!(
            outcome.trajectory[1]
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("finite"))
        );
        // Step 5's natural-language finish is read as a finish, and blocked
        // (coverage 1 section of the chart < 0.40 unless the chart is tiny).
        assert_eq!(outcome.trajectory[4].action, "finish");
        assert_eq!(outcome.outcome, "approved");
    }

    // The reference control reads everything and finishes at once.
    for row in of(&responses, "control/reference") {
        let outcome = row.harness.as_ref().expect("outcome");
        assert_eq!(
            (outcome.outcome.as_str(), outcome.final_coverage),
            ("approved", 1.0)
        );
        assert_eq!(outcome.observer_blocks, 0);
        assert_eq!(
            outcome.steps as usize,
            variants[&row.variant_id].sections.len() + 1
        );
    }

    // The judge decides harness answers; the decisive section is tracked.
    let judgments: Vec<JudgmentRow> = rows(&run_dir);
    assert!(
        judgments
            .iter()
            .any(|j| j.mode == "harness" && j.subject == "vllm/scripted" && j.status == "ok")
    );

    // The pyramid: rows per subject with intervals.
    let scores: Vec<ScoreRow> = rows(&run_dir);
    let score = |subject: &str, metric: &str| {
        scores
            .iter()
            .find(|s| {
                s.subject == subject
                    && s.metric == metric
                    && s.level == "overall"
                    && s.ci_method.as_deref() == Some("percentile")
            })
            .unwrap_or_else(|| panic!("no {metric} for {subject}"))
    };
    assert!(close(
        score("vllm/scripted", "harness_observer_blocks").value,
        1.0
    ));
    assert!(close(score("vllm/scripted", "harness_spurious_drops").value, 1.0));
    assert!(close(score("vllm/scripted", "harness_steps").value, 7.0));
    assert!(close(score("vllm/hesitant", "harness_step_limit").value, 1.0));
    assert!(close(score("vllm/broken", "harness_schema_failures").value, 3.0));
    assert!(close(score("vllm/broken", "harness_unknown_tools").value, 1.0));
    assert!(score("vllm/scripted", "harness_coverage").ci_low.is_some());
    // Level 3, reference evidence: the control reads every section; the
    // hesitant one reads none, so it can neither read nor cite any span.
    assert!(close(
        score("control/reference", "harness_evidence_read").value,
        1.0
    ));
    assert!(close(score("vllm/hesitant", "harness_evidence_read").value, 0.0));
    assert!(close(
        score("vllm/hesitant", "harness_evidence_recall").value,
        0.0
    ));
    let (read, recall) = (
        score("vllm/scripted", "harness_evidence_read").value,
        score("vllm/scripted", "harness_evidence_recall").value,
    );
    assert!(
        (0.0..=read).contains(&recall) && read <= 1.0,
        "read {read}, recall {recall}"
    );
    // Level 2's trajectories: one row per subject and step, the median
    // within its band; the hesitant one holds at 2 bits every step.
    let hesitant: Vec<&ScoreRow> = scores
        .iter()
        .filter(|s| s.subject == "vllm/hesitant" && s.metric == "harness_entropy_trajectory")
        .collect();
    assert_eq!(hesitant.len(), 50, "one row a step");
    assert!(hesitant.iter().all(|s| s.level == "step" && close(s.value, 2.0)));
    assert!(
        scores
            .iter()
            .filter(|s| s.metric == "harness_entropy_trajectory")
            .all(|s| {
                s.ci_low.is_some_and(|low| low <= s.value + 1e-12)
                    && s.ci_high.is_some_and(|high| high + 1e-12 >= s.value)
            })
    );
    let page = std::fs::read_to_string(run_dir.join("report.html")).expect("report.html");
    assert!(page.contains("entropy trajectories") && page.contains("Evidence recall"));
    assert!(
        page.contains("id=\"trajectory-harness\""),
        "the trajectory figure is drawn"
    );

    // A rerun from infer is served from the cache, with the same rows.
    let before = server.requests();
    run(dir.path(), &file, &run_dir, &["--from", "infer"]);
    assert_eq!(server.requests(), before, "every call came from the cache");
    let again: Vec<ResponseRow> = rows(&run_dir);
    let key = |rows: &[ResponseRow]| {
        let mut keyed: Vec<(String, String, Option<String>, Option<HarnessOutcome>)> = rows
            .iter()
            .map(|row| {
                (
                    row.subject.clone(),
                    row.variant_id.clone(),
                    row.text.clone(),
                    row.harness.clone(),
                )
            })
            .collect();
        keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        keyed
    };
    assert_eq!(key(&again), key(&responses));
}

#[test]
fn harness_settings_are_checked_with_their_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_pipeline(dir.path(), "bad", None);
    let text = std::fs::read_to_string(&file)
        .expect("read")
        .replace("max-steps = 50", "max-steps = 50\nmin-coverage = 1.5");
    std::fs::write(&file, text).expect("write");
    let output = cfeval_in(dir.path(), &["run", &file.display().to_string(), "--dry-run"]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("min-coverage must be between 0 and 1"),
        "{stderr}"
    );
    let line = std::fs::read_to_string(&file)
        .expect("read")
        .lines()
        .position(|line| line.starts_with("min-coverage"))
        .expect("line")
        + 1;
    assert!(
        stderr.contains(&format!(":{line}:")),
        "the line is named: {stderr}"
    );
}

#[test]
fn with_native_tool_calls_every_tool_carries_the_belief_and_a_call_without_it_is_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_pipeline(dir.path(), "native", None);
    let run_dir = dir.path().join("runs/native");
    run(dir.path(), &file, &run_dir, &[]);
    // The test server answers a request with tools by calling the first
    // tool (with arguments of its own, no belief) until a tool result is
    // in the conversation, then with the responder's text.
    let server = BackgroundServer::start(ServerConfig {
        responder: Some(Arc::new(|_: &str, _: &str, _: Option<u64>| hesitant())),
        record_bodies: true,
        ..ServerConfig::default()
    })
    .expect("test server");
    let url = server.openai_base_url();
    let run_arg = run_dir.display().to_string();
    let args = [
        "infer",
        "--run",
        &run_arg,
        "--subject",
        "vllm/native",
        "--base-url",
        &url,
        "--mode",
        "harness",
        "--harness-steps",
        "5",
    ];
    succeeded(cfeval_in(dir.path(), &args), "cfeval infer --mode harness");
    let bodies = server.bodies();
    let tools = bodies[0]["tools"].as_array().expect("native tools offered");
    let names: Vec<&str> = tools
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["list_chart_sections", "read_chart_section", "consult", "finish"]
    );
    for tool in tools {
        let required = tool["function"]["parameters"]["required"]
            .as_array()
            .expect("required");
        assert!(required.iter().any(|key| key == "differential"), "{tool}");
    }
    let responses: Vec<ResponseRow> = rows(&run_dir);
    let native: Vec<&ResponseRow> = responses
        .iter()
        .filter(|row| row.subject == "vllm/native")
        .collect();
    assert!(!native.is_empty());
    for row in native {
        let outcome = row.harness.as_ref().expect("outcome");
        let first = &outcome.trajectory[0];
        assert_eq!(first.action, "list_chart_sections", "the tool call ran");
        assert!(
            first
                .problem
                .as_deref()
                .is_some_and(|p| p.contains("differential")),
            "{first:?}"
        );
        assert!(first.belief.is_empty());
        // Then text replies in the step JSON: finishes blocked to the limit.
        assert_eq!((outcome.steps, outcome.outcome.as_str()), (5, "step_limit"));
        assert_eq!(outcome.schema_failures, 1);
        assert_eq!(outcome.observer_blocks, 4);
        assert_eq!(row.text.as_deref(), Some(ANSWER));
    }
    // A control keeps to the step limit too: with 3 steps it reads two
    // sections (coverage 0.5 of 4) and finishes at the third.
    let args = [
        "infer",
        "--run",
        &run_arg,
        "--subject",
        "control/reference",
        "--mode",
        "harness",
        "--harness-steps",
        "3",
    ];
    succeeded(
        cfeval_in(dir.path(), &args),
        "cfeval infer control --harness-steps 3",
    );
    let responses: Vec<ResponseRow> = rows(&run_dir);
    for row in responses
        .iter()
        .filter(|row| row.subject == "control/reference" && row.mode == "harness")
    {
        let outcome = row.harness.as_ref().expect("outcome");
        assert_eq!(outcome.steps, 3, "{outcome:?}");
        assert_eq!(outcome.outcome, "approved");
        assert_eq!(row.sections_read.len(), 2);
    }
}

/// The sections every applicable variant of a run has, in the first one's
/// order.
fn common_sections(run: &Path) -> Vec<String> {
    let variants: Vec<VariantRow> = rows::<VariantRow>(run)
        .into_iter()
        .filter(|variant| variant.applicable)
        .collect();
    let mut common: Vec<String> = variants[0].sections.iter().map(|s| s.name.clone()).collect();
    common.retain(|name| {
        variants
            .iter()
            .all(|v| v.sections.iter().any(|s| &s.name == name))
    });
    common
}

/// A harness row as two runs must agree on: subject, variant, answer,
/// outcome and the trace's steps.
type Episode = (
    String,
    String,
    Option<String>,
    Option<HarnessOutcome>,
    Vec<String>,
);

/// The harness rows of a run, in order.
fn episodes(run: &Path) -> Vec<Episode> {
    let mut keyed: Vec<_> = rows::<ResponseRow>(run)
        .into_iter()
        .filter(|row| row.mode == "harness" && !row.is_control)
        .map(|row| {
            let trace = row
                .trace
                .iter()
                .map(|step| format!("{}:{:?}", step.kind, step.text))
                .collect();
            (row.subject, row.variant_id, row.text, row.harness, trace)
        })
        .collect();
    keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    keyed
}

#[test]
fn sigkilled_harness_episodes_resume_to_the_uninterrupted_tables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_pipeline(dir.path(), "resume", None);
    let clean = dir.path().join("runs/clean");
    let killed = dir.path().join("runs/killed");
    run(dir.path(), &file, &clean, &[]);
    run(dir.path(), &file, &killed, &[]);
    let sections = common_sections(&clean);
    let server = BackgroundServer::start(ServerConfig {
        responder: Some(responder(sections)),
        latency: std::time::Duration::from_millis(3),
        ..ServerConfig::default()
    })
    .expect("test server");
    let url = server.openai_base_url();
    let infer = |run: &Path| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_cfeval"));
        command
            .args(["infer", "--run"])
            .arg(run)
            .args(["--subject", "vllm/broken", "--base-url", &url])
            .args(["--mode", "harness", "--harness-json", "--concurrency", "2"])
            .env_remove("OPENAI_API_KEY")
            .env_remove("RUST_LOG")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        command
    };
    assert!(infer(&clean).status().expect("clean infer").success());
    let clean_calls = server.requests();
    // Killed three times mid-episode (an episode is 13 calls), then resumed.
    let mut interrupted = 0;
    for kill in 1..=3u64 {
        let mut child = infer(&killed).spawn().expect("spawn");
        let target = server.requests() + kill * 7;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while server.requests() < target && child.try_wait().expect("poll").is_none() {
            assert!(std::time::Instant::now() < deadline, "no progress");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if child.try_wait().expect("poll").is_none() {
            interrupted += 1;
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(interrupted > 0, "no kill came while infer was running");
    assert!(infer(&killed).status().expect("resumed infer").success());
    assert!(
        server.requests() > clean_calls,
        "the killed run made calls of its own"
    );
    assert_eq!(
        episodes(&killed),
        episodes(&clean),
        "identical episodes after the kills"
    );
    // One row per tuple: nothing lost or doubled.
    let keys: Vec<(String, String)> = rows::<ResponseRow>(&killed)
        .into_iter()
        .filter(|row| row.mode == "harness")
        .map(|row| (row.subject, row.variant_id))
        .collect();
    let unique: std::collections::BTreeSet<_> = keys.iter().cloned().collect();
    assert_eq!(keys.len(), unique.len());
}

/// A Diagnostician that never proposes an answer: the episode ends at the
/// step limit as the subject's own outcome (`no_answer`, status `ok`, a
/// text that names no diagnosis), is judged like any answer (it names none)
/// and counts as failed in level 1 — never a row left out of the scores,
/// and the run does not fail for it.
#[test]
fn a_diagnostician_that_never_answers_is_graded_not_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_pipeline(dir.path(), "silent", None);
    let run_dir = dir.path().join("runs/silent");
    run(dir.path(), &file, &run_dir, &[]);
    let server = BackgroundServer::start(ServerConfig {
        responder: Some(Arc::new(|_: &str, _: &str, _: Option<u64>| {
            reply(&[(A, 0.6), (B, 0.4)], "list_chart_sections", "")
        })),
        ..ServerConfig::default()
    })
    .expect("test server");
    let url = server.openai_base_url();
    let run_arg = run_dir.display().to_string();
    let infer = [
        "infer",
        "--run",
        &run_arg,
        "--subject",
        "vllm/silent",
        "--base-url",
        &url,
        "--mode",
        "harness",
        "--harness-json",
        "--harness-steps",
        "3",
    ];
    succeeded(cfeval_in(dir.path(), &infer), "cfeval infer --mode harness");
    let responses: Vec<ResponseRow> = rows(&run_dir);
    let silent: Vec<&ResponseRow> = responses
        .iter()
        .filter(|row| row.subject == "vllm/silent")
        .collect();
    assert!(!silent.is_empty());
    for row in &silent {
        let outcome = row.harness.as_ref().expect("outcome");
        assert_eq!((outcome.steps, outcome.outcome.as_str()), (3, "no_answer"));
        assert_eq!(row.status, "ok", "{:?}", row.error);
        assert_eq!(
            row.text.as_deref(),
            Some("No diagnosis was proposed within the limit of 3 steps.")
        );
    }
    succeeded(
        cfeval_in(dir.path(), &["judge", "--run", &run_arg, "--judge", "rule"]),
        "cfeval judge",
    );
    let judgments: Vec<JudgmentRow> = rows(&run_dir);
    let cms: Vec<&JudgmentRow> = judgments
        .iter()
        .filter(|row| row.subject == "vllm/silent" && row.metric == "cms")
        .collect();
    assert!(!cms.is_empty());
    assert!(
        cms.iter().all(|row| row.status == "ok" && row.score == Some(0.0)),
        "{cms:?}"
    );
    succeeded(
        cfeval_in(dir.path(), &["aggregate", "--run", &run_arg]),
        "cfeval aggregate",
    );
    let scores: Vec<ScoreRow> = rows(&run_dir);
    let failed = scores
        .iter()
        .find(|s| s.subject == "vllm/silent" && s.metric == "harness_failed" && s.level == "overall")
        .expect("harness_failed");
    assert!(close(failed.value, 1.0), "{failed:?}");
}
