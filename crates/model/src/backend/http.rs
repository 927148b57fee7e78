//! The HTTP plumbing both wire protocols share: one pooled client, POST a JSON body,
//! turn statuses and transport failures into classified, redacted [`Error`]s.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::retry::retry_after_from_headers;
use crate::subject::BackendConfig;

/// How much of an error body goes into an error message.
const BODY_SNIPPET: usize = 600;

/// A pooled HTTP/1.1 client for one backend.
#[derive(Clone)]
pub(crate) struct HttpTransport {
    client: reqwest::Client,
}

impl HttpTransport {
    /// A client for `base_url`. Loopback servers (local vLLM, tests) bypass any proxy
    /// set in the environment.
    pub(crate) fn new(base_url: &str, max_idle_per_host: usize) -> Result<Self> {
        let mut builder = reqwest::Client::builder();
        if is_loopback(base_url) {
            builder = builder.no_proxy();
        }
        let client = builder
            .user_agent(concat!("cfeval/", env!("CARGO_PKG_VERSION")))
            .tcp_nodelay(true)
            .connect_timeout(Duration::from_secs(30))
            .pool_idle_timeout(Duration::from_secs(60))
            .pool_max_idle_per_host(max_idle_per_host.max(1))
            .build()
            .map_err(|err| Error::InvalidSetting {
                what: "HTTP client".into(),
                reason: err.to_string(),
            })?;
        Ok(HttpTransport { client })
    }

    /// POSTs `body` to `url` and parses the JSON answer. `secret_headers` are marked
    /// sensitive so no debug output of the request shows them.
    pub(crate) async fn post_json(
        &self,
        config: &BackendConfig,
        url: &str,
        headers: &[(&'static str, String)],
        secret_headers: &[(&'static str, String)],
        body: &Value,
    ) -> Result<Value> {
        let bytes = serde_json::to_vec(body).map_err(|err| Error::json("encode request", err))?;
        let body = self
            .send(
                config,
                reqwest::Method::POST,
                url,
                headers,
                secret_headers,
                Some(("application/json".into(), bytes)),
            )
            .await?;
        parse_json(config, url, &body)
    }

    /// GETs `url` and parses the JSON answer.
    pub(crate) async fn get_json(
        &self,
        config: &BackendConfig,
        url: &str,
        headers: &[(&'static str, String)],
        secret_headers: &[(&'static str, String)],
    ) -> Result<Value> {
        let body = self
            .send(config, reqwest::Method::GET, url, headers, secret_headers, None)
            .await?;
        parse_json(config, url, &body)
    }

    /// One request; the body of a 2xx answer, else a classified, redacted
    /// error. `body` is the content type and bytes to send, if any.
    pub(crate) async fn send(
        &self,
        config: &BackendConfig,
        method: reqwest::Method,
        url: &str,
        headers: &[(&'static str, String)],
        secret_headers: &[(&'static str, String)],
        body: Option<(String, Vec<u8>)>,
    ) -> Result<Vec<u8>> {
        let endpoint = url.to_string();
        let mut header_map = HeaderMap::new();
        if let Some((content_type, _)) = &body {
            let value = HeaderValue::from_str(content_type).map_err(|_| Error::InvalidSetting {
                what: "header content-type".into(),
                reason: "not a valid header value".into(),
            })?;
            header_map.insert(CONTENT_TYPE, value);
        }
        for (name, value) in headers.iter().chain(secret_headers) {
            let mut value = HeaderValue::from_str(value).map_err(|_| Error::InvalidSetting {
                what: format!("header {name}"),
                reason: "not a valid header value".into(),
            })?;
            if secret_headers.iter().any(|(secret, _)| secret == name) {
                value.set_sensitive(true);
            }
            header_map.insert(HeaderName::from_static(name), value);
        }
        let mut builder = self.client.request(method, url).headers(header_map);
        if let Some((_, bytes)) = body {
            builder = builder.body(bytes);
        }
        let response = builder
            .send()
            .await
            .map_err(|err| transport_error(config, &endpoint, &err))?;
        let status = response.status();
        let retry_after = retry_after_from_headers(response.headers());
        let body = response
            .bytes()
            .await
            .map_err(|err| transport_error(config, &endpoint, &err))?;
        if !status.is_success() {
            let code = status.as_u16();
            if code == 429 || code == 529 {
                return Err(Error::RateLimited {
                    endpoint,
                    status: code,
                    retry_after,
                });
            }
            return Err(Error::Status {
                endpoint,
                status: code,
                retry_after,
                body: config.redact(&snippet(&body)),
            });
        }
        Ok(body.to_vec())
    }
}

fn parse_json(config: &BackendConfig, endpoint: &str, body: &[u8]) -> Result<Value> {
    serde_json::from_slice(body).map_err(|err| Error::MalformedResponse {
        endpoint: endpoint.to_string(),
        message: config.redact(&format!("{err} in body starting {:?}", snippet(body))),
    })
}

fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else {
        return false;
    };
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut end = text.len().min(BODY_SNIPPET);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

fn transport_error(config: &BackendConfig, endpoint: &str, err: &reqwest::Error) -> Error {
    // reqwest's messages name the URL (never headers); chain the sources for the cause.
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    if err.is_decode() || err.is_body() {
        message.push_str(" (truncated or unreadable body)");
    }
    Error::Transport {
        endpoint: endpoint.to_string(),
        message: config.redact(&message),
    }
}

/// Reads a JSON number as `u64` (missing or negative → 0).
pub(crate) fn count(value: &Value) -> u64 {
    value.as_u64().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:8000/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:8000"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("not a url"));
    }

    #[test]
    fn snippets_cut_at_char_boundaries() {
        let text = "é".repeat(BODY_SNIPPET);
        let cut = snippet(text.as_bytes());
        assert!(cut.len() <= BODY_SNIPPET && cut.chars().all(|c| c == 'é'));
    }
}
