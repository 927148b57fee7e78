//! A mode's rubric section (judges `rubric:<model>`, seed 002): the domain ×
//! subject heatmap with N/A shown as such, the safety-flag rate, and the
//! rubric-against-CSS panel (the composite of responses that updated
//! correctly against those that ignored the change, per family).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{Cell, PlotView, Scores, TableView};
use crate::error::Result;
use crate::plots::{self, Heatmap, HeatmapRow, Scale};

/// The rubric's domains, read from the rubric file (id and name).
const RUBRIC: &str = include_str!("../../../../data/rubrics/clinical-reasoning-v1.yaml");

#[derive(Deserialize)]
struct RubricFile {
    domains: Vec<DomainName>,
}

#[derive(Deserialize)]
struct DomainName {
    id: String,
    name: String,
}

/// One rubric judge's section in one mode.
#[derive(Debug, Clone, Serialize)]
pub struct RubricView {
    pub judge: String,
    pub heatmap: PlotView,
    pub domains: TableView,
    pub versus_css: TableView,
    pub agreement: Option<TableView>,
}

fn domains() -> Vec<(String, String)> {
    serde_norway::from_str::<RubricFile>(RUBRIC)
        .map(|file| {
            file.domains
                .into_iter()
                .map(|domain| (domain.id, domain.name))
                .collect()
        })
        .unwrap_or_default()
}

/// The rubric sections of `mode`, one per rubric judge.
pub fn build(scores: &Scores<'_>, mode: &str) -> Result<Vec<RubricView>> {
    let judges: BTreeSet<&str> = scores
        .metric("rubric.composite")
        .chain(scores.metric("rubric_judge_error"))
        .filter(|row| row.mode == mode)
        .map(|row| row.judge.as_str())
        .collect();
    let domains = domains();
    let mut views = Vec::new();
    for judge in judges {
        let of = |subject: &str, metric: &str| scores.get(subject, mode, judge, metric, "overall", "all");
        let subjects: Vec<(&str, bool)> = scores
            .subjects()
            .filter(|(subject, _)| {
                of(subject, "rubric_judge_error").is_some() || of(subject, "rubric.composite").is_some()
            })
            .collect();
        let mut header: Vec<String> = vec!["Subject".into()];
        header.extend(domains.iter().map(|(id, name)| format!("{id} {name}")));
        header.extend(["Composite".into(), "Safety flag".into(), "Judge failures".into()]);
        let mut table = TableView::new(
            &format!(
                "Rubric scores (1–5) per domain, {judge}: means over the scored responses with 95% \
                 case-bootstrap intervals; N/A where the domain was not applicable to every response \
                 (seed 002's rules); the composite renormalises the profile's weights over the \
                 applicable domains; the safety flag (share of responses with a prespecified \
                 safety-critical item found) is reported apart and never averaged in"
            ),
            &[],
        );
        table.header = header;
        let mut rows = Vec::new();
        for &(subject, control) in &subjects {
            let mut cells = vec![Cell::subject(subject, control)];
            let mut values = Vec::new();
            let mut na = Vec::new();
            for (id, _) in &domains {
                let estimate = of(subject, &format!("rubric.{id}"));
                let always_na = of(subject, &format!("rubric_na.{id}")).is_some_and(|row| row.value >= 1.0);
                cells.push(match (estimate, always_na) {
                    (Some(row), _) => Cell::estimate(Some(row)),
                    (None, true) => Cell::number("N/A"),
                    (None, false) => Cell::number("—"),
                });
                values.push(estimate.map(|row| row.value));
                na.push(estimate.is_none() && always_na);
            }
            cells.push(Cell::estimate(of(subject, "rubric.composite")));
            cells.push(Cell::estimate(of(subject, "rubric.safety_flag")));
            cells.push(Cell::number(
                of(subject, "rubric_judge_error").map_or("—".to_string(), |row| {
                    format!("{} of {}", row.value, row.n_tuples)
                }),
            ));
            table.rows.push(cells);
            if values.iter().any(Option::is_some) {
                rows.push(HeatmapRow {
                    subject: subject.to_string(),
                    control,
                    css: values,
                    spurious: None,
                    not_applicable: na,
                });
            }
        }
        let title = "Rubric domains";
        let heatmap = if rows.is_empty() {
            PlotView::unavailable(
                title,
                "no response was scored on the rubric (see the judge failures)",
            )
        } else {
            let map = Heatmap {
                families: domains.iter().map(|(id, _)| id.clone()).collect(),
                blind: vec![false; domains.len()],
                control_family: None,
                rows,
                scale: Scale {
                    heading: "Rubric domain".into(),
                    name: "score".into(),
                    low: 1.0,
                    high: 5.0,
                },
            };
            let figure = plots::heatmap(
                &format!("rubric-{}-{}", super::slug(mode), super::slug(judge)),
                &format!("{title} ({judge})"),
                &map,
            )?;
            PlotView::drawn(
                title,
                format!(
                    "Mean rubric score per domain and subject, {judge} (1–5, darker is better; N/A: not \
                     applicable to this subject's responses). Domains: {}.",
                    domains
                        .iter()
                        .map(|(id, name)| format!("{id} {name}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                figure,
            )
        };
        // Rubric against CSS: one row per (CSS judge, subject, family).
        let prefix = format!("{judge}|");
        let mut versus = TableView::new(
            "Rubric against CSS: the mean composite of the variant responses that updated correctly \
             (CSS 1) and of those that ignored the change (CSS 0), by the pair judge named, and \
             their difference with a paired case-bootstrap interval. A well-reasoned trace that does \
             not predict counterfactual sensitivity shows as a gap near 0 (seed 002: a trace score \
             does not show that the trace caused the answer)",
            &[
                "Subject",
                "Pair judge",
                "Family",
                "Updated",
                "Ignored",
                "Updated − ignored",
            ],
        );
        let mut keys: Vec<(&str, &str, &str, &str)> = scores
            .metric("rubric_composite_updated")
            .chain(scores.metric("rubric_composite_ignored"))
            .filter(|row| row.mode == mode && row.judge.starts_with(&prefix))
            .map(|row| {
                (
                    row.subject.as_str(),
                    row.judge.as_str(),
                    row.level.as_str(),
                    row.group.as_str(),
                )
            })
            .collect();
        keys.sort_by_key(|(subject, judge, level, group)| (*subject, *judge, *level != "overall", *group));
        keys.dedup();
        for (subject, pair_judge, level, group) in keys {
            let get = |metric: &str| scores.get(subject, mode, pair_judge, metric, level, group);
            versus.rows.push(vec![
                Cell::subject(subject, scores.is_control(subject)),
                Cell::text(&pair_judge[prefix.len()..]),
                Cell::text(if level == "overall" { "all" } else { group }),
                Cell::estimate(get("rubric_composite_updated")),
                Cell::estimate(get("rubric_composite_ignored")),
                Cell::estimate(get("rubric_gap_updated_minus_ignored")),
            ]);
        }
        let versus = versus.or_unavailable(
            "no variant response was both scored on the rubric and decided by a pair judge as updated or ignored",
        );
        let mut agreement = TableView::new(
            &format!(
                "{judge} against human rubric scores, per domain: quadratic-weighted κ and Pearson r \
                 (seed 002 asks for this before automated scoring is trusted)"
            ),
            &["Domain", "κ (quadratic)", "Pearson r", "Items"],
        );
        for (id, name) in &domains {
            let get = |metric: &str| scores.get("all", "all", judge, metric, "comparison", "all");
            let kappa = get(&format!("rubric_kappa_quadratic.{id}"));
            let pearson = get(&format!("rubric_pearson.{id}"));
            let Some(items) = kappa.or(pearson).map(|row| row.n_tuples) else {
                continue;
            };
            agreement.rows.push(vec![
                Cell::text(format!("{id} {name}")),
                Cell::estimate(kappa),
                Cell::estimate(pearson),
                Cell::number(items.to_string()),
            ]);
        }
        views.push(RubricView {
            judge: judge.to_string(),
            heatmap,
            domains: table,
            versus_css: versus,
            agreement: (!agreement.rows.is_empty()).then_some(agreement),
        });
    }
    Ok(views)
}
