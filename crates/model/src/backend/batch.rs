//! The providers' batch endpoints (half the price, answers within hours):
//! what a backend must do for [`crate::batch`] to submit a sweep's requests
//! as one batch, find it again after a crash, poll it and read its results.
//!
//! - OpenAI-compatible (`openai-chat`): the requests as a JSONL file
//!   (`POST {base}/files`, purpose `batch`), then `POST {base}/batches` over
//!   it with cfeval's submission tag in the batch's `metadata`; `GET
//!   {base}/batches/{id}` until `completed` (or `failed`, `expired`,
//!   `cancelled`); the results are `GET {base}/files/{output_file_id}/content`
//!   (and the error file's). A batch is found again by its input file or its
//!   tag (`GET {base}/batches`).
//! - Anthropic (`anthropic-messages`): `POST {base}/v1/messages/batches` with
//!   the requests inline; `GET …/{id}` until `ended`; the results are the
//!   JSONL at its `results_url`. The API keeps no caller metadata, so a batch
//!   is found again as the newest one of the same size that no submission of
//!   this run has claimed.
//!
//! Every request's `custom_id` is its response-cache key (64 hex digits, the
//! longest id both APIs accept), so a result goes to the cache entry a live
//! call would have filled.

use serde_json::Value;

use super::BoxFuture;
use crate::error::{Error, Result};
use crate::types::{ChatRequest, ChatResponse};

/// One request of a batch.
#[derive(Debug, Clone)]
pub struct BatchItem {
    /// The request's cache key (hex): its id in the batch.
    pub custom_id: String,
    pub request: ChatRequest,
}

/// Where a batch stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchPoll {
    /// Still running: requests done so far of the total.
    Running { done: u64, total: u64 },
    /// Ended (completed, expired or cancelled with what it finished):
    /// where its results are (OpenAI: the output and error file ids,
    /// space separated; Anthropic: the results URL).
    Ended { results: String },
    /// Failed as a whole (validation, an expired input file…).
    Failed { reason: String },
}

/// Each request's answer or error, by custom id.
pub type BatchResults = Vec<(String, Result<ChatResponse>)>;

/// A backend's batch endpoints (see the module docs).
pub trait BatchBackend: Send + Sync {
    /// Whatever must exist before the batch is created (OpenAI: the
    /// uploaded input file, whose id is returned to be recorded); `None`
    /// where nothing does.
    fn prepare<'a>(&'a self, items: &'a [BatchItem]) -> BoxFuture<'a, Result<Option<String>>>;

    /// Creates the batch over `items` (and what [`Self::prepare`] made),
    /// tagged `tag` where the API keeps metadata; returns its id.
    fn create<'a>(
        &'a self,
        items: &'a [BatchItem],
        prepared: Option<&'a str>,
        tag: &'a str,
    ) -> BoxFuture<'a, Result<String>>;

    /// The batch a submission created before the process died between
    /// creating it and recording its id, if the provider has it: by
    /// `prepared` or `tag`, else (no metadata) the newest batch of `count`
    /// requests not among `known`.
    fn find<'a>(
        &'a self,
        prepared: Option<&'a str>,
        tag: &'a str,
        count: usize,
        known: &'a [String],
    ) -> BoxFuture<'a, Result<Option<String>>>;

    fn poll<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<BatchPoll>>;

    /// The results of an ended batch: each request's response or error,
    /// by custom id. `items` are the batch's requests, where known (to read
    /// a response the way the live call would).
    fn results<'a>(&'a self, results: &'a str, items: &'a [BatchItem])
    -> BoxFuture<'a, Result<BatchResults>>;
}

/// A `multipart/form-data` body of text fields and one file; returns the
/// content type (with its boundary) and the bytes.
pub(crate) fn multipart(fields: &[(&str, &str)], file: (&str, &str, &[u8])) -> (String, Vec<u8>) {
    let (name, file_name, content) = file;
    // A boundary that cannot occur in the content: its hash.
    let boundary = format!("cfeval-{}", &blake3::hash(content).to_hex()[..32]);
    let mut body = Vec::with_capacity(content.len() + 512);
    for (field, value) in fields {
        body.extend_from_slice(
            format!("--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"\r\n\r\n{value}\r\n")
                .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file_name}\"\r\nContent-Type: application/jsonl\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(content);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The lines of a JSONL body, each parsed; a line that is not JSON is an
/// error naming its number.
pub(crate) fn jsonl(endpoint: &str, body: &[u8]) -> Result<Vec<Value>> {
    String::from_utf8_lossy(body)
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(index, line)| {
            serde_json::from_str(line).map_err(|err| Error::MalformedResponse {
                endpoint: endpoint.to_string(),
                message: format!("results line {}: {err}", index + 1),
            })
        })
        .collect()
}

/// The id of a batch just created (the `id` of the API's answer).
pub(crate) fn created_id(url: String, answer: &Value) -> Result<String> {
    answer
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Error::MalformedResponse {
            endpoint: url,
            message: "the created batch has no id".into(),
        })
}

/// The items' bodies by custom id, for reading results.
pub(crate) fn by_id(items: &[BatchItem]) -> std::collections::HashMap<&str, &ChatRequest> {
    items
        .iter()
        .map(|item| (item.custom_id.as_str(), &item.request))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_bodies_hold_the_fields_and_the_file() {
        let (content_type, body) =
            multipart(&[("purpose", "batch")], ("file", "batch.jsonl", b"{\"a\":1}\n"));
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .expect("boundary");
        let text = String::from_utf8(body).expect("utf-8");
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.contains("name=\"purpose\"\r\n\r\nbatch\r\n"));
        assert!(text.contains("filename=\"batch.jsonl\""));
        assert!(text.contains("\r\n\r\n{\"a\":1}\n\r\n"));
        assert!(text.ends_with(&format!("--{boundary}--\r\n")));
    }

    #[test]
    fn jsonl_names_the_bad_line() {
        assert_eq!(jsonl("x", b"{\"a\":1}\n\n{\"b\":2}\n").expect("lines").len(), 2);
        let error = jsonl("x", b"{\"a\":1}\n{oops\n").expect_err("bad line");
        assert!(error.to_string().contains("line 2"), "{error}");
    }
}
