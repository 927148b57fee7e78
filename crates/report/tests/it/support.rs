//! Runs made for the tests: synthetic judgments aggregated into real scores.

use std::path::Path;

use cfeval_aggregate::synthetic::{Shape, write_judgments};

/// The subjects of the test run: two under test, two controls.
pub const SUBJECTS: [(&str, bool); 4] = [
    ("openai/gpt-5", false),
    ("xai/grok-4", false),
    ("control/reference", true),
    ("control/constant", true),
];

/// CSS families of the test run.
pub const FAMILIES: [&str; 5] = ["A", "B", "C", "D", "E"];

/// A shape of 4 subjects (2 controls) × `modes` × 2 judges × 30 cases ×
/// 12 interventions (families A–E and N); the judges agree on 95% of the
/// pairs, abstain on 3%, and 2% of the answers are truncated.
pub fn shape(modes: &[&str]) -> Shape {
    let mut shape = Shape::standard(30, 1, 2);
    shape.judge_agreement = 0.95;
    shape.abstain = 0.03;
    shape.truncated = 0.02;
    let probabilities = |name: &str| {
        shape
            .subjects
            .iter()
            .find(|(subject, _, _)| subject == name)
            .map(|(_, _, p)| *p)
            .expect("standard subject")
    };
    shape.subjects = SUBJECTS
        .iter()
        .map(|&(name, control)| (name.to_string(), control, probabilities(name)))
        .collect();
    shape.modes = modes.iter().map(|mode| mode.to_string()).collect();
    shape.run = "report-test".into();
    shape
}

/// The aggregate settings of the test runs: few resamples, and a blind-spot
/// threshold that 30 cases can show family D (CSS about 0.1–0.2) to be below
/// in both modes.
pub fn config() -> cfeval_aggregate::Config {
    cfeval_aggregate::Config {
        resamples: 200,
        seed: 5,
        blind_spot_threshold: 0.35,
        ..cfeval_aggregate::Config::default()
    }
}

/// Writes the judgments of `shape` into `run_dir` and aggregates them.
pub fn aggregate(shape: &Shape, run_dir: &Path) {
    write_judgments(shape, run_dir).expect("write judgments");
    cfeval_aggregate::run(&config(), run_dir).expect("aggregate");
}

/// A run folder with both modes, aggregated.
pub fn full_run() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    aggregate(&shape(&["single_shot", "agent"]), dir.path());
    dir
}

/// The `<svg id="ID" …>…</svg>` element of `html`.
pub fn svg<'a>(html: &'a str, id: &str) -> &'a str {
    let open = format!("<svg id=\"{id}\"");
    let start = html.find(&open).unwrap_or_else(|| panic!("no svg {id}"));
    let end = html[start..].find("</svg>").expect("svg closed") + start;
    &html[start..end]
}

/// Marks (`<g class="mark">`, `<g class="mark control">`) in an SVG fragment.
pub fn marks(svg: &str) -> usize {
    svg.matches("<g class=\"mark\"").count() + controls(svg)
}

/// Marks of controls in an SVG fragment.
pub fn controls(svg: &str) -> usize {
    svg.matches("<g class=\"mark control\"").count()
}
