//! The command-line shape, fixed for every stage.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Counterfactual evaluation of clinical LLMs and agents: CSS next to CMS.
#[derive(Debug, Parser)]
#[command(name = "cfeval", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Trust the shards' content: skip the BLAKE3 check of each shard before
    /// it is read (sizes, manifests, footers and row counts are still
    /// checked). For a store you trust and read often.
    #[arg(long, global = true)]
    pub no_verify: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Generate the seeded synthetic oncology tumor-board cohort.
    Cohort(CohortArgs),
    /// E-Synthesis: convert raw cases into structured charts (`cases`).
    Synthesize(SynthesizeArgs),
    /// Apply the intervention catalog to every case (`variants`).
    Perturb(PerturbArgs),
    /// Work with intervention catalogs.
    Catalog(CatalogArgs),
    /// Work with clinical-reasoning rubrics.
    Rubric(RubricArgs),
    /// Work with specialty packs (`data/packs/<name>/`).
    Pack(PackArgs),
    /// Bring in what was made elsewhere.
    Import(ImportArgs),
    /// Run a subject on every variant (`responses`).
    Infer(InferArgs),
    /// Judge responses: CSS pairs and CMS (`judgments`).
    Judge(JudgeArgs),
    /// Aggregate judgments into scores with CIs and the report.
    Aggregate(AggregateArgs),
    /// Compare two runs of one catalog (before/after): per tuple fixed,
    /// regressed or same; paired differences B − A with CIs; McNemar tests.
    Compare(CompareArgs),
    /// Plan a sample size: the cases needed to detect a CSS difference at a
    /// given power and α, by simulation from a pilot run's resampled cases.
    Power(crate::power_cmd::PowerArgs),
    /// Write a run in another tool's format.
    Export(ExportArgs),
    /// Run a pipeline file, resuming what is already done.
    Run(RunArgs),
    /// Say what is done, partial, stale or damaged in a run.
    Status(StatusArgs),
    /// Check every shard, manifest and unit record of a run; print each
    /// problem on a line and fail if anything is damaged.
    Verify(VerifyArgs),
    /// Print a table's rows (nested columns as nested JSON).
    Show(ShowArgs),
    /// Human labels: a blinded, stratified sample for raters, and their labels back.
    Labels(LabelsArgs),
    /// Look after a response cache: stats, verify, compact.
    Cache(crate::cache_cmd::CacheArgs),
}

#[derive(Debug, Args)]
pub struct LabelsArgs {
    #[command(subcommand)]
    pub command: LabelsCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabelsCommand {
    /// Write a stratified, subject-blinded sample of a run's answer pairs for
    /// raters (`sample.csv`, `sample.jsonl`) and its key (`key.csv`, kept
    /// from the raters).
    Sample(LabelsSampleArgs),
    /// Check raters' label files against a sample's key and write the human
    /// labels `cfeval aggregate --human-labels` reads.
    Import(LabelsImportArgs),
    /// Write a stratified, subject-blinded sample of a run's responses for
    /// raters to score on the clinical-reasoning rubric (`rubric-items.jsonl`
    /// and `.csv`, the scoring sheet `rubric-sheet.csv`) and its key
    /// (`rubric-key.csv`, kept from the raters).
    RubricSample(LabelsSampleArgs),
    /// Check raters' filled rubric sheets against the key and write the
    /// rubric scores `cfeval aggregate --rubric-labels` reads.
    RubricImport(LabelsImportArgs),
}

#[derive(Debug, Args)]
pub struct LabelsSampleArgs {
    #[arg(long)]
    pub run: PathBuf,
    /// Items per family (A–E and N), fewer where a family has fewer pairs.
    #[arg(long, default_value_t = 20)]
    pub per_family: usize,
    /// Chooses the items (the same seed gives the same sample).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The folder to write into (it must not hold a sample already).
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct LabelsImportArgs {
    /// The sample's `key.csv`.
    #[arg(long)]
    pub key: PathBuf,
    /// The human-label CSV to write (e.g. `RUN/labels/human.csv`).
    #[arg(long)]
    pub out: PathBuf,
    /// Raters' files (CSV or JSONL: `item_id`, `label`, optional
    /// `direction_wrong` and `rater`; the rater defaults to the file's name).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CohortArgs {
    /// At most 1,000,000 (run several seeds for more).
    #[arg(long, default_value_t = 224, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub cases: u64,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum InputFormat {
    Auto,
    Text,
    Jsonl,
    Agentclinic,
    Csv,
}

#[derive(Debug, Args)]
pub struct SynthesizeArgs {
    #[arg(long, required = true, num_args = 1..)]
    pub input: Vec<PathBuf>,
    #[arg(long, value_enum, default_value_t = InputFormat::Auto)]
    pub format: InputFormat,
    /// Cases larger than this many bytes are quarantined, not converted
    /// (pipeline key: `max-case-bytes` in [cases]).
    #[arg(long, default_value_t = 1024 * 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_case_bytes: u64,
    /// Read symbolic links found inside `--input` folders (by default each is
    /// skipped with a warning row; pipeline key: `follow-symlinks` in [cases]).
    #[arg(long)]
    pub follow_symlinks: bool,
    /// Convert only the first N cases of the inputs, in input order
    /// (pipeline key: `limit` in [cases]).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// The run directory to write `cases` into.
    #[arg(long)]
    pub out: PathBuf,
    /// The specialty pack the cases belong to (a folder with `pack.yaml`;
    /// default: oncology, built in). A diagnosis pack reads the cases with
    /// its own chart reader; the run records the pack for every later stage
    /// (pipeline key: `pack` in [run]).
    #[arg(long)]
    pub pack: Option<PathBuf>,
    /// Which extractor reads the cases: `rule` (the default), `llm` (a
    /// model returns facts with quotes; only facts whose quote is found in
    /// the note are kept, the others are listed in `cases_quarantine`), or
    /// `both` (merged; disagreements recorded on the case). Pipeline key:
    /// `extractor` in [cases].
    #[arg(long, default_value = "rule", value_parser = ["rule", "llm", "both"])]
    pub extractor: String,
    /// The model of `--extractor llm|both`: `provider/model` or
    /// `embedded/<model>` (pipeline key: `extractor-model`).
    #[arg(long)]
    pub extractor_model: Option<String>,
    /// The extractor model's base URL (OpenAI-compatible servers).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The response cache (default: `--out`/cache).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    /// Notes the extractor model reads at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(usize))]
    pub concurrency: usize,
}

#[derive(Debug, Args)]
pub struct PerturbArgs {
    #[arg(long)]
    pub run: PathBuf,
    #[arg(long)]
    pub catalog: PathBuf,
    /// When the run's responses, judgments or scores were made under another
    /// catalog, retire them (the default refuses: one catalog per run).
    #[arg(long)]
    pub retire_downstream: bool,
}

#[derive(Debug, Args)]
pub struct CatalogArgs {
    #[command(subcommand)]
    pub command: CatalogCommand,
}

#[derive(Debug, Subcommand)]
pub enum CatalogCommand {
    /// Validate a catalog file.
    Check { file: PathBuf },
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub command: ImportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// Answers made elsewhere (JSONL, or CSV with a header) as the run's
    /// `responses`: each row names a variant (`variant_id`, or `case_id` and
    /// `intervention`), a `subject` and the answer's `text`; optional `mode`,
    /// `sample`, `input_tokens`, `output_tokens`, `latency_ms`,
    /// `finish_reason`, `error`. Inspect AI logs (`.eval`, or a `.json` log)
    /// are read too: each sample's final answer, under the log's model.
    /// Rows that do not fit go to `cases_quarantine` with their line (or
    /// sample) and reason.
    Responses(ImportResponsesArgs),
}

#[derive(Debug, Args)]
pub struct ImportResponsesArgs {
    /// The run directory (its variants must exist).
    #[arg(long)]
    pub run: PathBuf,
    /// The subject of rows without a `subject` column.
    #[arg(long)]
    pub subject: Option<String>,
    /// Replace the run's responses of an imported subject × mode.
    #[arg(long)]
    pub replace: bool,
    /// The file: JSONL, CSV (by its `.csv` extension), or an Inspect log
    /// (`.eval`, or a `.json` document with `eval` and `samples`).
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct RubricArgs {
    #[command(subcommand)]
    pub command: RubricCommand,
}

#[derive(Debug, Subcommand)]
pub enum RubricCommand {
    /// Validate a rubric file (every problem with its line); prints its hash.
    Check { file: PathBuf },
}

#[derive(Debug, Args)]
pub struct PackArgs {
    #[command(subcommand)]
    pub command: PackCommand,
}

#[derive(Debug, Subcommand)]
pub enum PackCommand {
    /// Load and check a pack folder: its manifest, vocabulary, catalog and
    /// the files its task reads, every problem with its file and line;
    /// prints the pack's hash.
    Check { dir: PathBuf },
    /// List the packs in a folder of packs (each sub-folder with a
    /// `pack.yaml`), checked.
    List {
        #[arg(default_value = "data/packs")]
        root: PathBuf,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Mode {
    /// `single_shot` (as the tables spell it) or `single-shot`.
    #[value(name = "single_shot", alias = "single-shot")]
    SingleShot,
    Agent,
    /// A consultation with a patient agent (diagnosis packs; `--patient`).
    Dialogue,
    /// EviDx's observer-guided harness: the subject reports a belief over
    /// its differential every step, reads the chart and consults a corpus,
    /// and may finish only when the Observer approves (`--corpus`).
    Harness,
}

#[derive(Debug, Args)]
pub struct InferArgs {
    #[arg(long)]
    pub run: PathBuf,
    /// `provider/model` (`openai/gpt-5`, `anthropic/claude-opus-4-7`, `xai/grok-4`,
    /// `vllm/<model>`, `embedded/smollm2-135m`) or a control (`control/reference`,
    /// `control/constant`, `control/blind-surgery`, `control/erratic`).
    #[arg(long)]
    pub subject: String,
    #[arg(long, value_enum, default_value_t = Mode::SingleShot)]
    pub mode: Mode,
    /// Overrides the provider's base URL (e.g. a local vLLM server).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Only these families (A–E, N; repeatable). The baseline always runs.
    #[arg(long = "family")]
    pub families: Vec<String>,
    /// Run one slice `i/n` of the variants.
    #[arg(long)]
    pub shard: Option<String>,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: u32,
    /// Agent steps (model calls) before the agent is stopped.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_steps: u32,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Sampling temperature, in [0, 2].
    #[arg(long, default_value_t = 0.0, value_parser = temperature)]
    pub temperature: f64,
    /// Answers per tuple (repeated samples: sample i is the same request
    /// with seed + i and its own cache key). With more than one, CSS carries
    /// the within-tuple variance and the judge measures how often a baseline
    /// re-sample changes its plan with nothing changed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Tries per tuple across runs: a rerun answers again the rows that are
    /// not `ok` (errors, empty, truncated, refused, bad tool arguments) until
    /// they were tried this many times.
    #[arg(long, default_value_t = cfeval_infer::DEFAULT_MAX_TRIES, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tries: u32,
    /// After a chunk of rows, commit once this many seconds have passed
    /// since the last commit (0: every chunk). Larger shards on a fast run;
    /// a crash loses at most this long of answers, asked again (from the
    /// cache) on resume.
    #[arg(long, default_value_t = crate::pipeline::DEFAULT_COMMIT_SECS, value_parser = commit_secs)]
    pub commit_secs: f64,
    /// The prompt set: `neutral` (no list of the facts a decision turns on)
    /// or `cued` (names them and asks for the test a missing one needs).
    #[arg(long, default_value = "neutral", value_parser = ["neutral", "cued"])]
    pub prompt_set: String,
    /// The response cache (default: RUN/cache).
    #[arg(long)]
    pub cache_dir: Option<PathBuf>,
    #[arg(long)]
    pub allow_mixed_catalogs: bool,
    /// Mode harness: a folder of `.md`/`.txt` files for the Consultant,
    /// replacing the built-in corpus (the pack's `corpus/` and its
    /// ontology, or the guideline table's lines).
    #[arg(long)]
    pub corpus: Option<PathBuf>,
    /// Mode harness: turns at most (the Observer's other thresholds are
    /// the defaults here; a pipeline's `[harness]` sets them all).
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub harness_steps: u32,
    /// Mode harness: the step JSON for every model, never native tool
    /// calls (for servers without tool calling).
    #[arg(long)]
    pub harness_json: bool,
    /// Mode dialogue: the patient agent (a model subject name; default: the
    /// subject's own model).
    #[arg(long)]
    pub patient: Option<String>,
    /// Mode dialogue: the patient model's base URL.
    #[arg(long)]
    pub patient_base_url: Option<String>,
    /// Mode dialogue: the interaction limit N, the doctor's turns at most
    /// (default: the pack's; a `+turns=N` in the subject's name wins).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
    /// Mode dialogue: the measurement agent's model fallback, asked (with
    /// the case's test labels, never a value) only when a request names no
    /// test the pack's synonyms match. Off by default.
    #[arg(long)]
    pub measurement_fallback: Option<String>,
    /// Mode dialogue: the fallback model's base URL.
    #[arg(long)]
    pub measurement_fallback_base_url: Option<String>,
    /// Mode dialogue: the patient's tokens per reply.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub patient_max_tokens: u32,
    /// Send the requests through the provider's batch endpoints (OpenAI
    /// or Anthropic; single-shot; half the price), poll until they are
    /// answered, then build the rows from the cache. Resumes a batch an
    /// earlier process submitted (state in `RUN/batches/`).
    #[arg(long)]
    pub batch: bool,
    /// Batch mode: seconds between two polls.
    #[arg(long, default_value_t = 30.0, value_parser = positive_seconds)]
    pub batch_poll_secs: f64,
}

/// A number of seconds in (0, 86400].
fn positive_seconds(text: &str) -> Result<f64, String> {
    let value: f64 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
    if value.is_finite() && value > 0.0 && value <= 86_400.0 {
        Ok(value)
    } else {
        Err(format!("{value} seconds is not in (0, 86400]"))
    }
}

#[derive(Debug, Args)]
pub struct JudgeArgs {
    #[arg(long)]
    pub run: PathBuf,
    /// `rule` (offline, deterministic), a model (`openai/gpt-5`,
    /// `anthropic/claude-opus-4-7`, `embedded/smollm2-135m`, …),
    /// `cascade:rule,<model>`, or `rubric:<model>` (the clinical-reasoning
    /// rubric, scored per response).
    #[arg(long)]
    pub judge: String,
    /// The judge for subjects of the judge's own model family (self-preference
    /// guard); also read from CFEVAL_JUDGE_FALLBACK.
    #[arg(long)]
    pub fallback: Option<String>,
    /// Overrides the judge model's base URL.
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long)]
    pub allow_mixed_catalogs: bool,
    /// Model-judge calls in flight at once (it reaches the client's limiter).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    pub concurrency: u64,
    /// A rubric judge (`rubric:<model>`) scores only this many cases (the
    /// same subset on every rerun).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub cases: Option<u64>,
    /// A rubric judge's weighting profile (default: the pack's).
    #[arg(long)]
    pub profile: Option<String>,
}

#[derive(Debug, Args)]
pub struct AggregateArgs {
    #[arg(long)]
    pub run: PathBuf,
    #[arg(long)]
    pub human_labels: Option<PathBuf>,
    /// Human rubric scores (CSV: subject, mode, case_id, intervention,
    /// metric, score 1–5 or `na`, rater) to set the rubric judges against.
    #[arg(long)]
    pub rubric_labels: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(subcommand)]
    pub command: ExportCommand,
}

#[derive(Debug, Subcommand)]
pub enum ExportCommand {
    /// Every subject × mode of a run as an Inspect AI log (`.eval`), for
    /// Inspect View: transcripts, agent traces and judge verdicts.
    Inspect(ExportInspectArgs),
}

#[derive(Debug, Args)]
pub struct ExportInspectArgs {
    /// The run folder.
    pub run: PathBuf,
    /// The folder to write the logs into (created if missing).
    #[arg(long)]
    pub out: PathBuf,
    /// Export only this subject (repeatable; default every subject).
    #[arg(long = "subject")]
    pub subjects: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The first run (before).
    pub run_a: PathBuf,
    /// The second run (after); differences are B − A.
    pub run_b: PathBuf,
    /// Compare only this subject (repeatable; default every subject).
    #[arg(long = "subject")]
    pub subjects: Vec<String>,
    /// The judge whose verdicts are compared.
    #[arg(long, default_value = "rule")]
    pub judge: String,
    /// The folder to write into (default `RUN_B/compare-<name of RUN_A>`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Bootstrap resamples.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub resamples: u64,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Stage {
    Synthesize,
    Perturb,
    Infer,
    Judge,
    Aggregate,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The pipeline file (`pipelines/demo.toml`).
    pub pipeline: PathBuf,
    /// The run directory (default: `[run] dir` of the pipeline file).
    #[arg(long)]
    pub run_dir: Option<PathBuf>,
    /// Recompute this stage and every later one.
    #[arg(long, value_enum)]
    pub from: Option<Stage>,
    /// Run slice `i/n` of the infer stage as an independent process; judge
    /// and aggregate run in the process that completes the last slice.
    #[arg(long)]
    pub shard: Option<String>,
    /// Print the plan (calls per subject and judge, cached vs new, estimated
    /// tokens and cost) and run nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    pub run: PathBuf,
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The run folder.
    pub run: PathBuf,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ShowFormat {
    Jsonl,
    Table,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// cases, cases_quarantine, variants, responses, judgments or scores.
    pub table: String,
    #[arg(long)]
    pub run: PathBuf,
    #[arg(long, value_enum, default_value_t = ShowFormat::Jsonl)]
    pub format: ShowFormat,
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only these columns (comma separated).
    #[arg(long, value_delimiter = ',')]
    pub columns: Vec<String>,
}

/// A temperature in [0, 2].
fn temperature(text: &str) -> Result<f64, String> {
    let value: f64 = text.parse().map_err(|_| format!("`{text}` is not a number"))?;
    if (0.0..=2.0).contains(&value) {
        Ok(value)
    } else {
        Err(format!("temperature {value} is not in [0, 2]"))
    }
}

/// `--commit-secs`: seconds in [0, 3600].
fn commit_secs(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if crate::pipeline::COMMIT_SECS.contains(&value) => Ok(value),
        _ => Err(format!("`{text}` is not a number of seconds in [0, 3600]")),
    }
}
