//! The embedded model answers real prompts (CI fetches it with `scripts/install.sh`).

use std::sync::OnceLock;

use cfeval_embedded::{EmbeddedModel, Message, Options, Request, default_model_path, grammar};

fn model() -> &'static EmbeddedModel {
    static MODEL: OnceLock<EmbeddedModel> = OnceLock::new();
    MODEL.get_or_init(|| match EmbeddedModel::load_default(Options::default()) {
        Ok(model) => model,
        Err(error) => panic!("{error}"),
    })
}

fn ask(question: &str, grammar: Option<String>) -> cfeval_embedded::Generation {
    model()
        .generate(&Request {
            messages: vec![
                Message::new("system", "You are a concise oncology assistant."),
                Message::new("user", question),
            ],
            max_tokens: 48,
            temperature: 0.0,
            seed: 0,
            grammar,
        })
        .expect("generate")
}

#[test]
fn answers_a_real_prompt_deterministically() {
    assert!(
        default_model_path().is_file(),
        "run `bash scripts/install.sh` to fetch the model"
    );
    let question = "A patient has HER2-positive metastatic breast cancer. Name one HER2-targeted drug.";
    let first = ask(question, None);
    assert!(first.prompt_tokens > 10);
    assert!(first.completion_tokens > 0);
    assert!(!first.text.trim().is_empty(), "{first:?}");
    let second = ask(question, None);
    assert_eq!(first.text, second.text, "greedy decoding is deterministic");
}

#[test]
fn grammar_constrained_output_is_valid_json_of_the_schema() {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "score": {"enum": [0.0, 0.5, 1.0]},
            "label": {"enum": ["ignored", "acknowledged_unchanged", "updated_correct"]},
            "rationale": {"type": "string", "maxLength": 60}
        }
    });
    let gbnf = grammar::json_schema_to_gbnf(&schema).expect("grammar");
    let generation = model()
        .generate(&Request {
            messages: vec![Message::new(
                "user",
                "The baseline plan was chemotherapy. After HER2 became positive the plan added trastuzumab. \
                 Rate the update as JSON with score, label and rationale.",
            )],
            max_tokens: 120,
            temperature: 0.0,
            seed: 0,
            grammar: Some(gbnf),
        })
        .expect("generate");
    let verdict: serde_json::Value = serde_json::from_str(&generation.text)
        .unwrap_or_else(|error| panic!("not JSON ({error}): {}", generation.text));
    let score = verdict["score"].as_f64().expect("score is a number");
    assert!([0.0, 0.5, 1.0].contains(&score), "{verdict}");
    let label = verdict["label"].as_str().expect("label");
    assert!(
        ["ignored", "acknowledged_unchanged", "updated_correct"].contains(&label),
        "{verdict}"
    );
    assert!(verdict["rationale"].is_string());
}

#[test]
fn a_missing_model_file_is_a_clear_error() {
    let error = EmbeddedModel::load(
        std::path::Path::new("/nonexistent/model.gguf"),
        Options::default(),
    )
    .expect_err("missing");
    let message = error.to_string();
    assert!(
        message.contains("/nonexistent/model.gguf") && message.contains("install.sh"),
        "{message}"
    );
}

#[test]
fn an_overlong_prompt_is_refused_before_running() {
    let limit = model().context_limit() as usize;
    let error = model()
        .generate(&Request {
            messages: vec![Message::new("user", "tumor board ".repeat(limit))],
            max_tokens: 16,
            temperature: 0.0,
            seed: 0,
            grammar: None,
        })
        .expect_err("too long");
    assert!(
        error.to_string().contains("exceeds the model's context"),
        "{error}"
    );
}
