//! `cfeval run PIPELINE`: the stage graph of a pipeline file, resumable.
//!
//! cases (cohort or files → E-Synthesis) → perturb → infer (every subject ×
//! mode) → judge (every judge) → aggregate → report.
//!
//! - Every stage commits through the shard store, records its completed
//!   units with the fingerprint of their inputs and settings, skips what is
//!   complete and fingerprint-current, resumes what is partial (infer keeps
//!   every committed answer) and redoes what a changed setting invalidated.
//!   Changing a judge therefore reruns judge and aggregate and calls no
//!   subject.
//! - `--from STAGE` retires the pipeline's units of that stage and every
//!   later one before running, so they are recomputed (model calls are then
//!   served from the response cache).
//! - `--shard i/n` runs slice `i` of the infer stage. The shared stages take
//!   a per-stage lock file in `RUN/_locks`, so `n` processes on one run
//!   directory (a Slurm array, a Kubernetes indexed job) never do the same
//!   work twice; judge and aggregate run in whichever process finds every
//!   slice complete.
//! - Infer units run on a few worker threads fed by a bounded crossbeam
//!   channel; each unit streams variants, answers with bounded concurrency
//!   and commits chunk by chunk, so memory stays flat on any sweep.

mod plan;
mod progress;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Context;
use cfeval_infer::{CallSettings, Slice};
use cfeval_schema::vocab::SubjectName;
use cfeval_schema::{CaseRow, JudgmentRow, ResponseRow, ScoreRow, ShardStore, Table, TableName, VariantRow};

use crate::args::{RunArgs, Stage};
use crate::pipeline::{Cases, JudgePlan, ModeRun, Pipeline, SubjectPlan};
use crate::subjects::ModelSettings;
use progress::Bars;

/// Runs (or, with `--dry-run`, plans) a pipeline file.
pub fn run(args: &RunArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let pipeline = Pipeline::load(&args.pipeline)?;
    let run_dir =
        crate::pipeline::normalize(&args.run_dir.clone().unwrap_or_else(|| pipeline.run_dir.clone()));
    let slice = match &args.shard {
        Some(text) => Slice::parse(text)?,
        None => Slice::ALL,
    };
    if args.from.is_some() && slice != Slice::ALL {
        anyhow::bail!(
            "--from cannot be combined with --shard: force the stage once without --shard, then run the shards"
        );
    }
    if args.dry_run {
        return plan::dry_run(&pipeline, &run_dir, slice, out);
    }
    let problems = pipeline.check_environment(&|name: &str| std::env::var(name).ok());
    if !problems.is_empty() {
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        anyhow::bail!(
            "the environment lacks what the pipeline needs:\n{}",
            lines.join("\n")
        );
    }
    fs_err::create_dir_all(&run_dir)?;
    let driver = Driver {
        pipeline,
        run_dir,
        slice,
        from: args.from,
        bars: Bars::new(),
        summary: Mutex::new(Summary::default()),
        embedded: Mutex::new(()),
    };
    driver.save_pipeline()?;
    let start = Instant::now();
    let outcome = driver.execute();
    let mut summary = driver.summary.into_inner().unwrap_or_default();
    summary.seconds = start.elapsed().as_secs_f64();
    summary.print(&driver.run_dir, out)?;
    outcome?;
    match unfinished(&driver.pipeline, &driver.run_dir, slice, &args.pipeline)? {
        Some(message) => Err(IncompleteRun(message).into()),
        None => Ok(()),
    }
}

/// A pipeline that ran to its end while some tuples are not `ok` or some
/// subject has no scores: `cfeval run` exits with [`IncompleteRun::EXIT_CODE`].
#[derive(Debug)]
pub struct IncompleteRun(pub String);

impl IncompleteRun {
    /// The exit status of an incomplete run (1 is a failure).
    pub const EXIT_CODE: u8 = 2;
}

impl std::fmt::Display for IncompleteRun {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for IncompleteRun {}

/// What the run leaves unfinished: the `responses` units with rows that are
/// not `ok` (per status), and — for a whole run, once it has scores — the
/// pipeline's subjects with no CSS score. `None` when there is nothing.
fn unfinished(
    pipeline: &Pipeline,
    run_dir: &Path,
    slice: Slice,
    file: &Path,
) -> anyhow::Result<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Score {
        subject: String,
        metric: String,
        level: String,
    }
    let mut lines = Vec::new();
    let mut total = 0;
    for (unit, statuses) in crate::status::not_ok_by_unit(run_dir) {
        let count: u64 = statuses.values().sum();
        total += count;
        lines.push(format!(
            "  {unit}: {count} not ok ({})",
            crate::status::breakdown(&statuses)
        ));
    }
    let scores = ShardStore::open_existing(
        &run_dir.join(TableName::Scores.dir_name()),
        TableName::Scores.dir_name(),
        TableName::Scores.schema(),
    )?;
    let mut unscored = Vec::new();
    if let Some(scores) = scores.filter(|_| slice == Slice::ALL) {
        let mut scored = std::collections::BTreeSet::new();
        for batch in scores.read_columns::<Score>(&["subject", "metric", "level"])? {
            for row in batch? {
                // CSS, or CMS alone where every pair was left undecided (a
                // doctor that never named a diagnosis): the subject was
                // scored; its rows not `ok` are listed above.
                if matches!(row.metric.as_str(), "css" | "cms") && row.level == "overall" {
                    scored.insert(row.subject);
                }
            }
        }
        unscored = pipeline
            .subjects
            .iter()
            .map(|subject| subject.name.clone())
            .filter(|name| !scored.contains(name))
            .collect();
    }
    if lines.is_empty() && unscored.is_empty() {
        return Ok(None);
    }
    let mut message = String::from("the run is incomplete");
    if total > 0 {
        message.push_str(&format!(
            "; {total} tuple(s) are not ok (an error, or an empty, truncated, refused or bad-tool-arguments \
             reply), left out of the scores:\n{}",
            lines.join("\n")
        ));
    }
    if !unscored.is_empty() {
        message.push_str(&format!("\n  subjects with no scores: {}", unscored.join(", ")));
    }
    message.push_str(&format!(
        "\nto retry them: cfeval run {} (each tuple is tried at most [infer] max-tries = {} times; raise it to \
         try again those that reached it)",
        file.display(),
        pipeline.max_tries
    ));
    Ok(Some(message))
}

/// Responses per (subject, family), for the judges' progress totals.
fn response_counts(run_dir: &Path) -> anyhow::Result<BTreeMap<(String, String), u64>> {
    #[derive(serde::Deserialize)]
    struct Key {
        subject: String,
        family: String,
    }
    let responses = ShardStore::open_table::<ResponseRow>(run_dir)?;
    let mut counts = BTreeMap::new();
    for batch in responses.read_columns::<Key>(&["subject", "family"])? {
        for key in batch? {
            *counts.entry((key.subject, key.family)).or_default() += 1;
        }
    }
    Ok(counts)
}

/// E-Synthesis of the pipeline's cases into `run_dir` (the seeded cohort is
/// first written into `RUN/inputs/cohort`).
pub fn synthesize_cases(pipeline: &Pipeline, run_dir: &Path) -> anyhow::Result<cfeval_synthesize::Report> {
    let defaults = cfeval_synthesize::Config::default();
    let config = match &pipeline.cases {
        Cases::Cohort { .. } => cfeval_synthesize::Config {
            run: pipeline.name.clone(),
            ..defaults
        },
        Cases::Inputs {
            format,
            max_case_bytes,
            follow_symlinks,
            limit,
            ..
        } => cfeval_synthesize::Config {
            run: pipeline.name.clone(),
            format: *format,
            max_case_bytes: *max_case_bytes,
            follow_symlinks: *follow_symlinks,
            limit: *limit,
            ..defaults
        },
    };
    let inputs = match &pipeline.cases {
        Cases::Cohort { cases, seed } => vec![cohort(run_dir, *cases, *seed)?],
        Cases::Inputs { paths, .. } => paths.clone(),
    };
    let extractor = &pipeline.extractor;
    let config = cfeval_synthesize::Config {
        extractor: extractor.mode,
        pack: pipeline.pack.clone(),
        ..config
    };
    let llm = match &extractor.model {
        Some(model) => Some(crate::synthesize_cmd::llm_extractor(
            model,
            run_dir,
            &crate::subjects::ModelSettings {
                base_url: extractor.base_url.clone(),
                api_key_env: extractor.api_key_env.clone(),
                ..crate::subjects::ModelSettings::default()
            },
        )?),
        None => None,
    };
    Ok(cfeval_synthesize::run_with_extractor(
        &config,
        &inputs,
        run_dir,
        llm.as_ref(),
    )?)
}

/// Writes the seeded cohort into `RUN/inputs/cohort` unless it is there
/// with the same settings; returns its JSONL file.
fn cohort(run_dir: &Path, cases: usize, seed: u64) -> anyhow::Result<PathBuf> {
    let dir = run_dir.join("inputs").join("cohort");
    let jsonl = dir.join("cohort.jsonl");
    let settings_path = dir.join("settings.json");
    let settings = serde_json::json!({
        "cases": cases,
        "seed": seed,
        "cfeval": cfeval_schema::CFEVAL_VERSION,
    })
    .to_string();
    if jsonl.is_file() && fs_err::read_to_string(&settings_path).is_ok_and(|text| text == settings) {
        return Ok(jsonl);
    }
    let files = cfeval_synthesize::cohort::generate_into(
        &cfeval_synthesize::cohort::CohortConfig { cases, seed },
        &dir,
    )
    .with_context(|| format!("writing the cohort into {}", dir.display()))?;
    cfeval_schema::write_atomic(&settings_path, settings.as_bytes())
        .with_context(|| format!("writing {}", settings_path.display()))?;
    Ok(files.jsonl)
}

/// The pipeline's catalog applied to the cases in `run_dir`.
/// `retire_downstream`: retire later tables made under another catalog
/// (`--from perturb`) rather than refuse.
pub fn perturb_cases(
    pipeline: &Pipeline,
    run_dir: &Path,
    retire_downstream: bool,
) -> anyhow::Result<cfeval_perturb::Report> {
    let config = cfeval_perturb::Config {
        catalog: pipeline.catalog.clone(),
        threads: None,
        retire_downstream,
    };
    Ok(cfeval_perturb::run(&config, run_dir)?)
}

/// The infer settings of one (subject, mode) unit of `pipeline`.
pub fn infer_config(
    pipeline: &Pipeline,
    subject: &SubjectPlan,
    run: &ModeRun,
    slice: Slice,
) -> cfeval_infer::Config {
    cfeval_infer::Config {
        run: pipeline.name.clone(),
        mode: run.mode,
        settings: CallSettings {
            temperature: subject.temperature,
            seed: Some(pipeline.seed),
            max_tokens: subject.max_tokens,
            max_steps: subject.max_steps,
            sample: 0,
        },
        samples: subject.samples,
        concurrency: subject.concurrency(pipeline.concurrency),
        slice,
        families: run.families.clone(),
        max_tries: pipeline.max_tries,
        commit_every: std::time::Duration::from_secs_f64(pipeline.commit_secs),
        prompts: cfeval_infer::Prompts::named(&subject.prompt_set).unwrap_or_default(),
        dialogue: pipeline
            .dialogue
            .as_ref()
            .filter(|_| run.mode == cfeval_infer::Mode::Dialogue)
            .map(|plan| {
                cfeval_infer::DialogueSetup {
                    patient: plan.patient.clone(),
                    patient_settings: CallSettings {
                        temperature: plan.patient_temperature,
                        seed: Some(pipeline.seed),
                        max_tokens: plan.patient_max_tokens,
                        ..CallSettings::default()
                    },
                    max_turns: plan.max_turns,
                    patient_subject: None,
                    bias: None,
                    reflect: false,
                    notebook: false,
                    fallback: plan.measurement_fallback.clone(),
                    fallback_subject: None,
                }
                // The subject's own options, checked when the pipeline was read.
                .with_options_of(&subject.name)
            }),
        harness: (run.mode == cfeval_infer::Mode::Harness).then(|| cfeval_infer::HarnessSetup {
            thresholds: pipeline.harness.thresholds.clone(),
            protocol: pipeline.harness.protocol,
            corpus: pipeline.harness.corpus.clone(),
        }),
        batch: subject
            .batch
            .clone()
            .filter(|_| run.mode == cfeval_infer::Mode::SingleShot),
        ..cfeval_infer::Config::default()
    }
}

/// The `[dialogue]` plan of a unit in mode `dialogue`.
fn config_patient<'a>(pipeline: &'a Pipeline, run: &ModeRun) -> Option<&'a crate::pipeline::DialoguePlan> {
    pipeline
        .dialogue
        .as_ref()
        .filter(|_| run.mode == cfeval_infer::Mode::Dialogue)
}

/// The aggregate settings of `pipeline`.
pub fn aggregate_config(pipeline: &Pipeline) -> cfeval_aggregate::Config {
    let settings = &pipeline.aggregate;
    cfeval_aggregate::Config {
        resamples: settings.resamples,
        seed: pipeline.seed,
        level: settings.level,
        blind_spot_threshold: settings.blind_spot_threshold,
        human_labels: settings.human_labels.clone(),
        rubric_labels: settings.rubric_labels.clone(),
        ..cfeval_aggregate::Config::default()
    }
}

/// The stage order, for `--from`.
fn rank(stage: Stage) -> u8 {
    match stage {
        Stage::Synthesize => 0,
        Stage::Perturb => 1,
        Stage::Infer => 2,
        Stage::Judge => 3,
        Stage::Aggregate => 4,
    }
}

#[derive(Debug, Default)]
struct Summary {
    cases: u64,
    quarantined: u64,
    variants: u64,
    tuples: u64,
    /// Tuples answered in this run (the rest were already done).
    answered: u64,
    calls: u64,
    cache_hits: u64,
    errors: u64,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    judged_pairs: u64,
    judge_errors: u64,
    /// `stage → done | skipped | waiting | failed …`
    stages: BTreeMap<String, String>,
    report: Option<PathBuf>,
    seconds: f64,
}

impl Summary {
    fn print(&self, run_dir: &Path, out: &mut dyn Write) -> std::io::Result<()> {
        writeln!(out, "run {}", run_dir.display())?;
        for (stage, state) in &self.stages {
            writeln!(out, "  {stage:<40} {state}")?;
        }
        writeln!(
            out,
            "cases {} (quarantined {}), variant rows {}, tuples {} ({} answered now), model calls {}, cache hits {}, errors {}",
            self.cases,
            self.quarantined,
            self.variants,
            self.tuples,
            self.answered,
            self.calls,
            self.cache_hits,
            self.errors
        )?;
        writeln!(
            out,
            "judged {} responses ({} judge errors); tokens {} in / {} out; cost ${:.4}; {:.1} s",
            self.judged_pairs,
            self.judge_errors,
            self.input_tokens,
            self.output_tokens,
            self.cost_usd,
            self.seconds
        )?;
        if let Some(report) = &self.report {
            writeln!(out, "report: {}", report.display())?;
        }
        Ok(())
    }
}

struct Driver {
    pipeline: Pipeline,
    run_dir: PathBuf,
    slice: Slice,
    from: Option<Stage>,
    bars: Bars,
    summary: Mutex<Summary>,
    /// The embedded model uses every core: one embedded unit at a time.
    embedded: Mutex<()>,
}

/// One (subject, mode) unit of the infer stage.
struct InferJob {
    subject: SubjectPlan,
    run: ModeRun,
}

impl Driver {
    fn note(&self, stage: impl Into<String>, state: impl Into<String>) {
        if let Ok(mut summary) = self.summary.lock() {
            summary.stages.insert(stage.into(), state.into());
        }
    }

    fn with_summary(&self, update: impl FnOnce(&mut Summary)) {
        if let Ok(mut summary) = self.summary.lock() {
            update(&mut summary);
        }
    }

    fn forced(&self, stage: Stage) -> bool {
        self.from.is_some_and(|from| rank(stage) >= rank(from))
    }

    /// An exclusive lock on one stage of the run, held until dropped.
    fn lock(&self, stage: &str) -> anyhow::Result<File> {
        let dir = self.run_dir.join("_locks");
        fs_err::create_dir_all(&dir)?;
        let path = dir.join(format!("{stage}.lock"));
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening the lock file {}", path.display()))?;
        file.lock()
            .with_context(|| format!("locking {}", path.display()))?;
        Ok(file)
    }

    /// Keeps the pipeline file's text in the run (provenance).
    fn save_pipeline(&self) -> anyhow::Result<()> {
        let path = self.run_dir.join("pipeline.toml");
        if fs_err::read_to_string(&path).is_ok_and(|text| text == self.pipeline.text) {
            return Ok(());
        }
        cfeval_schema::write_atomic(&path, self.pipeline.text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    /// Retires `table`'s units that `owns` selects (for `--from`).
    fn retire(
        &self,
        table: &str,
        schema: arrow_schema::SchemaRef,
        owns: &dyn Fn(&str) -> bool,
    ) -> anyhow::Result<()> {
        let dir = self.run_dir.join(table);
        if !dir.is_dir() {
            return Ok(());
        }
        let mut store = ShardStore::open(&dir, table, schema, cfeval_schema::StoreOptions::default())?;
        let mut units: Vec<String> = store.units().map(|record| record.unit.clone()).collect();
        units.extend(store.entries().iter().map(|entry| entry.unit.clone()));
        units.sort();
        units.dedup();
        for unit in units.iter().filter(|unit| owns(unit)) {
            let removed = store.retire_unit(unit)?;
            tracing::info!(table, unit, removed, "retired for --from");
        }
        Ok(())
    }

    fn execute(&self) -> anyhow::Result<()> {
        self.cases().context("stage cases (E-Synthesis) failed")?;
        self.perturb().context("stage perturb failed")?;
        let complete = self.infer().context("stage infer failed")?;
        if !complete {
            self.note(
                "judge",
                "waiting: other infer slices are not complete (the process that completes the last slice judges)",
            );
            self.note("aggregate", "waiting for judge");
            return Ok(());
        }
        self.judge().context("stage judge failed")?;
        self.aggregate().context("stage aggregate failed")?;
        Ok(())
    }

    fn cases(&self) -> anyhow::Result<()> {
        let _lock = self.lock("cases")?;
        if self.forced(Stage::Synthesize) {
            self.retire(CaseRow::NAME, CaseRow::schema(), &|_| true)?;
            self.retire(
                "cases_quarantine",
                <cfeval_schema::QuarantineRow as Table>::schema(),
                &|_| true,
            )?;
        }
        let report = synthesize_cases(&self.pipeline, &self.run_dir)?;
        for reason in &report.quarantine_reasons {
            tracing::warn!("quarantined: {reason}");
        }
        self.with_summary(|summary| {
            summary.cases = report.cases;
            summary.quarantined = report.quarantined;
        });
        let state = if report.skipped {
            "complete (skipped)"
        } else {
            "done"
        };
        self.note(
            "1 cases",
            format!(
                "{state}: {} cases, {} quarantined{}",
                report.cases,
                report.quarantined,
                if report.beyond_limit > 0 {
                    format!(", {} beyond [cases] limit", report.beyond_limit)
                } else {
                    String::new()
                }
            ),
        );
        Ok(())
    }

    fn perturb(&self) -> anyhow::Result<()> {
        let _lock = self.lock("perturb")?;
        if self.forced(Stage::Perturb) {
            self.retire(VariantRow::NAME, VariantRow::schema(), &|_| true)?;
        }
        let report = perturb_cases(&self.pipeline, &self.run_dir, self.forced(Stage::Perturb))?;
        let rows = ShardStore::open_table::<VariantRow>(&self.run_dir)?.rows();
        self.with_summary(|summary| summary.variants = rows);
        let state = if report.skipped {
            format!("complete (skipped): {rows} variant rows")
        } else {
            format!(
                "done: {rows} variant rows ({} applicable, {} not applicable with their reason)",
                report.applicable, report.not_applicable
            )
        };
        self.note(
            "2 perturb",
            format!(
                "{state}, catalog {} ({})",
                report.catalog,
                &report.catalog_hash[..report.catalog_hash.len().min(12)]
            ),
        );
        Ok(())
    }

    fn model_settings(&self, subject: &SubjectPlan) -> ModelSettings {
        // Processes of one sharded run never share a journal file.
        let journal = (self.slice.count > 1).then(|| {
            self.run_dir.join("journal").join(format!(
                "{}.{}-of-{}.jsonl",
                crate::subjects::file_name(&subject.name),
                self.slice.index,
                self.slice.count
            ))
        });
        ModelSettings {
            journal,
            base_url: subject.base_url.clone(),
            api_key_env: subject.api_key_env.clone(),
            limits: subject.limits.clone(),
            price: subject.price,
            ..ModelSettings::default()
        }
        .with_concurrency(&subject.name, self.pipeline.concurrency)
    }

    /// Runs every (subject, mode) unit of this slice; true when every slice
    /// of every unit is complete (judging may start).
    fn infer(&self) -> anyhow::Result<bool> {
        if self.forced(Stage::Infer) {
            let prefixes: Vec<String> = self
                .pipeline
                .subjects
                .iter()
                .map(|subject| format!("subject={}/", subject.name))
                .collect();
            self.retire(ResponseRow::NAME, ResponseRow::schema(), &|unit| {
                prefixes.iter().any(|prefix| unit.starts_with(prefix))
            })?;
        }
        let jobs: Vec<InferJob> = self
            .pipeline
            .subjects
            .iter()
            .flat_map(|subject| {
                subject.runs.iter().map(|run| InferJob {
                    subject: subject.clone(),
                    run: run.clone(),
                })
            })
            .collect();
        let totals = plan::tuple_counts(&self.run_dir, &self.pipeline, self.slice)?;
        let workers = self.pipeline.parallel_units.min(jobs.len()).max(1);
        let (job_tx, job_rx) = crossbeam_channel::bounded::<InferJob>(workers);
        type Finished = (String, bool, anyhow::Result<cfeval_infer::Report>);
        let (result_tx, result_rx) = crossbeam_channel::bounded::<Finished>(workers);
        let failures = std::thread::scope(|scope| -> Vec<String> {
            let totals = &totals;
            for _ in 0..workers {
                let job_rx = job_rx.clone();
                let result_tx = result_tx.clone();
                scope.spawn(move || {
                    for job in job_rx {
                        let label = format!("infer {} {}", job.subject.name, job.run.mode.as_str());
                        let total =
                            totals.get(&(job.subject.name.clone(), job.run.mode.as_str().to_string()));
                        let result = self.infer_unit(&job, &label, total.copied());
                        if result_tx.send((label, job.subject.is_control(), result)).is_err() {
                            break;
                        }
                    }
                });
            }
            drop(result_tx);
            drop(job_rx);
            scope.spawn(move || {
                for job in jobs {
                    if job_tx.send(job).is_err() {
                        break;
                    }
                }
            });
            let mut failures = Vec::new();
            for (label, control, result) in result_rx {
                match result {
                    Ok(report) => {
                        // Controls answer in process: no model calls.
                        let calls = if control { 0 } else { report.requests };
                        let state = if report.answered == 0 {
                            format!("complete (skipped): {} tuples", report.tuples)
                        } else {
                            format!(
                                "done: {} tuples, {} answered now ({} resumed), {} model calls, {} cache hits, {} errors",
                                report.tuples,
                                report.answered,
                                report.skipped,
                                calls,
                                report.cached,
                                report.errors
                            )
                        };
                        self.note(format!("3 {label}"), state);
                        self.with_summary(|summary| {
                            summary.tuples += report.tuples;
                            summary.answered += report.answered;
                            summary.calls += calls;
                            summary.cache_hits += report.cached;
                            summary.errors += report.errors;
                            summary.input_tokens += report.input_tokens;
                            summary.output_tokens += report.output_tokens;
                            summary.cost_usd += report.cost_usd;
                        });
                    }
                    Err(error) => {
                        let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
                        self.note(format!("3 {label}"), format!("FAILED: {}", chain.join(": ")));
                        failures.push(format!("{label}: {}", chain.join(": ")));
                    }
                }
            }
            failures
        });
        if !failures.is_empty() {
            anyhow::bail!(
                "{} infer unit(s) failed:\n{}",
                failures.len(),
                failures.join("\n")
            );
        }
        self.all_slices_complete()
    }

    fn infer_unit(
        &self,
        job: &InferJob,
        label: &str,
        total: Option<u64>,
    ) -> anyhow::Result<cfeval_infer::Report> {
        let patient = config_patient(&self.pipeline, &job.run);
        let embedded = cfeval_schema::vocab::SubjectKind::is_embedded(&job.subject.name)
            || patient.is_some_and(|plan| cfeval_schema::vocab::SubjectKind::is_embedded(&plan.patient));
        let _embedded = if embedded {
            Some(
                self.embedded
                    .lock()
                    .map_err(|_| anyhow::anyhow!("embedded lock poisoned"))?,
            )
        } else {
            None
        };
        let bar = self.bars.bar(label, total);
        let mut config = infer_config(&self.pipeline, &job.subject, &job.run, self.slice);
        config.progress = Some(bar.progress());
        let subject = Arc::new(crate::subjects::subject(
            &job.subject.name,
            &self.run_dir,
            &self.model_settings(&job.subject),
        )?);
        if let (Some(setup), Some(plan)) = (config.dialogue.as_mut(), patient) {
            // One model plays both roles from one loaded instance.
            setup.patient_subject = Some(if plan.patient == SubjectName::model_of(&job.subject.name) {
                Arc::clone(&subject)
            } else {
                Arc::new(crate::subjects::subject(
                    &plan.patient,
                    &self.run_dir,
                    &crate::subjects::ModelSettings {
                        base_url: plan.patient_base_url.clone(),
                        api_key_env: plan.patient_api_key_env.clone(),
                        limits: plan.patient_limits.clone(),
                        ..crate::subjects::ModelSettings::default()
                    }
                    .with_concurrency(&plan.patient, self.pipeline.concurrency),
                )?)
            });
            if let Some(fallback) = &plan.measurement_fallback {
                setup.fallback_subject = Some(Arc::new(crate::subjects::subject(
                    fallback,
                    &self.run_dir,
                    &crate::subjects::ModelSettings {
                        base_url: plan.measurement_fallback_base_url.clone(),
                        api_key_env: plan.measurement_fallback_api_key_env.clone(),
                        ..crate::subjects::ModelSettings::default()
                    }
                    .with_concurrency(fallback, self.pipeline.concurrency),
                )?));
            }
        }
        let report = cfeval_infer::run(&config, subject, &self.run_dir)?;
        bar.finish("");
        Ok(report)
    }

    /// Whether every slice of every (subject, mode) unit is complete under
    /// the current fingerprint.
    fn all_slices_complete(&self) -> anyhow::Result<bool> {
        if self.slice.count <= 1 {
            return Ok(true);
        }
        let variants = ShardStore::open_table::<VariantRow>(&self.run_dir)?;
        let responses = ShardStore::open_table::<ResponseRow>(&self.run_dir)?;
        for subject in &self.pipeline.subjects {
            for run in &subject.runs {
                let config = infer_config(&self.pipeline, subject, run, self.slice);
                let fingerprint = cfeval_infer::fingerprint(&config, &subject.name, &variants);
                for index in 1..=self.slice.count {
                    let slice = Slice {
                        index,
                        count: self.slice.count,
                    };
                    let unit = cfeval_infer::unit(&subject.name, run.mode, slice);
                    if !responses.is_complete(&unit, &fingerprint) {
                        tracing::info!(%unit, "not complete yet");
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }

    fn judge(&self) -> anyhow::Result<()> {
        let _lock = self.lock("judge")?;
        if self.forced(Stage::Judge) {
            let units: Vec<String> = self
                .pipeline
                .judges
                .iter()
                .map(|judge| cfeval_judge::unit(&judge.name))
                .collect();
            self.retire(JudgmentRow::NAME, JudgmentRow::schema(), &|unit| {
                units.iter().any(|owned| owned == unit)
            })?;
        }
        let counts = response_counts(&self.run_dir)?;
        for plan in &self.pipeline.judges {
            let judge = self.build_judge(plan)?;
            let label = format!("judge {}", plan.name);
            let total = counts
                .iter()
                .filter(|((subject, family), _)| {
                    (plan.subjects.is_empty() || plan.subjects.contains(subject))
                        && cfeval_schema::vocab::covers_family(&plan.families, family)
                })
                .map(|(_, count)| count)
                .sum();
            // A rubric judge limited to some cases scores fewer responses
            // than the run has: its total is not known before it starts.
            let bar = self.bars.bar(&label, plan.cases.is_none().then_some(total));
            let mut config = cfeval_judge::Config::new(self.pipeline.name.clone())?;
            config.progress = Some(bar.progress());
            config.only_subjects = plan.subjects.clone();
            config.only_families = plan.families.clone();
            let report = cfeval_judge::run(&config, &judge, &self.run_dir)
                .with_context(|| format!("judge {}", plan.name))?;
            bar.finish(if report.skipped { "(complete: skipped)" } else { "" });
            self.with_summary(|summary| {
                summary.judged_pairs += report.pairs + report.cms;
                summary.judge_errors += report.errors;
            });
            let state = if report.skipped {
                "complete (skipped)".to_string()
            } else if report.responses > 0 {
                format!(
                    "done: {} responses scored on the rubric, {} errors, {} by the fallback",
                    report.responses, report.errors, report.fallback_pairs
                )
            } else {
                format!(
                    "done: {} pairs, {} CMS, {} errors, {} by the fallback",
                    report.pairs, report.cms, report.errors, report.fallback_pairs
                )
            };
            self.note(format!("4 {label}"), state);
        }
        Ok(())
    }

    fn build_judge(&self, plan: &JudgePlan) -> anyhow::Result<cfeval_judge::Judge> {
        let settings = ModelSettings {
            base_url: plan.base_url.clone(),
            api_key_env: plan.api_key_env.clone(),
            limits: plan.limits.clone(),
            ..ModelSettings::default()
        }
        .with_concurrency(&plan.name, self.pipeline.concurrency);
        crate::judge_cmd::build_judge(
            &plan.name,
            plan.fallback.as_deref(),
            &self.run_dir,
            &settings,
            plan.max_tokens,
            &crate::judge_cmd::RubricOptions {
                cases: plan.cases,
                profile: plan.profile.clone(),
            },
        )
    }

    fn aggregate(&self) -> anyhow::Result<()> {
        let _lock = self.lock("aggregate")?;
        if self.forced(Stage::Aggregate) {
            self.retire(ScoreRow::NAME, ScoreRow::schema(), &|unit| {
                unit == cfeval_aggregate::UNIT
            })?;
        }
        let settings = &self.pipeline.aggregate;
        let config = aggregate_config(&self.pipeline);
        let report = cfeval_aggregate::run(&config, &self.run_dir)?;
        let state = if report.skipped {
            "complete (skipped)".to_string()
        } else {
            format!(
                "done: {} judgments → {} score rows ({} resamples)",
                report.judgments, report.score_rows, settings.resamples
            )
        };
        self.note("5 aggregate", state);
        // The report is cheap and deterministic: always (re)written, so it
        // matches the scores even after an interrupted run.
        let paths = cfeval_report::write_with(&self.run_dir, &cfeval_report::Settings::from(&config))
            .context("writing the report")?;
        self.note(
            "6 report",
            format!("{} and {}", paths.html.display(), paths.markdown.display()),
        );
        self.with_summary(|summary| summary.report = Some(paths.html.clone()));
        Ok(())
    }
}
