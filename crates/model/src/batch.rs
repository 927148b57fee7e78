//! Batch sweeps: a subject's requests sent through the provider's batch
//! endpoints ([`crate::backend::batch`]; half the price, answers within
//! hours) instead of one call each, resumable across process restarts.
//!
//! [`prefill`] takes every request a stage is about to make, leaves out
//! those the response cache already answers, submits the rest as batches
//! (at most [`BatchSettings::max_requests`] each), polls them, and records
//! every answer as a live call would ([`ModelClient::record_answer`]: the
//! response cache under the request's own key, and the journal). The stage
//! then runs as usual and finds every answer in the cache, so a batch sweep
//! and a live sweep give the same tables. A request the batch did not
//! answer (an errored line, an expired batch) is left to the live path.
//!
//! **Crash safety.** Every step is recorded in a state file (one per
//! subject and slice, written atomically) before the next one starts: the
//! submission's requests and tag, then its uploaded input file (OpenAI),
//! then that its create call is being sent, then its batch id, then that it
//! is done. A process killed at any moment and started again polls the
//! batch it had submitted instead of submitting another; killed while the
//! create call was in flight (sent, its id not recorded), it finds the
//! batch again ([`BatchBackend::find`]) before it would create one; killed
//! before the call was sent, it creates the batch without looking.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::backend::batch::{BatchBackend, BatchItem, BatchPoll};
use crate::cache::CacheKey;
use crate::client::ModelClient;
use crate::error::{Error, Result};
use crate::types::ChatRequest;

/// How a batch sweep runs.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchSettings {
    /// The state file (created with its folder).
    pub state: PathBuf,
    /// Time between two polls of a running batch.
    pub poll: Duration,
    /// Requests per batch, at most.
    pub max_requests: usize,
}

impl BatchSettings {
    pub const DEFAULT_POLL: Duration = Duration::from_secs(30);
    pub const DEFAULT_MAX_REQUESTS: usize = 10_000;
}

/// What [`prefill`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BatchReport {
    /// Distinct requests asked for.
    pub requests: u64,
    /// Of those, answered by the cache before any batch.
    pub cached: u64,
    /// Batches created by this process, and found again or polled from an
    /// earlier one.
    pub submitted: u64,
    pub resumed: u64,
    /// Answers recorded from batch results.
    pub answered: u64,
    /// Requests a batch did not answer (left to the live path).
    pub failed: u64,
    /// What the recorded answers cost at the batch rate (half the price
    /// table's), when the price is known.
    pub cost_usd: f64,
}

/// The state file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct State {
    subject: String,
    submissions: Vec<Submission>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Submission {
    /// The submission's id (its keys' hash), sent as batch metadata.
    tag: String,
    /// Its requests' cache keys.
    keys: Vec<String>,
    /// What `prepare` made (OpenAI's input file).
    #[serde(default)]
    prepared: Option<String>,
    /// Set (Unix ms) just before the create call is sent: only then can
    /// the provider hold a batch whose id was never recorded.
    #[serde(default)]
    creating: Option<u64>,
    #[serde(default)]
    batch_id: Option<String>,
    #[serde(default)]
    done: bool,
    #[serde(default)]
    failed: Option<String>,
}

fn read_state(path: &Path, subject: &str) -> Result<State> {
    match fs_err::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|err| Error::InvalidSetting {
            what: format!("batch state {}", path.display()),
            reason: format!("not a batch state file: {err}"),
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(State {
            subject: subject.to_string(),
            submissions: Vec::new(),
        }),
        Err(err) => Err(Error::io("read batch state", path, err)),
    }
}

/// Writes the state through a temporary file and a rename, flushed, so a
/// kill leaves the old state or the new one.
fn write_state(path: &Path, state: &State) -> Result<()> {
    if let Some(parent) = path.parent() {
        fs_err::create_dir_all(parent).map_err(|err| Error::io("create batch state folder", parent, err))?;
    }
    let bytes = serde_json::to_vec_pretty(state).map_err(|err| Error::json("encode batch state", err))?;
    let temp = path.with_extension(format!("tmp-{}", std::process::id()));
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(&bytes)?;
        file.sync_data()?;
        std::fs::rename(&temp, path)
    };
    write().map_err(|err| {
        let _ = std::fs::remove_file(&temp);
        Error::io("write batch state", path, err)
    })
}

/// One request to make: the caller's tag for it (a variant id) and the request.
pub type Planned = (Option<String>, ChatRequest);

/// Answers `requests` through the subject's batch endpoints into its cache
/// (see the module docs).
pub async fn prefill(
    client: &ModelClient,
    requests: Vec<Planned>,
    settings: &BatchSettings,
) -> Result<BatchReport> {
    let subject = client.identity().subject.clone();
    let backend = client.batch_backend().ok_or_else(|| Error::Unsupported {
        backend: subject.clone(),
        reason: "its backend has no batch endpoints (batch mode is for openai-chat and anthropic-messages subjects)"
            .into(),
    })?;
    let cache = client.response_cache().ok_or_else(|| Error::Unsupported {
        backend: subject.clone(),
        reason: "batch mode needs the response cache (batch answers reach the stage through it)".into(),
    })?;
    // Distinct requests by key, in a stable order.
    let mut planned: BTreeMap<String, (CacheKey, Option<String>, ChatRequest)> = BTreeMap::new();
    for (tag, request) in requests {
        let key = client.cache_key(&request)?;
        planned.entry(key.to_hex()).or_insert((key, tag, request));
    }
    let mut report = BatchReport {
        requests: planned.len() as u64,
        ..BatchReport::default()
    };
    let mut pending: Vec<String> = Vec::new();
    for (hex, (key, _, _)) in &planned {
        if cache.get(key).await?.is_some() {
            report.cached += 1;
        } else {
            pending.push(hex.clone());
        }
    }
    let mut state = read_state(&settings.state, &subject)?;
    let items_of = |keys: &[String]| -> Vec<BatchItem> {
        keys.iter()
            .filter_map(|hex| {
                planned.get(hex).map(|(_, _, request)| BatchItem {
                    custom_id: hex.clone(),
                    request: request.clone(),
                })
            })
            .collect()
    };
    // Submissions still open from an earlier process keep their requests.
    let covered: HashSet<String> = state
        .submissions
        .iter()
        .filter(|submission| !submission.done)
        .flat_map(|submission| submission.keys.iter().cloned())
        .collect();
    report.resumed = state
        .submissions
        .iter()
        .filter(|submission| !submission.done)
        .count() as u64;
    let fresh: Vec<String> = pending.into_iter().filter(|hex| !covered.contains(hex)).collect();
    // Submissions made by this process: no earlier one can have created
    // their batch, so they are never looked for.
    let first_new = state.submissions.len();
    for chunk in fresh.chunks(settings.max_requests.max(1)) {
        // Unique to this submission: its keys, its state file and the time.
        let tag = blake3::hash(
            format!(
                "{}\n{}\n{}",
                settings.state.display(),
                crate::journal::unix_ms(),
                chunk.join("\n")
            )
            .as_bytes(),
        )
        .to_hex()[..32]
            .to_string();
        state.submissions.push(Submission {
            tag,
            keys: chunk.to_vec(),
            prepared: None,
            creating: None,
            batch_id: None,
            done: false,
            failed: None,
        });
        report.submitted += 1;
    }
    write_state(&settings.state, &state)?;
    // Every open submission gets its batch: found again, or created.
    for index in 0..state.submissions.len() {
        if state.submissions[index].done || state.submissions[index].batch_id.is_some() {
            continue;
        }
        let known: Vec<String> = state
            .submissions
            .iter()
            .filter_map(|submission| submission.batch_id.clone())
            .collect();
        let submission = state.submissions[index].clone();
        let items = items_of(&submission.keys);
        // Looked for only where an earlier process may have sent the
        // create call: a submission recorded but never sent is created,
        // never matched to a batch it did not make (Anthropic's batches
        // carry no metadata; another sweep's batch of the same size would
        // match).
        let found = if index < first_new && submission.creating.is_some() {
            backend
                .find(
                    submission.prepared.as_deref(),
                    &submission.tag,
                    submission.keys.len(),
                    &known,
                )
                .await?
        } else {
            None
        };
        let id = match found {
            Some(id) => {
                tracing::info!(%id, "found the batch an earlier process created");
                id
            }
            None if items.len() < submission.keys.len() => {
                // The inputs changed since it was planned: what it would ask
                // is no longer asked.
                let entry = &mut state.submissions[index];
                entry.done = true;
                entry.failed = Some("its requests are no longer planned".into());
                write_state(&settings.state, &state)?;
                continue;
            }
            None => {
                let prepared = match submission.prepared.clone() {
                    Some(prepared) => Some(prepared),
                    None => {
                        let prepared = backend.prepare(&items).await?;
                        state.submissions[index].prepared = prepared.clone();
                        write_state(&settings.state, &state)?;
                        prepared
                    }
                };
                state.submissions[index].creating = Some(crate::journal::unix_ms());
                write_state(&settings.state, &state)?;
                let id = backend
                    .create(&items, prepared.as_deref(), &submission.tag)
                    .await?;
                tracing::info!(%id, requests = items.len(), "batch submitted");
                id
            }
        };
        state.submissions[index].batch_id = Some(id);
        write_state(&settings.state, &state)?;
    }
    // Poll until every batch has ended; record the answers.
    loop {
        let mut open = 0;
        for index in 0..state.submissions.len() {
            let submission = state.submissions[index].clone();
            let (false, Some(id)) = (submission.done, submission.batch_id.as_deref()) else {
                continue;
            };
            match backend.poll(id).await? {
                BatchPoll::Running { done, total } => {
                    tracing::info!(%id, done, total, "batch running");
                    open += 1;
                }
                BatchPoll::Failed { reason } => {
                    tracing::warn!(%id, %reason, "batch failed: its requests go to the live path");
                    report.failed += submission.keys.len() as u64;
                    let entry = &mut state.submissions[index];
                    entry.done = true;
                    entry.failed = Some(reason);
                    write_state(&settings.state, &state)?;
                }
                BatchPoll::Ended { results } => {
                    let items = items_of(&submission.keys);
                    let answers = record(client, backend, &planned, &results, &items, &mut report).await?;
                    report.failed += (submission.keys.len() as u64).saturating_sub(answers);
                    state.submissions[index].done = true;
                    write_state(&settings.state, &state)?;
                }
            }
        }
        if open == 0 {
            return Ok(report);
        }
        tokio::time::sleep(settings.poll).await;
    }
}

/// Records an ended batch's successful answers; returns how many.
async fn record(
    client: &ModelClient,
    backend: &dyn BatchBackend,
    planned: &BTreeMap<String, (CacheKey, Option<String>, ChatRequest)>,
    results: &str,
    items: &[BatchItem],
    report: &mut BatchReport,
) -> Result<u64> {
    let mut answered = 0;
    for (id, result) in backend.results(results, items).await? {
        let Some((key, tag, _)) = planned.get(&id) else {
            continue;
        };
        match result {
            Ok(response) => {
                let cost = client.price().map(|price| price.cost(&response.usage) / 2.0);
                client.record_answer(key, tag.as_deref(), &response, cost).await?;
                report.cost_usd += cost.unwrap_or(0.0);
                report.answered += 1;
                answered += 1;
            }
            Err(error) => {
                tracing::warn!(request = %id, error = %error.full_message(), "a batch request failed: it goes to the live path");
            }
        }
    }
    Ok(answered)
}
