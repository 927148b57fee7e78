//! One streaming pass over `judgments`: per-case sums of every series, the
//! tuple-level verdicts the agreement statistics pair across judges, and the
//! count of every judgment that did not enter a score and why.
//!
//! A judgment enters CSS (or the spurious-shift rate, or CMS) only when it is
//! *decided*. The others are counted per (subject, mode, judge,
//! intervention) — see [`Outcome`]: a response was not `ok` and so was not
//! judged (its status carried by the judgment's `status`: `response_error`,
//! `empty`, `truncated`, `refused`, `bad_tool_args`; or a judgment
//! `finish_reason` column once the table has one), the judge failed
//! (`status = error`), or the judge abstained (label `uncertain`, or no
//! score).
//!
//! Only a projection of the columns is read, one batch at a time; what is
//! kept grows with subjects × modes × judges × interventions × cases (the
//! per-case sums) and with the number of CSS tuples (one packed `u64` per
//! tuple for κ), never with the text columns.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::path::Path;

use arrow_array::{Array, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array};
use cfeval_schema::{JudgmentRow, RESAMPLE, RESPONSE_ERROR, ResponseStatus, ShardStore, Table};

use crate::error::{Error, Result};

/// What a series measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Quantity {
    /// CSS score (0 / 0.5 / 1) of a tuple in a CSS family.
    Css,
    /// CMS coverage of a baseline response.
    Cms,
    /// 1 when a negative-control tuple shifted spuriously.
    Spurious,
    /// 1 when the decisive section was read yet the recommendation did not move.
    IntegrationFailure,
    /// 1 when the decisive section was not read.
    AccessFailure,
    /// 1 when a baseline re-sample's plan moved away from the first
    /// baseline answer (judgments `metric = resample`).
    Resample,
    /// The sample variance of a CSS tuple's scores over its repeated
    /// samples (one value per tuple with at least two decided samples).
    WithinTupleVar,
}

/// The identity of a series: one quantity of one (subject, mode, judge) on
/// one intervention.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesKey {
    pub subject: u32,
    pub mode: u32,
    pub judge: u32,
    pub quantity: Quantity,
    pub intervention: u32,
}

/// One (subject, mode, judge, intervention): where judgments are counted
/// by [`Outcome`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    pub subject: u32,
    pub mode: u32,
    pub judge: u32,
    pub intervention: u32,
}

/// Interned strings, in first-seen order.
#[derive(Debug, Default, Clone)]
pub struct Names {
    pub names: Vec<String>,
    index: HashMap<String, u32>,
}

impl Names {
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), id);
        id
    }

    pub fn get(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }

    /// Sorts the names; returns each old id's new id.
    fn sort(&mut self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.names.len() as u32).collect();
        order.sort_by(|&a, &b| self.names[a as usize].cmp(&self.names[b as usize]));
        let mut remap = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            remap[old as usize] = new as u32;
        }
        self.names = order
            .iter()
            .map(|&old| self.names[old as usize].clone())
            .collect();
        self.index = self
            .names
            .iter()
            .enumerate()
            .map(|(id, name)| (name.clone(), id as u32))
            .collect();
        remap
    }

    pub fn name(&self, id: u32) -> &str {
        &self.names[id as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}

/// A human label's key: (subject, mode, case_id, intervention).
pub type TupleKey = (String, String, String, String);

/// What became of one judgment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    /// Scored: it enters the estimates.
    Decided,
    /// The judge abstained: label `uncertain`, or no score without an error.
    Uncertain,
    /// The judge failed (`status = error`).
    JudgeError,
    /// The answer was cut off (finish reason `length` / `max_tokens`).
    Truncated,
    /// The model refused (finish reason `content_filter` / `refusal`).
    Refused,
    /// The answer had no text.
    Empty,
    /// The agent's tool arguments were not JSON.
    BadToolArgs,
    /// The subject's call failed (`response_error`).
    ResponseError,
}

impl Outcome {
    /// Every outcome that keeps a judgment out of the estimates, with the
    /// metric name its count rows carry.
    pub const EXCLUDED: [(Outcome, &'static str); 7] = [
        (Outcome::Uncertain, "uncertain"),
        (Outcome::Truncated, ResponseStatus::Truncated.as_str()),
        (Outcome::Refused, ResponseStatus::Refused.as_str()),
        (Outcome::Empty, ResponseStatus::Empty.as_str()),
        (Outcome::BadToolArgs, ResponseStatus::BadToolArgs.as_str()),
        (Outcome::ResponseError, RESPONSE_ERROR),
        (Outcome::JudgeError, "judge_error"),
    ];

    /// Whether the subject's answer, not the judge, kept the judgment out.
    pub fn is_unanswered(self) -> bool {
        matches!(
            self,
            Outcome::Truncated
                | Outcome::Refused
                | Outcome::Empty
                | Outcome::BadToolArgs
                | Outcome::ResponseError
        )
    }

    /// The outcome of a judgment from its `status`, `finish_reason` (when the
    /// table has one), `label` and `score`. An incomplete answer wins over
    /// everything (it is never judged as complete), then a judge error, then
    /// an abstention.
    pub fn classify(status: &str, finish_reason: Option<&str>, label: Option<&str>, scored: bool) -> Self {
        match (status, finish_reason) {
            ("truncated", _) | (_, Some("length" | "max_tokens" | "truncated")) => Outcome::Truncated,
            ("refused", _) | (_, Some("content_filter" | "refusal" | "refused")) => Outcome::Refused,
            ("empty", _) => Outcome::Empty,
            ("bad_tool_args", _) => Outcome::BadToolArgs,
            (RESPONSE_ERROR, _) => Outcome::ResponseError,
            ("error", _) if label != Some(UNCERTAIN) => Outcome::JudgeError,
            _ if label == Some(UNCERTAIN) || !scored => Outcome::Uncertain,
            _ => Outcome::Decided,
        }
    }
}

/// The label of a judge that abstained.
pub const UNCERTAIN: &str = "uncertain";

/// One CSS tuple's decided scores over its samples: (intervention, case,
/// count, sum, sum of squares).
type TupleScores = (u32, u32, f64, f64, f64);

/// Second pass, for runs with repeated samples: the sample variance of every
/// CSS tuple's scores over its decided samples, added per case as the
/// [`Quantity::WithinTupleVar`] series (a tuple with one decided sample adds
/// nothing). Only a few columns are read; what is held grows with the CSS
/// tuples of the run.
fn within_tuple_variance(store: &ShardStore, families: &Families, out: &mut Accumulated) -> Result<()> {
    let mut columns = vec![
        "judge",
        "subject",
        "mode",
        "case_id",
        "variant_id",
        "intervention",
        "family",
        "metric",
        "score",
        "label",
        "status",
    ];
    if JudgmentRow::schema().index_of(FINISH_REASON).is_ok() {
        columns.push(FINISH_REASON);
    }
    let mut tuples: HashMap<(u32, u32, u32, String), TupleScores> = HashMap::new();
    for batch in store.scan(Some(&columns))? {
        let batch = batch?;
        let judge = string_column(&batch, "judge")?;
        let subject = string_column(&batch, "subject")?;
        let mode = string_column(&batch, "mode")?;
        let case_id = string_column(&batch, "case_id")?;
        let variant_id = string_column(&batch, "variant_id")?;
        let intervention = string_column(&batch, "intervention")?;
        let family = string_column(&batch, "family")?;
        let metric = string_column(&batch, "metric")?;
        let label = string_column(&batch, "label")?;
        let status = string_column(&batch, "status")?;
        let finish_reason = finish_reason_column(&batch)?;
        let score = score_column(&batch)?;
        for row in 0..batch.num_rows() {
            let family_name = text(family, row).unwrap_or_default();
            if text(metric, row) != Some("css") || !families.css.iter().any(|name| name == family_name) {
                continue;
            }
            let outcome = Outcome::classify(
                text(status, row).unwrap_or_default(),
                finish_reason.and_then(|column| text(column, row)),
                text(label, row),
                !score.is_null(row),
            );
            if outcome != Outcome::Decided {
                continue;
            }
            // Every name was interned by the first pass.
            let id = |names: &Names, column: &StringArray| names.get(text(column, row).unwrap_or_default());
            let (Some(judge), Some(subject), Some(mode), Some(case), Some(intervention)) = (
                id(&out.judges, judge),
                id(&out.subjects, subject),
                id(&out.modes, mode),
                id(&out.cases, case_id),
                id(&out.interventions, intervention),
            ) else {
                continue;
            };
            let value = score.value(row);
            let key = (
                judge,
                subject,
                mode,
                text(variant_id, row).unwrap_or_default().to_string(),
            );
            let entry = tuples.entry(key).or_insert((intervention, case, 0.0, 0.0, 0.0));
            entry.2 += 1.0;
            entry.3 += value;
            entry.4 += value * value;
        }
    }
    for ((judge, subject, mode, _), (intervention, case, count, sum, squares)) in tuples {
        if count < 2.0 {
            continue;
        }
        let variance = ((squares - sum * sum / count) / (count - 1.0)).max(0.0);
        let key = SeriesKey {
            subject,
            mode,
            judge,
            quantity: Quantity::WithinTupleVar,
            intervention,
        };
        let cell = out.sums.entry(key).or_default().entry(case).or_insert((0.0, 0.0));
        cell.0 += variance;
        cell.1 += 1.0;
    }
    Ok(())
}

/// Judgments of one (subject, mode, judge, intervention) by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    pub decided: u64,
    pub uncertain: u64,
    pub judge_errors: u64,
    pub truncated: u64,
    pub refused: u64,
    pub empty: u64,
    pub bad_tool_args: u64,
    pub response_errors: u64,
}

impl Outcomes {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Decided => self.decided += 1,
            Outcome::Uncertain => self.uncertain += 1,
            Outcome::JudgeError => self.judge_errors += 1,
            Outcome::Truncated => self.truncated += 1,
            Outcome::Refused => self.refused += 1,
            Outcome::Empty => self.empty += 1,
            Outcome::BadToolArgs => self.bad_tool_args += 1,
            Outcome::ResponseError => self.response_errors += 1,
        }
    }

    /// The count of one outcome.
    pub fn count(&self, outcome: Outcome) -> u64 {
        match outcome {
            Outcome::Decided => self.decided,
            Outcome::Uncertain => self.uncertain,
            Outcome::JudgeError => self.judge_errors,
            Outcome::Truncated => self.truncated,
            Outcome::Refused => self.refused,
            Outcome::Empty => self.empty,
            Outcome::BadToolArgs => self.bad_tool_args,
            Outcome::ResponseError => self.response_errors,
        }
    }

    /// Every judgment, whatever became of it.
    pub fn total(&self) -> u64 {
        self.decided
            + self.uncertain
            + self.judge_errors
            + self.truncated
            + self.refused
            + self.empty
            + self.bad_tool_args
            + self.response_errors
    }

    /// Adds another cell's counts.
    pub fn merge(&mut self, other: &Outcomes) {
        self.decided += other.decided;
        self.uncertain += other.uncertain;
        self.judge_errors += other.judge_errors;
        self.truncated += other.truncated;
        self.refused += other.refused;
        self.empty += other.empty;
        self.bad_tool_args += other.bad_tool_args;
        self.response_errors += other.response_errors;
    }
}

/// One judge's verdict on a human-labelled tuple.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judged {
    pub judge: u32,
    pub score: f64,
    /// Its category on the CSS scale (see [`crate::stats::kappa`]).
    pub category: Option<usize>,
}

/// Everything the pass collects.
#[derive(Debug, Default)]
pub struct Accumulated {
    pub run: Option<String>,
    pub subjects: Names,
    pub modes: Names,
    pub judges: Names,
    pub cases: Names,
    pub interventions: Names,
    /// Family of each intervention (by intervention id).
    pub intervention_family: Vec<String>,
    pub is_control: BTreeMap<String, bool>,
    pub catalog_hashes: BTreeSet<String>,
    /// Prompt hashes seen per judge.
    pub prompts: BTreeMap<String, BTreeSet<String>>,
    /// The prompt sets of each (subject, mode)'s responses.
    pub prompt_sets: BTreeMap<(String, String), BTreeSet<String>>,
    /// Per series, per case: (sum, count).
    pub sums: HashMap<SeriesKey, HashMap<u32, (f64, f64)>>,
    /// CSS tuples: packed per-judge categories (4 bits per judge, 0 = none).
    pub tuples: HashMap<u64, u64>,
    /// Judge verdicts on the human-labelled tuples (subjects under test only).
    pub labelled: HashMap<TupleKey, Vec<Judged>>,
    /// Judgments by outcome, every metric and family.
    pub outcomes: HashMap<CellKey, Outcomes>,
    pub rows: u64,
    /// Rows whose judge failed (`status = error`).
    pub judge_errors: u64,
    /// Rows where the judge abstained.
    pub uncertain: u64,
    /// Rows of a truncated answer.
    pub truncated: u64,
    /// Rows of a refused answer.
    pub refused: u64,
    /// Rows of an empty answer, of broken tool arguments, of a failed call.
    pub empty: u64,
    pub bad_tool_args: u64,
    pub response_errors: u64,
    /// Rows of a metric or family the stage does not score.
    pub ignored: u64,
    /// Rows of rubric judges (scored apart, by [`crate::rubric`]).
    pub rubric: u64,
    /// The highest sample number seen (0: every tuple answered once).
    pub max_sample: u32,
}

/// Which families count how.
#[derive(Debug, Clone)]
pub struct Families {
    pub css: Vec<String>,
    pub control: String,
}

const JUDGES_PACKED: u32 = 16;

fn string_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a StringArray> {
    batch
        .column_by_name(name)
        .and_then(|column| column.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| Error::Column { column: name.into() })
}

fn bool_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a BooleanArray> {
    batch
        .column_by_name(name)
        .and_then(|column| column.as_any().downcast_ref::<BooleanArray>())
        .ok_or_else(|| Error::Column { column: name.into() })
}

fn score_column(batch: &RecordBatch) -> Result<&Float64Array> {
    batch
        .column_by_name("score")
        .and_then(|column| column.as_any().downcast_ref::<Float64Array>())
        .ok_or_else(|| Error::Column {
            column: "score".into(),
        })
}

/// The `finish_reason` column, when the table has one.
fn finish_reason_column(batch: &RecordBatch) -> Result<Option<&StringArray>> {
    match batch.column_by_name(FINISH_REASON) {
        Some(_) => Ok(Some(string_column(batch, FINISH_REASON)?)),
        None => Ok(None),
    }
}

fn u32_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a UInt32Array> {
    batch
        .column_by_name(name)
        .and_then(|column| column.as_any().downcast_ref::<UInt32Array>())
        .ok_or_else(|| Error::Column { column: name.into() })
}

fn text(column: &StringArray, row: usize) -> Option<&str> {
    (!column.is_null(row)).then(|| column.value(row))
}

fn flag(column: &BooleanArray, row: usize) -> Option<bool> {
    (!column.is_null(row)).then(|| column.value(row))
}

/// A cache in front of an interner for runs of equal values.
struct Last {
    value: String,
    id: u32,
}

fn intern_cached(names: &mut Names, last: &mut Option<Last>, value: &str) -> u32 {
    if let Some(last) = last
        && last.value == value
    {
        return last.id;
    }
    let id = names.intern(value);
    *last = Some(Last {
        value: value.to_string(),
        id,
    });
    id
}

const COLUMNS: [&str; 18] = [
    "run",
    "judge",
    "subject",
    "is_control",
    "mode",
    "case_id",
    "variant_id",
    "sample",
    "intervention",
    "family",
    "catalog_hash",
    "metric",
    "score",
    "label",
    "prompt_hash",
    "prompt_set",
    "changed",
    "status",
];

/// A column read when the judgments table has it (a later schema version).
const FINISH_REASON: &str = "finish_reason";

/// Streams the judgments of `run_dir` and accumulates them.
pub fn accumulate(run_dir: &Path, families: &Families, labelled: &BTreeSet<TupleKey>) -> Result<Accumulated> {
    let store = ShardStore::open_table::<JudgmentRow>(run_dir)?;
    let mut columns: Vec<&str> = COLUMNS.to_vec();
    columns.push("decisive_section_read");
    if JudgmentRow::schema().index_of(FINISH_REASON).is_ok() {
        columns.push(FINISH_REASON);
    }
    debug_assert!(
        columns
            .iter()
            .all(|name| JudgmentRow::schema().index_of(name).is_ok())
    );
    let mut state = Accumulator::new(families, labelled);
    for batch in store.scan(Some(&columns))? {
        state.batch(&batch?)?;
    }
    let mut out = state.out;
    if out.rows == 0 {
        return Err(Error::NoJudgments {
            run: run_dir.display().to_string(),
            path: store.dir().to_path_buf(),
        });
    }
    if out.max_sample > 0 {
        within_tuple_variance(&store, families, &mut out)?;
    }
    out.prompts.retain(|_, hashes| !hashes.is_empty());
    out.canonicalize();
    Ok(out)
}

struct Accumulator<'a> {
    families: &'a Families,
    labelled: &'a BTreeSet<TupleKey>,
    out: Accumulated,
    last_subject: Option<Last>,
    last_mode: Option<Last>,
    last_judge: Option<Last>,
    last_case: Option<Last>,
    last_intervention: Option<Last>,
}

impl<'a> Accumulator<'a> {
    fn new(families: &'a Families, labelled: &'a BTreeSet<TupleKey>) -> Self {
        Self {
            families,
            labelled,
            out: Accumulated::default(),
            last_subject: None,
            last_mode: None,
            last_judge: None,
            last_case: None,
            last_intervention: None,
        }
    }

    fn add(&mut self, key: SeriesKey, case: u32, value: f64) {
        let cell = self
            .out
            .sums
            .entry(key)
            .or_default()
            .entry(case)
            .or_insert((0.0, 0.0));
        cell.0 += value;
        cell.1 += 1.0;
    }

    fn batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let run = string_column(batch, "run")?;
        let judge = string_column(batch, "judge")?;
        let subject = string_column(batch, "subject")?;
        let is_control = bool_column(batch, "is_control")?;
        let mode = string_column(batch, "mode")?;
        let case_id = string_column(batch, "case_id")?;
        let variant_id = string_column(batch, "variant_id")?;
        let intervention = string_column(batch, "intervention")?;
        let family = string_column(batch, "family")?;
        let catalog_hash = string_column(batch, "catalog_hash")?;
        let metric = string_column(batch, "metric")?;
        let label = string_column(batch, "label")?;
        let prompt_hash = string_column(batch, "prompt_hash")?;
        let prompt_set = string_column(batch, "prompt_set")?;
        let changed = bool_column(batch, "changed")?;
        let status = string_column(batch, "status")?;
        let finish_reason = finish_reason_column(batch)?;
        let decisive = bool_column(batch, "decisive_section_read")?;
        let sample = u32_column(batch, "sample")?;
        let score = score_column(batch)?;
        for row in 0..batch.num_rows() {
            self.out.rows += 1;
            let sample = sample.value(row);
            self.out.max_sample = self.out.max_sample.max(sample);
            if self.out.run.is_none() {
                self.out.run = text(run, row).map(str::to_string);
            }
            if let Some(hash) = text(catalog_hash, row)
                && !self.out.catalog_hashes.contains(hash)
            {
                self.out.catalog_hashes.insert(hash.to_string());
            }
            let judge_name = text(judge, row).unwrap_or_default();
            // A rubric judge scores responses, not pairs: its rows are
            // aggregated apart (`crate::rubric`).
            if judge_name.starts_with(crate::rubric::PREFIX) {
                self.out.rubric += 1;
                continue;
            }
            let judge_id = intern_cached(&mut self.out.judges, &mut self.last_judge, judge_name);
            if let Some(hash) = text(prompt_hash, row) {
                let hashes = self.out.prompts.entry(judge_name.to_string()).or_default();
                if !hashes.contains(hash) {
                    hashes.insert(hash.to_string());
                }
            }
            let subject_name = text(subject, row).unwrap_or_default();
            let subject_id = intern_cached(&mut self.out.subjects, &mut self.last_subject, subject_name);
            if subject_id as usize == self.out.is_control.len()
                && !self.out.is_control.contains_key(subject_name)
            {
                self.out
                    .is_control
                    .insert(subject_name.to_string(), flag(is_control, row).unwrap_or(false));
            }
            let control = self.out.is_control.get(subject_name).copied().unwrap_or(false);
            let mode_name = text(mode, row).unwrap_or_default();
            let mode_id = intern_cached(&mut self.out.modes, &mut self.last_mode, mode_name);
            if let Some(set) = text(prompt_set, row) {
                let key = (subject_name.to_string(), mode_name.to_string());
                if self
                    .out
                    .prompt_sets
                    .get(&key)
                    .is_none_or(|sets| !sets.contains(set))
                {
                    self.out
                        .prompt_sets
                        .entry(key)
                        .or_default()
                        .insert(set.to_string());
                }
            }
            let intervention_name = text(intervention, row).unwrap_or_default();
            let intervention_id = intern_cached(
                &mut self.out.interventions,
                &mut self.last_intervention,
                intervention_name,
            );
            let family_name = text(family, row).unwrap_or_default();
            if intervention_id as usize == self.out.intervention_family.len() {
                self.out.intervention_family.push(family_name.to_string());
            }
            let key = |quantity| SeriesKey {
                subject: subject_id,
                mode: mode_id,
                judge: judge_id,
                quantity,
                intervention: intervention_id,
            };
            let label_text = text(label, row);
            let outcome = Outcome::classify(
                text(status, row).unwrap_or_default(),
                finish_reason.and_then(|column| text(column, row)),
                label_text,
                !score.is_null(row),
            );
            let cell = CellKey {
                subject: subject_id,
                mode: mode_id,
                judge: judge_id,
                intervention: intervention_id,
            };
            self.out.outcomes.entry(cell).or_default().add(outcome);
            match outcome {
                Outcome::Decided => {}
                Outcome::Uncertain => {
                    self.out.uncertain += 1;
                    continue;
                }
                Outcome::JudgeError => {
                    self.out.judge_errors += 1;
                    continue;
                }
                Outcome::Truncated => {
                    self.out.truncated += 1;
                    continue;
                }
                Outcome::Refused => {
                    self.out.refused += 1;
                    continue;
                }
                Outcome::Empty => {
                    self.out.empty += 1;
                    continue;
                }
                Outcome::BadToolArgs => {
                    self.out.bad_tool_args += 1;
                    continue;
                }
                Outcome::ResponseError => {
                    self.out.response_errors += 1;
                    continue;
                }
            }
            let value = score.value(row);
            let case_name = text(case_id, row).unwrap_or_default();
            let case = intern_cached(&mut self.out.cases, &mut self.last_case, case_name);
            match text(metric, row).unwrap_or_default() {
                "cms" => self.add(key(Quantity::Cms), case, value),
                "css" if self.families.css.iter().any(|name| name == family_name) => {
                    self.add(key(Quantity::Css), case, value);
                    if let Some(read) = flag(decisive, row) {
                        let integration = read && flag(changed, row) == Some(false);
                        self.add(key(Quantity::AccessFailure), case, f64::from(u8::from(!read)));
                        self.add(
                            key(Quantity::IntegrationFailure),
                            case,
                            f64::from(u8::from(integration)),
                        );
                    }
                    // Agreement is measured on the subjects under test only.
                    if control {
                        continue;
                    }
                    let category = crate::stats::kappa::css_label_category(label_text, value);
                    self.record_tuple(
                        judge_id,
                        category,
                        [
                            subject_name,
                            mode_name,
                            case_name,
                            text(variant_id, row).unwrap_or_default(),
                        ],
                        sample,
                    );
                    // Raters label a tuple's first sample.
                    if !self.labelled.is_empty() && sample == 0 {
                        let tuple: TupleKey = (
                            subject_name.to_string(),
                            mode_name.to_string(),
                            case_name.to_string(),
                            intervention_name.to_string(),
                        );
                        if self.labelled.contains(&tuple) {
                            self.out.labelled.entry(tuple).or_default().push(Judged {
                                judge: judge_id,
                                score: value,
                                category,
                            });
                        }
                    }
                }
                "css" if family_name == self.families.control => {
                    let spurious = match label_text {
                        Some(label) => label == "shifted_spuriously",
                        None => flag(changed, row) == Some(true),
                    };
                    self.add(key(Quantity::Spurious), case, f64::from(u8::from(spurious)));
                }
                RESAMPLE => {
                    let shifted = match label_text {
                        Some(label) => label == "shifted_spuriously",
                        None => flag(changed, row) == Some(true),
                    };
                    self.add(key(Quantity::Resample), case, f64::from(u8::from(shifted)));
                }
                _ => self.out.ignored += 1,
            }
        }
        Ok(())
    }

    fn record_tuple(&mut self, judge: u32, category: Option<usize>, parts: [&str; 4], sample: u32) {
        let Some(category) = category else {
            return;
        };
        if judge >= JUDGES_PACKED {
            return;
        }
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        parts.hash(&mut hasher);
        sample.hash(&mut hasher);
        let slot = self.out.tuples.entry(hasher.finish()).or_insert(0);
        let shift = 4 * judge;
        *slot = (*slot & !(0xF << shift)) | (((category as u64) + 1) << shift);
    }
}

impl Accumulated {
    /// Renumbers every interned name in sorted order, so that what follows
    /// (strata, resample units, ranks, ties) never depends on the order the
    /// rows were read in: a resumed or sharded run gives the same scores.
    fn canonicalize(&mut self) {
        let subjects = self.subjects.sort();
        let modes = self.modes.sort();
        let judges = self.judges.sort();
        let cases = self.cases.sort();
        let interventions = self.interventions.sort();
        let families = std::mem::take(&mut self.intervention_family);
        let mut reordered = vec![String::new(); families.len()];
        for (old, family) in families.into_iter().enumerate() {
            reordered[interventions[old] as usize] = family;
        }
        self.intervention_family = reordered;
        let renumber = |key: SeriesKey| SeriesKey {
            subject: subjects[key.subject as usize],
            mode: modes[key.mode as usize],
            judge: judges[key.judge as usize],
            quantity: key.quantity,
            intervention: interventions[key.intervention as usize],
        };
        self.sums = std::mem::take(&mut self.sums)
            .into_iter()
            .map(|(key, cells)| {
                let key = renumber(key);
                let cells = cells
                    .into_iter()
                    .map(|(case, cell)| (cases[case as usize], cell))
                    .collect();
                (key, cells)
            })
            .collect();
        for packed in self.tuples.values_mut() {
            let old = *packed;
            let mut new = 0u64;
            for (judge, &renumbered) in judges.iter().enumerate().take(JUDGES_PACKED as usize) {
                let category = (old >> (4 * judge)) & 0xF;
                if category > 0 && renumbered < JUDGES_PACKED {
                    new |= category << (4 * renumbered);
                }
            }
            *packed = new;
        }
        for verdicts in self.labelled.values_mut() {
            for verdict in verdicts.iter_mut() {
                verdict.judge = judges[verdict.judge as usize];
            }
        }
        self.outcomes = std::mem::take(&mut self.outcomes)
            .into_iter()
            .map(|(key, outcomes)| {
                let key = CellKey {
                    subject: subjects[key.subject as usize],
                    mode: modes[key.mode as usize],
                    judge: judges[key.judge as usize],
                    intervention: interventions[key.intervention as usize],
                };
                (key, outcomes)
            })
            .collect();
    }

    /// CSS category pairs of two judges over the tuples of the subjects
    /// under test both scored (categories of [`crate::stats::kappa::css_kappa`]).
    pub fn judge_pairs(&self, a: u32, b: u32) -> Vec<(usize, usize)> {
        if a >= JUDGES_PACKED || b >= JUDGES_PACKED {
            return Vec::new();
        }
        let mut pairs: Vec<(usize, usize)> = self
            .tuples
            .values()
            .filter_map(|&packed| {
                let x = (packed >> (4 * a)) & 0xF;
                let y = (packed >> (4 * b)) & 0xF;
                (x > 0 && y > 0).then(|| ((x - 1) as usize, (y - 1) as usize))
            })
            .collect();
        pairs.sort_unstable();
        pairs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_put_incomplete_answers_first_then_errors_then_abstentions() {
        let classify = Outcome::classify;
        assert_eq!(
            classify("ok", None, Some("updated_correct"), true),
            Outcome::Decided
        );
        assert_eq!(classify("ok", None, Some(UNCERTAIN), false), Outcome::Uncertain);
        // An abstention with a score, or no score without a label.
        assert_eq!(classify("ok", None, Some(UNCERTAIN), true), Outcome::Uncertain);
        assert_eq!(classify("ok", None, None, false), Outcome::Uncertain);
        assert_eq!(classify("error", None, None, false), Outcome::JudgeError);
        assert_eq!(
            classify("error", None, Some(UNCERTAIN), false),
            Outcome::Uncertain
        );
        // A cut-off or refused answer is never judged as complete.
        assert_eq!(
            classify("truncated", None, Some("ignored"), true),
            Outcome::Truncated
        );
        assert_eq!(
            classify("ok", Some("length"), Some("ignored"), true),
            Outcome::Truncated
        );
        assert_eq!(
            classify("ok", Some("max_tokens"), None, false),
            Outcome::Truncated
        );
        assert_eq!(
            classify("error", Some("content_filter"), None, false),
            Outcome::Refused
        );
        assert_eq!(classify("refused", None, None, false), Outcome::Refused);
        assert_eq!(classify("empty", None, None, false), Outcome::Empty);
        assert_eq!(classify("bad_tool_args", None, None, false), Outcome::BadToolArgs);
        assert_eq!(
            classify("response_error", None, None, false),
            Outcome::ResponseError
        );
        assert!(Outcome::ResponseError.is_unanswered() && !Outcome::JudgeError.is_unanswered());
        assert_eq!(
            classify("ok", Some("stop"), Some("ignored"), true),
            Outcome::Decided
        );
        let mut outcomes = Outcomes::default();
        for outcome in [
            Outcome::Decided,
            Outcome::Uncertain,
            Outcome::Uncertain,
            Outcome::Refused,
        ] {
            outcomes.add(outcome);
        }
        assert_eq!(outcomes.count(Outcome::Uncertain), 2);
        assert_eq!(outcomes.total(), 4);
    }
}
