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

/// What kind of 200 to give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    Normal,
    /// Tool-call arguments that are not JSON (when a tool is called).
    BadToolJson,
    /// No text and no tool call.
    Empty,
    /// A refusal instead of an answer.
    Refusal,
    /// The answer cut in half, stopped by the token limit.
    Length,
}

/// The text of an injected refusal.
pub const REFUSAL_TEXT: &str =
    "I'm sorry, but I can't help with that. As an AI language model, I cannot provide medical advice.";

pub(super) fn reply(
    protocol: Protocol,
    body: &Value,
    model: &str,
    answer: Answer,
    responder: Option<&Responder>,
) -> Value {
    let bad_tool_json = answer == Answer::BadToolJson;
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
        .filter(|_| !has_tool_result(protocol, messages))
        .filter(|_| matches!(answer, Answer::Normal | Answer::BadToolJson));
    let mut text = match responder {
        Some(responder) => responder(model, &user, body.get("seed").and_then(Value::as_u64)),
        None => format!("[{model}] {user}"),
    };
    let mut stopped = "stop";
    match answer {
        Answer::Empty => text = String::new(),
        Answer::Refusal => text = REFUSAL_TEXT.to_string(),
        Answer::Length => {
            let mut cut = text.len() / 2;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            stopped = "length";
        }
        Answer::Normal | Answer::BadToolJson => {}
    }
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
                None => (json!({"role": "assistant", "content": text}), stopped),
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
                None => (
                    json!([{"type": "text", "text": text}]),
                    if stopped == "length" {
                        "max_tokens"
                    } else {
                        "end_turn"
                    },
                ),
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
