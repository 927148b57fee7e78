//! The model extractor against a real HTTP server (the fault-injecting test
//! server speaking the OpenAI API) whose canned answers quote the notes
//! exactly, loosely (other case and line breaks), and not at all (invented
//! quotes): only verified quotes become facts, every refused claim is a
//! `cases_quarantine` row, `both` keeps the rule's value where the two
//! disagree and records it, and a rerun is answered from the cache.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};
use cfeval_model::{BackendConfig, ModelClient, Protocol, ResponseCache};
use cfeval_synthesize::extract::llm::LlmExtractor;
use cfeval_synthesize::{Config, ExtractorMode, run_with_extractor};

const MODEL: &str = "extractor-model";

const BREAST: &str = "68F with metastatic breast cancer to bone.\nPathology: ER 95%, PR 5%,\nHER2 0 (IHC).\nProgressed on letrozole + palbociclib after 14 months.";
const LUNG: &str =
    "Lung adenocarcinoma of the RUL, EGFR exon 19 deletion. Stage IIIA. Not a surgical candidate.";

/// Canned answers: the breast note's facts with exact, loose and invented
/// quotes; the lung note's with a value the rules read otherwise.
fn answer(prompt: &str) -> String {
    if prompt.contains("ER 95%") {
        r#"{"facts": [
            {"kind": "cancer_type", "name": "primary", "value": "breast", "quote": "metastatic breast cancer"},
            {"kind": "biomarker", "name": "ER", "value": "positive", "quote": "ER 95%"},
            {"kind": "biomarker", "name": "HER2", "value": "negative", "quote": "pr 5%, her2 0"},
            {"kind": "biomarker", "name": "BRCA", "value": "positive", "quote": "germline BRCA2 mutation"},
            {"kind": "stage", "name": "group", "value": "IV", "quote": "Stage IV per PET 03/2024"},
            {"kind": "biomarker", "name": "ESR9", "value": "positive", "quote": "ER 95%"},
            {"kind": "prior_line", "name": "letrozole + palbociclib", "value": "progression", "quote": "Progressed on letrozole + palbociclib after 14 months"}
        ]}"#
        .to_string()
    } else if prompt.contains("RUL") {
        r#"{"facts": [
            {"kind": "cancer_type", "name": "primary", "value": "nsclc", "quote": "Lung adenocarcinoma"},
            {"kind": "biomarker", "name": "EGFR", "value": "negative", "quote": "EGFR exon 19 deletion"},
            {"kind": "stage", "name": "group", "value": "IIIA", "quote": "Stage IIIA"}
        ]}"#
        .to_string()
    } else {
        "not json".to_string()
    }
}

fn server() -> BackgroundServer {
    let responder: Responder = Arc::new(|_model: &str, prompt: &str, _seed: Option<u64>| answer(prompt));
    BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .unwrap()
}

fn extractor(server: &BackgroundServer, cache: &Path) -> LlmExtractor {
    let config = BackendConfig::custom(
        format!("vllm/{MODEL}"),
        Protocol::OpenAiChat,
        server.openai_base_url(),
        None,
    )
    .unwrap();
    let client = ModelClient::from_config(config, None)
        .unwrap()
        .cache(ResponseCache::open(cache, false).unwrap())
        .build()
        .unwrap();
    LlmExtractor::new(format!("vllm/{MODEL}"), client, 512)
}

fn notes(dir: &Path) -> PathBuf {
    let path = dir.join("notes.jsonl");
    let lines = [
        serde_json::json!({"id": "breast", "text": BREAST}),
        serde_json::json!({"id": "lung", "text": LUNG}),
        serde_json::json!({"id": "other", "text": "Follow-up visit, nothing new."}),
    ];
    std::fs::write(
        &path,
        lines.iter().map(|line| format!("{line}\n")).collect::<String>(),
    )
    .unwrap();
    path
}

#[test]
fn only_verified_quotes_become_facts_and_the_rest_is_listed() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let input = notes(dir.path());
    let llm = extractor(&server, &dir.path().join("cache"));
    let config = Config {
        extractor: ExtractorMode::Llm,
        ..Config::default()
    };
    let run = dir.path().join("llm");
    let report = run_with_extractor(&config, std::slice::from_ref(&input), &run, Some(&llm)).unwrap();
    assert_eq!(report.cases, 3);
    assert_eq!(report.span_failures, 0);
    // Breast: cancer type, ER, HER2 (loose quote), the prior line; lung: all three.
    assert_eq!(report.llm_facts, 4 + 3);
    assert_eq!(report.llm_verified, report.llm_facts);
    // Invented quotes (BRCA, stage IV) and an unknown marker.
    assert_eq!(report.unverified_facts, 3);
    // The third note's answer is not JSON, twice (the repair retry).
    assert_eq!(report.llm_errors, 1);
    assert_eq!(server.requests_for_model(MODEL), 2 + 2);

    let rows = crate::case_rows(&run);
    let breast = rows.iter().find(|row| row.source_id == "breast").unwrap();
    let facts: Vec<(&str, &str, &str)> = breast
        .facts
        .iter()
        .map(|fact| (fact.name.as_str(), fact.value.as_str(), fact.span_text.as_str()))
        .collect();
    assert_eq!(
        facts,
        vec![
            ("primary", "breast", "metastatic breast cancer"),
            ("ER", "positive", "ER 95%"),
            // The note's own text, line break and case kept.
            ("HER2", "negative", "PR 5%,\nHER2 0"),
            (
                "letrozole + palbociclib",
                "progression",
                "Progressed on letrozole + palbociclib after 14 months"
            ),
        ]
    );
    assert!(breast.facts.iter().all(|fact| fact.origin == "llm"));
    assert!(breast.facts.iter().all(
        |fact| BREAST.get(fact.span_start as usize..fact.span_end as usize) == Some(fact.span_text.as_str())
    ));
    // No invented fact anywhere.
    for row in &rows {
        assert!(
            !row.facts
                .iter()
                .any(|fact| fact.name == "BRCA" || fact.value == "IV" || fact.name == "ESR9")
        );
    }
    let quarantine = crate::quarantine_rows(&run);
    let reasons: Vec<&str> = quarantine.iter().map(|row| row.reason.as_str()).collect();
    assert_eq!(quarantine.len(), 4, "{reasons:?}");
    assert!(
        reasons
            .iter()
            .any(|reason| reason.contains("BRCA = positive") && reason.contains("quote is not in the note"))
    );
    assert!(reasons.iter().any(|reason| reason.contains("marker `ESR9`")));
    assert!(
        reasons
            .iter()
            .any(|reason| reason.starts_with("model extraction failed"))
    );
    let brca = quarantine.iter().find(|row| row.reason.contains("BRCA")).unwrap();
    assert_eq!(brca.source_id.as_deref(), Some("breast"));
    assert_eq!(brca.source_line, Some(1));
    assert_eq!(brca.excerpt.as_deref(), Some("germline BRCA2 mutation"));

    // A rerun elsewhere with the same cache makes no call (the invalid
    // answers are cached answers too: the same error again, for free).
    let again = run_with_extractor(
        &config,
        std::slice::from_ref(&input),
        &dir.path().join("again"),
        Some(&llm),
    )
    .unwrap();
    assert_eq!(
        (again.llm_facts, again.unverified_facts, again.llm_errors),
        (report.llm_facts, report.unverified_facts, report.llm_errors)
    );
    assert_eq!(server.requests_for_model(MODEL), 2 + 2);
}

#[test]
fn both_keeps_the_rules_value_and_records_the_disagreement() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let input = notes(dir.path());
    let llm = extractor(&server, &dir.path().join("cache"));
    let config = Config {
        extractor: ExtractorMode::Both,
        ..Config::default()
    };
    let run = dir.path().join("both");
    let report = run_with_extractor(&config, std::slice::from_ref(&input), &run, Some(&llm)).unwrap();
    assert_eq!(report.span_failures, 0);
    let rows = crate::case_rows(&run);
    let lung = rows.iter().find(|row| row.source_id == "lung").unwrap();
    let egfr: Vec<&cfeval_schema::Fact> = lung.facts.iter().filter(|fact| fact.name == "EGFR").collect();
    assert_eq!(egfr.len(), 1);
    assert_eq!(
        (egfr[0].value.as_str(), egfr[0].origin.as_str()),
        ("positive", "rule")
    );
    let disagreements: Vec<&str> = lung
        .extra
        .iter()
        .filter(|pair| pair.key == "extractor_disagreement")
        .map(|pair| pair.value.as_str())
        .collect();
    assert_eq!(disagreements.len(), 1, "{disagreements:?}");
    assert!(
        disagreements[0].contains("rule `positive`") && disagreements[0].contains("llm `negative`"),
        "{}",
        disagreements[0]
    );
    assert!(report.disagreements >= 1);
    // The third note's model failure leaves its rule facts in place.
    assert_eq!(report.llm_errors, 1);
    // Without a model, a model extractor is refused before anything runs.
    let error = run_with_extractor(
        &config,
        std::slice::from_ref(&input),
        &dir.path().join("none"),
        None,
    )
    .unwrap_err();
    assert!(error.to_string().contains("needs a model"), "{error}");
}

/// Over every hand-written development note (`notes`, `notes-dev2`): every quote the note
/// really contains verifies — as written, and re-cased and re-spaced as a
/// model might copy it — and lands on the same text; a quote the note does
/// not contain (a fact's passage with words added, or a result made up)
/// never becomes a fact.
#[test]
fn quotes_verify_on_real_notes_and_invented_ones_never_do() {
    let vocabulary = cfeval_synthesize::extract::llm::Vocabulary::builtin();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/gold");
    let (mut real, mut invented, mut notes) = (0usize, 0usize, 0usize);
    for set in ["notes", "notes-dev2"] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(set))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|extension| extension == "jsonl"))
            .collect();
        files.sort();
        for file in files {
            for line in std::fs::read_to_string(&file).unwrap().lines() {
                let note: serde_json::Value = serde_json::from_str(line).unwrap();
                let text = note["text"].as_str().unwrap();
                notes += 1;
                let facts = cfeval_synthesize::extract::extract_facts(
                    text,
                    &cfeval_synthesize::extract::sections::split(text),
                );
                let claim =
                    |fact: &cfeval_schema::Fact, quote: String| cfeval_synthesize::extract::llm::Claim {
                        kind: fact.kind.clone(),
                        name: fact.name.clone(),
                        value: fact.value.clone(),
                        quote,
                    };
                for fact in facts
                    .iter()
                    .filter(|fact| fact.kind == "biomarker" || fact.kind == "prior_line")
                {
                    let copied = fact
                        .span_text
                        .to_uppercase()
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join("  ");
                    let added = format!("{} was confirmed on repeat testing", fact.span_text);
                    let made_up = format!("{} {} (outside report 2031)", fact.name, fact.value);
                    let (kept, refused) = cfeval_synthesize::extract::llm::facts_from_claims(
                        text,
                        vec![
                            claim(fact, fact.span_text.clone()),
                            claim(fact, copied),
                            claim(fact, added),
                            claim(fact, made_up),
                        ],
                        &vocabulary,
                    );
                    // Both true quotes point at text that reads the same.
                    for kept in &kept {
                        let span = &text[kept.span_start as usize..kept.span_end as usize];
                        assert_eq!(span, kept.span_text);
                        assert_eq!(
                            span.to_lowercase().split_whitespace().collect::<Vec<_>>(),
                            fact.span_text
                                .to_lowercase()
                                .split_whitespace()
                                .collect::<Vec<_>>()
                        );
                    }
                    let invented_kept = refused
                        .iter()
                        .filter(|refusal| refusal.reason.contains("quote"))
                        .count();
                    assert_eq!(
                        (kept.len(), invented_kept),
                        (2, 2),
                        "{}: {:?} / {refused:?}",
                        note["id"],
                        fact.span_text
                    );
                    real += 2;
                    invented += 2;
                }
            }
        }
    }
    println!("{notes} notes: {real} true quotes verified, {invented} invented quotes refused");
    assert!(notes >= 240 && real >= 500, "{notes} notes, {real} quotes");
}
