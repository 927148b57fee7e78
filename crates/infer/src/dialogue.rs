//! Mode `dialogue`: AgentClinic's four agents (seed 003) over a diagnosis
//! pack's case. The **doctor** is the subject: it sees only the objective
//! and the patient's opening statement, asks questions, requests results
//! with `REQUEST TEST: <name>` and ends with `DIAGNOSIS READY: <diagnosis>`.
//! The **patient** agent is a model that knows only the patient's sections
//! of the chart; the **measurement** agent is deterministic
//! ([`cfeval_diagnosis::dialogue::Measurement`]); the **moderator** is the
//! pack's diagnosis judge, in the judge stage.
//!
//! The intervention edits the chart behind both agents: a flipped result
//! comes back flipped, a removed one as not available. Each turn is a trace
//! step (speaker, text, the test requested and the lines returned, tokens,
//! latency); the row keeps the outcome ([`DialogueOutcome`]). A call that
//! fails after the client's retries ends the dialogue as an `error` row
//! (a rerun tries it again, served from the cache up to where it failed);
//! a doctor that never names a diagnosis ends at the interaction limit as
//! `no_diagnosis`.

use std::collections::BTreeMap;
use std::sync::Arc;

use cfeval_diagnosis::dialogue::{Measurement, Settings, Turn};
use cfeval_diagnosis::ontology::Ontology;
use cfeval_model::{ChatResponse, Message, ModelClient, ResponseFormat, Unusable};
use cfeval_schema::{DialogueOutcome, ResponseRow, ResponseStatus, TraceStep, VariantRow};

use crate::control::Control;
use crate::respond::{CallSettings, Subject};

/// What every dialogue of a run shares: the pack's settings and ontology,
/// the patient agent and the interaction limit.
pub struct Dialogue {
    pub settings: Settings,
    pub ontology: Ontology,
    /// The patient agent (a model).
    pub patient: Arc<Subject>,
    /// The patient's call settings (its temperature, seed and tokens).
    pub patient_settings: CallSettings,
    /// The interaction limit N: the doctor's turns at most.
    pub max_turns: u32,
    /// The bias the dialogues run under: its text joins its role's
    /// instructions.
    pub bias: Option<cfeval_diagnosis::dialogue::Bias>,
    /// The doctor's `reflect` tool.
    pub reflect: bool,
    /// The doctor's `notebook` tool: whether it keeps one across cases.
    pub notebook: bool,
    /// With the notebook: the notebook each case's dialogues start from, by
    /// case ([`Dialogue::keep_notebooks`]).
    pub notebooks: BTreeMap<String, String>,
    /// The measurement agent's model fallback (off: `None`).
    pub fallback: Option<Arc<Subject>>,
    /// The fallback's call settings.
    pub fallback_settings: CallSettings,
}

impl std::fmt::Debug for Dialogue {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Dialogue")
            .field("patient", &self.patient.name())
            .field("max_turns", &self.max_turns)
            .finish()
    }
}

/// A dialogue turn is usable unless it is empty: a long turn cut at the
/// token limit, or a turn that sounds like a refusal, is still a turn.
fn turn_check(response: &ChatResponse) -> Result<(), Unusable> {
    let text = response.text.as_deref().unwrap_or_default();
    if crate::reply::is_empty_text(text) {
        return Err(Unusable {
            status: "empty",
            detail: "the reply holds no text".into(),
        });
    }
    Ok(())
}

/// One model turn's reply and what it cost.
struct Said {
    text: String,
    input_tokens: u64,
    output_tokens: u64,
    latency_ms: u64,
}

impl Dialogue {
    /// The outcome of a dialogue with nothing said yet.
    fn outcome(&self) -> DialogueOutcome {
        DialogueOutcome {
            patient: self.patient.name().to_string(),
            max_turns: self.max_turns,
            turns: 0,
            outcome: "no_diagnosis".into(),
            diagnosis: None,
            tests_requested: Vec::new(),
            tests_returned: Vec::new(),
            findings_elicited: 0,
            findings_total: 0,
            tests_elicited: 0,
            tests_total: 0,
            coverage: 0.0,
            perception: None,
            perception_error: None,
            bias: self.bias.as_ref().map(|bias| bias.id.clone()),
            diagnosis_before_reflection: None,
            notebook: None,
            measurement_fallbacks: 0,
        }
    }

    fn measurement(&self) -> Measurement<'_> {
        Measurement {
            settings: &self.settings,
            ontology: &self.ontology,
        }
    }

    /// Runs one dialogue of `doctor` on `variant` into `row`.
    pub async fn converse(
        &self,
        doctor: &Subject,
        variant: &VariantRow,
        settings: &CallSettings,
        row: &mut ResponseRow,
    ) {
        let mut outcome = self.outcome();
        // The dialogue's prompts and settings are its prompt.
        row.prompt_hash = self.settings.hash().to_string();
        if let Some(why) = self.settings.unsuitable(&variant.sections) {
            row.status = ResponseStatus::Error.as_str().into();
            row.error = Some(format!("the case cannot be run as a dialogue: {why}"));
            row.dialogue = Some(outcome);
            return;
        }
        let mut patient_replies = Vec::new();
        match doctor {
            Subject::Control(control) => self.control_dialogue(control, variant, row, &mut outcome),
            Subject::Model { client, .. } => {
                let Subject::Model {
                    client: patient_client,
                    ..
                } = &*self.patient
                else {
                    row.status = ResponseStatus::Error.as_str().into();
                    row.error = Some("the patient agent must be a model, not a control".into());
                    row.dialogue = Some(outcome);
                    return;
                };
                let mut transcript = Transcript {
                    row,
                    keys: Vec::new(),
                    all_cached: true,
                };
                self.model_dialogue(
                    client,
                    patient_client,
                    variant,
                    settings,
                    &mut transcript,
                    &mut outcome,
                    &mut patient_replies,
                )
                .await;
                let Transcript {
                    row,
                    keys,
                    all_cached,
                } = transcript;
                row.cached = all_cached && !keys.is_empty();
                row.request_hash = cfeval_schema::ids::content_id(
                    "dialogue",
                    &keys.iter().map(String::as_str).collect::<Vec<_>>(),
                );
            }
        }
        let coverage = cfeval_diagnosis::dialogue::coverage(
            &self.settings,
            &self.ontology,
            &variant.sections,
            &variant.facts,
            &patient_replies,
            &outcome.tests_returned,
        );
        outcome.findings_elicited = coverage.findings_elicited;
        outcome.findings_total = coverage.findings_total;
        outcome.tests_elicited = coverage.tests_elicited;
        outcome.tests_total = coverage.tests_total;
        outcome.coverage = coverage.share();
        if row.status == ResponseStatus::Ok.as_str() {
            row.text = Some(judged_text(&self.settings, &outcome, row.text.as_deref()));
            row.recommendation = outcome.diagnosis.clone();
        }
        row.dialogue = Some(outcome);
    }

    /// A control doctor calls no model. The reference requests every result
    /// of the chart, one turn each; the other controls (blind to results,
    /// constant, erratic) request none. Each then gives its usual answer.
    fn control_dialogue(
        &self,
        control: &Control,
        variant: &VariantRow,
        row: &mut ResponseRow,
        outcome: &mut DialogueOutcome,
    ) {
        let measurement = self.measurement();
        let mut step = 0;
        let lines = cfeval_diagnosis::dialogue::result_lines(&self.settings, &variant.sections);
        let mut labels: Vec<&str> = lines.iter().map(|line| line.label.as_str()).collect();
        labels.dedup();
        if control.kind != crate::ControlKind::Reference {
            labels.clear();
        }
        for label in labels.into_iter().take(self.max_turns.saturating_sub(1) as usize) {
            let request = format!("{} {label}", self.settings.request_test);
            row.trace.push(turn_step(
                step,
                "doctor",
                "request_test",
                &request,
                None,
                Some(label),
            ));
            step += 1;
            let measured = measurement.answer(label, &variant.sections, &variant.diff);
            row.trace.push(result_step(step, &measured));
            step += 1;
            outcome.tests_requested.push(label.to_string());
            note_returned(outcome, &measured);
            outcome.turns += 1;
        }
        let answer = control.answer_variant(variant);
        row.trace
            .push(turn_step(step, "doctor", "diagnosis", &answer, None, None));
        outcome.turns += 1;
        outcome.outcome = "diagnosis".into();
        outcome.diagnosis = Some(crate::prompt::extract_recommendation(&answer));
        row.request_hash =
            cfeval_schema::ids::content_id("control-dialogue", &[control.name.as_str(), &variant.variant_id]);
        row.finish_reason = Some("stop".into());
        row.text = Some(answer);
    }

    #[allow(clippy::too_many_arguments)]
    async fn model_dialogue(
        &self,
        doctor: &ModelClient,
        patient: &ModelClient,
        variant: &VariantRow,
        settings: &CallSettings,
        transcript: &mut Transcript<'_>,
        outcome: &mut DialogueOutcome,
        patient_replies: &mut Vec<String>,
    ) {
        let measurement = self.measurement();
        let objective = self.settings.objective(&variant.sections);
        let brief = self.settings.patient_brief(&variant.sections);
        let biased = |role: &str, text: String| match &self.bias {
            Some(bias) if bias.role == role => format!("{text}\n\n{}", bias.text),
            _ => text,
        };
        let mut patient_messages = vec![Message::system(biased(
            "patient",
            self.settings.patient_system(&brief),
        ))];
        let mut step = 0u32;
        transcript.row.trace.push(turn_step(
            step,
            "doctor",
            "question",
            &self.settings.greeting,
            None,
            None,
        ));
        step += 1;
        let mut asking = Asking {
            patient,
            settings: &self.patient_settings,
            messages: &mut patient_messages,
            replies: patient_replies,
            tag: &variant.variant_id,
        };
        let Some(opening) = asking
            .ask(transcript, self.settings.greeting.clone(), &mut step)
            .await
        else {
            return;
        };
        let mut doctor_system = biased("doctor", self.settings.doctor_system(&objective, self.max_turns));
        if self.notebook {
            let notebook = self.notebooks.get(&variant.case_id).cloned().unwrap_or_default();
            if !notebook.is_empty() {
                doctor_system = format!("{doctor_system}\n\n{}", self.settings.notebook_context(&notebook));
            }
            outcome.notebook = Some(notebook);
        }
        let mut doctor_messages = vec![
            Message::system(doctor_system),
            Message::user(format!("Patient: {opening}")),
        ];
        let mut last_doctor = String::new();
        for turn in 1..=self.max_turns {
            if turn == self.max_turns
                && let Some(Message::User { content }) = doctor_messages.last_mut()
            {
                content.push_str("\n\n");
                content.push_str(&self.settings.final_notice);
            }
            let Some(said) = transcript
                .call(doctor, settings, &doctor_messages, &variant.variant_id, "doctor")
                .await
            else {
                return;
            };
            outcome.turns = turn;
            last_doctor = said.text.clone();
            doctor_messages.push(Message::assistant(said.text.clone()));
            match self.settings.read_turn(&said.text) {
                Turn::Diagnosis(diagnosis) => {
                    transcript
                        .row
                        .trace
                        .push(said_step(step, "doctor", "diagnosis", &said));
                    step += 1;
                    outcome.outcome = "diagnosis".into();
                    outcome.diagnosis = Some(diagnosis);
                    if self.reflect {
                        // One self-review step; its diagnosis, when it
                        // names one, is the answer.
                        doctor_messages.push(Message::user(self.settings.reflection.clone()));
                        let Some(review) = transcript
                            .traced(
                                doctor,
                                settings,
                                &doctor_messages,
                                &variant.variant_id,
                                ("doctor", "reflection"),
                                &mut step,
                            )
                            .await
                        else {
                            return;
                        };
                        if let Turn::Diagnosis(reviewed) = self.settings.read_turn(&review.text) {
                            outcome.diagnosis_before_reflection = outcome.diagnosis.replace(reviewed);
                            last_doctor = review.text.clone();
                        }
                    }
                    break;
                }
                Turn::RequestTest(test) => {
                    let mut request = said_step(step, "doctor", "request_test", &said);
                    request.arguments = Some(test.clone());
                    transcript.row.trace.push(request);
                    step += 1;
                    let mut measured = measurement.answer(&test, &variant.sections, &variant.diff);
                    let mut chosen = false;
                    if measured.labels.is_empty()
                        && !measured.removed
                        && let Some(Subject::Model { client: matcher, .. }) = self.fallback.as_deref()
                    {
                        // No test name matched: the fallback model chooses
                        // among the case's tests by label (never a value).
                        let choices = cfeval_diagnosis::dialogue::fallback_choices(
                            &self.settings,
                            &variant.sections,
                            &variant.diff,
                        );
                        if !choices.is_empty() {
                            let question = self.settings.fallback_question(&test, &choices);
                            let Some(reply) = transcript
                                .traced(
                                    matcher,
                                    &self.fallback_settings,
                                    &[Message::user(question)],
                                    &variant.variant_id,
                                    ("measurement", "fallback"),
                                    &mut step,
                                )
                                .await
                            else {
                                return;
                            };
                            if let Some(at) =
                                cfeval_diagnosis::dialogue::read_fallback_choice(&reply.text, choices.len())
                            {
                                measured = measurement.answer(&choices[at], &variant.sections, &variant.diff);
                                chosen = true;
                                outcome.measurement_fallbacks += 1;
                            }
                        }
                    }
                    let mut result = result_step(step, &measured);
                    if chosen {
                        result.tool = Some("measurement_fallback".into());
                    }
                    transcript.row.trace.push(result);
                    step += 1;
                    outcome.tests_requested.push(test);
                    note_returned(outcome, &measured);
                    if let Some(section) = &measured.section
                        && !transcript.row.sections_read.contains(section)
                    {
                        transcript.row.sections_read.push(section.clone());
                    }
                    doctor_messages.push(Message::user(format!("Measurement: {}", measured.text)));
                }
                Turn::Question(question) => {
                    transcript
                        .row
                        .trace
                        .push(said_step(step, "doctor", "question", &said));
                    step += 1;
                    if turn == self.max_turns {
                        break;
                    }
                    let Some(reply) = asking.ask(transcript, question, &mut step).await else {
                        return;
                    };
                    doctor_messages.push(Message::user(format!("Patient: {reply}")));
                }
            }
        }
        transcript.row.text = Some(last_doctor);
        // The consultation is over: the patient rates the doctor.
        // The patient is told whether the doctor reached a diagnosis, never
        // which: it never hears a diagnosis.
        let conclusion = match &outcome.diagnosis {
            Some(_) => "the doctor has reached a diagnosis and will explain the plan",
            None => "the doctor could not reach a diagnosis in this consultation",
        };
        let request = self.settings.perception_request(conclusion);
        if let Some(reply) = asking.rate(transcript, request, &mut step).await {
            match cfeval_diagnosis::dialogue::read_ratings(&reply) {
                Ok(ratings) => {
                    outcome.perception = Some(cfeval_schema::Perception {
                        confidence: ratings.confidence,
                        compliance: ratings.compliance,
                        consult_again: ratings.consult_again,
                    });
                }
                Err(why) => outcome.perception_error = Some(why),
            }
        }
    }
}

/// What building the notebooks cost: the HTTP requests made.
#[derive(Debug, Default)]
pub struct NotebookPass {
    pub requests: u64,
    pub cases: u64,
}

impl Dialogue {
    /// The `notebook` tool: runs the baseline dialogues of `baselines` (the
    /// run's cases, in order) one after another, each from the notebook the
    /// earlier ones left, and after each asks the doctor to rewrite the
    /// notebook; fills [`Dialogue::notebooks`]. Every dialogue of a case
    /// (baseline and variants alike) then starts from the same notebook, so a
    /// pair differs only by its intervention. The main pass asks the same
    /// baseline requests again and is served from the cache. A case that
    /// cannot be run as a dialogue leaves the notebook as it is; a call that
    /// fails after the client's retries stops the unit (`Err`, naming the
    /// case): the later notebooks depend on it.
    pub async fn keep_notebooks(
        &mut self,
        doctor: &Subject,
        baselines: &[Arc<VariantRow>],
        run: &str,
        prompts: &crate::Prompts,
        settings: &CallSettings,
    ) -> Result<NotebookPass, String> {
        let mut pass = NotebookPass::default();
        let Subject::Model { client, .. } = doctor else {
            return Ok(pass);
        };
        let mut notebook = String::new();
        for variant in baselines {
            self.notebooks.insert(variant.case_id.clone(), notebook.clone());
            let mut row = crate::respond::respond(
                run,
                doctor,
                crate::Mode::Dialogue,
                variant,
                prompts,
                settings,
                Some(&*self),
                None,
            )
            .await;
            pass.requests += u64::from(row.attempts);
            pass.cases += 1;
            if row.status != ResponseStatus::Ok.as_str() {
                if self.settings.unsuitable(&variant.sections).is_some() {
                    continue;
                }
                return Err(format!(
                    "case {}: its baseline dialogue failed, and the notebook of every later case depends on it: {}",
                    variant.case_id,
                    row.error.as_deref().unwrap_or(row.status.as_str())
                ));
            }
            let consultation = consultation(&row.trace);
            let request = self.settings.notebook_request(&notebook, &consultation);
            let attempts = row.attempts;
            let mut transcript = Transcript {
                row: &mut row,
                keys: Vec::new(),
                all_cached: true,
            };
            let said = transcript
                .call(
                    client,
                    settings,
                    &[Message::user(request)],
                    &variant.variant_id,
                    "doctor",
                )
                .await;
            pass.requests += u64::from(row.attempts - attempts);
            match said {
                Some(said) => notebook = said.text,
                None => {
                    return Err(format!(
                        "case {}: the doctor's notebook could not be rewritten: {}",
                        variant.case_id,
                        row.error.as_deref().unwrap_or("the call failed")
                    ));
                }
            }
        }
        Ok(pass)
    }
}

/// A consultation as the notebook request shows it: its turns, one per
/// line, the patient's closing ratings left out.
fn consultation(trace: &[TraceStep]) -> String {
    trace
        .iter()
        .filter(|step| step.kind != "perception" && step.kind != "fallback")
        .filter_map(|step| {
            let text = step.text.as_deref()?;
            let speaker = match step.speaker.as_deref()? {
                "doctor" => "Doctor",
                "patient" => "Patient",
                "measurement" => "Measurement",
                other => other,
            };
            Some(format!("{speaker}: {}", text.trim()))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The patient's side of a dialogue: what it was told and what it said.
struct Asking<'a> {
    patient: &'a ModelClient,
    settings: &'a CallSettings,
    messages: &'a mut Vec<Message>,
    replies: &'a mut Vec<String>,
    tag: &'a str,
}

impl Asking<'_> {
    /// Tells the patient the doctor's words; its reply, traced and kept
    /// (`None` when the call failed: the row is then an error row).
    async fn ask(
        &mut self,
        transcript: &mut Transcript<'_>,
        words: String,
        step: &mut u32,
    ) -> Option<String> {
        self.messages.push(Message::user(words));
        let reply = transcript
            .call(self.patient, self.settings, self.messages, self.tag, "patient")
            .await?;
        transcript
            .row
            .trace
            .push(said_step(*step, "patient", "answer", &reply));
        *step += 1;
        self.messages.push(Message::assistant(reply.text.clone()));
        self.replies.push(reply.text.clone());
        Some(reply.text)
    }
}

impl Asking<'_> {
    /// Asks the patient for its ratings of the doctor (strict JSON; the
    /// reply is traced, not counted as what the patient said of itself).
    async fn rate(
        &mut self,
        transcript: &mut Transcript<'_>,
        request: String,
        step: &mut u32,
    ) -> Option<String> {
        let mut messages = self.messages.clone();
        messages.push(Message::user(request));
        let mut call = self.settings.request(messages);
        call.params.response_format = Some(ResponseFormat::JsonSchema {
            name: "patient_perception".into(),
            schema: perception_schema(),
            strict: true,
        });
        let reply = transcript.send(self.patient, &call, self.tag, "patient").await?;
        transcript
            .row
            .trace
            .push(said_step(*step, "patient", "perception", &reply));
        *step += 1;
        Some(reply.text)
    }
}

/// The ratings' JSON schema: three whole numbers from 1 to 10.
fn perception_schema() -> serde_json::Value {
    let rating = serde_json::json!({"type": "integer", "minimum": 1, "maximum": 10});
    serde_json::json!({
        "type": "object",
        "properties": {"confidence": rating, "compliance": rating, "consult_again": rating},
        "required": ["confidence", "compliance", "consult_again"],
        "additionalProperties": false
    })
}

/// The row being written and the cache keys of its calls.
struct Transcript<'a> {
    row: &'a mut ResponseRow,
    keys: Vec<String>,
    all_cached: bool,
}

impl Transcript<'_> {
    /// One model call; `None` (the row is then an error row, its trace kept)
    /// when it fails after the client's retries.
    async fn call(
        &mut self,
        client: &ModelClient,
        settings: &CallSettings,
        messages: &[Message],
        tag: &str,
        speaker: &str,
    ) -> Option<Said> {
        let request = settings.request(messages.to_vec());
        self.send(client, &request, tag, speaker).await
    }

    /// One model call traced as step `step` of `(speaker, kind)` (then
    /// `step` moves on); `None` as [`Self::call`].
    async fn traced(
        &mut self,
        client: &ModelClient,
        settings: &CallSettings,
        messages: &[Message],
        tag: &str,
        (speaker, kind): (&str, &str),
        step: &mut u32,
    ) -> Option<Said> {
        let said = self.call(client, settings, messages, tag, speaker).await?;
        self.row.trace.push(said_step(*step, speaker, kind, &said));
        *step += 1;
        Some(said)
    }

    /// Sends one request (see [`Self::call`]).
    async fn send(
        &mut self,
        client: &ModelClient,
        request: &cfeval_model::ChatRequest,
        tag: &str,
        speaker: &str,
    ) -> Option<Said> {
        match client.chat_checked(request, Some(tag), Some(&turn_check)).await {
            Ok(completion) => {
                crate::respond::account(self.row, &completion);
                self.all_cached &= completion.from_cache;
                self.keys.push(completion.cache_key.to_hex());
                let usage = &completion.response.usage;
                Some(Said {
                    text: completion
                        .response
                        .text
                        .clone()
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                    latency_ms: completion.latency.as_millis() as u64,
                })
            }
            Err(failure) => {
                crate::respond::record_failure(self.row, &failure);
                self.row.status = ResponseStatus::Error.as_str().into();
                let error = self.row.error.take().unwrap_or_default();
                self.row.error = Some(format!("the {speaker}'s call failed: {error}"));
                None
            }
        }
    }
}

/// Adds the lines a measurement returned to the outcome, once each.
fn note_returned(outcome: &mut DialogueOutcome, measured: &cfeval_diagnosis::dialogue::Measured) {
    for label in &measured.labels {
        if !outcome.tests_returned.contains(label) {
            outcome.tests_returned.push(label.clone());
        }
    }
}

/// The text the judges read of a dialogue: the doctor's last turn, and the
/// tests it requested (the pair judge weighs an F2 request by them).
fn judged_text(settings: &Settings, outcome: &DialogueOutcome, last: Option<&str>) -> String {
    let mut text = match (&outcome.diagnosis, last) {
        (Some(_), Some(last)) => last.trim().to_string(),
        (Some(diagnosis), None) => format!("{} {diagnosis}", settings.diagnosis_ready),
        (None, _) => format!(
            "No diagnosis was given within the limit of {} turns.",
            outcome.max_turns
        ),
    };
    if !outcome.tests_requested.is_empty() {
        text.push_str("\nTests requested during the dialogue: ");
        text.push_str(&outcome.tests_requested.join("; "));
    }
    text
}

fn turn_step(
    step: u32,
    speaker: &str,
    kind: &str,
    text: &str,
    tokens: Option<&Said>,
    test: Option<&str>,
) -> TraceStep {
    TraceStep {
        step,
        kind: kind.into(),
        tool: (kind == "request_test").then(|| "request_test".to_string()),
        arguments: test.map(str::to_string),
        result_hash: None,
        section: None,
        error: None,
        text: Some(text.to_string()),
        speaker: Some(speaker.into()),
        input_tokens: tokens.map_or(0, |said| said.input_tokens),
        output_tokens: tokens.map_or(0, |said| said.output_tokens),
        latency_ms: tokens.map_or(0, |said| said.latency_ms),
    }
}

fn said_step(step: u32, speaker: &str, kind: &str, said: &Said) -> TraceStep {
    turn_step(step, speaker, kind, &said.text, Some(said), None)
}

fn result_step(step: u32, measured: &cfeval_diagnosis::dialogue::Measured) -> TraceStep {
    TraceStep {
        result_hash: Some(cfeval_schema::ids::content_id("measurement", &[&measured.text])),
        section: measured.section.clone(),
        arguments: (!measured.labels.is_empty()).then(|| measured.labels.join("; ")),
        ..turn_step(step, "measurement", "result", &measured.text, None, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(speaker: &str, kind: &str, text: &str) -> TraceStep {
        turn_step(0, speaker, kind, &format!(" {text} "), None, None)
    }

    #[test]
    fn a_consultation_reads_turn_by_turn_without_the_ratings() {
        let trace = [
            step("doctor", "question", "What brings you in?"),
            step("patient", "answer", "A cough."),
            step("doctor", "request_test", "REQUEST TEST: chest X-ray"),
            step("measurement", "result", "RESULTS: normal readings"),
            step("patient", "perception", "{\"confidence\": 7}"),
        ];
        assert_eq!(
            consultation(&trace),
            "Doctor: What brings you in?\nPatient: A cough.\nDoctor: REQUEST TEST: chest X-ray\nMeasurement: RESULTS: normal readings"
        );
    }
}
