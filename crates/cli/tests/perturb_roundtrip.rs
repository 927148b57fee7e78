//! Round trip: E-Synthesis re-run on every edited chart finds exactly the
//! intended fact change and nothing else (negative controls: no change), on
//! the default 224-case cohort and on random cohorts.

use std::collections::BTreeMap;

use cfeval_perturb::{Catalog, apply_with_text};
use cfeval_schema::{CaseRow, Fact, Reference, ids};
use cfeval_synthesize::cohort::{CohortConfig, generate};
use cfeval_synthesize::extract::{extract_facts, sections};

fn catalog() -> Catalog {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog/oncology-v1.yaml");
    Catalog::load(&path).unwrap_or_else(|error| panic!("{error}"))
}

/// A chart as E-Synthesis makes it from free text.
fn synthesize(id: &str, text: &str) -> CaseRow {
    let sections = sections::split(text);
    let facts = extract_facts(text, &sections);
    let cancer_type = facts
        .iter()
        .find(|fact| fact.kind == "cancer_type")
        .map(|fact| fact.value.clone());
    CaseRow {
        run: "roundtrip".into(),
        case_id: ids::case_id("text", id, text),
        source_id: id.into(),
        source_format: "text".into(),
        source_path: "cohort".into(),
        source_line: None,
        source_text: text.to_string(),
        cancer_type,
        sections,
        facts,
        reference: Reference::default(),
        extra: Vec::new(),
    }
}

type Key = (String, String, String, String);

fn keys(facts: &[Fact]) -> BTreeMap<Key, usize> {
    let mut out = BTreeMap::new();
    for fact in facts {
        *out.entry((
            fact.kind.clone(),
            fact.name.clone(),
            fact.value.clone(),
            fact.polarity.clone(),
        ))
        .or_insert(0) += 1;
    }
    out
}

/// Checks every applicable variant of a cohort; returns (per intervention:
/// applicable, round-trip failures) and the failure messages.
fn check_cohort(config: &CohortConfig) -> (BTreeMap<String, (usize, usize)>, Vec<String>) {
    let catalog = catalog();
    let cohort = generate(config).unwrap_or_else(|error| panic!("{error}"));
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for case in &cohort {
        let row = synthesize(&case.id, &case.text);
        for variant in apply_with_text(&catalog, &row) {
            if variant.row.intervention == "baseline" {
                continue;
            }
            let entry = counts.entry(variant.row.intervention.clone()).or_default();
            if !variant.row.applicable {
                if std::env::var("ROUNDTRIP_REASONS").is_ok() {
                    let reason = variant.row.not_applicable_reason.clone().unwrap_or_default();
                    eprintln!(
                        "NA {} {}",
                        variant.row.intervention,
                        reason.chars().take(160).collect::<String>()
                    );
                }
                continue;
            }
            entry.0 += 1;
            let text = variant.text.as_deref().unwrap_or_default();
            let again = synthesize(&case.id, text);
            // What E-Synthesis finds in the edited chart must be exactly the
            // variant's facts: the original facts with the intended change.
            let (wanted, found) = (keys(&variant.row.facts), keys(&again.facts));
            if wanted != found {
                entry.1 += 1;
                let missing: Vec<_> = wanted.keys().filter(|key| !found.contains_key(*key)).collect();
                let extra: Vec<_> = found.keys().filter(|key| !wanted.contains_key(*key)).collect();
                failures.push(format!(
                    "{} {}: missing {missing:?} extra {extra:?}\n{text}\n",
                    case.id, variant.row.intervention
                ));
            }
            // Negative controls change no fact at all.
            if variant.row.family == "N" && keys(&row.facts) != found {
                failures.push(format!(
                    "{} {}: a control changed the facts",
                    case.id, variant.row.intervention
                ));
            }
        }
    }
    (counts, failures)
}

#[test]
fn default_cohort_round_trips() {
    let (counts, failures) = check_cohort(&CohortConfig::default());
    for (id, (applicable, failed)) in &counts {
        eprintln!("{id}: applicable {applicable}, round-trip failures {failed}");
    }
    let verbose = std::env::var("ROUNDTRIP_VERBOSE").is_ok();
    for failure in failures.iter().take(if verbose { 400 } else { 12 }) {
        if verbose {
            eprintln!("{}", failure.lines().next().unwrap_or_default());
        } else {
            eprintln!("{failure}");
        }
    }
    assert!(failures.is_empty(), "{} round-trip failures", failures.len());
}

#[test]
fn random_cohorts_round_trip() {
    // Cohorts under other seeds: other cancer mixes, phrasings and styles.
    for seed in [1, 7, 42, 1234, 98765] {
        let (counts, failures) = check_cohort(&CohortConfig { cases: 120, seed });
        for failure in failures.iter().take(4) {
            eprintln!("seed {seed}: {failure}");
        }
        assert!(
            failures.is_empty(),
            "seed {seed}: {} round-trip failures",
            failures.len()
        );
        assert!(counts.values().map(|(applicable, _)| applicable).sum::<usize>() > 0);
    }
}
