//! From per-case sums to score rows: the bootstrap estimates (CSS
//! tuple-weighted and family-balanced, CMS, spurious shift,
//! integration/access failure, agent − single-shot and biased − unbiased
//! deltas), the comparisons
//! built on them ([`compare`]: ranks, rank probabilities, Spearman ρ, blind
//! spots, cross-judge agreement) and the counts of judgments left out
//! ([`outcomes`]).

pub mod compare;
pub mod outcomes;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cfeval_schema::ScoreRow;
use cfeval_schema::vocab::SubjectName;

pub use compare::{CompareSettings, comparison_rows, kappa_rows};
pub use outcomes::outcome_rows;

use crate::accumulate::{Accumulated, Quantity, SeriesKey};
use crate::error::Result;
use crate::stats::{BootstrapResult, Cells, Design, Resampling, Statistic, clusters};

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

/// What names an estimate: (subject, mode, judge, metric, level, group).
pub type SpecKey<'a> = (&'a str, &'a str, &'a str, &'a str, &'a str, &'a str);

impl Spec {
    /// The estimate's name, for looking specs up by it.
    pub fn key(&self) -> SpecKey<'_> {
        (
            self.subject.as_str(),
            self.mode.as_str(),
            self.judge.as_str(),
            self.metric.as_str(),
            self.level,
            self.group.as_str(),
        )
    }
}

/// The series of the accumulated sums laid out for the bootstrap.
pub struct Layout {
    pub keys: Vec<SeriesKey>,
    pub design: Design,
    /// Per series: total tuples and the cases with at least one tuple.
    pub tuples: Vec<f64>,
    pub cases: Vec<Vec<u32>>,
    /// Stratum names: `cases` (one stratum, the default) or the families.
    pub strata: Vec<String>,
}

/// Lays the per-case sums out for the bootstrap under `resampling`.
pub fn layout(accumulated: &Accumulated, resampling: Resampling) -> Result<Layout> {
    let mut keys: Vec<SeriesKey> = accumulated.sums.keys().cloned().collect();
    keys.sort();
    let mut tuples = Vec::with_capacity(keys.len());
    let mut cases = Vec::with_capacity(keys.len());
    let cells: Vec<Cells> = keys
        .iter()
        .map(|key| {
            let mut cells: Vec<(u32, f64, f64)> = accumulated.sums[key]
                .iter()
                .map(|(&case, &(sum, count))| (case, sum, count))
                .collect();
            cells.sort_unstable_by_key(|&(case, _, _)| case);
            tuples.push(cells.iter().map(|&(_, _, count)| count).sum());
            cases.push(cells.iter().map(|&(case, _, _)| case).collect());
            Cells {
                family: accumulated.intervention_family[key.intervention as usize].clone(),
                cells,
            }
        })
        .collect();
    let clustered = clusters::layout(resampling, &cells)?;
    Ok(Layout {
        design: clustered.design,
        keys,
        tuples,
        cases,
        strata: clustered.strata,
    })
}

/// The family-balanced CSS: the unweighted mean of the per-family CSS over
/// the CSS families a subject was scored on.
pub const CSS_BALANCED: &str = "css_balanced";

/// How often a baseline re-sample's plan moved away from the first
/// baseline answer with nothing changed (repeated samples only).
pub const RESAMPLE_SHIFT: &str = "resample_shift";

/// CSS net of spontaneous change: CSS − `resample_shift`, paired over the
/// same case resamples. A subject that changes its plan at random would earn
/// some CSS by chance; this is a conservative correction (it takes every
/// spontaneous change as one the judge would have credited).
pub const CSS_NET_RESAMPLE: &str = "css_net_resample";

/// The mean within-tuple variance of CSS scores over repeated samples.
pub const CSS_WITHIN_TUPLE_VAR: &str = "css_within_tuple_var";

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
        let mut push = |metric: &str, level: &'static str, group: &str, statistic: Statistic| {
            let empty = statistic.terms.iter().any(|term| term.series.is_empty());
            if !statistic.terms.is_empty() && !empty {
                out.push(Spec {
                    subject: subject.clone(),
                    mode: mode.clone(),
                    judge: judge.clone(),
                    metric: metric.to_string(),
                    level,
                    group: group.to_string(),
                    statistic,
                });
            }
        };
        let ratio = Statistic::ratio;
        if let Some(css) = tree.get(&Quantity::Css) {
            push("css", "overall", "all", ratio(all(css)));
            // The mean of the family means, over the CSS families scored.
            let groups: Vec<Vec<usize>> = families
                .css
                .iter()
                .filter_map(|family| css.get(family))
                .map(|by| by.values().copied().collect())
                .collect();
            if !groups.is_empty() {
                push(CSS_BALANCED, "overall", "all", Statistic::mean_of_ratios(groups));
            }
            for family in families.css {
                if let Some(by) = css.get(family) {
                    push("css", "family", family, ratio(by.values().copied().collect()));
                }
            }
            for by in css.values() {
                for (intervention, &index) in by {
                    push("css", "intervention", intervention, ratio(vec![index]));
                }
            }
        }
        if let Some(spurious) = tree.get(&Quantity::Spurious) {
            push("spurious_shift", "family", families.control, ratio(all(spurious)));
            for by in spurious.values() {
                for (intervention, &index) in by {
                    push("spurious_shift", "intervention", intervention, ratio(vec![index]));
                }
            }
        }
        if let Some(resample) = tree.get(&Quantity::Resample) {
            let shift = ratio(all(resample));
            if let Some(css) = tree.get(&Quantity::Css) {
                push(
                    CSS_NET_RESAMPLE,
                    "overall",
                    "all",
                    Statistic::difference(&ratio(all(css)), &shift),
                );
            }
            push(RESAMPLE_SHIFT, "overall", "all", shift);
        }
        if let Some(variance) = tree.get(&Quantity::WithinTupleVar) {
            push(CSS_WITHIN_TUPLE_VAR, "overall", "all", ratio(all(variance)));
            for family in families.css {
                if let Some(by) = variance.get(family) {
                    push(
                        CSS_WITHIN_TUPLE_VAR,
                        "family",
                        family,
                        ratio(by.values().copied().collect()),
                    );
                }
            }
        }
        if let Some(cms) = tree.get(&Quantity::Cms) {
            push("cms", "overall", "all", ratio(all(cms)));
        }
        for (quantity, metric) in [
            (Quantity::IntegrationFailure, "integration_failure"),
            (Quantity::AccessFailure, "access_failure"),
        ] {
            if let Some(tree) = tree.get(&quantity) {
                push(metric, "overall", "all", ratio(all(tree)));
                for (family, by) in tree {
                    push(metric, "family", family, ratio(by.values().copied().collect()));
                }
            }
        }
    }
    // Paired deltas agent − single_shot of the same subject under the same judge.
    let agent = paired_deltas(
        &out,
        |spec| (spec.mode == "agent").then(|| (spec.subject.clone(), "single_shot".to_string())),
        |spec| {
            (
                "agent-single_shot".to_string(),
                delta_metric("delta_agent_minus_single_shot", &spec.metric),
            )
        },
    );
    // Biased − unbiased: a subject named `<model>+bias=<id>…` against the
    // same name without its bias (options in any order), same mode.
    let names: HashMap<String, &str> = out
        .iter()
        .map(|spec| (SubjectName::canonical_of(&spec.subject), spec.subject.as_str()))
        .collect();
    let bias = paired_deltas(
        &out,
        |spec| {
            let unbiased = SubjectName::parse(&spec.subject).ok()?.without_bias()?;
            Some((names.get(&unbiased)?.to_string(), spec.mode.clone()))
        },
        |spec| (spec.mode.clone(), delta_metric("delta_bias", &spec.metric)),
    );
    // The harness against the same subject's single-shot and agent answers.
    let harness: Vec<Spec> = ["single_shot", "agent"]
        .into_iter()
        .flat_map(|peer| {
            paired_deltas(
                &out,
                |spec| (spec.mode == "harness").then(|| (spec.subject.clone(), peer.to_string())),
                |spec| {
                    (
                        format!("harness-{peer}"),
                        delta_metric(&format!("delta_harness_minus_{peer}"), &spec.metric),
                    )
                },
            )
        })
        .collect();
    out.extend(agent);
    out.extend(bias);
    out.extend(harness);
    out
}

/// The metrics paired deltas are taken of.
const DELTA_METRICS: [&str; 4] = ["css", CSS_BALANCED, "cms", "spurious_shift"];

/// Paired deltas `spec − peer` under the same judge, metric, level and
/// group, for every spec `peer_of` gives a peer (subject, mode); `label`
/// names the delta (mode, metric). The cases are resampled together, so the
/// interval is paired by case.
fn paired_deltas(
    specs: &[Spec],
    peer_of: impl Fn(&Spec) -> Option<(String, String)>,
    label: impl Fn(&Spec) -> (String, String),
) -> Vec<Spec> {
    let by_key: HashMap<SpecKey<'_>, &Spec> = specs.iter().map(|spec| (spec.key(), spec)).collect();
    let mut deltas = Vec::new();
    for spec in specs {
        if !DELTA_METRICS.contains(&spec.metric.as_str()) || spec.level == "intervention" {
            continue;
        }
        let Some((subject, mode)) = peer_of(spec) else {
            continue;
        };
        let key = (
            subject.as_str(),
            mode.as_str(),
            spec.judge.as_str(),
            spec.metric.as_str(),
            spec.level,
            spec.group.as_str(),
        );
        let Some(peer) = by_key.get(&key) else {
            continue;
        };
        let (mode, metric) = label(spec);
        deltas.push(Spec {
            mode,
            metric,
            statistic: Statistic::difference(&spec.statistic, &peer.statistic),
            ..spec.clone()
        });
    }
    deltas
}

/// A delta's metric: `<prefix>` for CSS, `<prefix>_<metric>` for the others
/// (`delta_bias`, `delta_bias_cms`, `delta_agent_minus_single_shot_cms`, …).
pub fn delta_metric(prefix: &str, metric: &str) -> String {
    if metric == "css" {
        prefix.to_string()
    } else {
        format!("{prefix}_{metric}")
    }
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
        let series: BTreeSet<usize> = spec.statistic.series().collect();
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
                prompt_set: accumulated
                    .prompt_sets
                    .get(&(spec.subject.clone(), spec.mode.clone()))
                    .map(|sets| sets.iter().cloned().collect::<Vec<_>>().join("+")),
            });
        }
    }
    rows
}
