//! The Anthropic Messages backend over HTTP.

use cfeval_model::testing::{Fault, ServerConfig};
use cfeval_model::{ChatParams, ChatRequest, Message, ResponseFormat, ToolSpec};
use serde_json::json;

use crate::support::{anthropic_config, client_builder, server};

const KEY: &str = "sk-ant-test-0123456789";

#[tokio::test]
async fn answers_text_and_sends_key_and_version_headers() {
    let server = server(ServerConfig {
        require_key: Some(KEY.into()),
        ..ServerConfig::default()
    })
    .await;
    let client = client_builder(anthropic_config(&server, "anthropic/claude-test", Some(KEY)))
        .build()
        .unwrap();
    let request =
        ChatRequest::new(vec![Message::system("sys"), Message::user("hello")]).with_params(ChatParams {
            temperature: Some(0.0),
            seed: Some(3),
            ..ChatParams::default()
        });
    let done = client.chat(&request).await.unwrap();
    assert_eq!(done.response.text.as_deref(), Some("[claude-test] hello"));
    assert_eq!(done.response.finish_reason.as_deref(), Some("end_turn"));
    assert!(done.response.usage.output_tokens > 0);
    assert_eq!(server.unauthorized(), 0);
    let body = server.last_body().unwrap();
    assert_eq!(body["system"], "sys");
    assert_eq!(body["temperature"], 0.0);
    assert!(body.get("seed").is_none());
}

#[tokio::test]
async fn tool_use_round_trips_and_rate_limits_are_retried() {
    let server = server(ServerConfig::default()).await;
    server.script([Fault::RateLimited {
        retry_after: Some("0".into()),
    }]);
    let client = client_builder(anthropic_config(&server, "anthropic/claude-test", Some(KEY)))
        .build()
        .unwrap();
    let tools = vec![ToolSpec {
        name: "list_chart_sections".into(),
        description: "List sections".into(),
        parameters: json!({"type": "object"}),
    }];
    let mut messages = vec![Message::user("plan?")];
    let first = client
        .chat(&ChatRequest::new(messages.clone()).with_tools(tools.clone()))
        .await
        .unwrap();
    assert_eq!(first.attempts, 2);
    let call = first.response.tool_calls[0].clone();
    assert_eq!(
        (call.name.as_str(), call.id.as_str()),
        ("list_chart_sections", "toolu_0")
    );
    assert_eq!(call.arguments_json().unwrap(), json!({"query": "plan?"}));
    messages.push(Message::from_response(&first.response));
    messages.push(Message::tool_result(&call.id, "history, labs"));
    let second = client
        .chat(&ChatRequest::new(messages).with_tools(tools))
        .await
        .unwrap();
    assert_eq!(second.response.text.as_deref(), Some("[claude-test] plan?"));
    let body = server.last_body().unwrap();
    assert_eq!(body["messages"][2]["content"][0]["type"], "tool_result");
    assert_eq!(body["messages"][2]["content"][0]["tool_use_id"], "toolu_0");
}

#[tokio::test]
async fn json_schema_output_comes_back_as_text() {
    let server = server(ServerConfig::default()).await;
    let client = client_builder(anthropic_config(&server, "anthropic/judge", Some(KEY)))
        .build()
        .unwrap();
    let request = ChatRequest::new(vec![Message::user("score it")]).with_params(ChatParams {
        response_format: Some(ResponseFormat::JsonSchema {
            name: "verdict".into(),
            schema: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            strict: true,
        }),
        ..ChatParams::default()
    });
    let done = client.chat(&request).await.unwrap();
    assert!(done.response.tool_calls.is_empty());
    let parsed: serde_json::Value = serde_json::from_str(done.response.text.as_deref().unwrap()).unwrap();
    assert_eq!(parsed, json!({"query": "score it"}));
}

#[tokio::test]
async fn a_responder_sets_the_answer_text_for_both_protocols() {
    let responder: cfeval_model::testing::Responder =
        std::sync::Arc::new(|model: &str, user: &str, _seed: Option<u64>| {
            format!("{{\"model\":\"{model}\",\"len\":{}}}", user.len())
        });
    let server = server(ServerConfig {
        responder: Some(responder),
        ..ServerConfig::default()
    })
    .await;
    let request = ChatRequest::new(vec![Message::user("abc")]);
    for config in [
        server.anthropic_config("anthropic/judge-a").unwrap(),
        server.openai_config("vllm/judge-b").unwrap(),
    ] {
        let model = config.model.clone();
        let client = client_builder(config).build().unwrap();
        let done = client.chat(&request).await.unwrap();
        let parsed: serde_json::Value = serde_json::from_str(done.response.text.as_deref().unwrap()).unwrap();
        assert_eq!(parsed, json!({"model": model, "len": 3}));
    }
}
