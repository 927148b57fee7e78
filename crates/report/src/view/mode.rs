//! One mode's section: its plots and the tables beside them, under the mode's
//! primary judge (the one that scored the most estimates).

use std::collections::BTreeSet;

use cfeval_aggregate::stats::descending_ranks;
use serde::Serialize;

use cfeval_schema::ScoreRow;

use super::{Cell, PlotView, Scores, TableView, interval, mode_title, slug};
use crate::error::Result;
use crate::plots::{self, ForestRow, Heatmap, HeatmapRow, ScatterPoint, SlopeLine, fixed};

/// One mode (`single_shot`, `agent`, …) of the run.
#[derive(Debug, Clone, Serialize)]
pub struct ModeView {
    pub id: String,
    pub mode: String,
    pub title: String,
    /// The judge the plots use.
    pub judge: String,
    /// The other judges of this mode (see the agreement section).
    pub other_judges: Vec<String>,
    pub scores: TableView,
    /// Judgments left out of the estimates, per family.
    pub left_out: TableView,
    /// Repeated samples: how much a subject's answers vary on one chart
    /// (only when a subject answered tuples more than once).
    pub samples: Option<TableView>,
    /// Dialogues (mode `dialogue`): accuracy, information coverage, turns,
    /// tests requested and dialogues without a diagnosis.
    pub dialogue: Option<TableView>,
    /// Biases (mode `dialogue`): biased − unbiased, paired by case.
    pub biases: Option<TableView>,
    /// The harness's 3-level pyramid (mode `harness`): execution
    /// robustness, reasoning dynamics, outcomes.
    pub harness: Vec<TableView>,
    /// The harness's entropy trajectories (median and interquartile band per
    /// subject); none without harness episodes.
    pub trajectory: Option<PlotView>,
    /// The rubric judges' sections (one per `rubric:<model>` judge).
    pub rubric: Vec<super::rubric::RubricView>,
    pub slope: PlotView,
    pub spearman: Option<String>,
    /// How likely the CSS ranking differs from the CMS ranking.
    pub rank_swap: Option<String>,
    pub ranks: TableView,
    /// Rank-swap probability of every pair of subjects under test.
    pub pair_swaps: TableView,
    pub heatmap: PlotView,
    pub families: TableView,
    pub forest: PlotView,
    pub scatter: PlotView,
    pub interventions: TableView,
}

/// The section of `mode`.
pub fn build(scores: &Scores<'_>, mode: &str) -> Result<ModeView> {
    let judges = scores.judges(mode);
    let judge = judges.first().copied().unwrap_or_default();
    let id = slug(mode);
    let overall = |subject: &str, metric: &str| scores.get(subject, mode, judge, metric, "overall", "all");
    // Subjects of this mode and judge: controls last, then by CSS (highest first).
    let present: BTreeSet<&str> = scores
        .rows
        .iter()
        .filter(|row| {
            row.mode == mode && row.judge == judge && super::ESTIMATES.contains(&row.metric.as_str())
        })
        .map(|row| row.subject.as_str())
        .collect();
    let mut subjects: Vec<(&str, bool)> = scores
        .subjects()
        .filter(|(subject, _)| present.contains(subject))
        .collect();
    subjects.sort_by(|a, b| {
        let css = |subject: &str| overall(subject, "css").map_or(f64::NEG_INFINITY, |row| row.value);
        a.1.cmp(&b.1)
            .then(css(b.0).total_cmp(&css(a.0)))
            .then(a.0.cmp(b.0))
    });
    let in_mode = |metric: &'static str, level: &'static str| {
        scores
            .metric(metric)
            .filter(move |row| row.mode == mode && row.judge == judge && row.level == level)
    };
    let families: BTreeSet<&str> = in_mode("css", "family").map(|row| row.group.as_str()).collect();
    let families: Vec<&str> = families.into_iter().collect();
    let control_family = in_mode("spurious_shift", "family")
        .map(|row| row.group.as_str())
        .next();
    let blind: BTreeSet<&str> = scores
        .metric("blind_spot")
        .filter(|row| row.mode == mode && row.judge == judge && row.value >= 0.5)
        .map(|row| row.group.as_str())
        .collect();
    let title = mode_title(mode);
    let under = format!("{title}, judge {judge}");
    // The scored families, as the pack names them (`A–E` in oncology).
    let scored = match families.as_slice() {
        [] => String::new(),
        [one] => (*one).to_string(),
        // Consecutive letters read as a range.
        many if many.len() > 2
            && many.iter().all(|family| family.len() == 1)
            && many
                .windows(2)
                .all(|pair| pair[0].as_bytes()[0] + 1 == pair[1].as_bytes()[0]) =>
        {
            format!("{}–{}", many[0], many[many.len() - 1])
        }
        many => many.join(", "),
    };
    let css_header = if scored.is_empty() {
        "CSS".to_string()
    } else {
        format!("CSS ({scored})")
    };

    // Overall scores.
    let mut table = TableView::new(
        &format!(
            "CSS (tuple-weighted and family-balanced: the mean of the family means), CMS and \
             spurious-shift rate per subject ({under}; 95% percentile intervals); CSS counts decided \
             pairs only — the pairs the judge was uncertain about and those of truncated or refused \
             answers are left out and counted"
        ),
        &[
            "Subject",
            css_header.as_str(),
            "CSS family-balanced",
            "CMS",
            "Spurious shift",
            "Cases",
            "CSS tuples",
            "Uncertain",
            "Truncated / refused",
        ],
    );
    for &(subject, control) in &subjects {
        let css = overall(subject, "css");
        let spurious = control_family
            .and_then(|family| scores.get(subject, mode, judge, "spurious_shift", "family", family));
        let count = |metric: &str| overall(subject, metric);
        table.rows.push(vec![
            Cell::subject(subject, control),
            Cell::estimate(css),
            Cell::estimate(overall(subject, "css_balanced")),
            Cell::estimate(overall(subject, "cms")),
            Cell::estimate(spurious),
            Cell::number(css.map_or("—".to_string(), |row| row.n_cases.to_string())),
            Cell::number(css.map_or("—".to_string(), |row| row.n_tuples.to_string())),
            Cell::number(left_out(&[count("uncertain")])),
            Cell::number(left_out(&[count("truncated"), count("refused")])),
        ]);
    }
    let table = table.or_unavailable("no per-subject estimates in this mode");
    let left_out_table = left_out_by_family(scores, mode, judge, &subjects, &under);

    // Repeated samples.
    let mut samples = TableView::new(
        &format!(
            "Repeated samples ({under}): how often a subject's plan moves when the same chart is \
             asked again (baseline re-samples judged against the first answer), CSS net of that \
             rate (CSS − re-sample shift, paired), and the mean within-tuple variance of CSS"
        ),
        &[
            "Subject",
            css_header.as_str(),
            "Re-sample shift",
            "CSS net of re-sample shift",
            "Within-tuple variance",
            "Re-samples judged",
        ],
    );
    for &(subject, control) in &subjects {
        let shift = overall(subject, "resample_shift");
        let variance = overall(subject, "css_within_tuple_var");
        if shift.is_none() && variance.is_none() {
            continue;
        }
        samples.rows.push(vec![
            Cell::subject(subject, control),
            Cell::estimate(overall(subject, "css")),
            Cell::estimate(shift),
            Cell::estimate(overall(subject, "css_net_resample")),
            Cell::estimate(variance),
            Cell::number(shift.map_or("—".to_string(), |row| row.n_tuples.to_string())),
        ]);
    }
    let samples = (!samples.rows.is_empty()).then_some(samples);

    // Dialogues: how the doctor's conversations went (judge `none`).
    let mut dialogue = TableView::new(
        &format!(
            "Dialogues: diagnostic accuracy of the baseline dialogues (CMS, {under}), information \
             coverage (the case's patient findings and results the doctor elicited), doctor turns \
             used, tests requested, the share that reached the interaction limit without a \
             diagnosis, and the patient agent's ratings of the doctor (1–10: confidence in its \
             assessment, likelihood of following its plan, of consulting it again); 95% \
             case-bootstrap intervals"
        ),
        &[
            "Subject",
            "Accuracy",
            "Coverage",
            "Turns",
            "Tests requested",
            "No diagnosis",
            "Confidence",
            "Compliance",
            "Consult again",
            "Dialogues",
        ],
    );
    for &(subject, control) in &subjects {
        let of = |metric: &str| scores.get(subject, mode, "none", metric, "overall", "all");
        let coverage = of("dialogue_coverage");
        if coverage.is_none() {
            continue;
        }
        dialogue.rows.push(vec![
            Cell::subject(subject, control),
            Cell::estimate(overall(subject, "cms")),
            Cell::estimate(coverage),
            Cell::estimate(of("dialogue_turns")),
            Cell::estimate(of("dialogue_tests")),
            Cell::estimate(of("dialogue_no_diagnosis")),
            Cell::estimate(of("perception_confidence")),
            Cell::estimate(of("perception_compliance")),
            Cell::estimate(of("perception_consult_again")),
            Cell::number(coverage.map_or("—".to_string(), |row| row.n_tuples.to_string())),
        ]);
    }
    let dialogue = (!dialogue.rows.is_empty()).then_some(dialogue);

    // Biases: each biased subject against the same subject without the bias.
    let mut biases = TableView::new(
        &format!(
            "Biases: each biased subject (`+bias=<id>`, the pack's biases.yaml) minus the same \
             subject without the bias, case by case: accuracy (CMS, {under}), CSS, information \
             coverage and the patient agent's confidence in the doctor; 95% paired \
             case-bootstrap intervals (an interval clear of 0 is an effect of the bias)"
        ),
        &[
            "Subject",
            "Bias",
            "Δ accuracy",
            "Δ CSS",
            "Δ coverage",
            "Δ confidence",
            "Dialogues",
        ],
    );
    for &(subject, control) in &subjects {
        let Some(bias) = cfeval_schema::vocab::SubjectName::parse(subject)
            .ok()
            .and_then(|name| name.bias().map(str::to_string))
        else {
            continue;
        };
        let of = |metric: &str| scores.get(subject, mode, "none", metric, "overall", "all");
        let accuracy = overall(subject, "delta_bias_cms");
        let css = overall(subject, "delta_bias");
        let coverage = of("delta_bias_dialogue_coverage");
        if accuracy.is_none() && css.is_none() && coverage.is_none() {
            continue;
        }
        biases.rows.push(vec![
            Cell::subject(subject, control),
            Cell::text(&bias),
            Cell::estimate(accuracy),
            Cell::estimate(css),
            Cell::estimate(coverage),
            Cell::estimate(of("delta_bias_perception_confidence")),
            Cell::number(coverage.map_or("—".to_string(), |row| row.n_tuples.to_string())),
        ]);
    }
    let biases = (!biases.rows.is_empty()).then_some(biases);
    let harness = harness_tables(scores, mode, judge, &subjects, &under);
    let trajectory = entropy_trajectories(scores, mode, &subjects, &id, &under)?;

    // Rank slope chart over every subject with both metrics, controls included.
    let both: Vec<(&str, bool, f64, f64)> = subjects
        .iter()
        .filter_map(|&(subject, control)| {
            Some((
                subject,
                control,
                overall(subject, "cms")?.value,
                overall(subject, "css")?.value,
            ))
        })
        .collect();
    let slope_title = "Rank slope: CMS → CSS";
    let slope = if both.len() >= 2 {
        let rank_cms = descending_ranks(&both.iter().map(|entry| entry.2).collect::<Vec<_>>());
        let rank_css = descending_ranks(&both.iter().map(|entry| entry.3).collect::<Vec<_>>());
        let lines: Vec<SlopeLine> = both
            .iter()
            .enumerate()
            .map(|(position, &(subject, control, cms, css))| SlopeLine {
                subject: subject.to_string(),
                control,
                color: scores.color(subject),
                cms,
                css,
                rank_cms: rank_cms[position],
                rank_css: rank_css[position],
            })
            .collect();
        let figure = plots::slope(
            &format!("slope-{id}"),
            &format!("{slope_title} ({under})"),
            &lines,
        )?;
        PlotView::drawn(
            slope_title,
            format!(
                "Each line joins a subject's rank under CMS (baseline quality) to its rank under CSS \
                 (counterfactual sensitivity), {under}. Ranks here include the controls (dashed, grey) \
                 as anchors; the rank table below ranks the subjects under test only."
            ),
            figure,
        )
    } else {
        PlotView::unavailable(
            slope_title,
            format!(
                "needs at least two subjects with both CMS and CSS ({} here)",
                both.len()
            ),
        )
    };

    // Spearman ρ between the CMS and CSS ranks, and the rank-swap table.
    let comparison = |metric: &str| scores.get("all", mode, judge, metric, "comparison", "all");
    let spearman = comparison("spearman_cms_css").map(|rho| {
        let interval = interval(rho)
            .map(|(low, high)| {
                format!(
                    " (95% bootstrap interval [{}, {}])",
                    fixed(low, 2),
                    fixed(high, 2)
                )
            })
            .unwrap_or_default();
        let p = comparison("spearman_cms_css_p")
            .map(|p| format!("; exact permutation p = {}", p_value(p.value)))
            .unwrap_or_default();
        format!(
            "Spearman ρ between CMS and CSS ranks = {}{interval}{p}; n = {} subjects.",
            fixed(rho.value, 3),
            rho.n_tuples
        )
    });
    let rank_swap = comparison("rank_swap_probability").map(|row| {
        format!(
            "The CSS ranking differs from the CMS ranking in {} of {} paired resamples (P = {}).",
            percent(row.value),
            row.n_tuples,
            fixed(row.value, 3)
        )
    });
    let mut ranks = TableView::new(
        &format!(
            "Rank swaps ({under}): ranks among the subjects under test (controls take no part); \
             swap = CSS rank − CMS rank (positive: the subject ranks lower under CSS than under CMS); \
             probabilities over the same paired resamples as the intervals"
        ),
        &[
            "Subject",
            "CMS",
            "CMS rank",
            "CSS",
            "CSS rank",
            "Swap",
            "P(CSS rank ≠ CMS rank)",
            "P(first under CMS)",
            "P(first under CSS)",
        ],
    );
    let mut ranked: Vec<(f64, Vec<Cell>)> = Vec::new();
    for &(subject, control) in &subjects {
        let rank = |metric: &str| scores.get(subject, mode, judge, metric, "comparison", "all");
        let (Some(rank_cms), Some(rank_css)) = (rank("rank_cms"), rank("rank_css")) else {
            continue;
        };
        let swap = rank("rank_swap").map_or(rank_css.value - rank_cms.value, |row| row.value);
        let value =
            |metric: &str| overall(subject, metric).map_or("—".to_string(), |row| fixed(row.value, 3));
        let probability = |metric: &str| {
            scores
                .get(subject, mode, judge, metric, "comparison", "all")
                .map_or("—".to_string(), |row| fixed(row.value, 3))
        };
        ranked.push((
            rank_css.value,
            vec![
                Cell::subject(subject, control),
                Cell::number(value("cms")),
                Cell::number(rank_text(rank_cms.value)),
                Cell::number(value("css")),
                Cell::number(rank_text(rank_css.value)),
                Cell::number(signed(swap)),
                Cell::number(probability("rank_swap_probability")),
                Cell::number(probability("rank_first_cms")),
                Cell::number(probability("rank_first_css")),
            ],
        ));
    }
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0));
    ranks.rows = ranked.into_iter().map(|(_, cells)| cells).collect();
    let ranks =
        ranks.or_unavailable("no ranks in the scores (fewer than two subjects with both CMS and CSS)");
    let pair_swaps = pair_swaps(scores, mode, judge, &under);

    // Heatmap of CSS by family, plus the spurious-shift column.
    let heatmap_title = "CSS by family";
    let mut family_table = TableView::new(
        &format!("CSS per family and spurious-shift rate ({under}; point estimates)"),
        &[],
    );
    family_table.header.push("Subject".into());
    family_table.header.extend(families.iter().map(|family| {
        if blind.contains(family) {
            format!("{family} (blind spot)")
        } else {
            family.to_string()
        }
    }));
    if let Some(family) = control_family {
        family_table.header.push(format!("{family} (spurious shift)"));
    }
    let mut rows = Vec::new();
    for &(subject, control) in &subjects {
        let css: Vec<Option<f64>> = families
            .iter()
            .map(|family| {
                scores
                    .get(subject, mode, judge, "css", "family", family)
                    .map(|row| row.value)
            })
            .collect();
        let spurious = control_family.and_then(|family| {
            scores
                .get(subject, mode, judge, "spurious_shift", "family", family)
                .map(|row| row.value)
        });
        if css.iter().all(Option::is_none) && spurious.is_none() {
            continue;
        }
        let mut cells = vec![Cell::subject(subject, control)];
        let show = |value: Option<f64>| Cell::number(value.map_or("—".to_string(), |value| fixed(value, 3)));
        cells.extend(css.iter().map(|value| show(*value)));
        if control_family.is_some() {
            cells.push(show(spurious));
        }
        family_table.rows.push(cells);
        rows.push(HeatmapRow {
            subject: subject.to_string(),
            control,
            css,
            spurious,
            not_applicable: Vec::new(),
        });
    }
    let family_table = family_table.or_unavailable("no per-family estimates in this mode");
    let heatmap = if rows.is_empty() {
        PlotView::unavailable(
            heatmap_title,
            "no per-family CSS or spurious-shift estimates in this mode",
        )
    } else {
        let map = Heatmap {
            families: families.iter().map(|family| family.to_string()).collect(),
            blind: families.iter().map(|family| blind.contains(family)).collect(),
            control_family: control_family.map(str::to_string),
            rows,
            scale: plots::Scale::css(),
        };
        let figure = plots::heatmap(
            &format!("heatmap-{id}"),
            &format!("{heatmap_title} ({under})"),
            &map,
        )?;
        let spurious_note = match control_family {
            Some(family) => format!(
                " The last column is the spurious-shift rate on the negative-control family {family} \
                 (lower is better), reported beside CSS and never pooled into it."
            ),
            None => {
                " No negative-control family in this run: the spurious-shift column is not available.".into()
            }
        };
        PlotView::drawn(
            heatmap_title,
            format!("CSS per family and subject, {under} (darker is more sensitive).{spurious_note}"),
            figure,
        )
    };

    // Forest plot of CSS with intervals, overall and per family.
    let forest_title = "CSS with 95% intervals";
    let mut forest_rows = Vec::new();
    for &(subject, control) in &subjects {
        let Some(css) = overall(subject, "css") else {
            continue;
        };
        let row = |family: Option<&str>, estimate: &ScoreRow| ForestRow {
            subject: subject.to_string(),
            control,
            color: scores.color(subject),
            family: family.map(str::to_string),
            value: estimate.value,
            interval: interval(estimate),
        };
        forest_rows.push(row(None, css));
        for family in &families {
            if let Some(estimate) = scores.get(subject, mode, judge, "css", "family", family) {
                forest_rows.push(row(Some(family), estimate));
            }
        }
    }
    let forest = if forest_rows.is_empty() {
        PlotView::unavailable(forest_title, "no CSS estimates in this mode")
    } else {
        let figure = plots::forest(
            &format!("forest-{id}"),
            &format!("{forest_title} ({under})"),
            &forest_rows,
        )?;
        PlotView::drawn(
            forest_title,
            format!(
                "CSS over families {scored} (bold) and per family, with paired case-bootstrap 95% \
                 percentile intervals, {under}."
            ),
            figure,
        )
    };

    // CSS against the spurious-shift rate.
    let scatter_title = "Responsive and stable: CSS against spurious shift";
    let scatter = match control_family {
        None => PlotView::unavailable(
            scatter_title,
            "no spurious-shift rates: the run has no negative-control family (N)",
        ),
        Some(family) => {
            let points: Vec<ScatterPoint> = subjects
                .iter()
                .filter_map(|&(subject, control)| {
                    let css = overall(subject, "css")?;
                    let spurious = scores.get(subject, mode, judge, "spurious_shift", "family", family)?;
                    Some(ScatterPoint {
                        subject: subject.to_string(),
                        control,
                        color: scores.color(subject),
                        css: css.value,
                        css_interval: interval(css),
                        spurious: spurious.value,
                        spurious_interval: interval(spurious),
                    })
                })
                .collect();
            if points.is_empty() {
                PlotView::unavailable(scatter_title, "no subject has both CSS and a spurious-shift rate")
            } else {
                let figure = plots::scatter(
                    &format!("scatter-{id}"),
                    &format!("{scatter_title} ({under})"),
                    family,
                    &points,
                )?;
                PlotView::drawn(
                    scatter_title,
                    format!(
                        "Each point is a subject ({under}); whiskers are 95% intervals. Top left is \
                         responsive (updates when the chart changes) and stable (holds when it should, \
                         family {family})."
                    ),
                    figure,
                )
            }
        }
    };

    // CSS per intervention.
    let mut by_intervention: BTreeSet<&str> = in_mode("css", "intervention")
        .map(|row| row.group.as_str())
        .collect();
    by_intervention.extend(in_mode("spurious_shift", "intervention").map(|row| row.group.as_str()));
    let mut interventions = TableView::new(
        &format!(
            "Per intervention ({under}): CSS, or the spurious-shift rate for negative-control interventions (marked *)"
        ),
        &["Subject"],
    );
    let columns: Vec<(&str, bool)> = by_intervention
        .iter()
        .map(|&intervention| {
            let spurious = in_mode("spurious_shift", "intervention").any(|row| row.group == intervention);
            (intervention, spurious)
        })
        .collect();
    interventions
        .header
        .extend(columns.iter().map(|(name, spurious)| {
            if *spurious {
                format!("{name}*")
            } else {
                name.to_string()
            }
        }));
    for &(subject, control) in &subjects {
        let cells: Vec<Cell> = columns
            .iter()
            .map(|&(intervention, spurious)| {
                let metric = if spurious { "spurious_shift" } else { "css" };
                Cell::number(
                    scores
                        .get(subject, mode, judge, metric, "intervention", intervention)
                        .map_or("—".to_string(), |row| fixed(row.value, 2)),
                )
            })
            .collect();
        if cells.iter().all(|cell| cell.text == "—") {
            continue;
        }
        let mut row = vec![Cell::subject(subject, control)];
        row.extend(cells);
        interventions.rows.push(row);
    }
    let interventions = interventions.or_unavailable("no per-intervention estimates in this mode");

    Ok(ModeView {
        id,
        mode: mode.to_string(),
        title,
        judge: judge.to_string(),
        other_judges: judges.iter().skip(1).map(|judge| judge.to_string()).collect(),
        scores: table,
        left_out: left_out_table,
        samples,
        dialogue,
        biases,
        harness,
        trajectory,
        rubric: super::rubric::build(scores, mode)?,
        slope,
        spearman,
        rank_swap,
        ranks,
        pair_swaps,
        heatmap,
        families: family_table,
        forest,
        scatter,
        interventions,
    })
}

/// The harness's pyramid (EviDx's three levels), one table a level, from
/// the aggregate stage's `harness_*` rows (judge `none`) and the judges'
/// outcome rows; empty when the mode has no harness episodes.
fn harness_tables(
    scores: &Scores<'_>,
    mode: &str,
    judge: &str,
    subjects: &[(&str, bool)],
    under: &str,
) -> Vec<TableView> {
    let levels: [(&str, &[(&str, &str)]); 2] = [
        (
            "Harness, level 1 — execution robustness: per episode, the share with no usable answer \
             and the share that reached the step limit, then mean counts of replies off the \
             protocol, unusable beliefs, hypotheses the ontology does not know, unknown tools, failed \
             tool calls, HTTP retries and natural-language fallbacks; 95% case-bootstrap intervals",
            &[
                ("Failed", "harness_failed"),
                ("Step limit", "harness_step_limit"),
                ("Schema failures", "harness_schema_failures"),
                ("Invalid beliefs", "harness_invalid_beliefs"),
                ("Unknown hypotheses", "harness_unknown_hypotheses"),
                ("Unknown tools", "harness_unknown_tools"),
                ("Tool errors", "harness_tool_errors"),
                ("Retries", "harness_retries"),
                ("Language fallbacks", "harness_language_fallbacks"),
            ],
        ),
        (
            "Harness, level 2 — reasoning dynamics: per episode, finishes the Observer refused, \
             spurious entropy drops (the belief sharpened with no new evidence before it), chart \
             coverage and belief entropy (bits) at termination, steps, and queries to the \
             Consultant; 95% case-bootstrap intervals",
            &[
                ("Observer blocks", "harness_observer_blocks"),
                ("Spurious drops", "harness_spurious_drops"),
                ("Coverage", "harness_coverage"),
                ("Entropy (bits)", "harness_entropy"),
                ("Steps", "harness_steps"),
                ("Consultations", "harness_consultations"),
            ],
        ),
    ];
    let mut tables = Vec::new();
    for (title, columns) in levels {
        let mut headers = vec!["Subject"];
        headers.extend(columns.iter().map(|(header, _)| *header));
        headers.push("Episodes");
        let mut table = TableView::new(title, &headers);
        for &(subject, control) in subjects {
            let of = |metric: &str| scores.get(subject, mode, "none", metric, "overall", "all");
            let Some(first) = of(columns[0].1) else {
                continue;
            };
            let mut row = vec![Cell::subject(subject, control)];
            row.extend(columns.iter().map(|(_, metric)| Cell::estimate(of(metric))));
            row.push(Cell::number(first.n_tuples.to_string()));
            table.rows.push(row);
        }
        if table.rows.is_empty() {
            return Vec::new();
        }
        tables.push(table);
    }
    let mut outcomes = TableView::new(
        &format!(
            "Harness, level 3 — outcomes ({under}): accuracy of the baseline episodes (CMS), CSS, \
             reference evidence read and recalled (the share of the case's decisive-finding spans \
             the trajectory read, and read and cited), and the harness minus the same subject's \
             single-shot and agent answers on the same tuples (paired by case; an interval clear \
             of 0 is an effect of the harness)"
        ),
        &[
            "Subject",
            "Accuracy",
            "CSS",
            "Evidence read",
            "Evidence recall",
            "Δ CSS vs single-shot",
            "Δ CSS vs agent",
            "Δ accuracy vs single-shot",
        ],
    );
    for &(subject, control) in subjects {
        let of = |metric: &str, in_mode: &str| scores.get(subject, in_mode, judge, metric, "overall", "all");
        outcomes.rows.push(vec![
            Cell::subject(subject, control),
            Cell::estimate(of("cms", mode)),
            Cell::estimate(of("css", mode)),
            Cell::estimate(scores.get(subject, mode, "none", "harness_evidence_read", "overall", "all")),
            Cell::estimate(scores.get(subject, mode, "none", "harness_evidence_recall", "overall", "all")),
            Cell::estimate(of("delta_harness_minus_single_shot", "harness-single_shot")),
            Cell::estimate(of("delta_harness_minus_agent", "harness-agent")),
            Cell::estimate(of("delta_harness_minus_single_shot_cms", "harness-single_shot")),
        ]);
    }
    tables.push(outcomes);
    tables
}

/// The harness's entropy trajectories from the aggregate stage's
/// `harness_entropy_trajectory` rows (one per subject and step); none when
/// the mode has none.
fn entropy_trajectories(
    scores: &Scores<'_>,
    mode: &str,
    subjects: &[(&str, bool)],
    id: &str,
    under: &str,
) -> Result<Option<PlotView>> {
    let title = "Harness, level 2 — entropy trajectories";
    let mut lines = Vec::new();
    for &(subject, control) in subjects {
        let mut points: Vec<(u32, f64, f64, f64, u64)> = scores
            .rows
            .iter()
            .filter(|row| {
                row.subject == subject
                    && row.mode == mode
                    && row.metric == "harness_entropy_trajectory"
                    && row.level == "step"
            })
            .filter_map(|row| {
                let step = row.group.parse::<u32>().ok()?;
                Some((
                    step,
                    row.value,
                    row.ci_low.unwrap_or(row.value),
                    row.ci_high.unwrap_or(row.value),
                    row.n_tuples,
                ))
            })
            .collect();
        if points.is_empty() {
            continue;
        }
        points.sort_by_key(|point| point.0);
        lines.push(plots::TrajectoryLine {
            subject: subject.to_string(),
            control,
            color: scores.color(subject),
            points,
        });
    }
    if lines.is_empty() {
        return Ok(None);
    }
    let figure =
        plots::entropy_trajectory(&format!("trajectory-{id}"), &format!("{title} ({under})"), &lines)?;
    Ok(Some(PlotView::drawn(
        title,
        format!(
            "Per subject ({under}), the median belief entropy H(t) in bits over the episodes still \
             running at step t with a usable belief, and the interquartile band shaded; a line that \
             falls while the band stays wide means a few episodes settle and most do not."
        ),
        figure,
    )))
}

/// A count of judgments left out, with its share of the cell (`12 (3.1%)`),
/// from count rows (`value` = count, `n_tuples` = every judgment).
fn left_out(rows: &[Option<&ScoreRow>]) -> String {
    let present: Vec<&ScoreRow> = rows.iter().flatten().copied().collect();
    let Some(first) = present.first() else {
        return "—".into();
    };
    let count: f64 = present.iter().map(|row| row.value).sum();
    if first.n_tuples == 0 || count == 0.0 {
        return fixed(count, 0);
    }
    format!("{} ({})", fixed(count, 0), percent(count / first.n_tuples as f64))
}

/// `3.1%`.
fn percent(share: f64) -> String {
    format!("{}%", fixed(100.0 * share, 1))
}

/// Per family: pairs the judge was uncertain about, and those of truncated
/// or refused answers.
fn left_out_by_family(
    scores: &Scores<'_>,
    mode: &str,
    judge: &str,
    subjects: &[(&str, bool)],
    under: &str,
) -> TableView {
    let families: BTreeSet<&str> = scores
        .metric("uncertain")
        .filter(|row| row.mode == mode && row.judge == judge && row.level == "family")
        .map(|row| row.group.as_str())
        .collect();
    let mut table = TableView::new(
        &format!(
            "Pairs left out of the estimates per family ({under}): the judge was uncertain, \
             or (+ n incomplete) the answer was truncated or refused"
        ),
        &["Subject"],
    );
    table.header.extend(families.iter().map(|family| match *family {
        cfeval_schema::vocab::BASELINE => "Baseline (CMS)".to_string(),
        family => family.to_string(),
    }));
    for &(subject, control) in subjects {
        let count = |metric: &str, family: &str| {
            scores
                .get(subject, mode, judge, metric, "family", family)
                .map(|row| row.value)
        };
        let cells: Vec<Cell> = families
            .iter()
            .map(|family| {
                let Some(uncertain) = count("uncertain", family) else {
                    return Cell::number("—");
                };
                let incomplete =
                    count("truncated", family).unwrap_or(0.0) + count("refused", family).unwrap_or(0.0);
                Cell::number(if incomplete > 0.0 {
                    format!("{} (+{} incomplete)", fixed(uncertain, 0), fixed(incomplete, 0))
                } else {
                    fixed(uncertain, 0)
                })
            })
            .collect();
        if cells.iter().all(|cell| cell.text == "—") {
            continue;
        }
        let mut row = vec![Cell::subject(subject, control)];
        row.extend(cells);
        table.rows.push(row);
    }
    table.or_unavailable("no counts of left-out judgments in the scores")
}

/// Every pair of subjects under test: which ranks higher under CMS and
/// under CSS (point estimates), and how often the two orders differ.
fn pair_swaps(scores: &Scores<'_>, mode: &str, judge: &str, under: &str) -> TableView {
    let mut table = TableView::new(
        &format!(
            "Rank-swap probability per pair ({under}): the share of paired resamples in which CMS \
             and CSS order the two subjects differently"
        ),
        &["Subject", "Other subject", "Higher CMS", "Higher CSS", "P(swap)"],
    );
    let overall = |subject: &str, metric: &str| {
        scores
            .get(subject, mode, judge, metric, "overall", "all")
            .map(|row| row.value)
    };
    let higher = |a: &str, b: &str, metric: &str| match (overall(a, metric), overall(b, metric)) {
        (Some(x), Some(y)) if x > y => a.to_string(),
        (Some(x), Some(y)) if y > x => b.to_string(),
        (Some(_), Some(_)) => "tie".to_string(),
        _ => "—".to_string(),
    };
    for row in scores.metric("rank_swap_probability") {
        if row.mode != mode || row.judge != judge || row.subject == "all" || row.group == "all" {
            continue;
        }
        let (higher_cms, higher_css) = (
            higher(&row.subject, &row.group, "cms"),
            higher(&row.subject, &row.group, "css"),
        );
        let flag = higher_cms != higher_css;
        table.rows.push(vec![
            Cell::subject(&row.subject, false),
            Cell::subject(&row.group, false),
            Cell::text(higher_cms),
            Cell::text(higher_css),
            Cell {
                flag,
                ..Cell::number(fixed(row.value, 3))
            },
        ]);
    }
    table.or_unavailable("no rank-swap probabilities in the scores (fewer than two subjects under test)")
}

/// A rank (`2`, or `2.5` for a tie).
fn rank_text(rank: f64) -> String {
    if rank.fract() == 0.0 {
        fixed(rank, 0)
    } else {
        fixed(rank, 1)
    }
}

/// A signed difference of ranks (`+1`, `0`, `−2`).
fn signed(value: f64) -> String {
    if value > 0.0 {
        format!("+{}", rank_text(value))
    } else if value < 0.0 {
        format!("−{}", rank_text(-value))
    } else {
        "0".into()
    }
}

/// A p-value for display.
pub fn p_value(p: f64) -> String {
    if p < 0.0001 {
        "< 0.0001".into()
    } else {
        fixed(p, 4)
    }
}
