//! Batch sweeps against the test server's batch endpoints, both protocols:
//! the answers recorded from a batch equal the live endpoint's, a cached
//! request is never batched, a rerun submits nothing, and a process that
//! died after creating a batch but before recording its id finds that batch
//! again instead of submitting another, while one killed before it sent
//! the create call makes its own batch.

use std::time::Duration;

use cfeval_model::batch::{BatchSettings, prefill};
use cfeval_model::testing::ServerConfig;
use cfeval_model::{BackendConfig, ChatRequest, Journal, Message, ResponseCache};

use crate::support::{anthropic_config, client_builder, openai_config, server};

fn requests() -> Vec<(Option<String>, ChatRequest)> {
    let mut requests: Vec<(Option<String>, ChatRequest)> = (0..5)
        .map(|index| {
            (
                Some(format!("v{index}")),
                ChatRequest::new(vec![Message::user(format!("the plan for case {index}?"))]),
            )
        })
        .collect();
    // The same request twice is one batch line.
    requests.push((Some("v0-again".into()), requests[0].1.clone()));
    requests
}

async fn check(config: impl Fn(&cfeval_model::testing::TestServer) -> BackendConfig) {
    let server = server(ServerConfig {
        batch_polls: 3,
        ..ServerConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = ResponseCache::open(dir.path().join("cache"), false).expect("cache");
    let (journal, _) = Journal::open(dir.path().join("journal.jsonl"), false).expect("journal");
    let client = client_builder(config(&server))
        .cache(cache.clone())
        .journal(journal)
        .build()
        .expect("client");
    let model = client.identity().model.clone();
    let settings = BatchSettings {
        state: dir.path().join("batches/state.json"),
        poll: Duration::from_millis(10),
        max_requests: 4,
    };
    // One request is answered live first: it is cached, never batched.
    let live_first = client.chat(&requests()[4].1).await.expect("live");
    let report = prefill(&client, requests(), &settings).await.expect("prefill");
    assert_eq!((report.requests, report.cached), (5, 1), "{report:?}");
    assert_eq!(
        (report.submitted, report.answered, report.failed),
        (1, 4, 0),
        "{report:?}"
    );
    assert_eq!(server.batches_created(), 1);
    assert_eq!(server.batch_requests_for_model(&model), 4);
    assert_eq!(server.requests_for_model(&model), 1, "only the live call");
    // Every answer is now in the cache and equals the live endpoint's.
    let live = client_builder(config(&server)).build().expect("live client");
    for (_, request) in requests() {
        let cached = client.chat(&request).await.expect("cached");
        assert!(cached.from_cache);
        let fresh = live.chat(&request).await.expect("live");
        assert_eq!(cached.response.text, fresh.response.text);
        assert_eq!(cached.response.usage, fresh.response.usage);
    }
    assert!(live_first.response.text.is_some());
    let journal = std::fs::read_to_string(dir.path().join("journal.jsonl")).expect("journal");
    assert_eq!(
        journal.lines().count(),
        5,
        "the live call and 4 batch answers are journaled"
    );
    // A rerun submits nothing.
    let again = prefill(&client, requests(), &settings).await.expect("again");
    assert_eq!((again.cached, again.submitted), (5, 0), "{again:?}");
    assert_eq!(server.batches_created(), 1);

    // A crash between creating a batch and recording its id: a new cache,
    // a state whose open submission has no batch id. The batch is found
    // again, not created twice.
    let cache = ResponseCache::open(dir.path().join("cache-2"), false).expect("cache");
    let client = client_builder(config(&server))
        .cache(cache)
        .build()
        .expect("client");
    let state = dir.path().join("batches/crash.json");
    let settings = BatchSettings {
        state: state.clone(),
        max_requests: 100,
        ..settings
    };
    let first = prefill(&client, requests(), &settings).await.expect("first");
    assert_eq!((first.submitted, first.answered), (1, 5));
    assert_eq!(server.batches_created(), 2);
    let mut text: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).expect("state")).expect("json");
    text["submissions"][0]["batch_id"] = serde_json::Value::Null;
    text["submissions"][0]["done"] = serde_json::json!(false);
    std::fs::write(&state, text.to_string()).expect("write");
    let cache = ResponseCache::open(dir.path().join("cache-3"), false).expect("cache");
    let client = client_builder(config(&server))
        .cache(cache)
        .build()
        .expect("client");
    let resumed = prefill(&client, requests(), &settings).await.expect("resumed");
    assert_eq!(
        (resumed.resumed, resumed.submitted, resumed.answered),
        (1, 0, 5),
        "{resumed:?}"
    );
    assert_eq!(server.batches_created(), 2, "found again, not submitted again");
    // Killed before its create call was sent: the submission is created,
    // never matched to the batch of the same size already on the server.
    let mut text: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&state).expect("state")).expect("json");
    text["submissions"][0]["batch_id"] = serde_json::Value::Null;
    text["submissions"][0]["creating"] = serde_json::Value::Null;
    text["submissions"][0]["done"] = serde_json::json!(false);
    std::fs::write(&state, text.to_string()).expect("write");
    let cache = ResponseCache::open(dir.path().join("cache-4"), false).expect("cache");
    let client = client_builder(config(&server))
        .cache(cache)
        .build()
        .expect("client");
    let unsent = prefill(&client, requests(), &settings).await.expect("unsent");
    assert_eq!((unsent.resumed, unsent.answered), (1, 5), "{unsent:?}");
    assert_eq!(server.batches_created(), 3, "created, not taken from another");
    // A state file that is not one is refused with its path.
    std::fs::write(&state, "{not json").expect("write");
    let error = prefill(&client, requests(), &settings)
        .await
        .expect_err("bad state");
    assert!(error.to_string().contains("crash.json"), "{error}");
}

#[tokio::test]
async fn openai_batches_fill_the_cache_like_live_calls() {
    check(|server| openai_config(server, "openai/batch-model", None)).await;
}

#[tokio::test]
async fn anthropic_batches_fill_the_cache_like_live_calls() {
    check(|server| anthropic_config(server, "anthropic/batch-model", None)).await;
}
