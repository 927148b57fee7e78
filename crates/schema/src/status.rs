//! The statuses of a `responses` row: one owner for the words every stage,
//! the status command and the report use.
//!
//! A row is `ok` only when the subject gave a usable answer. Everything else
//! is left out of the scores and counted: a call that failed (`error`) and
//! the four kinds of unusable reply — `empty` (no text, or nothing but
//! whitespace and markup), `truncated` (cut off by the token limit),
//! `refused` (the model declined to answer) and `bad_tool_args` (an agent's
//! tool-call arguments were not JSON). Each is retried like a transient
//! error within a call, and a rerun of infer tries the tuple again (up to
//! `max_tries`).

/// The status of one response row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResponseStatus {
    /// A usable answer.
    Ok,
    /// The call failed (transport, HTTP status, timeout, malformed body…).
    Error,
    /// No text, or nothing but whitespace and markup.
    Empty,
    /// Cut off by the output-token limit (finish reason `length`).
    Truncated,
    /// The model declined to answer.
    Refused,
    /// Agent mode: tool-call arguments that are not JSON.
    BadToolArgs,
}

impl ResponseStatus {
    /// Every status, `ok` first.
    pub const ALL: [ResponseStatus; 6] = [
        ResponseStatus::Ok,
        ResponseStatus::Error,
        ResponseStatus::Empty,
        ResponseStatus::Truncated,
        ResponseStatus::Refused,
        ResponseStatus::BadToolArgs,
    ];

    /// Every status that is not `ok` (what is retried, left out and counted).
    pub const NOT_OK: [ResponseStatus; 5] = [
        ResponseStatus::Error,
        ResponseStatus::Empty,
        ResponseStatus::Truncated,
        ResponseStatus::Refused,
        ResponseStatus::BadToolArgs,
    ];

    /// The word stored in the `status` column.
    pub const fn as_str(self) -> &'static str {
        match self {
            ResponseStatus::Ok => "ok",
            ResponseStatus::Error => "error",
            ResponseStatus::Empty => "empty",
            ResponseStatus::Truncated => "truncated",
            ResponseStatus::Refused => "refused",
            ResponseStatus::BadToolArgs => "bad_tool_args",
        }
    }

    /// The status a `status` column value names (`None` for an unknown word).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|status| status.as_str() == text)
    }

    /// Whether the row holds a usable answer.
    pub fn is_ok(self) -> bool {
        self == ResponseStatus::Ok
    }

    /// The `status` a judgment of a pair carries when this response (the
    /// variant's, else the baseline's) is not `ok`: the response's own word,
    /// except that a failed call is `response_error` (a judgment's `error`
    /// means the judge failed).
    pub fn judgment_status(self) -> &'static str {
        match self {
            ResponseStatus::Error => RESPONSE_ERROR,
            other => other.as_str(),
        }
    }
}

impl std::fmt::Display for ResponseStatus {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}

/// A judgment's `status` when the response it would judge is an error.
pub const RESPONSE_ERROR: &str = "response_error";

/// Normalises a provider's finish (stop) reason: OpenAI's words stay
/// (`stop`, `length`, `tool_calls`, `content_filter`), Anthropic's and
/// others' map onto them (`end_turn`/`stop_sequence` → `stop`, `max_tokens`
/// → `length`, `tool_use` → `tool_calls`, `refusal` → `content_filter`),
/// any other value is kept as it is (trimmed, lower case).
pub fn normalize_finish_reason(reason: &str) -> String {
    let lower = reason.trim().to_ascii_lowercase();
    match lower.as_str() {
        "end_turn" | "stop_sequence" | "eos" | "end" => "stop".into(),
        "max_tokens" | "max_output_tokens" | "length" => "length".into(),
        "tool_use" | "function_call" | "tool_calls" => "tool_calls".into(),
        "refusal" | "safety" | "content_filter" => "content_filter".into(),
        _ => lower,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_their_words() {
        for status in ResponseStatus::ALL {
            assert_eq!(ResponseStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(ResponseStatus::parse("fine"), None);
        assert!(ResponseStatus::NOT_OK.iter().all(|status| !status.is_ok()));
        assert_eq!(ResponseStatus::Error.judgment_status(), "response_error");
        assert_eq!(ResponseStatus::Refused.judgment_status(), "refused");
    }

    #[test]
    fn finish_reasons_normalise_across_providers() {
        for (raw, normal) in [
            ("stop", "stop"),
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("length", "length"),
            ("max_tokens", "length"),
            ("tool_use", "tool_calls"),
            ("tool_calls", "tool_calls"),
            ("refusal", "content_filter"),
            ("content_filter", "content_filter"),
            (" Pause_Turn ", "pause_turn"),
        ] {
            assert_eq!(normalize_finish_reason(raw), normal, "{raw}");
        }
    }
}
