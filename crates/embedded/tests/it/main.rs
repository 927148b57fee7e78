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

/// A consultation as the dialogue mode sends it: every turn repeats the whole
/// conversation so far, so later prompts start with earlier prompts' batches.
fn consultation(opening: &str, turns: usize) -> Vec<Message> {
    let system = "You are a doctor in a simulated consultation. You may ask the patient \
        questions, one at a time, and you may request tests by writing REQUEST TEST: followed \
        by the test's name; the results come back as the next message. When you are ready, \
        write DIAGNOSIS READY: followed by the single most likely diagnosis. Be brief: one or \
        two sentences per turn. Ask about the onset, duration and character of each symptom, \
        what makes it better or worse, associated symptoms, past medical history, medicines, \
        allergies, family history, travel, occupation, smoking, alcohol and recreational drugs. \
        Do not name a diagnosis before you have enough information, and do not request more \
        tests than you need. The patient does not know medical terms and answers in plain words.";
    let exchanges = [
        (
            "How long have you had the pain, and where exactly is it?",
            "It started about three days ago, around my belly button, and since yesterday it has \
             moved down to the lower right side. It is sharp and it gets worse when I walk or cough.",
        ),
        (
            "Have you had a fever, nausea or vomiting, and have you been able to eat?",
            "I felt hot and shivery last night and I threw up twice this morning. I have not \
             wanted to eat anything since the day before yesterday, not even my usual breakfast.",
        ),
        (
            "Any change in your bowels or in passing urine, and any chance you could be pregnant?",
            "My bowels have not opened since the pain started. Passing water is normal, no \
             burning. I had my period two weeks ago and a pregnancy test at home was negative.",
        ),
        (
            "Have you had anything like this before, any operations, and do you take any medicines?",
            "Nothing like this before. I had my tonsils out as a child. I only take the \
             contraceptive pill and sometimes paracetamol, which has not helped this time at all.",
        ),
        (
            "REQUEST TEST: full blood count",
            "White cell count 15.8 x10^9/L with neutrophils 12.9, haemoglobin 134 g/L, platelets \
             310 x10^9/L. C-reactive protein 96 mg/L. Urinalysis: no blood, no leucocytes, no nitrites.",
        ),
        (
            "REQUEST TEST: ultrasound of the abdomen",
            "A non-compressible blind-ending tubular structure of 9 mm in the right iliac fossa \
             with surrounding fat stranding and a small amount of free fluid; both ovaries are normal.",
        ),
    ];
    let mut messages = vec![Message::new("system", system), Message::new("user", opening)];
    for (question, answer) in exchanges.iter().take(turns) {
        messages.push(Message::new("assistant", *question));
        messages.push(Message::new("user", *answer));
    }
    messages
}

#[test]
fn a_reused_prompt_prefix_changes_no_output() {
    let load = |prefix_cache_bytes| {
        EmbeddedModel::load_default(Options {
            prefix_cache_bytes,
            ..Options::default()
        })
        .expect("load")
    };
    let (cached, uncached) = (load(Options::default().prefix_cache_bytes), load(0));
    // The default batch (128 tokens) gives these prompts several boundaries.
    let batch = cached.options().batch_tokens as usize;
    assert_eq!(batch, 128);
    let opening = "Doctor, I have a terrible pain in my stomach and I feel sick. I am 24 and I work \
        as a primary school teacher; I have never been in hospital before.";
    // The same woman with one fact changed early: her prompts share only the system batch.
    let variant = "Doctor, I have a terrible pain in my stomach and I feel sick. I am 61 and I \
        retired last year; I had a heart attack five years ago.";
    let mut prompts: Vec<Vec<Message>> = (0..=6).map(|turns| consultation(opening, turns)).collect();
    prompts.extend((4..=6).map(|turns| consultation(variant, turns)));
    let mut reused = Vec::new();
    for messages in &prompts {
        let request = |model: &EmbeddedModel| {
            model
                .generate(&Request {
                    messages: messages.clone(),
                    max_tokens: 24,
                    temperature: 0.0,
                    seed: 0,
                    grammar: None,
                })
                .expect("generate")
        };
        let (with, without) = (request(&cached), request(&uncached));
        assert_eq!(without.reused_prompt_tokens, 0);
        assert_eq!(
            (
                &with.text,
                with.completion_tokens,
                with.finish_reason,
                with.prompt_tokens
            ),
            (
                &without.text,
                without.completion_tokens,
                without.finish_reason,
                without.prompt_tokens
            ),
            "a {}-token prompt after reusing {} of its tokens",
            with.prompt_tokens,
            with.reused_prompt_tokens
        );
        assert!(with.reused_prompt_tokens < with.prompt_tokens);
        assert_eq!(with.reused_prompt_tokens % batch, 0, "whole batches only");
        reused.push((with.prompt_tokens, with.reused_prompt_tokens));
    }
    // Each turn reuses every whole batch that the turn before it kept.
    for turn in 1..=6 {
        let kept_before = (reused[turn - 1].0 - 1) / batch * batch;
        assert!(reused[turn].1 >= kept_before, "turn {turn}: {reused:?}");
    }
    assert!(reused[6].1 >= 3 * batch, "{reused:?}");
    // The variant shares the system prompt's batch, not the batches after its changed opening.
    assert!(reused[7].1 > 0 && reused[7].1 < reused[4].1, "{reused:?}");
    assert!(reused[8].1 > reused[7].1, "{reused:?}");
}

#[test]
fn backends_of_one_model_file_share_one_loaded_model() {
    use cfeval_embedded::EmbeddedBackend;
    let doctor = EmbeddedBackend::load("smollm2-135m", None, Options::default()).expect("load");
    let patient = EmbeddedBackend::load("smollm2-135m", None, Options::default()).expect("load");
    assert!(std::sync::Arc::ptr_eq(doctor.model(), patient.model()));
    // Other options are another model: outputs depend on the batch size.
    let other = EmbeddedBackend::load(
        "smollm2-135m",
        None,
        Options {
            batch_tokens: 64,
            ..Options::default()
        },
    )
    .expect("load");
    assert!(!std::sync::Arc::ptr_eq(doctor.model(), other.model()));
    // Once no backend holds it, the next load loads it again.
    let first = std::sync::Arc::downgrade(doctor.model());
    drop((doctor, patient));
    assert!(first.upgrade().is_none());
}
