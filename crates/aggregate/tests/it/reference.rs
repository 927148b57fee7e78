//! Spearman's ρ, its exact p, κ and the BCa interval equal reference values
//! computed independently with SciPy and scikit-learn
//! (`tests/data/reference.py` made `tests/data/reference.json`); the joint
//! case bootstrap and κ with a wrong-direction category match NumPy
//! (`tests/data/reference_joint.py` made `tests/data/reference_joint.json`).

use cfeval_aggregate::stats::bootstrap::{bca_interval, bca_levels, percentile_interval};
use cfeval_aggregate::stats::clusters::layout;
use cfeval_aggregate::stats::{
    Cells, Options, Resampling, Statistic, Weights, bootstrap, cohen_kappa, css_kappa, spearman,
    spearman_exact,
};
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

fn reference_joint() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/reference_joint.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("read reference_joint.json")).expect("parse")
}

/// The joint case bootstrap of six cases against the exact bootstrap
/// distribution, every one of the 6^6 resamples enumerated with NumPy
/// (`tests/data/reference_joint.py`): same estimate, and over 200,000
/// resamples the same mean, SD, CDF and percentile interval up to Monte
/// Carlo error.
#[test]
fn joint_case_bootstrap_matches_the_enumerated_bootstrap_distribution() {
    let reference = reference_joint();
    let joint = &reference["joint_bootstrap"];
    let cases = joint["cases"].as_array().expect("cases");
    let series: Vec<Cells> = (0..3)
        .map(|family| Cells {
            family: ["A", "B", "C"][family].to_string(),
            cells: cases
                .iter()
                .enumerate()
                .filter_map(|(case, sums)| {
                    let cell = sums[family].as_array()?;
                    Some((
                        case as u32,
                        cell[0].as_f64().expect("sum"),
                        cell[1].as_f64().expect("tuples"),
                    ))
                })
                .collect(),
        })
        .collect();
    let design = layout(Resampling::Cases, &series).expect("layout").design;
    let statistics = [
        Statistic::ratio(vec![0, 1, 2]),
        Statistic::mean_of_ratios(vec![vec![0], vec![1], vec![2]]),
    ];
    let resamples = 200_000;
    let options = Options {
        resamples,
        seed: 17,
        level: 0.95,
    };
    let result = bootstrap(&design, &statistics, &options).expect("bootstrap");
    for (position, name) in ["css", "css_balanced"].into_iter().enumerate() {
        let exact = &joint[name];
        let estimate = result.estimates[position];
        close(
            estimate.value,
            exact["estimate"].as_f64().expect("estimate"),
            1e-12,
            &format!("{name} estimate"),
        );
        let mut values: Vec<f64> = (0..resamples)
            .map(|b| result.replicate(b, position))
            .filter(|value| value.is_finite())
            .collect();
        values.sort_unstable_by(f64::total_cmp);
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let sd = (values.iter().map(|value| (value - mean).powi(2)).sum::<f64>() / n).sqrt();
        let exact_sd = exact["sd"].as_f64().expect("sd");
        // Monte Carlo SE of the mean: sd / √200,000 ≈ 0.0003.
        close(
            mean,
            exact["mean"].as_f64().expect("mean"),
            0.0015,
            &format!("{name} mean"),
        );
        close(sd, exact_sd, 0.01 * exact_sd, &format!("{name} sd"));
        for point in exact["cdf"].as_array().expect("cdf") {
            let x = point[0].as_f64().expect("x");
            let share = values.partition_point(|&value| value <= x) as f64 / n;
            // Monte Carlo SE of a share: at most 0.0011.
            close(
                share,
                point[1].as_f64().expect("F"),
                0.005,
                &format!("{name} CDF at {x}"),
            );
        }
        let expected = floats(&exact["percentile"]);
        let (low, high) = estimate.percentile.expect("percentile");
        close(low, expected[0], 0.02, &format!("{name} percentile low"));
        close(high, expected[1], 0.02, &format!("{name} percentile high"));
    }
}

#[test]
fn css_kappa_with_a_wrong_direction_category_matches_numpy() {
    let reference = reference_joint();
    for (index, case) in reference["css_kappa"]
        .as_array()
        .expect("cases")
        .iter()
        .enumerate()
    {
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
            let actual = css_kappa(&pairs, weights).expect("kappa");
            close(actual, expected, 1e-12, &format!("case {index} css κ {name}"));
        }
    }
}
