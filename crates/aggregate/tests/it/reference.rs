//! Spearman's ρ, its exact p, κ and the BCa interval equal reference values
//! computed independently with SciPy and scikit-learn
//! (`tests/data/reference.py` made `tests/data/reference.json`).

use cfeval_aggregate::stats::bootstrap::{bca_interval, bca_levels, percentile_interval};
use cfeval_aggregate::stats::{Weights, cohen_kappa, spearman, spearman_exact};
use serde_json::Value;

fn reference() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read reference.json")).expect("parse")
}

fn floats(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .expect("array")
        .iter()
        .map(|item| item.as_f64().expect("number"))
        .collect()
}

fn close(actual: f64, expected: f64, tolerance: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tolerance,
        "{what}: {actual} vs reference {expected}"
    );
}

#[test]
fn spearman_rho_and_exact_p_match_scipy() {
    let reference = reference();
    let cases = reference["spearman"].as_array().expect("cases");
    assert!(cases.len() >= 5);
    for (index, case) in cases.iter().enumerate() {
        let x = floats(&case["x"]);
        let y = floats(&case["y"]);
        let rho = case["rho"].as_f64().expect("rho");
        let p = case["p_exact"].as_f64().expect("p");
        close(
            spearman(&x, &y).expect("rho"),
            rho,
            1e-12,
            &format!("case {index} rho"),
        );
        let (exact_rho, exact_p) = spearman_exact(&x, &y).expect("exact");
        close(exact_rho, rho, 1e-12, &format!("case {index} rho"));
        close(
            exact_p,
            p,
            1e-12,
            &format!("case {index} exact p (n = {})", x.len()),
        );
    }
}

#[test]
fn kappa_matches_scikit_learn() {
    let reference = reference();
    for (index, case) in reference["kappa"].as_array().expect("cases").iter().enumerate() {
        let a = floats(&case["a"]);
        let b = floats(&case["b"]);
        let pairs: Vec<(usize, usize)> = a
            .iter()
            .zip(&b)
            .map(|(&a, &b)| (a as usize, b as usize))
            .collect();
        for (name, weights) in [
            ("none", Weights::None),
            ("linear", Weights::Linear),
            ("quadratic", Weights::Quadratic),
        ] {
            let expected = case[name].as_f64().expect("kappa");
            let actual = cohen_kappa(&pairs, 3, weights).expect("kappa");
            close(actual, expected, 1e-12, &format!("case {index} kappa {name}"));
        }
    }
}

#[test]
fn bca_and_percentile_intervals_match_scipy() {
    let reference = reference();
    let bca = &reference["bca"];
    let strata: Vec<Vec<f64>> = bca["strata"]
        .as_array()
        .expect("strata")
        .iter()
        .map(floats)
        .collect();
    let theta_hat = bca["theta_hat"].as_f64().expect("theta");
    let level = bca["level"].as_f64().expect("level");
    let mut replicates = floats(&bca["theta_hat_b"]);
    replicates.sort_unstable_by(f64::total_cmp);
    // The stratified jackknife of the overall mean: leave one unit out of one stratum.
    let total: f64 = strata.iter().flatten().sum();
    let count = strata.iter().map(Vec::len).sum::<usize>() as f64;
    let jackknife: Vec<Vec<f64>> = strata
        .iter()
        .map(|stratum| {
            stratum
                .iter()
                .map(|value| (total - value) / (count - 1.0))
                .collect()
        })
        .collect();
    let (alpha_1, alpha_2) = bca_levels(theta_hat, &replicates, &jackknife, level).expect("levels");
    // Φ here is accurate to ~1e-7 (SciPy's ndtr to machine precision).
    close(
        alpha_1,
        bca["alpha_1"].as_f64().expect("a1"),
        1e-6,
        "BCa lower level",
    );
    close(
        alpha_2,
        bca["alpha_2"].as_f64().expect("a2"),
        1e-6,
        "BCa upper level",
    );
    let expected = floats(&bca["bca"]);
    let (low, high) = bca_interval(theta_hat, &replicates, &jackknife, level).expect("bca");
    close(low, expected[0], 1e-6, "BCa low");
    close(high, expected[1], 1e-6, "BCa high");
    let expected = floats(&bca["percentile"]);
    let (low, high) = percentile_interval(&replicates, level).expect("percentile");
    close(low, expected[0], 1e-12, "percentile low");
    close(high, expected[1], 1e-12, "percentile high");
}
