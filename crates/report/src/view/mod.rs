//! The page as the templates see it: plain, serializable values built from
//! the run's data, every number already formatted, every missing piece a
//! "not available" note with its reason.

mod mode;
mod rubric;
mod sections;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use cfeval_schema::ScoreRow;
use serde::Serialize;

use crate::Settings;
use crate::data::RunData;
use crate::error::Result;
use crate::plots::{Figure, PALETTE, fixed};

pub use mode::ModeView;
pub(crate) use mode::p_value;
pub use sections::{AgentView, Agreement, BlindSpots, Provenance};

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Page {
    pub run: String,
    /// What wrote the report (`cfeval-report <version>`).
    pub generator: String,
    pub overview: Vec<Fact>,
    /// Set when the run has no scores at all.
    pub no_scores: Option<String>,
    /// Subjects the scores miss or only partly cover, with why (shown first).
    pub coverage: Vec<String>,
    pub modes: Vec<ModeView>,
    pub blind_spots: BlindSpots,
    pub agreement: Agreement,
    pub agent: AgentView,
    pub provenance: Provenance,
}

/// A labelled value.
#[derive(Debug, Clone, Serialize)]
pub struct Fact {
    pub label: String,
    pub value: String,
    /// Whether the value is an identifier (a hash, a name) shown as code.
    pub code: bool,
}

fn fact(label: &str, value: impl Into<String>) -> Fact {
    Fact {
        label: label.to_string(),
        value: value.into(),
        code: false,
    }
}

fn code_fact(label: &str, value: impl Into<String>) -> Fact {
    Fact {
        code: true,
        ..fact(label, value)
    }
}

/// One table cell; `control` marks a subject that is a control.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    pub text: String,
    pub control: bool,
    pub numeric: bool,
    /// A finding to stand out (a blind spot).
    pub flag: bool,
}

impl Cell {
    fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            control: false,
            numeric: false,
            flag: false,
        }
    }

    fn number(text: impl Into<String>) -> Self {
        Self {
            numeric: true,
            ..Self::text(text)
        }
    }

    /// An estimate with its interval, or `—`.
    fn estimate(row: Option<&ScoreRow>) -> Self {
        Self::number(row.map_or("—".to_string(), with_interval))
    }

    fn subject(subject: &str, control: bool) -> Self {
        Self {
            control,
            ..Self::text(subject)
        }
    }
}

/// A table, or why it is not available.
#[derive(Debug, Clone, Serialize)]
pub struct TableView {
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    pub unavailable: Option<String>,
}

impl TableView {
    fn new(caption: &str, header: &[&str]) -> Self {
        Self {
            caption: caption.to_string(),
            header: header.iter().map(|name| name.to_string()).collect(),
            rows: Vec::new(),
            unavailable: None,
        }
    }

    /// Marks the table not available (with `why`) when it has no rows.
    fn or_unavailable(mut self, why: &str) -> Self {
        if self.rows.is_empty() {
            self.unavailable = Some(why.to_string());
        }
        self
    }
}

/// A plot, or why it is not available.
#[derive(Debug, Clone, Serialize)]
pub struct PlotView {
    pub title: String,
    pub caption: String,
    pub figure: Option<Figure>,
    pub unavailable: Option<String>,
}

impl PlotView {
    fn drawn(title: &str, caption: String, figure: Figure) -> Self {
        Self {
            title: title.to_string(),
            caption,
            figure: Some(figure),
            unavailable: None,
        }
    }

    fn unavailable(title: &str, why: impl Into<String>) -> Self {
        Self {
            title: title.to_string(),
            caption: String::new(),
            figure: None,
            unavailable: Some(why.into()),
        }
    }
}

/// The score rows, looked up by their labels.
pub struct Scores<'a> {
    rows: &'a [ScoreRow],
    index: HashMap<[&'a str; 6], &'a ScoreRow>,
    controls: BTreeMap<&'a str, bool>,
    colors: BTreeMap<&'a str, (u8, u8, u8)>,
}

/// The metrics with one estimate per subject (as opposed to comparisons).
const ESTIMATES: [&str; 3] = ["css", "cms", "spurious_shift"];

impl<'a> Scores<'a> {
    fn new(rows: &'a [ScoreRow]) -> Self {
        let mut index = HashMap::with_capacity(rows.len());
        let mut controls: BTreeMap<&str, bool> = BTreeMap::new();
        for row in rows {
            index
                .entry([
                    row.subject.as_str(),
                    row.mode.as_str(),
                    row.judge.as_str(),
                    row.metric.as_str(),
                    row.level.as_str(),
                    row.group.as_str(),
                ])
                .or_insert(row);
            if row.subject != "all" {
                *controls.entry(row.subject.as_str()).or_default() |= row.is_control;
            }
        }
        let colors = controls
            .iter()
            .filter(|(_, control)| !**control)
            .enumerate()
            .map(|(position, (subject, _))| (*subject, PALETTE[position % PALETTE.len()]))
            .collect();
        Self {
            rows,
            index,
            controls,
            colors,
        }
    }

    /// The row of one estimate.
    fn get(
        &self,
        subject: &str,
        mode: &str,
        judge: &str,
        metric: &str,
        level: &str,
        group: &str,
    ) -> Option<&'a ScoreRow> {
        self.index
            .get(&[subject, mode, judge, metric, level, group])
            .copied()
    }

    fn is_control(&self, subject: &str) -> bool {
        self.controls.get(subject).copied().unwrap_or(false)
    }

    fn color(&self, subject: &str) -> (u8, u8, u8) {
        self.colors.get(subject).copied().unwrap_or(PALETTE[0])
    }

    /// Rows with `metric`, in table order.
    fn metric<'s>(&'s self, metric: &'s str) -> impl Iterator<Item = &'a ScoreRow> + 's {
        self.rows.iter().filter(move |row| row.metric == metric)
    }

    /// Subjects (not `all`): those under test by name, then the controls.
    fn subjects(&self) -> impl Iterator<Item = (&'a str, bool)> + '_ {
        let under_test = self.controls.iter().filter(|(_, control)| !**control);
        let controls = self.controls.iter().filter(|(_, control)| **control);
        under_test
            .chain(controls)
            .map(|(subject, control)| (*subject, *control))
    }

    /// Modes with per-subject estimates: single-shot first, then agent, then others.
    fn modes(&self) -> Vec<&'a str> {
        let modes: BTreeSet<&str> = self
            .rows
            .iter()
            .filter(|row| ESTIMATES.contains(&row.metric.as_str()))
            .map(|row| row.mode.as_str())
            .collect();
        let mut modes: Vec<&str> = modes.into_iter().collect();
        modes.sort_by_key(|mode| (mode_order(mode), *mode));
        modes
    }

    /// Judges with per-subject estimates in `mode`, the one covering the
    /// most estimates first (ties by name).
    fn judges(&self, mode: &str) -> Vec<&'a str> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for row in self.rows {
            if row.mode == mode && ESTIMATES.contains(&row.metric.as_str()) {
                *counts.entry(row.judge.as_str()).or_default() += 1;
            }
        }
        let mut judges: Vec<(&str, usize)> = counts.into_iter().collect();
        judges.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        judges.into_iter().map(|(judge, _)| judge).collect()
    }
}

fn mode_order(mode: &str) -> u8 {
    match mode {
        "single_shot" => 0,
        "agent" => 1,
        "dialogue" => 2,
        "harness" => 3,
        _ => 4,
    }
}

/// How a mode is titled.
fn mode_title(mode: &str) -> String {
    match mode {
        "single_shot" => "Single-shot".into(),
        "agent" => "Agent".into(),
        "dialogue" => "Dialogue".into(),
        "harness" => "Harness".into(),
        other => other.replace('_', " "),
    }
}

/// An `id`-safe form of a name.
fn slug(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

/// `0.412 [0.301, 0.522]`, or the value alone without an interval.
pub(crate) fn with_interval(row: &ScoreRow) -> String {
    match (row.ci_low, row.ci_high) {
        (Some(low), Some(high)) => format!("{} [{}, {}]", fixed(row.value, 3), fixed(low, 3), fixed(high, 3)),
        _ => fixed(row.value, 3),
    }
}

fn interval(row: &ScoreRow) -> Option<(f64, f64)> {
    Some((row.ci_low?, row.ci_high?))
}

/// A list of names, or `—` when empty.
fn listing<'a>(names: impl IntoIterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.into_iter().map(String::as_str).collect();
    if names.is_empty() {
        "—".into()
    } else {
        names.join(", ")
    }
}

/// Per subject with responses: a line when it has no CSS scores, or when
/// some of its responses are not `ok` (left out of every score); and the
/// names of those subjects.
fn coverage(data: &RunData) -> (Vec<String>, Vec<String>) {
    let mut lines = Vec::new();
    let mut incomplete = Vec::new();
    let Some(subjects) = &data.subjects else {
        return (lines, incomplete);
    };
    for (subject, info) in subjects {
        let scored = data
            .scores
            .iter()
            .any(|row| row.subject == *subject && row.metric == "css" && row.level == "overall");
        let not_ok: u64 = info.not_ok.values().sum();
        let breakdown = info
            .not_ok
            .iter()
            .map(|(status, count)| format!("{count} {status}"))
            .collect::<Vec<_>>()
            .join(", ");
        let share = if info.responses == 0 {
            0.0
        } else {
            100.0 * not_ok as f64 / info.responses as f64
        };
        let control = if info.is_control { " (control)" } else { "" };
        if !scored {
            incomplete.push(subject.clone());
            lines.push(if not_ok > 0 {
                format!(
                    "{subject}{control}: no scores — {not_ok} of {} responses ({}%) are not ok ({breakdown});                      rerun the pipeline (`cfeval run`) to retry them",
                    info.responses,
                    fixed(share, 1)
                )
            } else {
                format!("{subject}{control}: no scores — its responses were not judged and aggregated yet")
            });
        } else if not_ok > 0 {
            incomplete.push(subject.clone());
            lines.push(format!(
                "{subject}{control}: partly scored — {not_ok} of {} responses ({}%) are not ok ({breakdown}) \
                 and are left out of its scores (counted per family in the scores table)",
                info.responses,
                fixed(share, 1)
            ));
        }
    }
    (lines, incomplete)
}

/// Builds the page of `data`.
pub fn page(data: &RunData, settings: &Settings) -> Result<Page> {
    let scores = Scores::new(&data.scores);
    let mut modes = Vec::new();
    for mode in scores.modes() {
        modes.push(mode::build(&scores, mode)?);
    }
    let no_scores = data.scores.is_empty().then(|| {
        "this run has no scores yet: run `cfeval aggregate --run <run>` (or the pipeline's aggregate stage) first"
            .to_string()
    });
    let subjects: Vec<(&str, bool)> = scores.subjects().collect();
    let controls = subjects.iter().filter(|(_, control)| *control).count();
    let judges: BTreeSet<&str> = data
        .scores
        .iter()
        .filter(|row| ESTIMATES.contains(&row.metric.as_str()))
        .map(|row| row.judge.as_str())
        .collect();
    let pack = match &data.pack {
        Some((name, task)) if task == "diagnosis" => format!(
            "{name} ({task}: the subject names the diagnosis; CMS is the baseline answer's accuracy, exact 1, related 0.5)"
        ),
        Some((name, task)) => format!("{name} ({task})"),
        None => "oncology (treatment, built in)".to_string(),
    };
    let overview = vec![
        fact("Pack", pack),
        fact(
            "Subjects",
            format!("{} ({controls} of them controls)", subjects.len()),
        ),
        fact(
            "Modes",
            if modes.is_empty() {
                "—".to_string()
            } else {
                modes
                    .iter()
                    .map(|mode| mode.mode.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        ),
        fact(
            "Judges",
            if judges.is_empty() {
                "—".to_string()
            } else {
                judges.into_iter().collect::<Vec<_>>().join(", ")
            },
        ),
        fact(
            "Score rows",
            format!("{}", data.scores_provenance.as_ref().map_or(0, |p| p.rows)),
        ),
    ];
    let (coverage, incomplete) = coverage(data);
    let mut blind_spots = sections::blind_spots(&scores, settings);
    if !incomplete.is_empty() && blind_spots.items.is_empty() && blind_spots.table.unavailable.is_none() {
        // Never "no blind spots" about a subject the scores do not cover.
        blind_spots.none = Some(format!(
            "No blind spots among the tuples scored; this says nothing about what was not scored: {}              (see the top of the report).",
            incomplete.join(", ")
        ));
    }
    Ok(Page {
        run: data.run.clone(),
        generator: format!("cfeval-report {}", env!("CARGO_PKG_VERSION")),
        overview,
        no_scores,
        coverage,
        modes,
        blind_spots,
        agreement: sections::agreement(&scores),
        agent: sections::agent(&scores),
        provenance: sections::provenance(data, &scores, settings),
    })
}
