//! Mode `harness`: EviDx's observer-guided harness (seed 004).
//!
//! The subject is the **Diagnostician**. Each turn it reports its belief
//! over a differential and names one action, as one JSON object (or, with
//! native tool calling, as a tool call whose arguments carry the belief):
//!
//! - `list_chart_sections` and `read_chart_section(name)`: the **EHR
//!   Executor**, deterministic, serving the *variant's* chart (the
//!   intervention edits what it serves);
//! - `consult(query)`: the **Clinical Consultant**, BM25 over the run's
//!   corpus ([`cfeval_consult`]), its passages recorded in the trace;
//! - `finish(answer)`: a proposal to end the episode.
//!
//! The **Observer** computes the entropy H(t) (bits) of the belief in force
//! and the coverage V(T_t) (the share of the chart's sections read) after
//! every turn, and approves a finish only when H(t) ≤ τ_H(t) and V(T_t) ≥
//! τ_V(t); otherwise it answers with what is missing and the episode goes
//! on. The thresholds are step-aware ([`Thresholds`]); the episode ends at
//! `max_steps` turns.
//!
//! A reply that is not the protocol is counted, never fatal: malformed JSON,
//! unusable numbers, hypotheses the ontology does not know, unknown tools
//! and natural-language answers (read as an action where one can be read)
//! are recorded per turn and in the episode's level-1 counters.

use std::collections::BTreeSet;
use std::sync::Arc;

use cfeval_consult::Corpus;
use cfeval_model::{Message, ModelClient, ResponseFormat, ToolSpec};
use cfeval_schema::{Belief, HarnessOutcome, HarnessStep, ResponseRow, TraceStep, VariantRow};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::prompt::{extract_recommendation, tool_result};
use crate::respond::{
    CallSettings, Subject, account, account_failure, final_step, note_tool_outcome, record_failure, run_tool,
    tool_step,
};

/// The Observer's thresholds and the episode's limits. The defaults follow
/// the EviDx paper: at most 50 steps; the entropy threshold relaxes after
/// the fifth step; the coverage requirement (0.40, the paper's example)
/// falls after the tenth step to a floor of 0.1. The paper gives no numbers
/// for the entropy threshold or the rates: 1 bit (a belief no more spread
/// than an even split between two hypotheses), relaxing by 0.1 bit a step
/// to at most 2 bits, and coverage falling by 0.05 a step are cfeval's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Thresholds {
    /// Turns at most.
    pub max_steps: u32,
    /// τ_H up to step `relax-entropy-after` (bits).
    pub max_entropy: f64,
    pub relax_entropy_after: u32,
    /// Bits τ_H grows by each step after that …
    pub entropy_relax_per_step: f64,
    /// … up to this.
    pub max_entropy_ceiling: f64,
    /// τ_V up to step `lower-coverage-after`.
    pub min_coverage: f64,
    pub lower_coverage_after: u32,
    /// What τ_V falls by each step after that …
    pub coverage_drop_per_step: f64,
    /// … down to this floor.
    pub coverage_floor: f64,
    /// An entropy fall larger than this (bits) with no new evidence before
    /// it is a spurious drop.
    pub spurious_drop: f64,
    /// Passages the Consultant returns per query.
    pub passages: usize,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            max_steps: 50,
            max_entropy: 1.0,
            relax_entropy_after: 5,
            entropy_relax_per_step: 0.1,
            max_entropy_ceiling: 2.0,
            min_coverage: 0.4,
            lower_coverage_after: 10,
            coverage_drop_per_step: 0.05,
            coverage_floor: 0.1,
            spurious_drop: 0.05,
            passages: 3,
        }
    }
}

impl Thresholds {
    /// τ_H(t): the most entropy (bits) a finish at step `t` may have.
    pub fn max_entropy_at(&self, step: u32) -> f64 {
        let over = step.saturating_sub(self.relax_entropy_after);
        (self.max_entropy + self.entropy_relax_per_step * f64::from(over))
            .min(self.max_entropy_ceiling.max(self.max_entropy))
    }

    /// τ_V(t): the least coverage a finish at step `t` needs.
    pub fn min_coverage_at(&self, step: u32) -> f64 {
        let over = step.saturating_sub(self.lower_coverage_after);
        (self.min_coverage - self.coverage_drop_per_step * f64::from(over))
            .max(self.coverage_floor.min(self.min_coverage))
    }

    /// Problems with the values, each naming its key.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.max_steps == 0 || self.max_steps > 1000 {
            problems.push(format!("max-steps must be 1 to 1000, not {}", self.max_steps));
        }
        for (key, value) in [
            ("max-entropy", self.max_entropy),
            ("entropy-relax-per-step", self.entropy_relax_per_step),
            ("max-entropy-ceiling", self.max_entropy_ceiling),
            ("spurious-drop", self.spurious_drop),
        ] {
            if !value.is_finite() || value < 0.0 {
                problems.push(format!("{key} must be a number of bits 0 or more, not {value}"));
            }
        }
        for (key, value) in [
            ("min-coverage", self.min_coverage),
            ("coverage-drop-per-step", self.coverage_drop_per_step),
            ("coverage-floor", self.coverage_floor),
        ] {
            if !(0.0..=1.0).contains(&value) {
                problems.push(format!("{key} must be between 0 and 1, not {value}"));
            }
        }
        if self.passages == 0 || self.passages > 50 {
            problems.push(format!("passages must be 1 to 50, not {}", self.passages));
        }
        problems
    }
}

/// Shannon entropy in bits of a distribution (terms of 0 add nothing).
pub fn entropy_bits(probabilities: &[f64]) -> f64 {
    let h: f64 = probabilities
        .iter()
        .filter(|p| **p > 0.0)
        .map(|p| -p * p.log2())
        .sum();
    // -0.0 for a certain belief reads better as 0.
    h.max(0.0)
}

/// A belief as written, checked and normalised: `Err` says why it cannot
/// be used (negative, NaN or infinite numbers, nothing above zero, no
/// hypothesis).
pub fn normalise(raw: &[(String, f64)]) -> Result<Vec<Belief>, String> {
    if raw.is_empty() {
        return Err("the differential is empty".into());
    }
    if let Some((name, value)) = raw.iter().find(|(_, value)| !value.is_finite()) {
        return Err(format!("the belief of {name:?} is not a finite number ({value})"));
    }
    if let Some((name, value)) = raw.iter().find(|(_, value)| *value < 0.0) {
        return Err(format!("the belief of {name:?} is negative ({value})"));
    }
    let total: f64 = raw.iter().map(|(_, value)| value).sum();
    if total <= 0.0 {
        return Err("no hypothesis has a belief above zero".into());
    }
    Ok(raw
        .iter()
        .map(|(hypothesis, value)| Belief {
            hypothesis: hypothesis.clone(),
            raw: *value,
            probability: value / total,
        })
        .collect())
}

/// One turn's reply, read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Turn {
    /// The belief as written: `None` when the reply carried none.
    pub belief: Option<Vec<(String, f64)>>,
    /// The action and its argument (`None`: no usable action).
    pub action: Option<(String, Option<String>)>,
    /// Why the reply is not the protocol, if it is not.
    pub problem: Option<String>,
    /// Read from natural language, not from the protocol.
    pub fallback: bool,
}

/// The names an action may go by, to the harness's own.
fn action_name(name: &str) -> String {
    let name = name
        .trim()
        .trim_end_matches("()")
        .to_lowercase()
        .replace([' ', '-'], "_");
    match name.as_str() {
        "list_sections" | "list_chart" => "list_chart_sections".into(),
        "read_section" | "read_chart" | "read" => "read_chart_section".into(),
        "consult_knowledge" | "search" | "consultant" => "consult".into(),
        "final_answer" | "answer" | "diagnose" | "stop" | "terminate" => "finish".into(),
        _ => name,
    }
}

/// The belief entries of a JSON differential: `[{"hypothesis": …,
/// "belief": …}]` (also `diagnosis`/`name` and `probability`/`p`), or an
/// object of hypothesis → number. `Err` when it is neither.
fn read_differential(value: &Value) -> Result<Vec<(String, f64)>, String> {
    let number = |value: &Value| -> Option<f64> {
        match value {
            Value::Number(number) => number.as_f64(),
            // A model writing "NaN" or "0.3" as a string.
            Value::String(text) => text
                .trim()
                .trim_end_matches('%')
                .parse::<f64>()
                .ok()
                .map(|n| if text.trim().ends_with('%') { n / 100.0 } else { n }),
            _ => None,
        }
    };
    match value {
        Value::Array(items) => items
            .iter()
            .map(|item| {
                let name = ["hypothesis", "diagnosis", "name", "plan"]
                    .iter()
                    .find_map(|key| item.get(key).and_then(Value::as_str))
                    .ok_or_else(|| format!("a differential entry has no hypothesis name: {item}"))?;
                let belief = ["belief", "probability", "p", "confidence"]
                    .iter()
                    .find_map(|key| item.get(key))
                    .ok_or_else(|| format!("the entry {name:?} has no belief"))?;
                let belief = number(belief)
                    .ok_or_else(|| format!("the belief of {name:?} is not a number: {belief}"))?;
                Ok((name.trim().to_string(), belief))
            })
            .collect(),
        Value::Object(map) => map
            .iter()
            .map(|(name, belief)| {
                number(belief)
                    .map(|belief| (name.trim().to_string(), belief))
                    .ok_or_else(|| format!("the belief of {name:?} is not a number: {belief}"))
            })
            .collect(),
        other => Err(format!("the differential is not a list: {other}")),
    }
}

/// The first balanced JSON object in a text (fenced or not).
fn json_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, c) in text[start..].char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return serde_json::from_str(&text[start..start + offset + 1]).ok();
                }
            }
            _ => {}
        }
    }
    None
}

/// Reads the protocol's JSON object: `{"differential": […], "action": …,
/// "argument": …}`.
fn read_object(object: &Value) -> Turn {
    let mut turn = Turn::default();
    let mut problems = Vec::new();
    match object.get("differential").or_else(|| object.get("belief")) {
        Some(differential) => match read_differential(differential) {
            Ok(belief) => turn.belief = Some(belief),
            Err(problem) => problems.push(problem),
        },
        None => problems.push("the reply has no `differential`".into()),
    }
    match object.get("action") {
        Some(Value::String(action)) => {
            let argument = ["argument", "name", "query", "answer", "section"]
                .iter()
                .find_map(|key| object.get(key).and_then(Value::as_str))
                .map(str::to_string);
            turn.action = Some((action_name(action), argument));
        }
        // {"action": {"tool": …, "argument": …}}
        Some(Value::Object(action)) => {
            let name = ["tool", "name", "action"]
                .iter()
                .find_map(|key| action.get(*key).and_then(Value::as_str));
            let argument = ["argument", "name", "query", "answer", "section"]
                .iter()
                .filter(|key| **key != "name" || action.contains_key("tool"))
                .find_map(|key| action.get(*key).and_then(Value::as_str))
                .map(str::to_string);
            match name {
                Some(name) => turn.action = Some((action_name(name), argument)),
                None => problems.push("the action names no tool".into()),
            }
        }
        _ => problems.push("the reply has no `action`".into()),
    }
    if !problems.is_empty() {
        turn.problem = Some(problems.join("; "));
    }
    turn
}

/// Reads a turn's text: the protocol's JSON object, else natural language
/// (an `ACTION:` line, or a final diagnosis or answer), counted as a
/// fallback.
pub fn read_turn(text: &str) -> Turn {
    if let Some(object) = json_object(text) {
        return read_object(&object);
    }
    let mut turn = Turn {
        problem: Some("the reply is not the JSON object asked for".into()),
        fallback: true,
        ..Turn::default()
    };
    if let Some((tool, arguments)) = crate::respond::parse_action(text) {
        let argument = arguments
            .get("name")
            .or_else(|| arguments.get("query"))
            .and_then(Value::as_str)
            .map(str::to_string);
        turn.action = Some((action_name(&tool), argument));
        return turn;
    }
    let lower = text.to_lowercase();
    let final_cue = [
        "final diagnosis:",
        "most likely diagnosis:",
        "diagnosis:",
        "recommendation:",
        "final answer:",
    ]
    .iter()
    .find_map(|cue| lower.find(cue));
    if final_cue.is_some() && !text.trim().is_empty() {
        turn.action = Some(("finish".into(), Some(text.trim().to_string())));
    }
    turn
}

/// The tools offered natively: the EHR Executor's, the Consultant's and
/// `finish`, each carrying the belief after the last observation.
fn tools() -> Vec<ToolSpec> {
    let differential = json!({
        "type": "array",
        "description": "your belief now: every hypothesis you are weighing with its probability",
        "items": {
            "type": "object",
            "properties": {"hypothesis": {"type": "string"}, "belief": {"type": "number"}},
            "required": ["hypothesis", "belief"]
        }
    });
    let tool = |name: &str, description: &str, argument: Option<(&str, &str)>| {
        let mut properties = serde_json::Map::new();
        let mut required = vec![json!("differential")];
        if let Some((key, about)) = argument {
            properties.insert(key.into(), json!({"type": "string", "description": about}));
            required.push(json!(key));
        }
        properties.insert("differential".into(), differential.clone());
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": properties, "required": required}),
        }
    };
    vec![
        tool(
            "list_chart_sections",
            "List the names of the patient's chart sections.",
            None,
        ),
        tool(
            "read_chart_section",
            "Read one section of the patient's chart.",
            Some(("name", "the section's name")),
        ),
        tool(
            "consult",
            "Ask the clinical consultant: passages of reference text that match the query.",
            Some(("query", "what to look up")),
        ),
        tool(
            "finish",
            "Propose your final answer; the observer approves it only when your belief is settled enough and you have read enough of the chart.",
            Some(("answer", "your final answer")),
        ),
    ]
}

/// The longest hypothesis name the step JSON allows (the longest diagnosis
/// name of the general-medicine ontology has 56 characters).
const HYPOTHESIS_CHARS: u64 = 80;
/// The longest argument: a section name, a query or the final answer.
const ARGUMENT_CHARS: u64 = 240;

/// The step JSON asked for when tools are not native (a strict schema).
fn step_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "differential": {
                "type": "array",
                // A differential, not a list without end (small models loop).
                "maxItems": 8,
                "items": {
                    "type": "object",
                    // Bounded strings too: a 135M model repeats a phrase
                    // inside a hypothesis until its tokens run out.
                    "properties": {
                        "hypothesis": {"type": "string", "maxLength": HYPOTHESIS_CHARS},
                        "belief": {"type": "number"}
                    },
                    "required": ["hypothesis", "belief"],
                    "additionalProperties": false
                }
            },
            "action": {"type": "string", "enum": ["list_chart_sections", "read_chart_section", "consult", "finish"]},
            "argument": {"type": "string", "maxLength": ARGUMENT_CHARS}
        },
        "required": ["differential", "action", "argument"],
        "additionalProperties": false
    })
}

/// How the Diagnostician answers each turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// Native tool calls (each carrying the belief) where the backend has
    /// them, the step JSON elsewhere — as mode `agent` chooses.
    #[default]
    Auto,
    /// The step JSON under a strict schema, for every model (for servers
    /// without tool calling, e.g. vLLM without a tool parser).
    Json,
}

impl Protocol {
    /// `auto` or `json`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(Protocol::Auto),
            "json" => Some(Protocol::Json),
            _ => None,
        }
    }
}

/// Whether the pack's ontology knows a hypothesis by name.
pub type Knows = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What mode `harness` runs with: the Observer's thresholds, the
/// Consultant's corpus, the system prompt and (for a diagnosis pack) the
/// ontology that decides which hypotheses are known.
pub struct Harness {
    pub thresholds: Thresholds,
    pub protocol: Protocol,
    pub corpus: Arc<Corpus>,
    pub prompt: String,
    /// The template of the Diagnostician's first message
    /// ([`crate::prompt::harness_opening`]).
    pub opening: String,
    /// Knows a hypothesis by name; `None`: every hypothesis is known.
    pub known: Option<Knows>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Harness")
            .field("thresholds", &self.thresholds)
            .field("corpus", &self.corpus)
            .finish()
    }
}

/// The running state of one episode.
struct Episode<'a> {
    harness: &'a Harness,
    variant: &'a VariantRow,
    outcome: HarnessOutcome,
    belief: Option<Vec<Belief>>,
    seen_passages: BTreeSet<String>,
    /// Whether the last observation brought new evidence.
    new_evidence: bool,
    trace_step: u32,
    /// Count hypotheses the ontology does not know (not for a control,
    /// whose hypothesis is its whole answer).
    check_known: bool,
}

/// What executing an action gives back to the Diagnostician.
struct Observation {
    text: String,
    /// The episode ends with this answer (an approved finish).
    approved: Option<String>,
    /// The Observer refused a finish.
    blocked: bool,
}

impl<'a> Episode<'a> {
    fn new(harness: &'a Harness, variant: &'a VariantRow) -> Self {
        Self {
            harness,
            variant,
            outcome: HarnessOutcome {
                outcome: "no_answer".into(),
                max_steps: harness.thresholds.max_steps,
                steps: 0,
                trajectory: Vec::new(),
                schema_failures: 0,
                invalid_beliefs: 0,
                unknown_hypotheses: 0,
                unknown_tools: 0,
                tool_errors: 0,
                retries: 0,
                language_fallbacks: 0,
                observer_blocks: 0,
                spurious_drops: 0,
                final_coverage: 0.0,
                final_entropy: None,
                consultations: 0,
                answer: None,
                sections_before_answer: Vec::new(),
                corpus_hash: harness.corpus.hash().to_string(),
            },
            belief: None,
            seen_passages: BTreeSet::new(),
            new_evidence: true,
            trace_step: 0,
            check_known: true,
        }
    }

    /// Appends `step` to the row's trace under the episode's next number.
    fn record(&mut self, row: &mut ResponseRow, mut step: TraceStep) {
        step.step = self.trace_step;
        self.trace_step += 1;
        row.trace.push(step);
    }

    fn coverage(&self, row: &ResponseRow) -> f64 {
        let total = self.variant.sections.len();
        if total == 0 {
            return 1.0;
        }
        let read = self
            .variant
            .sections
            .iter()
            .filter(|section| row.sections_read.contains(&section.name))
            .count();
        read as f64 / total as f64
    }

    fn entropy(&self) -> Option<f64> {
        self.belief
            .as_ref()
            .map(|belief| entropy_bits(&belief.iter().map(|b| b.probability).collect::<Vec<_>>()))
    }

    /// Takes in a turn's belief; returns the turn's normalised belief (empty
    /// when unusable) and any problem with it.
    fn take_belief(&mut self, turn: &Turn) -> (Vec<Belief>, Option<String>) {
        let Some(raw) = &turn.belief else {
            return (Vec::new(), None);
        };
        if let Some(known) = self.harness.known.as_ref().filter(|_| self.check_known) {
            let mut unknown: Vec<&str> = raw
                .iter()
                .map(|(name, _)| name.as_str())
                .filter(|name| !known(name))
                .collect();
            unknown.sort_unstable();
            unknown.dedup();
            self.outcome.unknown_hypotheses += unknown.len() as u32;
        }
        match normalise(raw) {
            Ok(belief) => {
                self.belief = Some(belief.clone());
                (belief, None)
            }
            Err(problem) => {
                self.outcome.invalid_beliefs += 1;
                (Vec::new(), Some(problem))
            }
        }
    }

    /// Runs one action; records its trace step and what was read.
    fn act(&mut self, step: u32, action: &str, argument: Option<&str>, row: &mut ResponseRow) -> Observation {
        let observation = |text: String| Observation {
            text,
            approved: None,
            blocked: false,
        };
        match action {
            "list_chart_sections" | "read_chart_section" => {
                let arguments = match argument {
                    Some(name) => json!({"name": name}),
                    None => json!({}),
                };
                let (answer, section, error) = run_tool(self.variant, action, &arguments);
                let first_read = section.is_some_and(|section| !row.sections_read.contains(&section.name));
                self.record(row, tool_step(0, action, &arguments, section, error.clone()));
                note_tool_outcome(row, section, error.is_some());
                self.new_evidence = first_read;
                observation(answer)
            }
            "consult" => {
                let query = argument.unwrap_or_default();
                self.outcome.consultations += 1;
                let limit = self.harness.thresholds.passages;
                let hits = match self.harness.corpus.search(query, limit) {
                    Ok(hits) => hits,
                    Err(error) => {
                        let error = format!("the consultant failed: {error}");
                        row.tool_errors += 1;
                        let step =
                            tool_step(0, "consult", &json!({"query": query}), None, Some(error.clone()));
                        self.record(row, step);
                        self.new_evidence = false;
                        return observation(format!("error: {error}"));
                    }
                };
                let mut new = false;
                let mut text = String::new();
                for hit in &hits {
                    new |= self.seen_passages.insert(hit.passage.id.clone());
                    text.push_str(&format!(
                        "[{}] {}\n{}\n\n",
                        hit.passage.id, hit.passage.title, hit.passage.text
                    ));
                }
                if hits.is_empty() {
                    text.push_str("No passage matches the query.");
                }
                let text = text.trim_end().to_string();
                let ids: Vec<&str> = hits.iter().map(|hit| hit.passage.id.as_str()).collect();
                let step = TraceStep {
                    kind: "consult".into(),
                    result_hash: Some(cfeval_schema::ids::content_id("consult", &ids)),
                    text: Some(text.clone()),
                    ..tool_step(0, "consult", &json!({"query": query}), None, None)
                };
                self.record(row, step);
                self.new_evidence = new;
                observation(tool_result(&text))
            }
            "finish" => {
                let answer = argument.unwrap_or_default().trim().to_string();
                self.new_evidence = false;
                if answer.is_empty() {
                    row.tool_errors += 1;
                    return observation("error: finish needs your final answer as its argument".into());
                }
                self.outcome.answer = Some(answer.clone());
                self.outcome.sections_before_answer = row.sections_read.clone();
                let thresholds = &self.harness.thresholds;
                let (max_entropy, min_coverage) =
                    (thresholds.max_entropy_at(step), thresholds.min_coverage_at(step));
                let coverage = self.coverage(row);
                let mut missing = Vec::new();
                match self.entropy() {
                    Some(entropy) if entropy <= max_entropy + 1e-12 => {}
                    Some(entropy) => missing.push(format!(
                        "uncertainty H = {entropy:.2} bits > {max_entropy:.2}: your belief is still spread over the differential"
                    )),
                    None => missing.push("no usable belief has been reported: report your differential with a belief per hypothesis".into()),
                }
                if coverage + 1e-12 < min_coverage {
                    let unread: Vec<&str> = self
                        .variant
                        .sections
                        .iter()
                        .map(|section| section.name.as_str())
                        .filter(|name| !row.sections_read.iter().any(|read| read == name))
                        .collect();
                    missing.push(format!(
                        "coverage {coverage:.2} < {min_coverage:.2}: sections not yet read: {}",
                        unread.join(", ")
                    ));
                }
                if missing.is_empty() {
                    return Observation {
                        text: String::new(),
                        approved: Some(answer),
                        blocked: false,
                    };
                }
                self.outcome.observer_blocks += 1;
                let message = format!(
                    "The observer does not approve finishing yet: {}. Continue gathering evidence.",
                    missing.join("; ")
                );
                let step = TraceStep {
                    kind: "observer".into(),
                    speaker: Some("observer".into()),
                    text: Some(message.clone()),
                    ..tool_step(0, "finish", &json!({"answer": answer}), None, None)
                };
                self.record(row, step);
                Observation {
                    text: message,
                    approved: None,
                    blocked: true,
                }
            }
            other => {
                self.outcome.unknown_tools += 1;
                let error = format!(
                    "unknown tool {other:?}; tools: list_chart_sections, read_chart_section, consult, finish"
                );
                self.record(row, tool_step(0, other, &json!({}), None, Some(error.clone())));
                row.tool_errors += 1;
                self.new_evidence = false;
                observation(format!("error: {error}"))
            }
        }
    }

    /// One turn: the belief, the Observer's bookkeeping, the action.
    fn turn(&mut self, step: u32, turn: Turn, row: &mut ResponseRow) -> Observation {
        let new_evidence = self.new_evidence;
        let before = self.entropy();
        self.outcome.schema_failures += u32::from(turn.problem.is_some());
        self.outcome.language_fallbacks += u32::from(turn.fallback && turn.action.is_some());
        let (belief, belief_problem) = self.take_belief(&turn);
        let after = self.entropy();
        if let (Some(before), Some(after)) = (before, after)
            && !new_evidence
            && before - after > self.harness.thresholds.spurious_drop
        {
            self.outcome.spurious_drops += 1;
        }
        let (observation, action, argument) = match &turn.action {
            Some((action, argument)) => (
                self.act(step, action, argument.as_deref(), row),
                action.clone(),
                argument.clone(),
            ),
            None => {
                self.new_evidence = false;
                let why = turn.problem.clone().unwrap_or_else(|| "no action".into());
                (
                    Observation {
                        text: format!(
                            "Your reply could not be read ({why}). Reply with the JSON object: your differential with a belief per hypothesis, and one action."
                        ),
                        approved: None,
                        blocked: false,
                    },
                    "none".into(),
                    None,
                )
            }
        };
        let blocked = observation.blocked.then(|| observation.text.clone());
        let problem = [turn.problem.clone(), belief_problem]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        let thresholds = &self.harness.thresholds;
        self.outcome.trajectory.push(HarnessStep {
            step,
            action,
            argument,
            belief,
            entropy: after,
            coverage: self.coverage(row),
            max_entropy: thresholds.max_entropy_at(step),
            min_coverage: thresholds.min_coverage_at(step),
            new_evidence,
            blocked,
            problem: (!problem.is_empty()).then(|| problem.join("; ")),
        });
        observation
    }

    fn finish(mut self, row: &mut ResponseRow, approved: Option<String>, steps: u32) {
        self.outcome.steps = steps;
        // Every failed tool call of the episode is counted on the row.
        self.outcome.tool_errors = row.tool_errors;
        self.outcome.final_coverage = self.coverage(row);
        self.outcome.final_entropy = self.entropy();
        let max_steps = self.harness.thresholds.max_steps;
        let text = match approved {
            Some(answer) => {
                self.outcome.outcome = "approved".into();
                Some(answer)
            }
            None if self.outcome.answer.is_some() && steps >= max_steps => {
                self.outcome.outcome = "step_limit".into();
                self.outcome.answer.clone()
            }
            // The subject's own outcome, as a dialogue without a diagnosis:
            // an answer the judge grades (it names none), never a row left
            // out of the scores.
            None if steps >= max_steps => {
                self.outcome.outcome = "no_answer".into();
                Some(format!(
                    "No diagnosis was proposed within the limit of {max_steps} steps."
                ))
            }
            // The call failed: the row's status says why.
            None => {
                self.outcome.outcome = "error".into();
                None
            }
        };
        if let Some(text) = text {
            self.record(row, final_step(0, &text));
            row.recommendation = Some(extract_recommendation(&text));
            row.text = Some(text);
        }
        row.harness = Some(self.outcome);
    }
}

/// A pack's corpus folder, for the Consultant.
pub const CORPUS_DIR: &str = "corpus";

/// One passage per ontology diagnosis: its name, other names, what it is a
/// kind of and the tests that confirm it (the "ontology definitions" of a
/// diagnosis pack's corpus).
pub fn ontology_passages(ontology: &cfeval_diagnosis::ontology::Ontology) -> Vec<cfeval_consult::Passage> {
    ontology
        .diagnoses()
        .iter()
        .map(|diagnosis| {
            let mut text = format!("{}.", diagnosis.name);
            if !diagnosis.synonyms.is_empty() {
                text.push_str(&format!(" Also called: {}.", diagnosis.synonyms.join(", ")));
            }
            let broader: Vec<&str> = diagnosis
                .broader
                .iter()
                .filter_map(|id| ontology.diagnosis(id))
                .map(|broader| broader.name.as_str())
                .collect();
            if !broader.is_empty() {
                text.push_str(&format!(" A kind of: {}.", broader.join(", ")));
            }
            if let Some(sex) = &diagnosis.sex {
                text.push_str(&format!(" Occurs in {sex} patients."));
            }
            if !diagnosis.confirming.is_empty() {
                text.push_str(&format!(" Confirmed by: {}.", diagnosis.confirming.join("; ")));
            }
            cfeval_consult::Passage {
                id: format!("ontology#{}", diagnosis.id),
                title: diagnosis.name.clone(),
                text,
            }
        })
        .collect()
}

/// One passage per line of the guideline table: the guideline it
/// paraphrases as the title, the line as the text.
pub fn guideline_passages(guidelines: &cfeval_guidelines::Guidelines) -> Vec<cfeval_consult::Passage> {
    guidelines
        .rules
        .iter()
        .map(|rule| cfeval_consult::Passage {
            id: format!("guidelines#{}", rule.id),
            title: rule.guideline.clone(),
            text: rule.says.clone(),
        })
        .collect()
}

impl Harness {
    /// The message that follows step `step` (0: the opening): where the
    /// Diagnostician is in its step budget, then what it observed.
    fn next_message(&self, step: u32, observation: &str) -> String {
        format!(
            "Step {} of {}.\n{observation}",
            step + 1,
            self.thresholds.max_steps
        )
    }

    /// Runs one episode of `subject` on `variant` into `row`. Never fails:
    /// a failed call ends the episode with `status = error`.
    pub async fn episode(
        &self,
        subject: &Subject,
        variant: &VariantRow,
        settings: &CallSettings,
        row: &mut ResponseRow,
    ) {
        match subject {
            Subject::Control(control) => self.control_episode(&control.answer_variant(variant), variant, row),
            Subject::Model {
                client, native_tools, ..
            } => {
                let native = *native_tools && self.protocol == Protocol::Auto;
                self.model_episode(client, native, variant, settings, row).await
            }
        }
    }

    /// A control reads every section in order (as many as the step limit
    /// leaves before a finish), reports certainty in its answer, and
    /// finishes.
    fn control_episode(&self, answer: &str, variant: &VariantRow, row: &mut ResponseRow) {
        let mut episode = Episode::new(self, variant);
        episode.check_known = false;
        let mut step = 0;
        // Within the step limit: the last step is the finish.
        let readable = self.thresholds.max_steps.saturating_sub(1) as usize;
        for section in variant.sections.iter().take(readable) {
            step += 1;
            let turn = Turn {
                belief: Some(vec![(answer.to_string(), 1.0)]),
                action: Some(("read_chart_section".into(), Some(section.name.clone()))),
                ..Turn::default()
            };
            episode.turn(step, turn, row);
        }
        step += 1;
        let turn = Turn {
            belief: Some(vec![(answer.to_string(), 1.0)]),
            action: Some(("finish".into(), Some(answer.to_string()))),
            ..Turn::default()
        };
        let approved = episode.turn(step, turn, row).approved;
        row.finish_reason = Some("stop".into());
        row.request_hash =
            cfeval_schema::ids::content_id("control-harness", &[&row.subject, &variant.variant_id]);
        episode.finish(row, approved, step);
    }

    async fn model_episode(
        &self,
        client: &ModelClient,
        native_tools: bool,
        variant: &VariantRow,
        settings: &CallSettings,
        row: &mut ResponseRow,
    ) {
        let mut episode = Episode::new(self, variant);
        let mut messages = vec![
            Message::system(self.prompt.clone()),
            Message::user(self.next_message(
                0,
                &crate::prompt::harness_opening(&self.opening, &variant.sections),
            )),
        ];
        let mut keys = Vec::new();
        let mut all_cached = true;
        let mut approved = None;
        let mut steps = 0;
        for step in 1..=self.thresholds.max_steps {
            let mut request = settings.request(messages.clone());
            if native_tools {
                request = request.with_tools(tools());
            } else {
                request.params.response_format = Some(ResponseFormat::JsonSchema {
                    name: "harness_step".into(),
                    schema: step_schema(),
                    strict: true,
                });
            }
            let answer = client
                .chat_checked(&request, Some(&variant.variant_id), Some(&crate::reply::check))
                .await;
            let completion = match answer {
                Ok(completion) => completion,
                Err(failure) => {
                    // A reply cut off by the token limit, empty or refused
                    // (after the client's retries) is a turn that could not
                    // be read: counted, and the episode goes on.
                    if let Some((status, response)) = failure.error.unusable() {
                        steps = step;
                        account_failure(row, &failure);
                        episode.outcome.retries += failure.attempts.saturating_sub(1);
                        all_cached = false;
                        let turn = Turn {
                            problem: Some(format!("the reply was unusable ({status})")),
                            ..Turn::default()
                        };
                        // The unusable reply, kept for inspection.
                        let kept = TraceStep {
                            kind: "error".into(),
                            error: Some(format!("unusable reply ({status})")),
                            text: response.text.clone(),
                            ..final_step(0, "")
                        };
                        episode.record(row, kept);
                        let observation = episode.turn(step, turn, row);
                        messages.push(Message::assistant(response.text.clone().unwrap_or_default()));
                        messages.push(Message::user(self.next_message(step, &observation.text)));
                        continue;
                    }
                    record_failure(row, &failure);
                    break;
                }
            };
            steps = step;
            account(row, &completion);
            episode.outcome.retries += completion.attempts.saturating_sub(1);
            all_cached &= completion.from_cache;
            keys.push(completion.cache_key.to_hex());
            let response = completion.response;
            if native_tools && !response.tool_calls.is_empty() {
                messages.push(Message::from_response(&response));
                for call in &response.tool_calls {
                    let turn = match call.arguments_json() {
                        Ok(arguments) => {
                            let mut turn = match arguments.get("differential") {
                                Some(differential) => match read_differential(differential) {
                                    Ok(belief) => Turn {
                                        belief: Some(belief),
                                        ..Turn::default()
                                    },
                                    Err(problem) => Turn {
                                        problem: Some(problem),
                                        ..Turn::default()
                                    },
                                },
                                None => Turn {
                                    problem: Some("the tool call has no `differential`".into()),
                                    ..Turn::default()
                                },
                            };
                            let argument = ["name", "query", "answer"]
                                .iter()
                                .find_map(|key| arguments.get(key).and_then(Value::as_str))
                                .map(str::to_string);
                            turn.action = Some((action_name(&call.name), argument));
                            turn
                        }
                        Err(error) => Turn {
                            problem: Some(format!("tool call arguments are not valid JSON: {error}")),
                            ..Turn::default()
                        },
                    };
                    let observation = episode.turn(step, turn, row);
                    if observation.approved.is_some() {
                        approved = observation.approved;
                    }
                    messages.push(Message::tool_result(
                        call.id.clone(),
                        self.next_message(step, &observation.text),
                    ));
                }
                if approved.is_some() {
                    break;
                }
                continue;
            }
            let text = response.text.unwrap_or_default();
            let observation = episode.turn(step, read_turn(&text), row);
            if observation.approved.is_some() {
                approved = observation.approved;
                break;
            }
            messages.push(Message::assistant(text));
            messages.push(Message::user(self.next_message(step, &observation.text)));
        }
        row.cached = all_cached && !keys.is_empty();
        row.request_hash =
            cfeval_schema::ids::content_id("harness", &keys.iter().map(String::as_str).collect::<Vec<_>>());
        episode.finish(row, approved, steps);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_schema_bounds_its_strings_and_every_pack_diagnosis_fits() {
        let schema = step_schema();
        let hypothesis = &schema["properties"]["differential"]["items"]["properties"]["hypothesis"];
        assert_eq!(hypothesis["maxLength"], HYPOTHESIS_CHARS);
        assert_eq!(schema["properties"]["argument"]["maxLength"], ARGUMENT_CHARS);
        assert_eq!(schema["properties"]["differential"]["maxItems"], 8);
        let packs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs");
        for pack in ["general-medicine"] {
            let ontology = cfeval_diagnosis::ontology::Ontology::load(&packs.join(pack)).unwrap();
            for diagnosis in ontology.diagnoses() {
                assert!(
                    diagnosis.name.chars().count() as u64 <= HYPOTHESIS_CHARS,
                    "{pack}: `{}` does not fit a hypothesis",
                    diagnosis.name
                );
            }
        }
    }

    #[test]
    fn entropy_is_in_bits_and_zero_for_certainty() {
        assert_eq!(entropy_bits(&[1.0]), 0.0);
        assert!((entropy_bits(&[0.5, 0.5]) - 1.0).abs() < 1e-12);
        assert!((entropy_bits(&[0.25; 4]) - 2.0).abs() < 1e-12);
        assert!((entropy_bits(&[0.7, 0.2, 0.1, 0.0]) - 1.156_779_9).abs() < 1e-6);
    }

    #[test]
    fn beliefs_are_normalised_and_unusable_numbers_refused() {
        let raw = |pairs: &[(&str, f64)]| pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect::<Vec<_>>();
        let belief = normalise(&raw(&[("a", 60.0), ("b", 30.0), ("c", 30.0)])).unwrap();
        assert_eq!(
            belief.iter().map(|b| b.probability).collect::<Vec<_>>(),
            [0.5, 0.25, 0.25]
        );
        assert_eq!(belief[0].raw, 60.0);
        assert!(
            normalise(&raw(&[("a", -0.1), ("b", 1.1)]))
                .unwrap_err()
                .contains("negative")
        );
        assert!(
            normalise(&raw(&[("a", f64::NAN)]))
                .unwrap_err()
                .contains("finite")
        );
        assert!(normalise(&raw(&[("a", 0.0)])).unwrap_err().contains("above zero"));
        assert!(normalise(&[]).unwrap_err().contains("empty"));
    }

    #[test]
    fn thresholds_follow_the_step_aware_schedule() {
        let t = Thresholds::default();
        assert_eq!(t.max_entropy_at(1), 1.0);
        assert_eq!(t.max_entropy_at(5), 1.0);
        assert!((t.max_entropy_at(6) - 1.1).abs() < 1e-12);
        assert!((t.max_entropy_at(15) - 2.0).abs() < 1e-12);
        assert_eq!(t.max_entropy_at(40), 2.0);
        assert_eq!(t.min_coverage_at(10), 0.4);
        assert!((t.min_coverage_at(11) - 0.35).abs() < 1e-12);
        assert!((t.min_coverage_at(16) - 0.1).abs() < 1e-12);
        assert_eq!(t.min_coverage_at(49), 0.1);
        assert!(t.problems().is_empty());
        let bad = Thresholds {
            max_steps: 0,
            min_coverage: 1.5,
            max_entropy: f64::NAN,
            ..Thresholds::default()
        };
        let problems = bad.problems().join("\n");
        for key in ["max-steps", "min-coverage", "max-entropy"] {
            assert!(problems.contains(key), "{problems}");
        }
    }

    #[test]
    fn reads_the_protocol_object_with_its_aliases() {
        let turn = read_turn(
            "```json\n{\"differential\": [{\"hypothesis\": \"Myasthenia gravis\", \"belief\": 0.7}, {\"diagnosis\": \"LEMS\", \"probability\": \"30%\"}], \"action\": \"read_chart_section\", \"argument\": \"labs\"}\n```",
        );
        assert_eq!(turn.problem, None);
        assert_eq!(
            turn.belief,
            Some(vec![("Myasthenia gravis".into(), 0.7), ("LEMS".into(), 0.3)])
        );
        assert_eq!(
            turn.action,
            Some(("read_chart_section".into(), Some("labs".into())))
        );
        // An object of hypothesis → number, and an action object.
        let turn = read_turn(
            r#"{"differential": {"Gout": 2, "Septic arthritis": 1}, "action": {"tool": "consult", "query": "joint aspirate crystals"}}"#,
        );
        assert_eq!(turn.belief.as_ref().map(Vec::len), Some(2));
        assert_eq!(
            turn.action,
            Some(("consult".into(), Some("joint aspirate crystals".into())))
        );
    }

    #[test]
    fn a_reply_off_the_protocol_is_a_counted_problem_or_a_language_fallback() {
        // JSON without a differential: the action still counts.
        let turn = read_turn(r#"{"action": "list_chart_sections"}"#);
        assert!(turn.problem.unwrap().contains("differential"));
        assert_eq!(turn.action, Some(("list_chart_sections".into(), None)));
        // Broken JSON and no readable action.
        let turn = read_turn(r#"{"differential": [{"hypothesis": "x", "belief": 0.5}"#);
        assert!(turn.fallback && turn.action.is_none());
        // Natural language: an ACTION line, or a final diagnosis.
        let turn = read_turn("I should look at the labs.\nACTION: read_chart_section labs");
        assert!(turn.fallback);
        assert_eq!(
            turn.action,
            Some(("read_chart_section".into(), Some("labs".into())))
        );
        let turn = read_turn("Most likely diagnosis: Graves disease\nReasoning: …");
        assert_eq!(turn.action.map(|a| a.0), Some("finish".into()));
        // A differential entry with no number is a problem, not a crash.
        let turn =
            read_turn(r#"{"differential": [{"hypothesis": "x"}], "action": "finish", "argument": "x"}"#);
        assert!(turn.problem.unwrap().contains("no belief"));
        assert!(turn.belief.is_none());
    }
}
