//! E-Synthesis throughput on the default cohort ×100 (22,400 cases).
//!
//! `cargo bench -p cfeval-synthesize --bench synthesize`
//!
//! Prints cases/s for (a) the rule-based extraction alone (sectioning +
//! facts + span verification) and (b) the whole stage (`run`: reading the
//! JSONL, extraction, writing `cases` shards). Both are single-threaded, so
//! the figures are per core.

use std::hint::black_box;
use std::time::Instant;

use cfeval_synthesize::cohort::{CohortConfig, generate};
use cfeval_synthesize::{Config, extract};

const REPEAT: usize = 100;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cases = generate(&CohortConfig::default())?;
    let total = cases.len() * REPEAT;

    let started = Instant::now();
    let mut facts = 0usize;
    for _ in 0..REPEAT {
        for case in &cases {
            let sections = extract::sections::split(&case.text);
            let found = extract::extract_facts(&case.text, &sections);
            let failures = extract::verify_spans(&case.text, &sections, &found);
            facts += black_box(found.len() + failures.len());
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "extract: {total} cases in {seconds:.3} s = {:.0} cases/s per core ({facts} facts)",
        total as f64 / seconds
    );

    let dir = tempfile::tempdir()?;
    // Each copy gets its own id: intake quarantines every copy of a
    // duplicate id.
    let mut jsonl = String::new();
    for repeat in 0..REPEAT {
        for case in &cases {
            let mut copy = case.clone();
            copy.id = format!("{}-x{repeat}", case.id);
            jsonl.push_str(&serde_json::to_string(&copy)?);
            jsonl.push('\n');
        }
    }
    let input = dir.path().join("cohort_x100.jsonl");
    std::fs::write(&input, jsonl)?;
    let started = Instant::now();
    let report = cfeval_synthesize::run(&Config::default(), &[input], &dir.path().join("run"))?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "run (read + extract + write shards): {} cases in {seconds:.3} s = {:.0} cases/s per core ({} span failures)",
        report.cases,
        report.cases as f64 / seconds,
        report.span_failures
    );
    Ok(())
}
