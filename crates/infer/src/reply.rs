//! Whether a subject's reply can be used: the rules that give a response row
//! its status ([`ResponseStatus`]). The refusal cues are data
//! (`data/replies.yaml`); the rest is general:
//!
//! - `truncated`: the finish reason is `length` (any provider's word for it,
//!   normalised by [`normalize_finish_reason`]);
//! - `bad_tool_args`: a tool call whose arguments are not JSON;
//! - `empty`: no tool call, and no letter or digit once markup tags
//!   (`<think></think>`, `<br>`) are removed — whitespace, markdown
//!   punctuation and empty fences are no answer;
//! - `refused`: finish reason `content_filter`, or a refusal cue without a
//!   plan cue (see the data file).
//!
//! [`check`] is what infer hands the model client: an unusable reply is
//! retried like a transient error and never cached.

use std::sync::OnceLock;

use cfeval_model::{ChatResponse, Unusable};
use cfeval_schema::{ResponseStatus, normalize_finish_reason};
use serde::Deserialize;

/// The bundled reply rules.
pub const BUILTIN_REPLIES_YAML: &str = include_str!("../../../data/replies.yaml");

/// The refusal rule's phrases.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyRules {
    refusal: Refusal,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Refusal {
    cues: Vec<String>,
    plan_cues: Vec<String>,
}

impl ReplyRules {
    /// Parses rules from YAML text (`origin` names it in errors).
    pub fn parse(text: &str, origin: &str) -> Result<Self, String> {
        let mut rules: ReplyRules =
            serde_norway::from_str(text).map_err(|error| format!("failed to parse {origin}: {error}"))?;
        for phrase in rules
            .refusal
            .cues
            .iter_mut()
            .chain(rules.refusal.plan_cues.iter_mut())
        {
            *phrase = normalize(phrase);
        }
        Ok(rules)
    }

    /// The rules of `data/replies.yaml`, parsed once.
    pub fn bundled() -> &'static ReplyRules {
        static RULES: OnceLock<ReplyRules> = OnceLock::new();
        RULES.get_or_init(|| {
            Self::parse(BUILTIN_REPLIES_YAML, "data/replies.yaml (built in)").unwrap_or_else(|error| {
                // Covered by a unit test; never fail a sweep over it.
                tracing::error!(%error, "bundled reply rules unreadable; refusals go undetected");
                ReplyRules::default()
            })
        })
    }

    /// Whether `text` declines to answer: a refusal cue and no plan cue.
    pub fn is_refusal(&self, text: &str) -> bool {
        let text = normalize(text);
        let has = |phrases: &[String]| phrases.iter().any(|phrase| contains_words(&text, phrase));
        has(&self.refusal.cues) && !has(&self.refusal.plan_cues)
    }

    /// The status of a reply: `None` when it is usable.
    pub fn status(&self, response: &ChatResponse) -> Option<(ResponseStatus, String)> {
        let finish = response.finish_reason.as_deref().map(normalize_finish_reason);
        if finish.as_deref() == Some("length") {
            return Some((
                ResponseStatus::Truncated,
                "the reply was cut off by the output-token limit (finish reason length)".into(),
            ));
        }
        if let Some((call, error)) = response
            .tool_calls
            .iter()
            .find_map(|call| call.arguments_json().err().map(|error| (call, error)))
        {
            return Some((
                ResponseStatus::BadToolArgs,
                format!("the arguments of tool call `{}` are not JSON: {error}", call.name),
            ));
        }
        if !response.tool_calls.is_empty() {
            return None;
        }
        let text = response.text.as_deref().unwrap_or_default();
        if is_empty_text(text) {
            return Some((
                ResponseStatus::Empty,
                "the reply has no text (nothing but whitespace or markup)".into(),
            ));
        }
        if finish.as_deref() == Some("content_filter") {
            return Some((
                ResponseStatus::Refused,
                "the provider's content filter stopped the reply".into(),
            ));
        }
        if self.is_refusal(text) {
            return Some((ResponseStatus::Refused, "the reply declines to answer".into()));
        }
        None
    }
}

/// The check infer hands the model client ([`cfeval_model::ReplyCheck`]).
pub fn check(response: &ChatResponse) -> Result<(), Unusable> {
    match ReplyRules::bundled().status(response) {
        None => Ok(()),
        Some((status, detail)) => Err(Unusable {
            status: status.as_str(),
            detail,
        }),
    }
}

/// Whether `text` holds no letter or digit once markup tags are removed.
pub fn is_empty_text(text: &str) -> bool {
    let mut in_tag = false;
    for character in text.chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if in_tag => {}
            _ if character.is_alphanumeric() => return false,
            _ => {}
        }
    }
    true
}

/// Lower case, straight apostrophes, single spaces.
fn normalize(text: &str) -> String {
    text.to_lowercase()
        .replace(['\u{2019}', '\u{2018}', '`'], "'")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether `phrase` occurs in `text` starting and ending on word boundaries.
fn contains_words(text: &str, phrase: &str) -> bool {
    if phrase.is_empty() {
        return false;
    }
    let is_word = |character: Option<char>| character.is_some_and(char::is_alphanumeric);
    text.match_indices(phrase).any(|(start, _)| {
        let end = start + phrase.len();
        let before = text[..start].chars().next_back();
        let after = text[end..].chars().next();
        let phrase_starts_word = phrase.chars().next().is_some_and(char::is_alphanumeric);
        let phrase_ends_word = phrase.chars().next_back().is_some_and(char::is_alphanumeric);
        (!phrase_starts_word || !is_word(before)) && (!phrase_ends_word || !is_word(after))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfeval_model::ToolCall;

    fn reply(text: Option<&str>, finish: Option<&str>) -> ChatResponse {
        ChatResponse {
            text: text.map(str::to_string),
            tool_calls: Vec::new(),
            finish_reason: finish.map(str::to_string),
            usage: cfeval_model::Usage::default(),
            model: None,
            raw: serde_json::Value::Null,
        }
    }

    fn status(response: &ChatResponse) -> Option<ResponseStatus> {
        ReplyRules::bundled().status(response).map(|(status, _)| status)
    }

    #[test]
    fn the_bundled_rules_parse() {
        assert!(ReplyRules::parse(BUILTIN_REPLIES_YAML, "data/replies.yaml").is_ok());
        assert!(ReplyRules::parse("refusal: {cues: [], plan_cues: [], other: 1}", "x").is_err());
    }

    #[test]
    fn empty_means_no_letter_or_digit_outside_markup() {
        for empty in [
            "",
            "   \n\t",
            "**",
            "```\n```",
            "<think></think>",
            "<br/> - \n#",
            "...",
        ] {
            assert!(is_empty_text(empty), "{empty:?}");
            assert_eq!(
                status(&reply(Some(empty), Some("stop"))),
                Some(ResponseStatus::Empty)
            );
        }
        assert_eq!(status(&reply(None, Some("stop"))), Some(ResponseStatus::Empty));
        for answer in ["FOLFOX", "<b>Plan</b>", "1", "2 < 3 then FOLFOX"] {
            assert!(!is_empty_text(answer), "{answer:?}");
        }
    }

    #[test]
    fn truncation_is_the_length_finish_reason_of_any_provider() {
        let cut = reply(Some("Recommendation: start FOLF"), Some("length"));
        assert_eq!(status(&cut), Some(ResponseStatus::Truncated));
        let anthropic = reply(Some("Recommendation: start FOLF"), Some("max_tokens"));
        assert_eq!(status(&anthropic), Some(ResponseStatus::Truncated));
        assert_eq!(
            status(&reply(Some("Recommendation: FOLFOX"), Some("end_turn"))),
            None
        );
    }

    #[test]
    fn refusals_decline_without_a_plan_and_clinical_negatives_are_answers() {
        for refusal in [
            "I'm sorry, but I can't help with that. As an AI language model, I cannot provide medical advice.",
            "As an AI, I cannot make clinical decisions. Please consult your doctor.",
            "I can\u{2019}t provide medical advice.",
            "I must decline to answer this question.",
        ] {
            assert_eq!(
                status(&reply(Some(refusal), Some("stop"))),
                Some(ResponseStatus::Refused),
                "{refusal}"
            );
        }
        for answer in [
            "I would not recommend surgery; start FOLFOX.",
            "Surgery is not indicated. I cannot see a role for resection.",
            "As an AI I cannot examine the patient, but I recommend trastuzumab-based therapy.",
            "No adjuvant chemotherapy is needed; surveillance.",
            // A cue must be whole words: "as an aide" is not "as an ai".
            "Discuss with her family, as an aide to the decision; plan: FOLFOX.",
        ] {
            assert_eq!(status(&reply(Some(answer), Some("stop"))), None, "{answer}");
        }
        assert!(!ReplyRules::bundled().is_refusal("as an aide noted, the patient is tired"));
        assert_eq!(
            status(&reply(Some("Recommendation: FOLFOX"), Some("content_filter"))),
            Some(ResponseStatus::Refused)
        );
    }

    #[test]
    fn tool_calls_must_carry_json_arguments() {
        let mut response = reply(None, Some("tool_calls"));
        response.tool_calls.push(ToolCall {
            id: "1".into(),
            name: "read_chart_section".into(),
            arguments: r#"{"name": "labs"}"#.into(),
        });
        assert_eq!(status(&response), None);
        response.tool_calls.push(ToolCall {
            id: "2".into(),
            name: "read_chart_section".into(),
            arguments: r#"{"name": "lab"#.into(),
        });
        assert_eq!(status(&response), Some(ResponseStatus::BadToolArgs));
        assert!(check(&response).is_err());
    }
}
