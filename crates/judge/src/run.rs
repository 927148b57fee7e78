//! The judge stage over a run: pair every variant response with its
//! subject's baseline response (same subject, mode, case and sample), judge
//! the pair, score CMS on every baseline response, judge every baseline
//! re-sample (sample > 0) against the first baseline answer as a negative
//! control (`metric = resample`), and commit the judgments under the unit
//! `judge=<name>`.
//!
//! Memory stays flat however large the run: pass 1 reads only the columns
//! that say which subjects there are, check the catalog lock and size what
//! judging holds (each baseline's answer, each variant's expectation and
//! edit, each case's consensus items). The cases are then split into as many
//! buckets (by a hash of the case id) as that size needs under
//! [`Config::bucket_bytes`], and each bucket is judged on its own: its
//! baselines, expectations and consensus items are loaded, then its
//! responses are judged in table order. Only the columns the judge reads are
//! decoded (never a variant's chart or a response's trace). Subjects are
//! never called: a judge-only rerun reads what infer wrote. A rerun with the
//! same judge and fingerprint skips; a
//! changed fingerprint (new responses, new prompt, new ontology) redoes the
//! judge's unit and leaves every other judge's rows untouched.
//!
//! Before anything else the judge requires its inputs
//! ([`cfeval_schema::lineage::require_input`]): `responses`, `variants` and
//! `cases` must be there, every unit complete and current (a subject's
//! responses made from variants that changed since, a unit record naming a
//! shard with no manifest entry, a missing slice are refused, naming the
//! command that fixes them) and every shard intact; the responses must be
//! made under the catalog of the run's variants (the catalog lock).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use cfeval_schema::vocab::{BASELINE, covers_family};
use cfeval_schema::{
    ConsensusItem, DialogueOutcome, DiffEntry, Expected, JudgmentRow, Provenance, RESAMPLE, Reference,
    ResponseRow, ShardStore, ShardWriter, StoreOptions, Table, TableName, VariantRow, ids, lineage, units,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::diagnosis::DiagnosisJudge;
use crate::error::{Error, Result};
use crate::families::{Families, GuardPlan};
use crate::llm::LlmJudge;
use crate::rule::RuleJudge;
use crate::verdict::{Label, PairInput, Verdict};

/// Which judge runs.
#[derive(Debug, Clone)]
pub enum Judge {
    /// The deterministic rule judge.
    Rule(Box<RuleJudge>),
    /// A model judge, with the fallback that judges subjects of its own family.
    Llm {
        judge: Box<LlmJudge>,
        fallback: Option<Box<LlmJudge>>,
    },
    /// The rule judge first; only the pairs it is uncertain about go to the
    /// model judge (or its fallback, for subjects of the model's family).
    /// Named `cascade:rule,<model>`; `decided_by` says which decided a pair.
    Cascade {
        name: String,
        rule: Box<RuleJudge>,
        judge: Box<LlmJudge>,
        fallback: Option<Box<LlmJudge>>,
    },
    /// The clinical-reasoning rubric judge (`rubric:<model>`): scores each
    /// response, not pairs (see [`crate::rubric::stage`]).
    Rubric(Box<crate::rubric::stage::RubricRun>),
}

impl Judge {
    /// This judge with its model judges (and fallbacks) on `prompt`.
    pub fn with_pair_prompt(&self, prompt: &crate::llm::PairPrompt) -> Judge {
        let swap = |judge: &LlmJudge| Box::new(judge.clone().with_prompt_template(prompt.clone()));
        match self {
            Judge::Rule(rule) => Judge::Rule(rule.clone()),
            Judge::Rubric(rubric) => Judge::Rubric(rubric.clone()),
            Judge::Llm { judge, fallback } => Judge::Llm {
                judge: swap(judge),
                fallback: fallback.as_deref().map(swap),
            },
            Judge::Cascade {
                name,
                rule,
                judge,
                fallback,
            } => Judge::Cascade {
                name: name.clone(),
                rule: rule.clone(),
                judge: swap(judge),
                fallback: fallback.as_deref().map(swap),
            },
        }
    }

    /// The name recorded in `judgments.judge` and in the unit.
    pub fn name(&self) -> &str {
        match self {
            Judge::Rule(_) => RuleJudge::NAME,
            Judge::Llm { judge, .. } => &judge.name,
            Judge::Cascade { name, .. } => name,
            Judge::Rubric(rubric) => &rubric.judge.name,
        }
    }

    /// A cascade from the rule judge to `judge`.
    pub fn cascade(rule: RuleJudge, judge: LlmJudge, fallback: Option<LlmJudge>) -> Self {
        Judge::Cascade {
            name: format!("cascade:{},{}", RuleJudge::NAME, judge.name),
            rule: Box::new(rule),
            judge: Box::new(judge),
            fallback: fallback.map(Box::new),
        }
    }

    /// The model judge and its fallback, if this judge calls a model.
    fn models(&self) -> Option<(&LlmJudge, Option<&LlmJudge>)> {
        match self {
            Judge::Rule(_) | Judge::Rubric(_) => None,
            Judge::Llm { judge, fallback } | Judge::Cascade { judge, fallback, .. } => {
                Some((judge, fallback.as_deref()))
            }
        }
    }
}

/// Settings of a judge run.
#[derive(Debug, Clone)]
pub struct Config {
    pub run: String,
    /// Judge responses made under different catalogs together.
    pub allow_mixed_catalogs: bool,
    /// When set, the catalog hash every response must carry (the lock).
    pub catalog_hash: Option<String>,
    /// LLM calls in flight at once.
    pub concurrency: usize,
    /// Responses judged together (an LLM judge's calls in one wave).
    pub chunk: usize,
    /// The model-family map of the self-preference guard.
    pub families: Families,
    /// Called with the number of responses judged.
    pub progress: Option<cfeval_schema::Progress>,
    /// Judge only these subjects' responses (empty: all).
    pub only_subjects: Vec<String>,
    /// Judge only these families' pairs (empty: all); the baselines of the
    /// judged subjects are always scored (CMS).
    pub only_families: Vec<String>,
    /// About how many bytes of baselines, expectations and consensus items
    /// are held at once: a larger run is judged in that many case buckets,
    /// each read from the tables in turn.
    pub bucket_bytes: u64,
}

impl Config {
    /// Whether this judge scores a response of `subject` in `family` (the
    /// subject and family filters).
    pub fn selects(&self, subject: &str, family: &str) -> bool {
        (self.only_subjects.is_empty() || self.only_subjects.iter().any(|only| only == subject))
            && covers_family(&self.only_families, family)
    }

    /// Defaults for `run`, with the built-in family map.
    pub fn new(run: impl Into<String>) -> Result<Self> {
        Ok(Self {
            run: run.into(),
            allow_mixed_catalogs: false,
            catalog_hash: None,
            concurrency: 16,
            chunk: 256,
            families: Families::builtin()?,
            progress: None,
            only_subjects: Vec::new(),
            only_families: Vec::new(),
            bucket_bytes: 32 * 1024 * 1024,
        })
    }
}

/// What a judge run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub judge: String,
    pub unit: String,
    /// The unit was already complete under this fingerprint: nothing was done.
    pub skipped: bool,
    /// Pair verdicts written: CSS pairs and baseline re-samples (errors included).
    pub pairs: u64,
    /// CMS rows written (errors included).
    pub cms: u64,
    /// Rows recorded with `status = error` (score null).
    pub errors: u64,
    /// Pairs judged by the fallback judge (self-preference guard).
    pub fallback_pairs: u64,
    /// CSS verdicts per label.
    pub labels: BTreeMap<String, u64>,
    /// The case buckets the run was judged in (0 when skipped).
    pub buckets: u64,
    /// Responses scored one by one (the rubric judge), errors included.
    pub responses: u64,
}

/// The unit a judge's rows are committed under.
pub fn unit(judge: &str) -> String {
    units::judge(judge)
}

#[derive(Serialize)]
struct Fingerprint<'a> {
    judge: &'a str,
    prompt_hash: String,
    fallback: Option<(&'a str, &'a str)>,
    cms_hash: String,
    only_subjects: &'a [String],
    only_families: &'a [String],
    responses: Vec<String>,
    variants: Vec<String>,
    cases: Vec<String>,
}

struct Baseline {
    text: String,
    recommendation: String,
    /// How the baseline dialogue went (mode `dialogue`).
    dialogue: Option<DialogueOutcome>,
    /// When the baseline response is not `ok`: its status and why.
    error: Option<(String, String)>,
}

/// The judgment status of a pair or CMS row left unjudged because a
/// response is not `ok` ([`cfeval_schema::ResponseStatus::judgment_status`];
/// an unknown word reads as a failed call).
pub(crate) fn unjudged_status(response_status: &str) -> String {
    cfeval_schema::ResponseStatus::parse(response_status)
        .unwrap_or(cfeval_schema::ResponseStatus::Error)
        .judgment_status()
        .to_string()
}

struct VariantInfo {
    expected: Option<Expected>,
    expected_text: Option<String>,
    diff: Vec<DiffEntry>,
}

/// A baseline answer's key: (subject, mode, case, sample).
type Key = (String, String, String, u32);

/// What a baseline re-sample is held to: the same chart was asked again.
const RESAMPLE_EXPECTED_TEXT: &str = "Nothing in the chart changed: the same chart was asked again. \
The recommendation must stay the same.";

/// A response as the judge reads it: the columns it needs, never the trace.
#[derive(Debug, Deserialize)]
pub(crate) struct Response {
    pub(crate) subject: String,
    pub(crate) is_control: bool,
    pub(crate) mode: String,
    pub(crate) case_id: String,
    pub(crate) variant_id: String,
    pub(crate) sample: u32,
    pub(crate) intervention: String,
    pub(crate) family: String,
    pub(crate) catalog_hash: String,
    pub(crate) prompt_set: String,
    pub(crate) status: String,
    pub(crate) error: Option<String>,
    pub(crate) text: Option<String>,
    pub(crate) recommendation: Option<String>,
    pub(crate) sections_read: Vec<String>,
    pub(crate) dialogue: Option<DialogueOutcome>,
}

pub(crate) const RESPONSE_COLUMNS: &[&str] = &[
    "subject",
    "is_control",
    "mode",
    "case_id",
    "variant_id",
    "sample",
    "intervention",
    "family",
    "catalog_hash",
    "prompt_set",
    "status",
    "error",
    "text",
    "recommendation",
    "sections_read",
    "dialogue",
];

/// What pass 1 reads of a response: the lock, the subjects, the sizes.
#[derive(Deserialize)]
pub(crate) struct ResponseSize {
    pub(crate) subject: String,
    pub(crate) mode: String,
    pub(crate) case_id: String,
    pub(crate) family: String,
    pub(crate) catalog_hash: String,
    pub(crate) text: Option<String>,
    pub(crate) recommendation: Option<String>,
}

const RESPONSE_SIZE_COLUMNS: &[&str] = &[
    "subject",
    "mode",
    "case_id",
    "family",
    "catalog_hash",
    "text",
    "recommendation",
];

/// What the judge reads of a variant: its expectation and edit, not its chart.
#[derive(Deserialize)]
struct VariantView {
    case_id: String,
    variant_id: String,
    family: String,
    applicable: bool,
    expected_text: Option<String>,
    expected: Option<Expected>,
    diff: Vec<DiffEntry>,
}

const VARIANT_COLUMNS: &[&str] = &[
    "case_id",
    "variant_id",
    "family",
    "applicable",
    "expected_text",
    "expected",
    "diff",
];

/// What the judge reads of a case: the consensus items CMS scores against.
#[derive(Deserialize)]
struct CaseView {
    case_id: String,
    reference: Reference,
}

const CASE_COLUMNS: &[&str] = &["case_id", "reference"];

/// Bytes a held map entry costs beyond its strings (keys, hashing, boxes).
const ENTRY_OVERHEAD: u64 = 160;

/// Responses the rule judge judges together (across all cores).
const RULE_CHUNK: usize = 4096;

/// The most buckets a run is split into.
const MAX_BUCKETS: u64 = 4096;

/// Which of `count` buckets a case belongs to (all of one case's rows go
/// together, so every pair finds its baseline in the same bucket).
fn bucket_of(case_id: &str, count: u64) -> u64 {
    if count <= 1 {
        return 0;
    }
    ids::id_hash(case_id) % count
}

fn text_len(text: &Option<String>) -> u64 {
    text.as_ref().map_or(0, |text| text.len() as u64)
}

/// About how many bytes `value` holds (its JSON size: its strings, plus a
/// little for the structure).
fn weight<T: Serialize + ?Sized>(value: &T) -> u64 {
    serde_json::to_vec(value).map_or(0, |json| json.len() as u64)
}

/// Runs `judge` over the run's responses (blocking; LLM judges get their own
/// runtime).
pub fn run(config: &Config, judge: &Judge, run_dir: &Path) -> Result<Report> {
    let Some(responses) = ShardStore::open_existing(
        &run_dir.join(ResponseRow::NAME),
        ResponseRow::NAME,
        ResponseRow::schema(),
    )?
    else {
        return Err(Error::NoResponses(run_dir.display().to_string()));
    };
    if responses.entries().is_empty() {
        return Err(Error::NoResponses(run_dir.display().to_string()));
    }
    // Complete, current, intact inputs only (verified once per process).
    let require = |table| lineage::require_input(run_dir, table, StoreOptions::default());
    let cases = require(TableName::Cases)?;
    let variants = require(TableName::Variants)?;
    let responses = require(TableName::Responses)?;
    let variants_catalog = if config.allow_mixed_catalogs {
        None
    } else {
        lineage::check_store_catalog_lock(&variants, VariantRow::NAME, false)?
    };
    let pack = cfeval_schema::pack::Pack::of_run(run_dir).map_err(Error::Pack)?;
    let inputs = Inputs {
        responses,
        variants,
        cases,
        pack,
        variants_catalog,
    };
    let rule = match judge {
        Judge::Rule(rule) | Judge::Cascade { rule, .. } => (**rule).clone(),
        Judge::Llm { .. } => RuleJudge::builtin()?,
        Judge::Rubric(rubric) => return crate::rubric::stage::run(config, rubric, &inputs, run_dir),
    };
    let Inputs {
        responses,
        variants,
        cases,
        pack,
        variants_catalog,
    } = inputs;
    let (variants, cases) = (Some(variants), Some(cases));
    // A diagnosis pack's run is read by the pack's diagnosis judge.
    let diagnosis = match &pack {
        Some(pack) if pack.task == cfeval_schema::vocab::TaskKind::Diagnosis => {
            Some(DiagnosisJudge::load(pack).map_err(Error::Pack)?)
        }
        _ => None,
    };
    // A pack with its own pair prompt (`prompts/judge_pair.md`) gives it to
    // the model judges.
    let with_pack_prompt;
    let judge = match pack.as_ref().map(|pack| pack.file("prompts/judge_pair.md")) {
        Some(path) if path.is_file() => {
            with_pack_prompt = judge.with_pair_prompt(&crate::llm::PairPrompt::load(&path)?);
            &with_pack_prompt
        }
        _ => judge,
    };
    let rule_hash = diagnosis
        .as_ref()
        .map_or_else(|| rule.prompt_hash(), DiagnosisJudge::prompt_hash);
    let name = judge.name().to_string();
    let unit = unit(&name);
    let hashes = |store: &Option<ShardStore>| {
        store
            .iter()
            .flat_map(|store| store.entries().iter().map(|entry| entry.blake3.clone()))
            .collect::<Vec<_>>()
    };
    let (prompt_hash, fallback) = match judge {
        Judge::Rule(_) | Judge::Rubric(_) => (rule_hash.clone(), None),
        Judge::Llm { judge, fallback } => (
            judge.prompt_hash().to_string(),
            fallback
                .as_ref()
                .map(|fallback| (fallback.name.as_str(), fallback.prompt_hash())),
        ),
        // A cascade's verdicts depend on both judges' versions.
        Judge::Cascade { judge, fallback, .. } => (
            ids::content_id("cascade", &[&rule_hash, judge.prompt_hash()]),
            fallback
                .as_ref()
                .map(|fallback| (fallback.name.as_str(), fallback.prompt_hash())),
        ),
    };
    let fingerprint = ids::fingerprint(&Fingerprint {
        judge: &name,
        prompt_hash: prompt_hash.clone(),
        fallback,
        cms_hash: rule_hash.clone(),
        only_subjects: &config.only_subjects,
        only_families: &config.only_families,
        responses: responses
            .entries()
            .iter()
            .map(|entry| entry.blake3.clone())
            .collect(),
        variants: hashes(&variants),
        cases: hashes(&cases),
    });
    let mut judgments = ShardStore::open_table::<JudgmentRow>(run_dir)?;
    let mut report = Report {
        judge: name.clone(),
        unit: unit.clone(),
        ..Report::default()
    };
    // Pass 1: subjects, the catalog lock, and how much the baselines weigh.
    let mut held_bytes = 0u64;
    let (subjects, catalog) = subjects_and_lock(
        config,
        &responses,
        variants_catalog.as_deref(),
        run_dir,
        &mut |row| {
            if row.family == BASELINE {
                // Each of text and recommendation falls back on the other.
                let (text, recommendation) = (text_len(&row.text), text_len(&row.recommendation));
                held_bytes += ENTRY_OVERHEAD
                    + (row.subject.len() + row.mode.len() + row.case_id.len()) as u64
                    + 2 * text.max(recommendation);
            }
        },
    )?;
    if judgments.is_complete(&unit, &fingerprint) {
        report.skipped = true;
        return Ok(report);
    }
    // The guard refuses before any judging starts.
    let mut plans: HashMap<String, GuardPlan> = HashMap::new();
    if let Some((judge, fallback)) = judge.models() {
        for subject in &subjects {
            let plan = config.families.guard(
                &judge.name,
                fallback.map(|fallback| fallback.name.as_str()),
                subject,
            )?;
            plans.insert(subject.clone(), plan);
        }
    }
    // What the variants' expectations and the cases' consensus items weigh.
    let mut case_count = 0u64;
    if let Some(variants) = &variants {
        for batch in variants.read_columns::<VariantView>(VARIANT_COLUMNS)? {
            for row in batch? {
                if row.family != BASELINE && row.applicable {
                    held_bytes += ENTRY_OVERHEAD
                        + weight(&(&row.variant_id, &row.expected_text, &row.expected, &row.diff));
                }
            }
        }
    }
    if let Some(cases) = &cases {
        for batch in cases.read_columns::<CaseView>(CASE_COLUMNS)? {
            for row in batch? {
                case_count += 1;
                held_bytes += ENTRY_OVERHEAD + row.case_id.len() as u64 + weight(&row.reference.consensus);
            }
        }
    }
    // Cases are judged in buckets whose baselines, expectations and
    // consensus items fit the budget: memory stays flat however large the
    // run, for one more read of the responses per extra bucket.
    let buckets = held_bytes
        .div_ceil(config.bucket_bytes.max(1))
        .clamp(1, MAX_BUCKETS.min(case_count.max(1)));
    report.buckets = buckets;
    tracing::debug!(judge = %name, held_bytes, buckets, "judging in case buckets");

    let mut writer = open_unit(&mut judgments, config, &unit, &fingerprint, catalog.clone())?;
    let runtime = match judge {
        Judge::Llm { .. } | Judge::Cascade { .. } => Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(Error::Runtime)?,
        ),
        Judge::Rule(_) | Judge::Rubric(_) => None,
    };
    // The rule judge is CPU work: bigger chunks, judged on all cores.
    let chunk = match judge {
        Judge::Rule(_) | Judge::Cascade { .. } => config.chunk.max(RULE_CHUNK),
        Judge::Llm { .. } | Judge::Rubric(_) => config.chunk.max(1),
    };
    // Each read of the responses judges one bucket and collects the next
    // one's baselines: buckets + 1 reads in all.
    let mut next_baselines = HashMap::new();
    for batch in responses.read_columns::<Response>(RESPONSE_COLUMNS)? {
        for row in batch? {
            if bucket_of(&row.case_id, buckets) == 0 {
                add_baseline(&mut next_baselines, &row);
            }
        }
    }
    for bucket in 0..buckets {
        let in_bucket = |case_id: &str| bucket_of(case_id, buckets) == bucket;
        let baselines = std::mem::take(&mut next_baselines);
        let variant_info = load_variants(variants.as_ref(), &in_bucket)?;
        let (consensus, diagnoses) = load_consensus(cases.as_ref(), &in_bucket)?;
        let context = Context {
            config,
            judge,
            name: &name,
            prompt_hash: &prompt_hash,
            rule: &rule,
            diagnosis: diagnosis.as_ref(),
            diagnoses: &diagnoses,
            baselines: &baselines,
            variants: &variant_info,
            consensus: &consensus,
            plans: &plans,
        };
        // Pass 2: judge this bucket's responses, in table order.
        let mut pending: Vec<Response> = Vec::new();
        for batch in responses.read_columns::<Response>(RESPONSE_COLUMNS)? {
            for row in batch? {
                let row_bucket = bucket_of(&row.case_id, buckets);
                if row_bucket == bucket + 1 {
                    add_baseline(&mut next_baselines, &row);
                }
                if row_bucket != bucket || !config.selects(&row.subject, &row.family) {
                    continue;
                }
                pending.push(row);
                if pending.len() >= chunk {
                    context.judge_and_write(
                        std::mem::take(&mut pending),
                        runtime.as_ref(),
                        &mut report,
                        &mut writer,
                    )?;
                }
            }
        }
        context.judge_and_write(pending, runtime.as_ref(), &mut report, &mut writer)?;
    }
    commit_unit(&mut judgments, writer, &unit, &fingerprint)?;
    Ok(report)
}

/// Opens the writer of a judge's unit, a partial or stale one retired
/// first (it is redone from scratch).
pub(crate) fn open_unit(
    judgments: &mut ShardStore,
    config: &Config,
    unit: &str,
    fingerprint: &str,
    catalog: Option<String>,
) -> Result<ShardWriter> {
    if judgments.unit(unit).is_some() || judgments.entries().iter().any(|entry| entry.unit == unit) {
        judgments.retire_unit(unit)?;
    }
    Ok(judgments.writer(Provenance {
        run: config.run.clone(),
        unit: unit.to_string(),
        fingerprint: fingerprint.to_string(),
        catalog_hash: catalog,
    }))
}

/// Finishes a judge's unit: its shards written, the unit marked complete
/// under `fingerprint`.
pub(crate) fn commit_unit(
    judgments: &mut ShardStore,
    writer: ShardWriter,
    unit: &str,
    fingerprint: &str,
) -> Result<()> {
    writer.finish()?;
    judgments.refresh()?;
    let entries: Vec<_> = judgments
        .entries()
        .iter()
        .filter(|entry| entry.unit == unit)
        .cloned()
        .collect();
    judgments.mark_complete(unit, fingerprint, &entries)?;
    Ok(())
}

/// The stores a judge reads, checked complete and current.
pub(crate) struct Inputs {
    pub(crate) responses: ShardStore,
    pub(crate) variants: ShardStore,
    pub(crate) cases: ShardStore,
    pub(crate) pack: Option<cfeval_schema::pack::Pack>,
    /// The catalog of the run's variants (the lock), unless mixed catalogs are allowed.
    pub(crate) variants_catalog: Option<String>,
}

/// Pass 1 over the responses: the judged subjects (every one the config
/// names must be there) and the responses' one catalog, which must be the
/// variants' (the lock); `each` sees every row.
pub(crate) fn subjects_and_lock(
    config: &Config,
    responses: &ShardStore,
    variants_catalog: Option<&str>,
    run_dir: &Path,
    each: &mut dyn FnMut(&ResponseSize),
) -> Result<(BTreeSet<String>, Option<String>)> {
    let mut subjects: BTreeSet<String> = BTreeSet::new();
    let mut lock = lineage::RowCatalogLock::new(config.catalog_hash.clone(), config.allow_mixed_catalogs);
    for batch in responses.read_columns::<ResponseSize>(RESPONSE_SIZE_COLUMNS)? {
        for row in batch? {
            lock.check(&row.catalog_hash)?;
            if (config.only_subjects.is_empty() || config.only_subjects.contains(&row.subject))
                && !subjects.contains(&row.subject)
            {
                subjects.insert(row.subject.clone());
            }
            each(&row);
        }
    }
    // The lock is checked even when there is nothing left to do: the
    // responses' one catalog is the catalog of the run's variants.
    let catalog = lock.catalog().map(str::to_string);
    if let (Some(found), Some(expected)) = (&catalog, variants_catalog)
        && found != expected
    {
        return Err(Error::CatalogLock {
            expected: expected.to_string(),
            found: found.clone(),
        });
    }
    if let Some(subject) = config
        .only_subjects
        .iter()
        .find(|subject| !subjects.contains(*subject))
    {
        return Err(Error::MissingSubject {
            subject: subject.clone(),
            run: run_dir.display().to_string(),
        });
    }
    Ok((subjects, catalog))
}

/// A response's full text and its recommendation (each falls back on the other).
fn texts(text: &Option<String>, recommendation: &Option<String>) -> (String, String) {
    let recommendation = recommendation
        .clone()
        .or_else(|| text.clone())
        .unwrap_or_default();
    let text = text.clone().unwrap_or_else(|| recommendation.clone());
    (text, recommendation)
}

/// Keeps `row`'s answer when it is a baseline, by (subject, mode, case, sample).
fn add_baseline(baselines: &mut HashMap<Key, Baseline>, row: &Response) {
    if row.family != BASELINE {
        return;
    }
    let error = (row.status != "ok").then(|| {
        (
            row.status.clone(),
            row.error.clone().unwrap_or_else(|| "status error".into()),
        )
    });
    let (text, recommendation) = texts(&row.text, &row.recommendation);
    baselines.insert(
        (
            row.subject.clone(),
            row.mode.clone(),
            row.case_id.clone(),
            row.sample,
        ),
        Baseline {
            text,
            recommendation,
            dialogue: row.dialogue.clone(),
            error,
        },
    );
}

fn load_variants(
    store: Option<&ShardStore>,
    in_bucket: &dyn Fn(&str) -> bool,
) -> Result<HashMap<String, VariantInfo>> {
    let mut map = HashMap::new();
    let Some(store) = store else {
        return Ok(map);
    };
    for batch in store.read_columns::<VariantView>(VARIANT_COLUMNS)? {
        for row in batch? {
            if row.family == BASELINE || !row.applicable || !in_bucket(&row.case_id) {
                continue;
            }
            map.insert(
                row.variant_id,
                VariantInfo {
                    expected: row.expected,
                    expected_text: row.expected_text,
                    diff: row.diff,
                },
            );
        }
    }
    Ok(map)
}

/// Each case's consensus items, and each diagnostic case's diagnosis.
type CaseReferences = (HashMap<String, Vec<ConsensusItem>>, HashMap<String, String>);

/// The bucket's cases' consensus items, and their diagnoses (diagnostic
/// cases).
fn load_consensus(store: Option<&ShardStore>, in_bucket: &dyn Fn(&str) -> bool) -> Result<CaseReferences> {
    let mut map = HashMap::new();
    let mut diagnoses = HashMap::new();
    let Some(store) = store else {
        return Ok((map, diagnoses));
    };
    for batch in store.read_columns::<CaseView>(CASE_COLUMNS)? {
        for row in batch? {
            if in_bucket(&row.case_id) {
                if let Some(diagnosis) = row.reference.diagnosis {
                    diagnoses.insert(row.case_id.clone(), diagnosis);
                }
                map.insert(row.case_id, row.reference.consensus);
            }
        }
    }
    Ok((map, diagnoses))
}

/// A judgment of `response` under `metric`, not yet judged (`status =
/// error`, no score): the judge fills it in.
pub(crate) fn judgment_row(
    run: &str,
    judge: &str,
    response: &Response,
    metric: &str,
    prompt_hash: &str,
) -> JudgmentRow {
    JudgmentRow {
        run: run.to_string(),
        judge: judge.to_string(),
        subject: response.subject.clone(),
        is_control: response.is_control,
        mode: response.mode.clone(),
        case_id: response.case_id.clone(),
        variant_id: response.variant_id.clone(),
        sample: response.sample,
        intervention: response.intervention.clone(),
        family: response.family.clone(),
        catalog_hash: response.catalog_hash.clone(),
        metric: metric.to_string(),
        score: None,
        label: None,
        rationale: None,
        status: "error".into(),
        error: None,
        prompt_hash: prompt_hash.to_string(),
        prompt_set: Some(response.prompt_set.clone()),
        changed: None,
        decisive_section_read: None,
        decided_by: None,
        baseline_plan_source: None,
        plan_source: None,
    }
}

struct Context<'a> {
    config: &'a Config,
    judge: &'a Judge,
    name: &'a str,
    prompt_hash: &'a str,
    rule: &'a RuleJudge,
    /// The diagnosis judge, on a diagnosis pack's run (it then replaces the
    /// rule judge, for pairs and for the CMS analogue).
    diagnosis: Option<&'a DiagnosisJudge>,
    /// Each case's diagnosis (diagnostic cases).
    diagnoses: &'a HashMap<String, String>,
    baselines: &'a HashMap<Key, Baseline>,
    variants: &'a HashMap<String, VariantInfo>,
    consensus: &'a HashMap<String, Vec<ConsensusItem>>,
    plans: &'a HashMap<String, GuardPlan>,
}

/// What to do with one response.
enum Task {
    Done(JudgmentRow),
    Pair(JudgmentRow, usize),
}

impl Context<'_> {
    fn row(&self, response: &Response, metric: &str, prompt_hash: &str) -> JudgmentRow {
        judgment_row(&self.config.run, self.name, response, metric, prompt_hash)
    }

    fn cms_row(&self, response: &Response) -> JudgmentRow {
        let hash = self
            .diagnosis
            .map_or_else(|| self.rule.prompt_hash(), DiagnosisJudge::prompt_hash);
        let mut row = self.row(response, "cms", &hash);
        let (text, _) = texts(&response.text, &response.recommendation);
        if response.status != "ok" {
            row.status = unjudged_status(&response.status);
            row.error = Some(format!(
                "the subject's baseline response is not ok ({}): {}",
                response.status,
                response.error.as_deref().unwrap_or("status error")
            ));
            return row;
        }
        if let Some(judge) = self.diagnosis {
            let Some(reference) = self.diagnoses.get(&response.case_id) else {
                row.error = Some("the case has no reference diagnosis".into());
                return row;
            };
            let full_text = response.text.as_deref().unwrap_or(&text);
            let (score, grade, rationale) = judge.grade(full_text, reference);
            row.score = Some(score);
            row.label = Some(grade.to_string());
            row.rationale = Some(rationale);
            row.status = "ok".into();
            row.decided_by = Some(RuleJudge::NAME.into());
            return row;
        }
        let Some(items) = self.consensus.get(&response.case_id) else {
            row.error = Some("the case is not in the cases table (no consensus items)".into());
            return row;
        };
        match self.rule.cms(items, &text) {
            Some((score, coverage)) => {
                row.score = Some(score);
                row.status = "ok".into();
                row.decided_by = Some(RuleJudge::NAME.into());
                let missed: Vec<&str> = coverage
                    .iter()
                    .filter(|item| !item.covered)
                    .map(|item| item.text.as_str())
                    .collect();
                row.rationale = Some(if missed.is_empty() {
                    format!("all {} consensus items covered", coverage.len())
                } else {
                    format!("missed: {}", missed.join("; "))
                });
            }
            None => row.error = Some("the case has no weighted consensus items".into()),
        }
        row
    }

    /// Builds a pair's row (error rows complete) and says which judge scores it.
    fn prepare(&self, response: &Response) -> (JudgmentRow, Option<PairParts>) {
        let mut row = self.row(response, "css", self.prompt_hash);
        let Some(info) = self.variants.get(&response.variant_id) else {
            row.error = Some("the variant is not in the variants table".into());
            return (row, None);
        };
        // The modes that read the chart by tools: was the edited section read?
        if response.mode == "agent" || response.mode == "harness" {
            let edited: BTreeSet<&str> = info
                .diff
                .iter()
                .filter_map(|entry| entry.section.as_deref())
                .collect();
            if !edited.is_empty() {
                row.decisive_section_read = Some(
                    response
                        .sections_read
                        .iter()
                        .any(|section| edited.contains(section.as_str())),
                );
            }
        }
        let key = (
            response.subject.clone(),
            response.mode.clone(),
            response.case_id.clone(),
            response.sample,
        );
        let Some(baseline) = self.baselines.get(&key) else {
            row.error = Some(if response.sample == 0 {
                "no baseline response of this subject, mode and case".into()
            } else {
                format!(
                    "no baseline response of this subject, mode and case for sample {}",
                    response.sample
                )
            });
            return (row, None);
        };
        self.pair_parts(row, response, baseline, ["intervened", BASELINE])
    }

    /// A pair's parts, or its row left unjudged when either answer is not
    /// `ok` (the row carries that response's status, `response`'s first,
    /// which aggregate counts); `names` say which answer is which in errors.
    fn pair_parts(
        &self,
        mut row: JudgmentRow,
        response: &Response,
        against: &Baseline,
        names: [&str; 2],
    ) -> (JudgmentRow, Option<PairParts>) {
        if response.status != "ok" {
            row.status = unjudged_status(&response.status);
            row.error = Some(format!(
                "the {} response is not ok ({}): {}",
                names[0],
                response.status,
                response.error.as_deref().unwrap_or("status error")
            ));
            return (row, None);
        }
        if let Some((status, error)) = &against.error {
            row.status = unjudged_status(status);
            row.error = Some(format!("the {} response is not ok ({status}): {error}", names[1]));
            return (row, None);
        }
        let fallback = self.plans.get(&response.subject) == Some(&GuardPlan::Fallback);
        let (text, recommendation) = texts(&response.text, &response.recommendation);
        (
            row,
            Some(PairParts {
                baseline_text: against.text.clone(),
                baseline_recommendation: against.recommendation.clone(),
                baseline_dialogue: against.dialogue.clone(),
                text,
                recommendation,
                dialogue: response.dialogue.clone(),
                fallback,
            }),
        )
    }

    /// Builds the `resample` row of baseline sample `i > 0`: judged against
    /// baseline sample 0 of the same subject, mode and case, held to an
    /// unchanged plan (the chart did not change).
    fn prepare_resample(&self, response: &Response) -> (JudgmentRow, Option<PairParts>) {
        let row = self.row(response, RESAMPLE, self.prompt_hash);
        let key = (
            response.subject.clone(),
            response.mode.clone(),
            response.case_id.clone(),
            0,
        );
        let Some(first) = self.baselines.get(&key) else {
            let mut row = row;
            row.error = Some("no first (sample 0) baseline response of this subject, mode and case".into());
            return (row, None);
        };
        self.pair_parts(row, response, first, ["re-sampled baseline", "first baseline"])
    }

    /// Judges a chunk and writes its rows (the writer rolls shards by size: a
    /// partial unit is redone whole, from the response cache for LLM judges).
    fn judge_and_write(
        &self,
        responses: Vec<Response>,
        runtime: Option<&tokio::runtime::Runtime>,
        report: &mut Report,
        writer: &mut ShardWriter,
    ) -> Result<()> {
        if responses.is_empty() {
            return Ok(());
        }
        let judged = responses.len() as u64;
        let rows = self.judge_chunk(responses, runtime, report);
        writer.write_rows(&rows)?;
        if let Some(progress) = &self.config.progress {
            progress.add(judged);
        }
        Ok(())
    }

    fn judge_chunk(
        &self,
        responses: Vec<Response>,
        runtime: Option<&tokio::runtime::Runtime>,
        report: &mut Report,
    ) -> Vec<JudgmentRow> {
        // One row per response; a baseline re-sample (sample > 0) also gets
        // its `resample` row.
        let prepared: Vec<(JudgmentRow, Option<PairParts>, &Response)> = responses
            .par_iter()
            .flat_map_iter(|response| {
                let rows = if response.family == BASELINE {
                    let mut rows = vec![(self.cms_row(response), None)];
                    if response.sample > 0 {
                        rows.push(self.prepare_resample(response));
                    }
                    rows
                } else {
                    vec![self.prepare(response)]
                };
                rows.into_iter().map(move |(row, parts)| (row, parts, response))
            })
            .collect();
        let mut tasks = Vec::with_capacity(prepared.len());
        let mut pairs: Vec<(PairParts, &Response)> = Vec::new();
        for (row, parts, response) in prepared {
            match parts {
                Some(parts) => {
                    tasks.push(Task::Pair(row, pairs.len()));
                    pairs.push((parts, response));
                }
                None => tasks.push(Task::Done(row)),
            }
        }
        let verdicts = self.verdicts(&pairs, runtime);
        let mut rows = Vec::with_capacity(tasks.len());
        for task in tasks {
            let row = match task {
                Task::Done(row) => row,
                Task::Pair(mut row, index) => {
                    let (parts, _) = &pairs[index];
                    if parts.fallback {
                        report.fallback_pairs += 1;
                    }
                    match &verdicts[index] {
                        Ok(decided) => {
                            let verdict = &decided.verdict;
                            row.score = verdict.score;
                            row.label = Some(verdict.label.as_str().to_string());
                            row.changed = verdict.changed;
                            row.status = "ok".into();
                            if let Some((baseline, variant)) = verdict.plan_sources {
                                row.baseline_plan_source = Some(baseline.into());
                                row.plan_source = Some(variant.into());
                            }
                            row.rationale = Some(if decided.by_fallback {
                                format!("[judged by fallback {}] {}", decided.by, verdict.rationale)
                            } else {
                                verdict.rationale.clone()
                            });
                            row.prompt_hash = decided.prompt_hash.clone();
                            row.decided_by = Some(decided.by.clone());
                        }
                        Err(error) => row.error = Some(error.clone()),
                    }
                    row
                }
            };
            if row.metric == "css" || row.metric == RESAMPLE {
                report.pairs += 1;
                if let Some(label) = &row.label {
                    *report.labels.entry(label.clone()).or_default() += 1;
                }
            } else {
                report.cms += 1;
            }
            report.errors += u64::from(row.status != "ok");
            rows.push(row);
        }
        rows
    }

    fn verdicts(
        &self,
        pairs: &[(PairParts, &Response)],
        runtime: Option<&tokio::runtime::Runtime>,
    ) -> Vec<Result<Decided, String>> {
        let unchanged = Expected {
            direction: "unchanged".into(),
            ..Expected::default()
        };
        let inputs: Vec<PairInput<'_>> = pairs
            .iter()
            .map(|(parts, response)| {
                if response.family == BASELINE {
                    // A baseline re-sample: held to an unchanged plan, as a
                    // negative control is.
                    return PairInput {
                        family: "N",
                        intervention: RESAMPLE,
                        baseline_text: &parts.baseline_text,
                        baseline_recommendation: &parts.baseline_recommendation,
                        variant_text: &parts.text,
                        variant_recommendation: &parts.recommendation,
                        expected: Some(&unchanged),
                        expected_text: Some(RESAMPLE_EXPECTED_TEXT),
                        diff: &[],
                        baseline_dialogue: parts.baseline_dialogue.as_ref(),
                        variant_dialogue: parts.dialogue.as_ref(),
                    };
                }
                let info = self.variants.get(&response.variant_id);
                PairInput {
                    family: &response.family,
                    intervention: &response.intervention,
                    baseline_text: &parts.baseline_text,
                    baseline_recommendation: &parts.baseline_recommendation,
                    variant_text: &parts.text,
                    variant_recommendation: &parts.recommendation,
                    expected: info.and_then(|info| info.expected.as_ref()),
                    expected_text: info.and_then(|info| info.expected_text.as_deref()),
                    diff: info.map(|info| info.diff.as_slice()).unwrap_or_default(),
                    baseline_dialogue: parts.baseline_dialogue.as_ref(),
                    variant_dialogue: parts.dialogue.as_ref(),
                }
            })
            .collect();
        let rule = match self.judge {
            Judge::Rule(rule) | Judge::Cascade { rule, .. } => Some(rule),
            Judge::Llm { .. } | Judge::Rubric(_) => None,
        };
        // The rule judge's verdicts (all of them, or a cascade's first pass).
        let mut decided: Vec<Option<Result<Decided, String>>> = match rule {
            Some(rule) => {
                let hash = self
                    .diagnosis
                    .map_or_else(|| rule.prompt_hash(), DiagnosisJudge::prompt_hash);
                inputs
                    .par_iter()
                    .zip(pairs.par_iter())
                    .map(|(input, (_, response))| {
                        let verdict = match self.diagnosis {
                            Some(judge) => match self.diagnoses.get(&response.case_id) {
                                Some(reference) => Ok(judge.judge_pair(input, reference)),
                                None => Err("the case has no reference diagnosis".to_string()),
                            },
                            None => rule.judge_pair(input),
                        };
                        let escalate = matches!(self.judge, Judge::Cascade { .. })
                            && matches!(&verdict, Ok(verdict) if verdict.label == Label::Uncertain);
                        (!escalate).then(|| {
                            verdict.map(|verdict| Decided {
                                verdict,
                                by: RuleJudge::NAME.into(),
                                by_fallback: false,
                                prompt_hash: hash.clone(),
                            })
                        })
                    })
                    .collect()
            }
            None => inputs.iter().map(|_| None).collect(),
        };
        let Some((judge, fallback)) = self.judge.models() else {
            return decided.into_iter().flatten().collect();
        };
        let waiting: Vec<usize> = (0..inputs.len())
            .filter(|&index| decided[index].is_none())
            .collect();
        let Some(runtime) = runtime else {
            for index in waiting {
                decided[index] = Some(Err("no async runtime for the model judge".to_string()));
            }
            return decided.into_iter().flatten().collect();
        };
        let answers = runtime.block_on(async {
            let semaphore = tokio::sync::Semaphore::new(self.config.concurrency.max(1));
            let calls = waiting.iter().map(|&index| {
                let (chosen, by_fallback) = match (pairs[index].0.fallback, fallback) {
                    (true, Some(fallback)) => (fallback, true),
                    _ => (judge, false),
                };
                let semaphore = &semaphore;
                let input = &inputs[index];
                async move {
                    let _permit = semaphore.acquire().await.map_err(|error| error.to_string())?;
                    let verdict = chosen.judge_pair(input).await?;
                    Ok(Decided {
                        verdict,
                        by: chosen.name.clone(),
                        by_fallback,
                        prompt_hash: chosen.prompt_hash().to_string(),
                    })
                }
            });
            cfeval_model::join_all(calls).await
        });
        for (index, answer) in waiting.into_iter().zip(answers) {
            decided[index] = Some(answer);
        }
        decided.into_iter().flatten().collect()
    }
}

/// A verdict and who decided it.
struct Decided {
    verdict: Verdict,
    /// The deciding judge's name.
    by: String,
    /// Decided by the fallback judge (self-preference guard).
    by_fallback: bool,
    prompt_hash: String,
}

struct PairParts {
    baseline_text: String,
    baseline_recommendation: String,
    baseline_dialogue: Option<DialogueOutcome>,
    text: String,
    recommendation: String,
    dialogue: Option<DialogueOutcome>,
    fallback: bool,
}
