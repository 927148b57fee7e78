//! The OpenAI-compatible backend over HTTP: answers, tools, retries, timeouts.

use std::time::{Duration, Instant, SystemTime};

use cfeval_model::testing::{Fault, ServerConfig};
use cfeval_model::{ChatParams, ChatRequest, Error, Limits, Message, ToolSpec};
use serde_json::json;

use crate::support::{client_builder, fast_limits, join_all, openai_config, server};

fn read_tool() -> ToolSpec {
    ToolSpec {
        name: "read_chart_section".into(),
        description: "Read one section of the chart".into(),
        parameters: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
    }
}

#[tokio::test]
async fn answers_text_with_usage_and_passes_parameters_through() {
    let server = server(ServerConfig::default()).await;
    let client = client_builder(openai_config(&server, "vllm/test-model", None))
        .build()
        .unwrap();
    let request =
        ChatRequest::new(vec![Message::system("be brief"), Message::user("hello")]).with_params(ChatParams {
            temperature: Some(0.0),
            seed: Some(7),
            max_tokens: Some(64),
            ..ChatParams::default()
        });
    let done = client.chat(&request).await.unwrap();
    assert_eq!(done.response.text.as_deref(), Some("[test-model] hello"));
    assert_eq!(done.response.finish_reason.as_deref(), Some("stop"));
    assert!(done.response.usage.input_tokens > 0 && done.response.usage.output_tokens > 0);
    assert_eq!(done.response.raw["id"], "chatcmpl-test");
    assert_eq!((done.attempts, done.from_cache), (1, false));
    let body = server.last_body().unwrap();
    assert_eq!(body["seed"], 7);
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(server.requests_for_model("test-model"), 1);
}

#[tokio::test]
async fn tool_calls_round_trip_through_an_agent_loop() {
    let server = server(ServerConfig::default()).await;
    let client = client_builder(openai_config(&server, "vllm/agent", None))
        .build()
        .unwrap();
    let mut messages = vec![Message::user("what is the stage?")];
    let first = client
        .chat(&ChatRequest::new(messages.clone()).with_tools(vec![read_tool()]))
        .await
        .unwrap();
    let call = first.response.tool_calls.first().cloned().unwrap();
    assert_eq!(call.name, "read_chart_section");
    assert_eq!(
        call.arguments_json().unwrap(),
        json!({"query": "what is the stage?"})
    );
    assert_eq!(first.response.finish_reason.as_deref(), Some("tool_calls"));
    messages.push(Message::from_response(&first.response));
    messages.push(Message::tool_result(&call.id, "Stage IV"));
    let second = client
        .chat(&ChatRequest::new(messages).with_tools(vec![read_tool()]))
        .await
        .unwrap();
    assert!(second.response.tool_calls.is_empty());
    assert_eq!(
        second.response.text.as_deref(),
        Some("[agent] what is the stage?")
    );
    let body = server.last_body().unwrap();
    assert_eq!(body["messages"][1]["tool_calls"][0]["id"], call.id.as_str());
    assert_eq!(body["messages"][2]["role"], "tool");
}

#[tokio::test]
async fn broken_tool_call_json_reaches_the_caller_as_data() {
    let server = server(ServerConfig::default()).await;
    server.script([Fault::BadToolJson]);
    let client = client_builder(openai_config(&server, "vllm/agent", None))
        .build()
        .unwrap();
    let done = client
        .chat(&ChatRequest::new(vec![Message::user("go")]).with_tools(vec![read_tool()]))
        .await
        .unwrap();
    assert_eq!(done.attempts, 1);
    let call = &done.response.tool_calls[0];
    assert!(call.arguments_json().is_err(), "arguments: {}", call.arguments);
}

#[tokio::test]
async fn transient_faults_are_retried_until_an_answer() {
    let server = server(ServerConfig::default()).await;
    server.script([
        Fault::RateLimited {
            retry_after: Some("0".into()),
        },
        Fault::ServerError,
        Fault::MalformedJson,
        Fault::TruncatedBody,
    ]);
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .build()
        .unwrap();
    let done = client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap();
    assert_eq!(done.attempts, 5);
    assert_eq!(done.response.text.as_deref(), Some("[m] x"));
    assert_eq!(server.requests(), 5);
    let stats = client.stats();
    assert_eq!((stats.attempts, stats.retries, stats.rate_limited), (5, 4, 1));
}

#[tokio::test]
async fn client_errors_are_terminal_and_not_retried() {
    let server = server(ServerConfig::default()).await;
    server.script([Fault::BadRequest]);
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .build()
        .unwrap();
    let err = client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Status { status: 400, .. }), "{err}");
    assert_eq!(server.requests(), 1);
}

#[tokio::test]
async fn retries_stop_at_max_attempts() {
    let server = server(ServerConfig::default()).await;
    server.script(std::iter::repeat_n(Fault::ServerError, 10));
    let limits = Limits {
        max_attempts: 3,
        ..fast_limits()
    };
    let client = client_builder(openai_config(&server, "vllm/m", None).with_limits(limits.clone()))
        .limits(limits)
        .build()
        .unwrap();
    let err = client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::RetriesExhausted { attempts: 3, .. }),
        "{err}"
    );
    assert_eq!(err.kind(), "http_status");
    assert_eq!(server.requests(), 3);
}

#[tokio::test]
async fn a_hung_attempt_times_out_and_the_retry_answers() {
    let server = server(ServerConfig::default()).await;
    server.script([Fault::Hang]);
    let limits = Limits {
        attempt_timeout_secs: 0.3,
        ..fast_limits()
    };
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .limits(limits)
        .build()
        .unwrap();
    let done = client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap();
    assert_eq!(done.attempts, 2);
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn the_total_timeout_ends_a_call_that_keeps_hanging() {
    let server = server(ServerConfig::default()).await;
    server.script(std::iter::repeat_n(Fault::Hang, 10));
    let limits = Limits {
        attempt_timeout_secs: 0.2,
        total_timeout_secs: 0.5,
        max_attempts: 10,
        ..fast_limits()
    };
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .limits(limits)
        .build()
        .unwrap();
    let err = client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::TotalTimeout { .. }), "{err}");
    assert!(server.requests() <= 4);
}

#[tokio::test]
async fn retry_after_is_honoured_in_seconds_and_as_an_http_date() {
    let server = server(ServerConfig::default()).await;
    let in_two_seconds = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    server.script([
        Fault::RateLimited {
            retry_after: Some(in_two_seconds),
        },
        Fault::RateLimited {
            retry_after: Some("1".into()),
        },
    ]);
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .build()
        .unwrap();
    let start = Instant::now();
    let done = client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap();
    assert_eq!(done.attempts, 3);
    // Lower bounds only: the date (whole seconds, so at least 1 s away), then 1 s more.
    assert!(start.elapsed() >= Duration::from_secs(2), "{:?}", start.elapsed());
}

#[tokio::test]
async fn rate_limits_halve_the_concurrency_and_successes_restore_it() {
    let server = server(ServerConfig::default()).await;
    server.script(std::iter::repeat_n(
        Fault::RateLimited {
            retry_after: Some("0".into()),
        },
        3,
    ));
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .build()
        .unwrap();
    assert_eq!(client.stats().concurrency_limit, 16);
    client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap();
    // 16 → 8 → 4 → 2, then one success.
    assert_eq!(client.stats().concurrency_limit, 2);
    for index in 0..150 {
        client
            .chat(&ChatRequest::new(vec![Message::user(format!("y{index}"))]))
            .await
            .unwrap();
    }
    assert_eq!(client.stats().concurrency_limit, 16);
}

#[tokio::test]
async fn requests_per_minute_spaces_calls() {
    let server = server(ServerConfig::default()).await;
    // 60 a minute: a burst of 10, then one a second.
    let limits = Limits {
        requests_per_minute: Some(60),
        ..fast_limits()
    };
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .limits(limits)
        .build()
        .unwrap();
    let start = Instant::now();
    let calls = (0..12).map(|i| {
        let client = client.clone();
        async move {
            client
                .chat(&ChatRequest::new(vec![Message::user(format!("{i}"))]))
                .await
        }
    });
    for result in join_all(calls).await {
        result.unwrap();
    }
    assert!(
        start.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(server.requests(), 12);
}

#[tokio::test]
async fn tokens_per_minute_spaces_calls_by_their_tokens() {
    let server = server(ServerConfig::default()).await;
    // 60,000 tokens a minute: a burst of 10,000, then 1,000 a second.
    let limits = Limits {
        tokens_per_minute: Some(60_000),
        ..fast_limits()
    };
    let client = client_builder(openai_config(&server, "vllm/m", None))
        .limits(limits)
        .build()
        .unwrap();
    // Each call is about 1,000 prompt tokens (4,000 characters) plus 16 out:
    // twelve of them are ~2,200 tokens over the burst, so at least ~2.2 s.
    let prompt = "chart ".repeat(667);
    let start = Instant::now();
    let calls = (0..12).map(|i| {
        let client = client.clone();
        let request =
            ChatRequest::new(vec![Message::user(format!("{i} {prompt}"))]).with_params(ChatParams {
                max_tokens: Some(16),
                ..ChatParams::default()
            });
        async move { client.chat(&request).await }
    });
    let mut used = 0;
    for result in join_all(calls).await {
        used += result.unwrap().response.usage.total();
    }
    let elapsed = start.elapsed();
    assert!(used > 12_000, "the server counted {used} tokens");
    assert!(elapsed >= Duration::from_millis(1900), "{elapsed:?}");
    assert_eq!(server.requests(), 12);

    // The same calls without the limit are not held back.
    let free = client_builder(openai_config(&server, "vllm/m2", None))
        .limits(fast_limits())
        .build()
        .unwrap();
    let start = Instant::now();
    let calls = (0..12).map(|i| {
        let free = free.clone();
        let request = ChatRequest::new(vec![Message::user(format!("{i} {prompt}"))]);
        async move { free.chat(&request).await }
    });
    for result in join_all(calls).await {
        result.unwrap();
    }
    assert!(start.elapsed() < elapsed, "{:?} vs {elapsed:?}", start.elapsed());
}

#[tokio::test]
async fn unknown_routes_and_unreachable_servers_fail_cleanly() {
    let server = server(ServerConfig::default()).await;
    let address = server.address();
    drop(server);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let config = cfeval_model::BackendConfig::custom(
        "vllm/m",
        cfeval_model::Protocol::OpenAiChat,
        format!("http://{address}/v1"),
        None,
    )
    .unwrap();
    let limits = Limits {
        max_attempts: 2,
        ..fast_limits()
    };
    let client = client_builder(config).limits(limits).build().unwrap();
    let err = client
        .chat(&ChatRequest::new(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "transport", "{err}");
}

#[test]
fn a_background_server_serves_callers_without_a_runtime() {
    let server = cfeval_model::testing::BackgroundServer::start(ServerConfig::default()).unwrap();
    let config = openai_config(&server, "vllm/sync", None);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = client_builder(config).build().unwrap();
    let done = runtime
        .block_on(client.chat(&ChatRequest::new(vec![Message::user("hi")])))
        .unwrap();
    assert_eq!(done.response.text.as_deref(), Some("[sync] hi"));
    assert_eq!(server.requests(), 1);
}

/// A check that refuses empty text and cut-off replies, as infer's does.
fn usable(response: &cfeval_model::ChatResponse) -> Result<(), cfeval_model::Unusable> {
    let text = response.text.as_deref().unwrap_or_default();
    if response.finish_reason.as_deref() == Some("length") {
        return Err(cfeval_model::Unusable {
            status: "truncated",
            detail: "cut off".into(),
        });
    }
    if text.trim().is_empty() && response.tool_calls.is_empty() {
        return Err(cfeval_model::Unusable {
            status: "empty",
            detail: "no text".into(),
        });
    }
    Ok(())
}

#[tokio::test]
async fn unusable_replies_are_retried_never_cached_and_attempts_are_true() {
    let server = server(ServerConfig::default()).await;
    let dir = tempfile::tempdir().unwrap();
    let cache = cfeval_model::ResponseCache::open(dir.path(), false).unwrap();
    let client = client_builder(openai_config(&server, "vllm/test-model", None))
        .cache(cache.clone())
        .build()
        .unwrap();
    let request = ChatRequest::new(vec![Message::user("plan?")]);
    // Two unusable replies, then a good one: three attempts, one answer.
    server.script([Fault::EmptyReply, Fault::Length]);
    let done = client.chat_checked(&request, None, Some(&usable)).await.unwrap();
    assert_eq!(done.response.text.as_deref(), Some("[test-model] plan?"));
    assert_eq!((done.attempts, done.from_cache), (3, false));
    // The two refused replies were billed: their tokens are counted, apart
    // from the answer's own, and in the client's totals.
    assert!(done.discarded_usage.input_tokens >= 2 * done.response.usage.input_tokens);
    assert_eq!(
        client.stats().input_tokens,
        done.response.usage.input_tokens + done.discarded_usage.input_tokens
    );
    // The good reply was cached, so the next call is served from it.
    let again = client.chat_checked(&request, None, Some(&usable)).await.unwrap();
    assert!(again.from_cache);

    // Unusable every time: the failure says how many attempts were made,
    // as the message does, and the last reply is kept.
    let other = ChatRequest::new(vec![Message::user("other")]);
    server.script(std::iter::repeat_n(Fault::EmptyReply, 6));
    let failure = client
        .chat_checked(&other, None, Some(&usable))
        .await
        .unwrap_err();
    assert_eq!(failure.attempts, 6);
    assert!(failure.discarded_usage.input_tokens > 0, "six billed replies");
    assert!(
        failure.error.to_string().contains("after 6 attempts"),
        "{}",
        failure.error
    );
    let (status, _) = failure.error.unusable().expect("unusable");
    assert_eq!(status, "empty");
    // Nothing unusable was cached: a later call goes to the model and succeeds.
    let requests = server.requests();
    let done = client.chat_checked(&other, None, Some(&usable)).await.unwrap();
    assert!(!done.from_cache);
    assert_eq!(server.requests(), requests + 1);
    // A terminal error after one attempt says 1.
    server.script([Fault::BadRequest]);
    let failure = client
        .chat_checked(&ChatRequest::new(vec![Message::user("x")]), None, Some(&usable))
        .await
        .unwrap_err();
    assert_eq!(failure.attempts, 1);
}

#[tokio::test]
async fn injected_refusals_and_truncations_carry_their_finish_reasons() {
    let server = server(ServerConfig::default()).await;
    let client = client_builder(openai_config(&server, "vllm/test-model", None))
        .build()
        .unwrap();
    server.script([Fault::Length, Fault::Refusal, Fault::EmptyReply]);
    let request = ChatRequest::new(vec![Message::user("a long enough question")]);
    let cut = client.chat(&request).await.unwrap();
    assert_eq!(cut.response.finish_reason.as_deref(), Some("length"));
    assert_eq!(cut.response.text.as_deref(), Some("[test-model] a lo"));
    let refused = client.chat(&request).await.unwrap();
    assert_eq!(
        refused.response.text.as_deref(),
        Some(cfeval_model::testing::REFUSAL_TEXT)
    );
    let empty = client.chat(&request).await.unwrap();
    assert_eq!(empty.response.text.as_deref(), Some(""));
}

#[tokio::test]
async fn identical_requests_in_flight_at_once_make_one_call() {
    // A slow server, so that every request is in flight together.
    let server = server(ServerConfig {
        latency: Duration::from_millis(150),
        ..ServerConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = cfeval_model::ResponseCache::open(dir.path(), false).unwrap();
    let client = client_builder(openai_config(&server, "vllm/test-model", None))
        .cache(cache)
        .build()
        .unwrap();
    let same = ChatRequest::new(vec![Message::user("same chart")]);
    let other = ChatRequest::new(vec![Message::user("another chart")]);
    let requests = [same.clone(), same.clone(), same, other];
    let done = join_all(requests.into_iter().map(|request| {
        let client = client.clone();
        async move { client.chat(&request).await.unwrap() }
    }))
    .await;
    assert_eq!(server.requests(), 2, "one call per distinct request");
    assert_eq!(done.iter().filter(|done| done.from_cache).count(), 2);
    assert_eq!(done[0].response.text, done[1].response.text);
}
