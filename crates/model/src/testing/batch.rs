//! The providers' batch endpoints, served by the test server: OpenAI's file
//! upload (`POST /v1/files`, multipart), `POST /v1/batches`, `GET
//! /v1/batches[/{id}]`, `GET /v1/files/{id}/content`; Anthropic's `POST
//! /v1/messages/batches`, `GET /v1/messages/batches[/{id}]` and its results
//! URL. A batch ends after [`super::ServerConfig::batch_polls`] polls; its
//! answers are the live endpoints' answers to the same bodies.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::State;
use super::reply::{Answer, Protocol, reply};
use super::wire::Request;

/// One batch.
#[derive(Debug, Clone)]
pub(super) struct Batch {
    id: String,
    protocol: Protocol,
    /// (custom id, body).
    requests: Vec<(String, Value)>,
    input_file: Option<String>,
    metadata: Value,
    polls: u32,
}

/// Files and batches.
#[derive(Debug, Default)]
pub(super) struct Store {
    files: HashMap<String, Vec<u8>>,
    /// In creation order.
    batches: Vec<Batch>,
    next: u64,
}

/// What a batch route answers: status and body.
pub(super) type Reply = (u16, Vec<u8>);

fn json_reply(status: u16, value: &Value) -> Reply {
    (status, value.to_string().into_bytes())
}

fn error(status: u16, message: &str) -> Reply {
    json_reply(
        status,
        &json!({"error": {"message": message, "type": "test_server"}}),
    )
}

/// The batch routes; `None` for any other request.
pub(super) fn route(state: &State, request: &Request, base_url: &str) -> Option<Reply> {
    let path = request.path.split('?').next().unwrap_or_default();
    let method = request.method.as_str();
    let is_batch_route = path == "/v1/files"
        || path.starts_with("/v1/files/")
        || path == "/v1/batches"
        || path.starts_with("/v1/batches/")
        || path == "/v1/messages/batches"
        || path.starts_with("/v1/messages/batches/");
    if !is_batch_route {
        return None;
    }
    let mut store = state
        .batches
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let reply = match (method, path) {
        ("POST", "/v1/files") => upload(&mut store, request),
        ("POST", "/v1/batches") => create_openai(state, &mut store, &request.body),
        ("GET", "/v1/batches") => json_reply(
            200,
            &json!({"data": store.batches.iter().rev().filter(|b| b.protocol == Protocol::OpenAi).map(|b| openai_view(state, b, false)).collect::<Vec<_>>(), "has_more": false}),
        ),
        ("POST", "/v1/messages/batches") => create_anthropic(state, &mut store, &request.body),
        ("GET", "/v1/messages/batches") => json_reply(
            200,
            &json!({"data": store.batches.iter().rev().filter(|b| b.protocol == Protocol::Anthropic).map(|b| anthropic_view(state, b, base_url)).collect::<Vec<_>>(), "has_more": false}),
        ),
        ("GET", _) if path.starts_with("/v1/files/") && path.ends_with("/content") => {
            let id = &path["/v1/files/".len()..path.len() - "/content".len()];
            match store.files.get(id) {
                Some(bytes) => (200, bytes.clone()),
                None => error(404, "no such file"),
            }
        }
        ("GET", _) if path.starts_with("/v1/batches/") => {
            let id = &path["/v1/batches/".len()..];
            poll(state, &mut store, id, |state, batch, store| {
                let view = openai_view(state, batch, true);
                if let Some(output) = view.get("output_file_id").and_then(Value::as_str)
                    && !store.files.contains_key(output)
                {
                    let lines: String = batch
                        .requests
                        .iter()
                        .map(|(custom_id, body)| {
                            let model = body.get("model").and_then(Value::as_str).unwrap_or_default();
                            let answer = reply(Protocol::OpenAi, body, model, Answer::Normal, state.config.responder.as_ref());
                            format!(
                                "{}\n",
                                json!({"id": format!("line-{custom_id}"), "custom_id": custom_id, "response": {"status_code": 200, "request_id": "req", "body": answer}, "error": null})
                            )
                        })
                        .collect();
                    store.files.insert(output.to_string(), lines.into_bytes());
                }
                view
            })
        }
        ("GET", _) if path.starts_with("/v1/messages/batches/") && path.ends_with("/results") => {
            let id = &path["/v1/messages/batches/".len()..path.len() - "/results".len()];
            match store.batches.iter().find(|batch| batch.id == id) {
                Some(batch) if batch.polls >= state.config.batch_polls => {
                    let lines: String = batch
                        .requests
                        .iter()
                        .map(|(custom_id, params)| {
                            let model = params.get("model").and_then(Value::as_str).unwrap_or_default();
                            let message = reply(Protocol::Anthropic, params, model, Answer::Normal, state.config.responder.as_ref());
                            format!("{}\n", json!({"custom_id": custom_id, "result": {"type": "succeeded", "message": message}}))
                        })
                        .collect();
                    (200, lines.into_bytes())
                }
                Some(_) => error(400, "the batch has not ended"),
                None => error(404, "no such batch"),
            }
        }
        ("GET", _) if path.starts_with("/v1/messages/batches/") => {
            let id = &path["/v1/messages/batches/".len()..];
            poll(state, &mut store, id, |state, batch, _| {
                anthropic_view(state, batch, base_url)
            })
        }
        _ => error(404, "no such route"),
    };
    Some(reply)
}

/// Counts a poll of batch `id` and answers its view.
fn poll(
    state: &State,
    store: &mut Store,
    id: &str,
    view: impl FnOnce(&State, &Batch, &mut Store) -> Value,
) -> Reply {
    let Some(index) = store.batches.iter().position(|batch| batch.id == id) else {
        return error(404, "no such batch");
    };
    store.batches[index].polls += 1;
    let batch = store.batches[index].clone();
    json_reply(200, &view(state, &batch, store))
}

fn ended(state: &State, batch: &Batch) -> bool {
    batch.polls >= state.config.batch_polls
}

fn openai_view(state: &State, batch: &Batch, with_files: bool) -> Value {
    let total = batch.requests.len();
    let done = ended(state, batch);
    let mut view = json!({
        "id": batch.id,
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "input_file_id": batch.input_file,
        "completion_window": "24h",
        "status": if done { "completed" } else { "in_progress" },
        "request_counts": {"total": total, "completed": if done { total } else { 0 }, "failed": 0},
        "metadata": batch.metadata,
    });
    if done && with_files {
        view["output_file_id"] = json!(format!("file-out-{}", batch.id));
    }
    view
}

fn anthropic_view(state: &State, batch: &Batch, base_url: &str) -> Value {
    let total = batch.requests.len();
    let done = ended(state, batch);
    json!({
        "id": batch.id,
        "type": "message_batch",
        "processing_status": if done { "ended" } else { "in_progress" },
        "request_counts": {"processing": if done { 0 } else { total }, "succeeded": if done { total } else { 0 }, "errored": 0, "canceled": 0, "expired": 0},
        "results_url": if done { json!(format!("{base_url}/v1/messages/batches/{}/results", batch.id)) } else { Value::Null },
    })
}

/// The `file` part of a multipart body.
fn file_part(request: &Request) -> Option<Vec<u8>> {
    let content_type = request.header("content-type")?;
    let boundary = content_type.split("boundary=").nth(1)?.trim_matches('"');
    let delimiter = format!("--{boundary}").into_bytes();
    let body = &request.body;
    let mut starts = Vec::new();
    let mut at = 0;
    while let Some(found) = find(&body[at..], &delimiter) {
        starts.push(at + found);
        at += found + delimiter.len();
    }
    for pair in starts.windows(2) {
        let part = &body[pair[0] + delimiter.len()..pair[1]];
        let head_end = find(part, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&part[..head_end]);
        if head.contains("name=\"file\"") {
            let content = &part[head_end + 4..];
            return Some(content.strip_suffix(b"\r\n").unwrap_or(content).to_vec());
        }
    }
    None
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|window| window == needle)
}

fn upload(store: &mut Store, request: &Request) -> Reply {
    let Some(content) = file_part(request) else {
        return error(400, "no `file` part in the multipart body");
    };
    store.next += 1;
    let id = format!("file-{}", store.next);
    let bytes = content.len();
    store.files.insert(id.clone(), content);
    json_reply(
        200,
        &json!({"id": id, "object": "file", "bytes": bytes, "purpose": "batch"}),
    )
}

fn create_openai(state: &State, store: &mut Store, body: &[u8]) -> Reply {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return error(400, "request is not JSON");
    };
    let Some(file) = body.get("input_file_id").and_then(Value::as_str) else {
        return error(400, "no input_file_id");
    };
    let Some(content) = store.files.get(file) else {
        return error(404, "no such input file");
    };
    let mut requests = Vec::new();
    for line in String::from_utf8_lossy(content)
        .lines()
        .filter(|line| !line.trim().is_empty())
    {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            return error(400, "an input line is not JSON");
        };
        let (Some(custom_id), Some(body)) = (line.get("custom_id").and_then(Value::as_str), line.get("body"))
        else {
            return error(400, "an input line has no custom_id or body");
        };
        requests.push((custom_id.to_string(), body.clone()));
    }
    store.next += 1;
    let batch = Batch {
        id: format!("batch_{}", store.next),
        protocol: Protocol::OpenAi,
        requests,
        input_file: Some(file.to_string()),
        metadata: body.get("metadata").cloned().unwrap_or(Value::Null),
        polls: 0,
    };
    note(state, &batch);
    let view = openai_view(state, &batch, false);
    store.batches.push(batch);
    json_reply(200, &view)
}

fn create_anthropic(state: &State, store: &mut Store, body: &[u8]) -> Reply {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return error(400, "request is not JSON");
    };
    let Some(list) = body.get("requests").and_then(Value::as_array) else {
        return error(400, "no requests");
    };
    let mut requests = Vec::new();
    for item in list {
        let (Some(custom_id), Some(params)) =
            (item.get("custom_id").and_then(Value::as_str), item.get("params"))
        else {
            return error(400, "a request has no custom_id or params");
        };
        requests.push((custom_id.to_string(), params.clone()));
    }
    store.next += 1;
    let batch = Batch {
        id: format!("msgbatch_{}", store.next),
        protocol: Protocol::Anthropic,
        requests,
        input_file: None,
        metadata: Value::Null,
        polls: 0,
    };
    note(state, &batch);
    let view = anthropic_view(state, &batch, "");
    store.batches.push(batch);
    json_reply(200, &view)
}

/// Counts a created batch and its requests per model.
fn note(state: &State, batch: &Batch) {
    let counters = &state.counters;
    counters
        .batches_created
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut per_model = counters
        .batch_per_model
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for (_, body) in &batch.requests {
        let model = body.get("model").and_then(Value::as_str).unwrap_or_default();
        *per_model.entry(model.to_string()).or_default() += 1;
    }
}
