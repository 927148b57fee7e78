//! The crate's error type.
//!
//! Messages say what was being done. None of them ever contains an API key: bodies
//! quoted from a provider pass through [`crate::subject::ApiKey::redact`] first.

use std::path::PathBuf;
use std::time::Duration;

/// `Result` with this crate's [`Error`] as the default error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong while accessing a model.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The subject name is not `provider/model` or names an unknown provider.
    #[error("invalid subject name {name:?}: {reason}")]
    InvalidSubject { name: String, reason: String },

    /// A required setting (base URL, API key variable) is missing.
    #[error("subject {subject}: {what}")]
    MissingSetting { subject: String, what: String },

    /// A setting has a value that cannot be used.
    #[error("invalid setting {what}: {reason}")]
    InvalidSetting { what: String, reason: String },

    /// The provider answered 429 Too Many Requests (or 529 overloaded).
    #[error("rate limited by {endpoint} (HTTP {status}){}", retry_after_text(*.retry_after))]
    RateLimited {
        endpoint: String,
        status: u16,
        retry_after: Option<Duration>,
    },

    /// The provider answered with a non-success status.
    #[error("{endpoint} answered HTTP {status}: {body}")]
    Status {
        endpoint: String,
        status: u16,
        retry_after: Option<Duration>,
        /// The start of the response body, redacted.
        body: String,
    },

    /// One attempt took longer than the per-attempt timeout.
    #[error("request to {endpoint} timed out after {after:?}")]
    AttemptTimeout { endpoint: String, after: Duration },

    /// The whole call (all attempts and waits) ran out of time.
    #[error("call to {endpoint} gave up after {after:?} (total timeout); last error: {last}")]
    TotalTimeout {
        endpoint: String,
        after: Duration,
        last: String,
    },

    /// Connecting, sending or receiving failed (connection refused, reset, truncated body).
    #[error("transport error talking to {endpoint}: {message}")]
    Transport { endpoint: String, message: String },

    /// The response body was not the JSON the API promises.
    #[error("malformed response from {endpoint}: {message}")]
    MalformedResponse { endpoint: String, message: String },

    /// A 200 reply the caller's check found unusable (no text, cut off, a
    /// refusal, broken tool arguments): retried like a transient error.
    #[error("{endpoint} gave an unusable reply ({status}): {detail}")]
    Unusable {
        endpoint: String,
        /// The caller's word for what is wrong (e.g. `empty`, `truncated`).
        status: &'static str,
        detail: String,
        /// The reply, kept so that the last one can be shown.
        response: Box<crate::types::ChatResponse>,
    },

    /// Retries were exhausted; `last` (the source) is the final attempt's error.
    #[error("call to {endpoint} failed after {attempts} attempts")]
    RetriesExhausted {
        endpoint: String,
        attempts: u32,
        #[source]
        last: Box<Error>,
    },

    /// The request cannot be expressed for this backend.
    #[error("request not supported by {backend}: {reason}")]
    Unsupported { backend: String, reason: String },

    /// A blocking backend's worker thread panicked or was cancelled.
    #[error("blocking backend {backend} failed: {message}")]
    Blocking { backend: String, message: String },

    /// Reading or writing a file failed (cache, journal, price table).
    #[error("failed to {action} {path}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// A YAML file (price table) could not be parsed.
    #[error("failed to parse {path}")]
    Yaml {
        path: PathBuf,
        #[source]
        source: serde_norway::Error,
    },

    /// Serialising or parsing JSON of our own (cache entry, journal line) failed.
    #[error("failed to {action}")]
    Json {
        action: String,
        #[source]
        source: serde_json::Error,
    },

    /// The journal writer has stopped (an earlier write failed).
    #[error("journal {path} is closed: {reason}")]
    JournalClosed { path: PathBuf, reason: String },
}

fn retry_after_text(retry_after: Option<Duration>) -> String {
    match retry_after {
        Some(after) => format!(", retry after {after:?}"),
        None => String::new(),
    }
}

impl Error {
    /// Whether another attempt may succeed (429, 408, 409, 5xx, timeouts, transport and
    /// malformed bodies). 4xx client errors and configuration errors are terminal.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::RateLimited { .. }
            | Error::AttemptTimeout { .. }
            | Error::Transport { .. }
            | Error::MalformedResponse { .. }
            | Error::Unusable { .. } => true,
            Error::Status { status, .. } => matches!(status, 408 | 409 | 500..=599),
            _ => false,
        }
    }

    /// Whether this is a rate-limit signal (the adaptive limiter backs off on it).
    pub fn is_rate_limit(&self) -> bool {
        matches!(self, Error::RateLimited { .. })
    }

    /// The server's `Retry-After`, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::RateLimited { retry_after, .. } | Error::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short machine-readable class for journals and reports.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::InvalidSubject { .. } => "invalid_subject",
            Error::MissingSetting { .. } => "missing_setting",
            Error::InvalidSetting { .. } => "invalid_setting",
            Error::RateLimited { .. } => "rate_limited",
            Error::Status { .. } => "http_status",
            Error::AttemptTimeout { .. } => "attempt_timeout",
            Error::TotalTimeout { .. } => "total_timeout",
            Error::Transport { .. } => "transport",
            Error::MalformedResponse { .. } => "malformed_response",
            Error::Unusable { status, .. } => status,
            Error::RetriesExhausted { last, .. } => last.kind(),
            Error::Unsupported { .. } => "unsupported",
            Error::Blocking { .. } => "blocking",
            Error::Io { .. } => "io",
            Error::Yaml { .. } => "yaml",
            Error::Json { .. } => "json",
            Error::JournalClosed { .. } => "journal_closed",
        }
    }

    /// The unusable reply that ended the call (this error, or the last
    /// attempt's once retries were exhausted): its status and the reply.
    pub fn unusable(&self) -> Option<(&'static str, &crate::types::ChatResponse)> {
        match self {
            Error::Unusable { status, response, .. } => Some((status, response)),
            Error::RetriesExhausted { last, .. } => last.unusable(),
            _ => None,
        }
    }

    /// The message with its chain of sources, `: `-separated (for journals and logs).
    pub fn full_message(&self) -> String {
        let mut message = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        message
    }

    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn json(action: impl Into<String>, source: serde_json::Error) -> Self {
        Error::Json {
            action: action.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_retryable_statuses() {
        let status = |status| Error::Status {
            endpoint: "e".into(),
            status,
            retry_after: None,
            body: String::new(),
        };
        assert!(status(500).is_retryable());
        assert!(status(503).is_retryable());
        assert!(status(408).is_retryable());
        assert!(!status(400).is_retryable());
        assert!(!status(401).is_retryable());
        assert!(!status(404).is_retryable());
        let limited = Error::RateLimited {
            endpoint: "e".into(),
            status: 429,
            retry_after: Some(Duration::from_secs(2)),
        };
        assert!(limited.is_retryable() && limited.is_rate_limit());
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(2)));
        assert!(limited.to_string().contains("retry after 2s"));
        let exhausted = Error::RetriesExhausted {
            endpoint: "e".into(),
            attempts: 3,
            last: Box::new(status(503)),
        };
        assert_eq!(exhausted.kind(), "http_status");
        assert!(!exhausted.is_retryable());
        assert_eq!(
            exhausted.full_message(),
            "call to e failed after 3 attempts: e answered HTTP 503: "
        );
    }
}
