//! Pipeline files (`pipelines/*.toml`): what a run is made of — cases,
//! catalog, subjects × modes, judges, aggregate settings — parsed and checked
//! before anything runs. Every error names the file, line and column.
//!
//! Paths inside a pipeline file resolve relative to that file. Keys are
//! kebab-case; unknown keys are errors. The shape:
//!
//! ```toml
//! [run]
//! name = "demo"                  # stamped on every row (default: the file's stem)
//! dir = "../runs/demo"           # default run directory (`--run-dir` overrides)
//! seed = 1                       # infer seed and bootstrap seed
//!
//! [cases]
//! cohort = { cases = 12, seed = 1 }   # or: inputs = ["charts/"], format = "auto",
//!                                     # max-case-bytes = 1048576, follow-symlinks = false
//! extractor = "both"                  # rule (default) | llm | both
//! extractor-model = "embedded/SmolLM2-135M-Instruct"   # for llm and both
//!
//! [catalog]
//! path = "../data/packs/oncology/catalog.yaml"
//!
//! [infer]                        # defaults for every subject
//! max-tokens = 512
//! temperature = 0.7
//! samples = 5                    # answers per tuple (repeated samples; default 1)
//!
//! [[subjects]]
//! name = "openai/gpt-5"
//! modes = ["single_shot", "agent"]
//! agent-families = ["D"]         # agent mode on family D only
//! concurrency = 32
//! requests-per-minute = 500
//!
//! [[judges]]
//! name = "openai/gpt-5.4"
//! fallback = "anthropic/claude-opus-4-7"
//! subjects = ["openai/gpt-5"]    # optional: judge only these subjects
//! families = ["D"]               # optional: judge only these families' pairs
//!
//! [aggregate]
//! resamples = 10000
//!
//! [power]                        # optional: the dry-run shows the cases needed
//! difference = 0.10              # the CSS difference to detect (default with a
//!                                # pilot: the pilot's, per scope)
//! sd = 0.35                      # stated: the SD of the per-case difference; or
//! pilot = "../runs/pilot"        # a pilot run, with
//! subjects = ["openai/gpt-5", "openai/gpt-5.4"]   # paired B − A, or one and
//! threshold = 0.7                                 # a threshold
//! judge = "rule"                 # the pilot's judge (default rule) and
//! mode = "single_shot"           # mode (default single_shot)
//! power = 0.8                    # target power (default 0.8)
//! alpha = 0.05                   # two-sided level (default 0.05)
//! simulations = 2000             # simulated studies per n (default 2000)
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};

use cfeval_model::{Limits, Price, SubjectSpec};
use cfeval_schema::vocab::{SubjectKind, SubjectName};
use serde::Deserialize;
use toml::Spanned;

/// The families a pipeline may name.
/// The families of the built-in oncology pack.
fn builtin_families() -> Vec<String> {
    family_ids(cfeval_schema::vocab::Vocabulary::builtin())
}

/// A vocabulary's family ids, in order.
fn family_ids(vocabulary: &cfeval_schema::vocab::Vocabulary) -> Vec<String> {
    vocabulary.family_names().map(str::to_string).collect()
}

/// `[infer] commit-secs` when a pipeline does not say: a fast run commits
/// about every two seconds instead of every chunk of rows.
pub const DEFAULT_COMMIT_SECS: f64 = 2.0;

/// The seconds `commit-secs` (and `--commit-secs`) may take: at most an hour.
pub const COMMIT_SECS: std::ops::RangeInclusive<f64> = 0.0..=3600.0;

/// A pipeline file's problem, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineError {
    pub file: PathBuf,
    /// 1-based line and column (0 when the problem has no place).
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file.display(),
                self.line,
                self.column,
                self.message
            )
        }
    }
}

impl std::error::Error for PipelineError {}

/// Where the cases come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Cases {
    /// The seeded synthetic cohort.
    Cohort { cases: usize, seed: u64 },
    /// Case files or folders, converted by E-Synthesis.
    Inputs {
        paths: Vec<PathBuf>,
        format: cfeval_synthesize::InputFormat,
        /// `max-case-bytes`: larger cases are quarantined.
        max_case_bytes: usize,
        /// `follow-symlinks`: read links found inside input folders.
        follow_symlinks: bool,
        /// `limit`: only the first this many cases, in input order.
        limit: Option<usize>,
    },
}

/// Which extractor E-Synthesis uses, and its model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtractorPlan {
    pub mode: cfeval_synthesize::ExtractorMode,
    /// The model of `llm` and `both` (`provider/model` or `embedded/<model>`).
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
}

/// One (subject, mode) unit of the infer stage.
#[derive(Debug, Clone, PartialEq)]
pub struct ModeRun {
    pub mode: cfeval_infer::Mode,
    /// Only these families (empty: all); the baseline always runs.
    pub families: Vec<String>,
}

/// A subject as the pipeline runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectPlan {
    pub name: String,
    pub runs: Vec<ModeRun>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub limits: Option<Limits>,
    pub price: Option<Price>,
    pub max_tokens: u32,
    pub max_steps: u32,
    pub temperature: f64,
    /// Answers per tuple (repeated samples, each with its own seed).
    pub samples: u32,
    /// The prompt set (`neutral`, the default, or `cued`).
    pub prompt_set: String,
    /// Batch mode (`batch = true`): its poll interval and batch size.
    pub batch: Option<cfeval_infer::BatchMode>,
}

impl SubjectPlan {
    /// Calls in flight: the subject's own limit, else the pipeline's
    /// `[infer] concurrency`.
    pub fn concurrency(&self, pipeline_concurrency: usize) -> usize {
        self.limits
            .as_ref()
            .map_or(pipeline_concurrency, |limits| limits.max_concurrency)
    }

    pub fn is_control(&self) -> bool {
        SubjectKind::is_control(&self.name)
    }
}

/// A judge as the pipeline runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgePlan {
    pub name: String,
    pub fallback: Option<String>,
    /// Judge only these subjects (empty: all).
    pub subjects: Vec<String>,
    /// Judge only these families' pairs (empty: all).
    pub families: Vec<String>,
    /// The verdict's token budget (default: the judge's own, 512).
    pub max_tokens: Option<u32>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub limits: Option<Limits>,
    /// A rubric judge: score only this many cases.
    pub cases: Option<usize>,
    /// A rubric judge: the weighting profile (default: the pack's).
    pub profile: Option<String>,
}

impl JudgePlan {
    /// The model this judge calls: its name, a cascade's model part
    /// (`cascade:rule,<model>`) or a rubric judge's (`rubric:<model>`);
    /// `None` for the rule judge.
    pub fn model(&self) -> Option<&str> {
        let model = crate::judge_cmd::judge_model(&self.name);
        (model != cfeval_judge::RuleJudge::NAME).then_some(model)
    }
}

/// `[dialogue]`: the patient agent and the interaction limit of the
/// subjects that run in mode `dialogue`.
#[derive(Debug, Clone, PartialEq)]
pub struct DialoguePlan {
    /// The patient agent's model (`provider/model` or `embedded/<model>`).
    pub patient: String,
    /// The doctor's turns at most (none: the pack's `max_turns`).
    pub max_turns: Option<u32>,
    pub patient_max_tokens: u32,
    pub patient_temperature: f64,
    pub patient_base_url: Option<String>,
    pub patient_api_key_env: Option<String>,
    pub patient_limits: Option<Limits>,
    /// The measurement agent's model fallback (off: `None`): asked only for
    /// a request no test name matched.
    pub measurement_fallback: Option<String>,
    pub measurement_fallback_base_url: Option<String>,
    pub measurement_fallback_api_key_env: Option<String>,
}

/// `[harness]`: the Observer's thresholds and the Consultant's corpus of
/// the subjects that run in mode `harness` (every key optional; the
/// defaults are [`cfeval_infer::harness::Thresholds`]'s).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HarnessPlan {
    pub thresholds: cfeval_infer::harness::Thresholds,
    /// `auto` (native tool calls where the backend has them) or `json`.
    pub protocol: cfeval_infer::harness::Protocol,
    /// A folder of `.md`/`.txt` files that replaces the built-in corpus.
    pub corpus: Option<PathBuf>,
}

/// What `[power]` asks the dry-run to plan (`cfeval power` with these
/// settings, the pipeline's seed and its number of cases).
#[derive(Debug, Clone, PartialEq)]
pub struct PowerPlan {
    /// A pilot run; without it, the stated `difference` and `sd`.
    pub pilot: Option<PathBuf>,
    /// Paired: A then B; threshold: the one subject.
    pub subjects: Vec<String>,
    pub threshold: Option<f64>,
    pub judge: Option<String>,
    pub mode: Option<String>,
    pub difference: Option<f64>,
    pub sd: Option<f64>,
    pub power: f64,
    pub alpha: f64,
    pub simulations: u64,
}

/// Aggregate settings.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregatePlan {
    pub resamples: usize,
    pub level: f64,
    pub blind_spot_threshold: f64,
    pub human_labels: Option<PathBuf>,
    pub rubric_labels: Option<PathBuf>,
}

/// A checked pipeline, paths resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub file: PathBuf,
    /// The file's text (kept as the run's provenance).
    pub text: String,
    pub name: String,
    pub run_dir: PathBuf,
    pub seed: u64,
    pub cases: Cases,
    /// `[cases] extractor` and its model.
    pub extractor: ExtractorPlan,
    pub catalog: PathBuf,
    /// `[run] pack`: the specialty pack's folder (none: oncology, built in).
    pub pack: Option<PathBuf>,
    /// Calls in flight per subject (the model client may lower it).
    pub concurrency: usize,
    /// Infer units running at once.
    pub parallel_units: usize,
    /// `[infer] max-tries`: tries per tuple across runs (a rerun retries
    /// rows that are not `ok` until then).
    pub max_tries: u32,
    /// `[infer] commit-secs`: after a chunk of rows, commit once this many
    /// seconds have passed since the last commit (0: every chunk).
    pub commit_secs: f64,
    pub subjects: Vec<SubjectPlan>,
    /// `[dialogue]`, when a subject runs in mode `dialogue`.
    pub dialogue: Option<DialoguePlan>,
    /// `[harness]` (the defaults when absent).
    pub harness: HarnessPlan,
    pub judges: Vec<JudgePlan>,
    pub aggregate: AggregatePlan,
    pub power: Option<PowerPlan>,
}

// ---------------------------------------------------------------------------
// The file as written.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPipeline {
    #[serde(default)]
    run: Option<RawRun>,
    cases: Option<Spanned<RawCases>>,
    catalog: Option<Spanned<RawCatalog>>,
    #[serde(default)]
    infer: Option<RawInfer>,
    #[serde(default)]
    subjects: Vec<Spanned<RawSubject>>,
    dialogue: Option<Spanned<RawDialogue>>,
    harness: Option<Spanned<RawHarness>>,
    #[serde(default)]
    judges: Vec<Spanned<RawJudge>>,
    #[serde(default)]
    aggregate: Option<RawAggregate>,
    power: Option<Spanned<RawPower>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawRun {
    name: Option<Spanned<String>>,
    dir: Option<Spanned<String>>,
    seed: Option<u64>,
    pack: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawCases {
    cohort: Option<Spanned<RawCohort>>,
    inputs: Option<Spanned<Vec<Spanned<String>>>>,
    format: Option<Spanned<String>>,
    max_case_bytes: Option<Spanned<usize>>,
    follow_symlinks: Option<Spanned<bool>>,
    limit: Option<Spanned<usize>>,
    extractor: Option<Spanned<String>>,
    extractor_model: Option<Spanned<String>>,
    extractor_base_url: Option<Spanned<String>>,
    extractor_api_key_env: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawCohort {
    cases: Spanned<usize>,
    seed: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawCatalog {
    path: Spanned<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawInfer {
    max_tokens: Option<Spanned<u32>>,
    max_steps: Option<Spanned<u32>>,
    temperature: Option<Spanned<f64>>,
    samples: Option<Spanned<u32>>,
    concurrency: Option<Spanned<usize>>,
    parallel_units: Option<Spanned<usize>>,
    max_tries: Option<Spanned<usize>>,
    commit_secs: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSubject {
    name: Spanned<String>,
    modes: Option<Spanned<Vec<Spanned<String>>>>,
    families: Option<Vec<Spanned<String>>>,
    agent_families: Option<Spanned<Vec<Spanned<String>>>>,
    base_url: Option<Spanned<String>>,
    api_key_env: Option<Spanned<String>>,
    concurrency: Option<Spanned<usize>>,
    requests_per_minute: Option<u32>,
    tokens_per_minute: Option<u64>,
    limits: Option<Spanned<Limits>>,
    price: Option<Price>,
    max_tokens: Option<Spanned<u32>>,
    max_steps: Option<Spanned<u32>>,
    temperature: Option<Spanned<f64>>,
    samples: Option<Spanned<u32>>,
    prompt_set: Option<Spanned<String>>,
    /// Send the subject's single-shot requests through the provider's
    /// batch endpoints.
    batch: Option<Spanned<bool>>,
    batch_poll_secs: Option<Spanned<f64>>,
    batch_max_requests: Option<Spanned<usize>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawDialogue {
    patient: Spanned<String>,
    max_turns: Option<Spanned<u32>>,
    patient_max_tokens: Option<Spanned<u32>>,
    patient_temperature: Option<Spanned<f64>>,
    patient_base_url: Option<Spanned<String>>,
    patient_api_key_env: Option<Spanned<String>>,
    patient_limits: Option<Spanned<Limits>>,
    measurement_fallback: Option<Spanned<String>>,
    measurement_fallback_base_url: Option<Spanned<String>>,
    measurement_fallback_api_key_env: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawHarness {
    corpus: Option<Spanned<String>>,
    protocol: Option<Spanned<String>>,
    max_steps: Option<Spanned<u32>>,
    max_entropy: Option<Spanned<f64>>,
    relax_entropy_after: Option<Spanned<u32>>,
    entropy_relax_per_step: Option<Spanned<f64>>,
    max_entropy_ceiling: Option<Spanned<f64>>,
    min_coverage: Option<Spanned<f64>>,
    lower_coverage_after: Option<Spanned<u32>>,
    coverage_drop_per_step: Option<Spanned<f64>>,
    coverage_floor: Option<Spanned<f64>>,
    spurious_drop: Option<Spanned<f64>>,
    passages: Option<Spanned<usize>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawJudge {
    name: Spanned<String>,
    fallback: Option<Spanned<String>>,
    subjects: Option<Vec<Spanned<String>>>,
    families: Option<Vec<Spanned<String>>>,
    max_tokens: Option<Spanned<u32>>,
    base_url: Option<Spanned<String>>,
    api_key_env: Option<Spanned<String>>,
    limits: Option<Spanned<Limits>>,
    cases: Option<Spanned<usize>>,
    profile: Option<Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawAggregate {
    resamples: Option<Spanned<usize>>,
    level: Option<Spanned<f64>>,
    blind_spot_threshold: Option<Spanned<f64>>,
    human_labels: Option<Spanned<String>>,
    rubric_labels: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawPower {
    difference: Option<Spanned<f64>>,
    sd: Option<Spanned<f64>>,
    pilot: Option<Spanned<String>>,
    subjects: Option<Spanned<Vec<String>>>,
    threshold: Option<Spanned<f64>>,
    judge: Option<Spanned<String>>,
    mode: Option<Spanned<String>>,
    power: Option<Spanned<f64>>,
    alpha: Option<Spanned<f64>>,
    simulations: Option<Spanned<u64>>,
}

// ---------------------------------------------------------------------------

/// Checks a pipeline file; what the environment must provide (API keys, the
/// embedded model) is checked by [`Pipeline::check_environment`].
struct Checker<'a> {
    file: &'a Path,
    text: &'a str,
    base: PathBuf,
    /// Whether paths must exist (not for a run's kept copy of its pipeline).
    check_files: bool,
}

impl Checker<'_> {
    fn at(&self, offset: usize, message: impl Into<String>) -> PipelineError {
        let (line, column) = line_column(self.text, offset);
        PipelineError {
            file: self.file.to_path_buf(),
            line,
            column,
            message: message.into(),
        }
    }

    fn spanned<T>(&self, value: &Spanned<T>, message: impl Into<String>) -> PipelineError {
        self.at(value.span().start, message)
    }

    fn resolve(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        if path.is_absolute() {
            path.to_path_buf()
        } else {
            self.base.join(path)
        }
    }

    fn existing(&self, value: &Spanned<String>, what: &str) -> Result<PathBuf, PipelineError> {
        let path = self.resolve(value.get_ref());
        if self.check_files && !path.exists() {
            return Err(self.spanned(
                value,
                format!("{what} `{}` does not exist ({})", value.get_ref(), path.display()),
            ));
        }
        Ok(path)
    }
}

/// `path` with `.` and `..` resolved lexically (`pipelines/../runs/demo` is
/// `runs/demo`), so that one run directory always has one name: stages
/// fingerprint their input paths.
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut parts: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match parts.last() {
                Some(Component::Normal(_)) => {
                    parts.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => parts.push(component),
            },
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return PathBuf::from(".");
    }
    parts.iter().collect()
}

/// Checks a catalog file, its treatment classes against the judge's
/// ontology included (perturb does not own that vocabulary; the driver
/// knows both).
pub fn check_catalog(path: &Path) -> anyhow::Result<Vec<cfeval_perturb::catalog::Diagnostic>> {
    let classes = cfeval_judge::Ontology::builtin()?.known_classes();
    let known = |class: &str| classes.contains(class);
    Ok(cfeval_perturb::catalog::check_with(path, Some(&known)))
}

/// How deep arrays and tables may nest in a pipeline file: the TOML parser
/// recurses, so a file of 200,000 `[` would take minutes; no pipeline needs
/// more than a handful.
const MAX_NESTING: usize = 32;

/// The first place where brackets nest deeper than [`MAX_NESTING`]
/// (strings and comments skipped), in one pass.
fn too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'#' => {
                while index < bytes.len() && bytes[index] != b'\n' {
                    index += 1;
                }
            }
            quote @ (b'"' | b'\'') => {
                index += 1;
                while index < bytes.len() && bytes[index] != quote && bytes[index] != b'\n' {
                    if quote == b'"' && bytes[index] == b'\\' {
                        index += 1;
                    }
                    index += 1;
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(index);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        index += 1;
    }
    None
}

/// The largest synthetic cohort a pipeline may ask for.
pub const MAX_COHORT_CASES: usize = 1_000_000;

/// 1-based line and column of a byte offset.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&byte| byte == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&byte| byte == b'\n')
        .map_or(0, |index| index + 1);
    let column = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
    (line, column)
}

/// A mode as the tables spell it, or with a hyphen (`single-shot`).
fn parse_mode(text: &str) -> Option<cfeval_infer::Mode> {
    cfeval_infer::Mode::parse(&text.replace('-', "_"))
}

fn parse_format(text: &str) -> Option<cfeval_synthesize::InputFormat> {
    use cfeval_synthesize::InputFormat;
    [
        InputFormat::Auto,
        InputFormat::Text,
        InputFormat::Jsonl,
        InputFormat::Agentclinic,
        InputFormat::Csv,
    ]
    .into_iter()
    .find(|format| format.as_str() == text)
}

impl Pipeline {
    /// Reads and checks the pipeline file at `path`.
    pub fn load(path: &Path) -> Result<Pipeline, PipelineError> {
        let text = std::fs::read_to_string(path).map_err(|error| PipelineError {
            file: path.to_path_buf(),
            line: 0,
            column: 0,
            message: format!("cannot read the pipeline file: {error}"),
        })?;
        Self::parse(path, &text)
    }

    /// Checks `text`, the content of the pipeline file `file`.
    pub fn parse(file: &Path, text: &str) -> Result<Pipeline, PipelineError> {
        Self::parse_with(file, text, true)
    }

    /// Reads the settings of a pipeline without checking that the files it
    /// names exist (a run's kept copy, `RUN/pipeline.toml`).
    pub fn parse_settings(file: &Path, text: &str) -> Result<Pipeline, PipelineError> {
        Self::parse_with(file, text, false)
    }

    fn parse_with(file: &Path, text: &str, check_files: bool) -> Result<Pipeline, PipelineError> {
        let base = file
            .parent()
            .map(Path::to_path_buf)
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or_else(|| PathBuf::from("."));
        let checker = Checker {
            file,
            text,
            base,
            check_files,
        };
        if let Some(offset) = too_deep(text) {
            return Err(checker.at(
                offset,
                format!(
                    "arrays or tables nest deeper than {MAX_NESTING} levels; a pipeline file needs only a few"
                ),
            ));
        }
        let raw: RawPipeline = toml::from_str(text).map_err(|error| {
            let offset = error.span().map_or(0, |span| span.start);
            let message = error.message().trim().replace('\n', " ");
            if error.span().is_some() {
                checker.at(offset, message)
            } else {
                PipelineError {
                    file: file.to_path_buf(),
                    line: 0,
                    column: 0,
                    message,
                }
            }
        })?;
        checker.check(raw, text)
    }
}

impl Checker<'_> {
    fn check(&self, raw: RawPipeline, text: &str) -> Result<Pipeline, PipelineError> {
        let top = |message: &str| PipelineError {
            file: self.file.to_path_buf(),
            line: 1,
            column: 1,
            message: message.to_string(),
        };
        let run = raw.run.unwrap_or(RawRun {
            name: None,
            dir: None,
            seed: None,
            pack: None,
        });
        let name = match &run.name {
            Some(name) => {
                let value = name.get_ref();
                if value.is_empty()
                    || !value
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                {
                    return Err(self.spanned(
                        name,
                        format!("run name `{value}` must be non-empty letters, digits, `-`, `_` or `.`"),
                    ));
                }
                value.clone()
            }
            None => self
                .file
                .file_stem()
                .map_or_else(|| "run".to_string(), |stem| stem.to_string_lossy().into_owned()),
        };
        let run_dir = match &run.dir {
            Some(dir) => self.resolve(dir.get_ref()),
            None => PathBuf::from("runs").join(&name),
        };
        let seed = run.seed.unwrap_or(0);

        let Some(cases) = raw.cases else {
            return Err(top(
                "missing [cases]: give `cohort = { cases = N }` or `inputs = [...]`",
            ));
        };
        let extractor = self.extractor(cases.get_ref())?;
        let cases = self.cases(&cases)?;

        let pack = match &run.pack {
            Some(dir) => {
                let path = self.existing(dir, "pack")?;
                if self.check_files {
                    let pack =
                        cfeval_schema::pack::Pack::load(&path).map_err(|error| self.spanned(dir, error))?;
                    Some((path, Some(pack)))
                } else {
                    Some((path, None))
                }
            }
            None => None,
        };
        let (catalog_path, catalog_span) = match (&raw.catalog, &pack) {
            (Some(catalog), _) => (
                self.existing(&catalog.get_ref().path, "catalog")?,
                Some(&catalog.get_ref().path),
            ),
            (None, Some((dir, _))) => (dir.join("catalog.yaml"), None),
            (None, None) => {
                return Err(top(
                    "missing [catalog] with `path = \"...yaml\"` (or `pack` in [run])",
                ));
            }
        };
        let diagnostics = if self.check_files {
            check_catalog(&catalog_path).map_err(|error| top(&error.to_string()))?
        } else {
            Vec::new()
        };
        if let Some(first) = diagnostics.first() {
            let message = format!(
                "catalog {} is invalid ({} error(s)); first: {first} (run `cfeval catalog check {}`)",
                catalog_path.display(),
                diagnostics.len(),
                catalog_path.display()
            );
            return Err(match catalog_span {
                Some(span) => self.spanned(span, message),
                None => top(&message),
            });
        }
        // Families are the pack's (`F` and `N` in general medicine).
        let pack_families: Vec<String> = match &pack {
            Some((_, Some(pack))) => family_ids(&pack.vocabulary),
            Some((dir, None)) => cfeval_schema::pack::Pack::load(dir)
                .map_or_else(|_| builtin_families(), |pack| family_ids(&pack.vocabulary)),
            None => builtin_families(),
        };
        let pack = pack.map(|(dir, _)| dir);

        let infer = raw.infer.unwrap_or_default();
        let concurrency = self.positive(infer.concurrency.as_ref(), 16, "concurrency")?;
        let parallel_units = self.positive(infer.parallel_units.as_ref(), 4, "parallel-units")?;
        let max_tries = self
            .positive(
                infer.max_tries.as_ref(),
                cfeval_infer::DEFAULT_MAX_TRIES as usize,
                "max-tries",
            )?
            .min(u32::MAX as usize) as u32;
        let temperature = self.temperature(infer.temperature.as_ref(), 0.0)?;
        let commit_secs = match infer.commit_secs.as_ref() {
            Some(value) if !COMMIT_SECS.contains(value.get_ref()) => {
                return Err(self.spanned(
                    value,
                    format!("commit-secs {} is not in [0, 3600] seconds", value.get_ref()),
                ));
            }
            Some(value) => *value.get_ref(),
            None => DEFAULT_COMMIT_SECS,
        };
        let defaults = Defaults {
            max_tokens: self.at_least_one(infer.max_tokens.as_ref(), 512, "max-tokens")?,
            max_steps: self.at_least_one(infer.max_steps.as_ref(), 8, "max-steps")?,
            temperature,
            samples: self.at_least_one(infer.samples.as_ref(), 1, "samples")?,
            families: pack_families,
            pack: pack.clone(),
        };

        if raw.subjects.is_empty() {
            return Err(top("no [[subjects]]: name at least one subject to evaluate"));
        }
        let mut subjects = Vec::new();
        let mut seen = BTreeSet::new();
        for subject in &raw.subjects {
            let plan = self.subject(subject, &defaults)?;
            // Options in another order are the same subject.
            if !seen.insert(SubjectName::canonical_of(&plan.name)) {
                return Err(self.spanned(
                    &subject.get_ref().name,
                    format!(
                        "subject `{}` is named twice (options in any order are one subject)",
                        plan.name
                    ),
                ));
            }
            subjects.push(plan);
        }
        let dialogue = self.dialogue(raw.dialogue.as_ref(), &subjects)?;
        let harness = self.harness(raw.harness.as_ref(), &subjects)?;

        if raw.judges.is_empty() {
            return Err(top("no [[judges]]: name at least one judge (`rule` is offline)"));
        }
        let families = cfeval_judge::Families::builtin().map_err(|error| top(&error.to_string()))?;
        let mut judges = Vec::new();
        let mut seen = BTreeSet::new();
        for judge in &raw.judges {
            let plan = self.judge(judge, &subjects, &families, &defaults.families)?;
            if !seen.insert(plan.name.clone()) {
                return Err(self.spanned(
                    &judge.get_ref().name,
                    format!("judge `{}` is named twice", plan.name),
                ));
            }
            judges.push(plan);
        }

        let aggregate = raw.aggregate.unwrap_or_default();
        let resamples = self.positive(aggregate.resamples.as_ref(), 10_000, "resamples")?;
        let level = match &aggregate.level {
            Some(level) if !(*level.get_ref() > 0.0 && *level.get_ref() < 1.0) => {
                return Err(self.spanned(
                    level,
                    format!("level {} is not in (0, 1), e.g. 0.95", level.get_ref()),
                ));
            }
            Some(level) => *level.get_ref(),
            None => 0.95,
        };
        let blind_spot_threshold = match &aggregate.blind_spot_threshold {
            Some(value) if !(0.0..=1.0).contains(value.get_ref()) => {
                return Err(self.spanned(
                    value,
                    format!("blind-spot-threshold {} is not in [0, 1]", value.get_ref()),
                ));
            }
            Some(value) => *value.get_ref(),
            None => 0.2,
        };
        let human_labels = match &aggregate.human_labels {
            Some(path) => Some(self.existing(path, "human labels file")?),
            None => None,
        };
        let rubric_labels = match &aggregate.rubric_labels {
            Some(path) => Some(self.existing(path, "rubric labels file")?),
            None => None,
        };

        let power = match &raw.power {
            Some(section) => Some(self.power(section)?),
            None => None,
        };

        Ok(Pipeline {
            file: self.file.to_path_buf(),
            text: text.to_string(),
            name,
            run_dir,
            seed,
            cases,
            extractor,
            catalog: catalog_path,
            pack,
            concurrency,
            parallel_units,
            max_tries,
            commit_secs,
            subjects,
            dialogue,
            harness,
            judges,
            aggregate: AggregatePlan {
                resamples,
                level,
                blind_spot_threshold,
                human_labels,
                rubric_labels,
            },
            power,
        })
    }

    /// `[power]`: one of a pilot run or a stated SD; with a pilot, two
    /// subjects (paired) or one with a threshold.
    fn power(&self, section: &Spanned<RawPower>) -> Result<PowerPlan, PipelineError> {
        let raw = section.get_ref();
        let unit = |value: &Option<Spanned<f64>>, name: &str, default: f64| match value {
            Some(value) if !(*value.get_ref() > 0.0 && *value.get_ref() < 1.0) => {
                Err(self.spanned(value, format!("{name} {} is not in (0, 1)", value.get_ref())))
            }
            Some(value) => Ok(*value.get_ref()),
            None => Ok(default),
        };
        let power = unit(&raw.power, "power", 0.8)?;
        let alpha = unit(&raw.alpha, "alpha", 0.05)?;
        let difference = match &raw.difference {
            Some(value) if !value.get_ref().is_finite() || value.get_ref().abs() > 1.0 => {
                return Err(self.spanned(
                    value,
                    format!(
                        "difference {} is not in [−1, 1] (CSS is on a 0–1 scale)",
                        value.get_ref()
                    ),
                ));
            }
            Some(value) if *value.get_ref() == 0.0 => {
                return Err(self.spanned(value, "difference 0: there is nothing to detect"));
            }
            Some(value) => Some(*value.get_ref()),
            None => None,
        };
        let simulations = match &raw.simulations {
            Some(value) if !(1..=10_000_000).contains(value.get_ref()) => {
                return Err(self.spanned(
                    value,
                    format!("simulations {} is not in 1 … 10,000,000", value.get_ref()),
                ));
            }
            Some(value) => *value.get_ref(),
            None => 2_000,
        };
        let subjects: Vec<String> = raw
            .subjects
            .as_ref()
            .map(|subjects| subjects.get_ref().clone())
            .unwrap_or_default();
        let (pilot, sd) = match (&raw.pilot, &raw.sd) {
            (Some(_), Some(sd)) => {
                return Err(self.spanned(
                    sd,
                    "sd is for a stated effect; with a pilot run its cases give the spread (give one of pilot and sd)",
                ));
            }
            (None, None) => {
                return Err(self.spanned(
                    section,
                    "[power] needs a pilot run (`pilot = \"runs/pilot\"` and `subjects`) or a stated effect (`difference` and `sd`)",
                ));
            }
            (Some(pilot), None) => (Some(self.existing(pilot, "pilot run")?), None),
            (None, Some(sd)) => {
                if !(sd.get_ref().is_finite() && *sd.get_ref() > 0.0) {
                    return Err(self.spanned(
                        sd,
                        format!(
                            "sd {} is not a positive number (the standard deviation of the per-case difference)",
                            sd.get_ref()
                        ),
                    ));
                }
                if difference.is_none() {
                    return Err(self.spanned(section, "a stated effect needs `difference` beside `sd`"));
                }
                (None, Some(*sd.get_ref()))
            }
        };
        let threshold = match &raw.threshold {
            Some(value) if !(0.0..=1.0).contains(value.get_ref()) => {
                return Err(self.spanned(
                    value,
                    format!("threshold {} is not on the CSS scale [0, 1]", value.get_ref()),
                ));
            }
            Some(value) => Some(*value.get_ref()),
            None => None,
        };
        if pilot.is_some() {
            let at = |message: String| match &raw.subjects {
                Some(subjects) => self.spanned(subjects, message),
                None => self.spanned(section, message),
            };
            match (subjects.len(), threshold) {
                (2, None) if subjects[0] == subjects[1] => {
                    return Err(at(format!(
                        "the paired design needs two different subjects, got `{}` twice",
                        subjects[0]
                    )));
                }
                (2, None) | (1, Some(_)) => {}
                (1, None) => {
                    return Err(at(format!(
                        "one subject (`{}`) needs `threshold` to be tested against; name two subjects for the paired design",
                        subjects[0]
                    )));
                }
                (2, Some(_)) => {
                    return Err(at(
                        "threshold is for one subject; two subjects are compared with each other (B − A)"
                            .into(),
                    ));
                }
                (count, _) => {
                    return Err(at(format!(
                        "a pilot needs `subjects`: two for the paired design (B − A, in that order) or one with `threshold`, not {count}"
                    )));
                }
            }
        } else {
            let unused: Vec<&str> = [
                (raw.subjects.is_some(), "subjects"),
                (raw.threshold.is_some(), "threshold"),
                (raw.judge.is_some(), "judge"),
                (raw.mode.is_some(), "mode"),
            ]
            .into_iter()
            .filter_map(|(given, name)| given.then_some(name))
            .collect();
            if !unused.is_empty() {
                return Err(self.spanned(
                    section,
                    format!(
                        "{} read a pilot run: give `pilot`, or leave them out for a stated effect",
                        unused.join(", ")
                    ),
                ));
            }
        }
        Ok(PowerPlan {
            pilot,
            subjects,
            threshold,
            judge: raw.judge.as_ref().map(|judge| judge.get_ref().clone()),
            mode: raw.mode.as_ref().map(|mode| mode.get_ref().clone()),
            difference,
            sd,
            power,
            alpha,
            simulations,
        })
    }

    fn positive(
        &self,
        value: Option<&Spanned<usize>>,
        default: usize,
        key: &str,
    ) -> Result<usize, PipelineError> {
        match value {
            Some(value) if *value.get_ref() == 0 => {
                Err(self.spanned(value, format!("{key} must be at least 1")))
            }
            Some(value) => Ok(*value.get_ref()),
            None => Ok(default),
        }
    }

    fn at_least_one(
        &self,
        value: Option<&Spanned<u32>>,
        default: u32,
        key: &str,
    ) -> Result<u32, PipelineError> {
        match value {
            Some(value) if *value.get_ref() == 0 => Err(self.spanned(
                value,
                format!("{key} must be at least 1 (0 would leave no room for an answer)"),
            )),
            Some(value) => Ok(*value.get_ref()),
            None => Ok(default),
        }
    }

    /// `[harness]`: only with a subject in mode `harness`; each value
    /// checked, a bad one named by its line.
    fn harness(
        &self,
        raw: Option<&Spanned<RawHarness>>,
        subjects: &[SubjectPlan],
    ) -> Result<HarnessPlan, PipelineError> {
        let Some(raw) = raw else {
            return Ok(HarnessPlan::default());
        };
        let in_harness = subjects.iter().any(|subject| {
            subject
                .runs
                .iter()
                .any(|run| run.mode == cfeval_infer::Mode::Harness)
        });
        if !in_harness {
            return Err(self.spanned(
                raw,
                "[harness] is set but no subject has `harness` in its `modes`",
            ));
        }
        let value = raw.get_ref();
        let mut thresholds = cfeval_infer::harness::Thresholds::default();
        let mut spans: Vec<(&str, std::ops::Range<usize>)> = Vec::new();
        macro_rules! take {
            ($field:ident, $key:literal) => {
                if let Some(given) = &value.$field {
                    thresholds.$field = *given.get_ref();
                    spans.push(($key, given.span()));
                }
            };
        }
        take!(max_steps, "max-steps");
        take!(max_entropy, "max-entropy");
        take!(relax_entropy_after, "relax-entropy-after");
        take!(entropy_relax_per_step, "entropy-relax-per-step");
        take!(max_entropy_ceiling, "max-entropy-ceiling");
        take!(min_coverage, "min-coverage");
        take!(lower_coverage_after, "lower-coverage-after");
        take!(coverage_drop_per_step, "coverage-drop-per-step");
        take!(coverage_floor, "coverage-floor");
        take!(spurious_drop, "spurious-drop");
        take!(passages, "passages");
        if let Some(problem) = thresholds.problems().into_iter().next() {
            let start = spans
                .iter()
                .find(|(key, _)| problem.starts_with(&format!("{key} ")))
                .map_or(raw.span().start, |(_, span)| span.start);
            return Err(self.at(start, format!("[harness]: {problem}")));
        }
        let corpus = match &value.corpus {
            Some(dir) => {
                let path = self.existing(dir, "corpus folder")?;
                if self.check_files && !path.is_dir() {
                    return Err(self.spanned(dir, format!("the corpus `{}` is not a folder", path.display())));
                }
                Some(path)
            }
            None => None,
        };
        let protocol = match &value.protocol {
            Some(protocol) => {
                cfeval_infer::harness::Protocol::parse(protocol.get_ref()).ok_or_else(|| {
                    self.spanned(
                        protocol,
                        format!("unknown harness protocol `{}` (auto or json)", protocol.get_ref()),
                    )
                })?
            }
            None => cfeval_infer::harness::Protocol::Auto,
        };
        Ok(HarnessPlan {
            thresholds,
            protocol,
            corpus,
        })
    }

    /// `[dialogue]`: needed by a subject in mode `dialogue`, and only then.
    fn dialogue(
        &self,
        raw: Option<&Spanned<RawDialogue>>,
        subjects: &[SubjectPlan],
    ) -> Result<Option<DialoguePlan>, PipelineError> {
        let in_dialogue = subjects.iter().find(|subject| {
            subject
                .runs
                .iter()
                .any(|run| run.mode == cfeval_infer::Mode::Dialogue)
        });
        let Some(raw) = raw else {
            return match in_dialogue {
                Some(subject) => Err(PipelineError {
                    file: self.file.to_path_buf(),
                    line: 0,
                    column: 0,
                    message: format!(
                        "subject `{}` runs in mode `dialogue`, which needs a patient agent: add [dialogue] with `patient = \"provider/model\"`",
                        subject.name
                    ),
                }),
                None => Ok(None),
            };
        };
        let value = raw.get_ref();
        if in_dialogue.is_none() {
            return Err(self.spanned(
                raw,
                "[dialogue] is set but no subject has `dialogue` in its `modes`",
            ));
        }
        if SubjectKind::is_control(value.patient.get_ref()) {
            return Err(self.spanned(
                &value.patient,
                format!(
                    "the patient `{}` is a control; a patient agent must be a model",
                    value.patient.get_ref()
                ),
            ));
        }
        self.model_name(&value.patient, "patient")?;
        if let Some(url) = &value.patient_base_url {
            self.url(url)?;
        }
        if let Some(env) = &value.patient_api_key_env {
            self.env_name(env)?;
        }
        if let Some(fallback) = &value.measurement_fallback {
            if SubjectKind::is_control(fallback.get_ref()) {
                return Err(self.spanned(
                    fallback,
                    format!(
                        "the measurement fallback `{}` is a control; it must be a model",
                        fallback.get_ref()
                    ),
                ));
            }
            self.model_name(fallback, "measurement-fallback")?;
        }
        if let Some(url) = &value.measurement_fallback_base_url {
            self.url(url)?;
        }
        if let Some(env) = &value.measurement_fallback_api_key_env {
            self.env_name(env)?;
        }
        let max_turns = match &value.max_turns {
            Some(turns) if *turns.get_ref() == 0 => {
                return Err(self.spanned(turns, "max-turns must be at least 1"));
            }
            Some(turns) => Some(*turns.get_ref()),
            None => None,
        };
        Ok(Some(DialoguePlan {
            patient: value.patient.get_ref().clone(),
            max_turns,
            patient_max_tokens: self.at_least_one(
                value.patient_max_tokens.as_ref(),
                128,
                "patient-max-tokens",
            )?,
            patient_temperature: self.temperature(value.patient_temperature.as_ref(), 0.0)?,
            patient_base_url: value.patient_base_url.as_ref().map(|url| url.get_ref().clone()),
            patient_api_key_env: value
                .patient_api_key_env
                .as_ref()
                .map(|env| env.get_ref().clone()),
            patient_limits: self.limits(value.patient_limits.as_ref())?,
            measurement_fallback: value
                .measurement_fallback
                .as_ref()
                .map(|name| name.get_ref().clone()),
            measurement_fallback_base_url: value
                .measurement_fallback_base_url
                .as_ref()
                .map(|url| url.get_ref().clone()),
            measurement_fallback_api_key_env: value
                .measurement_fallback_api_key_env
                .as_ref()
                .map(|env| env.get_ref().clone()),
        }))
    }

    /// A subject's batch mode: only a model subject on an HTTP protocol with
    /// batch endpoints, in single-shot mode; a positive poll interval and
    /// batch size.
    fn batch(
        &self,
        raw: &RawSubject,
        name: &str,
        runs: &[ModeRun],
    ) -> Result<Option<cfeval_infer::BatchMode>, PipelineError> {
        let on = raw.batch.as_ref().is_some_and(|value| *value.get_ref());
        let Some(switch) = raw.batch.as_ref().filter(|_| on) else {
            for (key, span) in [
                (
                    "batch-poll-secs",
                    raw.batch_poll_secs.as_ref().map(|value| value.span().start),
                ),
                (
                    "batch-max-requests",
                    raw.batch_max_requests.as_ref().map(|value| value.span().start),
                ),
            ] {
                if let Some(start) = span {
                    return Err(self.at(start, format!("subject `{name}`: {key} needs batch = true")));
                }
            }
            return Ok(None);
        };
        if SubjectKind::is_control(name) || name.starts_with(cfeval_schema::vocab::EMBEDDED_PREFIX) {
            return Err(self.spanned(
                switch,
                format!("subject `{name}`: batch = true is for models behind an API with batch endpoints (OpenAI-compatible or Anthropic), not a control or an embedded model"),
            ));
        }
        if let Some(run) = runs.iter().find(|run| run.mode != cfeval_infer::Mode::SingleShot) {
            return Err(self.spanned(
                switch,
                format!(
                    "subject `{name}`: batch = true answers single_shot only, not {} (its answers take several calls in turn)",
                    run.mode.as_str()
                ),
            ));
        }
        let mut mode = cfeval_infer::BatchMode::default();
        if let Some(poll) = &raw.batch_poll_secs {
            let secs = *poll.get_ref();
            if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
                return Err(self.spanned(poll, format!("batch-poll-secs {secs} is not in (0, 86400]")));
            }
            mode.poll = std::time::Duration::from_secs_f64(secs);
        }
        if let Some(size) = &raw.batch_max_requests {
            if *size.get_ref() == 0 {
                return Err(self.spanned(size, "batch-max-requests must be at least 1"));
            }
            mode.max_requests = *size.get_ref();
        }
        Ok(Some(mode))
    }

    fn temperature(&self, value: Option<&Spanned<f64>>, default: f64) -> Result<f64, PipelineError> {
        match value {
            Some(value) if !(0.0..=2.0).contains(value.get_ref()) => {
                Err(self.spanned(value, format!("temperature {} is not in [0, 2]", value.get_ref())))
            }
            Some(value) => Ok(*value.get_ref()),
            None => Ok(default),
        }
    }

    fn cases(&self, cases: &Spanned<RawCases>) -> Result<Cases, PipelineError> {
        let raw = cases.get_ref();
        match (&raw.cohort, &raw.inputs) {
            (Some(_), Some(inputs)) => {
                Err(self.spanned(inputs, "[cases] gives both `cohort` and `inputs`; choose one"))
            }
            (None, None) => Err(self.spanned(
                cases,
                "[cases] needs `cohort = { cases = N }` or `inputs = [\"path\", ...]`",
            )),
            (Some(cohort), None) => {
                if let Some(format) = &raw.format {
                    return Err(self.spanned(format, "`format` applies to `inputs`, not to a cohort"));
                }
                if let Some(value) = &raw.max_case_bytes {
                    return Err(self.spanned(value, "`max-case-bytes` applies to `inputs`, not to a cohort"));
                }
                if let Some(value) = &raw.follow_symlinks {
                    return Err(self.spanned(value, "`follow-symlinks` applies to `inputs`, not to a cohort"));
                }
                if let Some(value) = &raw.limit {
                    return Err(self.spanned(value, "`limit` applies to `inputs`; a cohort has `cases`"));
                }
                let count = cohort.get_ref().cases.get_ref();
                if *count == 0 {
                    return Err(self.spanned(&cohort.get_ref().cases, "a cohort needs at least 1 case"));
                }
                if *count > MAX_COHORT_CASES {
                    return Err(self.spanned(
                        &cohort.get_ref().cases,
                        format!(
                            "a cohort of {count} cases is over the limit of {MAX_COHORT_CASES}; for more, generate several cohorts with `cfeval cohort` and give them as `inputs`"
                        ),
                    ));
                }
                Ok(Cases::Cohort {
                    cases: *count,
                    seed: cohort.get_ref().seed.unwrap_or(0),
                })
            }
            (None, Some(inputs)) => {
                if inputs.get_ref().is_empty() {
                    return Err(self.spanned(inputs, "`inputs` is empty"));
                }
                let paths = inputs
                    .get_ref()
                    .iter()
                    .map(|path| self.existing(path, "input"))
                    .collect::<Result<Vec<_>, _>>()?;
                let format = match &raw.format {
                    Some(format) => parse_format(format.get_ref()).ok_or_else(|| {
                        self.spanned(
                            format,
                            format!(
                                "unknown format `{}` (auto, text, jsonl, agentclinic or csv)",
                                format.get_ref()
                            ),
                        )
                    })?,
                    None => cfeval_synthesize::InputFormat::Auto,
                };
                let max_case_bytes = self.positive(
                    raw.max_case_bytes.as_ref(),
                    cfeval_synthesize::Config::default().max_case_bytes,
                    "max-case-bytes",
                )?;
                let limit = match &raw.limit {
                    Some(limit) if *limit.get_ref() == 0 => {
                        return Err(
                            self.spanned(limit, "limit must be at least 1 (leave it out for every case)")
                        );
                    }
                    Some(limit) => Some(*limit.get_ref()),
                    None => None,
                };
                Ok(Cases::Inputs {
                    paths,
                    format,
                    max_case_bytes,
                    follow_symlinks: raw.follow_symlinks.as_ref().is_some_and(|value| *value.get_ref()),
                    limit,
                })
            }
        }
    }

    fn extractor(&self, raw: &RawCases) -> Result<ExtractorPlan, PipelineError> {
        let mode = match &raw.extractor {
            None => cfeval_synthesize::ExtractorMode::Rule,
            Some(value) => cfeval_synthesize::ExtractorMode::parse(value.get_ref()).ok_or_else(|| {
                self.spanned(
                    value,
                    format!("unknown extractor `{}` (rule, llm or both)", value.get_ref()),
                )
            })?,
        };
        let model = raw.extractor_model.as_ref();
        match (mode, model) {
            (cfeval_synthesize::ExtractorMode::Rule, Some(model)) => {
                return Err(self.spanned(
                    model,
                    "`extractor-model` is for `extractor = \"llm\"` or `\"both\"`",
                ));
            }
            (cfeval_synthesize::ExtractorMode::Rule, None) => {}
            (_, None) => {
                let value = raw.extractor.as_ref().expect("a model extractor was named");
                return Err(self.spanned(
                    value,
                    format!(
                        "extractor `{}` needs `extractor-model` (e.g. \"embedded/SmolLM2-135M-Instruct\" or \"openai/gpt-5\")",
                        value.get_ref()
                    ),
                ));
            }
            (_, Some(model)) => {
                if SubjectKind::is_control(model.get_ref()) || !model.get_ref().contains('/') {
                    return Err(self.spanned(
                        model,
                        format!(
                            "extractor-model `{}` is not `provider/model` or `embedded/<model>`",
                            model.get_ref()
                        ),
                    ));
                }
            }
        }
        if let Some(url) = &raw.extractor_base_url {
            self.url(url)?;
        }
        if let Some(env) = &raw.extractor_api_key_env {
            self.env_name(env)?;
        }
        Ok(ExtractorPlan {
            mode,
            model: model.map(|model| model.get_ref().clone()),
            base_url: raw
                .extractor_base_url
                .as_ref()
                .map(|value| value.get_ref().clone()),
            api_key_env: raw
                .extractor_api_key_env
                .as_ref()
                .map(|value| value.get_ref().clone()),
        })
    }

    fn families(&self, values: &[Spanned<String>], known: &[String]) -> Result<Vec<String>, PipelineError> {
        let mut families = Vec::new();
        for value in values {
            if !known.contains(value.get_ref()) {
                return Err(self.spanned(
                    value,
                    format!(
                        "unknown family `{}` (the pack's are {})",
                        value.get_ref(),
                        known.join(", ")
                    ),
                ));
            }
            if !families.contains(value.get_ref()) {
                families.push(value.get_ref().clone());
            }
        }
        Ok(families)
    }

    fn model_name(&self, name: &Spanned<String>, role: &str) -> Result<(), PipelineError> {
        let value = name.get_ref();
        if let SubjectKind::Embedded(model) = SubjectKind::of(value) {
            if model.is_empty() {
                return Err(self.spanned(name, format!("{role} `{value}` names no embedded model")));
            }
            return Ok(());
        }
        // The provider table decides; environment values are not needed to
        // know whether the name is well formed.
        let spec = SubjectSpec::new(SubjectName::model_of(value));
        let placeholder = |var: &str| {
            Some(
                if var.ends_with("_BASE_URL") {
                    "http://localhost"
                } else {
                    "placeholder"
                }
                .to_string(),
            )
        };
        match spec.resolve_with(&placeholder) {
            Ok(_) => Ok(()),
            Err(error) => Err(self.spanned(name, format!("{role} `{value}`: {error}"))),
        }
    }

    fn limits(&self, limits: Option<&Spanned<Limits>>) -> Result<Option<Limits>, PipelineError> {
        match limits {
            Some(limits) => match limits.get_ref().validate() {
                Ok(()) => Ok(Some(limits.get_ref().clone())),
                Err(error) => Err(self.spanned(limits, format!("invalid limits: {error}"))),
            },
            None => Ok(None),
        }
    }

    fn subject(
        &self,
        subject: &Spanned<RawSubject>,
        defaults: &Defaults,
    ) -> Result<SubjectPlan, PipelineError> {
        let raw = subject.get_ref();
        let name = raw.name.get_ref().clone();
        let control = SubjectKind::is_control(&name);
        if control {
            let guidelines = cfeval_guidelines::Guidelines::builtin()
                .map_err(|error| self.spanned(&raw.name, error.to_string()))?;
            cfeval_infer::Control::parse(&name, guidelines)
                .map_err(|error| self.spanned(&raw.name, format!("subject `{name}`: {error}")))?;
            for (key, present) in [
                ("base-url", raw.base_url.as_ref().map(|value| value.span().start)),
                (
                    "api-key-env",
                    raw.api_key_env.as_ref().map(|value| value.span().start),
                ),
                ("limits", raw.limits.as_ref().map(|value| value.span().start)),
                (
                    "concurrency",
                    raw.concurrency.as_ref().map(|value| value.span().start),
                ),
            ] {
                if let Some(offset) = present {
                    return Err(self.at(
                        offset,
                        format!("`{key}` does not apply to the control subject `{name}` (it makes no calls)"),
                    ));
                }
            }
        } else {
            self.model_name(&raw.name, "subject")?;
        }
        let modes = match &raw.modes {
            Some(modes) => {
                if modes.get_ref().is_empty() {
                    return Err(
                        self.spanned(modes, "`modes` is empty (single_shot, agent, dialogue, harness)")
                    );
                }
                let mut parsed = Vec::new();
                for mode in modes.get_ref() {
                    let value = parse_mode(mode.get_ref()).ok_or_else(|| {
                        self.spanned(
                            mode,
                            format!(
                                "unknown mode `{}` (single_shot, agent, dialogue or harness)",
                                mode.get_ref()
                            ),
                        )
                    })?;
                    if parsed.contains(&value) {
                        return Err(self.spanned(mode, format!("mode `{}` is named twice", mode.get_ref())));
                    }
                    parsed.push(value);
                }
                parsed
            }
            None => vec![cfeval_infer::Mode::SingleShot],
        };
        let families = match &raw.families {
            Some(values) => self.families(values, &defaults.families)?,
            None => Vec::new(),
        };
        let agent_families = match &raw.agent_families {
            Some(values) => {
                if !modes.contains(&cfeval_infer::Mode::Agent) {
                    return Err(self.spanned(values, "`agent-families` is set but `modes` has no `agent`"));
                }
                Some(self.families(values.get_ref(), &defaults.families)?)
            }
            None => None,
        };
        let options = SubjectName::parse(&name).map_err(|error| self.spanned(&raw.name, error))?;
        if !options.options.is_empty() {
            if modes != [cfeval_infer::Mode::Dialogue] {
                return Err(self.spanned(
                    &raw.name,
                    format!("`{name}` has options (+…), which are settings of mode dialogue: give it `modes = [\"dialogue\"]`"),
                ));
            }
            if control && (options.bias().is_some() || options.reflects() || options.keeps_notebook()) {
                return Err(self.spanned(
                    &raw.name,
                    format!("`{name}`: a control doctor takes `+turns=` only (it neither reads a bias, reflects nor keeps a notebook)"),
                ));
            }
            if let (Some(bias), Some(pack)) = (options.bias(), defaults.pack.as_deref())
                && self.check_files
            {
                cfeval_diagnosis::dialogue::find_bias(pack, bias)
                    .map_err(|error| self.spanned(&raw.name, error.to_string()))?;
            }
        }
        let runs: Vec<ModeRun> = modes
            .iter()
            .map(|&mode| ModeRun {
                mode,
                families: match (mode, &agent_families) {
                    (cfeval_infer::Mode::Agent, Some(agent)) => agent.clone(),
                    _ => families.clone(),
                },
            })
            .collect();
        let mut limits = self.limits(raw.limits.as_ref())?;
        if let Some(concurrency) = &raw.concurrency {
            if *concurrency.get_ref() == 0 {
                return Err(self.spanned(concurrency, "concurrency must be at least 1"));
            }
            limits.get_or_insert_with(Limits::default).max_concurrency = *concurrency.get_ref();
        }
        if let Some(rpm) = raw.requests_per_minute {
            limits.get_or_insert_with(Limits::default).requests_per_minute = Some(rpm);
        }
        if let Some(tpm) = raw.tokens_per_minute {
            limits.get_or_insert_with(Limits::default).tokens_per_minute = Some(tpm);
        }
        if let Some(limits) = &limits
            && let Err(error) = limits.validate()
        {
            return Err(self.spanned(&raw.name, format!("subject `{name}`: invalid limits: {error}")));
        }
        if let Some(url) = &raw.base_url {
            self.url(url)?;
        }
        if let Some(env) = &raw.api_key_env {
            self.env_name(env)?;
        }
        let batch = self.batch(raw, &name, runs.as_slice())?;
        Ok(SubjectPlan {
            batch,
            name,
            runs,
            base_url: raw.base_url.as_ref().map(|value| value.get_ref().clone()),
            api_key_env: raw.api_key_env.as_ref().map(|value| value.get_ref().clone()),
            limits,
            price: raw.price,
            max_tokens: self.at_least_one(raw.max_tokens.as_ref(), defaults.max_tokens, "max-tokens")?,
            max_steps: self.at_least_one(raw.max_steps.as_ref(), defaults.max_steps, "max-steps")?,
            temperature: self.temperature(raw.temperature.as_ref(), defaults.temperature)?,
            samples: self.at_least_one(raw.samples.as_ref(), defaults.samples, "samples")?,
            prompt_set: match &raw.prompt_set {
                None => cfeval_infer::Prompts::NEUTRAL.to_string(),
                Some(set) if cfeval_infer::Prompts::named(set.get_ref()).is_some() => set.get_ref().clone(),
                Some(set) => {
                    return Err(self.spanned(
                        set,
                        format!(
                            "prompt-set `{}` is not one of {}",
                            set.get_ref(),
                            cfeval_infer::Prompts::SETS.join(", ")
                        ),
                    ));
                }
            },
        })
    }

    fn url(&self, url: &Spanned<String>) -> Result<(), PipelineError> {
        let value = url.get_ref();
        if !(value.starts_with("http://") || value.starts_with("https://")) {
            return Err(self.spanned(
                url,
                format!("base-url `{value}` must start with http:// or https://"),
            ));
        }
        Ok(())
    }

    fn env_name(&self, env: &Spanned<String>) -> Result<(), PipelineError> {
        let value = env.get_ref();
        let valid = !value.is_empty()
            && !value.starts_with(|c: char| c.is_ascii_digit())
            && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            // Someone pasted the key itself here: never echo it.
            return Err(self.spanned(
                env,
                "api-key-env must be the NAME of an environment variable (e.g. OPENAI_API_KEY), not a key",
            ));
        }
        Ok(())
    }

    fn judge(
        &self,
        judge: &Spanned<RawJudge>,
        subjects: &[SubjectPlan],
        families: &cfeval_judge::Families,
        pack_families: &[String],
    ) -> Result<JudgePlan, PipelineError> {
        let raw = judge.get_ref();
        let name = raw.name.get_ref().clone();
        if SubjectKind::is_control(&name) {
            return Err(self.spanned(
                &raw.name,
                format!("`{name}` is a control subject, not a judge (use `rule` or a model name)"),
            ));
        }
        let rule = name == cfeval_judge::RuleJudge::NAME;
        let rubric = name.starts_with(cfeval_judge::rubric::judge::PREFIX);
        if !rubric {
            for (key, present) in [
                ("cases", raw.cases.as_ref().map(|value| value.span().start)),
                ("profile", raw.profile.as_ref().map(|value| value.span().start)),
            ] {
                if let Some(offset) = present {
                    return Err(self.at(
                        offset,
                        format!("`{key}` is an option of a rubric judge (`rubric:<model>`), not of `{name}`"),
                    ));
                }
            }
        }
        if let Some(cases) = &raw.cases
            && *cases.get_ref() == 0
        {
            return Err(self.spanned(cases, "cases must be at least 1"));
        }
        if let Some(profile) = &raw.profile {
            let known = cfeval_judge::rubric::Rubric::builtin()
                .map(|rubric| rubric.profiles.keys().cloned().collect::<Vec<_>>())
                .unwrap_or_default();
            if !known.contains(profile.get_ref()) {
                return Err(self.spanned(
                    profile,
                    format!(
                        "rubric profile `{}` is not one of {}",
                        profile.get_ref(),
                        known.join(", ")
                    ),
                ));
            }
        }
        // `cascade:rule,<model>` and `rubric:<model>`: the model part is
        // what calls a model, and what the self-preference guard checks.
        let model = match name.strip_prefix("cascade:") {
            Some(chain) => match chain.split_once(',') {
                Some((first, model))
                    if first == cfeval_judge::RuleJudge::NAME
                        && !model.is_empty()
                        && !model.contains(',') =>
                {
                    model.to_string()
                }
                _ => {
                    return Err(self.spanned(
                        &raw.name,
                        format!("judge `{name}`: a cascade is `cascade:rule,<model>` (the rule judge first, then one model)"),
                    ));
                }
            },
            None => crate::judge_cmd::judge_model(&name).to_string(),
        };
        if rubric
            && (model.is_empty() || model == cfeval_judge::RuleJudge::NAME || SubjectKind::is_control(&model))
        {
            return Err(self.spanned(
                &raw.name,
                format!("judge `{name}`: a rubric judge is `rubric:<model>` (a model scores the rubric)"),
            ));
        }
        if !rule {
            self.model_name(&Spanned::new(raw.name.span(), model.clone()), "judge")?;
        }
        if let Some(fallback) = &raw.fallback {
            if rule {
                return Err(self.spanned(fallback, "the rule judge needs no fallback"));
            }
            if fallback.get_ref() == &name {
                return Err(self.spanned(fallback, "a judge cannot be its own fallback"));
            }
            if SubjectKind::is_control(fallback.get_ref())
                || fallback.get_ref() == cfeval_judge::RuleJudge::NAME
            {
                return Err(self.spanned(
                    fallback,
                    format!("fallback `{}` must be a model judge", fallback.get_ref()),
                ));
            }
            self.model_name(fallback, "fallback judge")?;
        }
        let mut only_subjects = Vec::new();
        for subject in raw.subjects.iter().flatten() {
            if !subjects.iter().any(|plan| &plan.name == subject.get_ref()) {
                return Err(self.spanned(
                    subject,
                    format!(
                        "judge `{name}` names `{}`, which is not a subject of this pipeline",
                        subject.get_ref()
                    ),
                ));
            }
            only_subjects.push(subject.get_ref().clone());
        }
        let only_families = match &raw.families {
            Some(values) => self.families(values, pack_families)?,
            None => Vec::new(),
        };
        if !rule {
            let fallback = raw.fallback.as_ref().map(|value| value.get_ref().as_str());
            let judged = subjects
                .iter()
                .filter(|subject| only_subjects.is_empty() || only_subjects.contains(&subject.name));
            for subject in judged {
                if let Err(error) = families.guard(&model, fallback, &subject.name) {
                    let at = raw
                        .fallback
                        .as_ref()
                        .map_or(raw.name.span().start, |value| value.span().start);
                    return Err(self.at(at, format!("judge `{name}`: {error}")));
                }
            }
        }
        if let Some(url) = &raw.base_url {
            self.url(url)?;
        }
        if let Some(env) = &raw.api_key_env {
            self.env_name(env)?;
        }
        if let Some(max_tokens) = &raw.max_tokens
            && *max_tokens.get_ref() < 16
        {
            return Err(self.spanned(max_tokens, "max-tokens below 16 cannot hold a verdict"));
        }
        if rule {
            for (key, present) in [
                (
                    "max-tokens",
                    raw.max_tokens.as_ref().map(|value| value.span().start),
                ),
                ("base-url", raw.base_url.as_ref().map(|value| value.span().start)),
                (
                    "api-key-env",
                    raw.api_key_env.as_ref().map(|value| value.span().start),
                ),
                ("limits", raw.limits.as_ref().map(|value| value.span().start)),
            ] {
                if let Some(offset) = present {
                    return Err(self.at(offset, format!("`{key}` does not apply to the rule judge")));
                }
            }
        }
        Ok(JudgePlan {
            name,
            fallback: raw.fallback.as_ref().map(|value| value.get_ref().clone()),
            subjects: only_subjects,
            families: only_families,
            max_tokens: raw.max_tokens.as_ref().map(|value| *value.get_ref()),
            base_url: raw.base_url.as_ref().map(|value| value.get_ref().clone()),
            api_key_env: raw.api_key_env.as_ref().map(|value| value.get_ref().clone()),
            limits: self.limits(raw.limits.as_ref())?,
            cases: raw.cases.as_ref().map(|value| *value.get_ref()),
            profile: raw.profile.as_ref().map(|value| value.get_ref().clone()),
        })
    }
}

struct Defaults {
    max_tokens: u32,
    max_steps: u32,
    temperature: f64,
    samples: u32,
    /// The families of the run's pack (the built-in oncology's without one).
    families: Vec<String>,
    /// The run's pack folder, if it names one.
    pack: Option<PathBuf>,
}

/// One model a pipeline calls, for the environment check.
struct Endpoint<'a> {
    /// The name as the pipeline writes it (what error lines point at).
    name: &'a str,
    /// The model it calls (a cascade judge's model part).
    model: &'a str,
    role: &'a str,
    base_url: Option<&'a String>,
    api_key_env: Option<&'a String>,
}

impl Pipeline {
    fn endpoints(&self) -> Vec<Endpoint<'_>> {
        let mut endpoints = Vec::new();
        if let Some(model) = &self.extractor.model {
            endpoints.push(Endpoint {
                name: model,
                model,
                role: "extractor",
                base_url: self.extractor.base_url.as_ref(),
                api_key_env: self.extractor.api_key_env.as_ref(),
            });
        }
        for subject in self.subjects.iter().filter(|subject| !subject.is_control()) {
            endpoints.push(Endpoint {
                name: &subject.name,
                model: &subject.name,
                role: "subject",
                base_url: subject.base_url.as_ref(),
                api_key_env: subject.api_key_env.as_ref(),
            });
        }
        if let Some(dialogue) = &self.dialogue {
            endpoints.push(Endpoint {
                name: &dialogue.patient,
                model: &dialogue.patient,
                role: "patient",
                base_url: dialogue.patient_base_url.as_ref(),
                api_key_env: dialogue.patient_api_key_env.as_ref(),
            });
            if let Some(fallback) = &dialogue.measurement_fallback {
                endpoints.push(Endpoint {
                    name: fallback,
                    model: fallback,
                    role: "measurement fallback",
                    base_url: dialogue.measurement_fallback_base_url.as_ref(),
                    api_key_env: dialogue.measurement_fallback_api_key_env.as_ref(),
                });
            }
        }
        for judge in &self.judges {
            let Some(model) = judge.model() else {
                continue;
            };
            endpoints.push(Endpoint {
                name: &judge.name,
                model,
                role: "judge",
                base_url: judge.base_url.as_ref(),
                api_key_env: judge.api_key_env.as_ref(),
            });
            if let Some(fallback) = &judge.fallback {
                endpoints.push(Endpoint {
                    name: fallback,
                    model: fallback,
                    role: "fallback judge",
                    base_url: None,
                    api_key_env: None,
                });
            }
        }
        endpoints
    }

    /// What the environment lacks for this pipeline: API keys and base URLs
    /// (named by variable, never by value) and the embedded model file. Each
    /// problem names the line of the subject or judge that needs it.
    pub fn check_environment(&self, env: &dyn Fn(&str) -> Option<String>) -> Vec<PipelineError> {
        let mut problems = Vec::new();
        for endpoint in self.endpoints() {
            let message = if SubjectKind::is_embedded(endpoint.model) {
                let path = cfeval_embedded::default_model_path();
                (!path.exists()).then(|| {
                    format!(
                        "{} `{}`: the embedded model is not at {} (run `bash scripts/install.sh`, or set CFEVAL_MODEL_PATH)",
                        endpoint.role,
                        endpoint.name,
                        path.display()
                    )
                })
            } else {
                let mut spec = SubjectSpec::new(SubjectName::model_of(endpoint.model));
                spec.base_url = endpoint.base_url.cloned();
                spec.api_key_env = endpoint.api_key_env.cloned();
                spec.resolve_with(env)
                    .err()
                    .map(|error| format!("{} `{}`: {error}", endpoint.role, endpoint.name))
            };
            if let Some(message) = message {
                let (line, column) = self.locate(endpoint.name);
                problems.push(PipelineError {
                    file: self.file.clone(),
                    line,
                    column,
                    message,
                });
            }
        }
        problems
    }

    /// The line and column where `name` is first written as a value.
    fn locate(&self, name: &str) -> (usize, usize) {
        let quoted = format!("\"{name}\"");
        match self.text.find(&quoted) {
            Some(offset) => line_column(&self.text, offset),
            None => (0, 0),
        }
    }
}
