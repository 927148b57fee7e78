//! Malformed pipeline files: each must fail with its file:line:column and
//! the message that says what is wrong (and never a secret's value).

use std::path::{Path, PathBuf};

use cfeval_cli::pipeline::Pipeline;

fn catalog() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../data/packs/oncology/catalog.yaml")
        .display()
        .to_string()
}

/// A valid pipeline, line by line, to break one line at a time.
fn valid() -> String {
    format!(
        r#"[run]
name = "t"
seed = 3

[cases]
cohort = {{ cases = 4, seed = 1 }}

[catalog]
path = "{catalog}"

[[subjects]]
name = "control/reference"

[[subjects]]
name = "openai/gpt-5"
modes = ["single_shot", "agent"]
agent-families = ["D"]
concurrency = 8

[[judges]]
name = "rule"

[[judges]]
name = "anthropic/claude-opus-4-7"

[aggregate]
resamples = 100
"#,
        catalog = catalog()
    )
}

fn parse(text: &str) -> Result<Pipeline, cfeval_cli::pipeline::PipelineError> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.toml");
    std::fs::write(&file, text).expect("write");
    Pipeline::load(&file)
}

#[test]
fn the_valid_base_parses() {
    let pipeline = parse(&valid()).expect("valid");
    assert_eq!(pipeline.name, "t");
    assert_eq!(pipeline.seed, 3);
    assert_eq!(pipeline.subjects.len(), 2);
    let gpt = &pipeline.subjects[1];
    assert_eq!(gpt.runs.len(), 2);
    assert!(gpt.runs[0].families.is_empty());
    assert_eq!(gpt.runs[1].families, vec!["D".to_string()]);
    assert_eq!(gpt.limits.as_ref().map(|limits| limits.max_concurrency), Some(8));
    assert_eq!(pipeline.aggregate.resamples, 100);
}

#[test]
fn the_shipped_pipelines_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pipelines");
    for name in ["demo.toml", "oncology-paper.toml"] {
        let pipeline = Pipeline::load(&root.join(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        assert!(
            !pipeline.subjects.is_empty() && !pipeline.judges.is_empty(),
            "{name}"
        );
    }
    let paper = Pipeline::load(&root.join("oncology-paper.toml")).expect("paper");
    assert_eq!(paper.subjects.len(), 6);
    assert!(matches!(
        paper.cases,
        cfeval_cli::pipeline::Cases::Cohort { cases: 224, .. }
    ));
    // Without keys, the environment check names every variable, never a value.
    let problems = paper.check_environment(&|_| None);
    assert!(!problems.is_empty());
    assert!(problems.iter().all(|problem| problem.line > 0), "{problems:?}");
    assert!(
        problems
            .iter()
            .any(|problem| problem.message.contains("OPENAI_API_KEY"))
    );
}

#[test]
fn the_shipped_diagnosis_pipelines_parse_with_the_packs_families() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pipelines");
    if crate::support::osce_cases().is_none() {
        return;
    }
    for name in ["osce-demo.toml", "dialogue-demo.toml"] {
        let pipeline = Pipeline::load(&root.join(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        let embedded = pipeline
            .subjects
            .iter()
            .find(|subject| subject.name == "embedded/smollm2-135m")
            .expect("the embedded subject");
        assert_eq!(embedded.runs[0].families, vec!["F".to_string()], "{name}");
    }
    let sweep = Pipeline::load(&root.join("agentclinic-sweep.toml")).expect("the AgentClinic sweep");
    let names: Vec<&str> = sweep
        .subjects
        .iter()
        .map(|subject| subject.name.as_str())
        .collect();
    for option in [
        "+turns=10",
        "+turns=20",
        "+bias=doctor_recency",
        "+bias=patient_self_diagnosis",
        "+reflect",
        "+notebook",
    ] {
        assert!(names.iter().any(|name| name.contains(option)), "{option}");
    }
    let dialogue = Pipeline::load(&root.join("dialogue-demo.toml")).expect("dialogue demo");
    let plan = dialogue.dialogue.expect("[dialogue]");
    assert_eq!(
        (plan.patient.as_str(), plan.max_turns),
        ("embedded/smollm2-135m", Some(6))
    );
    assert!(matches!(
        dialogue.cases,
        cfeval_cli::pipeline::Cases::Inputs { limit: Some(10), .. }
    ));
    // A family of another pack is refused, naming the pack's.
    let text = std::fs::read_to_string(root.join("osce-demo.toml"))
        .expect("osce demo")
        .replace("families = [\"F\"]", "families = [\"D\"]")
        .replace("\"../", &format!("\"{}/", root.join("..").display()));
    let error = parse(&text).expect_err("family D is oncology's");
    assert!(
        error.message.contains("unknown family `D` (the pack's are F, N)"),
        "{error}"
    );
}

/// (what is broken, the line to replace (1-based, 0 = append), its new text,
/// the line the error must name, a fragment of the message).
fn cases() -> Vec<(&'static str, usize, String, usize, &'static str)> {
    vec![
        ("not TOML", 3, "seed = = 3".into(), 3, "expected"),
        (
            "unknown top-level table",
            0,
            "[extras]\nx = 1".into(),
            28,
            "unknown field `extras`",
        ),
        (
            "unknown key in [run]",
            3,
            "sead = 3".into(),
            3,
            "unknown field `sead`",
        ),
        (
            "unknown key in a subject",
            12,
            "name = \"control/reference\"\ntemprature = 0.2".into(),
            13,
            "unknown field `temprature`",
        ),
        ("bad run name", 2, "name = \"my run!\"".into(), 2, "run name"),
        (
            "unknown extractor",
            6,
            "cohort = { cases = 4, seed = 1 }\nextractor = \"regex\"".into(),
            7,
            "unknown extractor `regex`",
        ),
        (
            "model extractor without a model",
            6,
            "cohort = { cases = 4, seed = 1 }\nextractor = \"llm\"".into(),
            7,
            "needs `extractor-model`",
        ),
        (
            "extractor model for the rule extractor",
            6,
            "cohort = { cases = 4, seed = 1 }\nextractor-model = \"openai/gpt-5\"".into(),
            7,
            "is for `extractor = \"llm\"`",
        ),
        (
            "extractor model that is not a model",
            6,
            "cohort = { cases = 4, seed = 1 }\nextractor = \"both\"\nextractor-model = \"control/reference\""
                .into(),
            8,
            "is not `provider/model`",
        ),
        ("wrong type", 3, "seed = \"three\"".into(), 3, "invalid type"),
        (
            "empty cohort",
            6,
            "cohort = { cases = 0, seed = 1 }".into(),
            6,
            "at least 1 case",
        ),
        (
            "cohort and inputs",
            6,
            "cohort = { cases = 4 }\ninputs = [\"x.jsonl\"]".into(),
            7,
            "both `cohort` and `inputs`",
        ),
        (
            "missing input file",
            6,
            "inputs = [\"nowhere.jsonl\"]".into(),
            6,
            "does not exist",
        ),
        (
            "unknown input format",
            6,
            format!("inputs = [\"{}\"]\nformat = \"pdf\"", catalog()),
            7,
            "unknown format `pdf`",
        ),
        (
            "missing catalog file",
            9,
            "path = \"missing.yaml\"".into(),
            9,
            "catalog `missing.yaml` does not exist",
        ),
        (
            "subject without provider",
            12,
            "name = \"gpt-5\"".into(),
            12,
            "subject `gpt-5`",
        ),
        (
            "unknown provider",
            12,
            "name = \"acme/model-1\"".into(),
            12,
            "subject `acme/model-1`",
        ),
        (
            "unknown control",
            12,
            "name = \"control/oracle\"".into(),
            12,
            "control/oracle",
        ),
        (
            "duplicate subject",
            0,
            "[[subjects]]\nname = \"openai/gpt-5\"".into(),
            29,
            "named twice",
        ),
        (
            "unknown mode",
            16,
            "modes = [\"single_shot\", \"chain\"]".into(),
            16,
            "unknown mode `chain`",
        ),
        (
            "unknown family",
            17,
            "agent-families = [\"Z\"]".into(),
            17,
            "unknown family `Z`",
        ),
        (
            "agent families without agent mode",
            16,
            "modes = [\"single_shot\"]".into(),
            17,
            "no `agent`",
        ),
        ("zero concurrency", 18, "concurrency = 0".into(), 18, "at least 1"),
        (
            "limits on a control",
            12,
            "name = \"control/reference\"\nbase-url = \"http://x\"".into(),
            13,
            "does not apply to the control",
        ),
        (
            "a key pasted as the key variable",
            18,
            "api-key-env = \"sk-live-123456\"".into(),
            18,
            "NAME of an environment variable",
        ),
        (
            "bad base url",
            18,
            "base-url = \"localhost:8000\"".into(),
            18,
            "must start with http",
        ),
        (
            "a control as judge",
            21,
            "name = \"control/reference\"".into(),
            21,
            "not a judge",
        ),
        (
            "judge of the subject's family, no fallback",
            24,
            "name = \"openai/gpt-5.4\"".into(),
            24,
            "family",
        ),
        (
            "fallback of the same family",
            24,
            "name = \"openai/gpt-5.4\"\nfallback = \"openai/o3\"".into(),
            25,
            "family",
        ),
        (
            "rule judge with a fallback",
            21,
            "name = \"rule\"\nfallback = \"openai/gpt-5\"".into(),
            22,
            "needs no fallback",
        ),
        ("duplicate judge", 24, "name = \"rule\"".into(), 24, "named twice"),
        (
            "judge names an unknown subject",
            24,
            "name = \"anthropic/claude-opus-4-7\"\nsubjects = [\"openai/gpt-4\"]".into(),
            25,
            "not a subject of this pipeline",
        ),
        (
            "level out of range",
            27,
            "level = 1.5".into(),
            27,
            "not in (0, 1)",
        ),
        ("zero resamples", 27, "resamples = 0".into(), 27, "at least 1"),
        (
            "temperature out of range",
            18,
            "temperature = 7.0".into(),
            18,
            "temperature 7",
        ),
        (
            "missing human labels",
            27,
            "human-labels = \"labels.csv\"".into(),
            27,
            "does not exist",
        ),
        (
            "rubric options on a pair judge",
            21,
            "name = \"rule\"\ncases = 2".into(),
            22,
            "an option of a rubric judge",
        ),
        (
            "an unknown rubric profile",
            24,
            "name = \"rubric:anthropic/claude-opus-4-7\"\nprofile = \"surgery\"".into(),
            25,
            "rubric profile `surgery`",
        ),
        (
            "a rubric judge of a control",
            24,
            "name = \"rubric:control/reference\"".into(),
            24,
            "a rubric judge is `rubric:<model>`",
        ),
        (
            "a rubric judge on no case",
            24,
            "name = \"rubric:anthropic/claude-opus-4-7\"\ncases = 0".into(),
            25,
            "at least 1",
        ),
    ]
}

#[test]
fn a_rubric_judge_parses_with_its_options() {
    let text = valid().replace(
        "name = \"anthropic/claude-opus-4-7\"",
        "name = \"rubric:anthropic/claude-opus-4-7\"\ncases = 3\nprofile = \"triage\"\nsubjects = [\"openai/gpt-5\"]",
    );
    let pipeline = parse(&text).expect("valid");
    let judge = pipeline
        .judges
        .iter()
        .find(|judge| judge.name.starts_with("rubric:"))
        .expect("the rubric judge");
    assert_eq!(judge.model(), Some("anthropic/claude-opus-4-7"));
    assert_eq!((judge.cases, judge.profile.as_deref()), (Some(3), Some("triage")));
}

fn broken(line: usize, replacement: &str) -> String {
    let mut lines: Vec<String> = valid().lines().map(String::from).collect();
    if line == 0 {
        lines.push(replacement.to_string());
    } else {
        lines[line - 1] = replacement.to_string();
    }
    lines.join("\n") + "\n"
}

#[test]
fn malformed_pipelines_name_file_line_and_cause() {
    let cases = cases();
    assert!(cases.len() >= 20);
    let mut failures = Vec::new();
    for (what, line, replacement, expected_line, fragment) in &cases {
        let text = broken(*line, replacement);
        match parse(&text) {
            Ok(_) => failures.push(format!("{what}: parsed without error")),
            Err(error) => {
                let shown = error.to_string();
                if error.line != *expected_line || !shown.contains(fragment) {
                    failures.push(format!(
                        "{what}: expected line {expected_line} and `{fragment}`, got: {shown}"
                    ));
                }
                if !shown.contains("bad.toml:") {
                    failures.push(format!("{what}: the error does not name the file: {shown}"));
                }
                if shown.contains("sk-live-123456") {
                    failures.push(format!("{what}: the error echoes a secret"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn missing_sections_are_named() {
    for (section, fragment) in [("[cases]", "missing [cases]"), ("[catalog]", "missing [catalog]")] {
        let text: String = valid()
            .split("\n\n")
            .filter(|block| !block.starts_with(section))
            .collect::<Vec<_>>()
            .join("\n\n");
        let error = parse(&text).expect_err(section);
        assert!(error.to_string().contains(fragment), "{error}");
    }
    let no_subjects: String = valid()
        .split("\n\n")
        .filter(|block| !block.starts_with("[[subjects]]"))
        .collect::<Vec<_>>()
        .join("\n\n");
    let error = parse(&no_subjects).expect_err("no subjects");
    assert!(error.to_string().contains("no [[subjects]]"), "{error}");
    let error = Pipeline::load(&PathBuf::from("/nonexistent/p.toml")).expect_err("missing file");
    assert!(
        error.to_string().starts_with("/nonexistent/p.toml: cannot read"),
        "{error}"
    );
}

#[test]
fn missing_keys_are_named_by_variable_never_by_value() {
    let pipeline = parse(&valid()).expect("valid");
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-secret-value-42".to_string());
    let problems = pipeline.check_environment(&env);
    assert_eq!(problems.len(), 1, "{problems:?}");
    let shown = problems[0].to_string();
    assert!(shown.contains("ANTHROPIC_API_KEY"), "{shown}");
    assert_eq!(problems[0].line, 24, "{shown}");
    assert!(!shown.contains("sk-secret-value-42"));
}

#[test]
fn paths_are_normalized_so_one_run_directory_has_one_name() {
    use cfeval_cli::pipeline::normalize;
    assert_eq!(
        normalize(Path::new("pipelines/../runs/demo")),
        PathBuf::from("runs/demo")
    );
    assert_eq!(normalize(Path::new("./a/./b/")), PathBuf::from("a/b"));
    assert_eq!(normalize(Path::new("../x/../y")), PathBuf::from("../y"));
    assert_eq!(normalize(Path::new("/../etc")), PathBuf::from("/etc"));
    assert_eq!(normalize(Path::new("a/..")), PathBuf::from("."));
}
