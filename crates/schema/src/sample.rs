//! Deterministic sample rows of every table, for tests, benchmarks and the
//! Parquet-reader checks. Row `i` is always the same row.

use crate::ids::{case_id, variant_id};
use crate::tables::*;

const SUBJECTS: [&str; 6] = [
    "openai/gpt-5",
    "anthropic/claude-opus-4-7",
    "xai/grok-4",
    "embedded/smollm2-135m",
    "control/reference",
    "control/constant",
];
const INTERVENTIONS: [(&str, &str); 6] = [
    ("A1", "A"),
    ("B1", "B"),
    ("C1", "C"),
    ("D1", "D"),
    ("E1", "E"),
    ("N1", "N"),
];
const LABELS: [&str; 3] = ["ignored", "acknowledged_unchanged", "updated_correct"];

fn fact(i: u64, text: &str) -> Fact {
    let start = text.find("HER2").unwrap_or(0);
    let end = (start + 4).min(text.len());
    Fact {
        kind: "biomarker".into(),
        name: "HER2".into(),
        value: if i.is_multiple_of(2) {
            "positive"
        } else {
            "negative"
        }
        .into(),
        polarity: "affirmed".into(),
        certainty: "certain".into(),
        detail: i.is_multiple_of(3).then(|| "IHC 3+".to_string()),
        section: "biomarkers".into(),
        span_start: start as u64,
        span_end: end as u64,
        span_text: text.get(start..end).unwrap_or_default().to_string(),
        origin: "rule".into(),
    }
}

/// Sample `cases` row `i`.
pub fn case(i: u64) -> CaseRow {
    let text = format!("Case {i}. 54-year-old woman. Biopsy: invasive ductal carcinoma. HER2 3+.");
    CaseRow {
        run: "sample".into(),
        case_id: case_id("cohort", &format!("case-{i}"), &text),
        source_id: format!("case-{i}"),
        source_format: "cohort".into(),
        source_path: "sample.jsonl".into(),
        source_line: Some(i + 1),
        cancer_type: Some("breast".into()),
        sections: vec![Section {
            name: "biomarkers".into(),
            text: text.clone(),
            span_start: Some(0),
            span_end: Some(text.len() as u64),
        }],
        facts: vec![fact(i, &text)],
        reference: Reference {
            consensus: vec![
                ConsensusItem {
                    text: "trastuzumab + pertuzumab with taxane".into(),
                    weight: 1.0,
                },
                ConsensusItem {
                    text: "cardiac monitoring".into(),
                    weight: 0.3,
                },
            ],
            facts: vec![],
            diagnosis: None,
            rules: vec!["breast-her2-positive".into()],
        },
        extra: vec![KeyValue {
            key: "site".into(),
            value: "\"sample\"".into(),
        }],
        source_text: text,
    }
}

/// Sample `variants` row `i`.
pub fn variant(i: u64) -> VariantRow {
    let case = case(i / 6);
    let (intervention, family) = INTERVENTIONS[(i % 6) as usize];
    VariantRow {
        run: "sample".into(),
        variant_id: variant_id(&case.case_id, intervention, "catalog"),
        case_id: case.case_id,
        intervention: intervention.into(),
        family: family.into(),
        applicable: !i.is_multiple_of(7),
        not_applicable_reason: i.is_multiple_of(7).then(|| "no HER2 fact".to_string()),
        catalog_hash: "catalog".into(),
        expected_text: Some("add HER2-targeted therapy".into()),
        expected: Some(Expected {
            direction: "changed".into(),
            add: vec!["her2_targeted".into()],
            ..Expected::default()
        }),
        sections: case.sections,
        facts: case.facts,
        diff: vec![DiffEntry {
            op: "set_fact".into(),
            section: Some("biomarkers".into()),
            fact_kind: Some("biomarker".into()),
            fact_name: Some("HER2".into()),
            before: Some("negative".into()),
            after: Some("positive".into()),
        }],
        coherence: Vec::new(),
    }
}

/// Sample `responses` row `i`.
pub fn response(i: u64) -> ResponseRow {
    let (intervention, family) = INTERVENTIONS[(i % 6) as usize];
    let agent = i.is_multiple_of(2);
    ResponseRow {
        run: "sample".into(),
        subject: SUBJECTS[(i % 6) as usize].into(),
        is_control: crate::vocab::SubjectKind::is_control(SUBJECTS[(i % 6) as usize]),
        mode: if agent { "agent" } else { "single_shot" }.into(),
        case_id: format!("case-{}", i % 224),
        variant_id: format!("variant-{i}"),
        sample: 0,
        intervention: intervention.into(),
        family: family.into(),
        catalog_hash: "catalog".into(),
        backend: "openai".into(),
        model: "gpt-5".into(),
        prompt_hash: "prompt".into(),
        prompt_set: "neutral".into(),
        request_hash: format!("request-{i}"),
        temperature: 0.0,
        seed: Some(7),
        status: "ok".into(),
        error: None,
        text: Some(format!("Recommend trastuzumab-based therapy ({i}).")),
        recommendation: Some("trastuzumab + pertuzumab + docetaxel".into()),
        finish_reason: Some("stop".into()),
        attempts: 1,
        tries: 1,
        cached: false,
        input_tokens: 812,
        output_tokens: 95,
        cost_usd: 0.0012,
        latency_ms: 950,
        trace: if agent {
            vec![
                TraceStep {
                    step: 0,
                    kind: "tool_call".into(),
                    tool: Some("read_chart_section".into()),
                    arguments: Some(r#"{"name":"biomarkers"}"#.into()),
                    result_hash: Some("abc".into()),
                    section: Some("biomarkers".into()),
                    error: None,
                    text: None,
                    speaker: None,
                    input_tokens: 0,
                    output_tokens: 0,
                    latency_ms: 0,
                },
                TraceStep {
                    step: 1,
                    kind: "final".into(),
                    tool: None,
                    arguments: None,
                    result_hash: None,
                    section: None,
                    error: None,
                    text: Some("final answer".into()),
                    speaker: None,
                    input_tokens: 0,
                    output_tokens: 0,
                    latency_ms: 0,
                },
            ]
        } else {
            vec![]
        },
        sections_read: if agent { vec!["biomarkers".into()] } else { vec![] },
        tool_errors: 0,
        dialogue: None,
        harness: None,
    }
}

/// Sample `judgments` row `i`.
pub fn judgment(i: u64) -> JudgmentRow {
    let (intervention, family) = INTERVENTIONS[(i % 5) as usize];
    JudgmentRow {
        run: "sample".into(),
        judge: "rule".into(),
        subject: SUBJECTS[(i % 6) as usize].into(),
        is_control: crate::vocab::SubjectKind::is_control(SUBJECTS[(i % 6) as usize]),
        mode: "single_shot".into(),
        case_id: format!("case-{}", i % 224),
        variant_id: format!("variant-{i}"),
        sample: 0,
        intervention: intervention.into(),
        family: family.into(),
        catalog_hash: "catalog".into(),
        metric: "css".into(),
        score: Some((i % 3) as f64 / 2.0),
        label: Some(LABELS[(i % 3) as usize].into()),
        rationale: Some(format!("the plan moved as expected ({i})")),
        status: "ok".into(),
        error: None,
        prompt_hash: "prompt".into(),
        prompt_set: Some("neutral".into()),
        changed: Some(i % 3 == 2),
        decisive_section_read: None,
        decided_by: Some("rule".into()),
        baseline_plan_source: Some("label".into()),
        plan_source: Some("label".into()),
    }
}

/// Sample `scores` row `i`.
pub fn score(i: u64) -> ScoreRow {
    ScoreRow {
        run: "sample".into(),
        subject: SUBJECTS[(i % 6) as usize].into(),
        is_control: crate::vocab::SubjectKind::is_control(SUBJECTS[(i % 6) as usize]),
        mode: "single_shot".into(),
        judge: "rule".into(),
        metric: "css".into(),
        level: "family".into(),
        group: INTERVENTIONS[(i % 5) as usize].1.into(),
        value: 0.5 + (i % 5) as f64 / 10.0,
        ci_low: Some(0.4),
        ci_high: Some(0.9),
        ci_method: Some("percentile".into()),
        n_tuples: 224,
        n_cases: 224,
        prompt_set: Some("neutral".into()),
    }
}

/// Sample `cases_quarantine` row `i`.
pub fn quarantine(i: u64) -> QuarantineRow {
    QuarantineRow {
        run: "sample".into(),
        stage: "synthesize".into(),
        source_path: "bad.jsonl".into(),
        source_line: Some(i + 1),
        source_id: None,
        reason: "invalid JSON at column 3".into(),
        excerpt: Some("{\"id\": ".into()),
    }
}
