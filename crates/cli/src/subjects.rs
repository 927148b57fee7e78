//! Building subjects (and judge models) from their names.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use cfeval_embedded::{EmbeddedBackend, Options};
use cfeval_infer::{Control, Subject};
use cfeval_model::{Blocking, Journal, Limits, ModelClient, PriceTable, ResponseCache, SubjectSpec};
use cfeval_schema::vocab::{SubjectKind, SubjectName};

/// How to reach a model subject.
#[derive(Debug, Clone, Default)]
pub struct ModelSettings {
    pub base_url: Option<String>,
    pub cache_dir: Option<std::path::PathBuf>,
    pub journal: Option<std::path::PathBuf>,
    pub limits: Option<Limits>,
    /// Names the variable holding the key (never the key).
    pub api_key_env: Option<String>,
    /// Overrides the bundled price table.
    pub price: Option<cfeval_model::Price>,
}

impl ModelSettings {
    /// These settings with `concurrency` calls in flight for `name`: the
    /// one setting that decides it (`--concurrency`, a pipeline's
    /// `concurrency`) reaches the client's limiter, whose adaptive limit
    /// starts there and backs off on 429s. Limits given in full keep their
    /// own; the embedded model keeps its one call at a time.
    pub fn with_concurrency(mut self, name: &str, concurrency: usize) -> Self {
        if self.limits.is_none() && !SubjectKind::is_embedded(name) {
            self.limits = Some(Limits {
                max_concurrency: concurrency.max(1),
                ..Limits::default()
            });
        }
        self
    }
}

pub fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// How new cache entries are written: `CFEVAL_CACHE_LAYOUT` = `packed`
/// (the default) or `files` (one JSON file per entry, the earlier layout;
/// the benchmarks compare the two). Either layout is read.
fn cache_layout() -> anyhow::Result<cfeval_model::CacheLayout> {
    match std::env::var("CFEVAL_CACHE_LAYOUT") {
        Err(_) => Ok(cfeval_model::CacheLayout::Packed),
        Ok(text) => cfeval_model::CacheLayout::parse(&text)
            .with_context(|| format!("CFEVAL_CACHE_LAYOUT is `{text}`; it is `packed` or `files`")),
    }
}

/// A model client for `name` (`provider/model` or `embedded/<model>`), with
/// the run's response cache and call journal.
pub fn model_client(name: &str, run_dir: &Path, settings: &ModelSettings) -> anyhow::Result<ModelClient> {
    let cache_dir = settings
        .cache_dir
        .clone()
        .unwrap_or_else(|| run_dir.join("cache"));
    let cache = ResponseCache::open_with(&cache_dir, true, cache_layout()?)
        .with_context(|| format!("opening the response cache {}", cache_dir.display()))?;
    let journal_path = settings
        .journal
        .clone()
        .unwrap_or_else(|| run_dir.join("journal").join(format!("{}.jsonl", file_name(name))));
    let (journal, recovery) = Journal::open(&journal_path, true)?;
    tracing::debug!(?recovery, journal = %journal_path.display(), "opened call journal");
    let builder = if let SubjectKind::Embedded(model) = SubjectKind::of(name) {
        let backend = EmbeddedBackend::load(model, None, Options::default())?;
        // CPU-bound and already using every core: one call at a time, and no
        // network-style timeouts on a slow machine.
        let limits = settings.limits.clone().unwrap_or(Limits {
            max_concurrency: 1,
            adaptive: false,
            attempt_timeout_secs: 3600.0,
            total_timeout_secs: 3600.0,
            max_attempts: 1,
            ..Limits::default()
        });
        ModelClient::builder(Arc::new(Blocking::new(backend))).limits(limits)
    } else {
        // The model, its options (`+bias=…`, `+turns=…`) aside.
        let mut spec = SubjectSpec::new(SubjectName::model_of(name));
        spec.base_url = settings.base_url.clone();
        spec.api_key_env = settings.api_key_env.clone();
        spec.price = settings.price;
        if let Some(limits) = &settings.limits {
            spec.limits = limits.clone();
        }
        let config = spec.resolve()?;
        let prices = PriceTable::bundled()?;
        ModelClient::from_config(config, Some(&prices))?
    };
    Ok(builder.cache(cache).journal(journal).build()?)
}

/// The subject named `name`.
pub fn subject(name: &str, run_dir: &Path, settings: &ModelSettings) -> anyhow::Result<Subject> {
    if SubjectKind::is_control(name) {
        let guidelines = cfeval_guidelines::Guidelines::builtin()?;
        return Ok(Subject::Control(Control::parse(name, guidelines)?));
    }
    let client = model_client(name, run_dir, settings)?;
    let native_tools = !SubjectKind::is_embedded(name);
    Ok(Subject::Model {
        name: name.to_string(),
        client,
        native_tools,
    })
}
