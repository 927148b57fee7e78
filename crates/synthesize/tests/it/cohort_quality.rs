//! The extractor against a freshly generated cohort, and the cohort's
//! coverage of the intervention catalog.

use cfeval_guidelines::Guidelines;
use cfeval_schema::Fact;
use cfeval_synthesize::cohort::evaluate::evaluate;
use cfeval_synthesize::cohort::{CohortCase, CohortConfig, generate};
use cfeval_synthesize::extract::{extract_facts, sections};

/// Fact kinds the issue requires at >= 0.98 precision and recall.
const REQUIRED: [&str; 5] = [
    "cancer_type",
    "stage:group",
    "biomarker:",
    "surgery",
    "prior_line",
];

/// A seed the extractor was never developed against (development used
/// seeds 1-4 and 20261130); the extractor's unit tests use their own
/// hand-written phrasings, none of the generator's templates.
const HELD_OUT_SEED: u64 = 77_031_019;

#[test]
fn precision_and_recall_on_a_held_out_seed() {
    let cases = generate(&CohortConfig {
        cases: 224,
        seed: HELD_OUT_SEED,
    })
    .unwrap();
    let evaluation = evaluate(&cases);
    println!(
        "seed {HELD_OUT_SEED}, {} cases\n{}",
        cases.len(),
        evaluation.table()
    );
    for miss in evaluation.misses.iter().take(10) {
        println!("{} {} {} {}", miss.case, miss.what, miss.group, miss.key);
    }
    let mut required_groups = 0;
    for (group, counts) in &evaluation.groups {
        if REQUIRED.iter().any(|required| group.starts_with(required)) {
            required_groups += 1;
            assert!(
                counts.precision() >= 0.98,
                "{group}: precision {:.4}",
                counts.precision()
            );
            assert!(counts.recall() >= 0.98, "{group}: recall {:.4}", counts.recall());
        }
    }
    // cancer type, stage group, 9 biomarkers, surgery, prior lines.
    assert_eq!(
        required_groups,
        13,
        "{:?}",
        evaluation.groups.keys().collect::<Vec<_>>()
    );
    // Every fact of every kind the generator wrote is recovered.
    for (group, counts) in &evaluation.groups {
        assert!(counts.recall() >= 0.98, "{group}: recall {:.4}", counts.recall());
    }
}

#[test]
fn extracted_facts_give_the_reference_recommendation() {
    let guidelines = Guidelines::builtin().unwrap();
    let cases = generate(&CohortConfig {
        cases: 224,
        seed: HELD_OUT_SEED + 1,
    })
    .unwrap();
    let agreeing = cases
        .iter()
        .filter(|case| {
            let facts = extract_facts(&case.text, &sections::split(&case.text));
            guidelines.recommend(&facts).rules == case.rules
        })
        .count();
    let rate = agreeing as f64 / cases.len() as f64;
    assert!(
        rate >= 0.98,
        "only {agreeing}/{} cases get the reference rules back",
        cases.len()
    );
}

fn value<'a>(facts: &'a [Fact], kind: &str, name: Option<&str>) -> Option<&'a str> {
    facts
        .iter()
        .find(|fact| fact.kind == kind && name.is_none_or(|name| fact.name == name))
        .map(|fact| fact.value.as_str())
}

fn is_immunotherapy(regimen: &str) -> bool {
    let lower = regimen.to_ascii_lowercase();
    [
        "pembrolizumab",
        "nivolumab",
        "ipilimumab",
        "atezolizumab",
        "durvalumab",
    ]
    .iter()
    .any(|drug| lower.contains(drug))
}

/// Each of the 12 interventions of issue 4 applies to at least 20 of the
/// 224 default cases (predicates over the ground-truth facts).
#[test]
fn default_cohort_covers_every_intervention() {
    let cases = generate(&CohortConfig::default()).unwrap();
    assert_eq!(cases.len(), 224);
    let count = |predicate: &dyn Fn(&CohortCase) -> bool| cases.iter().filter(|case| predicate(case)).count();
    let marker =
        |case: &CohortCase, name: &str| value(&case.facts, "biomarker", Some(name)).map(str::to_string);
    let stage = |case: &CohortCase| {
        value(&case.facts, "stage", Some("group"))
            .unwrap_or("")
            .to_string()
    };
    let lines = |case: &CohortCase| -> Vec<(String, String)> {
        case.facts
            .iter()
            .filter(|fact| fact.kind == "prior_line")
            .map(|fact| (fact.name.clone(), fact.value.clone()))
            .collect()
    };
    let known = |value: Option<String>| value.is_some_and(|value| value == "positive" || value == "negative");
    let checks: Vec<(&str, usize)> = vec![
        ("her2_flip", count(&|case| known(marker(case, "HER2")))),
        ("er_flip", count(&|case| known(marker(case, "ER")))),
        ("pdl1_high_low", count(&|case| known(marker(case, "PD-L1")))),
        (
            "progression_on_current_first_line",
            count(&|case| {
                let lines = lines(case);
                lines.len() == 1 && lines[0].1 != "progression" && stage(case) == "IV"
            }),
        ),
        (
            "progression_on_immunotherapy",
            count(&|case| lines(case).iter().any(|(regimen, _)| is_immunotherapy(regimen))),
        ),
        ("strip_her2", count(&|case| marker(case, "HER2").is_some())),
        ("strip_pdl1", count(&|case| marker(case, "PD-L1").is_some())),
        ("strip_er", count(&|case| marker(case, "ER").is_some())),
        (
            "resected_to_unresected",
            count(&|case| value(&case.facts, "surgery", None) == Some("resected")),
        ),
        (
            "unresected_to_resected",
            count(&|case| {
                matches!(
                    value(&case.facts, "surgery", None),
                    Some("unresected" | "not_done")
                )
            }),
        ),
        ("stage_up_to_iv", count(&|case| stage(case) != "IV")),
        ("stage_down", count(&|case| stage(case) != "I")),
    ];
    println!("{checks:?}");
    for (intervention, applicable) in checks {
        assert!(
            applicable >= 20,
            "{intervention} applies to only {applicable} cases"
        );
    }
    let cancers: std::collections::BTreeSet<&str> =
        cases.iter().map(|case| case.cancer_type.as_str()).collect();
    assert_eq!(cancers.len(), 6);
    let stages: std::collections::BTreeSet<String> = cases.iter().map(stage).collect();
    assert_eq!(stages.len(), 4);
}
