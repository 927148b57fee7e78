//! The answers: deterministic OpenAI and Anthropic response bodies.

use serde_json::{Value, json};

use super::Responder;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Protocol {
    OpenAi,
    Anthropic,
}

/// The text of the last user turn (string content or text blocks).
fn last_user_text(messages: &[Value]) -> String {
    for message in messages.iter().rev() {
        if message.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        match message.get("content") {
            Some(Value::String(text)) => return text.clone(),
            Some(Value::Array(blocks)) => {
                let texts: Vec<&str> = blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect();
                if !texts.is_empty() {
                    return texts.join("");
                }
            }
            _ => {}
        }
    }
    String::new()
}

/// Whether any tool result has come back already.
fn has_tool_result(protocol: Protocol, messages: &[Value]) -> bool {
    messages.iter().any(|message| match protocol {
        Protocol::OpenAi => message.get("role").and_then(Value::as_str) == Some("tool"),
        Protocol::Anthropic => message
            .get("content")
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            }),
    })
}

pub(super) fn reply(
    protocol: Protocol,
    body: &Value,
    model: &str,
    bad_tool_json: bool,
    responder: Option<&Responder>,
) -> Value {
    let empty = Vec::new();
    let messages = body.get("messages").and_then(Value::as_array).unwrap_or(&empty);
    let user = last_user_text(messages);
    let tools = body.get("tools").and_then(Value::as_array).unwrap_or(&empty);
    let forced = match protocol {
        Protocol::OpenAi => body["tool_choice"]["function"]["name"].as_str(),
        Protocol::Anthropic => body["tool_choice"]["name"].as_str(),
    };
    let first_tool = tools.first().and_then(|tool| match protocol {
        Protocol::OpenAi => tool["function"]["name"].as_str(),
        Protocol::Anthropic => tool["name"].as_str(),
    });
    let tool = forced
        .or(first_tool)
        .filter(|_| !has_tool_result(protocol, messages));
    let text = match responder {
        Some(responder) => responder(model, &user),
        None => format!("[{model}] {user}"),
    };
    let prompt_tokens = (body.to_string().len() / 4) as u64;
    let arguments = if bad_tool_json {
        format!("{{\"query\": \"{}", user.replace('"', ""))
    } else {
        json!({"query": user}).to_string()
    };
    match protocol {
        Protocol::OpenAi => {
            let (message, finish) = match tool {
                Some(name) => (
                    json!({"role": "assistant", "content": null, "tool_calls": [{
                        "id": "call_0", "type": "function",
                        "function": {"name": name, "arguments": arguments}
                    }]}),
                    "tool_calls",
                ),
                None => (json!({"role": "assistant", "content": text}), "stop"),
            };
            json!({
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": (text.len() / 4 + 1) as u64,
                    "total_tokens": prompt_tokens + (text.len() / 4 + 1) as u64,
                }
            })
        }
        Protocol::Anthropic => {
            let (content, stop) = match tool {
                Some(name) => {
                    // Anthropic sends `input` as an object; broken JSON cannot happen there.
                    let input = if bad_tool_json {
                        json!({"query": Value::Null})
                    } else {
                        json!({"query": user})
                    };
                    (
                        json!([{"type": "tool_use", "id": "toolu_0", "name": name, "input": input}]),
                        "tool_use",
                    )
                }
                None => (json!([{"type": "text", "text": text}]), "end_turn"),
            };
            json!({
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": content,
                "stop_reason": stop,
                "usage": {"input_tokens": prompt_tokens, "output_tokens": (text.len() / 4 + 1) as u64}
            })
        }
    }
}
