//! No API key ever reaches a cache entry, a journal line, a log line, a Debug output or
//! an error message, even when the server echoes it back.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use cfeval_model::testing::{Fault, FaultRates, ServerConfig};
use cfeval_model::{ChatRequest, Journal, Limits, Message, ResponseCache, SubjectSpec};

use crate::support::{anthropic_config, client_builder, fast_limits, openai_config, server};

const GOOD_KEY: &str = "sk-cfeval-GOOD-5f2a9c1e7b";
const WRONG_KEY: &str = "sk-cfeval-WRONG-83d0c4aa91";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().expect("log buffer").extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn all_file_text(dir: &Path, out: &mut String) {
    for entry in std::fs::read_dir(dir).expect("dir").filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.is_dir() {
            all_file_text(&path, out);
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&path).expect("file")));
        }
    }
}

#[test]
fn keys_never_appear_in_files_logs_debug_or_errors() {
    let logs = Captured::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let dir = tempfile::tempdir().unwrap();
    let mut seen = String::new();
    tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let server = server(ServerConfig {
                require_key: Some(GOOD_KEY.into()),
                faults: FaultRates::mixed(0.3),
                seed: 5,
                ..ServerConfig::default()
            })
            .await;
            let (journal, _) = Journal::open(dir.path().join("calls.jsonl"), true).unwrap();
            let cache = ResponseCache::open(dir.path().join("cache"), false).unwrap();
            let limits = Limits {
                attempt_timeout_secs: 0.3,
                ..fast_limits()
            };
            for (config, label) in [
                (openai_config(&server, "vllm/m", Some(GOOD_KEY)), "openai good"),
                (
                    anthropic_config(&server, "anthropic/c", Some(GOOD_KEY)),
                    "anthropic good",
                ),
                (openai_config(&server, "vllm/m", Some(WRONG_KEY)), "openai wrong"),
                (
                    anthropic_config(&server, "anthropic/c", Some(WRONG_KEY)),
                    "anthropic wrong",
                ),
            ] {
                seen.push_str(&format!("{config:?}\n"));
                let client = client_builder(config)
                    .limits(limits.clone())
                    .cache(cache.clone())
                    .journal(journal.clone())
                    .build()
                    .unwrap();
                seen.push_str(&format!("{client:?}\n"));
                for index in 0..12 {
                    let request = ChatRequest::new(vec![Message::user(format!("{label} {index}"))]);
                    match client.chat(&request).await {
                        Ok(done) => seen.push_str(&format!("{done:?}\n")),
                        Err(err) => {
                            seen.push_str(&format!("{err}\n{err:?}\n"));
                            let mut source = std::error::Error::source(&err);
                            while let Some(cause) = source {
                                seen.push_str(&format!("{cause}\n"));
                                source = cause.source();
                            }
                        }
                    }
                }
            }
            // The server did see the wrong key, echoed it, and said 401.
            assert!(server.unauthorized() >= 24);
            server.script([Fault::ServerError]);
        });
    });
    assert!(seen.contains("401"), "the wrong key was refused");
    assert!(seen.contains("<redacted>"), "the echoed key was redacted");

    // Resolution errors name the variable, never a value.
    let lookup = |name: &str| (name == "OPENAI_API_KEY").then(|| GOOD_KEY.to_string());
    let config = SubjectSpec::new("openai/gpt-5").resolve_with(&lookup).unwrap();
    seen.push_str(&format!("{config:?}\n"));

    let mut files = String::new();
    all_file_text(dir.path(), &mut files);
    assert!(files.contains("[m] openai good"), "the files hold the answers");
    let logs = String::from_utf8_lossy(&logs.0.lock().unwrap()).to_string();
    assert!(logs.contains("attempt failed"), "the logs were captured");
    for key in [GOOD_KEY, WRONG_KEY] {
        assert!(!files.contains(key), "a key is in the cache or journal");
        assert!(!logs.contains(key), "a key is in the logs");
        assert!(!seen.contains(key), "a key is in Debug output or an error");
    }
}
