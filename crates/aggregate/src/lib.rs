//! The aggregate stage: judgments in, scores (long format, one row per
//! estimate) and the report out.
//!
//! [`run`] streams the run's `judgments` once ([`accumulate`]), keeping
//! per-case sums of every series — one quantity (CSS, CMS, spurious shift,
//! integration/access failure) of one (subject, mode, judge, intervention) —
//! then bootstraps every estimate over one shared set of resamples
//! ([`stats`]), derives the comparisons and agreement statistics
//! ([`scores`], [`human`]) and writes them all as rows of the `scores` table.
//!
//! - **The bootstrap resamples cases**, jointly across families
//!   ([`stats::Resampling::Cases`]): a replicate draws case ids once and
//!   every family, intervention, subject, mode and judge — CMS as well as
//!   CSS — uses that draw, so a case's tuples move together and every
//!   comparison is paired. (The earlier per-family stratified design is
//!   [`stats::Resampling::FamilyStrata`]; it ignores the correlation between
//!   a case's families and its intervals of overall CSS under-cover: see
//!   `BENCHMARKS.md`.)
//! - CSS is over the CSS families (A–E) only; the spurious-shift rate on the
//!   negative-control family N sits beside it and is never pooled into it.
//! - Only *decided* judgments enter an estimate: the judge's abstentions
//!   (label `uncertain`, or no score), judge errors and the judgments of
//!   responses that are not `ok` (a failed call, or an empty, truncated,
//!   refused or bad-tool-arguments reply) are left out and counted.
//! - **Repeated samples** (a subject answering each tuple k times, column
//!   `sample`): every sample's pair verdict enters the case sums, so a case's
//!   CSS is the mean over its tuples and samples, and the case bootstrap
//!   carries the within-tuple variance into every interval. The variance
//!   itself (`css_within_tuple_var`), the rate at which a baseline re-sample
//!   moves with nothing changed (`resample_shift`) and CSS net of it
//!   (`css_net_resample`) are reported beside CSS. κ pairs judges sample by
//!   sample; human labels are matched to sample 0.
//! - Controls (subjects `control/…`, `is_control`) get their own estimates
//!   but take no part in ranks, rank probabilities, Spearman ρ, κ or blind
//!   spots.
//! - Every bootstrap estimate gets two rows, `ci_method = percentile` and
//!   `bca`.
//!
//! # Metrics
//!
//! | `metric` | `level` / `group` | value |
//! | --- | --- | --- |
//! | `css` | `overall`/`all`, `family`/A–E, `intervention`/id | mean CSS over decided tuples (tuple-weighted) |
//! | `css_balanced` | `overall`/`all` | mean of the family means of CSS (each family weighs the same) |
//! | `cms` | `overall`/`all` | mean CMS of the baseline answers |
//! | `spurious_shift` | `family`/N, `intervention`/id | share of negative-control pairs that moved |
//! | `resample_shift` | `overall`/`all` | repeated samples: share of baseline re-samples whose plan moved from the first baseline answer (nothing changed) |
//! | `css_net_resample` | `overall`/`all` | repeated samples: `css` − `resample_shift`, paired (conservative: every spontaneous change counted as credited) |
//! | `css_within_tuple_var` | `overall`/`all`, `family`/A–E | repeated samples: mean over tuples of the sample variance of a tuple's CSS scores |
//! | `integration_failure`, `access_failure` | `overall`, `family` | agents: decisive section read but not acted on / not read |
//! | `delta_agent_minus_single_shot[_cms, _css_balanced, _spurious_shift]` | as the metric | paired difference agent − single-shot |
//! | `uncertain`, `truncated`, `refused`, `empty`, `bad_tool_args`, `response_error`, `judge_error` | `overall`/`all` (CSS families), `family`/any | count of judgments left out (the response statuses: tuples the subject did not answer usably); `n_tuples` = all judgments of the cell |
//! | `rank_cms`, `rank_css`, `rank_swap` | `comparison`/`all` | ranks among the subjects under test (1 = best), swap = CSS rank − CMS rank |
//! | `rank_first_cms`, `rank_first_css` | `comparison`/`all` | P(the subject ranks first) over the resamples (ties share) |
//! | `rank_swap_probability` | `comparison`, subject/`all` | P(the subject's CSS rank ≠ its CMS rank) |
//! | `rank_swap_probability` | `comparison`, subject/other subject | P(CMS and CSS order the pair differently) |
//! | `rank_swap_probability` | `comparison`, `all`/`all` | P(the CSS ranking differs from the CMS ranking) |
//! | `spearman_cms_css` (+ `_p`) | `comparison`/`all` | Spearman ρ of CMS and CSS over the subjects under test, bootstrap interval; exact p |
//! | `blind_spot` | `comparison`/family | 1 when every subject under test's upper CSS bound is below the threshold |
//! | `best_css`, `css_upper_max` | `comparison`/family | best subject's CSS with its interval; the largest upper bound |
//! | `blind_spot_judges`, `blind_spot_agreed` | `comparison`/family, judge `all` | judges flagging the family; 1 when at least two do |
//! | `spearman_judges` (+ `_p`) | `comparison`/`all` | cross-judge ρ of CSS over the subjects under test |
//! | `kappa`, `kappa_linear`, `kappa_quadratic` | `comparison`/`all` | Cohen's κ between raters on the CSS scale (0, ½, 1 ordered; wrong direction its own category) |
//! | `human_failure_rate`, `judge_failure_rate` | `family` | share of CSS = 0 on the human-labelled tuples |
//! | `dialogue_coverage`, `dialogue_turns`, `dialogue_tests`, `dialogue_no_diagnosis` | `overall`/`all`, `family`/`baseline` | mode `dialogue`: how the dialogues went ([`dialogue`], from `responses`; judge `none`) |
//! | `rubric.<d>`, `rubric.composite`, `rubric.safety_flag`, `rubric_gap_updated_minus_ignored`, … | see [`rubric`] | the rubric judges' scores, their link to CSS, judge–human agreement |
//!
//! Rank probabilities carry the number of usable resamples in `n_tuples`.
//!
//! [`compare`] pairs two runs of the same catalog (`cfeval compare`): per
//! tuple fixed / regressed / same, paired differences with the same case
//! bootstrap, and the exact McNemar test.
//!
//! [`power`] plans a study's number of cases (`cfeval power`): by
//! simulating studies resampled from a pilot run's cases (or from a stated
//! difference and SD), per family and overall, the smallest number with the
//! target power for a paired difference of two subjects or one subject
//! against a threshold.

pub mod accumulate;
pub mod compare;
pub mod dialogue;
pub mod error;
pub mod harness;
pub mod human;
pub mod power;
pub mod rubric;
pub mod scores;
pub mod stats;
pub mod synthetic;

use std::path::{Path, PathBuf};

use cfeval_schema::{CFEVAL_VERSION, JudgmentRow, Provenance, ScoreRow, ShardStore, Table, ids};
use serde::Serialize;

pub use error::{Error, Result};

/// Settings of the aggregate stage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Bootstrap resamples (default 10,000).
    pub resamples: usize,
    /// Bootstrap seed.
    pub seed: u64,
    /// Confidence level of every interval (default 0.95).
    pub level: f64,
    /// A family is a blind spot when every subject under test's upper
    /// interval bound of its CSS is below this.
    pub blind_spot_threshold: f64,
    /// What a bootstrap replicate resamples (cases jointly across families).
    pub resampling: stats::Resampling,
    /// The families CSS is computed over.
    pub css_families: Vec<String>,
    /// The negative-control family (spurious-shift rate).
    pub control_family: String,
    /// Optional human labels (CSV) to compare the judges with.
    pub human_labels: Option<PathBuf>,
    /// Optional human rubric scores (CSV, see [`rubric::read_labels`]) to
    /// compare the rubric judges with.
    pub rubric_labels: Option<PathBuf>,
    /// Aggregate judgments made under different catalogs.
    pub allow_mixed_catalogs: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            resamples: 10_000,
            seed: 0,
            level: 0.95,
            blind_spot_threshold: 0.2,
            resampling: stats::Resampling::Cases,
            css_families: ["A", "B", "C", "D", "E"].map(String::from).to_vec(),
            control_family: "N".into(),
            human_labels: None,
            rubric_labels: None,
            allow_mixed_catalogs: false,
        }
    }
}

impl Config {
    fn validate(&self) -> Result<()> {
        if self.resamples == 0 {
            return Err(Error::Config("resamples must be at least 1".into()));
        }
        if !(self.level > 0.0 && self.level < 1.0) {
            return Err(Error::Config(format!("level {} is not in (0, 1)", self.level)));
        }
        if self.css_families.contains(&self.control_family) {
            return Err(Error::Config(format!(
                "the control family {} cannot also be a CSS family",
                self.control_family
            )));
        }
        Ok(())
    }
}

/// What one aggregate run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The scores were already complete for these judgments and settings:
    /// nothing was recomputed (the other counts are then zero).
    pub skipped: bool,
    pub run: String,
    pub judgments: u64,
    pub judge_errors: u64,
    /// Judgments where the judge abstained (left out of every estimate).
    pub uncertain: u64,
    /// Judgments of truncated answers (left out).
    pub truncated: u64,
    /// Judgments of refused answers (left out).
    pub refused: u64,
    /// Judgments of empty answers, broken tool arguments and failed calls
    /// (left out).
    pub empty: u64,
    pub bad_tool_args: u64,
    pub response_errors: u64,
    pub ignored: u64,
    pub estimates: usize,
    pub score_rows: usize,
    pub scores_dir: PathBuf,
    pub catalog_hashes: Vec<String>,
    pub subjects: Vec<String>,
    pub controls: Vec<String>,
    pub judges: Vec<String>,
    pub modes: Vec<String>,
}

/// The unit of work the scores are committed under (one per run).
pub const UNIT: &str = cfeval_schema::units::AGGREGATE;

/// Everything the stage computed, before it is written.
#[derive(Debug, Clone)]
pub struct Computed {
    pub rows: Vec<ScoreRow>,
    pub report: Report,
    /// Judge → prompt hashes seen.
    pub prompts: Vec<(String, Vec<String>)>,
}

/// Computes the score rows of the run in `run_dir` without writing them.
#[tracing::instrument(skip_all, fields(stage = "aggregate"))]
pub fn compute(config: &Config, run_dir: &Path) -> Result<Computed> {
    config.validate()?;
    let labels = match &config.human_labels {
        Some(path) => human::read_labels(path)?,
        None => Vec::new(),
    };
    let families = accumulate::Families {
        css: config.css_families.clone(),
        control: config.control_family.clone(),
    };
    let accumulated = accumulate::accumulate(run_dir, &families, &human::keys(&labels))?;
    let mut lock = cfeval_schema::lineage::RowCatalogLock::new(None, config.allow_mixed_catalogs);
    for hash in &accumulated.catalog_hashes {
        lock.check(hash).map_err(|conflict| match conflict {
            cfeval_schema::lineage::CatalogConflict::Mixed { first, second }
            | cfeval_schema::lineage::CatalogConflict::Lock {
                expected: first,
                found: second,
            } => Error::MixedCatalogs { first, second },
        })?;
    }
    let run = accumulated.run.clone().unwrap_or_default();
    let layout = scores::layout(&accumulated, config.resampling)?;
    let specs = scores::specs(
        &accumulated,
        &layout,
        &scores::Families {
            css: &config.css_families,
            control: &config.control_family,
        },
    );
    let statistics: Vec<stats::Statistic> = specs.iter().map(|spec| spec.statistic.clone()).collect();
    let options = stats::Options {
        resamples: config.resamples,
        seed: config.seed,
        level: config.level,
    };
    let result = stats::bootstrap(&layout.design, &statistics, &options)?;
    let mut rows = scores::estimate_rows(&run, &accumulated, &layout, &specs, &result);
    rows.extend(scores::comparison_rows(
        &run,
        &accumulated,
        &specs,
        &result,
        &scores::CompareSettings {
            css_families: &config.css_families,
            blind_spot_threshold: config.blind_spot_threshold,
            level: config.level,
        },
    ));
    rows.extend(scores::outcome_rows(&run, &accumulated, &config.css_families));
    rows.extend(human::rows(&run, &accumulated, &labels, &options));
    rows.extend(dialogue::rows(run_dir, &run, &options)?);
    rows.extend(harness::rows(run_dir, &run, &options)?);
    let rubric_labels = match &config.rubric_labels {
        Some(path) => rubric::read_labels(path)?,
        None => Vec::new(),
    };
    rows.extend(rubric::rows(
        run_dir,
        &run,
        &config.css_families,
        &rubric_labels,
        &options,
    )?);
    let report = Report {
        skipped: false,
        run,
        judgments: accumulated.rows,
        judge_errors: accumulated.judge_errors,
        uncertain: accumulated.uncertain,
        truncated: accumulated.truncated,
        refused: accumulated.refused,
        empty: accumulated.empty,
        bad_tool_args: accumulated.bad_tool_args,
        response_errors: accumulated.response_errors,
        ignored: accumulated.ignored,
        estimates: specs.len(),
        score_rows: rows.len(),
        scores_dir: run_dir.join("scores"),
        catalog_hashes: accumulated.catalog_hashes.iter().cloned().collect(),
        subjects: accumulated.subjects.names.clone(),
        controls: accumulated
            .is_control
            .iter()
            .filter(|(_, control)| **control)
            .map(|(subject, _)| subject.clone())
            .collect(),
        judges: accumulated.judges.names.clone(),
        modes: accumulated.modes.names.clone(),
    };
    let prompts = accumulated
        .prompts
        .iter()
        .map(|(judge, hashes)| (judge.clone(), hashes.iter().cloned().collect()))
        .collect();
    Ok(Computed {
        rows,
        report,
        prompts,
    })
}

/// The fingerprint of everything the scores depend on: the settings, the
/// judgments' shards and the human labels' content.
pub fn fingerprint(config: &Config, run_dir: &Path) -> Result<String> {
    let judgments: Vec<String> = match ShardStore::open_existing(
        &run_dir.join(JudgmentRow::NAME),
        JudgmentRow::NAME,
        JudgmentRow::schema(),
    )? {
        Some(store) => store.entries().iter().map(|entry| entry.blake3.clone()).collect(),
        None => Vec::new(),
    };
    let content = |path: &Option<PathBuf>| -> Result<Option<String>> {
        match path {
            Some(path) => Ok(Some(ids::hash_bytes(&fs_err::read(path).map_err(|source| {
                Error::Read {
                    path: path.clone(),
                    source,
                }
            })?))),
            None => Ok(None),
        }
    };
    let labels = (content(&config.human_labels)?, content(&config.rubric_labels)?);
    Ok(ids::fingerprint(&(
        "aggregate",
        CFEVAL_VERSION,
        config,
        judgments,
        labels,
    )))
}

/// Aggregates the run in `run_dir`: writes its `scores` table (replacing the
/// scores of an earlier aggregate of the same run), or does nothing when the
/// scores are complete for the same judgments and settings.
pub fn run(config: &Config, run_dir: &Path) -> Result<Report> {
    // A run made with a pack scores the pack's families.
    let from_pack;
    let config = match cfeval_schema::pack::Pack::of_run(run_dir).map_err(Error::Config)? {
        Some(pack) => {
            from_pack = Config {
                css_families: pack.vocabulary.css_families.clone(),
                control_family: pack.vocabulary.control_family.clone(),
                ..config.clone()
            };
            &from_pack
        }
        None => config,
    };
    // Complete, current, intact judgments only (see `require_input`).
    let judgments = run_dir.join(JudgmentRow::NAME);
    if !judgments.is_dir() {
        return Err(Error::NoJudgments {
            run: run_dir.display().to_string(),
            path: judgments,
        });
    }
    cfeval_schema::lineage::require_input(
        run_dir,
        cfeval_schema::TableName::Judgments,
        cfeval_schema::StoreOptions::default(),
    )?;
    let fingerprint = fingerprint(config, run_dir)?;
    if let Some(store) =
        ShardStore::open_existing(&run_dir.join(ScoreRow::NAME), ScoreRow::NAME, ScoreRow::schema())?
        && store.is_complete(UNIT, &fingerprint)
    {
        return Ok(Report {
            skipped: true,
            scores_dir: run_dir.join(ScoreRow::NAME),
            ..Report::default()
        });
    }
    let computed = compute(config, run_dir)?;
    write_scores(run_dir, &computed, &fingerprint)?;
    Ok(computed.report)
}

/// Commits the score rows as the run's `aggregate` unit under `fingerprint`.
pub fn write_scores(run_dir: &Path, computed: &Computed, fingerprint: &str) -> Result<()> {
    let mut store = ShardStore::open_table::<ScoreRow>(run_dir)?;
    if store.unit(UNIT).is_some() || store.entries().iter().any(|entry| entry.unit == UNIT) {
        store.retire_unit(UNIT)?;
    }
    let mut writer = store.writer(Provenance {
        run: computed.report.run.clone(),
        unit: UNIT.into(),
        fingerprint: fingerprint.to_string(),
        catalog_hash: computed.report.catalog_hashes.first().cloned(),
    });
    writer.write_rows(&computed.rows)?;
    let shards = writer.finish()?;
    store.mark_complete(UNIT, fingerprint, &shards)?;
    Ok(())
}
