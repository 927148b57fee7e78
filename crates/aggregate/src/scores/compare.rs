//! Comparisons of the subjects under test (controls never take part; their
//! own estimates are rows like any other subject's): ranks under CMS and
//! CSS, the probabilities of rank swaps and of ranking first from the shared
//! resamples, Spearman ρ, blind spots (with cross-judge agreement), and
//! cross-judge ρ and κ.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cfeval_schema::ScoreRow;

use super::{Spec, SpecKey};
use crate::accumulate::Accumulated;
use crate::stats::{self, BootstrapResult, Weights};

/// Settings of the comparisons.
pub struct CompareSettings<'a> {
    pub css_families: &'a [String],
    /// A family is a blind spot when every subject under test's upper
    /// interval bound of its CSS is below this.
    pub blind_spot_threshold: f64,
    pub level: f64,
}

/// Judges that must flag a family before its blind spot counts as agreed.
pub const AGREED_JUDGES: u64 = 2;

/// Rows of one (mode, judge).
struct Context<'a> {
    run: &'a str,
    mode: &'a str,
    judge: &'a str,
}

impl Context<'_> {
    /// A `level = comparison` row without an interval.
    fn row(&self, subject: &str, metric: &str, group: &str, value: f64, n_tuples: u64) -> ScoreRow {
        ScoreRow {
            run: self.run.to_string(),
            subject: subject.to_string(),
            is_control: false,
            mode: self.mode.to_string(),
            judge: self.judge.to_string(),
            metric: metric.to_string(),
            level: "comparison".into(),
            group: group.to_string(),
            value,
            ci_low: None,
            ci_high: None,
            ci_method: None,
            n_tuples,
            n_cases: 0,
            prompt_set: None,
        }
    }
}

/// `row` with `interval` (when there is one) as its `method` interval.
pub(crate) fn with_interval(mut row: ScoreRow, interval: Option<(f64, f64)>, method: &str) -> ScoreRow {
    if let Some((low, high)) = interval {
        row.ci_low = Some(low);
        row.ci_high = Some(high);
        row.ci_method = Some(method.to_string());
    }
    row
}

/// Ranks, rank probabilities, Spearman ρ (CMS vs CSS), blind spots and
/// cross-judge agreement, over the subjects under test.
pub fn comparison_rows(
    run: &str,
    accumulated: &Accumulated,
    specs: &[Spec],
    result: &BootstrapResult,
    settings: &CompareSettings<'_>,
) -> Vec<ScoreRow> {
    let index_of: HashMap<SpecKey<'_>, usize> = specs
        .iter()
        .enumerate()
        .map(|(index, spec)| (spec.key(), index))
        .collect();
    let is_control = |subject: &str| accumulated.is_control.get(subject).copied().unwrap_or(false);
    let mut rows = Vec::new();
    let modes: BTreeSet<&str> = specs
        .iter()
        .map(|spec| spec.mode.as_str())
        .filter(|mode| !mode.contains('-'))
        .collect();
    let judges: BTreeSet<&str> = specs.iter().map(|spec| spec.judge.as_str()).collect();
    let under_test: Vec<&str> = specs
        .iter()
        .map(|spec| spec.subject.as_str())
        .collect::<BTreeSet<&str>>()
        .into_iter()
        .filter(|subject| !is_control(subject))
        .collect();
    for &mode in &modes {
        // Family → judges with a blind-spot row, judges that flagged it.
        let mut flagged: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
        for &judge in &judges {
            let context = Context { run, mode, judge };
            rows.extend(ranking_rows(
                &context,
                &under_test,
                &index_of,
                result,
                settings.level,
            ));
            for family in settings.css_families {
                let Some((blind, family_rows)) =
                    blind_spot(&context, family, &under_test, &index_of, result, settings)
                else {
                    continue;
                };
                let cell = flagged.entry(family.as_str()).or_default();
                cell.0 += 1;
                cell.1 += u64::from(blind);
                rows.extend(family_rows);
            }
        }
        let all = Context {
            run,
            mode,
            judge: "all",
        };
        for (family, (judged, blind)) in flagged {
            rows.push(all.row("all", "blind_spot_judges", family, blind as f64, judged));
            let agreed = f64::from(u8::from(blind >= AGREED_JUDGES));
            rows.push(all.row("all", "blind_spot_agreed", family, agreed, judged));
        }
        // Cross-judge Spearman over subjects (CSS overall), judges in sorted order.
        let judge_list: Vec<&str> = accumulated.judges.names.iter().map(String::as_str).collect();
        for (position, &a) in judge_list.iter().enumerate() {
            for &b in &judge_list[position + 1..] {
                let pairs: Vec<(f64, f64)> = under_test
                    .iter()
                    .filter_map(|&subject| {
                        let x = index_of.get(&(subject, mode, a, "css", "overall", "all"))?;
                        let y = index_of.get(&(subject, mode, b, "css", "overall", "all"))?;
                        Some((result.estimates[*x].value, result.estimates[*y].value))
                    })
                    .collect();
                let x: Vec<f64> = pairs.iter().map(|pair| pair.0).collect();
                let y: Vec<f64> = pairs.iter().map(|pair| pair.1).collect();
                let name = format!("{a} vs {b}");
                let context = Context {
                    run,
                    mode,
                    judge: &name,
                };
                if let Some(rho) = stats::spearman(&x, &y) {
                    let n = x.len() as u64;
                    rows.push(context.row("all", "spearman_judges", "all", rho, n));
                    if let Some((_, p)) = stats::spearman_exact(&x, &y) {
                        rows.push(context.row("all", "spearman_judges_p", "all", p, n));
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

/// Ranks under CMS and CSS, rank swaps, the probabilities of swaps and of
/// ranking first, and Spearman ρ, of the subjects under test with both
/// metrics under one (mode, judge).
fn ranking_rows(
    context: &Context<'_>,
    under_test: &[&str],
    index_of: &HashMap<SpecKey<'_>, usize>,
    result: &BootstrapResult,
    level: f64,
) -> Vec<ScoreRow> {
    let mut rows = Vec::new();
    let overall = |subject: &str, metric: &str| {
        index_of
            .get(&(subject, context.mode, context.judge, metric, "overall", "all"))
            .copied()
    };
    let both: Vec<(&str, usize, usize)> = under_test
        .iter()
        .filter_map(|&subject| Some((subject, overall(subject, "cms")?, overall(subject, "css")?)))
        .collect();
    if both.len() < 2 {
        return rows;
    }
    let n = both.len() as u64;
    let value = |index: usize| result.estimates[index].value;
    let cms: Vec<f64> = both.iter().map(|&(_, cms, _)| value(cms)).collect();
    let css: Vec<f64> = both.iter().map(|&(_, _, css)| value(css)).collect();
    let rank_cms = stats::descending_ranks(&cms);
    let rank_css = stats::descending_ranks(&css);
    for (position, &(subject, _, _)) in both.iter().enumerate() {
        rows.push(context.row(subject, "rank_cms", "all", rank_cms[position], n));
        rows.push(context.row(subject, "rank_css", "all", rank_css[position], n));
        let swap = rank_css[position] - rank_cms[position];
        rows.push(context.row(subject, "rank_swap", "all", swap, n));
    }
    // The same resamples: every subject's CMS and CSS in each replicate.
    let replicate = |b: usize| -> (Vec<f64>, Vec<f64>) {
        (
            both.iter().map(|&(_, cms, _)| result.replicate(b, cms)).collect(),
            both.iter().map(|&(_, _, css)| result.replicate(b, css)).collect(),
        )
    };
    if let Some(p) = stats::rank_probabilities(both.len(), (0..result.resamples).map(replicate)) {
        let used = p.replicates as u64;
        for (position, &(subject, _, _)) in both.iter().enumerate() {
            let first_cms = p.first_first[position];
            let first_css = p.first_second[position];
            let swap = p.subject_swap[position];
            rows.push(context.row(subject, "rank_first_cms", "all", first_cms, used));
            rows.push(context.row(subject, "rank_first_css", "all", first_css, used));
            rows.push(context.row(subject, "rank_swap_probability", "all", swap, used));
            for (other, &(name, _, _)) in both.iter().enumerate().skip(position + 1) {
                let pair = p.pair_swap[position][other];
                rows.push(context.row(subject, "rank_swap_probability", name, pair, used));
            }
        }
        rows.push(context.row("all", "rank_swap_probability", "all", p.any_swap, used));
    }
    if let Some(rho) = stats::spearman(&cms, &css) {
        let mut replicates: Vec<f64> = (0..result.resamples)
            .filter_map(|b| {
                let (cms, css) = replicate(b);
                stats::spearman(&cms, &css)
            })
            .collect();
        replicates.sort_unstable_by(f64::total_cmp);
        let interval = stats::bootstrap::percentile_interval(&replicates, level);
        let row = context.row("all", "spearman_cms_css", "all", rho, n);
        rows.push(with_interval(row, interval, "percentile"));
        if let Some((_, p)) = stats::spearman_exact(&cms, &css) {
            rows.push(context.row("all", "spearman_cms_css_p", "all", p, n));
        }
    }
    rows
}

/// The blind-spot rows of one family under one (mode, judge), and whether it
/// is one: every subject under test's upper (percentile) bound of its family
/// CSS is below the threshold — so even the best subject is confidently
/// below it. `None` when no subject under test has a CSS in the family.
fn blind_spot(
    context: &Context<'_>,
    family: &str,
    under_test: &[&str],
    index_of: &HashMap<SpecKey<'_>, usize>,
    result: &BootstrapResult,
    settings: &CompareSettings<'_>,
) -> Option<(bool, Vec<ScoreRow>)> {
    let estimates: Vec<&stats::Estimate> = under_test
        .iter()
        .filter_map(|&subject| index_of.get(&(subject, context.mode, context.judge, "css", "family", family)))
        .map(|&index| &result.estimates[index])
        .filter(|estimate| estimate.value.is_finite())
        .collect();
    let best = estimates
        .iter()
        .copied()
        .max_by(|a, b| a.value.total_cmp(&b.value))?;
    // A subject without an interval cannot show it is below the threshold.
    let upper = estimates
        .iter()
        .map(|estimate| estimate.percentile.map_or(f64::INFINITY, |(_, high)| high))
        .fold(f64::NEG_INFINITY, f64::max);
    let blind = upper < settings.blind_spot_threshold;
    let n = estimates.len() as u64;
    let mut rows = vec![
        context.row("all", "blind_spot", family, f64::from(u8::from(blind)), n),
        with_interval(
            context.row("all", "best_css", family, best.value, n),
            best.percentile,
            "percentile",
        ),
    ];
    if upper.is_finite() {
        rows.push(context.row("all", "css_upper_max", family, upper, n));
    }
    Some((blind, rows))
}

/// κ, linearly and quadratically weighted κ of CSS category pairs (0, ½, 1
/// ordered, wrong direction nominal: [`stats::css_kappa`]).
pub fn kappa_rows(run: &str, judge: &str, group: &str, pairs: &[(usize, usize)]) -> Vec<ScoreRow> {
    let context = Context {
        run,
        mode: "all",
        judge,
    };
    [
        ("kappa", Weights::None),
        ("kappa_linear", Weights::Linear),
        ("kappa_quadratic", Weights::Quadratic),
    ]
    .into_iter()
    .filter_map(|(metric, weights)| {
        let kappa = stats::css_kappa(pairs, weights)?;
        Some(context.row("all", metric, group, kappa, pairs.len() as u64))
    })
    .collect()
}
