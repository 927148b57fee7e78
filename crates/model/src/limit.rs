//! Admission control for one endpoint: a concurrency limit that adapts to 429s (AIMD)
//! and token buckets for requests and tokens per minute.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::error::{Error, Result};

/// Limits, timeouts and the retry policy of one subject.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "kebab-case")]
pub struct Limits {
    /// Most calls in flight at once.
    pub max_concurrency: usize,
    /// Halve the concurrency on a 429 and grow it back by one per window of successes.
    pub adaptive: bool,
    pub requests_per_minute: Option<u32>,
    /// Prompt plus completion tokens per minute (prompt estimated before, corrected after).
    pub tokens_per_minute: Option<u64>,
    /// One attempt, from sending to the last byte of the body.
    pub attempt_timeout_secs: f64,
    /// All attempts and the waits between them (queueing for admission not included).
    pub total_timeout_secs: f64,
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// First backoff delay; doubles each retry, with jitter.
    pub backoff_base_secs: f64,
    pub backoff_max_secs: f64,
    /// A server's `Retry-After` is honoured up to this long.
    pub max_retry_after_secs: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_concurrency: 32,
            adaptive: true,
            requests_per_minute: None,
            tokens_per_minute: None,
            attempt_timeout_secs: 300.0,
            total_timeout_secs: 1800.0,
            max_attempts: 8,
            backoff_base_secs: 1.0,
            backoff_max_secs: 60.0,
            max_retry_after_secs: 300.0,
        }
    }
}

impl Limits {
    /// Checks that every number is usable.
    pub fn validate(&self) -> Result<()> {
        let invalid = |what: &str, reason: &str| {
            Err(Error::InvalidSetting {
                what: format!("limits.{what}"),
                reason: reason.to_string(),
            })
        };
        if self.max_concurrency == 0 {
            return invalid("max-concurrency", "must be at least 1");
        }
        if self.max_attempts == 0 {
            return invalid("max-attempts", "must be at least 1");
        }
        if self.requests_per_minute == Some(0) || self.tokens_per_minute == Some(0) {
            return invalid("requests/tokens-per-minute", "must be positive when set");
        }
        for (what, value) in [
            ("attempt-timeout-secs", self.attempt_timeout_secs),
            ("total-timeout-secs", self.total_timeout_secs),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return invalid(what, "must be a positive number of seconds");
            }
        }
        for (what, value) in [
            ("backoff-base-secs", self.backoff_base_secs),
            ("backoff-max-secs", self.backoff_max_secs),
            ("max-retry-after-secs", self.max_retry_after_secs),
        ] {
            if !(value.is_finite() && value >= 0.0) {
                return invalid(what, "must be a non-negative number of seconds");
            }
        }
        Ok(())
    }

    pub fn attempt_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.attempt_timeout_secs)
    }

    pub fn total_timeout(&self) -> Duration {
        Duration::from_secs_f64(self.total_timeout_secs)
    }
}

/// A concurrency limit between 1 and `max`, additive-increase / multiplicative-decrease.
#[derive(Debug)]
pub struct ConcurrencyLimiter {
    state: Mutex<LimiterState>,
    notify: Notify,
    max: usize,
    adaptive: bool,
}

#[derive(Debug)]
struct LimiterState {
    limit: f64,
    in_flight: usize,
    /// Bumped at each decrease: a 429 on a call admitted before the last decrease says
    /// nothing new about the current limit, so it does not halve it again.
    epoch: u64,
}

/// Outcome of a call, as the limiter sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Success,
    RateLimited,
    /// Any other failure: neither grows nor shrinks the limit.
    Neutral,
}

impl ConcurrencyLimiter {
    pub fn new(max: usize, adaptive: bool) -> Self {
        let max = max.max(1);
        ConcurrencyLimiter {
            state: Mutex::new(LimiterState {
                limit: max as f64,
                in_flight: 0,
                epoch: 0,
            }),
            notify: Notify::new(),
            max,
            adaptive,
        }
    }

    /// The current limit (whole calls).
    pub fn current_limit(&self) -> usize {
        self.lock().limit.floor() as usize
    }

    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LimiterState> {
        // The state is plain numbers, always consistent: a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn try_acquire(&self) -> Option<u64> {
        let mut state = self.lock();
        if (state.in_flight as f64) < state.limit.floor().max(1.0) {
            state.in_flight += 1;
            Some(state.epoch)
        } else {
            None
        }
    }

    /// Waits for a slot. The permit must be given back with [`Permit::finish`] (dropping
    /// it counts as [`Signal::Neutral`]).
    pub async fn acquire(&self) -> Permit<'_> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(epoch) = self.try_acquire() {
                return Permit {
                    limiter: self,
                    epoch,
                    finished: false,
                };
            }
            notified.await;
        }
    }

    fn release(&self, epoch: u64, signal: Signal) {
        let mut wake = 1;
        {
            let mut state = self.lock();
            state.in_flight = state.in_flight.saturating_sub(1);
            if self.adaptive {
                let before = state.limit.floor();
                match signal {
                    Signal::Success => {
                        state.limit = (state.limit + 1.0 / state.limit).min(self.max as f64);
                        if state.limit.floor() > before {
                            wake += 1;
                        }
                    }
                    Signal::RateLimited if epoch == state.epoch => {
                        state.limit = (state.limit / 2.0).max(1.0);
                        state.epoch += 1;
                        tracing::debug!(limit = state.limit, "rate limited: concurrency halved");
                    }
                    Signal::RateLimited | Signal::Neutral => {}
                }
            }
        }
        for _ in 0..wake {
            self.notify.notify_one();
        }
    }
}

/// A slot in a [`ConcurrencyLimiter`].
#[derive(Debug)]
pub struct Permit<'a> {
    limiter: &'a ConcurrencyLimiter,
    epoch: u64,
    finished: bool,
}

impl Permit<'_> {
    pub fn finish(mut self, signal: Signal) {
        self.finished = true;
        self.limiter.release(self.epoch, signal);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.limiter.release(self.epoch, Signal::Neutral);
        }
    }
}

/// A token bucket with reservations: taking more than is there leaves a debt that the
/// taker (and everyone after it) waits out, so callers are served in order.
#[derive(Debug)]
pub struct TokenBucket {
    capacity: f64,
    per_second: f64,
    state: Mutex<(f64, Instant)>,
}

impl TokenBucket {
    /// `per_minute` units a minute, bursts of up to ten seconds' worth.
    pub fn per_minute(per_minute: f64) -> Self {
        let per_second = per_minute / 60.0;
        let capacity = (per_second * 10.0).max(1.0);
        TokenBucket {
            capacity,
            per_second,
            state: Mutex::new((capacity, Instant::now())),
        }
    }

    /// Takes `amount` and returns how long to wait before using it.
    pub fn reserve(&self, amount: f64) -> Duration {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = Instant::now();
        let elapsed = now.saturating_duration_since(state.1).as_secs_f64();
        state.0 = (state.0 + elapsed * self.per_second).min(self.capacity);
        state.1 = now;
        state.0 -= amount;
        if state.0 >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-state.0 / self.per_second)
        }
    }

    /// Takes `amount`, waiting as needed.
    pub async fn acquire(&self, amount: f64) {
        let wait = self.reserve(amount);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Gives back (positive) or takes more (negative) once the true amount is known.
    pub fn adjust(&self, delta: f64) {
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state.0 = (state.0 + delta).min(self.capacity);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aimd_halves_on_rate_limit_and_recovers() {
        let limiter = ConcurrencyLimiter::new(16, true);
        let runtime = tokio::runtime::Builder::new_current_thread().build();
        let Ok(runtime) = runtime else {
            panic!("no runtime");
        };
        runtime.block_on(async {
            // Two calls admitted in the same epoch both see 429: one halving only.
            let a = limiter.acquire().await;
            let b = limiter.acquire().await;
            a.finish(Signal::RateLimited);
            b.finish(Signal::RateLimited);
            assert_eq!(limiter.current_limit(), 8);
            // A call admitted after the decrease halves again.
            limiter.acquire().await.finish(Signal::RateLimited);
            assert_eq!(limiter.current_limit(), 4);
            for _ in 0..200 {
                limiter.acquire().await.finish(Signal::Success);
            }
            assert_eq!(limiter.current_limit(), 16);
            for _ in 0..10 {
                limiter.acquire().await.finish(Signal::RateLimited);
            }
            assert_eq!(limiter.current_limit(), 1);
            assert_eq!(limiter.in_flight(), 0);
        });
    }

    #[test]
    fn non_adaptive_limit_stays_put() {
        let limiter = ConcurrencyLimiter::new(3, false);
        let runtime = tokio::runtime::Builder::new_current_thread().build();
        let Ok(runtime) = runtime else {
            panic!("no runtime");
        };
        runtime.block_on(async {
            limiter.acquire().await.finish(Signal::RateLimited);
            assert_eq!(limiter.current_limit(), 3);
        });
    }

    #[tokio::test]
    async fn never_more_in_flight_than_the_limit() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicUsize, Ordering};
        let limiter = Arc::new(ConcurrencyLimiter::new(4, true));
        let peak = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for index in 0..64 {
            let limiter = limiter.clone();
            let peak = peak.clone();
            tasks.push(tokio::spawn(async move {
                let permit = limiter.acquire().await;
                peak.fetch_max(limiter.in_flight(), Ordering::SeqCst);
                tokio::task::yield_now().await;
                let signal = if index % 10 == 0 {
                    Signal::RateLimited
                } else {
                    Signal::Success
                };
                permit.finish(signal);
            }));
        }
        for task in tasks {
            assert!(task.await.is_ok());
        }
        assert!(peak.load(Ordering::SeqCst) <= 4);
        assert_eq!(limiter.in_flight(), 0);
    }

    #[test]
    fn bucket_reserves_and_reports_debt() {
        let bucket = TokenBucket::per_minute(60.0); // 1/s, capacity 10
        assert_eq!(bucket.reserve(10.0), Duration::ZERO);
        let wait = bucket.reserve(2.0);
        assert!(wait >= Duration::from_millis(1900) && wait <= Duration::from_secs(2));
        bucket.adjust(5.0);
        assert_eq!(bucket.reserve(1.0), Duration::ZERO);
    }

    #[test]
    fn validate_rejects_nonsense() {
        assert!(Limits::default().validate().is_ok());
        let zero = Limits {
            max_concurrency: 0,
            ..Limits::default()
        };
        assert!(zero.validate().is_err());
        let negative = Limits {
            attempt_timeout_secs: -1.0,
            ..Limits::default()
        };
        assert!(negative.validate().is_err());
    }
}
