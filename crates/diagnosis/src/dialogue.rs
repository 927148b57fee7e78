//! The deterministic half of the dialogue mode (AgentClinic's four agents,
//! seed 003): which part of a chart each agent knows, what the measurement
//! agent answers, how the doctor's turns are read, and how much of the
//! case the doctor elicited. The model half — the doctor (the subject) and
//! the patient agent — runs in the infer stage; the moderator is the pack's
//! diagnosis judge.
//!
//! Everything here is data of the pack, `dialogue.yaml` (its fields are
//! commented at its top) and three prompts, `prompts/dialogue_doctor.md`,
//! `prompts/dialogue_patient.md` and `prompts/dialogue_perception.md` (the
//! patient's ratings of the doctor when the consultation is over):
//!
//! - the **patient** agent knows the sections listed under `patient` and
//!   nothing else — never the diagnosis, never a result;
//! - the **measurement** agent serves the result lines (`Label: value`) of
//!   the sections under `measurement`: a request names a line when the
//!   pack's test synonyms (`tests.yaml`) or most of the line's words say so,
//!   either way round, or when it names the line's heading (`Vital Signs`,
//!   `Blood Tests`) or the section; it answers with those lines as the
//!   variant's chart holds them, with `not_available` when the variant
//!   removed the test the request names, and with `normal_readings` when
//!   the case has no such test (AgentClinic's rule);
//! - the **doctor**'s turn is a diagnosis when it holds the
//!   `diagnosis_ready` command, a test request when it holds
//!   `request_test`, and a question to the patient otherwise.

use std::path::Path;

use cfeval_schema::{DiffEntry, Fact, Section};
use serde::Deserialize;

use crate::ontology::Ontology;
use crate::{Error, Result};

/// The pack's dialogue settings and prompts.
#[derive(Debug, Clone)]
pub struct Settings {
    pub objective_sections: Vec<String>,
    pub patient_sections: Vec<String>,
    pub measurement_sections: Vec<String>,
    /// The interaction limit N when the pipeline names none.
    pub max_turns: u32,
    pub greeting: String,
    pub request_test: String,
    pub diagnosis_ready: String,
    pub normal_readings: String,
    pub not_available: String,
    pub final_notice: String,
    /// The self-review request of the `reflect` tool.
    pub reflection: String,
    /// The `notebook` tool: how the notebook joins the doctor's
    /// instructions (`{notebook}`) and the request to rewrite it after a
    /// consultation (`{notebook}`, `{consultation}`).
    pub notebook_context: String,
    pub notebook_request: String,
    /// The measurement agent's model fallback (off unless a run names a
    /// model): the question for a request no test name matched
    /// (`{request}`, `{tests}`: the case's tests, numbered).
    pub measurement_fallback: String,
    pub finding_kinds: Vec<String>,
    pub result_kinds: Vec<String>,
    /// The doctor's system prompt (`{objective}`, `{max_turns}`,
    /// `{request_test}`, `{diagnosis_ready}`).
    pub doctor_prompt: String,
    /// The patient's system prompt (`{patient}`).
    pub patient_prompt: String,
    /// What the patient is asked when the consultation is over
    /// (`{conclusion}`): its ratings of the doctor.
    pub perception_prompt: String,
    hash: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    version: u32,
    objective: Vec<String>,
    patient: Vec<String>,
    measurement: Vec<String>,
    max_turns: u32,
    greeting: String,
    request_test: String,
    diagnosis_ready: String,
    normal_readings: String,
    not_available: String,
    final_notice: String,
    reflection: String,
    notebook_context: String,
    notebook_request: String,
    measurement_fallback: String,
    finding_kinds: Vec<String>,
    result_kinds: Vec<String>,
}

/// The file that holds a pack's dialogue settings.
pub const FILE: &str = "dialogue.yaml";
const DOCTOR_PROMPT: &str = "prompts/dialogue_doctor.md";
const PATIENT_PROMPT: &str = "prompts/dialogue_patient.md";
const PERCEPTION_PROMPT: &str = "prompts/dialogue_perception.md";

impl Settings {
    /// Loads `dialogue.yaml` and the two prompts of the pack in `pack_dir`.
    pub fn load(pack_dir: &Path) -> Result<Self> {
        let read = |relative: &str| {
            let path = pack_dir.join(relative);
            std::fs::read_to_string(&path).map_err(|source| Error::Read { path, source })
        };
        let text = read(FILE)?;
        let doctor = read(DOCTOR_PROMPT)?;
        let patient = read(PATIENT_PROMPT)?;
        let perception = read(PERCEPTION_PROMPT)?;
        Self::parse(
            &text,
            &pack_dir.join(FILE).display().to_string(),
            Prompts {
                doctor,
                patient,
                perception,
            },
        )
    }

    /// Parses the settings (`origin` names the file in errors) with the
    /// prompts' texts.
    pub fn parse(text: &str, origin: &str, prompts: Prompts) -> Result<Self> {
        let Prompts {
            doctor: doctor_prompt,
            patient: patient_prompt,
            perception: perception_prompt,
        } = prompts;
        let invalid = |message: String| Error::Invalid(format!("{origin}: {message}"));
        let raw: RawSettings = serde_norway::from_str(text).map_err(|error| invalid(error.to_string()))?;
        if raw.version != 1 {
            return Err(invalid(format!("version {} is not 1", raw.version)));
        }
        if raw.max_turns == 0 {
            return Err(invalid("max_turns must be 1 or more".into()));
        }
        for (name, sections) in [
            ("patient", &raw.patient),
            ("measurement", &raw.measurement),
            ("objective", &raw.objective),
        ] {
            if sections.is_empty() {
                return Err(invalid(format!("`{name}` lists no section")));
            }
        }
        if let Some(shared) = raw.patient.iter().find(|name| raw.measurement.contains(name)) {
            return Err(invalid(format!(
                "section `{shared}` is both the patient's and the measurement agent's: the patient must not know a result"
            )));
        }
        for (name, value) in [
            ("request_test", &raw.request_test),
            ("diagnosis_ready", &raw.diagnosis_ready),
        ] {
            if value.trim().is_empty() {
                return Err(invalid(format!("`{name}` is empty")));
            }
        }
        for (name, value, needs) in [
            ("notebook_context", &raw.notebook_context, &["{notebook}"][..]),
            (
                "notebook_request",
                &raw.notebook_request,
                &["{notebook}", "{consultation}"][..],
            ),
        ] {
            if let Some(missing) = needs.iter().find(|placeholder| !value.contains(*placeholder)) {
                return Err(invalid(format!("`{name}` has no {missing}")));
            }
        }
        for (file, prompt, needs) in [
            (DOCTOR_PROMPT, &doctor_prompt, &["{objective}", "{max_turns}"][..]),
            (PATIENT_PROMPT, &patient_prompt, &["{patient}"][..]),
            (PERCEPTION_PROMPT, &perception_prompt, &["{conclusion}"][..]),
        ] {
            if let Some(missing) = needs.iter().find(|placeholder| !prompt.contains(*placeholder)) {
                return Err(Error::Invalid(format!("{file}: the prompt has no {missing}")));
            }
        }
        let hash = blake3::Hasher::new()
            .update(text.as_bytes())
            .update(b"\0")
            .update(doctor_prompt.as_bytes())
            .update(b"\0")
            .update(patient_prompt.as_bytes())
            .update(b"\0")
            .update(perception_prompt.as_bytes())
            .finalize()
            .to_hex()
            .to_string();
        Ok(Self {
            objective_sections: raw.objective,
            patient_sections: raw.patient,
            measurement_sections: raw.measurement,
            max_turns: raw.max_turns,
            greeting: raw.greeting,
            request_test: raw.request_test,
            diagnosis_ready: raw.diagnosis_ready,
            normal_readings: raw.normal_readings,
            not_available: raw.not_available,
            final_notice: raw.final_notice,
            reflection: raw.reflection,
            notebook_context: raw.notebook_context,
            notebook_request: raw.notebook_request,
            measurement_fallback: raw.measurement_fallback,
            finding_kinds: raw.finding_kinds,
            result_kinds: raw.result_kinds,
            doctor_prompt,
            patient_prompt,
            perception_prompt,
            hash,
        })
    }

    /// The doctor's notebook as its instructions carry it.
    pub fn notebook_context(&self, notebook: &str) -> String {
        self.notebook_context.replace("{notebook}", notebook)
    }

    /// The request to rewrite the notebook after a consultation.
    pub fn notebook_request(&self, notebook: &str, consultation: &str) -> String {
        self.notebook_request
            .replace("{notebook}", notebook)
            .replace("{consultation}", consultation)
    }

    /// The patient's closing question, with the doctor's conclusion.
    pub fn perception_request(&self, conclusion: &str) -> String {
        self.perception_prompt.replace("{conclusion}", conclusion)
    }

    /// BLAKE3 of the settings file and the prompts.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The text of the listed sections, in chart order, one after another.
    fn text_of(&self, names: &[String], sections: &[Section]) -> String {
        sections
            .iter()
            .filter(|section| names.contains(&section.name))
            .map(|section| section.text.trim())
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// What the doctor is told at the start: the objective sections.
    pub fn objective(&self, sections: &[Section]) -> String {
        self.text_of(&self.objective_sections, sections)
    }

    /// What the patient agent knows: its sections only.
    pub fn patient_brief(&self, sections: &[Section]) -> String {
        self.text_of(&self.patient_sections, sections)
    }

    /// The doctor's system prompt for a case.
    pub fn doctor_system(&self, objective: &str, max_turns: u32) -> String {
        self.doctor_prompt
            .replace("{objective}", objective)
            .replace("{max_turns}", &max_turns.to_string())
            .replace("{request_test}", &self.request_test)
            .replace("{diagnosis_ready}", &self.diagnosis_ready)
    }

    /// The patient's system prompt for a case.
    pub fn patient_system(&self, brief: &str) -> String {
        self.patient_prompt.replace("{patient}", brief)
    }

    /// Why a chart cannot be run as a dialogue (`None`: it can): no
    /// patient information, or no result for the measurement agent.
    pub fn unsuitable(&self, sections: &[Section]) -> Option<String> {
        if self.patient_brief(sections).trim().is_empty() {
            return Some(format!(
                "the chart has no patient information (sections {})",
                self.patient_sections.join(", ")
            ));
        }
        if result_lines(self, sections).is_empty() {
            return Some(format!(
                "the chart has no result for the measurement agent (sections {})",
                self.measurement_sections.join(", ")
            ));
        }
        None
    }

    /// Reads one doctor turn.
    pub fn read_turn(&self, text: &str) -> Turn {
        if let Some(rest) = after_command(text, &self.diagnosis_ready) {
            return Turn::Diagnosis(rest);
        }
        if let Some(rest) = after_command(text, &self.request_test) {
            return Turn::RequestTest(rest);
        }
        Turn::Question(text.trim().to_string())
    }
}

/// One of the pack's dialogue biases (`biases.yaml`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bias {
    pub id: String,
    /// `cognitive` or `implicit`.
    pub kind: String,
    /// `doctor` or `patient`: whose instructions the text joins.
    pub role: String,
    pub text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBiases {
    version: u32,
    biases: Vec<Bias>,
}

/// The file that holds a pack's dialogue biases.
pub const BIASES_FILE: &str = "biases.yaml";

/// Loads the pack's biases (`biases.yaml`), checked: unique ids, a known
/// kind and role, a text.
pub fn load_biases(pack_dir: &Path) -> Result<Vec<Bias>> {
    let path = pack_dir.join(BIASES_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
        path: path.clone(),
        source,
    })?;
    parse_biases(&text, &path.display().to_string())
}

/// The pack's bias `id`; `Err` names the pack's biases when it has none
/// of that id.
pub fn find_bias(pack_dir: &Path, id: &str) -> Result<Bias> {
    let biases = load_biases(pack_dir)?;
    let known = biases
        .iter()
        .map(|bias| bias.id.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    biases.iter().find(|bias| bias.id == id).cloned().ok_or_else(|| {
        Error::Invalid(format!(
            "bias `{id}` is not in the pack's {BIASES_FILE} ({known})"
        ))
    })
}

/// Parses and checks a biases file (`origin` names it in errors).
pub fn parse_biases(text: &str, origin: &str) -> Result<Vec<Bias>> {
    let invalid = |message: String| Error::Invalid(format!("{origin}: {message}"));
    let raw: RawBiases = serde_norway::from_str(text).map_err(|error| invalid(error.to_string()))?;
    if raw.version != 1 {
        return Err(invalid(format!("version {} is not 1", raw.version)));
    }
    let mut seen = std::collections::HashSet::new();
    for bias in &raw.biases {
        if !seen.insert(bias.id.as_str()) {
            return Err(invalid(format!("bias `{}` is listed twice", bias.id)));
        }
        if bias.id.is_empty()
            || !bias
                .id
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        {
            return Err(invalid(format!("bias id `{}` must be snake_case", bias.id)));
        }
        if !matches!(bias.kind.as_str(), "cognitive" | "implicit") {
            return Err(invalid(format!(
                "bias `{}`: kind `{}` is not cognitive or implicit",
                bias.id, bias.kind
            )));
        }
        if !matches!(bias.role.as_str(), "doctor" | "patient") {
            return Err(invalid(format!(
                "bias `{}`: role `{}` is not doctor or patient",
                bias.id, bias.role
            )));
        }
        if bias.text.trim().is_empty() {
            return Err(invalid(format!("bias `{}` has no text", bias.id)));
        }
    }
    Ok(raw.biases)
}

/// The texts of the dialogue's three prompts.
#[derive(Debug, Clone)]
pub struct Prompts {
    pub doctor: String,
    pub patient: String,
    pub perception: String,
}

/// The patient's ratings of the doctor (1–10 each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ratings {
    pub confidence: u32,
    pub compliance: u32,
    pub consult_again: u32,
}

/// Reads the patient's ratings from its reply: a JSON object (alone, or
/// fenced, or inside other text) with `confidence`, `compliance` and
/// `consult_again`, each a whole number from 1 to 10. `Err` says what is
/// wrong; nothing is guessed.
pub fn read_ratings(reply: &str) -> std::result::Result<Ratings, String> {
    let start = reply.find('{').ok_or("the reply holds no JSON object")?;
    let end = reply
        .rfind('}')
        .filter(|&end| end > start)
        .ok_or("the reply's JSON object is not closed")?;
    let value: serde_json::Value = serde_json::from_str(&reply[start..=end])
        .map_err(|error| format!("the reply's JSON is invalid: {error}"))?;
    let rating = |key: &str| -> std::result::Result<u32, String> {
        let number = value
            .get(key)
            .ok_or_else(|| format!("no `{key}`"))?
            .as_f64()
            .ok_or_else(|| format!("`{key}` is not a number"))?;
        if number.fract() != 0.0 || !(1.0..=10.0).contains(&number) {
            return Err(format!("`{key}` is {number}, not a whole number from 1 to 10"));
        }
        Ok(number as u32)
    };
    Ok(Ratings {
        confidence: rating("confidence")?,
        compliance: rating("compliance")?,
        consult_again: rating("consult_again")?,
    })
}

/// What a doctor's turn does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// `DIAGNOSIS READY: X`: the diagnosis as written.
    Diagnosis(String),
    /// `REQUEST TEST: X`: the test as written.
    RequestTest(String),
    /// Anything else: a question (or remark) for the patient.
    Question(String),
}

/// The text after a command (case and markup aside) to the end of its
/// line, trimmed of brackets and emphasis; `None` when the text does not
/// hold the command.
fn after_command(text: &str, command: &str) -> Option<String> {
    let command = command.trim().trim_end_matches(':').to_lowercase();
    let lower = text.to_lowercase();
    let at = lower.find(&command)?;
    let rest = &text[at + command.len()..];
    let line = rest.lines().next().unwrap_or_default();
    let value = line
        .trim_start_matches([':', '*', ' ', '\t'])
        .trim()
        .trim_matches(['[', ']', '*', '"', '.', ' '])
        .trim();
    Some(value.to_string())
}

/// One result line of a measurement section: its label and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultLine {
    pub section: String,
    /// The label as the chart writes it (`Blood Tests - Acetylcholine
    /// Receptor Antibodies`).
    pub label: String,
    /// The whole line, as the measurement agent returns it.
    pub line: String,
}

/// The result lines of a chart's measurement sections. A section's first
/// line loses the section's own label (`Labs: Blood Tests - X: value` is
/// the line `Blood Tests - X: value`); a line with no `Label:` is its own
/// label.
pub fn result_lines(settings: &Settings, sections: &[Section]) -> Vec<ResultLine> {
    let mut out = Vec::new();
    for section in sections
        .iter()
        .filter(|section| settings.measurement_sections.contains(&section.name))
    {
        for (index, raw) in section.text.lines().enumerate() {
            let mut line = raw.trim();
            if index == 0
                && let Some((_, rest)) = line.split_once(": ")
                && rest.contains(": ")
            {
                line = rest.trim();
            }
            if line.is_empty() {
                continue;
            }
            let label = line.split_once(": ").map_or(line, |(label, _)| label).trim();
            out.push(ResultLine {
                section: section.name.clone(),
                label: label.to_string(),
                line: line.to_string(),
            });
        }
    }
    out
}

/// The measurement agent's answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// What the doctor reads.
    pub text: String,
    /// The labels of the lines returned (none for normal readings or not
    /// available).
    pub labels: Vec<String>,
    /// The section of the first line returned.
    pub section: Option<String>,
    /// Whether the request named a test the variant removed.
    pub removed: bool,
}

/// The measurement agent: deterministic lookup of a request in a chart.
pub struct Measurement<'a> {
    pub settings: &'a Settings,
    pub ontology: &'a Ontology,
}

impl Measurement<'_> {
    /// Whether a request names a label: the label's own test (its last
    /// part that is not a generic word such as `Findings`) by its synonyms
    /// or most of its words, either way round (`CT` names `Chest CT`); or
    /// its heading, and only the heading (`vital signs` names `Vital Signs -
    /// Heart Rate`; `Neurological Examination - Reflexes` does not name
    /// `Neurological Examination - Sensation`).
    fn names(&self, request: &str, label: &str) -> bool {
        let request = request.trim();
        if request.is_empty() {
            return false;
        }
        let parts: Vec<&str> = label.split(" - ").map(str::trim).collect();
        let specific = parts
            .iter()
            .rev()
            .find(|part| !GENERIC_PARTS.contains(&part.to_lowercase().as_str()))
            .copied()
            .unwrap_or(label);
        self.ontology.test_matches(specific, request)
            || self.ontology.test_matches(request, specific)
            || (parts.len() > 1
                && specific != parts[0]
                && self.ontology.test_matches(request, parts[0])
                && self.ontology.test_matches(parts[0], request))
    }

    /// Answers a request against a variant's chart (its sections and its
    /// diff, which says what the intervention removed).
    pub fn answer(&self, request: &str, sections: &[Section], diff: &[DiffEntry]) -> Measured {
        let lines = result_lines(self.settings, sections);
        let section_named = self
            .settings
            .measurement_sections
            .iter()
            .find(|name| {
                let readable = name.replace('_', " ");
                self.ontology.test_matches(&readable, request)
            })
            .cloned();
        let matched: Vec<&ResultLine> = lines
            .iter()
            .filter(|line| {
                section_named.as_deref() == Some(line.section.as_str()) || self.names(request, &line.label)
            })
            .collect();
        if !matched.is_empty() {
            let text = format!(
                "RESULTS:\n{}",
                matched
                    .iter()
                    .map(|line| line.line.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            return Measured {
                text,
                labels: matched.iter().map(|line| line.label.clone()).collect(),
                section: matched.first().map(|line| line.section.clone()),
                removed: false,
            };
        }
        let removed = diff
            .iter()
            .filter(|entry| entry.op == "remove_fact")
            .filter_map(|entry| entry.fact_name.as_deref())
            .any(|name| self.names(request, name));
        Measured {
            text: if removed {
                self.settings.not_available.clone()
            } else {
                self.settings.normal_readings.clone()
            },
            labels: Vec::new(),
            section: None,
            removed,
        }
    }
}

/// What the measurement agent's model fallback may choose from: the
/// case's tests by label (each once, in chart order) and the tests the
/// intervention removed (by name), never a value.
pub fn fallback_choices(settings: &Settings, sections: &[Section], diff: &[DiffEntry]) -> Vec<String> {
    let mut choices: Vec<String> = Vec::new();
    let removed = diff
        .iter()
        .filter(|entry| entry.op == "remove_fact")
        .filter_map(|entry| entry.fact_name.clone());
    for label in result_lines(settings, sections)
        .into_iter()
        .map(|line| line.label)
        .chain(removed)
    {
        if !choices.contains(&label) {
            choices.push(label);
        }
    }
    choices
}

impl Settings {
    /// The fallback's question: the request and the choices, numbered from 1
    /// (0 is "none of them").
    pub fn fallback_question(&self, request: &str, choices: &[String]) -> String {
        let tests = choices
            .iter()
            .enumerate()
            .map(|(at, choice)| format!("{}. {choice}", at + 1))
            .collect::<Vec<_>>()
            .join("\n");
        self.measurement_fallback
            .replace("{request}", request)
            .replace("{tests}", &tests)
    }
}

/// Reads the fallback's reply: the first whole number in it, a choice when
/// it is 1..=`choices` (0, another number or none: no choice).
pub fn read_fallback_choice(reply: &str, choices: usize) -> Option<usize> {
    let number: String = reply
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    let chosen: usize = number.parse().ok()?;
    (1..=choices).contains(&chosen).then(|| chosen - 1)
}

/// Label parts that name no test by themselves (`Imaging - Chest CT -
/// Findings`).
const GENERIC_PARTS: &[&str] = &["findings", "results", "result", "report", "value"];

/// How much of the case a dialogue elicited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coverage {
    pub findings_elicited: u32,
    pub findings_total: u32,
    pub tests_elicited: u32,
    pub tests_total: u32,
}

impl Coverage {
    /// (findings + results elicited) / (findings + results); 0 when the
    /// case has neither.
    pub fn share(&self) -> f64 {
        let total = self.findings_total + self.tests_total;
        if total == 0 {
            0.0
        } else {
            f64::from(self.findings_elicited + self.tests_elicited) / f64::from(total)
        }
    }
}

/// The information coverage of a dialogue: the patient findings (facts of
/// `finding_kinds` in the patient's sections) whose words the patient's
/// replies state — half of their content words or more — and the result
/// lines the measurement agent returned.
pub fn coverage(
    settings: &Settings,
    ontology: &Ontology,
    sections: &[Section],
    facts: &[Fact],
    patient_replies: &[String],
    returned_labels: &[String],
) -> Coverage {
    let said = patient_replies.join("\n");
    let findings: Vec<&Fact> = facts
        .iter()
        .filter(|fact| {
            settings.finding_kinds.contains(&fact.kind) && settings.patient_sections.contains(&fact.section)
        })
        .collect();
    let elicited = findings
        .iter()
        .filter(|fact| {
            let (shared, total) = ontology.content_overlap(&fact.span_text, &said);
            total > 0 && shared * 2 >= total
        })
        .count();
    let mut labels: Vec<String> = result_lines(settings, sections)
        .into_iter()
        .map(|line| line.label)
        .collect();
    labels.sort();
    labels.dedup();
    let tests_elicited = labels
        .iter()
        .filter(|label| returned_labels.contains(label))
        .count();
    Coverage {
        findings_elicited: elicited as u32,
        findings_total: findings.len() as u32,
        tests_elicited: tests_elicited as u32,
        tests_total: labels.len() as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ontology::tests::ontology;

    const SETTINGS: &str = "version: 1
objective: [question]
patient: [history, symptoms]
measurement: [physical_examination, labs, imaging]
max_turns: 20
greeting: Hello, what brings you in?
request_test: 'REQUEST TEST:'
diagnosis_ready: 'DIAGNOSIS READY:'
normal_readings: 'RESULTS: normal readings'
not_available: 'RESULTS: not available'
final_notice: Last turn.
reflection: Review it.
notebook_context: 'Notes: {notebook}'
notebook_request: 'Notes so far: {notebook} Now: {consultation}'
measurement_fallback: 'Which of {tests} is {request}?'
finding_kinds: [symptom, history]
result_kinds: [test_result, exam, vital]
";

    fn prompts(doctor: &str, patient: &str) -> Prompts {
        Prompts {
            doctor: doctor.into(),
            patient: patient.into(),
            perception: "Over: {conclusion}. Rate.".into(),
        }
    }

    fn settings() -> Settings {
        Settings::parse(
            SETTINGS,
            "dialogue.yaml",
            prompts(
                "Objective: {objective}. {max_turns} turns.",
                "You are the patient: {patient}",
            ),
        )
        .unwrap()
    }

    #[test]
    fn the_shipped_biases_load_and_bad_ones_are_named() {
        let pack = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/general-medicine");
        let biases = load_biases(&pack).unwrap();
        assert_eq!(biases.len(), 24, "AgentClinic's 24");
        for role in ["doctor", "patient"] {
            assert!(biases.iter().filter(|bias| bias.role == role).count() >= 10);
        }
        let bad = "version: 1\nbiases:\n  - {id: a, kind: cognitive, role: nurse, text: x}\n";
        let error = parse_biases(bad, "biases.yaml").unwrap_err().to_string();
        assert!(error.contains("role `nurse`"), "{error}");
        let found = find_bias(&pack, "doctor_recency").unwrap();
        assert_eq!(
            (found.role.as_str(), found.kind.as_str()),
            ("doctor", "cognitive")
        );
        let unknown = find_bias(&pack, "doctor_hurry").unwrap_err().to_string();
        assert!(
            unknown.contains("not in the pack's biases.yaml (doctor_recency, "),
            "{unknown}"
        );
        let twice = "version: 1\nbiases:\n  - {id: a, kind: implicit, role: doctor, text: x}\n  - {id: a, kind: implicit, role: doctor, text: y}\n";
        assert!(
            parse_biases(twice, "b")
                .unwrap_err()
                .to_string()
                .contains("twice")
        );
    }

    #[test]
    fn ratings_are_read_strictly() {
        assert_eq!(
            read_ratings("Sure! ```json\n{\"confidence\": 7, \"compliance\": 8, \"consult_again\": 6}\n```"),
            Ok(Ratings {
                confidence: 7,
                compliance: 8,
                consult_again: 6
            })
        );
        for bad in [
            "I trust the doctor.",
            "{\"confidence\": 7, \"compliance\": 8}",
            "{\"confidence\": 11, \"compliance\": 8, \"consult_again\": 6}",
            "{\"confidence\": 7.5, \"compliance\": 8, \"consult_again\": 6}",
            "{\"confidence\": \"high\", \"compliance\": 8, \"consult_again\": 6}",
        ] {
            assert!(read_ratings(bad).is_err(), "{bad}");
        }
    }

    fn section(name: &str, text: &str) -> Section {
        Section {
            name: name.into(),
            text: text.into(),
            span_start: None,
            span_end: None,
        }
    }

    fn chart() -> Vec<Section> {
        vec![
            section("question", "Question: Assess double vision."),
            section(
                "history",
                "History: A month of double vision, worse in the evening.",
            ),
            section(
                "physical_examination",
                "Physical examination: Vital Signs - Blood Pressure: 125/80 mmHg\nVital Signs - Heart Rate: 72 bpm\nNeurological Examination - Reflexes: Normal",
            ),
            section(
                "labs",
                "Labs: Blood Tests - Acetylcholine Receptor Antibodies: Present (elevated)\nElectromyography - Findings: Decrement on repetitive stimulation",
            ),
            section(
                "imaging",
                "Imaging: Imaging - Chest CT - Findings: Normal, no thymoma.",
            ),
        ]
    }

    #[test]
    fn the_patient_knows_its_sections_only() {
        let settings = settings();
        let brief = settings.patient_brief(&chart());
        assert!(brief.contains("double vision"));
        assert!(!brief.contains("Antibodies") && !brief.contains("Question"));
        assert_eq!(settings.objective(&chart()), "Question: Assess double vision.");
        let error = Settings::parse(
            &SETTINGS.replace("patient: [history, symptoms]", "patient: [history, labs]"),
            "dialogue.yaml",
            prompts("{objective} {max_turns}", "{patient}"),
        )
        .unwrap_err();
        assert!(error.to_string().contains("both the patient's"), "{error}");
        let error = Settings::parse(SETTINGS, "d.yaml", prompts("{objective}", "{patient}")).unwrap_err();
        assert!(error.to_string().contains("no {max_turns}"), "{error}");
    }

    #[test]
    fn the_notebook_texts_need_their_placeholders() {
        let settings = settings();
        assert_eq!(settings.notebook_context("ask early"), "Notes: ask early");
        assert_eq!(
            settings.notebook_request("old", "Doctor: hello"),
            "Notes so far: old Now: Doctor: hello"
        );
        let error = Settings::parse(
            &SETTINGS.replace(" Now: {consultation}", ""),
            "d.yaml",
            prompts("{objective} {max_turns}", "{patient}"),
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("`notebook_request` has no {consultation}"),
            "{error}"
        );
    }

    #[test]
    fn the_fallback_chooses_by_number_among_labels_only() {
        let settings = settings();
        let diff = vec![DiffEntry {
            op: "remove_fact".into(),
            section: None,
            fact_kind: None,
            fact_name: Some("Chest X-ray".into()),
            before: None,
            after: None,
        }];
        let choices = fallback_choices(&settings, &chart(), &diff);
        assert_eq!(
            choices.last().map(String::as_str),
            Some("Chest X-ray"),
            "a removed test is a choice"
        );
        assert!(
            choices.iter().all(|choice| !choice.contains(':')),
            "labels, never values: {choices:?}"
        );
        let question = settings.fallback_question("the pressure thing", &choices);
        assert!(
            question.starts_with("Which of 1. Vital Signs - Blood Pressure\n2. "),
            "{question}"
        );
        assert!(question.ends_with("is the pressure thing?"), "{question}");
        for (reply, chosen) in [
            ("2", Some(1)),
            ("The answer is 3.", Some(2)),
            ("0", None),
            ("none of them", None),
            ("99", None),
        ] {
            assert_eq!(read_fallback_choice(reply, choices.len()), chosen, "{reply}");
        }
    }

    #[test]
    fn result_lines_lose_the_section_label() {
        let lines = result_lines(&settings(), &chart());
        let labels: Vec<&str> = lines.iter().map(|line| line.label.as_str()).collect();
        assert_eq!(
            labels,
            vec![
                "Vital Signs - Blood Pressure",
                "Vital Signs - Heart Rate",
                "Neurological Examination - Reflexes",
                "Blood Tests - Acetylcholine Receptor Antibodies",
                "Electromyography - Findings",
                "Imaging - Chest CT - Findings"
            ]
        );
        assert_eq!(
            lines[3].line,
            "Blood Tests - Acetylcholine Receptor Antibodies: Present (elevated)"
        );
    }

    #[test]
    fn the_measurement_agent_serves_the_lines_a_request_names() {
        let settings = settings();
        let ontology = ontology();
        let measurement = Measurement {
            settings: &settings,
            ontology: &ontology,
        };
        let chart = chart();
        let ask = |request: &str| measurement.answer(request, &chart, &[]);
        assert_eq!(
            ask("Neurological Examination - Reflexes").labels,
            vec!["Neurological Examination - Reflexes"],
            "a sibling under the same heading is another test"
        );
        let found = ask("acetylcholine receptor antibodies");
        assert_eq!(
            found.text,
            "RESULTS:\nBlood Tests - Acetylcholine Receptor Antibodies: Present (elevated)"
        );
        assert_eq!(ask("Chest CT").labels, vec!["Imaging - Chest CT - Findings"]);
        assert_eq!(
            ask("electromyography").labels,
            vec!["Electromyography - Findings"]
        );
        assert_eq!(ask("vital signs").labels.len(), 2, "a heading names its lines");
        assert_eq!(
            ask("physical examination").labels.len(),
            3,
            "a section names its lines"
        );
        let none = ask("serum lipase");
        assert_eq!(
            (none.text.as_str(), none.removed),
            ("RESULTS: normal readings", false)
        );
        let removed = [DiffEntry {
            op: "remove_fact".into(),
            section: Some("labs".into()),
            fact_kind: Some("test_result".into()),
            fact_name: Some("Blood Tests - Acetylcholine Receptor Antibodies".into()),
            before: None,
            after: None,
        }];
        let mut without = chart.clone();
        without[3].text = "Labs: Electromyography - Findings: Decrement".into();
        let gone = measurement.answer("AChR antibodies", &without, &removed);
        assert_eq!(
            (gone.text.as_str(), gone.removed),
            ("RESULTS: not available", true)
        );
    }

    #[test]
    fn a_doctor_turn_is_a_diagnosis_a_request_or_a_question() {
        let settings = settings();
        assert_eq!(
            settings.read_turn("I think I know.\nDIAGNOSIS READY: [Myasthenia gravis]"),
            Turn::Diagnosis("Myasthenia gravis".into())
        );
        assert_eq!(
            settings.read_turn("**REQUEST TEST**: Chest_CT."),
            Turn::RequestTest("Chest_CT".into())
        );
        assert_eq!(
            settings.read_turn("request test: AChR antibodies"),
            Turn::RequestTest("AChR antibodies".into())
        );
        assert_eq!(
            settings.read_turn("When did it start?"),
            Turn::Question("When did it start?".into())
        );
    }

    #[test]
    fn coverage_counts_what_the_patient_said_and_the_results_returned() {
        let settings = settings();
        let ontology = ontology();
        let fact = |kind: &str, section: &str, text: &str| Fact {
            kind: kind.into(),
            name: text.into(),
            value: "present".into(),
            polarity: "affirmed".into(),
            certainty: "certain".into(),
            detail: None,
            section: section.into(),
            span_start: 0,
            span_end: 0,
            span_text: text.into(),
            origin: "rule".into(),
        };
        let facts = [
            fact("symptom", "symptoms", "Double vision"),
            fact("symptom", "symptoms", "Drooping eyelid"),
            fact("test_result", "labs", "Present"),
        ];
        let replies = ["I see double, doctor, mostly at night.".to_string()];
        let coverage = coverage(
            &settings,
            &ontology,
            &chart(),
            &facts,
            &replies,
            &["Imaging - Chest CT - Findings".to_string()],
        );
        assert_eq!(
            (coverage.findings_elicited, coverage.findings_total),
            (1, 2),
            "{coverage:?}"
        );
        assert_eq!((coverage.tests_elicited, coverage.tests_total), (1, 6));
        assert!((coverage.share() - 2.0 / 8.0).abs() < 1e-9);
    }
}
