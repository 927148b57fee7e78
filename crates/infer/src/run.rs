//! The infer stage over a run: stream `variants`, skip what is already in
//! `responses` for this subject and mode, answer the rest through a sliding
//! window of calls in flight (a new call starts as soon as one ends, never
//! waiting for a chunk's slowest), and commit the rows in tuple order, a
//! chunk at a time. A task that fails for any reason (a panic) becomes an
//! error row, never a missing tuple.
//!
//! With [`Config::samples`] = k, every variant is answered k times (a tuple
//! is then a variant and a sample number): sample `i` is the same request
//! with its own seed and cache salt ([`CallSettings::for_sample`]), so the
//! spread of a subject's answers to one chart can be measured.
//!
//! A rerun also tries again the tuples of this unit whose row is not `ok`
//! (an error or an unusable reply) and that were tried fewer than
//! [`Config::max_tries`] times. Readers always see one row per tuple: the
//! retried rows of a chunk replace the old ones by rewriting the shards that
//! held them (their `ok` rows copied forward) as one new shard whose
//! manifest entry replaces them (`cfeval_schema::shard`), so a kill at any
//! point leaves either the old rows or the new ones.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cfeval_schema::{
    CaseRow, Progress, Provenance, ResponseRow, ResponseStatus, ShardEntry, ShardStore, StoreOptions, Table,
    VariantRow, ids,
};
use serde::{Deserialize, Serialize};

use cfeval_schema::lineage::CatalogConflict;

use crate::dialogue::Dialogue;
use crate::error::{Error, Result};
use crate::harness::Harness;
use crate::prompt::Prompts;
use crate::respond::{CallSettings, Mode, Subject, respond};

/// One slice `index/count` (1-based) of the variants, chosen by a hash of the
/// variant id, so that `count` independent processes cover every variant once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Slice {
    pub index: u32,
    pub count: u32,
}

impl Slice {
    /// The whole stage.
    pub const ALL: Slice = Slice { index: 1, count: 1 };

    /// Parses `i/n`.
    pub fn parse(text: &str) -> Result<Self> {
        let parsed = text.split_once('/').and_then(|(index, count)| {
            Some((
                index.trim().parse::<u32>().ok()?,
                count.trim().parse::<u32>().ok()?,
            ))
        });
        match parsed {
            Some((index, count)) if index >= 1 && index <= count => Ok(Self { index, count }),
            _ => Err(Error::Slice(text.to_string())),
        }
    }

    /// Whether `id` belongs to this slice.
    pub fn contains(&self, id: &str) -> bool {
        if self.count <= 1 {
            return true;
        }
        cfeval_schema::ids::id_hash(id) % u64::from(self.count) == u64::from(self.index - 1)
    }
}

/// Whether a unit of `slice` limited to `families` (empty: all) answers
/// `variant`: the one selection predicate (infer, the driver's plan and its
/// progress bars all ask it).
pub fn answers(slice: Slice, families: &[String], variant: &VariantRow) -> bool {
    answers_variant(
        slice,
        families,
        &variant.variant_id,
        &variant.family,
        variant.applicable,
    )
}

/// [`answers`] over a variant's id, family and applicability (for readers
/// of a projection of the variants).
pub fn answers_variant(
    slice: Slice,
    families: &[String],
    variant_id: &str,
    family: &str,
    applicable: bool,
) -> bool {
    applicable && slice.contains(variant_id) && cfeval_schema::vocab::covers_family(families, family)
}

/// Settings of one infer run.
#[derive(Debug, Clone)]
pub struct Config {
    pub run: String,
    pub mode: Mode,
    pub settings: CallSettings,
    pub prompts: Prompts,
    /// Calls in flight at once (the model client may lower it further).
    pub concurrency: usize,
    /// Rows answered between two commits, at least.
    pub chunk: usize,
    /// After `chunk` rows, commit only once this long has passed since the
    /// last commit (or `COMMIT_CAP` chunks are waiting): a fast run writes
    /// fewer, larger shards, and a crash loses at most this long of answers
    /// (asked again, from the cache). Zero commits every `chunk` rows.
    pub commit_every: std::time::Duration,
    pub slice: Slice,
    /// Only these families (empty: all).
    pub families: Vec<String>,
    pub allow_mixed_catalogs: bool,
    /// Answers per variant (repeated samples; 1: each variant once). Raising
    /// it answers only the new samples: sample 0 is the request of a
    /// one-sample run.
    pub samples: u32,
    /// Tries per tuple, across runs: a row that is not `ok` is tried again
    /// on a rerun until it has been tried this many times (then it is left
    /// as it is). Not part of the fingerprint: raising it retries more.
    pub max_tries: u32,
    /// Called with the number of tuples finished (answered or found done).
    pub progress: Option<Progress>,
    /// The patient agent and interaction limit of mode `dialogue`.
    pub dialogue: Option<DialogueSetup>,
    /// The Observer's thresholds and the Consultant's corpus of mode
    /// `harness` (`None`: the defaults and the pack's corpus).
    pub harness: Option<HarnessSetup>,
    /// Send the unit's requests through the provider's batch endpoints
    /// first (single-shot model subjects; see [`cfeval_model::batch`]).
    /// Not part of the fingerprint: a batch and a live sweep are the same
    /// answers.
    pub batch: Option<BatchMode>,
}

/// How a unit's requests go through the batch endpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchMode {
    /// Time between two polls of a running batch.
    pub poll: std::time::Duration,
    /// Requests per batch, at most.
    pub max_requests: usize,
}

impl Default for BatchMode {
    fn default() -> Self {
        Self {
            poll: cfeval_model::batch::BatchSettings::DEFAULT_POLL,
            max_requests: cfeval_model::batch::BatchSettings::DEFAULT_MAX_REQUESTS,
        }
    }
}

/// Where a unit's batch state lives: `RUN/batches/<unit>.json`, the unit's
/// `/` and `=` made file-name safe.
pub fn batch_state_path(run_dir: &Path, unit: &str) -> std::path::PathBuf {
    let name: String = unit
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    run_dir.join("batches").join(format!("{name}.json"))
}

/// What mode `harness` runs with besides the pack.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HarnessSetup {
    pub thresholds: crate::harness::Thresholds,
    pub protocol: crate::harness::Protocol,
    /// The Consultant's corpus: a folder of `.md` and `.txt` files that
    /// replaces the built-in one (the pack's `corpus/` folder with its
    /// ontology's definitions, or the treatment task's guideline text).
    pub corpus: Option<PathBuf>,
}

#[derive(Serialize)]
struct HarnessFingerprint<'a> {
    thresholds: &'a crate::harness::Thresholds,
    protocol: crate::harness::Protocol,
    /// A corpus of the user's: the content hash of its passages (the
    /// built-in one is part of the pack, which the variants carry).
    #[serde(skip_serializing_if = "Option::is_none")]
    corpus: Option<String>,
}

/// What mode `dialogue` needs besides the pack: the patient agent (a model;
/// recorded on every row) and the interaction limit.
#[derive(Debug, Clone)]
pub struct DialogueSetup {
    /// The patient agent's subject name.
    pub patient: String,
    /// The patient's calls: temperature, seed, tokens.
    pub patient_settings: CallSettings,
    /// The doctor's turns at most; `None`: the pack's `max_turns`.
    pub max_turns: Option<u32>,
    /// The patient agent itself (needed to run, not to plan or fingerprint).
    pub patient_subject: Option<Arc<Subject>>,
    /// The bias the dialogues run under (an id of the pack's `biases.yaml`).
    pub bias: Option<String>,
    /// The doctor's `reflect` tool: one self-review step before it finishes.
    pub reflect: bool,
    /// The doctor's `notebook` tool: one notebook across the run's cases.
    pub notebook: bool,
    /// The measurement agent's model fallback, by subject name (off: `None`).
    pub fallback: Option<String>,
    /// The fallback model itself (needed to run, not to plan or fingerprint).
    pub fallback_subject: Option<Arc<Subject>>,
}

impl DialogueSetup {
    /// Applies a subject's options (`+turns=N` over the run's limit,
    /// `+bias=<id>`, `+reflect`); a name with none leaves the setup as it is.
    pub fn with_options_of(mut self, subject: &str) -> Self {
        if let Ok(name) = cfeval_schema::vocab::SubjectName::parse(subject) {
            self.max_turns = name.turns().or(self.max_turns);
            self.bias = name.bias().map(str::to_string);
            self.reflect = name.reflects();
            self.notebook = name.keeps_notebook();
        }
        self
    }
}

#[derive(Serialize)]
struct DialogueFingerprint<'a> {
    patient: &'a str,
    patient_temperature: f64,
    patient_seed: Option<u64>,
    patient_max_tokens: u32,
    max_turns: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bias: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    reflect: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    notebook: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<&'a str>,
}

/// Tokens of the measurement fallback's reply (a number).
const FALLBACK_MAX_TOKENS: u32 = 16;

/// The default of [`Config::max_tries`].
pub const DEFAULT_MAX_TRIES: u32 = 3;

impl Default for Config {
    fn default() -> Self {
        Self {
            run: "run".into(),
            mode: Mode::SingleShot,
            settings: CallSettings::default(),
            prompts: Prompts::default(),
            concurrency: 16,
            chunk: 256,
            commit_every: std::time::Duration::ZERO,
            slice: Slice::ALL,
            families: Vec::new(),
            allow_mixed_catalogs: false,
            samples: 1,
            max_tries: DEFAULT_MAX_TRIES,
            progress: None,
            dialogue: None,
            harness: None,
            batch: None,
        }
    }
}

/// What an infer run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub subject: String,
    pub mode: String,
    /// Tuples (variant × sample) this run (slice) covers.
    pub tuples: u64,
    /// Already answered before this run started (and not retried).
    pub skipped: u64,
    /// Answered in this run (retries included).
    pub answered: u64,
    /// Of those, tuples tried again because their row was not `ok`.
    pub retried: u64,
    /// Rows answered in this run that are not `ok`.
    pub errors: u64,
    /// Rows left not `ok` because they were tried `max_tries` times.
    pub gave_up: u64,
    pub cached: u64,
    /// HTTP requests made for the rows answered in this run (retries
    /// included; 0 for answers from the cache). A dialogue or an agent makes
    /// several per tuple.
    pub requests: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    /// What the batch endpoints did, in batch mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch: Option<cfeval_model::batch::BatchReport>,
}

#[derive(Serialize)]
struct Fingerprint<'a> {
    subject: &'a str,
    mode: &'a str,
    prompt_hash: String,
    temperature: f64,
    seed: Option<u64>,
    max_tokens: u32,
    max_steps: u32,
    /// Left out at 1, so one-sample units keep their fingerprint.
    #[serde(skip_serializing_if = "is_one")]
    samples: u32,
    families: &'a [String],
    variants: Vec<String>,
    /// Mode `dialogue` only, so other units keep their fingerprint.
    #[serde(skip_serializing_if = "Option::is_none")]
    dialogue: Option<DialogueFingerprint<'a>>,
    /// Mode `harness` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    harness: Option<HarnessFingerprint<'a>>,
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

/// The unit of work a subject × mode × slice is recorded under.
pub fn unit(subject: &str, mode: Mode, slice: Slice) -> String {
    cfeval_schema::units::ResponseUnit {
        subject,
        mode: mode.as_str(),
        index: slice.index,
        count: slice.count,
    }
    .to_string()
}

/// The fingerprint of everything an infer unit's output depends on.
pub fn fingerprint(config: &Config, subject: &str, variants: &ShardStore) -> String {
    let default_harness = HarnessSetup::default();
    let harness = config.harness.as_ref().unwrap_or(&default_harness);
    ids::fingerprint(&Fingerprint {
        subject,
        mode: config.mode.as_str(),
        prompt_hash: config.prompts.hash(config.mode),
        temperature: config.settings.temperature,
        seed: config.settings.seed,
        max_tokens: config.settings.max_tokens,
        max_steps: config.settings.max_steps,
        samples: config.samples.max(1),
        families: &config.families,
        variants: variants
            .entries()
            .iter()
            .map(|entry| entry.blake3.clone())
            .collect(),
        dialogue: config
            .dialogue
            .as_ref()
            .filter(|_| config.mode == Mode::Dialogue)
            .map(|setup| DialogueFingerprint {
                patient: &setup.patient,
                patient_temperature: setup.patient_settings.temperature,
                patient_seed: setup.patient_settings.seed,
                patient_max_tokens: setup.patient_settings.max_tokens,
                max_turns: setup.max_turns,
                bias: setup.bias.as_deref(),
                reflect: setup.reflect,
                notebook: setup.notebook,
                fallback: setup.fallback.as_deref(),
            }),
        harness: (config.mode == Mode::Harness).then(|| HarnessFingerprint {
            thresholds: &harness.thresholds,
            protocol: harness.protocol,
            corpus: harness
                .corpus
                .as_deref()
                .map(|dir| match cfeval_consult::read_dir(dir) {
                    Ok(passages) => cfeval_consult::passages_hash(&passages),
                    // Unreadable: the run fails when it loads it.
                    Err(error) => format!("unreadable: {error}"),
                }),
        }),
    })
}

/// Variant rows per read batch (a few MiB).
const VARIANT_BATCH_ROWS: usize = 1024;

/// Runs `subject` over the run's variants (blocking; builds its own runtime).
pub fn run(config: &Config, subject: Arc<Subject>, run_dir: &Path) -> Result<Report> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    runtime.block_on(run_async(config, subject, run_dir))
}

/// The `notebook` tool: fills the notebooks of `dialogue` from the run's
/// baseline dialogues, in case order (every slice builds the whole chain:
/// a case's notebook depends on every earlier case); a committed row of the
/// unit that started from another notebook (a rerun whose calls were not
/// all served from the cache) retires the unit, so it is answered again
/// whole. Returns the HTTP requests made.
async fn notebooks(
    config: &Config,
    subject: &Arc<Subject>,
    variants: &ShardStore,
    dialogue: &mut Dialogue,
    responses: &mut ShardStore,
    unit: &str,
) -> Result<u64> {
    let mut baselines = Vec::new();
    for batch in variants.read_rows::<VariantRow>()? {
        for variant in batch? {
            if variant.intervention == cfeval_schema::vocab::BASELINE {
                baselines.push(Arc::new(variant));
            }
        }
    }
    let settings = CallSettings {
        sample: 0,
        ..config.settings.clone()
    };
    let pass = dialogue
        .keep_notebooks(subject, &baselines, &config.run, &config.prompts, &settings)
        .await
        .map_err(|why| Error::Pack(format!("{}: the notebook: {why}", subject.name())))?;
    tracing::info!(cases = pass.cases, requests = pass.requests, "notebooks kept");
    #[derive(serde::Deserialize)]
    struct Started {
        subject: String,
        mode: String,
        case_id: String,
        dialogue: Option<cfeval_schema::DialogueOutcome>,
    }
    let mut differs = false;
    for batch in responses.read_columns::<Started>(&["subject", "mode", "case_id", "dialogue"])? {
        for row in batch? {
            if row.subject != subject.name() || row.mode != Mode::Dialogue.as_str() {
                continue;
            }
            let started = row.dialogue.and_then(|outcome| outcome.notebook);
            if started.is_some_and(|notebook| dialogue.notebooks.get(&row.case_id) != Some(&notebook)) {
                differs = true;
            }
        }
    }
    if differs {
        tracing::info!(%unit, "the notebooks changed: redoing this unit");
        responses.retire_unit(unit)?;
    }
    Ok(pass.requests)
}

/// The dialogue of a diagnosis pack's run: its settings and ontology, and
/// the configured patient agent.
fn load_dialogue(config: &Config, pack: &cfeval_schema::pack::Pack) -> Result<Dialogue> {
    let Some(setup) = &config.dialogue else {
        return Err(Error::Pack(
            "mode dialogue needs a patient agent (`[dialogue] patient = \"...\"` in the pipeline, or `--patient`)".into(),
        ));
    };
    let Some(patient) = &setup.patient_subject else {
        return Err(Error::Pack(format!(
            "the patient agent `{}` was not built: a dialogue needs it to run",
            setup.patient
        )));
    };
    if patient.is_control() {
        return Err(Error::Pack(format!(
            "the patient agent `{}` is a control; a patient must be a model",
            setup.patient
        )));
    }
    let pack_error = |error: cfeval_diagnosis::Error| Error::Pack(format!("pack `{}`: {error}", pack.name));
    if !pack.file(cfeval_diagnosis::dialogue::FILE).is_file() {
        return Err(Error::Pack(format!(
            "the {} pack has no {}: it cannot run dialogues",
            pack.name,
            cfeval_diagnosis::dialogue::FILE
        )));
    }
    let settings = cfeval_diagnosis::dialogue::Settings::load(&pack.dir).map_err(pack_error)?;
    let ontology = cfeval_diagnosis::ontology::Ontology::load(&pack.dir).map_err(pack_error)?;
    let bias = match &setup.bias {
        Some(id) => Some(cfeval_diagnosis::dialogue::find_bias(&pack.dir, id).map_err(pack_error)?),
        None => None,
    };
    let fallback = match (&setup.fallback, &setup.fallback_subject) {
        (None, _) => None,
        (Some(name), None) => {
            return Err(Error::Pack(format!(
                "the measurement fallback `{name}` was not built: a dialogue needs it to run"
            )));
        }
        (Some(name), Some(subject)) if subject.is_control() => {
            return Err(Error::Pack(format!(
                "the measurement fallback `{name}` is a control; it must be a model"
            )));
        }
        (Some(_), Some(subject)) => Some(Arc::clone(subject)),
    };
    let max_turns = setup.max_turns.unwrap_or(settings.max_turns);
    if max_turns == 0 {
        return Err(Error::Pack(
            "the interaction limit (max-turns) must be 1 or more".into(),
        ));
    }
    Ok(Dialogue {
        settings,
        ontology,
        patient: Arc::clone(patient),
        patient_settings: setup.patient_settings.clone(),
        max_turns,
        bias,
        reflect: setup.reflect,
        notebook: setup.notebook,
        notebooks: std::collections::BTreeMap::new(),
        fallback,
        fallback_settings: CallSettings {
            temperature: 0.0,
            seed: setup.patient_settings.seed,
            max_tokens: FALLBACK_MAX_TOKENS,
            ..CallSettings::default()
        },
    })
}

/// The harness of a run: the Consultant's corpus (the user's folder, else
/// the pack's `corpus/` folder with the ontology's definitions for a
/// diagnosis pack, or the guideline table's lines for the treatment task),
/// the Observer's thresholds and the Diagnostician's prompt.
fn load_harness(config: &Config, pack: Option<&cfeval_schema::pack::Pack>) -> Result<Harness> {
    let setup = config.harness.clone().unwrap_or_default();
    let problems = setup.thresholds.problems();
    if !problems.is_empty() {
        return Err(Error::Pack(format!("[harness]: {}", problems.join("; "))));
    }
    let corpus_error = |error: cfeval_consult::Error| Error::Pack(format!("the harness's corpus: {error}"));
    let diagnosis = pack.filter(|pack| pack.task == cfeval_schema::vocab::TaskKind::Diagnosis);
    let ontology = match diagnosis {
        Some(pack) => Some(Arc::new(
            cfeval_diagnosis::ontology::Ontology::load(&pack.dir)
                .map_err(|error| Error::Pack(format!("pack `{}`: {error}", pack.name)))?,
        )),
        None => None,
    };
    let passages = match &setup.corpus {
        Some(dir) => cfeval_consult::read_dir(dir).map_err(corpus_error)?,
        None => {
            let mut passages = Vec::new();
            if let Some(pack) = pack
                && pack.file(crate::harness::CORPUS_DIR).is_dir()
            {
                passages =
                    cfeval_consult::read_dir(&pack.file(crate::harness::CORPUS_DIR)).map_err(corpus_error)?;
            }
            match &ontology {
                Some(ontology) => passages.extend(crate::harness::ontology_passages(ontology)),
                None => {
                    let guidelines = match pack {
                        Some(pack) => cfeval_guidelines::Guidelines::load(&pack.file("guidelines.yaml")),
                        None => cfeval_guidelines::Guidelines::builtin(),
                    }
                    .map_err(|error| Error::Pack(format!("the guideline table: {error}")))?;
                    passages.extend(crate::harness::guideline_passages(&guidelines));
                }
            }
            passages
        }
    };
    let known = ontology.map(|ontology| -> crate::harness::Knows {
        Arc::new(move |name: &str| ontology.resolve(name).is_some())
    });
    if passages.is_empty() {
        return Err(Error::Pack(
            "the harness's corpus holds no passage: the Consultant would have nothing to return".into(),
        ));
    }
    Ok(Harness {
        thresholds: setup.thresholds,
        protocol: setup.protocol,
        corpus: Arc::new(cfeval_consult::Corpus::build(passages).map_err(corpus_error)?),
        prompt: config.prompts.harness.clone(),
        opening: config.prompts.harness_opening.clone(),
        known,
    })
}

/// Every case's reference, for the diagnostic controls.
fn diagnosis_run(run_dir: &Path) -> Result<crate::control::DiagnosisRun> {
    let cases = ShardStore::open(
        &run_dir.join(CaseRow::NAME),
        CaseRow::NAME,
        CaseRow::schema(),
        StoreOptions {
            read_batch_rows: VARIANT_BATCH_ROWS,
            ..StoreOptions::default()
        },
    )?;
    let mut run = crate::control::DiagnosisRun::default();
    let mut all = Vec::new();
    for batch in cases.read_rows::<CaseRow>()? {
        for case in batch? {
            if let Some(diagnosis) = &case.reference.diagnosis {
                all.push(diagnosis.clone());
            }
            run.references.insert(case.case_id, case.reference);
        }
    }
    run.diagnoses = cfeval_diagnosis::control::RunDiagnoses::new(all);
    Ok(run)
}

/// The async body of [`run`], for callers that already have a runtime.
pub async fn run_async(config: &Config, subject: Arc<Subject>, run_dir: &Path) -> Result<Report> {
    // A run made with a diagnosis pack: its prompts, and controls that
    // know each case's reference.
    let pack = cfeval_schema::pack::Pack::of_run(run_dir).map_err(Error::Pack)?;
    let dialogue = match (config.mode, &pack) {
        (Mode::Dialogue, Some(pack)) if pack.task == cfeval_schema::vocab::TaskKind::Diagnosis => {
            Some(load_dialogue(config, pack)?)
        }
        (Mode::Dialogue, _) => {
            return Err(Error::Pack(
                "mode dialogue needs a run of a diagnosis pack (a doctor, a patient and a case's results)"
                    .into(),
            ));
        }
        _ => None,
    };
    let (config, subject) = match &pack {
        Some(pack) if pack.task == cfeval_schema::vocab::TaskKind::Diagnosis => {
            let mut adjusted = config.clone();
            adjusted.prompts = Prompts::from_pack(pack).map_err(Error::Pack)?;
            if config.mode == Mode::Agent && adjusted.prompts.agent.is_empty() {
                return Err(Error::Pack(format!(
                    "the {} pack has no agent prompt (prompts/agent.md): it answers in single_shot mode only",
                    pack.name
                )));
            }
            let subject = match &*subject {
                Subject::Control(control) => Arc::new(Subject::Control(
                    control.clone().for_diagnosis(Arc::new(diagnosis_run(run_dir)?)),
                )),
                _ => subject,
            };
            (std::borrow::Cow::Owned(adjusted), subject)
        }
        _ => (std::borrow::Cow::Borrowed(config), subject),
    };
    let config: &Config = &config;
    let harness = match config.mode {
        Mode::Harness => Some(Arc::new(load_harness(config, pack.as_ref())?)),
        _ => None,
    };
    // Variant rows carry a whole chart each, and several units stream them at
    // once: read them in small batches.
    let variants = ShardStore::open(
        &run_dir.join(VariantRow::NAME),
        VariantRow::NAME,
        VariantRow::schema(),
        StoreOptions {
            read_batch_rows: VARIANT_BATCH_ROWS,
            ..StoreOptions::default()
        },
    )?;
    if variants.entries().is_empty() {
        return Err(Error::NoVariants(run_dir.display().to_string()));
    }
    let mut responses = ShardStore::open_table::<ResponseRow>(run_dir)?;
    let mode = config.mode;
    let unit = unit(subject.name(), mode, config.slice);
    let fingerprint = fingerprint(config, subject.name(), &variants);
    let mut notebook_requests = 0;
    let dialogue = match dialogue {
        Some(mut dialogue) if dialogue.notebook && !subject.is_control() => {
            notebook_requests =
                notebooks(config, &subject, &variants, &mut dialogue, &mut responses, &unit).await?;
            Some(Arc::new(dialogue))
        }
        other => other.map(Arc::new),
    };
    // A unit completed, or partly committed, under other settings or inputs
    // (or holding a shard that is not its own) is redone whole: answers made
    // from other variants are never kept.
    let stale = responses
        .unit(&unit)
        .is_some_and(|record| record.fingerprint != fingerprint)
        || responses
            .entries()
            .iter()
            .any(|entry| entry.unit == unit && entry.fingerprint != fingerprint);
    if stale {
        tracing::info!(%unit, "settings or inputs changed: redoing this unit");
        responses.retire_unit(&unit)?;
    }
    let (done, mut previous) = answered(&responses, &unit, subject.name(), mode)?;
    let mut report = Report {
        subject: subject.name().to_string(),
        mode: mode.as_str().to_string(),
        requests: notebook_requests,
        ..Report::default()
    };
    let retries_due = previous
        .values()
        .any(|tried| tried.status != ResponseStatus::Ok.as_str() && tried.tries < config.max_tries);
    if retries_due {
        // The unit is being worked on again: until it completes, it is partial.
        responses.mark_incomplete(&unit)?;
    }
    if let Some(batch) = &config.batch {
        report.batch = Some(
            prefill_batch(
                config,
                batch,
                &subject,
                &variants,
                &done,
                &previous,
                &batch_state_path(run_dir, &unit),
            )
            .await?,
        );
    }
    let mut lock = cfeval_schema::lineage::RowCatalogLock::new(None, config.allow_mixed_catalogs);
    // The responses carry the catalog of the variants they answer (the
    // catalog lock later stages check), when the variants share one.
    let provenance = Provenance {
        run: config.run.clone(),
        unit: unit.clone(),
        fingerprint: fingerprint.clone(),
        catalog_hash: variants.catalog_hash().map(str::to_string),
    };
    let mut writer = responses.writer(provenance.clone());
    let episodes = Episodes {
        dialogue: dialogue.clone(),
        harness: harness.clone(),
    };
    let mut window = Window::new(config, &subject, episodes.clone());
    let mut retry: Vec<(Tuple, u32)> = Vec::new();
    let samples = config.samples.max(1);
    for batch in variants.read_rows::<VariantRow>()? {
        for variant in batch? {
            if !answers(config.slice, &config.families, &variant) {
                continue;
            }
            lock.check(&variant.catalog_hash)
                .map_err(|conflict| match conflict {
                    CatalogConflict::Mixed { first, second } => Error::MixedCatalogs { first, second },
                    // No lock is given here: only a mixture can be refused.
                    CatalogConflict::Lock { expected, found } => Error::MixedCatalogs {
                        first: expected,
                        second: found,
                    },
                })?;
            let variant = Arc::new(variant);
            for sample in 0..samples {
                report.tuples += 1;
                let key = (variant.variant_id.clone(), sample);
                let tuple = Tuple {
                    variant: Arc::clone(&variant),
                    sample,
                };
                match next_step(&previous, &done, &key, config.max_tries) {
                    Next::Retry(tries) => {
                        retry.push((tuple, tries));
                        if retry.len() >= config.chunk.max(1) {
                            retry_chunk(
                                config,
                                &subject,
                                &episodes,
                                std::mem::take(&mut retry),
                                &mut responses,
                                &provenance,
                                &mut previous,
                                &mut report,
                            )
                            .await?;
                        }
                        continue;
                    }
                    Next::Leave { gave_up } => {
                        report.gave_up += u64::from(gave_up);
                        report.skipped += 1;
                        if let Some(progress) = &config.progress {
                            progress.add(1);
                        }
                        continue;
                    }
                    Next::Answer => {}
                }
                window.submit(tuple, &mut writer, &mut report).await?;
            }
        }
    }
    window.finish(&mut writer, &mut report).await?;
    writer.finish()?;
    retry_chunk(
        config,
        &subject,
        &episodes,
        retry,
        &mut responses,
        &provenance,
        &mut previous,
        &mut report,
    )
    .await?;
    responses.refresh()?;
    // The unit's record lists every shard it owns, from earlier runs too.
    let entries: Vec<_> = responses
        .entries()
        .iter()
        .filter(|entry| entry.unit == unit)
        .cloned()
        .collect();
    responses.mark_complete(&unit, &fingerprint, &entries)?;
    Ok(report)
}

/// What a run does with a tuple, from how it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    /// Not answered yet: answer it.
    Answer,
    /// Its row is not `ok` and it has been tried this many times, fewer
    /// than `max_tries`: try it again.
    Retry(u32),
    /// Answered (in this unit or another), or not `ok` after `max_tries`
    /// (`gave_up`): leave it.
    Leave { gave_up: bool },
}

fn next_step(
    previous: &HashMap<TupleKey, Tried>,
    done: &HashSet<TupleKey>,
    key: &TupleKey,
    max_tries: u32,
) -> Next {
    match previous.get(key) {
        Some(tried) if tried.status != ResponseStatus::Ok.as_str() => {
            if tried.tries < max_tries {
                Next::Retry(tried.tries)
            } else {
                Next::Leave { gave_up: true }
            }
        }
        Some(_) => Next::Leave { gave_up: false },
        None if done.contains(key) => Next::Leave { gave_up: false },
        None => Next::Answer,
    }
}

/// Batch mode: every request the unit is about to make (tuples not done,
/// and those due a retry) sent through the batch endpoints into the
/// subject's cache, so that the window below finds them there.
async fn prefill_batch(
    config: &Config,
    batch: &BatchMode,
    subject: &Subject,
    variants: &ShardStore,
    done: &HashSet<TupleKey>,
    previous: &HashMap<TupleKey, Tried>,
    state: &Path,
) -> Result<cfeval_model::batch::BatchReport> {
    let Subject::Model { client, name, .. } = subject else {
        return Err(Error::Batch(format!(
            "{}: a control answers in process; batch mode is for model subjects",
            subject.name()
        )));
    };
    if config.mode != Mode::SingleShot {
        return Err(Error::Batch(format!(
            "{name}: batch mode answers single_shot only (an {} answer needs several calls in turn)",
            config.mode.as_str()
        )));
    }
    let mut planned = Vec::new();
    for rows in variants.read_rows::<VariantRow>()? {
        for variant in rows? {
            if !answers(config.slice, &config.families, &variant) {
                continue;
            }
            for sample in 0..config.samples.max(1) {
                let key = (variant.variant_id.clone(), sample);
                if !matches!(
                    next_step(previous, done, &key, config.max_tries),
                    Next::Leave { .. }
                ) {
                    let settings = config.settings.for_sample(sample);
                    planned.push((
                        Some(variant.variant_id.clone()),
                        crate::respond::single_shot_request(&variant, &config.prompts, &settings),
                    ));
                }
            }
        }
    }
    let settings = cfeval_model::batch::BatchSettings {
        state: state.to_path_buf(),
        poll: batch.poll,
        max_requests: batch.max_requests,
    };
    let report = cfeval_model::batch::prefill(client, planned, &settings)
        .await
        .map_err(|source| Error::Subject {
            subject: name.clone(),
            source,
        })?;
    tracing::info!(
        subject = %name,
        requests = report.requests,
        cached = report.cached,
        submitted = report.submitted,
        resumed = report.resumed,
        answered = report.answered,
        failed = report.failed,
        "batch done"
    );
    Ok(report)
}

/// One tuple to answer: a variant and which of its samples.
#[derive(Debug, Clone)]
struct Tuple {
    variant: Arc<VariantRow>,
    sample: u32,
}

/// A tuple's key in the responses: (variant id, sample).
type TupleKey = (String, u32);

/// How a tuple's row in this unit stands: its status, its tries and the
/// shard that holds it.
#[derive(Debug, Clone)]
struct Tried {
    status: String,
    tries: u32,
    shard: String,
}

/// Tuples this subject already answered in this mode in other units (left
/// to them), and how each row of `unit` stands.
fn answered(
    responses: &ShardStore,
    unit: &str,
    subject: &str,
    mode: Mode,
) -> Result<(HashSet<TupleKey>, HashMap<TupleKey, Tried>)> {
    #[derive(Deserialize)]
    struct Answer {
        subject: String,
        mode: String,
        variant_id: String,
        sample: u32,
    }
    #[derive(Deserialize)]
    struct Own {
        variant_id: String,
        sample: u32,
        status: String,
        tries: u32,
    }
    let mut done = HashSet::new();
    let columns = ["subject", "mode", "variant_id", "sample"];
    for batch in responses.read_columns_where::<Answer, _>(&columns, |entry| entry.unit != unit)? {
        for answer in batch? {
            if answer.subject == subject && answer.mode == mode.as_str() {
                done.insert((answer.variant_id, answer.sample));
            }
        }
    }
    let mut own = HashMap::new();
    let own_entries: Vec<ShardEntry> = responses
        .entries()
        .iter()
        .filter(|entry| entry.unit == unit)
        .cloned()
        .collect();
    for entry in own_entries {
        let columns = ["variant_id", "sample", "status", "tries"];
        for batch in responses.read_columns_where::<Own, _>(&columns, |other| other.file == entry.file)? {
            for row in batch? {
                own.insert(
                    (row.variant_id, row.sample),
                    Tried {
                        status: row.status,
                        tries: row.tries,
                        shard: entry.file.clone(),
                    },
                );
            }
        }
    }
    Ok((done, own))
}

/// Answers `chunk` again and replaces the old rows: every shard of the unit
/// holding one of them is rewritten (its other rows copied forward, in
/// order) into one new shard that replaces them all, then they are retired.
#[allow(clippy::too_many_arguments)]
async fn retry_chunk(
    config: &Config,
    subject: &Arc<Subject>,
    episodes: &Episodes,
    chunk: Vec<(Tuple, u32)>,
    responses: &mut ShardStore,
    provenance: &Provenance,
    previous: &mut HashMap<TupleKey, Tried>,
    report: &mut Report,
) -> Result<()> {
    if chunk.is_empty() {
        return Ok(());
    }
    let tries: HashMap<TupleKey, u32> = chunk
        .iter()
        .map(|(tuple, tries)| ((tuple.variant.variant_id.clone(), tuple.sample), *tries))
        .collect();
    let tuples = chunk.into_iter().map(|(tuple, _)| tuple).collect();
    let rows = answer_chunk(config, subject, episodes, tuples, report).await?;
    report.retried += rows.len() as u64;
    let mut fresh: HashMap<TupleKey, ResponseRow> = rows
        .into_iter()
        .map(|mut row| {
            let key = (row.variant_id.clone(), row.sample);
            row.tries = tries.get(&key).copied().unwrap_or(0) + 1;
            (key, row)
        })
        .collect();
    responses.refresh()?;
    let touched: BTreeSet<String> = fresh
        .keys()
        .filter_map(|id| previous.get(id).map(|tried| tried.shard.clone()))
        .collect();
    let old: Vec<ShardEntry> = responses
        .entries()
        .iter()
        .filter(|entry| touched.contains(entry.file.as_str()))
        .cloned()
        .collect();
    let mut writer = responses.replacing_writer(provenance.clone(), &old);
    let old_files: BTreeSet<String> = old.iter().map(|entry| entry.file.clone()).collect();
    let mut moved: Vec<TupleKey> = Vec::new();
    for batch in responses.read_rows_where::<ResponseRow, _>(move |entry| old_files.contains(&entry.file))? {
        let rows: Vec<ResponseRow> = batch?
            .into_iter()
            .map(|row| fresh.remove(&(row.variant_id.clone(), row.sample)).unwrap_or(row))
            .collect();
        moved.extend(rows.iter().map(|row| (row.variant_id.clone(), row.sample)));
        writer.write_rows(&rows)?;
    }
    // A retried row whose old shard could not be found is still written
    // (never lost); none is expected.
    let mut rest: Vec<ResponseRow> = fresh.into_values().collect();
    rest.sort_by(|a, b| (&a.variant_id, a.sample).cmp(&(&b.variant_id, b.sample)));
    moved.extend(rest.iter().map(|row| (row.variant_id.clone(), row.sample)));
    writer.write_rows(&rest)?;
    let committed = writer.finish()?;
    responses.retire_replaced()?;
    // Later chunks find these rows in the new shard.
    if let Some(entry) = committed.first() {
        for id in moved {
            if let Some(tried) = previous.get_mut(&id) {
                tried.shard = entry.file.clone();
            }
        }
    }
    Ok(())
}

/// Where the window's rows go, in tuple order.
trait RowSink {
    fn rows(&mut self, rows: &[ResponseRow]) -> Result<()>;
    /// Commits what was written (a chunk is complete).
    fn commit(&mut self) -> Result<()>;
}

impl RowSink for cfeval_schema::ShardWriter {
    fn rows(&mut self, rows: &[ResponseRow]) -> Result<()> {
        Ok(self.write_rows(rows)?)
    }

    fn commit(&mut self) -> Result<()> {
        self.flush()?;
        Ok(())
    }
}

impl RowSink for Vec<ResponseRow> {
    fn rows(&mut self, rows: &[ResponseRow]) -> Result<()> {
        self.extend_from_slice(rows);
        Ok(())
    }

    fn commit(&mut self) -> Result<()> {
        Ok(())
    }
}

/// A sliding window of answering tasks: up to `concurrency` calls in
/// flight, a new one started as soon as one ends; finished rows wait until
/// every earlier tuple's row is there, then go to the sink in runs of up to
/// `chunk` rows (a record batch costs the same per column however few rows
/// it has: rows handed over one by one as they finished made encoding them
/// most of a cached rerun's time), and the sink commits every `chunk` rows
/// (so what is committed is always a prefix of the tuples, as the resume
/// logic expects). At most `concurrency + 2 × chunk` rows are held.
struct Window<'a> {
    config: &'a Config,
    subject: &'a Arc<Subject>,
    episodes: Episodes,
    tasks: tokio::task::JoinSet<(usize, ResponseRow)>,
    /// Each running task's tuple (a failed task's row is made from it).
    running: HashMap<tokio::task::Id, (usize, Tuple)>,
    finished: std::collections::BTreeMap<usize, ResponseRow>,
    /// Rows in tuple order not yet handed to the sink.
    pending: Vec<ResponseRow>,
    next: usize,
    written: usize,
    uncommitted: usize,
    last_commit: std::time::Instant,
    /// The tasks' prompts, shared rather than copied per task.
    prompts: Arc<Prompts>,
}

/// Chunks that may wait for `commit_every` before a commit is forced.
const COMMIT_CAP: usize = 16;

impl<'a> Window<'a> {
    fn new(config: &'a Config, subject: &'a Arc<Subject>, episodes: Episodes) -> Self {
        Self {
            config,
            subject,
            episodes,
            tasks: tokio::task::JoinSet::new(),
            running: HashMap::new(),
            finished: std::collections::BTreeMap::new(),
            pending: Vec::new(),
            next: 0,
            written: 0,
            uncommitted: 0,
            last_commit: std::time::Instant::now(),
            prompts: Arc::new(config.prompts.clone()),
        }
    }

    /// Starts answering `tuple`, once there is room.
    async fn submit(&mut self, tuple: Tuple, sink: &mut dyn RowSink, report: &mut Report) -> Result<()> {
        let room = self.config.concurrency.max(1);
        let most = room + self.config.chunk.max(1);
        while self.tasks.len() >= room || self.tasks.len() + self.finished.len() >= most {
            self.complete_one(sink, report).await?;
        }
        let index = self.next;
        self.next += 1;
        let subject = Arc::clone(self.subject);
        let run = self.config.run.clone();
        let prompts = Arc::clone(&self.prompts);
        let settings = self.config.settings.for_sample(tuple.sample);
        let mode = self.config.mode;
        let variant = Arc::clone(&tuple.variant);
        let episodes = self.episodes.clone();
        let handle = self.tasks.spawn(async move {
            (
                index,
                respond(
                    &run,
                    &subject,
                    mode,
                    &variant,
                    &prompts,
                    &settings,
                    episodes.dialogue.as_deref(),
                    episodes.harness.as_deref(),
                )
                .await,
            )
        });
        self.running.insert(handle.id(), (index, tuple));
        Ok(())
    }

    /// Waits for one task, files its row, and writes what is now in order.
    async fn complete_one(&mut self, sink: &mut dyn RowSink, report: &mut Report) -> Result<()> {
        let Some(joined) = self.tasks.join_next_with_id().await else {
            return Ok(());
        };
        let (index, row) = match joined {
            Ok((id, (index, row))) => {
                self.running.remove(&id);
                (index, row)
            }
            Err(error) => {
                let Some((index, tuple)) = self.running.remove(&error.id()) else {
                    return Err(Error::Task(error.to_string()));
                };
                tracing::error!(%error, variant = %tuple.variant.variant_id, "an answer task failed");
                let row = crate::respond::failed_row(
                    &self.config.run,
                    self.subject,
                    self.config.mode,
                    &tuple.variant,
                    &self.config.prompts,
                    &self.config.settings.for_sample(tuple.sample),
                    format!("the answering task failed: {error}"),
                );
                (index, row)
            }
        };
        if let Some(progress) = &self.config.progress {
            progress.add(1);
        }
        report.answered += 1;
        report.errors += u64::from(row.status != ResponseStatus::Ok.as_str());
        report.cached += u64::from(row.cached);
        report.requests += u64::from(row.attempts);
        report.input_tokens += row.input_tokens;
        report.output_tokens += row.output_tokens;
        report.cost_usd += row.cost_usd;
        self.finished.insert(index, row);
        let before = self.pending.len();
        while let Some(row) = self.finished.remove(&self.written) {
            self.pending.push(row);
            self.written += 1;
        }
        let ready = self.pending.len() - before;
        if ready > 0 {
            self.uncommitted += ready;
            let chunk = self.config.chunk.max(1);
            let due = self.last_commit.elapsed() >= self.config.commit_every
                || self.uncommitted >= chunk.saturating_mul(COMMIT_CAP);
            if self.uncommitted >= chunk && due {
                self.hand_over(sink)?;
                sink.commit()?;
                self.uncommitted = 0;
                self.last_commit = std::time::Instant::now();
            } else if self.pending.len() >= chunk {
                self.hand_over(sink)?;
            }
        }
        Ok(())
    }

    /// Hands the rows in waiting to the sink, in one call.
    fn hand_over(&mut self, sink: &mut dyn RowSink) -> Result<()> {
        if !self.pending.is_empty() {
            sink.rows(&self.pending)?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Waits for every task and hands over the rest (the caller commits).
    async fn finish(&mut self, sink: &mut dyn RowSink, report: &mut Report) -> Result<()> {
        while !self.tasks.is_empty() {
            self.complete_one(sink, report).await?;
        }
        self.hand_over(sink)
    }
}

/// What the episodes of modes `dialogue` and `harness` need, shared by
/// every task of a unit.
#[derive(Clone, Default)]
struct Episodes {
    dialogue: Option<Arc<Dialogue>>,
    harness: Option<Arc<Harness>>,
}

/// Answers `chunk` through a [`Window`]; the rows in tuple order.
async fn answer_chunk(
    config: &Config,
    subject: &Arc<Subject>,
    episodes: &Episodes,
    chunk: Vec<Tuple>,
    report: &mut Report,
) -> Result<Vec<ResponseRow>> {
    let mut rows: Vec<ResponseRow> = Vec::with_capacity(chunk.len());
    let mut window = Window::new(config, subject, episodes.clone());
    for tuple in chunk {
        window.submit(tuple, &mut rows, report).await?;
    }
    window.finish(&mut rows, report).await?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tuple_is_answered_retried_or_left_by_how_it_stands() {
        let tried = |status: &str, tries| Tried {
            status: status.into(),
            tries,
            shard: "part-00000.parquet".into(),
        };
        let key = |id: &str| (id.to_string(), 0);
        let previous: HashMap<TupleKey, Tried> = [
            (key("ok"), tried("ok", 1)),
            (key("error-once"), tried("error", 1)),
            (key("error-thrice"), tried("error", 3)),
        ]
        .into_iter()
        .collect();
        let done: HashSet<TupleKey> = [key("elsewhere")].into_iter().collect();
        let step = |id: &str| next_step(&previous, &done, &key(id), 3);
        assert_eq!(step("new"), Next::Answer);
        assert_eq!(step("ok"), Next::Leave { gave_up: false });
        assert_eq!(step("elsewhere"), Next::Leave { gave_up: false });
        assert_eq!(step("error-once"), Next::Retry(1));
        assert_eq!(step("error-thrice"), Next::Leave { gave_up: true });
    }

    #[test]
    fn slices_partition_ids() {
        let slices: Vec<Slice> = (1..=3).map(|index| Slice { index, count: 3 }).collect();
        for id in 0..300 {
            let id = format!("variant-{id}");
            assert_eq!(slices.iter().filter(|slice| slice.contains(&id)).count(), 1);
        }
        assert_eq!(Slice::parse("2/3").expect("ok"), Slice { index: 2, count: 3 });
        for bad in ["0/3", "4/3", "x", "1/0", "1-3"] {
            assert!(Slice::parse(bad).is_err(), "{bad}");
        }
    }
}
