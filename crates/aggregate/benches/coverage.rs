//! The coverage simulation of the bootstrap (harness = false), the numbers
//! behind `BENCHMARKS.md` ("Aggregate: interval coverage").
//!
//! `cargo bench -p cfeval-aggregate --bench coverage -- run` draws data sets
//! from [`Model::paper_like`] (50–200 cases, five families, a case propensity
//! shared by all of a case's tuples), bootstraps each under the joint case
//! design and under the per-family stratified design, and prints one JSON
//! line per design: how often the 95% percentile and BCa intervals of overall
//! CSS and of the family-balanced CSS cover the truth. Settings:
//! `CFEVAL_COVERAGE_DATA_SETS` (default 5,000), `CFEVAL_COVERAGE_RESAMPLES`
//! (2,000), `CFEVAL_COVERAGE_SEED` (2026), `CFEVAL_COVERAGE_CASE_SD` (1.0).

use std::time::Instant;

use cfeval_aggregate::stats::Resampling;
use cfeval_aggregate::synthetic::clustered::{Model, Simulation, coverage};

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if !std::env::args().skip(1).any(|arg| arg == "run") {
        eprintln!("usage: coverage run   (cargo bench runs nothing without it)");
        return Ok(());
    }
    let model = Model {
        case_sd: setting("CFEVAL_COVERAGE_CASE_SD", 1.0),
        ..Model::paper_like()
    };
    let simulation = Simulation {
        data_sets: setting("CFEVAL_COVERAGE_DATA_SETS", 5_000),
        resamples: setting("CFEVAL_COVERAGE_RESAMPLES", 2_000),
        level: 0.95,
        seed: setting("CFEVAL_COVERAGE_SEED", 2026),
    };
    let start = Instant::now();
    let results = coverage(
        &model,
        &simulation,
        &[Resampling::Cases, Resampling::FamilyStrata],
    )?;
    let seconds = start.elapsed().as_secs_f64();
    for result in results {
        println!(
            "{}",
            serde_json::json!({
                "resampling": result.resampling,
                "css": result.css,
                "css_balanced": result.css_balanced,
                "truth": {"css": model.true_css(), "css_balanced": model.true_css_balanced()},
                "simulation": simulation,
                "case_sd": model.case_sd,
                "seconds_both_designs": seconds,
            })
        );
    }
    Ok(())
}
