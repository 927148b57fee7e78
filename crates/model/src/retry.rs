//! Backoff delays (exponential, with jitter) and `Retry-After` parsing.

use std::time::{Duration, SystemTime};

use crate::limit::Limits;

/// A small, fast pseudo-random source for jitter (SplitMix64). Jitter needs spread, not
/// cryptographic quality.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Self {
        Jitter(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    pub(crate) fn from_clock(extra: u64) -> Self {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Jitter::new(nanos ^ extra.rotate_left(32))
    }

    /// Uniform in `[0, 1)`.
    pub(crate) fn next_unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The wait before retry number `retry` (1 for the first retry).
///
/// With a `Retry-After` from the server: that long (capped at `max_retry_after_secs`)
/// plus up to 10% jitter, so that clients told the same instant do not return together.
/// Without: "equal jitter" exponential backoff, uniform in `[d/2, d]` with
/// `d = min(base · 2^(retry-1), max)`.
pub(crate) fn retry_delay(
    limits: &Limits,
    retry: u32,
    retry_after: Option<Duration>,
    jitter: &mut Jitter,
) -> Duration {
    if let Some(after) = retry_after {
        let capped = after.as_secs_f64().min(limits.max_retry_after_secs);
        return Duration::from_secs_f64(capped * (1.0 + 0.1 * jitter.next_unit()));
    }
    let exponent = retry.saturating_sub(1).min(30) as i32;
    let full = (limits.backoff_base_secs * 2f64.powi(exponent)).min(limits.backoff_max_secs);
    Duration::from_secs_f64(full * (0.5 + 0.5 * jitter.next_unit()))
}

/// Parses a `Retry-After` value: delay-seconds (`"120"`, also fractional) or an
/// HTTP-date (`"Wed, 21 Oct 2015 07:28:00 GMT"`, relative to `now`; past dates give 0).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Reads `retry-after-ms` (OpenAI's finer header) or `retry-after` from a response.
pub(crate) fn retry_after_from_headers(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480); // 07:28:00
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0.5 ", now), Some(Duration::from_millis(500)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("-1", now), None);
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn headers_prefer_milliseconds() {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("retry-after", reqwest::header::HeaderValue::from_static("7"));
        assert_eq!(retry_after_from_headers(&headers), Some(Duration::from_secs(7)));
        headers.insert("retry-after-ms", reqwest::header::HeaderValue::from_static("250"));
        assert_eq!(
            retry_after_from_headers(&headers),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let limits = Limits {
            backoff_base_secs: 1.0,
            backoff_max_secs: 8.0,
            max_retry_after_secs: 5.0,
            ..Limits::default()
        };
        let mut jitter = Jitter::new(7);
        for retry in 1..=10 {
            let full = 2f64.powi(retry as i32 - 1).min(8.0);
            let delay = retry_delay(&limits, retry, None, &mut jitter).as_secs_f64();
            assert!(delay >= full / 2.0 && delay <= full, "retry {retry}: {delay}");
        }
        let honoured = retry_delay(&limits, 1, Some(Duration::from_secs(2)), &mut jitter);
        assert!(honoured >= Duration::from_secs(2) && honoured <= Duration::from_millis(2200));
        let capped = retry_delay(&limits, 1, Some(Duration::from_secs(3600)), &mut jitter);
        assert!(capped <= Duration::from_secs_f64(5.5));
    }

    #[test]
    fn jitter_spreads() {
        let mut jitter = Jitter::new(1);
        let values: Vec<f64> = (0..1000).map(|_| jitter.next_unit()).collect();
        assert!(values.iter().all(|v| (0.0..1.0).contains(v)));
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        assert!((mean - 0.5).abs() < 0.05);
    }
}
