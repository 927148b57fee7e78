//! Mode `dialogue` end to end (issue 17), against a scripted server that
//! plays the doctors and the patient, over the NEJM-style test cases of the
//! general-medicine pack:
//!
//! - every turn is traced (speaker, text, the test requested and the lines
//!   returned), the outcome is kept, and a doctor that never writes
//!   `DIAGNOSIS READY` ends at the interaction limit as `no_diagnosis`, its
//!   pairs left undecided;
//! - the patient agent never receives the diagnosis or a result (every
//!   request it gets is inspected);
//! - a doctor that commits without requesting the removed test scores F2
//!   as its pre-registered direction says (ignored);
//! - with 30% of the server's answers faults, no turn and no dialogue is
//!   lost: the tables equal the fault-free run's;
//! - a rerun of infer is served from the cache with no new call;
//! - a subject's options: a bias's text reaches its own role only and is
//!   scored against the unbiased subject, `+reflect` reviews once and
//!   answers with the reviewed diagnosis, `+turns=N` sets N, `+notebook`
//!   starts every dialogue of a case from the notebook the earlier cases'
//!   baselines left; bad options are refused when the pipeline is read;
//! - the measurement fallback (a model) chooses among the case's tests by
//!   label, never shown a value, and is recorded when used;
//! - the measurement agent returns the case's own line for every result a
//!   request names, by its label, its test or a synonym (all the OSCE
//!   cases, where the shared data is present).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cfeval_model::testing::{BackgroundServer, FaultRates, Responder, ServerConfig};
use cfeval_schema::{CaseRow, JudgmentRow, ResponseRow, ScoreRow, VariantRow};

use crate::support::{cfeval_in, rows, succeeded, workspace_root};

const GREETING_MARK: &str = "What brings you in";
/// How the general-medicine pack's notebook request begins.
const NOTEBOOK_MARK: &str = "You keep a notebook";
/// How the general-medicine pack's reflection request begins.
const REFLECTION_MARK: &str = "Before you finish, review";

/// The scripted agents, by model name.
fn responder() -> Responder {
    Arc::new(|model: &str, last: &str, _seed: Option<u64>| {
        if model == "matcher" {
            // The measurement fallback: the number of the complete blood
            // count among the tests it is shown, 0 when there is none.
            return last
                .lines()
                .find(|line| line.contains("Complete blood count"))
                .and_then(|line| line.split_once(". "))
                .map_or("0", |(number, _)| number)
                .to_string();
        }
        match model {
            "patient" if last.contains(GREETING_MARK) => "OPENING: I have felt unwell for a few weeks.",
            // Not the JSON asked for: the ratings are missing, never guessed.
            "patient" if last.contains("could not reach a diagnosis") => "I would rather not say.",
            "patient" if last.contains("consultation is over") => {
                r#"{"confidence": 7, "compliance": 8, "consult_again": 6}"#
            }
            "patient" => "REPLY: It came on slowly and has been getting worse.",
            "doctor" if last.starts_with("Patient: OPENING") => "How long has this been going on?",
            "doctor" if last.starts_with("Patient: REPLY") => "REQUEST TEST: Complete blood count",
            "doctor" if last.starts_with("Measurement:") => "Thank you.\nDIAGNOSIS READY: Bullous pemphigoid",
            // The `notebook` tool's rewrite.
            "doctor" if last.starts_with(NOTEBOOK_MARK) => "NOTEBOOK: ask about onset; a blood count helped.",
            // The `reflect` tool's self-review: the doctor changes its mind.
            "doctor" if last.starts_with(REFLECTION_MARK) => "On review, DIAGNOSIS READY: Pemphigus vulgaris",
            "doctor" => "Please go on.",
            "committer" => "DIAGNOSIS READY: Bullous pemphigoid",
            // Requests a test by a name no synonym matches.
            "asker" if last.starts_with("Patient: OPENING") => "REQUEST TEST: the usual blood panel",
            "asker" => "DIAGNOSIS READY: Bullous pemphigoid",
            _ => "Could you tell me a little more about that?",
        }
        .to_string()
    })
}

fn server(faults: FaultRates) -> BackgroundServer {
    BackgroundServer::start(ServerConfig {
        responder: Some(responder()),
        faults,
        seed: 7,
        record_bodies: true,
        ..ServerConfig::default()
    })
    .expect("test server")
}

const LIMITS: &str =
    "{ max-attempts = 8, backoff-base-secs = 0.0, backoff-max-secs = 0.0, max-retry-after-secs = 0.0 }";

fn pipeline(dir: &Path, name: &str, url: &str) -> PathBuf {
    let subjects = ["vllm/doctor", "vllm/committer", "vllm/talker"]
        .map(|name| subject(name, url))
        .concat();
    write_pipeline(dir, name, url, &subjects)
}

/// A model subject in mode dialogue on the scripted server.
fn subject(name: &str, url: &str) -> String {
    format!(
        r#"
[[subjects]]
name = "{name}"
base-url = "{url}"
modes = ["dialogue"]
limits = {LIMITS}
"#
    )
}

fn write_pipeline(dir: &Path, name: &str, url: &str, subjects: &str) -> PathBuf {
    let root = workspace_root();
    let text = format!(
        r#"[run]
name = "{name}"
seed = 3
pack = "{pack}"

[cases]
inputs = ["{cases}"]

[infer]
max-tries = 5
{subjects}
[[subjects]]
name = "control/reference"
modes = ["dialogue"]

[dialogue]
patient = "vllm/patient"
patient-base-url = "{url}"
patient-limits = {LIMITS}
max-turns = 4

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

/// Runs the pipeline until it succeeds (a rerun retries rows a fault left
/// as errors), at most `tries` times.
fn run_until_done(dir: &Path, pipeline: &Path, run: &Path, tries: usize) {
    let args = [
        "run",
        &pipeline.display().to_string(),
        "--run-dir",
        &run.display().to_string(),
    ];
    for attempt in 1..=tries {
        let output = cfeval_in(dir, &args);
        if output.status.success() {
            return;
        }
        assert!(
            attempt < tries,
            "cfeval run failed {tries} times:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// Reruns the pipeline from infer: every call must come from the cache.
fn rerun_from_cache(server: &BackgroundServer, dir: &Path, pipeline: &Path, run: &Path) {
    let before = server.requests();
    succeeded(
        cfeval_in(
            dir,
            &[
                "run",
                &pipeline.display().to_string(),
                "--run-dir",
                &run.display().to_string(),
                "--from",
                "infer",
            ],
        ),
        "cfeval run --from infer",
    );
    assert_eq!(server.requests(), before, "every call came from the cache");
}

/// A dialogue as two runs must agree on: its text, its outcome and its
/// turns (the trace's speakers and texts).
type Spoken = (Option<String>, String, Vec<(String, String)>);

/// The dialogue responses by (subject, variant).
fn dialogues(run: &Path) -> BTreeMap<(String, String), Spoken> {
    rows::<ResponseRow>(run)
        .into_iter()
        .map(|row| {
            let dialogue = row.dialogue.expect("a dialogue row keeps its outcome");
            let turns = row
                .trace
                .iter()
                .map(|step| {
                    (
                        step.speaker.clone().unwrap_or_default(),
                        step.text.clone().unwrap_or_default(),
                    )
                })
                .collect();
            ((row.subject, row.variant_id), (row.text, dialogue.outcome, turns))
        })
        .collect()
}

#[test]
fn dialogues_run_end_to_end_against_a_scripted_server() {
    let server = server(FaultRates::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pipeline(dir.path(), "dialogue", &server.openai_base_url());
    let run = dir.path().join("runs/dialogue");
    run_until_done(dir.path(), &file, &run, 1);

    let responses: Vec<ResponseRow> = rows(&run);
    assert!(!responses.is_empty());
    for row in &responses {
        assert_eq!(row.mode, "dialogue");
        assert_eq!(row.status, "ok", "{row:?}");
        let dialogue = row.dialogue.as_ref().expect("outcome");
        assert_eq!(dialogue.patient, "vllm/patient", "the patient is on every row");
        assert_eq!(dialogue.max_turns, 4);
        assert!(dialogue.turns <= 4);
    }
    fn of<'a>(responses: &'a [ResponseRow], subject: &'a str) -> impl Iterator<Item = &'a ResponseRow> {
        responses.iter().filter(move |row| row.subject == subject)
    }

    // The scripted doctor: greeting, opening, a question, a reply, a test
    // request with its result, the diagnosis, and the patient's ratings.
    for row in of(&responses, "vllm/doctor") {
        let speakers: Vec<&str> = row
            .trace
            .iter()
            .map(|step| step.speaker.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(
            speakers,
            vec![
                "doctor",
                "patient",
                "doctor",
                "patient",
                "doctor",
                "measurement",
                "doctor",
                "patient"
            ],
            "{:?}",
            row.trace
        );
        let dialogue = row.dialogue.as_ref().expect("outcome");
        assert_eq!(dialogue.outcome, "diagnosis");
        assert_eq!(dialogue.turns, 3);
        assert_eq!(dialogue.diagnosis.as_deref(), Some("Bullous pemphigoid"));
        assert_eq!(dialogue.tests_requested, vec!["Complete blood count".to_string()]);
        assert_eq!(row.recommendation.as_deref(), Some("Bullous pemphigoid"));
        assert!(
            row.trace.iter().any(|step| step.input_tokens > 0),
            "turns carry their tokens"
        );
        assert!((0.0..=1.0).contains(&dialogue.coverage));
        let steps: Vec<u32> = row.trace.iter().map(|step| step.step).collect();
        assert_eq!(steps, (0..8).collect::<Vec<u32>>(), "steps are numbered in order");
        let perception = dialogue.perception.expect("the patient rated the doctor");
        assert_eq!(
            (
                perception.confidence,
                perception.compliance,
                perception.consult_again
            ),
            (7, 8, 6)
        );
        assert_eq!(
            row.trace.last().and_then(|step| step.speaker.as_deref()),
            Some("patient")
        );
    }
    // Case 1 has a complete blood count: the measurement agent returns its
    // line as the chart writes it.
    let cases: Vec<CaseRow> = rows(&run);
    let first = cases
        .iter()
        .find(|case| case.source_line == Some(1))
        .expect("case 1");
    let measured = of(&responses, "vllm/doctor")
        .find(|row| row.case_id == first.case_id && row.intervention == "baseline")
        .and_then(|row| row.trace.iter().find(|step| step.kind == "result"))
        .and_then(|step| step.text.clone())
        .expect("a result");
    assert!(
        measured.contains("Complete blood count: white cells 9800 per cubic millimeter"),
        "{measured}"
    );

    // The talker never diagnoses: it ends at N, and its pairs are undecided.
    for row in of(&responses, "vllm/talker") {
        let dialogue = row.dialogue.as_ref().expect("outcome");
        assert_eq!((dialogue.outcome.as_str(), dialogue.turns), ("no_diagnosis", 4));
        assert!(row.recommendation.is_none());
        assert!(dialogue.perception.is_none(), "{dialogue:?}");
        assert!(
            dialogue
                .perception_error
                .as_deref()
                .is_some_and(|why| why.contains("no JSON object")),
            "{dialogue:?}"
        );
    }
    let judgments: Vec<JudgmentRow> = rows(&run);
    for judgment in judgments
        .iter()
        .filter(|row| row.subject == "vllm/talker" && row.metric == "css")
    {
        assert_eq!(judgment.label.as_deref(), Some("uncertain"), "{judgment:?}");
    }
    for judgment in judgments
        .iter()
        .filter(|row| row.subject == "vllm/talker" && row.metric == "cms")
    {
        assert_eq!(judgment.score, Some(0.0), "no diagnosis is not a right one");
    }
    // The committer requests nothing: F2 asks for the removed test or for
    // uncertainty, so it is ignored.
    let f2: Vec<&JudgmentRow> = judgments
        .iter()
        .filter(|row| row.subject == "vllm/committer" && row.metric == "css" && row.intervention == "F2")
        .collect();
    assert!(!f2.is_empty());
    for judgment in f2 {
        assert_eq!(
            (judgment.score, judgment.label.as_deref()),
            (Some(0.0), Some("ignored")),
            "{judgment:?}"
        );
    }
    let scores: Vec<ScoreRow> = rows(&run);
    let reference = scores
        .iter()
        .find(|row| {
            row.subject == "control/reference"
                && row.metric == "css"
                && row.level == "overall"
                && row.judge == "rule"
                && row.ci_method.as_deref() != Some("bca")
        })
        .expect("reference CSS");
    assert_eq!(reference.value, 1.0, "the reference control in dialogue mode");
    let confidence = scores
        .iter()
        .find(|row| {
            row.subject == "vllm/doctor" && row.metric == "perception_confidence" && row.level == "overall"
        })
        .expect("the patients' confidence, aggregated");
    assert_eq!((confidence.value, confidence.judge.as_str()), (7.0, "none"));

    // The patient never hears the diagnosis or a result.
    let variants: Vec<VariantRow> = rows(&run);
    let pack = workspace_root().join("data/packs/general-medicine");
    let settings = cfeval_diagnosis::dialogue::Settings::load(&pack).expect("dialogue settings");
    let mut secrets: Vec<String> = cases
        .iter()
        .filter_map(|case| case.reference.diagnosis.clone())
        .collect();
    for variant in &variants {
        for line in cfeval_diagnosis::dialogue::result_lines(&settings, &variant.sections) {
            if let Some((_, value)) = line.line.split_once(": ")
                && value.len() >= 12
            {
                secrets.push(value.to_string());
            }
        }
    }
    let bodies = server.bodies();
    let patient_bodies: Vec<String> = bodies
        .iter()
        .filter(|body| body["model"] == "patient")
        .map(|body| body.to_string().to_lowercase())
        .collect();
    assert!(
        patient_bodies.len() >= 24,
        "{} patient requests",
        patient_bodies.len()
    );
    for body in &patient_bodies {
        for secret in &secrets {
            let secret = serde_json::to_string(&secret.to_lowercase()).expect("json");
            let secret = secret.trim_matches('"');
            assert!(!body.contains(secret), "the patient was told {secret:?}: {body}");
        }
        assert!(!body.contains("request test") && !body.contains("results:"));
    }

    // A rerun of infer is served from the cache: no new call.
    rerun_from_cache(&server, dir.path(), &file, &run);
    let again = dialogues(&run);

    // 30% of the answers faults: nothing is lost, nothing differs.
    let faulty = self::server(FaultRates {
        server_error: 0.2,
        rate_limited: 0.1,
        ..FaultRates::default()
    });
    let faulty_dir = tempfile::tempdir().expect("tempdir");
    let faulty_file = pipeline(faulty_dir.path(), "dialogue", &faulty.openai_base_url());
    let faulty_run = faulty_dir.path().join("runs/dialogue");
    run_until_done(faulty_dir.path(), &faulty_file, &faulty_run, 3);
    assert!(faulty.faults_injected() > 0, "the server did fault");
    assert_eq!(dialogues(&faulty_run), again, "the same dialogues, turn for turn");
}

#[test]
fn biases_reflection_and_turns_are_options_of_a_subject() {
    let server = server(FaultRates::default());
    let url = server.openai_base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let names = [
        "vllm/doctor",
        "vllm/doctor+bias=doctor_recency",
        "vllm/doctor+bias=patient_self_diagnosis",
        "vllm/doctor+reflect",
        "vllm/talker+turns=2",
        "vllm/doctor+notebook",
    ];
    let subjects = names.map(|name| subject(name, &url)).concat();
    let file = write_pipeline(dir.path(), "options", &url, &subjects);
    let run = dir.path().join("runs/options");
    run_until_done(dir.path(), &file, &run, 1);

    let responses: Vec<ResponseRow> = rows(&run);
    let of = |subject: &str| -> Vec<&ResponseRow> {
        responses.iter().filter(|row| row.subject == subject).collect()
    };
    for name in names {
        assert!(!of(name).is_empty(), "{name} ran");
    }
    let outcome = |row: &ResponseRow| row.dialogue.clone().expect("outcome");
    for row in of("vllm/doctor+bias=doctor_recency") {
        assert_eq!(
            outcome(row).bias.as_deref(),
            Some("doctor_recency"),
            "the bias is on every row"
        );
    }
    for row in of("vllm/doctor") {
        assert_eq!(outcome(row).bias, None);
    }
    // The bias text joins its own role's instructions and no one else's.
    let pack = workspace_root().join("data/packs/general-medicine");
    let biases = cfeval_diagnosis::dialogue::load_biases(&pack).expect("biases");
    let text_of = |id: &str| {
        let text = &biases.iter().find(|bias| bias.id == id).expect("bias").text;
        serde_json::to_string(text)
            .expect("json")
            .trim_matches('"')
            .to_string()
    };
    let bodies = server.bodies();
    let told = |model: &str, text: &str| {
        bodies
            .iter()
            .filter(|body| body["model"] == model && body.to_string().contains(text))
            .count()
    };
    let (doctor_bias, patient_bias) = (text_of("doctor_recency"), text_of("patient_self_diagnosis"));
    // (role told, role not told, the bias): each text reaches its role only.
    for (role, other, text) in [
        ("doctor", "patient", &doctor_bias),
        ("patient", "doctor", &patient_bias),
    ] {
        assert!(told(role, text) > 0, "the biased {role} is told its bias");
        assert_eq!(told(other, text), 0, "a {role}'s bias is not the {other}'s");
    }

    // Reflection: one self-review step; its diagnosis is the answer, the
    // first one kept beside it.
    for row in of("vllm/doctor+reflect") {
        let dialogue = outcome(row);
        assert_eq!(
            dialogue.diagnosis.as_deref(),
            Some("Pemphigus vulgaris"),
            "{:?}",
            row.trace
        );
        assert_eq!(
            dialogue.diagnosis_before_reflection.as_deref(),
            Some("Bullous pemphigoid")
        );
        assert_eq!(row.recommendation.as_deref(), Some("Pemphigus vulgaris"));
        assert_eq!(
            row.trace.iter().filter(|step| step.kind == "reflection").count(),
            1
        );
    }
    for row in of("vllm/doctor") {
        assert!(row.trace.iter().all(|step| step.kind != "reflection"));
        assert_eq!(outcome(row).diagnosis_before_reflection, None);
    }
    // The notebook: every dialogue of a case starts from the notebook the
    // earlier cases' baselines left (empty for the first case), and the
    // doctor is told it.
    let variants: Vec<VariantRow> = rows(&run);
    let first_case = &variants.first().expect("variants").case_id;
    let mut by_case: BTreeMap<&str, Vec<Option<String>>> = BTreeMap::new();
    for row in of("vllm/doctor+notebook") {
        by_case
            .entry(row.case_id.as_str())
            .or_default()
            .push(outcome(row).notebook);
    }
    assert!(by_case.len() > 2);
    for (case, started) in &by_case {
        let expected = if case == first_case {
            ""
        } else {
            "NOTEBOOK: ask about onset; a blood count helped."
        };
        assert!(
            started
                .iter()
                .all(|notebook| notebook.as_deref() == Some(expected)),
            "{case}: {started:?}"
        );
    }
    for row in of("vllm/doctor") {
        assert_eq!(outcome(row).notebook, None);
    }
    assert!(
        bodies
            .iter()
            .any(|body| body.to_string().contains("Your notebook, which you wrote")
                && body.to_string().contains("NOTEBOOK: ask about onset")),
        "the doctor reads its notebook"
    );
    let rewrites: Vec<String> = bodies
        .iter()
        .map(|body| body.to_string())
        .filter(|body| body.contains(NOTEBOOK_MARK))
        .collect();
    // One rewrite per case at most (two cases whose consultations read
    // alike ask the same request, served from the cache).
    assert!(
        !rewrites.is_empty() && rewrites.len() <= by_case.len(),
        "{} rewrites",
        rewrites.len()
    );
    assert!(
        rewrites
            .iter()
            .all(|body| body.contains("Doctor: REQUEST TEST: Complete blood count"))
    );

    // `+turns=2` overrides the run's limit of 4.
    for row in of("vllm/talker+turns=2") {
        let dialogue = outcome(row);
        assert_eq!(
            (dialogue.max_turns, dialogue.turns, dialogue.outcome.as_str()),
            (2, 2, "no_diagnosis")
        );
    }

    // The scores compare each biased doctor with the plain one, paired by
    // case; the scripted doctor answers alike, so every delta is 0.
    let scores: Vec<ScoreRow> = rows(&run);
    for subject in [
        "vllm/doctor+bias=doctor_recency",
        "vllm/doctor+bias=patient_self_diagnosis",
    ] {
        for (metric, judge) in [
            ("delta_bias_cms", "rule"),
            ("delta_bias_dialogue_coverage", "none"),
            ("delta_bias_perception_confidence", "none"),
        ] {
            let row = scores
                .iter()
                .find(|row| {
                    row.subject == subject
                        && row.metric == metric
                        && row.judge == judge
                        && row.level == "overall"
                })
                .unwrap_or_else(|| panic!("{subject}: no {metric}"));
            assert_eq!(
                (row.value, row.ci_low, row.ci_high),
                (0.0, Some(0.0), Some(0.0)),
                "{subject} {metric}"
            );
        }
    }
    assert!(
        scores
            .iter()
            .all(|row| !(row.subject == "vllm/doctor+reflect" && row.metric.starts_with("delta_bias")))
    );
    let report = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(
        report.contains("Biases:") && report.contains("patient_self_diagnosis"),
        "the report's Biases table"
    );

    // A rerun is served from the cache, the notebooks' pass too.
    rerun_from_cache(&server, dir.path(), &file, &run);

    // `cfeval infer --mode dialogue` runs one subject the same way.
    succeeded(
        cfeval_in(
            dir.path(),
            &[
                "infer",
                "--run",
                &run.display().to_string(),
                "--subject",
                "vllm/doctor+turns=3",
                "--mode",
                "dialogue",
                "--base-url",
                &url,
                "--patient",
                "vllm/patient",
                "--patient-base-url",
                &url,
            ],
        ),
        "cfeval infer --mode dialogue",
    );
    let responses: Vec<ResponseRow> = rows(&run);
    let three: Vec<&ResponseRow> = responses
        .iter()
        .filter(|row| row.subject == "vllm/doctor+turns=3")
        .collect();
    assert_eq!(three.len(), of("vllm/doctor").len());
    for row in three {
        let dialogue = outcome(row);
        assert_eq!(
            (dialogue.max_turns, dialogue.patient.as_str()),
            (3, "vllm/patient")
        );
        assert_eq!(
            dialogue.diagnosis.as_deref(),
            Some("Bullous pemphigoid"),
            "{row:?}"
        );
    }

    // Options are checked when the pipeline is read.
    for (name, modes, why) in [
        (
            "vllm/doctor+bias=doctor_hurry",
            "dialogue",
            "not in the pack's biases.yaml",
        ),
        ("vllm/doctor+turns=3", "single_shot", "settings of mode dialogue"),
        (
            "control/reference+bias=doctor_recency",
            "dialogue",
            "takes `+turns=` only",
        ),
        ("vllm/doctor+colour=red", "dialogue", "is not a subject option"),
        (
            "vllm/doctor+bias=doctor_recency+reflect",
            "dialogue",
            "named twice",
        ),
    ] {
        let endpoint = if name.starts_with("control/") {
            String::new()
        } else {
            format!("base-url = \"{url}\"\n")
        };
        let mut bad = format!("\n[[subjects]]\nname = \"{name}\"\n{endpoint}modes = [\"{modes}\"]\n");
        if why == "named twice" {
            bad += &subject("vllm/doctor+reflect+bias=doctor_recency", &url);
        }
        let file = write_pipeline(dir.path(), "bad", &url, &bad);
        let output = cfeval_in(dir.path(), &["run", &file.display().to_string(), "--dry-run"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success() && stderr.contains(why),
            "{name}: {stderr}"
        );
    }
}

#[test]
fn the_measurement_fallback_chooses_among_the_cases_tests_by_label() {
    let server = server(FaultRates::default());
    let url = server.openai_base_url();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write_pipeline(dir.path(), "fallback", &url, &subject("vllm/asker", &url));
    let text = std::fs::read_to_string(&file).expect("pipeline");
    let text = text.replacen(
        "max-turns = 4\n",
        &format!("max-turns = 4\nmeasurement-fallback = \"vllm/matcher\"\nmeasurement-fallback-base-url = \"{url}\"\n"),
        1,
    );
    std::fs::write(&file, text).expect("pipeline");
    let run = dir.path().join("runs/fallback");
    run_until_done(dir.path(), &file, &run, 1);

    let responses: Vec<ResponseRow> = rows(&run);
    let asked: Vec<&ResponseRow> = responses
        .iter()
        .filter(|row| row.subject == "vllm/asker")
        .collect();
    assert!(!asked.is_empty());
    let (mut chosen, mut none) = (0, 0);
    for row in asked {
        let dialogue = row.dialogue.as_ref().expect("outcome");
        assert_eq!(row.status, "ok", "{row:?}");
        let fallback = row
            .trace
            .iter()
            .find(|step| step.kind == "fallback")
            .expect("the fallback was asked");
        assert_eq!(fallback.speaker.as_deref(), Some("measurement"));
        let result = row
            .trace
            .iter()
            .find(|step| step.kind == "result")
            .expect("a result");
        let text = result.text.as_deref().unwrap_or_default();
        if dialogue.measurement_fallbacks == 1 {
            chosen += 1;
            assert_eq!(
                result.tool.as_deref(),
                Some("measurement_fallback"),
                "recorded when used"
            );
            assert!(
                text.starts_with("RESULTS:\n") && text.contains("Complete blood count"),
                "{text}"
            );
        } else {
            none += 1;
            assert_eq!(dialogue.measurement_fallbacks, 0);
            assert_eq!(result.tool, None);
            assert!(
                text.contains("normal readings") || text.contains("not available"),
                "{text}"
            );
        }
    }
    assert!(chosen > 0 && none > 0, "{chosen} chosen, {none} not");
    // The fallback is shown labels, never a value.
    for body in server.bodies().iter().filter(|body| body["model"] == "matcher") {
        let body = body.to_string();
        assert!(
            body.contains("Complete blood count") || body.contains("1. "),
            "{body}"
        );
        assert!(!body.contains("9800"), "a value reached the fallback: {body}");
    }
}

#[test]
fn the_measurement_agent_returns_the_cases_own_lines() {
    let root = workspace_root();
    let Some(cases) = crate::support::osce_cases() else {
        return;
    };
    let pack = root.join("data/packs/general-medicine");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    succeeded(
        cfeval_in(
            dir.path(),
            &[
                "synthesize",
                "--out",
                &run.display().to_string(),
                "--pack",
                &pack.display().to_string(),
                "--input",
                &cases.display().to_string(),
            ],
        ),
        "cfeval synthesize",
    );
    let settings = cfeval_diagnosis::dialogue::Settings::load(&pack).expect("settings");
    let ontology = cfeval_diagnosis::ontology::Ontology::load(&pack).expect("ontology");
    let measurement = cfeval_diagnosis::dialogue::Measurement {
        settings: &settings,
        ontology: &ontology,
    };
    let (mut asked, mut exact) = (0usize, 0usize);
    let mut misses = Vec::new();
    for case in rows::<CaseRow>(&run) {
        for line in cfeval_diagnosis::dialogue::result_lines(&settings, &case.sections) {
            let specific = line
                .label
                .rsplit(" - ")
                .find(|part| !matches!(part.to_lowercase().as_str(), "findings" | "results" | "result"))
                .unwrap_or(&line.label)
                .to_string();
            let mut requests = vec![line.label.clone(), specific.clone()];
            for (name, synonyms) in ontology.tests_named(&specific) {
                // Only a test the label names whole: `Complete Blood Count`
                // for CBC, not a word of it.
                if ontology.test_matches(&name, &specific) && ontology.test_matches(&specific, &name) {
                    requests.push(name);
                    requests.extend(synonyms);
                }
            }
            for request in requests {
                asked += 1;
                let answer = measurement.answer(&request, &case.sections, &[]);
                if answer.text.lines().any(|returned| returned == line.line) {
                    exact += 1;
                } else if misses.len() < 20 {
                    misses.push(format!(
                        "{request:?} → {:?} (wanted {:?})",
                        answer.text, line.line
                    ));
                }
            }
        }
    }
    eprintln!("measurement: {exact}/{asked} requests got the case's own line");
    assert!(asked > 1000, "{asked} requests");
    assert_eq!(exact, asked, "misses:\n{}", misses.join("\n"));
}
