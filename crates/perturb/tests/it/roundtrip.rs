//! Round trip: E-Synthesis re-run on every edited chart finds exactly the
//! intended fact change and nothing else (negative controls: no change), on
//! the default 224-case cohort, on cohorts of other seeds, and as a property
//! over random cohorts (seed and size drawn by proptest).

use std::collections::BTreeMap;

use cfeval_perturb::apply_with_text;
use cfeval_schema::{CaseRow, Fact, Reference, ids};
use cfeval_synthesize::cohort::{CohortConfig, DEFAULT_CASES, generate};
use cfeval_synthesize::extract::{extract_facts, sections};
use proptest::prelude::*;

use crate::edits::catalog;

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

/// Per intervention: (applicable, round-trip failures).
type Counts = BTreeMap<String, (usize, usize)>;

/// Checks every applicable variant of a cohort; returns the counts and the
/// failure messages.
fn check_cohort(config: &CohortConfig) -> (Counts, Vec<String>) {
    let catalog = catalog();
    let cohort = generate(config).unwrap_or_else(|error| panic!("{error}"));
    let mut counts = Counts::new();
    let mut failures = Vec::new();
    for case in &cohort {
        let row = synthesize(&case.id, &case.text);
        for variant in apply_with_text(&catalog, &row) {
            if variant.row.intervention == "baseline" {
                continue;
            }
            let entry = counts.entry(variant.row.intervention.clone()).or_default();
            if !variant.row.applicable {
                // ROUNDTRIP_REASONS=1 prints every reason; =E2 prints E2's
                // reasons with the chart.
                if let Ok(wanted) = std::env::var("ROUNDTRIP_REASONS") {
                    let reason = variant.row.not_applicable_reason.clone().unwrap_or_default();
                    if wanted == variant.row.intervention {
                        eprintln!("NA {} {reason}\n{}\n", variant.row.intervention, case.text);
                    } else if wanted == "1" {
                        eprintln!(
                            "NA {} {}",
                            variant.row.intervention,
                            reason.chars().take(160).collect::<String>()
                        );
                    }
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

/// The default cohort round-trips, and every intervention applies to at
/// least 20 of its cases (the negative controls to all of them). Run with
/// `--nocapture` for the coverage table of BENCHMARKS.md.
#[test]
fn default_cohort_round_trips_and_covers_the_catalog() {
    let (counts, failures) = check_cohort(&CohortConfig::default());
    eprintln!("| intervention | applicable / {DEFAULT_CASES} | round-trip failures |");
    for (id, (applicable, failed)) in &counts {
        eprintln!("| {id} | {applicable} | {failed} |");
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
    assert_eq!(counts.len(), catalog().interventions().len());
    for (id, (applicable, _)) in &counts {
        if id.starts_with('N') {
            assert_eq!(*applicable, DEFAULT_CASES, "{id} must apply to every case");
        } else {
            assert!(*applicable >= 20, "{id} applies to only {applicable} cases");
        }
    }
}

#[test]
fn other_seeds_round_trip() {
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// For a random cohort (any seed, 16-32 cases), every applicable
    /// (case, intervention) round-trips: re-running E-Synthesis on the
    /// edited chart finds exactly the intended fact change, and for the
    /// negative controls no change at all; N1 and N2 apply to every case.
    #[test]
    fn random_cohorts_round_trip(seed in any::<u64>(), cases in 16usize..=32) {
        let (counts, failures) = check_cohort(&CohortConfig { cases, seed });
        prop_assert!(
            failures.is_empty(),
            "seed {seed}, {cases} cases: {} round-trip failures; first:\n{}",
            failures.len(),
            failures.first().map_or("", String::as_str)
        );
        for control in ["N1", "N2"] {
            prop_assert_eq!(counts.get(control).map(|(applicable, _)| *applicable), Some(cases));
        }
    }
}

/// The applicable variant `id` of a chart E-Synthesis made from `text`,
/// checked to round-trip; returns the edited text.
fn round_trip_one(text: &str, id: &str) -> String {
    let row = synthesize("hand-written", text);
    let found = apply_with_text(&catalog(), &row)
        .into_iter()
        .find(|variant| variant.row.intervention == id)
        .unwrap_or_else(|| panic!("no row for {id}"));
    assert!(
        found.row.applicable,
        "{id}: {:?}",
        found.row.not_applicable_reason
    );
    let edited = found.text.clone().unwrap_or_default();
    let again = synthesize("hand-written", &edited);
    assert_eq!(keys(&found.row.facts), keys(&again.facts), "{edited}");
    edited
}

const LETTER: &str = "Dear Dr Okafor,\n\nThank you for seeing this 54 yo female, whom I am referring with \
non-small-cell lung carcinoma. She first presented with a persistent cough.\n\nBiomarker results: EGFR WT, \
ALK negative, KRAS negative, PD-L1 0%. The disease is pathologic stage IVA, metastatic to the liver and \
contralateral lung.\n\nSurgical resection deferred. No systemic therapy has been given so far.\n\nOther \
history: COPD. ECOG PS 1. Never smoker.\n\nI would appreciate your opinion on further management.\n";

/// Two phrasings of the cohort's letters that A3 and E2 once refused:
/// `PD-L1 0%` is a TPS below 1% (A3 reads it as negative and flips it), and
/// "metastatic to the liver and contralateral lung" is a clause E2 removes.
#[test]
fn zero_percent_pdl1_and_metastatic_to_clauses_are_edited() {
    for (id, wanted) in [
        ("A3", "KRAS negative, PD-L1 80%. The disease"),
        (
            "E2",
            "The disease is pathologic stage III, with no distant metastases.\n",
        ),
    ] {
        let edited = round_trip_one(LETTER, id);
        assert!(edited.contains(wanted), "{id}: {edited}");
    }
}
