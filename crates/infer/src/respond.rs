//! One subject answering one variant: single-shot, or a ReAct agent that reads
//! the chart through `list_chart_sections` and `read_chart_section(name)`.

use cfeval_model::{CallFailure, ChatParams, ChatRequest, ChatResponse, Message, ModelClient, ToolSpec};
use cfeval_schema::{ResponseRow, ResponseStatus, Section, TraceStep, VariantRow, normalize_finish_reason};
use serde_json::json;

use crate::control::Control;
use crate::dialogue::Dialogue;
use crate::harness::Harness;
use crate::prompt::{Prompts, extract_recommendation, fenced_chart, tool_result};

/// The mode a subject runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    SingleShot,
    Agent,
    /// AgentClinic's doctor–patient dialogue ([`crate::dialogue`]).
    Dialogue,
    /// EviDx's observer-guided harness ([`crate::harness`]).
    Harness,
}

impl Mode {
    /// The name used in tables (`single_shot`, `agent`).
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::SingleShot => "single_shot",
            Mode::Agent => "agent",
            Mode::Dialogue => "dialogue",
            Mode::Harness => "harness",
        }
    }

    /// Reads the name used in tables back (`single_shot`, `agent`,
    /// `dialogue`, `harness`).
    pub fn parse(text: &str) -> Option<Self> {
        [Mode::SingleShot, Mode::Agent, Mode::Dialogue, Mode::Harness]
            .into_iter()
            .find(|mode| mode.as_str() == text)
    }
}

/// Settings of a subject's calls.
#[derive(Debug, Clone)]
pub struct CallSettings {
    pub temperature: f64,
    pub seed: Option<u64>,
    pub max_tokens: u32,
    /// Agent steps (model calls) before the agent is stopped.
    pub max_steps: u32,
    /// Which of a tuple's repeated samples these settings answer (0: the
    /// first, the only one unless `samples > 1`); see [`Self::for_sample`].
    pub sample: u32,
}

impl CallSettings {
    /// The settings of sample `sample` of a tuple: the seed moves on by the
    /// sample number (a seeded server draws another answer) and every sample
    /// after the first has its own cache key, so the cache never hands one
    /// answer back as another sample. Sample 0 is these settings unchanged,
    /// so raising `samples` keeps every answer already made.
    pub fn for_sample(&self, sample: u32) -> Self {
        Self {
            seed: self.seed.map(|seed| seed.wrapping_add(u64::from(sample))),
            sample,
            ..self.clone()
        }
    }

    /// A request with these settings' parameters (and sample salt).
    pub(crate) fn request(&self, messages: Vec<Message>) -> ChatRequest {
        let mut request = ChatRequest::new(messages).with_params(params(self));
        if self.sample > 0 {
            request.cache_salt = Some(format!("sample-{}", self.sample));
        }
        request
    }
}

impl Default for CallSettings {
    fn default() -> Self {
        Self {
            temperature: 0.0,
            seed: Some(0),
            max_tokens: 512,
            max_steps: 8,
            sample: 0,
        }
    }
}

/// A subject: a model behind the chat trait, or a control.
pub enum Subject {
    Model {
        name: String,
        client: ModelClient,
        /// Whether the backend does native tool calling (else the text protocol).
        native_tools: bool,
    },
    Control(Control),
}

impl std::fmt::Debug for Subject {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Subject")
            .field("name", &self.name())
            .finish()
    }
}

impl Subject {
    /// The subject's `provider/model` name.
    pub fn name(&self) -> &str {
        match self {
            Subject::Model { name, .. } => name,
            Subject::Control(control) => &control.name,
        }
    }

    /// Whether this subject is a control.
    pub fn is_control(&self) -> bool {
        matches!(self, Subject::Control(_))
    }
}

/// The part of a response row that does not depend on how it was answered.
fn base_row(
    run: &str,
    subject: &Subject,
    mode: Mode,
    variant: &VariantRow,
    prompts: &Prompts,
    settings: &CallSettings,
) -> ResponseRow {
    let prompt_hash = prompts.hash(mode);
    let (backend, model) = match subject {
        Subject::Model { client, .. } => (client.identity().backend.clone(), client.identity().model.clone()),
        Subject::Control(control) => (
            "control".to_string(),
            control.name.trim_start_matches("control/").to_string(),
        ),
    };
    ResponseRow {
        run: run.to_string(),
        subject: subject.name().to_string(),
        is_control: subject.is_control(),
        mode: mode.as_str().to_string(),
        case_id: variant.case_id.clone(),
        variant_id: variant.variant_id.clone(),
        sample: settings.sample,
        intervention: variant.intervention.clone(),
        family: variant.family.clone(),
        catalog_hash: variant.catalog_hash.clone(),
        backend,
        model,
        prompt_hash,
        prompt_set: prompts.set.clone(),
        request_hash: String::new(),
        temperature: settings.temperature,
        seed: settings.seed,
        status: ResponseStatus::Ok.as_str().into(),
        error: None,
        text: None,
        recommendation: None,
        finish_reason: None,
        attempts: 0,
        tries: 1,
        cached: false,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: 0.0,
        latency_ms: 0,
        trace: Vec::new(),
        sections_read: Vec::new(),
        tool_errors: 0,
        dialogue: None,
        harness: None,
    }
}

/// The row of a tuple whose answering task itself failed (it panicked or
/// was cancelled): `status = error` with why, so that the tuple still has
/// its row and a rerun tries it again.
pub fn failed_row(
    run: &str,
    subject: &Subject,
    mode: Mode,
    variant: &VariantRow,
    prompts: &Prompts,
    settings: &CallSettings,
    error: String,
) -> ResponseRow {
    let mut row = base_row(run, subject, mode, variant, prompts, settings);
    row.status = ResponseStatus::Error.as_str().into();
    row.error = Some(error);
    row
}

/// Answers one variant. Never fails: a failed call becomes `status = error`,
/// and a reply that stayed unusable through every retry (see
/// [`crate::reply`]) gets its own status (`empty`, `truncated`, `refused`,
/// `bad_tool_args`), with the cause, so that every tuple ends with a row.
/// `attempts` counts every HTTP attempt made for the row, failed ones too.
#[allow(clippy::too_many_arguments)]
pub async fn respond(
    run: &str,
    subject: &Subject,
    mode: Mode,
    variant: &VariantRow,
    prompts: &Prompts,
    settings: &CallSettings,
    dialogue: Option<&Dialogue>,
    harness: Option<&Harness>,
) -> ResponseRow {
    let mut row = base_row(run, subject, mode, variant, prompts, settings);
    match (mode, subject) {
        (Mode::Harness, _) => match harness {
            Some(harness) => harness.episode(subject, variant, settings, &mut row).await,
            None => {
                row.status = ResponseStatus::Error.as_str().into();
                row.error = Some("harness mode needs the harness's corpus and thresholds".into());
            }
        },
        (Mode::Dialogue, _) => match dialogue {
            Some(dialogue) => dialogue.converse(subject, variant, settings, &mut row).await,
            None => {
                row.status = ResponseStatus::Error.as_str().into();
                row.error = Some(
                    "dialogue mode needs a diagnosis pack with a dialogue.yaml and a patient agent".into(),
                );
            }
        },
        (_, Subject::Control(control)) => {
            let text = control.answer_variant(variant);
            if mode == Mode::Agent {
                // A control reads every section, in order, then answers.
                let mut step = 0;
                for section in &variant.sections {
                    row.trace.push(tool_step(
                        step,
                        "read_chart_section",
                        &json!({"name": section.name}),
                        Some(section),
                        None,
                    ));
                    row.sections_read.push(section.name.clone());
                    step += 1;
                }
                row.trace.push(final_step(step, &text));
            }
            let sample = settings.sample.to_string();
            let mut parts = vec![control.name.as_str(), variant.variant_id.as_str()];
            if settings.sample > 0 {
                parts.push(&sample);
            }
            row.request_hash = cfeval_schema::ids::content_id("control", &parts);
            row.recommendation = Some(extract_recommendation(&text));
            row.text = Some(text);
            row.finish_reason = Some("stop".into());
        }
        (Mode::SingleShot, Subject::Model { client, .. }) => {
            single_shot(client, variant, prompts, settings, &mut row).await
        }
        (
            Mode::Agent,
            Subject::Model {
                client, native_tools, ..
            },
        ) => agent(client, *native_tools, variant, prompts, settings, &mut row).await,
    }
    row
}

fn params(settings: &CallSettings) -> ChatParams {
    ChatParams {
        temperature: Some(settings.temperature),
        seed: settings.seed,
        max_tokens: Some(settings.max_tokens),
        ..ChatParams::default()
    }
}

pub(crate) fn account(row: &mut ResponseRow, completion: &cfeval_model::Completion) {
    row.attempts += completion.attempts;
    // Replies retried as unusable were billed too.
    row.input_tokens += completion.response.usage.input_tokens + completion.discarded_usage.input_tokens;
    row.output_tokens += completion.response.usage.output_tokens + completion.discarded_usage.output_tokens;
    row.cost_usd += completion.cost_usd.unwrap_or(0.0);
    row.latency_ms += completion.latency.as_millis() as u64;
    row.finish_reason = finish_reason(&completion.response);
}

fn finish_reason(response: &ChatResponse) -> Option<String> {
    response.finish_reason.as_deref().map(normalize_finish_reason)
}

/// Records a call that ended without a usable reply: its attempts, and its
/// status — the unusable reply's (whose text is kept for inspection, with no
/// recommendation) or `error`.
pub(crate) fn record_failure(row: &mut ResponseRow, failure: &CallFailure) {
    account_failure(row, failure);
    row.error = Some(failure.error.full_message());
    row.recommendation = None;
    match failure.error.unusable() {
        Some((status, response)) => {
            row.status = status.to_string();
            row.text = response.text.clone();
            row.finish_reason = finish_reason(response);
        }
        None => row.status = ResponseStatus::Error.as_str().into(),
    }
}

/// Adds a failed call's attempts, tokens, cost and time to the row.
pub(crate) fn account_failure(row: &mut ResponseRow, failure: &CallFailure) {
    row.attempts += failure.attempts;
    row.input_tokens += failure.discarded_usage.input_tokens;
    row.output_tokens += failure.discarded_usage.output_tokens;
    row.cost_usd += failure.discarded_cost_usd.unwrap_or(0.0);
    row.latency_ms += failure.latency.as_millis() as u64;
}

async fn single_shot(
    client: &ModelClient,
    variant: &VariantRow,
    prompts: &Prompts,
    settings: &CallSettings,
    row: &mut ResponseRow,
) {
    let request = single_shot_request(variant, prompts, settings);
    match client
        .chat_checked(&request, Some(&variant.variant_id), Some(&crate::reply::check))
        .await
    {
        Ok(completion) => {
            account(row, &completion);
            row.cached = completion.from_cache;
            row.request_hash = completion.cache_key.to_hex();
            let text = completion.response.text.clone().unwrap_or_default();
            row.recommendation = Some(extract_recommendation(&text));
            row.text = Some(text);
        }
        Err(failure) => {
            record_failure(row, &failure);
            if let Ok(key) = client.cache_key(&request) {
                row.request_hash = key.to_hex();
            }
        }
    }
}

/// The one request a single-shot subject gets for `variant` (what the
/// response cache is keyed by, so a dry run can tell cached from new).
pub fn single_shot_request(variant: &VariantRow, prompts: &Prompts, settings: &CallSettings) -> ChatRequest {
    let prompt = prompts
        .single_shot
        .replace("{chart}", &fenced_chart(&variant.sections));
    settings.request(vec![Message::user(prompt)])
}

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "list_chart_sections".into(),
            description: "List the names of the patient's chart sections.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        ToolSpec {
            name: "read_chart_section".into(),
            description: "Read one section of the patient's chart.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "the section's name"}},
                "required": ["name"]
            }),
        },
    ]
}

pub(crate) fn tool_step(
    step: u32,
    tool: &str,
    arguments: &serde_json::Value,
    section: Option<&Section>,
    error: Option<String>,
) -> TraceStep {
    TraceStep {
        step,
        kind: if error.is_some() { "error" } else { "tool_call" }.into(),
        tool: Some(tool.to_string()),
        arguments: Some(arguments.to_string()),
        result_hash: section
            .map(|section| cfeval_schema::ids::content_id("section", &[&section.name, &section.text])),
        section: section.map(|section| section.name.clone()),
        error,
        text: None,
        speaker: None,
        input_tokens: 0,
        output_tokens: 0,
        latency_ms: 0,
    }
}

pub(crate) fn final_step(step: u32, text: &str) -> TraceStep {
    TraceStep {
        step,
        kind: "final".into(),
        tool: None,
        arguments: None,
        result_hash: None,
        section: None,
        error: None,
        text: Some(text.to_string()),
        speaker: None,
        input_tokens: 0,
        output_tokens: 0,
        latency_ms: 0,
    }
}

/// Runs one tool against the variant's chart: the answer text, the section
/// read (if any) and an error (malformed or unknown call).
pub(crate) fn run_tool<'a>(
    variant: &'a VariantRow,
    name: &str,
    arguments: &serde_json::Value,
) -> (String, Option<&'a Section>, Option<String>) {
    match name {
        "list_chart_sections" => {
            let names: Vec<&str> = variant
                .sections
                .iter()
                .map(|section| section.name.as_str())
                .collect();
            (tool_result(&names.join("\n")), None, None)
        }
        "read_chart_section" => {
            let Some(wanted) = arguments.get("name").and_then(|value| value.as_str()) else {
                let error = "read_chart_section needs a string argument `name`".to_string();
                return (format!("error: {error}"), None, Some(error));
            };
            let wanted_norm = wanted
                .trim()
                .trim_matches('"')
                .to_lowercase()
                .replace([' ', '-'], "_");
            match variant
                .sections
                .iter()
                .find(|section| section.name.to_lowercase().replace([' ', '-'], "_") == wanted_norm)
            {
                Some(section) => (tool_result(&section.text), Some(section), None),
                None => {
                    let names: Vec<&str> = variant
                        .sections
                        .iter()
                        .map(|section| section.name.as_str())
                        .collect();
                    let error = format!("no section named {wanted:?}; sections: {}", names.join(", "));
                    (format!("error: {error}"), None, Some(error))
                }
            }
        }
        other => {
            let error = format!("unknown tool {other:?}; tools: list_chart_sections, read_chart_section");
            (format!("error: {error}"), None, Some(error))
        }
    }
}

/// Records what one tool call read and whether it failed.
pub(crate) fn note_tool_outcome(row: &mut ResponseRow, section: Option<&Section>, failed: bool) {
    if let Some(section) = section
        && !row.sections_read.contains(&section.name)
    {
        row.sections_read.push(section.name.clone());
    }
    row.tool_errors += u32::from(failed);
}

/// Parses a text-protocol action line: `ACTION: tool [argument]`.
pub(crate) fn parse_action(text: &str) -> Option<(String, serde_json::Value)> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| line.to_uppercase().starts_with("ACTION:"))?;
    let rest = line["ACTION:".len()..].trim();
    let (tool, argument) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
    let argument = argument.trim();
    let arguments = if argument.starts_with('{') {
        serde_json::from_str(argument).unwrap_or_else(|_| json!({"name": argument}))
    } else if argument.is_empty() {
        json!({})
    } else {
        json!({"name": argument})
    };
    Some((tool.trim_end_matches("()").to_string(), arguments))
}

async fn agent(
    client: &ModelClient,
    native_tools: bool,
    variant: &VariantRow,
    prompts: &Prompts,
    settings: &CallSettings,
    row: &mut ResponseRow,
) {
    let system = if native_tools {
        prompts.agent.clone()
    } else {
        format!("{}\n{}", prompts.agent, prompts.agent_text_protocol)
    };
    let mut messages = vec![
        Message::system(system),
        Message::user("Prepare your recommendation for this patient. Start by listing the chart's sections."),
    ];
    let mut keys = Vec::new();
    let mut all_cached = true;
    let mut step = 0u32;
    for _ in 0..settings.max_steps {
        let mut request = settings.request(messages.clone());
        if native_tools {
            request = request.with_tools(tools());
        }
        let completion = match client
            .chat_checked(&request, Some(&variant.variant_id), Some(&crate::reply::check))
            .await
        {
            Ok(completion) => completion,
            Err(failure) => {
                record_failure(row, &failure);
                break;
            }
        };
        account(row, &completion);
        all_cached &= completion.from_cache;
        keys.push(completion.cache_key.to_hex());
        let response = completion.response;
        if native_tools && !response.tool_calls.is_empty() {
            messages.push(Message::from_response(&response));
            for call in &response.tool_calls {
                let (answer, section, error) = match call.arguments_json() {
                    Ok(arguments) => {
                        let (answer, section, error) = run_tool(variant, &call.name, &arguments);
                        row.trace
                            .push(tool_step(step, &call.name, &arguments, section, error.clone()));
                        (answer, section, error)
                    }
                    Err(parse) => {
                        let error = format!("tool call arguments are not valid JSON: {parse}");
                        row.trace.push(TraceStep {
                            arguments: Some(call.arguments.clone()),
                            ..tool_step(step, &call.name, &json!(null), None, Some(error.clone()))
                        });
                        (format!("error: {error}"), None, Some(error))
                    }
                };
                step += 1;
                note_tool_outcome(row, section, error.is_some());
                messages.push(Message::tool_result(call.id.clone(), answer));
            }
            continue;
        }
        let text = response.text.unwrap_or_default();
        if !native_tools && let Some((tool, arguments)) = parse_action(&text) {
            let (answer, section, error) = run_tool(variant, &tool, &arguments);
            row.trace
                .push(tool_step(step, &tool, &arguments, section, error.clone()));
            step += 1;
            note_tool_outcome(row, section, error.is_some());
            messages.push(Message::assistant(text));
            messages.push(Message::user(format!("Tool result:\n{answer}")));
            continue;
        }
        row.trace.push(final_step(step, &text));
        row.recommendation = Some(extract_recommendation(&text));
        row.text = Some(text);
        break;
    }
    if row.text.is_none() && row.status == ResponseStatus::Ok.as_str() {
        row.status = ResponseStatus::Error.as_str().into();
        row.error = Some(format!(
            "the agent made {} steps without a final answer",
            settings.max_steps
        ));
    }
    row.cached = all_cached && !keys.is_empty();
    row.request_hash =
        cfeval_schema::ids::content_id("agent", &keys.iter().map(String::as_str).collect::<Vec<_>>());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_text_protocol_actions() {
        assert_eq!(
            parse_action("ACTION: list_chart_sections"),
            Some(("list_chart_sections".into(), json!({})))
        );
        assert_eq!(
            parse_action("I will read it.\nACTION: read_chart_section surgery"),
            Some(("read_chart_section".into(), json!({"name": "surgery"})))
        );
        assert_eq!(
            parse_action(r#"action: read_chart_section {"name": "biomarkers"}"#),
            Some(("read_chart_section".into(), json!({"name": "biomarkers"})))
        );
        assert_eq!(parse_action("Recommendation: FOLFOX"), None);
    }
}
