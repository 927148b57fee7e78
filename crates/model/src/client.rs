//! [`ModelClient`]: one subject's backend behind sweep-scale I/O — admission (adaptive
//! concurrency, requests and tokens per minute), retries with backoff honouring
//! `Retry-After`, per-attempt and total timeouts, the response cache, the journal, and
//! token and cost accounting.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::backend::{BackendIdentity, ChatBackend, http_backend};
use crate::cache::{CacheKey, ResponseCache};
use crate::error::{Error, Result};
use crate::journal::{CallOutcome, Journal, JournalRecord, unix_ms};
use crate::limit::{ConcurrencyLimiter, Limits, Signal, TokenBucket};
use crate::price::{Price, PriceTable};
use crate::retry::{Jitter, retry_delay};
use crate::subject::BackendConfig;
use crate::types::{ChatRequest, ChatResponse, Usage};

/// Output tokens assumed for the tokens-per-minute reservation when a request sets no
/// `max_tokens` (corrected by the real usage afterwards).
const DEFAULT_OUTPUT_ESTIMATE: u64 = 1024;

/// A finished call.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub response: ChatResponse,
    pub cache_key: CacheKey,
    /// Served from the response cache: no request was made, nothing was spent.
    pub from_cache: bool,
    /// Network attempts made (0 when from the cache).
    pub attempts: u32,
    /// Time from the first admission to the answer (zero when from the cache).
    pub latency: Duration,
    /// What the response cost when it was made (the price table's rate × its
    /// usage), with the replies retried as unusable before it.
    pub cost_usd: Option<f64>,
    /// Tokens of the replies the caller's check refused before this one
    /// (spent, billed, and not in `response.usage`).
    pub discarded_usage: Usage,
}

/// What a caller's [`ReplyCheck`] says of a reply it cannot use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unusable {
    /// A short word for what is wrong (the caller's vocabulary, e.g. `empty`).
    pub status: &'static str,
    /// What exactly, for the error message.
    pub detail: String,
}

/// Says whether a 200 reply can be used. See [`ModelClient::chat_checked`].
pub type ReplyCheck = dyn Fn(&ChatResponse) -> std::result::Result<(), Unusable> + Send + Sync;

/// A call that ended without a usable reply: the error and the true
/// number of HTTP attempts it made (0 when none could start).
#[derive(Debug)]
pub struct CallFailure {
    pub error: Error,
    pub attempts: u32,
    pub latency: Duration,
    /// Tokens of the replies the caller's check refused (spent all the same).
    pub discarded_usage: Usage,
    /// Their cost at the price table's rate.
    pub discarded_cost_usd: Option<f64>,
}

/// Counters over the life of a client (all clones together).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct ClientStats {
    /// `chat` calls that returned.
    pub calls: u64,
    pub succeeded: u64,
    pub failed: u64,
    pub cache_hits: u64,
    /// HTTP attempts sent (retries included).
    pub attempts: u64,
    pub retries: u64,
    pub rate_limited: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Spent on network calls (cache hits cost nothing).
    pub cost_usd: f64,
    /// The adaptive concurrency limit now.
    pub concurrency_limit: usize,
}

#[derive(Debug, Default)]
struct Counters {
    calls: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
    cache_hits: AtomicU64,
    attempts: AtomicU64,
    retries: AtomicU64,
    rate_limited: AtomicU64,
    input_tokens: AtomicU64,
    output_tokens: AtomicU64,
    /// USD × 10⁹.
    cost_nano_usd: AtomicU64,
}

impl Counters {
    /// Counts an answer's tokens and cost.
    fn spend(&self, usage: &Usage, cost_usd: Option<f64>) {
        self.input_tokens.fetch_add(usage.input_tokens, Ordering::Relaxed);
        self.output_tokens
            .fetch_add(usage.output_tokens, Ordering::Relaxed);
        if let Some(cost) = cost_usd {
            self.cost_nano_usd
                .fetch_add((cost * 1e9).round() as u64, Ordering::Relaxed);
        }
    }
}

/// A subject ready for a sweep. Cheap to clone; clones share limits, cache, journal and
/// counters, so one client per endpoint bounds that endpoint's load.
#[derive(Clone)]
pub struct ModelClient {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Arc<dyn ChatBackend>,
    limits: Limits,
    concurrency: ConcurrencyLimiter,
    requests_per_minute: Option<TokenBucket>,
    tokens_per_minute: Option<TokenBucket>,
    cache: Option<ResponseCache>,
    journal: Option<Journal>,
    price: Option<Price>,
    counters: Counters,
    jitter_seed: AtomicU64,
    /// Calls in flight by cache key: a second identical request waits for
    /// the first and is then served from the cache (one model call).
    in_flight: InFlight,
}

/// Per-key locks of the requests being answered.
type InFlight = std::sync::Mutex<std::collections::HashMap<CacheKey, Arc<tokio::sync::Mutex<()>>>>;

/// One caller's claim on a key's lock; the last claim removes the entry.
struct Claim<'a> {
    map: &'a InFlight,
    key: CacheKey,
    slot: Arc<tokio::sync::Mutex<()>>,
}

impl<'a> Claim<'a> {
    fn new(map: &'a InFlight, key: CacheKey) -> Self {
        let slot = map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        Self { map, key, slot }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        let mut map = self.map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // The map's and this claim's: no one else waits on the key.
        if Arc::strong_count(&self.slot) <= 2 {
            map.remove(&self.key);
        }
    }
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient")
            .field("identity", self.identity())
            .field("limits", &self.inner.limits)
            .field("cache", &self.inner.cache.as_ref().map(ResponseCache::dir))
            .field("journal", &self.inner.journal.as_ref().map(Journal::path))
            .field("price", &self.inner.price)
            .finish()
    }
}

/// Builds a [`ModelClient`].
pub struct ModelClientBuilder {
    backend: Arc<dyn ChatBackend>,
    limits: Limits,
    cache: Option<ResponseCache>,
    journal: Option<Journal>,
    price: Option<Price>,
}

impl ModelClientBuilder {
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    pub fn cache(mut self, cache: ResponseCache) -> Self {
        self.cache = Some(cache);
        self
    }

    pub fn journal(mut self, journal: Journal) -> Self {
        self.journal = Some(journal);
        self
    }

    pub fn price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    pub fn build(self) -> Result<ModelClient> {
        self.limits.validate()?;
        let limits = self.limits;
        Ok(ModelClient {
            inner: Arc::new(Inner {
                concurrency: ConcurrencyLimiter::new(limits.max_concurrency, limits.adaptive),
                requests_per_minute: limits
                    .requests_per_minute
                    .map(|n| TokenBucket::per_minute(f64::from(n))),
                tokens_per_minute: limits
                    .tokens_per_minute
                    .map(|n| TokenBucket::per_minute(n as f64)),
                backend: self.backend,
                limits,
                cache: self.cache,
                journal: self.journal,
                price: self.price,
                counters: Counters::default(),
                jitter_seed: AtomicU64::new(0),
                in_flight: InFlight::default(),
            }),
        })
    }
}

impl ModelClient {
    /// Starts a builder for any backend (HTTP, blocking, a test double).
    pub fn builder(backend: Arc<dyn ChatBackend>) -> ModelClientBuilder {
        ModelClientBuilder {
            backend,
            limits: Limits::default(),
            cache: None,
            journal: None,
            price: None,
        }
    }

    /// A builder for the HTTP backend of `config`, with its limits and its price (the
    /// override, else `prices`' entry for the subject).
    pub fn from_config(config: BackendConfig, prices: Option<&PriceTable>) -> Result<ModelClientBuilder> {
        let price = config
            .price
            .or_else(|| prices.and_then(|table| table.lookup(&config.subject)));
        let limits = config.limits.clone();
        Ok(Self::builder(http_backend(config)?).limits(limits).price(price))
    }

    pub fn identity(&self) -> &BackendIdentity {
        self.inner.backend.identity()
    }

    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The cache key `request` has for this subject.
    pub fn cache_key(&self, request: &ChatRequest) -> Result<CacheKey> {
        CacheKey::new(self.identity(), request)
    }

    /// The backend's batch endpoints, if it has them ([`crate::batch`]).
    pub fn batch_backend(&self) -> Option<&dyn crate::backend::batch::BatchBackend> {
        self.inner.backend.batch()
    }

    /// The response cache, if the client has one.
    pub fn response_cache(&self) -> Option<&ResponseCache> {
        self.inner.cache.as_ref()
    }

    /// The price per token, if known.
    pub fn price(&self) -> Option<Price> {
        self.inner.price
    }

    /// Records an answer made outside [`Self::chat`] (a batch result) as a
    /// live call would: into the response cache and the journal (attempts
    /// 1, `cost_usd` the given one), and into the client's counters.
    pub async fn record_answer(
        &self,
        key: &CacheKey,
        tag: Option<&str>,
        response: &ChatResponse,
        cost_usd: Option<f64>,
    ) -> Result<()> {
        let inner = &self.inner;
        inner.counters.spend(&response.usage, cost_usd);
        if let Some(cache) = &inner.cache {
            cache.put(key, self.identity(), response).await?;
        }
        if let Some(journal) = &inner.journal {
            let identity = self.identity();
            journal
                .append(&JournalRecord {
                    key: key.to_hex(),
                    subject: identity.subject.clone(),
                    model: identity.model.clone(),
                    tag: tag.map(str::to_string),
                    unix_ms: unix_ms(),
                    attempts: 1,
                    latency_ms: 0,
                    outcome: CallOutcome::Ok {
                        response: response.clone(),
                        cost_usd,
                    },
                })
                .await?;
        }
        Ok(())
    }

    pub fn stats(&self) -> ClientStats {
        let counters = &self.inner.counters;
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        ClientStats {
            calls: load(&counters.calls),
            succeeded: load(&counters.succeeded),
            failed: load(&counters.failed),
            cache_hits: load(&counters.cache_hits),
            attempts: load(&counters.attempts),
            retries: load(&counters.retries),
            rate_limited: load(&counters.rate_limited),
            input_tokens: load(&counters.input_tokens),
            output_tokens: load(&counters.output_tokens),
            cost_usd: load(&counters.cost_nano_usd) as f64 / 1e9,
            concurrency_limit: self.inner.concurrency.current_limit(),
        }
    }

    /// One chat call with everything a sweep needs. See [`Self::chat_tagged`].
    pub async fn chat(&self, request: &ChatRequest) -> Result<Completion> {
        self.chat_tagged(request, None).await
    }

    /// One chat call: from the cache if it holds the answer; else through admission,
    /// attempts with retries, then into the cache and the journal. `tag` labels the
    /// journal record (e.g. the case and variant the call is for).
    ///
    /// Every call ends either with a response or with a terminal error, and each
    /// network-made call (success or terminal error) is journaled exactly once.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subject = %self.identity().subject, tag = tag.unwrap_or_default())
    )]
    pub async fn chat_tagged(&self, request: &ChatRequest, tag: Option<&str>) -> Result<Completion> {
        self.chat_checked(request, tag, None)
            .await
            .map_err(|failure| failure.error)
    }

    /// [`Self::chat_tagged`] with a check of every reply, and on failure the
    /// attempts made.
    ///
    /// A reply `check` refuses ([`Error::Unusable`]) is retried like a
    /// transient error, within the same `max_attempts` and total timeout.
    /// Unusable replies are never cached, and a cached reply the check
    /// refuses is not served (the call goes to the model): a retry keyed like
    /// the first call would otherwise be answered from the cache with the same
    /// bad reply, and a cache must only ever save calls, never decide answers.
    /// Keying the retry differently instead would leave the bad reply in the
    /// cache for every later run to trip over.
    pub async fn chat_checked(
        &self,
        request: &ChatRequest,
        tag: Option<&str>,
        check: Option<&ReplyCheck>,
    ) -> std::result::Result<Completion, CallFailure> {
        let result = self.chat_inner(request, tag, check).await;
        let counters = &self.inner.counters;
        counters.calls.fetch_add(1, Ordering::Relaxed);
        match &result {
            Ok(_) => counters.succeeded.fetch_add(1, Ordering::Relaxed),
            Err(_) => counters.failed.fetch_add(1, Ordering::Relaxed),
        };
        result
    }

    async fn chat_inner(
        &self,
        request: &ChatRequest,
        tag: Option<&str>,
        check: Option<&ReplyCheck>,
    ) -> std::result::Result<Completion, CallFailure> {
        let inner = &self.inner;
        let not_started = |error| CallFailure {
            error,
            attempts: 0,
            latency: Duration::ZERO,
            discarded_usage: Usage::default(),
            discarded_cost_usd: None,
        };
        let key = self.cache_key(request).map_err(not_started)?;
        // With a cache, identical requests in flight at once make one call:
        // the later ones wait for the first, then read its cached reply.
        let claim = inner.cache.as_ref().map(|_| Claim::new(&inner.in_flight, key));
        let _turn = match &claim {
            Some(claim) => Some(claim.slot.clone().lock_owned().await),
            None => None,
        };
        if let Some(cache) = &inner.cache {
            match cache.get(&key).await {
                Ok(Some(response)) if check.is_some_and(|check| check(&response).is_err()) => {
                    tracing::debug!("cached reply is unusable; calling the model");
                }
                Ok(Some(response)) => {
                    inner.counters.cache_hits.fetch_add(1, Ordering::Relaxed);
                    let cost_usd = inner.price.map(|price| price.cost(&response.usage));
                    return Ok(Completion {
                        response,
                        cache_key: key,
                        from_cache: true,
                        attempts: 0,
                        latency: Duration::ZERO,
                        cost_usd,
                        discarded_usage: Usage::default(),
                    });
                }
                Ok(None) => {}
                Err(err) => tracing::warn!(error = %err, "response cache unreadable; calling the model"),
            }
        }
        let (result, attempts, latency, discarded) = self.call_with_retries(request, check).await;
        // Unusable replies were made and billed: counted like any other.
        let discarded_cost = inner.price.map(|price| price.cost(&discarded));
        inner
            .counters
            .input_tokens
            .fetch_add(discarded.input_tokens, Ordering::Relaxed);
        inner
            .counters
            .output_tokens
            .fetch_add(discarded.output_tokens, Ordering::Relaxed);
        if let Some(cost) = discarded_cost {
            inner
                .counters
                .cost_nano_usd
                .fetch_add((cost * 1e9).round() as u64, Ordering::Relaxed);
        }
        let identity = self.identity();
        let outcome = match &result {
            Ok(response) => {
                let cost_usd = inner.price.map(|price| price.cost(&response.usage));
                inner.counters.spend(&response.usage, cost_usd);
                if let Some(cache) = &inner.cache
                    && let Err(err) = cache.put(&key, identity, response).await
                {
                    tracing::warn!(error = %err, "could not store a response in the cache");
                }
                CallOutcome::Ok {
                    response: response.clone(),
                    cost_usd,
                }
            }
            Err(err) => CallOutcome::Error {
                kind: err.kind().to_string(),
                message: err.full_message(),
            },
        };
        if let Some(journal) = &inner.journal {
            let record = JournalRecord {
                key: key.to_hex(),
                subject: identity.subject.clone(),
                model: identity.model.clone(),
                tag: tag.map(str::to_string),
                unix_ms: unix_ms(),
                attempts,
                latency_ms: latency.as_millis() as u64,
                outcome,
            };
            if let Err(error) = journal.append(&record).await {
                return Err(CallFailure {
                    error,
                    attempts,
                    latency,
                    discarded_usage: discarded,
                    discarded_cost_usd: discarded_cost,
                });
            }
        }
        let response = result.map_err(|error| CallFailure {
            error,
            attempts,
            latency,
            discarded_usage: discarded,
            discarded_cost_usd: discarded_cost,
        })?;
        let cost_usd = inner
            .price
            .map(|price| price.cost(&response.usage) + discarded_cost.unwrap_or(0.0));
        Ok(Completion {
            response,
            cache_key: key,
            from_cache: false,
            attempts,
            latency,
            cost_usd,
            discarded_usage: discarded,
        })
    }

    /// Attempts until success, a terminal error, `max_attempts`, or the total timeout.
    async fn call_with_retries(
        &self,
        request: &ChatRequest,
        check: Option<&ReplyCheck>,
    ) -> (Result<ChatResponse>, u32, Duration, Usage) {
        let inner = &self.inner;
        let limits = &inner.limits;
        let endpoint = self.identity().subject.clone();
        let mut jitter = Jitter::from_clock(inner.jitter_seed.fetch_add(1, Ordering::Relaxed));
        let estimated_tokens = request.estimated_input_tokens()
            + request
                .params
                .max_tokens
                .map_or(DEFAULT_OUTPUT_ESTIMATE, u64::from);
        let total = limits.total_timeout();
        let mut started: Option<Instant> = None;
        let mut attempts = 0u32;
        let mut discarded = Usage::default();
        loop {
            let permit = inner.concurrency.acquire().await;
            let start = *started.get_or_insert_with(Instant::now);
            if let Some(bucket) = &inner.requests_per_minute {
                bucket.acquire(1.0).await;
            }
            if let Some(bucket) = &inner.tokens_per_minute {
                bucket.acquire(estimated_tokens as f64).await;
            }
            let remaining = total.saturating_sub(start.elapsed());
            if remaining.is_zero() {
                permit.finish(Signal::Neutral);
                let err = Error::TotalTimeout {
                    endpoint,
                    after: start.elapsed(),
                    last: "no attempt could start in time".into(),
                };
                return (Err(err), attempts, start.elapsed(), discarded);
            }
            attempts += 1;
            inner.counters.attempts.fetch_add(1, Ordering::Relaxed);
            let attempt_limit = limits.attempt_timeout().min(remaining);
            let outcome = match tokio::time::timeout(attempt_limit, inner.backend.send(request)).await {
                Ok(outcome) => outcome,
                Err(_) => Err(Error::AttemptTimeout {
                    endpoint: endpoint.clone(),
                    after: attempt_limit,
                }),
            };
            let err = match outcome {
                Ok(response) => {
                    permit.finish(Signal::Success);
                    if let Some(bucket) = &inner.tokens_per_minute {
                        bucket.adjust(estimated_tokens as f64 - response.usage.total() as f64);
                    }
                    match check.map_or(Ok(()), |check| check(&response)) {
                        Ok(()) => return (Ok(response), attempts, start.elapsed(), discarded),
                        Err(Unusable { status, detail }) => {
                            discarded.add(&response.usage);
                            Error::Unusable {
                                endpoint: endpoint.clone(),
                                status,
                                detail,
                                response: Box::new(response),
                            }
                        }
                    }
                }
                Err(err) => {
                    if err.is_rate_limit() {
                        inner.counters.rate_limited.fetch_add(1, Ordering::Relaxed);
                        permit.finish(Signal::RateLimited);
                    } else {
                        permit.finish(Signal::Neutral);
                    }
                    if let Some(bucket) = &inner.tokens_per_minute {
                        // A failed attempt used (at most) its prompt; give back the output share.
                        bucket.adjust((estimated_tokens - request.estimated_input_tokens()) as f64);
                    }
                    err
                }
            };
            tracing::debug!(subject = %endpoint, attempt = attempts, error = %err, "attempt failed");
            if !err.is_retryable() {
                return (Err(err), attempts, start.elapsed(), discarded);
            }
            if attempts >= limits.max_attempts {
                let err = Error::RetriesExhausted {
                    endpoint,
                    attempts,
                    last: Box::new(err),
                };
                return (Err(err), attempts, start.elapsed(), discarded);
            }
            let delay = retry_delay(limits, attempts, err.retry_after(), &mut jitter);
            if start.elapsed() + delay >= total {
                // No time left to retry an unusable reply: the row keeps the
                // reply's own status, not a generic timeout.
                if err.unusable().is_some() {
                    return (Err(err), attempts, start.elapsed(), discarded);
                }
                let err = Error::TotalTimeout {
                    endpoint,
                    after: start.elapsed(),
                    last: err.full_message(),
                };
                return (Err(err), attempts, start.elapsed(), discarded);
            }
            inner.counters.retries.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(delay).await;
        }
    }
}
