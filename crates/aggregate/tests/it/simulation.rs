//! The bootstrap by simulation: the 95% percentile interval covers a known
//! mean 93–97% of the time, results are identical for the same seed, and the
//! replicate draws are unbiased.

use cfeval_aggregate::stats::{Design, Options, Rng, Series, Statistic, bootstrap};
use proptest::prelude::*;
use rayon::prelude::*;

/// A data set of three strata (families) of cases; each case has a few
/// tuples with scores 0 / 0.5 / 1; the true tuple mean is known.
fn simulated(seed: u64) -> (Design, f64) {
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
    let (total_num, total_den) = (0..3).fold((0.0, 0.0), |(num, den), s| {
        let expected_score = p1[s] + 0.5 * p_half[s];
        let tuples = tuples_per_case[s] * units[s] as f64;
        (num + expected_score * tuples, den + tuples)
    });
    (
        Design::new(&units, &series).expect("design"),
        total_num / total_den,
    )
}

#[test]
fn percentile_interval_covers_the_true_mean_93_to_97_percent() {
    let data_sets = 1_200u64;
    let options = Options {
        resamples: 1_000,
        seed: 11,
        level: 0.95,
    };
    let statistic = [Statistic::ratio(vec![0, 1, 2])];
    let (covered, bca_covered) = (0..data_sets)
        .into_par_iter()
        .map(|data_set| {
            let (design, truth) = simulated(data_set);
            let result = bootstrap(
                &design,
                &statistic,
                &Options {
                    seed: data_set,
                    ..options
                },
            )
            .expect("bootstrap");
            let estimate = result.estimates[0];
            let inside = |interval: Option<(f64, f64)>| {
                let (low, high) = interval.expect("interval");
                u32::from(low <= truth && truth <= high)
            };
            (inside(estimate.percentile), inside(estimate.bca))
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    let rate = f64::from(covered) / data_sets as f64;
    let bca_rate = f64::from(bca_covered) / data_sets as f64;
    eprintln!("coverage over {data_sets} data sets: percentile {rate:.4}, BCa {bca_rate:.4}");
    assert!((0.93..=0.97).contains(&rate), "percentile coverage {rate}");
    assert!((0.92..=0.975).contains(&bca_rate), "BCa coverage {bca_rate}");
}

#[test]
fn same_seed_same_results_other_seed_other_results() {
    let (design, _) = simulated(5);
    let statistics = [
        Statistic::ratio(vec![0, 1, 2]),
        Statistic::difference(vec![1], vec![2]),
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
    let (design, _) = simulated(9);
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
