//! Row types of every cfeval table.
//!
//! Each row struct is the single source of truth for its table: the Arrow
//! schema is derived from the struct (see [`Table::fields`](crate::Table::fields)) and checked by a
//! snapshot test, so a change to a column is a deliberate change here and a
//! bump of [`SCHEMA_VERSION`](crate::SCHEMA_VERSION).
//!
//! Column names are chosen for notebook users: `run`, `subject`, `mode`,
//! `case_id`, `variant_id`, `intervention`, `family`, `judge`, `score`, …

use serde::{Deserialize, Serialize};

/// A named, ordered section of a structured chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    /// Normalised section name (`demographics`, `history`, `pathology`,
    /// `biomarkers`, `staging`, `surgery`, `treatment_history`, `imaging`,
    /// `labs`, `comorbidities`, `social`, `question`, or a source field name).
    pub name: String,
    /// The section's text as the subject sees it.
    pub text: String,
    /// Byte offset of the section in the case's `source_text`, when the
    /// section is a substring of it.
    pub span_start: Option<u64>,
    /// End byte offset (exclusive) of the section in `source_text`.
    pub span_end: Option<u64>,
}

/// A typed clinical fact with the exact source span it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// `cancer_type`, `stage`, `metastatic`, `biomarker`, `surgery`,
    /// `prior_line`, `intent`, `ecog`, `comorbidity`, `finding`, …
    pub kind: String,
    /// The fact's name within its kind (`HER2`, `group`, `tnm`, a procedure,
    /// a regimen as written).
    pub name: String,
    /// The normalised value (`positive`, `III`, `resected`, `progression`).
    pub value: String,
    /// `affirmed` or `negated`.
    pub polarity: String,
    /// `certain` or `uncertain`.
    pub certainty: String,
    /// Free detail (sub-stage, numeric value such as `TPS 60%`, margin).
    pub detail: Option<String>,
    /// The section the fact was found in.
    pub section: String,
    /// Byte offset of the supporting span in `source_text`.
    pub span_start: u64,
    /// End byte offset (exclusive) of the supporting span.
    pub span_end: u64,
    /// The exact supporting substring of `source_text`.
    pub span_text: String,
    /// Who produced the fact: `rule` (read by the rule extractor), `derived`
    /// (computed by the rule extractor from what it read: a stage group from
    /// the TNM through the AJCC tables, stage IV from metastasis, `metastatic`
    /// from a stage group), `llm`, `reference`.
    pub origin: String,
}

impl Fact {
    /// An affirmed, certain fact of `origin` whose span is `span_text`,
    /// starting at byte `span_start` of the source, with no detail.
    pub fn spanned(
        kind: &str,
        name: &str,
        value: &str,
        section: &str,
        span_start: u64,
        span_text: &str,
        origin: &str,
    ) -> Fact {
        Fact {
            kind: kind.into(),
            name: name.into(),
            value: value.into(),
            polarity: "affirmed".into(),
            certainty: "certain".into(),
            detail: None,
            section: section.into(),
            span_start,
            span_end: span_start + span_text.len() as u64,
            span_text: span_text.into(),
            origin: origin.into(),
        }
    }
}

/// One weighted item of an expert-consensus recommendation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConsensusItem {
    pub text: String,
    pub weight: f64,
}

/// A key and a JSON-encoded value, for fields cfeval keeps but does not know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

/// What a case knows that no subject may see: the expert-consensus
/// recommendation, reference facts and (for diagnostic cases) the diagnosis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub consensus: Vec<ConsensusItem>,
    pub facts: Vec<Fact>,
    pub diagnosis: Option<String>,
    /// The guideline rules the consensus was derived from, when known.
    pub rules: Vec<String>,
}

/// A chart as the subject reads it: each section under its name
/// (`## name`, then its text).
pub fn render_chart(sections: &[Section]) -> String {
    let mut out = String::new();
    for section in sections {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("## {}\n{}\n", section.name, section.text.trim_end()));
    }
    out
}

/// Table `cases`: one structured chart per input case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRow {
    pub run: String,
    pub case_id: String,
    /// The input's own identifier for the case.
    pub source_id: String,
    /// `text`, `jsonl`, `agentclinic`, `csv` or `cohort`.
    pub source_format: String,
    /// The file the case came from, and its 1-based line or row.
    pub source_path: String,
    pub source_line: Option<u64>,
    /// The full source text every span points into.
    pub source_text: String,
    pub cancer_type: Option<String>,
    pub sections: Vec<Section>,
    pub facts: Vec<Fact>,
    pub reference: Reference,
    /// Input fields cfeval does not interpret, kept verbatim.
    pub extra: Vec<KeyValue>,
}

/// A row of any `<table>_quarantine` table: one input that could not be
/// processed, with why, so that nothing is ever silently dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuarantineRow {
    pub run: String,
    pub stage: String,
    pub source_path: String,
    /// 1-based line or row, when the input has lines.
    pub source_line: Option<u64>,
    pub source_id: Option<String>,
    pub reason: String,
    /// The start of the offending input (at most a few KiB).
    pub excerpt: Option<String>,
}

/// The machine-checkable part of an intervention's expected direction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    /// `changed` or `unchanged` (negative controls).
    pub direction: String,
    /// Treatment classes that must appear.
    pub add: Vec<String>,
    /// Treatment classes that must disappear.
    pub remove: Vec<String>,
    /// The line of therapy the plan must switch to (`second`, …).
    pub switch_line: Option<String>,
    /// `curative` or `palliative`.
    pub intent: Option<String>,
    /// A regimen (or class) that must not be repeated.
    pub must_not_repeat: Option<String>,
    /// A marker the answer must call unknown or order a test for (a
    /// diagnosis pack: the test whose result was removed).
    pub order_test: Option<String>,
    /// Diagnosis packs: `away` when the answer must no longer assert the
    /// case's diagnosis.
    #[serde(default)]
    pub diagnosis: Option<String>,
    /// Diagnosis packs: `escalate` when the answer must call for urgent care.
    #[serde(default)]
    pub urgency: Option<String>,
}

/// One entry of a variant's structured diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffEntry {
    /// `set_fact`, `remove_fact`, `add_fact`, `replace_text`, `delete_text`,
    /// `insert_text`, `reorder`.
    pub op: String,
    pub section: Option<String>,
    pub fact_kind: Option<String>,
    pub fact_name: Option<String>,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Table `variants`: the baseline and every (case, intervention).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantRow {
    pub run: String,
    pub case_id: String,
    pub variant_id: String,
    /// Intervention id, or `baseline`.
    pub intervention: String,
    /// `A`–`E`, `N`, or `baseline`.
    pub family: String,
    pub applicable: bool,
    pub not_applicable_reason: Option<String>,
    pub catalog_hash: String,
    /// The expected direction in words, as the judge reads it.
    pub expected_text: Option<String>,
    pub expected: Option<Expected>,
    /// The (edited) chart: sections and facts as the subject's tools serve them.
    pub sections: Vec<Section>,
    pub facts: Vec<Fact>,
    pub diff: Vec<DiffEntry>,
    /// The chart coherence check's findings, one `rule: detail` each
    /// (`stage-tnm: "T1N2M0" is stage IIIA …`): on the baseline, the case's
    /// own; on a variant, what its chart still contradicts. Empty when the
    /// chart is coherent.
    pub coherence: Vec<String>,
}

/// One step of an agent's trace, or one turn of a dialogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceStep {
    pub step: u32,
    /// `thought`, `tool_call`, `tool_result`, `final`, `error`; in a
    /// dialogue `question`, `answer`, `request_test`, `result`,
    /// `diagnosis`, `reflection` (the `reflect` tool's review) and
    /// `perception` (the patient's closing ratings).
    pub kind: String,
    pub tool: Option<String>,
    /// The tool call's arguments as JSON text (in a dialogue, the test
    /// requested as written).
    pub arguments: Option<String>,
    /// BLAKE3 id of what the tool returned.
    pub result_hash: Option<String>,
    /// The chart section the step read, if any.
    pub section: Option<String>,
    pub error: Option<String>,
    pub text: Option<String>,
    /// Who spoke, in a dialogue: `doctor`, `patient` or `measurement`.
    pub speaker: Option<String>,
    /// Tokens of the call that made this step (0 when no model spoke).
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// How long the step's call took, in milliseconds (0 for no call).
    pub latency_ms: u64,
}

/// How a dialogue (mode `dialogue`) went: the doctor (the subject) talked
/// with a patient agent and asked a measurement agent for results until it
/// named a diagnosis or reached its interaction limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DialogueOutcome {
    /// The patient agent's subject name.
    pub patient: String,
    /// The interaction limit N: the doctor's turns at most.
    pub max_turns: u32,
    /// The doctor's turns used.
    pub turns: u32,
    /// `diagnosis` (the doctor wrote `DIAGNOSIS READY`) or `no_diagnosis`
    /// (N turns passed without one).
    pub outcome: String,
    /// The diagnosis as the doctor wrote it.
    pub diagnosis: Option<String>,
    /// The tests the doctor requested, as written, in order.
    pub tests_requested: Vec<String>,
    /// The chart's result lines the measurement agent returned, by label.
    pub tests_returned: Vec<String>,
    /// The patient findings (symptoms, history items) the patient's
    /// replies stated, of `findings_total`.
    pub findings_elicited: u32,
    pub findings_total: u32,
    /// The case's results the measurement agent returned, of `tests_total`.
    pub tests_elicited: u32,
    pub tests_total: u32,
    /// Information coverage: (findings + results elicited) / (findings +
    /// results in the case); 0 when the case has neither.
    pub coverage: f64,
    /// The patient agent's ratings of the doctor once the consultation was
    /// over (none for a control doctor, which no patient talks with).
    pub perception: Option<Perception>,
    /// Why the patient's ratings are missing: its reply was not the JSON
    /// asked for (never guessed).
    pub perception_error: Option<String>,
    /// The bias the dialogue ran under (the pack's `biases.yaml` id; none
    /// for an unbiased subject).
    pub bias: Option<String>,
    /// With the `reflect` tool: the diagnosis the doctor first named, before
    /// its self-review (`diagnosis` is the reviewed one).
    pub diagnosis_before_reflection: Option<String>,
    /// With the `notebook` tool: the notebook the doctor started this
    /// dialogue from (written after the earlier cases' baselines; empty for
    /// the first case).
    pub notebook: Option<String>,
    /// Requests the measurement agent's model fallback chose a test for (a
    /// request no test name matched; only when the run names a fallback).
    pub measurement_fallbacks: u32,
}

/// How a harness episode (mode `harness`, EviDx's observer-guided
/// harness) went: the Diagnostician (the subject) read the chart through
/// the EHR Executor and asked the Clinical Consultant, reporting its belief
/// over a differential after every observation, and the Observer approved
/// its finish only when the belief's entropy and the chart coverage passed
/// the step's thresholds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessOutcome {
    /// `approved` (the Observer approved a finish), `step_limit` (the
    /// episode reached `max_steps`; the last answer proposed, if any, is the
    /// row's text) or `no_answer` (the limit with no answer ever proposed;
    /// the row is `ok` and its text says no diagnosis was proposed).
    pub outcome: String,
    pub max_steps: u32,
    /// The Diagnostician's turns (model calls) used.
    pub steps: u32,
    /// One entry per turn: what it did, its belief and the Observer's view.
    pub trajectory: Vec<HarnessStep>,
    /// Level 1, execution robustness. Turns whose reply was not the
    /// step's JSON (or a tool call without a valid `differential`).
    pub schema_failures: u32,
    /// Turns whose belief was unusable: negative, NaN or infinite numbers,
    /// or nothing above zero (the previous belief is kept).
    pub invalid_beliefs: u32,
    /// Hypotheses named in beliefs that the pack's ontology does not know
    /// (counted once per turn and name; kept in the belief).
    pub unknown_hypotheses: u32,
    /// Calls to tools the harness does not have.
    pub unknown_tools: u32,
    /// Tool calls that failed (bad arguments, an unknown section, an
    /// unknown tool).
    pub tool_errors: u32,
    /// HTTP attempts beyond one per turn (transport retries, and replies
    /// retried as unusable).
    pub retries: u32,
    /// Turns answered in natural language instead of the protocol (read as
    /// best the harness could; counted, not fatal).
    pub language_fallbacks: u32,
    /// Level 2, reasoning dynamics. Finish proposals the Observer refused.
    pub observer_blocks: u32,
    /// Turns where the entropy fell by more than the threshold although the
    /// observation before it brought no new evidence (no section read for
    /// the first time, no passage not seen before).
    pub spurious_drops: u32,
    /// Coverage V when the episode ended.
    pub final_coverage: f64,
    /// Entropy H (bits) of the last usable belief; none if there was none.
    pub final_entropy: Option<f64>,
    /// Queries to the Consultant (the passages each returned are in the
    /// trace).
    pub consultations: u32,
    /// The final answer as the Diagnostician proposed it.
    pub answer: Option<String>,
    /// The sections read before the final answer, in order of first read.
    pub sections_before_answer: Vec<String>,
    /// The corpus the Consultant searched (its content hash).
    pub corpus_hash: String,
}

/// One turn of a harness episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HarnessStep {
    /// 1-based turn number t.
    pub step: u32,
    /// `list_chart_sections`, `read_chart_section`, `consult`, `finish`, or
    /// `none` (the turn named no usable action).
    pub action: String,
    /// The section name, the query or the proposed answer.
    pub argument: Option<String>,
    /// The belief reported this turn, normalised to sum to 1 (empty when
    /// the turn reported none usable).
    pub belief: Vec<Belief>,
    /// H(t) in bits of the belief in force after this turn (the last usable
    /// one); none before any usable belief.
    pub entropy: Option<f64>,
    /// V(T_t): the share of the chart's sections read after this turn.
    pub coverage: f64,
    /// The step's thresholds: finish needs entropy ≤ `max_entropy` and
    /// coverage ≥ `min_coverage`.
    pub max_entropy: f64,
    pub min_coverage: f64,
    /// Whether the observation this turn's belief followed brought new
    /// evidence (always true for the first turn).
    pub new_evidence: bool,
    /// A finish this turn proposed was refused, with the Observer's words.
    pub blocked: Option<String>,
    /// What went wrong with the turn's reply, if anything.
    pub problem: Option<String>,
}

/// One hypothesis of a reported belief.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Belief {
    pub hypothesis: String,
    /// The number as the model wrote it.
    pub raw: f64,
    /// Normalised over the turn's hypotheses (sums to 1).
    pub probability: f64,
}

/// The patient's ratings of the doctor, 1–10 each (AgentClinic's
/// patient-centred measures).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Perception {
    /// Confidence in the doctor's assessment.
    pub confidence: u32,
    /// Likelihood of following the doctor's plan.
    pub compliance: u32,
    /// Likelihood of consulting this doctor again.
    pub consult_again: u32,
}

/// Table `responses`: one row per (subject, mode, variant, sample).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseRow {
    pub run: String,
    /// `provider/model`, e.g. `openai/gpt-5` or `control/reference`.
    pub subject: String,
    pub is_control: bool,
    /// `single_shot`, `agent`, `dialogue` or `harness`.
    pub mode: String,
    pub case_id: String,
    pub variant_id: String,
    /// Which of the subject's `samples` answers to this variant (0-based;
    /// 0 when each tuple is answered once). Sample `i > 0` is the same
    /// request with its own seed and cache salt.
    pub sample: u32,
    pub intervention: String,
    pub family: String,
    pub catalog_hash: String,
    pub backend: String,
    pub model: String,
    /// Content hash of the prompt template.
    pub prompt_hash: String,
    /// The prompt set (`neutral`, the default, or `cued`, which names the
    /// facts a decision turns on).
    pub prompt_set: String,
    /// Content hash of the full request (the cache key).
    pub request_hash: String,
    pub temperature: f64,
    pub seed: Option<u64>,
    /// `ok`, `error`, `empty`, `truncated`, `refused` or `bad_tool_args`
    /// ([`crate::ResponseStatus`]); only `ok` rows are judged.
    pub status: String,
    pub error: Option<String>,
    /// The model's full final text (for an unusable reply, the last one
    /// received, kept for inspection).
    pub text: Option<String>,
    /// The extracted final recommendation (only on `ok` rows).
    pub recommendation: Option<String>,
    /// Why the model's last reply stopped, normalised
    /// ([`crate::normalize_finish_reason`]): `stop`, `length`, `tool_calls`,
    /// `content_filter`, or the provider's own word.
    pub finish_reason: Option<String>,
    /// HTTP attempts made for this row in its last try (retries included;
    /// 0 when answered from the cache or by a control).
    pub attempts: u32,
    /// How many times this tuple has been tried, across runs (a rerun of
    /// infer tries a row that is not `ok` again, up to `max_tries`).
    pub tries: u32,
    pub cached: bool,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
    pub latency_ms: u64,
    pub trace: Vec<TraceStep>,
    pub sections_read: Vec<String>,
    pub tool_errors: u32,
    /// How the dialogue went (mode `dialogue` only).
    pub dialogue: Option<DialogueOutcome>,
    /// How the harness episode went (mode `harness` only).
    pub harness: Option<HarnessOutcome>,
}

/// The `judgments.metric` of a baseline re-sample judged against the first
/// baseline answer (family `baseline`).
pub const RESAMPLE: &str = "resample";

/// Table `judgments`: CSS pair verdicts (`metric = css`), CMS coverage
/// scores of baseline responses (`metric = cms`) and, when a subject
/// answered each tuple several times, whether a baseline re-sample moved
/// away from the first baseline answer with nothing changed
/// (`metric = resample`, family `baseline`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgmentRow {
    pub run: String,
    pub judge: String,
    pub subject: String,
    pub is_control: bool,
    pub mode: String,
    pub case_id: String,
    pub variant_id: String,
    /// The sample judged: a variant answer's sample `i` is paired with the
    /// baseline answer's sample `i`; a `resample` row judges baseline
    /// sample `i > 0` against sample 0.
    pub sample: u32,
    pub intervention: String,
    pub family: String,
    pub catalog_hash: String,
    /// `css`, `cms` or `resample`.
    pub metric: String,
    /// 0.0, 0.5 or 1.0 for CSS; weighted recall in [0, 1] for CMS; null when
    /// the judge failed (never a guessed score).
    pub score: Option<f64>,
    /// `ignored`, `acknowledged_unchanged`, `updated_correct`,
    /// `updated_wrong_direction`, `held_correctly`, `shifted_spuriously`, or
    /// `uncertain` (the judge abstained: score null, reason in `rationale`).
    pub label: Option<String>,
    pub rationale: Option<String>,
    /// `ok`, `error` (the judge failed), or — when the response (or its
    /// baseline) is not `ok` and so was not judged — that response's status:
    /// `response_error`, `empty`, `truncated`, `refused`, `bad_tool_args`
    /// ([`crate::ResponseStatus::judgment_status`]).
    pub status: String,
    pub error: Option<String>,
    pub prompt_hash: String,
    /// The prompt set the judged responses were made with.
    pub prompt_set: Option<String>,
    /// Whether the recommendation moved between baseline and variant.
    pub changed: Option<bool>,
    /// For agents: whether the section the intervention edited was read.
    pub decisive_section_read: Option<bool>,
    /// The judge that decided the verdict: the judge itself, its fallback
    /// (self-preference guard), or in a cascade the rule judge or the model
    /// judge it sent an uncertain pair to.
    pub decided_by: Option<String>,
    /// Where the rule judge found the baseline answer's plan: `label`,
    /// `heading`, `inline_label`, `last_paragraph` or `whole`.
    pub baseline_plan_source: Option<String>,
    /// Where the rule judge found this answer's plan (same values).
    pub plan_source: Option<String>,
}

/// Table `scores`: one row per estimate, long format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreRow {
    pub run: String,
    pub subject: String,
    pub is_control: bool,
    pub mode: String,
    pub judge: String,
    /// `css`, `css_balanced`, `cms`, `spurious_shift`, `uncertain`,
    /// `rank_css`, `rank_swap_probability`, `spearman_cms_css`, … (every
    /// metric is listed in `cfeval-aggregate`'s crate docs).
    pub metric: String,
    /// `overall`, `family`, `intervention`, `comparison`.
    pub level: String,
    /// `all`, `A`–`E`, `N`, or an intervention id.
    pub group: String,
    pub value: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// `percentile`, `bca`, `exact`, or none.
    pub ci_method: Option<String>,
    pub n_tuples: u64,
    pub n_cases: u64,
    /// The prompt set of the subject's responses (null for rows over
    /// several subjects).
    pub prompt_set: Option<String>,
}

/// Table `comparison` (written by `cfeval compare RUN_A RUN_B` into its own
/// folder, never into a run): run B against run A, paired over the tuples
/// both runs decided.
///
/// - `level = overall` (`group = all`) and `family` (`group` = the family):
///   one row per (subject, mode, level, group, metric) with `metric` `css`,
///   `cms` (overall only, per case) or `spurious_shift` (the negative-control
///   family); `difference` = `b_value − a_value` with the paired case
///   bootstrap's percentile interval, the tuple outcomes (`fixed`,
///   `regressed`, `same`) and the exact McNemar p-value of the "updated
///   correctly" indicator (score 1).
/// - `level = tuple`: one row per tuple that regressed (`metric = regressed`)
///   and per tuple decided in one run only (`only_a`, `only_b`), with
///   `case_id`, `intervention` and `sample`.
/// - `level = subject`: a (subject, mode) judged in one run only (`only_a`,
///   `only_b`), `n_tuples` its decided tuples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    /// The runs compared (their `run` names).
    pub run_a: String,
    pub run_b: String,
    pub judge: String,
    pub subject: String,
    pub mode: String,
    /// `overall`, `family`, `tuple` or `subject`.
    pub level: String,
    /// `all`, a family, or (tuple rows) the tuple's family.
    pub group: String,
    /// `css`, `cms`, `spurious_shift`; `regressed`, `only_a`, `only_b`.
    pub metric: String,
    /// Tuple rows: the tuple.
    pub case_id: Option<String>,
    pub intervention: Option<String>,
    pub sample: Option<u32>,
    /// The estimate (or the tuple's score) in run A and run B.
    pub a_value: Option<f64>,
    pub b_value: Option<f64>,
    /// `b_value − a_value`.
    pub difference: Option<f64>,
    /// Percentile interval of the difference (paired case bootstrap).
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n_cases: u64,
    pub n_tuples: u64,
    /// Matched tuples whose score rose, fell, or stayed.
    pub fixed: u64,
    pub regressed: u64,
    pub same: u64,
    /// Exact two-sided McNemar p-value on score = 1 (CSS and the control
    /// family; none for CMS).
    pub mcnemar_p: Option<f64>,
}
