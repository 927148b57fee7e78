//! Specialty packs end to end.
//!
//! - A third pack (`tests/packs/cardiology`: ten hand-written OSCE cases,
//!   three interventions) runs through every stage with no Rust of its own:
//!   the pack is data, the run records it, and the controls score as their
//!   definitions say.
//! - The general-medicine diagnosis pack over the 107 AgentClinic MedQA
//!   cases (read from `../shared/data/external`; skipped with a message
//!   where that folder is absent): every case converts with no span
//!   failure, each intervention applies to at least 40 cases or says why
//!   not, and the reference control scores CSS ≥ 0.98 on F1–F4 with the
//!   constant control at 0.
//! - AgentClinic NEJM cases (`tests/data/nejm-style`: twelve hand-written
//!   cases in that format) convert with the same pack, the controls score
//!   as defined, and the decisive result cfeval picks is compared with the
//!   one the cases' writer named (`decisive.tsv`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use cfeval_model::testing::{BackgroundServer, Responder, ServerConfig};
use cfeval_schema::{CaseRow, JudgmentRow, ScoreRow, VariantRow};

use crate::support::{cfeval_in, rows, succeeded, workspace_root};

fn pipeline(dir: &Path, name: &str, pack: &Path, inputs: &Path) -> PathBuf {
    let text = format!(
        r#"[run]
name = "{name}"
pack = "{pack}"

[cases]
inputs = ["{inputs}"]

[[subjects]]
name = "control/reference"

[[subjects]]
name = "control/constant"

[[subjects]]
name = "control/blind-test_result"

[[subjects]]
name = "control/erratic"

[[judges]]
name = "rule"

[aggregate]
resamples = 200
"#,
        pack = pack.display(),
        inputs = inputs.display()
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write pipeline");
    path
}

/// The overall (or one group's) CSS row of a subject, by the rule judge.
fn css<'a>(scores: &'a [ScoreRow], subject: &str, level: &str, group: &str) -> Option<&'a ScoreRow> {
    scores.iter().find(|row| {
        row.subject == subject
            && row.metric == "css"
            && row.level == level
            && row.group == group
            && row.judge == "rule"
            && row.ci_method.as_deref() != Some("bca")
    })
}

fn run_pipeline(dir: &Path, pipeline: &Path, run: &str) -> PathBuf {
    let run_dir = dir.join("runs").join(run);
    succeeded(
        cfeval_in(
            dir,
            &[
                "run",
                &pipeline.display().to_string(),
                "--run-dir",
                &run_dir.display().to_string(),
            ],
        ),
        "cfeval run",
    );
    run_dir
}

#[test]
fn a_third_pack_runs_end_to_end_with_no_rust_of_its_own() {
    let pack = workspace_root().join("tests/packs/cardiology");
    succeeded(
        cfeval_in(&workspace_root(), &["pack", "check", &pack.display().to_string()]),
        "cfeval pack check",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pipeline(dir.path(), "cardiology", &pack, &pack.join("cases.jsonl"));
    let run = run_pipeline(dir.path(), &file, "cardiology");
    let recorded = std::fs::read_to_string(run.join("pack.json")).expect("the run records its pack");
    assert!(recorded.contains("\"cardiology\""), "{recorded}");

    let variants: Vec<VariantRow> = rows(&run);
    let applied = |id: &str| {
        variants
            .iter()
            .filter(|v| v.intervention == id && v.applicable)
            .count()
    };
    assert_eq!(applied("baseline"), 10, "ten cases");
    assert!(
        applied("F1") >= 8 && applied("F2") >= 8,
        "F1 {} F2 {}",
        applied("F1"),
        applied("F2")
    );
    assert_eq!(
        applied("N1")
            + variants
                .iter()
                .filter(|v| v.intervention == "N1" && !v.applicable)
                .count(),
        10
    );

    let scores: Vec<ScoreRow> = rows(&run);
    let reference = css(&scores, "control/reference", "overall", "all").expect("reference CSS");
    assert!(reference.value >= 0.98, "reference CSS {}", reference.value);
    let constant = css(&scores, "control/constant", "overall", "all").expect("constant CSS");
    assert_eq!(constant.value, 0.0, "constant CSS");
    let blind = css(&scores, "control/blind-test_result", "intervention", "F1").expect("blind F1");
    assert_eq!(blind.value, 0.0, "a control blind to test results ignores F1");
}

#[test]
fn a_model_judge_reads_the_packs_own_pair_prompt() {
    // The judge server gives every pair the verdict its direction wants;
    // what it was asked with is checked afterwards.
    let responder: Responder = Arc::new(|_model: &str, prompt: &str, _seed: Option<u64>| {
        if prompt.contains("\"expected_direction\": \"unchanged\"") {
            r#"{"score": 1.0, "label": "held_correctly", "rationale": "same diagnosis"}"#.to_string()
        } else {
            r#"{"score": 1.0, "label": "updated_correct", "rationale": "moved as expected"}"#.to_string()
        }
    });
    let server = BackgroundServer::start(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .expect("test server");
    let pack = workspace_root().join("tests/packs/cardiology");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pipeline(dir.path(), "cardiology-llm", &pack, &pack.join("cases.jsonl"));
    let run = run_pipeline(dir.path(), &file, "cardiology-llm");
    succeeded(
        cfeval_in(
            dir.path(),
            &[
                "judge",
                "--run",
                &run.display().to_string(),
                "--judge",
                "vllm/diagnosis-judge",
                "--base-url",
                &server.openai_base_url(),
            ],
        ),
        "cfeval judge with a model",
    );
    let asked = server.last_body().expect("the judge was called").to_string();
    assert!(
        asked.contains("counterfactual test of a cardiology diagnosis"),
        "the model judge is asked with the pack's prompt: {asked}"
    );
    let judgments: Vec<JudgmentRow> = rows(&run);
    let by_model: Vec<&JudgmentRow> = judgments
        .iter()
        .filter(|row| row.judge == "vllm/diagnosis-judge" && row.metric == "css")
        .collect();
    assert!(!by_model.is_empty());
    for row in &by_model {
        assert_eq!(row.status, "ok", "{row:?}");
        assert_eq!(row.score, Some(1.0), "{row:?}");
    }
    let with_diagnosis = rows::<VariantRow>(&run)
        .into_iter()
        .filter(|variant| variant.intervention == "F1" && variant.applicable)
        .all(|variant| {
            !variant
                .expected_text
                .unwrap_or_default()
                .contains("the original diagnosis")
        });
    assert!(with_diagnosis, "F1's expectation names the case's diagnosis");
}

#[test]
fn the_osce_cases_convert_and_the_controls_score_as_defined() {
    let root = workspace_root();
    let Some(cases) = crate::support::osce_cases() else {
        return;
    };
    let pack = root.join("data/packs/general-medicine");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pipeline(dir.path(), "osce", &pack, &cases);
    let run = run_pipeline(dir.path(), &file, "osce");

    let status = succeeded(
        cfeval_in(
            dir.path(),
            &["show", "cases_quarantine", "--run", &run.display().to_string()],
        ),
        "show quarantine",
    );
    assert!(status.trim().is_empty(), "no case is quarantined:\n{status}");
    // Every case's reference evidence is exact spans of its source, and
    // the decisive result is always among them.
    let cases: Vec<CaseRow> = rows(&run);
    let mut with_evidence = 0;
    let mut spans = 0;
    for case in &cases {
        let evidence: Vec<_> = case
            .reference
            .facts
            .iter()
            .filter(|fact| fact.kind == "evidence")
            .collect();
        for fact in &evidence {
            assert_eq!(
                &case.source_text[fact.span_start as usize..fact.span_end as usize],
                fact.span_text,
                "{}: evidence span",
                case.source_id
            );
        }
        if let Some(decisive) = case
            .reference
            .facts
            .iter()
            .find(|fact| fact.kind == "decisive" && fact.name == "test_result")
        {
            assert!(
                evidence
                    .iter()
                    .any(|fact| fact.span_start == decisive.span_start && fact.span_end == decisive.span_end),
                "{}: the decisive result is evidence",
                case.source_id
            );
        }
        with_evidence += usize::from(!evidence.is_empty());
        spans += evidence.len();
    }
    eprintln!("OSCE reference evidence: {with_evidence} of 107 cases, {spans} spans");
    assert!(
        with_evidence >= 80,
        "only {with_evidence} cases have reference evidence"
    );
    evidence_against_the_gold_set(&cases);
    let variants: Vec<VariantRow> = rows(&run);
    let mut applicable: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for variant in &variants {
        let entry = applicable.entry(variant.intervention.as_str()).or_default();
        if variant.applicable {
            entry.0 += 1;
        } else {
            entry.1 += 1;
            let reason = variant.not_applicable_reason.as_deref().unwrap_or_default();
            assert!(!reason.trim().is_empty(), "{} says why not", variant.variant_id);
        }
    }
    eprintln!("applicable / not applicable per intervention: {applicable:?}");
    assert_eq!(applicable["baseline"], (107, 0));
    for id in ["F1", "F2", "F3"] {
        assert!(
            applicable[id].0 >= 40,
            "{id} applies to {} cases",
            applicable[id].0
        );
    }
    let scores: Vec<ScoreRow> = rows(&run);
    for id in ["F1", "F2", "F3", "F4"] {
        let Some(reference) = css(&scores, "control/reference", "intervention", id) else {
            assert!(applicable[id].0 == 0, "{id} applies but has no score");
            continue;
        };
        assert!(
            reference.value >= 0.98,
            "reference CSS on {id}: {}",
            reference.value
        );
    }
    let constant = css(&scores, "control/constant", "overall", "all").expect("constant CSS");
    assert_eq!(constant.value, 0.0, "constant CSS");
}

/// Whether cfeval's decisive result is the one the writer named: every
/// word of cfeval's label (its heading aside) is in the writer's words.
fn same_result(chosen: &str, written: &str) -> bool {
    let words = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|word| word.len() > 1)
            .map(str::to_lowercase)
            .collect()
    };
    let written = words(written);
    let own = chosen.rsplit(" - ").next().unwrap_or(chosen);
    let own = words(own);
    !own.is_empty() && own.iter().all(|word| written.contains(word))
}

#[test]
fn nejm_cases_convert_and_the_controls_score_as_defined() {
    let root = workspace_root();
    let cases = root.join("tests/data/nejm-style/cases.jsonl");
    let pack = root.join("data/packs/general-medicine");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = pipeline(dir.path(), "nejm", &pack, &cases);
    let run = run_pipeline(dir.path(), &file, "nejm");
    let quarantine = succeeded(
        cfeval_in(
            dir.path(),
            &["show", "cases_quarantine", "--run", &run.display().to_string()],
        ),
        "show quarantine",
    );
    assert!(
        quarantine.trim().is_empty(),
        "no case is quarantined:\n{quarantine}"
    );
    let cases: Vec<cfeval_schema::CaseRow> = rows(&run);
    assert_eq!(cases.len(), 12);
    for case in &cases {
        assert_eq!(case.source_format, "agentclinic_nejm");
        for fact in &case.facts {
            let span = case
                .source_text
                .get(fact.span_start as usize..fact.span_end as usize);
            assert_eq!(
                span,
                Some(fact.span_text.as_str()),
                "{}: {fact:?}",
                case.source_id
            );
        }
    }
    let gold = std::fs::read_to_string(root.join("tests/data/nejm-style/decisive.tsv")).expect("gold");
    let gold: BTreeMap<u64, &str> = gold
        .lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .filter_map(|line| {
            let mut fields = line.split('\t');
            Some((fields.next()?.parse().ok()?, fields.nth(1)?))
        })
        .collect();
    let (mut chosen, mut agreed, mut named) = (0, 0, 0);
    for case in &cases {
        let line = case.source_line.expect("a line");
        let written = gold[&line];
        let decisive = case
            .reference
            .facts
            .iter()
            .find(|fact| fact.kind == "decisive" && fact.name == "test_result");
        named += usize::from(written != "none");
        if let Some(fact) = decisive {
            chosen += 1;
            agreed += usize::from(same_result(&fact.value, written));
        }
    }
    eprintln!(
        "NEJM-style decisive results: cfeval chose {chosen} of 12, the writer named {named}; {agreed} of cfeval's choices are the writer's"
    );
    // What the rule measured when this test was written (3 of 5), as a floor.
    assert!(
        agreed >= 3 && chosen - agreed <= 2,
        "chosen {chosen}, agreed {agreed}"
    );

    let scores: Vec<ScoreRow> = rows(&run);
    let reference = css(&scores, "control/reference", "overall", "all").expect("reference CSS");
    assert!(reference.value >= 0.98, "reference CSS {}", reference.value);
    let constant = css(&scores, "control/constant", "overall", "all").expect("constant CSS");
    assert_eq!(constant.value, 0.0, "constant CSS");
}

#[test]
fn a_result_is_the_writers_when_its_words_are() {
    assert!(same_result(
        "Right temporal artery biopsy",
        "Right temporal artery biopsy"
    ));
    assert!(same_result(
        "Cerebrospinal fluid - Anti-NMDA receptor (GluN1) IgG antibodies",
        "Anti-NMDA receptor (GluN1) IgG antibodies (CSF)"
    ));
    assert!(!same_result(
        "Peripheral blood smear - Thick smear",
        "Thin smear (peripheral blood smear)"
    ));
    assert!(!same_result("ESR", "none"));
}

/// The rule's reference evidence against two gold sets of spans that
/// clinician-annotators marked on OSCE cases without reading the code:
/// `tests/gold/evidence-osce` (35 cases, lines 11–45) and
/// `tests/gold/evidence-osce-heldout2` (35 cases, lines 46–80, by another
/// writer). A rule span is right when it overlaps a gold span, a gold span
/// is found when a rule span overlaps it. Prints precision and recall per
/// set; fails below each set's floors.
///
/// History. The first set was measured on 2026-12-02 at precision 0.895,
/// recall 0.236 (totals only); after its first half was read (abnormal
/// examination findings are evidence, a result the chart lacks never is)
/// its halves stood at 0.621 / 0.318 (read) and 0.806 / 0.305 (held out).
/// On 2026-12-03 the second set measured that rule as it came, at 0.785 /
/// 0.283 (totals only); the first set, now read whole, is the development
/// set (`CFEVAL_GOLD_REPORT=1` prints its items), the second is held out.
/// Then numbers read against the pack's reference ranges and a markedly
/// abnormal result (twice the upper end, half the lower) as evidence:
/// development 0.717 / 0.311 → 0.671 / 0.338, held out 0.786 / 0.306.
/// Then a sentence holding one of the diagnosis's clinical features (the
/// pack's `features.yaml`, written blind from textbook knowledge): 0.627 /
/// 0.372 and, held out, 0.697 / 0.344 (F1 0.440 → 0.461: more found, less
/// precise).
fn evidence_against_the_gold_set(cases: &[CaseRow]) {
    /// (name, file, print its items, (precision, recall) floors: the last
    /// measurement, rounded down to 0.05).
    const SETS: [(&str, &str, bool, (f64, f64)); 2] = [
        (
            "development",
            "tests/gold/evidence-osce/spans.jsonl",
            true,
            (0.60, 0.35),
        ),
        (
            "held out",
            "tests/gold/evidence-osce-heldout2/spans.jsonl",
            false,
            (0.65, 0.30),
        ),
    ];
    #[derive(serde::Deserialize)]
    struct Gold {
        line: usize,
        spans: Vec<GoldSpan>,
    }
    #[derive(serde::Deserialize)]
    struct GoldSpan {
        text: String,
    }
    let report = std::env::var("CFEVAL_GOLD_REPORT").is_ok_and(|value| value == "1");
    for (name, file, items, (precision_floor, recall_floor)) in SETS {
        let path = workspace_root().join(file);
        let text = std::fs::read_to_string(&path).expect("the evidence gold set");
        // Rule spans, of them right, gold spans, of them found.
        let mut counts = [0usize; 4];
        for (index, line) in text.lines().enumerate() {
            let gold: Gold = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("{}:{}: {err}", path.display(), index + 1));
            let case = cases
                .iter()
                .find(|case| case.source_id == format!("agentclinic-{}", gold.line))
                .unwrap_or_else(|| panic!("no case from line {}", gold.line));
            // Every place each gold text occurs in the case's source.
            let places: Vec<Vec<std::ops::Range<usize>>> = gold
                .spans
                .iter()
                .map(|span| {
                    let places: Vec<_> = case
                        .source_text
                        .match_indices(span.text.as_str())
                        .map(|(at, found)| at..at + found.len())
                        .collect();
                    assert!(
                        !places.is_empty(),
                        "{}:{}: `{}` is not in the case's text",
                        path.display(),
                        index + 1,
                        span.text
                    );
                    places
                })
                .collect();
            let rule: Vec<std::ops::Range<usize>> = case
                .reference
                .facts
                .iter()
                .filter(|fact| fact.kind == "evidence")
                .map(|fact| fact.span_start as usize..fact.span_end as usize)
                .collect();
            let overlaps =
                |a: &std::ops::Range<usize>, b: &std::ops::Range<usize>| a.start < b.end && b.start < a.end;
            if report && items {
                print_items(
                    case,
                    &gold
                        .spans
                        .iter()
                        .map(|span| span.text.as_str())
                        .collect::<Vec<_>>(),
                    &places,
                    gold.line,
                );
            }
            counts[0] += rule.len();
            counts[1] += rule
                .iter()
                .filter(|span| places.iter().flatten().any(|gold| overlaps(span, gold)))
                .count();
            counts[2] += places.len();
            counts[3] += places
                .iter()
                .filter(|gold| {
                    gold.iter()
                        .any(|gold| rule.iter().any(|span| overlaps(span, gold)))
                })
                .count();
        }
        let [rule_spans, rule_right, gold_spans, gold_found] = counts;
        let precision = rule_right as f64 / rule_spans.max(1) as f64;
        let recall = gold_found as f64 / gold_spans.max(1) as f64;
        eprintln!(
            "reference evidence against the gold set, {name}: precision {precision:.3} ({rule_right} of {rule_spans} \
             rule spans), recall {recall:.3} ({gold_found} of {gold_spans} gold spans)"
        );
        assert!(precision >= precision_floor, "{name}: precision {precision:.3}");
        assert!(recall >= recall_floor, "{name}: recall {recall:.3}");
    }
}

/// A development case's gold spans (found or missed, with the chart facts
/// under each) and the rule's spans (right or wrong), for reading.
fn print_items(case: &CaseRow, gold: &[&str], places: &[Vec<std::ops::Range<usize>>], line: usize) {
    let overlaps =
        |a: &std::ops::Range<usize>, b: &std::ops::Range<usize>| a.start < b.end && b.start < a.end;
    let rule: Vec<(std::ops::Range<usize>, &cfeval_schema::Fact)> = case
        .reference
        .facts
        .iter()
        .filter(|fact| fact.kind == "evidence")
        .map(|fact| (fact.span_start as usize..fact.span_end as usize, fact))
        .collect();
    eprintln!("--- line {line} ({})", case.source_id);
    for (text, places) in gold.iter().zip(places) {
        let found = places
            .iter()
            .any(|gold| rule.iter().any(|(span, _)| overlaps(span, gold)));
        let under: Vec<String> = case
            .facts
            .iter()
            .filter(|fact| {
                places
                    .iter()
                    .any(|gold| overlaps(&(fact.span_start as usize..fact.span_end as usize), gold))
            })
            .map(|fact| format!("{}:{}={}", fact.kind, fact.name, fact.value))
            .collect();
        eprintln!(
            "  gold {} `{text}` facts [{}]",
            if found { "FOUND" } else { "missed" },
            under.join("; ")
        );
    }
    for (span, fact) in &rule {
        let right = places.iter().flatten().any(|gold| overlaps(span, gold));
        eprintln!(
            "  rule {} {:?} `{}`",
            if right { "right" } else { "WRONG" },
            fact.detail,
            fact.span_text
        );
    }
}
