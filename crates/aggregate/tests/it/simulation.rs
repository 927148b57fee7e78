//! The bootstrap by simulation: on data with within-case correlation the 95%
//! intervals of overall CSS (tuple-weighted and family-balanced) from the
//! joint case bootstrap cover the truth 93–97% of the time, where the
//! per-family stratified bootstrap under-covers; results are identical for
//! the same seed, and the replicate draws are unbiased.

use cfeval_aggregate::stats::{Design, Options, Resampling, Rng, Series, Statistic, bootstrap};
use cfeval_aggregate::synthetic::clustered::{Model, Simulation, coverage};
use proptest::prelude::*;

/// A data set of three strata (families) of cases; each case has a few
/// tuples with scores 0 / 0.5 / 1.
fn simulated(seed: u64) -> Design {
    let mut rng = Rng::new(seed, u64::MAX);
    // Stratum s scores 1 with probability p1[s], 0.5 with p_half[s].
    let p1 = [0.2, 0.5, 0.7];
    let p_half = [0.3, 0.2, 0.2];
    let tuples_per_case = [2.0, 3.0, 2.0];
    let units = [60usize, 50, 70];
    let mut series = Vec::new();
    for stratum in 0..3 {
        let mut num = Vec::with_capacity(units[stratum]);
        for _ in 0..units[stratum] {
            let mut sum = 0.0;
            for _ in 0..tuples_per_case[stratum] as usize {
                let u = rng.unit();
                sum += if u < p1[stratum] {
                    1.0
                } else if u < p1[stratum] + p_half[stratum] {
                    0.5
                } else {
                    0.0
                };
            }
            num.push(sum);
        }
        series.push(Series {
            stratum,
            num,
            den: vec![tuples_per_case[stratum]; units[stratum]],
        });
    }
    Design::new(&units, &series).expect("design")
}

/// The coverage simulation of BENCHMARKS.md ("Aggregate: interval
/// coverage"), smaller: 1,000 data sets of 50–200 cases, 1,000 resamples each.
#[test]
fn joint_case_bootstrap_covers_and_family_strata_under_cover() {
    let model = Model::paper_like();
    let simulation = Simulation {
        data_sets: 1_000,
        resamples: 1_000,
        level: 0.95,
        seed: 2026,
    };
    let results = coverage(
        &model,
        &simulation,
        &[Resampling::Cases, Resampling::FamilyStrata],
    )
    .expect("simulation");
    for result in &results {
        eprintln!(
            "{}: css percentile {:.3} bca {:.3} width {:.4} (sd {:.4}); css_balanced percentile {:.3} bca {:.3}",
            result.resampling.as_str(),
            result.css.percentile,
            result.css.bca,
            result.css.mean_width,
            result.css.estimate_sd,
            result.css_balanced.percentile,
            result.css_balanced.bca,
        );
    }
    let (joint, stratified) = (&results[0], &results[1]);
    // One Monte Carlo SE of a 95% rate over 1,000 data sets is 0.007.
    for rate in [
        joint.css.percentile,
        joint.css.bca,
        joint.css_balanced.percentile,
        joint.css_balanced.bca,
    ] {
        assert!((0.93..=0.97).contains(&rate), "joint coverage {rate}");
    }
    // Families of a case are positively correlated: resampling them
    // independently understates the variance of anything that pools them.
    assert!(stratified.css.percentile < 0.91, "{}", stratified.css.percentile);
    assert!(stratified.css_balanced.percentile < 0.91);
    assert!(stratified.css.mean_width < 0.85 * joint.css.mean_width);
}

#[test]
fn same_seed_same_results_other_seed_other_results() {
    let design = simulated(5);
    let statistics = [
        Statistic::ratio(vec![0, 1, 2]),
        Statistic::difference(&Statistic::ratio(vec![1]), &Statistic::ratio(vec![2])),
    ];
    let options = Options {
        resamples: 2_000,
        seed: 42,
        level: 0.95,
    };
    let first = bootstrap(&design, &statistics, &options).expect("bootstrap");
    let second = bootstrap(&design, &statistics, &options).expect("bootstrap");
    assert_eq!(first.replicates, second.replicates);
    assert_eq!(first.estimates, second.estimates);
    // Same on a single thread: the result does not depend on the split.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let single = pool.install(|| bootstrap(&design, &statistics, &options).expect("bootstrap"));
    assert_eq!(first.replicates, single.replicates);
    let other = bootstrap(&design, &statistics, &Options { seed: 43, ..options }).expect("bootstrap");
    assert_ne!(first.replicates, other.replicates);
}

#[test]
fn replicate_means_center_on_the_estimate() {
    let design = simulated(9);
    let result =
        bootstrap(&design, &[Statistic::ratio(vec![0, 1, 2])], &Options::default()).expect("bootstrap");
    let mean = result.replicates.iter().sum::<f64>() / result.replicates.len() as f64;
    let estimate = result.estimates[0].value;
    assert!(
        (mean - estimate).abs() < 0.002,
        "replicate mean {mean} vs estimate {estimate}"
    );
    let (low, high) = result.estimates[0].percentile.expect("interval");
    assert!(low < estimate && estimate < high);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Every replicate of a ratio lies within the range of the per-case
    /// means, and the interval is ordered and contains no impossible value.
    #[test]
    fn replicates_stay_within_the_unit_range(
        scores in proptest::collection::vec((0u8..=2, 0u8..=2), 2..25),
        seed in any::<u64>(),
    ) {
        let num: Vec<f64> = scores.iter().map(|&(a, b)| f64::from(a + b) / 2.0).collect();
        let design = Design::new(&[num.len()], &[Series { stratum: 0, den: vec![2.0; num.len()], num }])
            .expect("design");
        let options = Options { resamples: 200, seed, level: 0.95 };
        let result = bootstrap(&design, &[Statistic::ratio(vec![0])], &options).expect("bootstrap");
        prop_assert!(result.replicates.iter().all(|v| (0.0..=1.0).contains(v)));
        let (low, high) = result.estimates[0].percentile.expect("interval");
        prop_assert!(low <= high && low >= 0.0 && high <= 1.0);
        if let Some((low, high)) = result.estimates[0].bca {
            prop_assert!(low <= high && low >= 0.0 && high <= 1.0);
        }
    }
}
