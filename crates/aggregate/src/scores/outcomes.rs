//! Count rows of the judgments that entered no estimate: `uncertain` (the
//! judge abstained), `truncated` and `refused` (the answer was incomplete),
//! `judge_error` — per (subject, mode, judge), over the CSS families
//! (`level = overall`, `group = all`) and per family (every family seen,
//! the negative controls and the CMS `baseline` rows included). `value` is
//! the count; `n_tuples` is every judgment of the cell, so `value / n_tuples`
//! is the share left out.

use std::collections::BTreeMap;

use cfeval_schema::ScoreRow;

use crate::accumulate::{Accumulated, Outcome, Outcomes};

/// (subject, mode, judge) → (0, `all`) for the CSS families or (1, family)
/// → counts.
type Cells<'a> = BTreeMap<(&'a str, &'a str, &'a str), BTreeMap<(u8, &'a str), Outcomes>>;

/// The count rows of `accumulated` (CSS families `css_families`).
pub fn outcome_rows(run: &str, accumulated: &Accumulated, css_families: &[String]) -> Vec<ScoreRow> {
    let mut cells: Cells<'_> = BTreeMap::new();
    for (key, outcomes) in &accumulated.outcomes {
        let family = accumulated.intervention_family[key.intervention as usize].as_str();
        let by_family = cells
            .entry((
                accumulated.subjects.name(key.subject),
                accumulated.modes.name(key.mode),
                accumulated.judges.name(key.judge),
            ))
            .or_default();
        by_family.entry((1, family)).or_default().merge(outcomes);
        if css_families.iter().any(|name| name == family) {
            by_family.entry((0, "all")).or_default().merge(outcomes);
        }
    }
    let mut rows = Vec::new();
    for ((subject, mode, judge), by_family) in cells {
        let is_control = accumulated.is_control.get(subject).copied().unwrap_or(false);
        for ((order, group), outcomes) in by_family {
            for (outcome, metric) in Outcome::EXCLUDED {
                rows.push(ScoreRow {
                    run: run.to_string(),
                    subject: subject.to_string(),
                    is_control,
                    mode: mode.to_string(),
                    judge: judge.to_string(),
                    metric: metric.to_string(),
                    level: if order == 0 { "overall" } else { "family" }.into(),
                    group: group.to_string(),
                    value: outcomes.count(outcome) as f64,
                    ci_low: None,
                    ci_high: None,
                    ci_method: None,
                    n_tuples: outcomes.total(),
                    n_cases: 0,
                    prompt_set: None,
                });
            }
        }
    }
    rows
}
