//! Dialogue metrics (mode `dialogue`): how each doctor's dialogues went,
//! from `responses.dialogue`, with the same case bootstrap as every other
//! estimate (the cases resampled, a case's dialogues moving together).
//!
//! | `metric` | `level` / `group` | value |
//! | --- | --- | --- |
//! | `dialogue_coverage` | `overall`/`all`, `family`/`baseline` | mean information coverage (the case's patient findings and results the doctor elicited) |
//! | `dialogue_turns` | `overall`/`all`, `family`/`baseline` | mean doctor turns used |
//! | `dialogue_tests` | `overall`/`all`, `family`/`baseline` | mean tests requested |
//! | `dialogue_no_diagnosis` | `overall`/`all`, `family`/`baseline` | share of dialogues that reached the interaction limit without a diagnosis |
//! | `perception_confidence`, `perception_compliance`, `perception_consult_again` | `overall`/`all`, `family`/`baseline` | the patient agent's mean rating (1–10) of the doctor, over the dialogues it rated |
//!
//! | `delta_bias_<metric>` | as its metric | a biased subject (`<model>+bias=<id>`) minus the same subject without the bias, paired by case |
//!
//! Rows carry `judge = "none"` (no judge decides them); only `ok` rows count.

use std::collections::BTreeMap;
use std::path::Path;

use cfeval_schema::vocab::SubjectName;
use cfeval_schema::{DialogueOutcome, ResponseRow, ScoreRow, ShardStore, Table};
use serde::Deserialize;

use crate::error::Result;
use crate::stats::{Design, Options, Series, Statistic, bootstrap};

/// What the episode metrics (modes `dialogue` and `harness`) read of a
/// response: who answered and where it counts, and the mode's outcome (only
/// that mode's column is read; the other stays `None`).
#[derive(Deserialize)]
pub(crate) struct EpisodeRow {
    pub subject: String,
    pub is_control: bool,
    pub mode: String,
    pub case_id: String,
    pub variant_id: String,
    pub family: String,
    pub status: String,
    pub prompt_set: String,
    #[serde(default)]
    pub sections_read: Vec<String>,
    #[serde(default)]
    pub dialogue: Option<DialogueOutcome>,
    #[serde(default)]
    pub harness: Option<cfeval_schema::HarnessOutcome>,
}

/// The columns of [`EpisodeRow`] besides the outcome's.
const EPISODE_COLUMNS: [&str; 9] = [
    "subject",
    "is_control",
    "mode",
    "case_id",
    "variant_id",
    "family",
    "status",
    "prompt_set",
    "sections_read",
];

/// The quantities of one dialogue, in [`METRICS`] order; a rating the
/// patient did not give is left out of its mean (`None`).
fn quantities(outcome: &DialogueOutcome) -> [Option<f64>; METRIC_COUNT] {
    let rating =
        |pick: fn(&cfeval_schema::Perception) -> u32| outcome.perception.as_ref().map(|p| f64::from(pick(p)));
    [
        Some(outcome.coverage),
        Some(f64::from(outcome.turns)),
        Some(outcome.tests_requested.len() as f64),
        Some(f64::from(u8::from(outcome.outcome != "diagnosis"))),
        rating(|p| p.confidence),
        rating(|p| p.compliance),
        rating(|p| p.consult_again),
    ]
}

const METRIC_COUNT: usize = 7;

const METRICS: [&str; METRIC_COUNT] = [
    "dialogue_coverage",
    "dialogue_turns",
    "dialogue_tests",
    "dialogue_no_diagnosis",
    "perception_confidence",
    "perception_compliance",
    "perception_consult_again",
];

/// Per case: each quantity's sum and count.
pub(crate) type Cell = Vec<(f64, f64)>;

/// (subject, mode, group) → per case: the sums and counts of the quantities.
pub(crate) type Sums = BTreeMap<(String, String, &'static str), BTreeMap<String, Cell>>;

/// Adds one episode's quantities (`None`: left out of its mean) to the
/// case's cell of every group: `all`, and `baseline` for a baseline.
pub(crate) fn add_episode(
    sums: &mut Sums,
    subject: &str,
    mode: &str,
    case_id: &str,
    family: &str,
    values: &[Option<f64>],
) {
    let groups: &[&'static str] = if family == cfeval_schema::vocab::BASELINE {
        &["all", cfeval_schema::vocab::BASELINE]
    } else {
        &["all"]
    };
    for group in groups {
        let cell = sums
            .entry((subject.to_string(), mode.to_string(), group))
            .or_default()
            .entry(case_id.to_string())
            .or_insert_with(|| vec![(0.0, 0.0); values.len()]);
        for ((sum, count), value) in cell.iter_mut().zip(values) {
            if let Some(value) = value {
                *sum += value;
                *count += 1.0;
            }
        }
    }
}

/// The dialogue score rows of the run in `run_dir` (none when it has no
/// dialogues).
pub fn rows(run_dir: &Path, run: &str, options: &Options) -> Result<Vec<ScoreRow>> {
    episode_scores(run_dir, run, options, "dialogue", &METRICS, |row| {
        let outcome = row
            .dialogue
            .as_ref()
            .filter(|_| row.mode == "dialogue" && row.status == "ok")?;
        Some(quantities(outcome).to_vec())
    })
}

/// The score rows of an episode mode: every response row read with the
/// outcome column `outcome`, `quantities` giving the episodes that count
/// and their quantities (in `metrics` order), summed per case
/// ([`case_means`]).
pub(crate) fn episode_scores(
    run_dir: &Path,
    run: &str,
    options: &Options,
    outcome: &str,
    metrics: &[&str],
    quantities: impl Fn(&EpisodeRow) -> Option<Vec<Option<f64>>>,
) -> Result<Vec<ScoreRow>> {
    let Some(store) = ShardStore::open_existing(
        &run_dir.join(ResponseRow::NAME),
        ResponseRow::NAME,
        ResponseRow::schema(),
    )?
    else {
        return Ok(Vec::new());
    };
    let mut columns = EPISODE_COLUMNS.to_vec();
    columns.push(outcome);
    let mut sums: Sums = BTreeMap::new();
    let mut controls: BTreeMap<String, (bool, String)> = BTreeMap::new();
    for batch in store.read_columns::<EpisodeRow>(&columns)? {
        for row in batch? {
            let Some(values) = quantities(&row) else {
                continue;
            };
            controls
                .entry(row.subject.clone())
                .or_insert((row.is_control, row.prompt_set.clone()));
            add_episode(
                &mut sums,
                &row.subject,
                &row.mode,
                &row.case_id,
                &row.family,
                &values,
            );
        }
    }
    case_means(run, &sums, metrics, &controls, options)
}

/// The score rows of per-episode quantities summed per case in `sums`
/// (`metrics` names them in cell order): each a ratio of sums with the
/// case bootstrap, and a biased subject's paired delta against the same
/// subject without its bias (`delta_bias_<metric>`). Rows carry `judge =
/// "none"`; `controls` gives each subject's control flag and prompt set.
pub(crate) fn case_means(
    run: &str,
    sums: &Sums,
    metrics: &[&str],
    controls: &BTreeMap<String, (bool, String)>,
    options: &Options,
) -> Result<Vec<ScoreRow>> {
    if sums.is_empty() {
        return Ok(Vec::new());
    }
    // One stratum of every case with a dialogue, in one order for all.
    let mut cases: Vec<&String> = sums.values().flat_map(|by_case| by_case.keys()).collect();
    cases.sort();
    cases.dedup();
    let index: BTreeMap<&String, usize> = cases.iter().enumerate().map(|(at, case)| (*case, at)).collect();
    let mut series = Vec::new();
    let mut labels = Vec::new();
    for ((subject, mode, group), by_case) in sums {
        for (quantity, metric) in metrics.iter().enumerate() {
            let mut num = vec![0.0; cases.len()];
            let mut den = vec![0.0; cases.len()];
            for (case, cell) in by_case {
                (num[index[case]], den[index[case]]) = cell[quantity];
            }
            let dialogues = den.iter().sum::<f64>() as u64;
            if dialogues == 0 {
                continue;
            }
            let rated_cases = den.iter().filter(|count| **count > 0.0).count() as u64;
            series.push(Series { stratum: 0, num, den });
            labels.push((subject, mode, *group, *metric, dialogues, rated_cases));
        }
    }
    let design = Design::new(&[cases.len()], &series)?;
    let mut statistics: Vec<Statistic> = (0..series.len()).map(|at| Statistic::ratio(vec![at])).collect();
    // A biased subject against the same name without its bias, paired by
    // case (`delta_bias_<metric>`).
    let at: BTreeMap<(String, &str, &str, &str), usize> = labels
        .iter()
        .enumerate()
        .map(|(at, (subject, mode, group, metric, ..))| {
            (
                (SubjectName::canonical_of(subject), mode.as_str(), *group, *metric),
                at,
            )
        })
        .collect();
    let mut delta_names = Vec::new();
    for (index, (subject, mode, group, metric, dialogues, n_cases)) in labels.iter().enumerate() {
        let Some(unbiased) = SubjectName::parse(subject)
            .ok()
            .and_then(|name| name.without_bias())
        else {
            continue;
        };
        if let Some(&other) = at.get(&(unbiased, mode.as_str(), *group, *metric)) {
            statistics.push(Statistic::difference(&statistics[index], &statistics[other]));
            delta_names.push((
                *subject,
                *mode,
                *group,
                crate::scores::delta_metric("delta_bias", metric),
                *dialogues,
                *n_cases,
            ));
        }
    }
    let labels: Vec<_> = labels
        .into_iter()
        .map(|(subject, mode, group, metric, dialogues, n_cases)| {
            (subject, mode, group, metric.to_string(), dialogues, n_cases)
        })
        .chain(delta_names)
        .collect();
    let result = bootstrap(&design, &statistics, options)?;
    let mut out = Vec::new();
    for ((subject, mode, group, metric, dialogues, n_cases), estimate) in
        labels.into_iter().zip(&result.estimates)
    {
        if !estimate.value.is_finite() {
            continue;
        }
        let (is_control, prompt_set) = controls.get(subject).cloned().unwrap_or_default();
        for (method, interval) in [("percentile", estimate.percentile), ("bca", estimate.bca)] {
            out.push(ScoreRow {
                run: run.to_string(),
                subject: subject.clone(),
                is_control,
                mode: mode.clone(),
                judge: "none".into(),
                metric: metric.clone(),
                level: if group == "all" { "overall" } else { "family" }.into(),
                group: group.to_string(),
                value: estimate.value,
                ci_low: interval.map(|(low, _)| low),
                ci_high: interval.map(|(_, high)| high),
                ci_method: interval.map(|_| method.to_string()),
                n_tuples: dialogues,
                n_cases,
                prompt_set: Some(prompt_set.clone()),
            });
        }
    }
    Ok(out)
}
