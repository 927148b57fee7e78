//! Sweep-scale behaviour: injected faults lose and duplicate nothing; the cache answers
//! repeats without requests and never across models; a killed run resumes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use cfeval_model::testing::{FaultRates, ServerConfig};
use cfeval_model::{CallOutcome, ChatRequest, Journal, Limits, Message, ResponseCache};

use crate::support::{client_builder, fast_limits, join_all, openai_config, server};

fn prompt(index: usize) -> ChatRequest {
    ChatRequest::new(vec![Message::user(format!("case {index}"))])
}

/// Distinct answers in a cache directory, packed or one-file.
fn count_cache_files(dir: &std::path::Path) -> usize {
    let stats = cfeval_model::cache_maintenance::stats(dir).expect("cache stats");
    assert_eq!(stats.damaged_bytes + stats.torn_bytes, 0, "{stats:?}");
    (stats.keys + stats.file_entries) as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_thirty_percent_faults_every_call_ends_once() {
    const CALLS: usize = 300;
    let mut faults = FaultRates::mixed(0.25);
    faults.bad_request = 0.05; // terminal errors, so the test sees both endings
    let server = server(ServerConfig {
        faults,
        seed: 11,
        ..ServerConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("calls.jsonl");
    let (journal, _) = Journal::open(&journal_path, true).unwrap();
    let cache = ResponseCache::open(dir.path().join("cache"), false).unwrap();
    let limits = Limits {
        max_concurrency: 32,
        attempt_timeout_secs: 1.0,
        max_attempts: 8,
        ..fast_limits()
    };
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .limits(limits)
        .cache(cache.clone())
        .journal(journal)
        .build()
        .unwrap();
    let calls = (0..CALLS).map(|index| {
        let client = client.clone();
        async move {
            (
                index,
                client.chat_tagged(&prompt(index), Some(&index.to_string())).await,
            )
        }
    });
    let results = join_all(calls).await;

    let mut ok = 0;
    let mut failed = BTreeSet::new();
    for (index, result) in &results {
        match result {
            Ok(done) => {
                ok += 1;
                assert_eq!(
                    done.response.text.as_deref(),
                    Some(format!("[m] case {index}").as_str())
                );
            }
            Err(err) => {
                assert_eq!(
                    err.kind(),
                    "http_status",
                    "only the 400s are terminal here: {err}"
                );
                failed.insert(index.to_string());
            }
        }
    }
    assert_eq!(ok + failed.len(), CALLS);
    assert!(server.faults_injected() > 50, "faults were injected");
    assert!(!failed.is_empty(), "some calls end in a terminal error");

    // The journal has exactly one record per call, with the call's outcome.
    let mut records = BTreeMap::new();
    Journal::replay(&journal_path, |record| {
        let tag = record.tag.clone().unwrap();
        assert!(
            records.insert(tag, record).is_none(),
            "a call was journaled twice"
        );
    })
    .unwrap();
    assert_eq!(records.len(), CALLS);
    for (tag, record) in &records {
        match &record.outcome {
            CallOutcome::Ok { response, .. } => {
                assert!(!failed.contains(tag));
                assert_eq!(response.text.as_deref(), Some(format!("[m] case {tag}").as_str()));
            }
            CallOutcome::Error { kind, .. } => {
                assert!(failed.contains(tag));
                assert_eq!(kind, "http_status");
            }
        }
    }
    // Each success is one correct server answer; nothing was answered twice.
    assert_eq!(server.answered_ok(), ok as u64);
    let stats = client.stats();
    assert_eq!((stats.calls, stats.succeeded), (CALLS as u64, ok as u64));
    // Successes are cached, errors are not.
    assert_eq!(count_cache_files(cache.dir()), ok);
}

#[tokio::test]
async fn a_second_identical_run_makes_no_requests_and_models_never_share() {
    const CALLS: usize = 40;
    let server = server(ServerConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = ResponseCache::open(dir.path(), false).unwrap();
    let run = |subject: &'static str| {
        let client = client_builder(openai_config(&server, subject, None))
            .cache(cache.clone())
            .build()
            .unwrap();
        async move {
            let calls = (0..CALLS).map(|index| {
                let client = client.clone();
                async move { client.chat(&prompt(index)).await.unwrap() }
            });
            join_all(calls).await
        }
    };
    let first = run("vllm/model-a").await;
    assert!(first.iter().all(|done| !done.from_cache));
    assert_eq!(server.requests(), CALLS as u64);

    let second = run("vllm/model-a").await;
    assert_eq!(server.requests(), CALLS as u64, "the second run made requests");
    assert!(second.iter().all(|done| done.from_cache && done.attempts == 0));
    for (a, b) in first.iter().zip(&second) {
        assert_eq!(a.response, b.response);
        assert_eq!(a.cache_key, b.cache_key);
    }

    // Same requests, another model: every one goes to the server, none is answered from
    // model-a's entries.
    let other = run("vllm/model-b").await;
    assert_eq!(server.requests_for_model("model-b"), CALLS as u64);
    for (index, done) in other.iter().enumerate() {
        assert!(!done.from_cache);
        assert_eq!(
            done.response.text.as_deref(),
            Some(format!("[model-b] case {index}").as_str())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_run_resumes_losing_only_the_calls_in_flight() {
    const CALLS: usize = 40;
    let server = server(ServerConfig {
        latency: std::time::Duration::from_millis(20),
        ..ServerConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let journal_path = dir.path().join("calls.jsonl");
    let cache_dir = dir.path().join("cache");
    let build = || {
        let (journal, _) = Journal::open(&journal_path, true).unwrap();
        let limits = Limits {
            max_concurrency: 4,
            ..fast_limits()
        };
        client_builder(openai_config(&server, "vllm/m", None))
            .limits(limits)
            .cache(ResponseCache::open(&cache_dir, true).unwrap())
            .journal(journal)
            .build()
            .unwrap()
    };

    // First run: killed (tasks aborted) once about half the answers are in.
    let client = build();
    let returned = Arc::new(Mutex::new(BTreeSet::new()));
    let tasks: Vec<_> = (0..CALLS)
        .map(|index| {
            let client = client.clone();
            let returned = returned.clone();
            tokio::spawn(async move {
                let tag = index.to_string();
                let result = client.chat_tagged(&prompt(index), Some(&tag)).await;
                if result.is_ok() {
                    returned.lock().expect("set").insert(tag);
                }
            })
        })
        .collect();
    while server.answered_ok() < (CALLS / 2) as u64 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    for task in &tasks {
        task.abort();
    }
    for task in tasks {
        let _ = task.await;
    }
    // Every call that had returned is in the journal: only calls in flight are lost.
    let returned = returned.lock().expect("set").clone();
    let mut journaled = BTreeSet::new();
    Journal::replay(&journal_path, |record| {
        journaled.insert(record.tag.unwrap());
    })
    .unwrap();
    assert!(!returned.is_empty());
    assert!(returned.is_subset(&journaled));
    drop(client);
    // Cache writes already handed to the blocking pool finish on their own.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let cached_after_kill = count_cache_files(&cache_dir);
    assert!((CALLS / 2 - 4..CALLS).contains(&cached_after_kill));
    let requests_before = server.requests();

    // Resume: cached calls make no request; the rest are made once each.
    let client = build();
    let calls = (0..CALLS).map(|index| {
        let client = client.clone();
        async move {
            client
                .chat_tagged(&prompt(index), Some(&index.to_string()))
                .await
                .unwrap()
        }
    });
    let results = join_all(calls).await;
    assert_eq!(results.len(), CALLS);
    assert_eq!(
        server.requests() - requests_before,
        (CALLS - cached_after_kill) as u64
    );
    assert_eq!(count_cache_files(&cache_dir), CALLS);
    let mut ok_tags = BTreeSet::new();
    Journal::replay(&journal_path, |record| {
        assert!(record.is_ok());
        assert!(ok_tags.insert(record.tag.unwrap()), "a call was answered twice");
    })
    .unwrap();
    // Calls killed after their answer was cached but before it was journaled are
    // served from the cache on resume (not re-bought, so not journaled again).
    assert!(ok_tags.len() <= CALLS && ok_tags.is_superset(&returned));
}
