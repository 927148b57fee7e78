//! The run-wide sections: blind spots, agreement, agent vs single-shot, and
//! provenance.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::{Cell, Fact, Scores, TableView, code_fact, fact, listing, mode_order, p_value};
use crate::Settings;
use crate::data::RunData;
use crate::plots::fixed;

/// Families where every subject under test is confidently below the
/// threshold: the largest upper interval bound among them is below it.
#[derive(Debug, Clone, Serialize)]
pub struct BlindSpots {
    /// One sentence per blind spot.
    pub items: Vec<String>,
    /// Why there are no items (none found, or not available).
    pub none: Option<String>,
    pub table: TableView,
}

pub fn blind_spots(scores: &Scores<'_>, settings: &Settings) -> BlindSpots {
    let threshold = settings
        .aggregate
        .as_ref()
        .map(|aggregate| format!(" (threshold {})", fixed(aggregate.blind_spot_threshold, 2)));
    let threshold = threshold.as_deref().unwrap_or("");
    // (mode, judge) → family → (best CSS row, blind spot)
    type ByFamily<'a> = BTreeMap<&'a str, (Option<&'a cfeval_schema::ScoreRow>, bool)>;
    let mut grid: BTreeMap<(u8, &str, &str), ByFamily<'_>> = BTreeMap::new();
    let mut families: BTreeSet<&str> = BTreeSet::new();
    for row in scores.metric("blind_spot") {
        let best = scores.get("all", &row.mode, &row.judge, "best_css", "comparison", &row.group);
        families.insert(row.group.as_str());
        grid.entry((mode_order(&row.mode), row.mode.as_str(), row.judge.as_str()))
            .or_default()
            .insert(row.group.as_str(), (best, row.value >= 0.5));
    }
    let mut table = TableView::new(
        &format!(
            "Best CSS per family among the subjects under test, with its 95% interval{threshold}; \
             a blind spot needs every subject's upper bound below the threshold"
        ),
        &["Mode", "Judge"],
    );
    table
        .header
        .extend(families.iter().map(|family| family.to_string()));
    let mut items = Vec::new();
    for ((_, mode, judge), by_family) in &grid {
        let mut cells = vec![Cell::text(*mode), Cell::text(*judge)];
        for family in &families {
            let mut flag = false;
            let text = match by_family.get(family) {
                None => "—".to_string(),
                Some((best, blind)) => {
                    let best = best.map_or("—".to_string(), super::with_interval);
                    if *blind {
                        let upper = scores
                            .get("all", mode, judge, "css_upper_max", "comparison", family)
                            .map_or(String::new(), |row| {
                                format!("; largest upper bound {}", fixed(row.value, 3))
                            });
                        let agreement =
                            match scores.get("all", mode, "all", "blind_spot_judges", "comparison", family) {
                                Some(row) if row.value >= 2.0 => format!(
                                    "agreed: {} of {} judges flag it",
                                    fixed(row.value, 0),
                                    row.n_tuples
                                ),
                                Some(row) => format!(
                                    "not agreed: {} of {} judges flag it",
                                    fixed(row.value, 0),
                                    row.n_tuples
                                ),
                                None => "agreement not available".to_string(),
                            };
                        items.push(format!(
                            "Family {family}: every subject under test is below the threshold{threshold}, \
                             upper interval bounds included; best CSS {best}{upper} (mode {mode}, judge \
                             {judge}; {agreement})."
                        ));
                        flag = true;
                        format!("{best} (blind spot)")
                    } else {
                        best
                    }
                }
            };
            cells.push(Cell {
                flag,
                ..Cell::number(text)
            });
        }
        table.rows.push(cells);
    }
    let table = table.or_unavailable("no blind-spot rows in the scores");
    let none = if table.unavailable.is_some() {
        Some("Not available: the scores have no blind-spot rows (no per-family CSS).".to_string())
    } else if items.is_empty() {
        Some(format!(
            "No blind spots: in every family at least one subject under test may reach the \
             threshold{threshold} (its upper interval bound does)."
        ))
    } else {
        None
    };
    BlindSpots { items, none, table }
}

/// Cross-judge and human agreement.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    pub judge_css: TableView,
    pub spearman: TableView,
    pub kappa: TableView,
    pub human: TableView,
}

pub fn agreement(scores: &Scores<'_>) -> Agreement {
    // CSS overall per subject under each (mode, judge).
    let columns: BTreeSet<(&str, &str)> = scores
        .metric("css")
        .filter(|row| row.level == "overall")
        .map(|row| (row.mode.as_str(), row.judge.as_str()))
        .collect();
    let judges: BTreeSet<&str> = columns.iter().map(|(_, judge)| *judge).collect();
    let mut judge_css = TableView::new("CSS overall under each judge (point estimates)", &["Subject"]);
    judge_css
        .header
        .extend(columns.iter().map(|(mode, judge)| format!("{judge} ({mode})")));
    if judges.len() >= 2 {
        for (subject, control) in scores.subjects() {
            let mut cells = vec![Cell::subject(subject, control)];
            cells.extend(columns.iter().map(|(mode, judge)| {
                Cell::number(
                    scores
                        .get(subject, mode, judge, "css", "overall", "all")
                        .map_or("—".to_string(), |row| fixed(row.value, 3)),
                )
            }));
            judge_css.rows.push(cells);
        }
    }
    let judge_css = judge_css.or_unavailable("one judge only: no cross-judge replication in this run");

    let mut spearman = TableView::new(
        "Cross-judge Spearman ρ over subjects (CSS overall)",
        &["Judges", "Mode", "ρ", "Exact p", "Subjects"],
    );
    for row in scores.metric("spearman_judges") {
        let p = scores
            .get(
                "all",
                &row.mode,
                &row.judge,
                "spearman_judges_p",
                &row.level,
                &row.group,
            )
            .map_or("—".to_string(), |p| p_value(p.value));
        spearman.rows.push(vec![
            Cell::text(&row.judge),
            Cell::text(&row.mode),
            Cell::number(fixed(row.value, 3)),
            Cell::number(p),
            Cell::number(row.n_tuples.to_string()),
        ]);
    }
    let spearman = spearman.or_unavailable("needs at least two judges over at least two subjects");

    let mut kappa = TableView::new(
        "Cohen's κ over the CSS tuples of the subjects under test both raters scored (0, ½, 1 \
         ordered, and updated in the wrong direction as its own category)",
        &[
            "Raters",
            "Group",
            "κ",
            "Interval",
            "κ linear",
            "κ quadratic",
            "Tuples",
        ],
    );
    for row in scores.metric("kappa") {
        let weighted = |metric: &str| {
            scores
                .get(
                    &row.subject,
                    &row.mode,
                    &row.judge,
                    metric,
                    &row.level,
                    &row.group,
                )
                .map_or("—".to_string(), |row| fixed(row.value, 3))
        };
        kappa.rows.push(vec![
            Cell::text(&row.judge),
            Cell::text(&row.group),
            Cell::number(fixed(row.value, 3)),
            Cell::number(match (row.ci_low, row.ci_high) {
                (Some(low), Some(high)) => format!("{}–{}", fixed(low, 2), fixed(high, 2)),
                _ => "—".to_string(),
            }),
            Cell::number(weighted("kappa_linear")),
            Cell::number(weighted("kappa_quadratic")),
            Cell::number(row.n_tuples.to_string()),
        ]);
    }
    let kappa = kappa.or_unavailable("needs two judges (or human labels) scoring the same tuples");

    // Failure rates per family: human, then each judge on the same tuples.
    let mut rates: BTreeMap<&str, BTreeMap<&str, (f64, u64)>> = BTreeMap::new();
    let mut raters: BTreeSet<&str> = BTreeSet::new();
    for row in scores
        .metric("judge_failure_rate")
        .chain(scores.metric("human_failure_rate"))
    {
        if row.metric == "judge_failure_rate" {
            raters.insert(row.judge.as_str());
        }
        rates
            .entry(row.group.as_str())
            .or_default()
            .insert(row.judge.as_str(), (row.value, row.n_tuples));
    }
    let mut human = TableView::new(
        "Failure rate (CSS = 0) per family on the human-labelled tuples: humans against each judge",
        &["Family", "Human"],
    );
    human.header.extend(raters.iter().map(|rater| rater.to_string()));
    human.header.push("Labelled tuples".into());
    for (family, by_rater) in &rates {
        let rate = |rater: &str| {
            by_rater
                .get(rater)
                .map_or("—".to_string(), |(rate, _)| fixed(*rate, 3))
        };
        let mut cells = vec![Cell::text(*family), Cell::number(rate("human"))];
        cells.extend(raters.iter().map(|rater| Cell::number(rate(rater))));
        cells.push(Cell::number(
            by_rater
                .get("human")
                .map_or("—".to_string(), |(_, tuples)| tuples.to_string()),
        ));
        human.rows.push(cells);
    }
    let human = human.or_unavailable("no human labels imported (cfeval aggregate --human-labels FILE.csv)");
    Agreement {
        judge_css,
        spearman,
        kappa,
        human,
    }
}

/// Agent against single-shot.
#[derive(Debug, Clone, Serialize)]
pub struct AgentView {
    pub deltas: TableView,
    pub family_deltas: TableView,
    pub failures: TableView,
}

const DELTA_CSS: &str = "delta_agent_minus_single_shot";

pub fn agent(scores: &Scores<'_>) -> AgentView {
    let no_agent = "no agent mode in this run";
    let judges: BTreeSet<&str> = scores.metric(DELTA_CSS).map(|row| row.judge.as_str()).collect();
    let css_families: BTreeSet<&str> = scores
        .metric(DELTA_CSS)
        .filter(|row| row.level == "family")
        .map(|row| row.group.as_str())
        .collect();
    let mut deltas = TableView::new(
        "Paired differences agent − single-shot (same cases, same resamples; 95% percentile intervals)",
        &["Subject", "Judge", "Δ CSS", "Δ CMS", "Δ spurious shift"],
    );
    let mut family_deltas = TableView::new(
        "Δ CSS agent − single-shot per family (95% percentile intervals)",
        &["Subject", "Judge"],
    );
    family_deltas
        .header
        .extend(css_families.iter().map(|family| family.to_string()));
    let compact = |row: &cfeval_schema::ScoreRow| match (row.ci_low, row.ci_high) {
        (Some(low), Some(high)) => format!("{} [{}, {}]", fixed(row.value, 2), fixed(low, 2), fixed(high, 2)),
        _ => fixed(row.value, 2),
    };
    for (subject, control) in scores.subjects() {
        for &judge in &judges {
            let delta = |metric: &str, level: &str| {
                scores
                    .metric(metric)
                    .find(|row| row.subject == subject && row.judge == judge && row.level == level)
            };
            let css = delta(DELTA_CSS, "overall");
            let cms = delta("delta_agent_minus_single_shot_cms", "overall");
            let spurious = delta("delta_agent_minus_single_shot_spurious_shift", "family");
            if css.is_none() && cms.is_none() && spurious.is_none() {
                continue;
            }
            deltas.rows.push(vec![
                Cell::subject(subject, control),
                Cell::text(judge),
                Cell::estimate(css),
                Cell::estimate(cms),
                Cell::estimate(spurious),
            ]);
            let mut cells = vec![Cell::subject(subject, control), Cell::text(judge)];
            cells.extend(css_families.iter().map(|family| {
                Cell::number(
                    scores
                        .get(subject, "agent-single_shot", judge, DELTA_CSS, "family", family)
                        .map_or("—".to_string(), compact),
                )
            }));
            family_deltas.rows.push(cells);
        }
    }
    let deltas = deltas.or_unavailable(no_agent);
    let family_deltas = family_deltas.or_unavailable(no_agent);
    let mut failures = TableView::new(
        "Agents: share of CSS tuples that were not updated although the decisive section was read \
         (integration failure) or because it was not read (access failure), 95% percentile intervals",
        &["Subject", "Judge", "Integration failure", "Access failure"],
    );
    let keys: BTreeSet<&str> = scores
        .metric("integration_failure")
        .chain(scores.metric("access_failure"))
        .map(|row| row.judge.as_str())
        .collect();
    for (subject, control) in scores.subjects() {
        for &judge in &keys {
            let rate = |metric: &str| scores.get(subject, "agent", judge, metric, "overall", "all");
            let (integration, access) = (rate("integration_failure"), rate("access_failure"));
            if integration.is_none() && access.is_none() {
                continue;
            }
            failures.rows.push(vec![
                Cell::subject(subject, control),
                Cell::text(judge),
                Cell::estimate(integration),
                Cell::estimate(access),
            ]);
        }
    }
    let failures = failures.or_unavailable(no_agent);
    AgentView {
        deltas,
        family_deltas,
        failures,
    }
}

/// Where the numbers come from.
#[derive(Debug, Clone, Serialize)]
pub struct Provenance {
    pub facts: Vec<Fact>,
    pub judges: TableView,
    pub subjects: TableView,
}

/// How the bootstrap resampled, in words.
fn resampling_text(resampling: cfeval_aggregate::stats::Resampling) -> &'static str {
    match resampling {
        cfeval_aggregate::stats::Resampling::Cases => {
            "cases drawn once per replicate for every family, subject, mode and judge"
        }
        cfeval_aggregate::stats::Resampling::FamilyStrata => "cases within family strata",
    }
}

/// At most `limit` items of a list, then how many more.
fn some<T: ToString>(items: impl IntoIterator<Item = T>, limit: usize) -> String {
    let items: Vec<String> = items.into_iter().map(|item| item.to_string()).collect();
    if items.is_empty() {
        return "—".into();
    }
    let shown = items[..items.len().min(limit)].join(", ");
    if items.len() > limit {
        format!("{shown}, … ({} in all)", items.len())
    } else {
        shown
    }
}

pub fn provenance(data: &RunData, scores: &Scores<'_>, settings: &Settings) -> Provenance {
    let mut catalogs: BTreeSet<&String> = BTreeSet::new();
    let mut facts = vec![code_fact("Run", data.run.clone())];
    match &data.scores_provenance {
        Some(table) => {
            catalogs.extend(&table.catalog_hashes);
            facts.push(fact(
                "Scores written by",
                format!("cfeval {}", listing(&table.cfeval_versions)),
            ));
            facts.push(fact(
                "Scores",
                format!("{} rows in {} shard(s)", table.rows, table.shards),
            ));
            facts.push(code_fact(
                "Aggregate settings fingerprint",
                listing(&table.fingerprints),
            ));
        }
        None => facts.push(fact("Scores", "not available (no scores table)")),
    }
    if let Some(judges) = &data.judges {
        for info in judges.values() {
            catalogs.extend(&info.catalog_hashes);
        }
    }
    facts.push(code_fact("Catalog hash", listing(catalogs)));
    facts.push(fact(
        "Bootstrap",
        match &settings.aggregate {
            Some(aggregate) => format!(
                "{} paired resamples ({}), seed {}, {}% intervals",
                aggregate.resamples,
                resampling_text(aggregate.resampling),
                aggregate.seed,
                fixed(aggregate.level * 100.0, 0)
            ),
            None => "paired resamples; settings not recorded with the scores (see the pipeline file)".into(),
        },
    ));
    facts.push(fact(
        "Intervals shown",
        "percentile (the scores table also holds BCa intervals)",
    ));
    let controls: Vec<&str> = scores
        .subjects()
        .filter(|(_, control)| *control)
        .map(|(subject, _)| subject)
        .collect();
    facts.push(fact(
        "Controls",
        if controls.is_empty() {
            "—".to_string()
        } else {
            controls.join(", ")
        },
    ));
    facts.push(fact(
        "Report",
        format!("cfeval-report {}", env!("CARGO_PKG_VERSION")),
    ));

    let mut judges = TableView::new(
        "Judges (from the judgments table)",
        &["Judge", "Judgments", "Errors", "Prompt hash", "Catalog hash"],
    );
    if let Some(by_judge) = &data.judges {
        for (judge, info) in by_judge {
            judges.rows.push(vec![
                Cell::text(judge),
                Cell::number(info.judgments.to_string()),
                Cell::number(info.errors.to_string()),
                Cell::text(some(&info.prompt_hashes, 4)),
                Cell::text(some(&info.catalog_hashes, 4)),
            ]);
        }
    }
    let judges = judges.or_unavailable("no judgments table in this run");
    let mut subjects = TableView::new(
        "Subjects (from the responses table)",
        &[
            "Subject",
            "Modes",
            "Backend/model",
            "Prompt hash",
            "Temperature",
            "Seeds",
            "Responses",
        ],
    );
    if let Some(by_subject) = &data.subjects {
        for (subject, info) in by_subject {
            subjects.rows.push(vec![
                Cell::subject(subject, info.is_control || scores.is_control(subject)),
                Cell::text(some(&info.modes, 4)),
                Cell::text(some(&info.backends, 4)),
                Cell::text(some(&info.prompt_hashes, 4)),
                Cell::text(some(&info.temperatures, 4)),
                Cell::text(some(&info.seeds, 6)),
                Cell::number(info.responses.to_string()),
            ]);
        }
    }
    let subjects = subjects.or_unavailable("no responses table in this run");
    Provenance {
        facts,
        judges,
        subjects,
    }
}
