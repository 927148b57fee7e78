//! From per-case sums to score rows: the bootstrap estimates (CSS, CMS,
//! spurious shift, integration/access failure, agent − single-shot deltas)
//! and the comparisons built on them (ranks, Spearman ρ, rank swaps, blind
//! spots, cross-judge agreement).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cfeval_schema::ScoreRow;

use crate::accumulate::{Accumulated, Quantity, SeriesKey};
use crate::error::Result;
use crate::stats::{self, BootstrapResult, Design, Series, Statistic};

/// One bootstrap estimate and the labels of its score rows.
#[derive(Debug, Clone)]
pub struct Spec {
    pub subject: String,
    pub mode: String,
    pub judge: String,
    pub metric: String,
    pub level: &'static str,
    pub group: String,
    pub statistic: Statistic,
}

/// The series of the accumulated sums laid out for the bootstrap.
pub struct Layout {
    pub keys: Vec<SeriesKey>,
    pub design: Design,
    /// Per series: total tuples and the cases with at least one tuple.
    pub tuples: Vec<f64>,
    pub cases: Vec<Vec<u32>>,
    /// Family (stratum) names in stratum order.
    pub strata: Vec<String>,
}

/// Lays the per-case sums out as strata (families) of units (cases).
pub fn layout(accumulated: &Accumulated) -> Result<Layout> {
    let mut keys: Vec<SeriesKey> = accumulated.sums.keys().cloned().collect();
    keys.sort();
    let family_of = |key: &SeriesKey| accumulated.intervention_family[key.intervention as usize].clone();
    let mut stratum_cases: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for key in &keys {
        stratum_cases
            .entry(family_of(key))
            .or_default()
            .extend(accumulated.sums[key].keys().copied());
    }
    let strata: Vec<String> = stratum_cases.keys().cloned().collect();
    let unit_index: Vec<HashMap<u32, usize>> = stratum_cases
        .values()
        .map(|cases| {
            cases
                .iter()
                .enumerate()
                .map(|(unit, &case)| (case, unit))
                .collect()
        })
        .collect();
    let sizes: Vec<usize> = stratum_cases.values().map(BTreeSet::len).collect();
    let mut series = Vec::with_capacity(keys.len());
    let mut tuples = Vec::with_capacity(keys.len());
    let mut cases = Vec::with_capacity(keys.len());
    for key in &keys {
        let family = family_of(key);
        let stratum = strata.iter().position(|name| *name == family).unwrap_or(0);
        let mut num = vec![0.0; sizes[stratum]];
        let mut den = vec![0.0; sizes[stratum]];
        let mut present: Vec<u32> = Vec::new();
        for (&case, &(sum, count)) in &accumulated.sums[key] {
            let unit = unit_index[stratum][&case];
            num[unit] = sum;
            den[unit] = count;
            present.push(case);
        }
        present.sort_unstable();
        tuples.push(den.iter().sum());
        cases.push(present);
        series.push(Series { stratum, num, den });
    }
    Ok(Layout {
        design: Design::new(&sizes, &series)?,
        keys,
        tuples,
        cases,
        strata,
    })
}

/// Settings the estimates depend on.
pub struct Families<'a> {
    pub css: &'a [String],
    pub control: &'a str,
}

/// The estimates to bootstrap, in a stable order.
pub fn specs(accumulated: &Accumulated, layout: &Layout, families: &Families<'_>) -> Vec<Spec> {
    let family_of = |key: &SeriesKey| accumulated.intervention_family[key.intervention as usize].as_str();
    // (subject, mode, judge) → quantity → family → intervention → series index
    type Tree = BTreeMap<Quantity, BTreeMap<String, BTreeMap<String, usize>>>;
    let mut combos: BTreeMap<(String, String, String), Tree> = BTreeMap::new();
    for (index, key) in layout.keys.iter().enumerate() {
        let combo = (
            accumulated.subjects.name(key.subject).to_string(),
            accumulated.modes.name(key.mode).to_string(),
            accumulated.judges.name(key.judge).to_string(),
        );
        combos
            .entry(combo)
            .or_default()
            .entry(key.quantity)
            .or_default()
            .entry(family_of(key).to_string())
            .or_default()
            .insert(
                accumulated.interventions.name(key.intervention).to_string(),
                index,
            );
    }
    let mut out = Vec::new();
    let all = |tree: &BTreeMap<String, BTreeMap<String, usize>>| -> Vec<usize> {
        tree.values().flat_map(|by| by.values().copied()).collect()
    };
    for ((subject, mode, judge), tree) in &combos {
        let mut push = |metric: &str, level: &'static str, group: &str, series: Vec<usize>| {
            if !series.is_empty() {
                out.push(Spec {
                    subject: subject.clone(),
                    mode: mode.clone(),
                    judge: judge.clone(),
                    metric: metric.to_string(),
                    level,
                    group: group.to_string(),
                    statistic: Statistic::ratio(series),
                });
            }
        };
        if let Some(css) = tree.get(&Quantity::Css) {
            push("css", "overall", "all", all(css));
            for family in families.css {
                if let Some(by) = css.get(family) {
                    push("css", "family", family, by.values().copied().collect());
                }
            }
            for by in css.values() {
                for (intervention, &index) in by {
                    push("css", "intervention", intervention, vec![index]);
                }
            }
        }
        if let Some(spurious) = tree.get(&Quantity::Spurious) {
            push("spurious_shift", "family", families.control, all(spurious));
            for by in spurious.values() {
                for (intervention, &index) in by {
                    push("spurious_shift", "intervention", intervention, vec![index]);
                }
            }
        }
        if let Some(cms) = tree.get(&Quantity::Cms) {
            push("cms", "overall", "all", all(cms));
        }
        for (quantity, metric) in [
            (Quantity::IntegrationFailure, "integration_failure"),
            (Quantity::AccessFailure, "access_failure"),
        ] {
            if let Some(tree) = tree.get(&quantity) {
                push(metric, "overall", "all", all(tree));
                for (family, by) in tree {
                    push(metric, "family", family, by.values().copied().collect());
                }
            }
        }
    }
    // Paired deltas agent − single_shot of the same subject under the same judge.
    let mut deltas = Vec::new();
    let by_key: HashMap<(&str, &str, &str, &str, &str, &str), &Spec> = out
        .iter()
        .map(|spec| {
            (
                (
                    spec.subject.as_str(),
                    spec.mode.as_str(),
                    spec.judge.as_str(),
                    spec.metric.as_str(),
                    spec.level,
                    spec.group.as_str(),
                ),
                spec,
            )
        })
        .collect();
    for spec in &out {
        if spec.mode != "agent"
            || !matches!(spec.metric.as_str(), "css" | "cms" | "spurious_shift")
            || spec.level == "intervention"
        {
            continue;
        }
        let Some(single) = by_key.get(&(
            spec.subject.as_str(),
            "single_shot",
            spec.judge.as_str(),
            spec.metric.as_str(),
            spec.level,
            spec.group.as_str(),
        )) else {
            continue;
        };
        let metric = if spec.metric == "css" {
            "delta_agent_minus_single_shot".to_string()
        } else {
            format!("delta_agent_minus_single_shot_{}", spec.metric)
        };
        deltas.push(Spec {
            subject: spec.subject.clone(),
            mode: "agent-single_shot".into(),
            judge: spec.judge.clone(),
            metric,
            level: spec.level,
            group: spec.group.clone(),
            statistic: Statistic::difference(spec.statistic.plus.clone(), single.statistic.plus.clone()),
        });
    }
    out.extend(deltas);
    out
}

/// Score rows of the bootstrap estimates: one `percentile` and one `bca` row each.
pub fn estimate_rows(
    run: &str,
    accumulated: &Accumulated,
    layout: &Layout,
    specs: &[Spec],
    result: &BootstrapResult,
) -> Vec<ScoreRow> {
    let mut rows = Vec::with_capacity(2 * specs.len());
    for (spec, estimate) in specs.iter().zip(&result.estimates) {
        if !estimate.value.is_finite() {
            continue;
        }
        let series: Vec<usize> = spec
            .statistic
            .plus
            .iter()
            .chain(&spec.statistic.minus)
            .copied()
            .collect();
        let n_tuples = series.iter().map(|&index| layout.tuples[index]).sum::<f64>() as u64;
        let n_cases = series
            .iter()
            .flat_map(|&index| layout.cases[index].iter().copied())
            .collect::<BTreeSet<u32>>()
            .len() as u64;
        for (method, interval) in [("percentile", estimate.percentile), ("bca", estimate.bca)] {
            rows.push(ScoreRow {
                run: run.to_string(),
                subject: spec.subject.clone(),
                is_control: accumulated
                    .is_control
                    .get(&spec.subject)
                    .copied()
                    .unwrap_or(false),
                mode: spec.mode.clone(),
                judge: spec.judge.clone(),
                metric: spec.metric.clone(),
                level: spec.level.to_string(),
                group: spec.group.clone(),
                value: estimate.value,
                ci_low: interval.map(|(low, _)| low),
                ci_high: interval.map(|(_, high)| high),
                ci_method: interval.map(|_| method.to_string()),
                n_tuples,
                n_cases,
            });
        }
    }
    rows
}

/// A comparison row (no bootstrap behind it unless an interval is given).
#[allow(clippy::too_many_arguments)]
fn comparison(
    run: &str,
    subject: &str,
    is_control: bool,
    mode: &str,
    judge: &str,
    metric: &str,
    group: &str,
    value: f64,
    interval: Option<(f64, f64, &str)>,
    n_tuples: u64,
    n_cases: u64,
) -> ScoreRow {
    ScoreRow {
        run: run.to_string(),
        subject: subject.to_string(),
        is_control,
        mode: mode.to_string(),
        judge: judge.to_string(),
        metric: metric.to_string(),
        level: "comparison".into(),
        group: group.to_string(),
        value,
        ci_low: interval.map(|(low, _, _)| low),
        ci_high: interval.map(|(_, high, _)| high),
        ci_method: interval.map(|(_, _, method)| method.to_string()),
        n_tuples,
        n_cases,
    }
}

/// Settings of the comparisons.
pub struct CompareSettings<'a> {
    pub css_families: &'a [String],
    pub blind_spot_threshold: f64,
    pub level: f64,
}

/// Ranks, Spearman ρ (CMS vs CSS), rank swaps, blind spots and cross-judge ρ.
pub fn comparison_rows(
    run: &str,
    accumulated: &Accumulated,
    specs: &[Spec],
    result: &BootstrapResult,
    settings: &CompareSettings<'_>,
) -> Vec<ScoreRow> {
    let index_of: HashMap<(&str, &str, &str, &str, &str, &str), usize> = specs
        .iter()
        .enumerate()
        .map(|(index, spec)| {
            (
                (
                    spec.subject.as_str(),
                    spec.mode.as_str(),
                    spec.judge.as_str(),
                    spec.metric.as_str(),
                    spec.level,
                    spec.group.as_str(),
                ),
                index,
            )
        })
        .collect();
    let value = |index: usize| result.estimates[index].value;
    let is_control = |subject: &str| accumulated.is_control.get(subject).copied().unwrap_or(false);
    let mut rows = Vec::new();
    let modes: BTreeSet<&str> = specs
        .iter()
        .map(|spec| spec.mode.as_str())
        .filter(|mode| !mode.contains('-'))
        .collect();
    let judges: BTreeSet<&str> = specs.iter().map(|spec| spec.judge.as_str()).collect();
    let all_subjects: BTreeSet<&str> = specs.iter().map(|spec| spec.subject.as_str()).collect();
    let non_control: Vec<&str> = all_subjects
        .iter()
        .copied()
        .filter(|subject| !is_control(subject))
        .collect();
    // Ranks compare the subjects under test; controls only when fewer than two remain.
    let ranked: Vec<&str> = if non_control.len() >= 2 {
        non_control
    } else {
        all_subjects.iter().copied().collect()
    };
    for &mode in &modes {
        for &judge in &judges {
            let overall = |subject: &str, metric: &str| {
                index_of
                    .get(&(subject, mode, judge, metric, "overall", "all"))
                    .copied()
            };
            // Ranks and Spearman over the subjects with both metrics.
            let both: Vec<(&str, usize, usize)> = ranked
                .iter()
                .filter_map(|&subject| Some((subject, overall(subject, "cms")?, overall(subject, "css")?)))
                .collect();
            if both.len() >= 2 {
                let cms: Vec<f64> = both.iter().map(|&(_, cms, _)| value(cms)).collect();
                let css: Vec<f64> = both.iter().map(|&(_, _, css)| value(css)).collect();
                let rank_cms = stats::descending_ranks(&cms);
                let rank_css = stats::descending_ranks(&css);
                for (position, &(subject, _, _)) in both.iter().enumerate() {
                    let control = is_control(subject);
                    let n = both.len() as u64;
                    rows.push(comparison(
                        run,
                        subject,
                        control,
                        mode,
                        judge,
                        "rank_cms",
                        "all",
                        rank_cms[position],
                        None,
                        n,
                        0,
                    ));
                    rows.push(comparison(
                        run,
                        subject,
                        control,
                        mode,
                        judge,
                        "rank_css",
                        "all",
                        rank_css[position],
                        None,
                        n,
                        0,
                    ));
                    rows.push(comparison(
                        run,
                        subject,
                        control,
                        mode,
                        judge,
                        "rank_swap",
                        "all",
                        rank_css[position] - rank_cms[position],
                        None,
                        n,
                        0,
                    ));
                }
                if let Some(rho) = stats::spearman(&cms, &css) {
                    // Bootstrap interval from the shared resamples.
                    let mut replicates: Vec<f64> = (0..result.resamples)
                        .filter_map(|b| {
                            let cms: Vec<f64> =
                                both.iter().map(|&(_, cms, _)| result.replicate(b, cms)).collect();
                            let css: Vec<f64> =
                                both.iter().map(|&(_, _, css)| result.replicate(b, css)).collect();
                            stats::spearman(&cms, &css)
                        })
                        .collect();
                    replicates.sort_unstable_by(f64::total_cmp);
                    let interval = stats::bootstrap::percentile_interval(&replicates, settings.level)
                        .map(|(low, high)| (low, high, "percentile"));
                    let n = both.len() as u64;
                    rows.push(comparison(
                        run,
                        "all",
                        false,
                        mode,
                        judge,
                        "spearman_cms_css",
                        "all",
                        rho,
                        interval,
                        n,
                        0,
                    ));
                    if let Some((_, p)) = stats::spearman_exact(&cms, &css) {
                        rows.push(comparison(
                            run,
                            "all",
                            false,
                            mode,
                            judge,
                            "spearman_cms_css_p",
                            "all",
                            p,
                            None,
                            n,
                            0,
                        ));
                    }
                }
            }
            // Blind spots: families where every ranked subject's CSS is below the threshold.
            for family in settings.css_families {
                let values: Vec<f64> = ranked
                    .iter()
                    .filter_map(|&subject| {
                        index_of.get(&(subject, mode, judge, "css", "family", family.as_str()))
                    })
                    .map(|&index| value(index))
                    .collect();
                if values.is_empty() {
                    continue;
                }
                let best = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let blind = f64::from(u8::from(best < settings.blind_spot_threshold));
                let n = values.len() as u64;
                rows.push(comparison(
                    run,
                    "all",
                    false,
                    mode,
                    judge,
                    "blind_spot",
                    family,
                    blind,
                    None,
                    n,
                    0,
                ));
                rows.push(comparison(
                    run, "all", false, mode, judge, "best_css", family, best, None, n, 0,
                ));
            }
        }
        // Cross-judge Spearman over subjects (CSS overall).
        // Judges in first-seen order, as the κ rows name their pairs.
        let judge_list: Vec<&str> = accumulated.judges.names.iter().map(String::as_str).collect();
        for (position, &a) in judge_list.iter().enumerate() {
            for &b in &judge_list[position + 1..] {
                let pairs: Vec<(f64, f64)> = all_subjects
                    .iter()
                    .filter_map(|&subject| {
                        let x = index_of.get(&(subject, mode, a, "css", "overall", "all"))?;
                        let y = index_of.get(&(subject, mode, b, "css", "overall", "all"))?;
                        Some((value(*x), value(*y)))
                    })
                    .collect();
                let x: Vec<f64> = pairs.iter().map(|pair| pair.0).collect();
                let y: Vec<f64> = pairs.iter().map(|pair| pair.1).collect();
                let name = format!("{a} vs {b}");
                if let Some(rho) = stats::spearman(&x, &y) {
                    let n = x.len() as u64;
                    rows.push(comparison(
                        run,
                        "all",
                        false,
                        mode,
                        &name,
                        "spearman_judges",
                        "all",
                        rho,
                        None,
                        n,
                        0,
                    ));
                    if let Some((_, p)) = stats::spearman_exact(&x, &y) {
                        rows.push(comparison(
                            run,
                            "all",
                            false,
                            mode,
                            &name,
                            "spearman_judges_p",
                            "all",
                            p,
                            None,
                            n,
                            0,
                        ));
                    }
                }
            }
        }
    }
    // Cohen's κ between judges over the CSS tuples both scored.
    for a in 0..accumulated.judges.len() as u32 {
        for b in a + 1..accumulated.judges.len() as u32 {
            let pairs = accumulated.judge_pairs(a, b);
            let name = format!("{} vs {}", accumulated.judges.name(a), accumulated.judges.name(b));
            rows.extend(kappa_rows(run, &name, "all", &pairs));
        }
    }
    rows
}

/// κ, linearly and quadratically weighted κ of category pairs.
pub fn kappa_rows(run: &str, judge: &str, group: &str, pairs: &[(usize, usize)]) -> Vec<ScoreRow> {
    [
        ("kappa", stats::Weights::None),
        ("kappa_linear", stats::Weights::Linear),
        ("kappa_quadratic", stats::Weights::Quadratic),
    ]
    .into_iter()
    .filter_map(|(metric, weights)| {
        let kappa = stats::cohen_kappa(pairs, 3, weights)?;
        Some(comparison(
            run,
            "all",
            false,
            "all",
            judge,
            metric,
            group,
            kappa,
            None,
            pairs.len() as u64,
            0,
        ))
    })
    .collect()
}
