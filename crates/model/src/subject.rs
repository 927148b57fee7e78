//! Subject names (`provider/model`, as in inspect_ai) and their resolution to a
//! [`BackendConfig`]: which wire protocol, which base URL, which API key.
//!
//! | provider      | protocol          | base URL (env, default)                           | key env (required?)        |
//! |---------------|-------------------|---------------------------------------------------|----------------------------|
//! | `openai`      | OpenAI chat       | `OPENAI_BASE_URL`, `https://api.openai.com/v1`    | `OPENAI_API_KEY` (yes)     |
//! | `anthropic`   | Anthropic Messages| `ANTHROPIC_BASE_URL`, `https://api.anthropic.com` | `ANTHROPIC_API_KEY` (yes)  |
//! | `xai`, `grok` | OpenAI chat       | `XAI_BASE_URL`, `https://api.x.ai/v1`             | `XAI_API_KEY` (yes)        |
//! | `vllm`        | OpenAI chat       | `VLLM_BASE_URL`, none                             | `VLLM_API_KEY` (no)        |
//! | `sglang`      | OpenAI chat       | `SGLANG_BASE_URL`, none                           | `SGLANG_API_KEY` (no)      |
//! | `ollama`      | OpenAI chat       | `OLLAMA_BASE_URL`, `http://localhost:11434/v1`    | `OLLAMA_API_KEY` (no)      |
//! | `llama-cpp`   | OpenAI chat       | `LLAMA_CPP_BASE_URL`, `http://localhost:8080/v1`  | `LLAMA_CPP_API_KEY` (no)   |
//! | `litellm`     | OpenAI chat       | `LITELLM_BASE_URL`, `http://localhost:4000/v1`    | `LITELLM_API_KEY` (no)     |
//! | `openai-api/<service>` | OpenAI chat | `<SERVICE>_BASE_URL`, none                    | `<SERVICE>_API_KEY` (no)   |
//!
//! A [`SubjectSpec`] may override the base URL and the name of the key variable.
//! The key itself lives in an [`ApiKey`], whose `Debug` prints no secret.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::limit::Limits;
use crate::price::Price;

/// An API key. Never printed: `Debug` shows `ApiKey(<redacted>)`, there is no `Display`
/// and no `Serialize`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The secret, for the one place that puts it in a request header.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `<redacted>` (servers echo keys
    /// in error bodies).
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() {
            return text.to_string();
        }
        text.replace(&self.0, "<redacted>")
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// The wire protocol a backend speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// `POST {base}/chat/completions`.
    OpenAiChat,
    /// `POST {base}/v1/messages`.
    AnthropicMessages,
}

/// A subject as a pipeline file names it, with optional overrides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SubjectSpec {
    /// `provider/model`, e.g. `openai/gpt-5`, `vllm/meta-llama/Llama-3.1-8B-Instruct`.
    pub name: String,
    /// Overrides the provider's base URL variable and default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Names the environment variable holding the key (instead of e.g. `OPENAI_API_KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    #[serde(default)]
    pub limits: Limits,
    /// Overrides the price table entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price: Option<Price>,
}

impl SubjectSpec {
    /// A spec with no overrides.
    pub fn new(name: impl Into<String>) -> Self {
        SubjectSpec {
            name: name.into(),
            base_url: None,
            api_key_env: None,
            limits: Limits::default(),
            price: None,
        }
    }

    /// Resolves against the process environment.
    pub fn resolve(&self) -> Result<BackendConfig> {
        self.resolve_with(&|name: &str| std::env::var(name).ok())
    }

    /// Resolves against `env` (a lookup of environment variables), so tests need not touch
    /// the process environment.
    pub fn resolve_with(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<BackendConfig> {
        let name = parse_subject_name(&self.name)?;
        let provider = provider_info(&name)?;
        let base_url = match &self.base_url {
            Some(url) => url.clone(),
            None => match env(&provider.base_url_env).filter(|v| !v.trim().is_empty()) {
                Some(url) => url,
                None => match provider.default_base_url {
                    Some(url) => url.to_string(),
                    None => {
                        return Err(Error::MissingSetting {
                            subject: self.name.clone(),
                            what: format!(
                                "no base URL: set {} or `base-url` in the subject",
                                provider.base_url_env
                            ),
                        });
                    }
                },
            },
        };
        let base_url = normalise_base_url(&base_url)?;
        let key_env = self.api_key_env.clone().unwrap_or(provider.api_key_env);
        let api_key = env(&key_env).filter(|v| !v.trim().is_empty()).map(ApiKey::new);
        let key_required = provider.key_required || self.api_key_env.is_some();
        if api_key.is_none() && key_required {
            return Err(Error::MissingSetting {
                subject: self.name.clone(),
                what: format!("no API key: set {key_env}"),
            });
        }
        self.limits.validate()?;
        Ok(BackendConfig {
            subject: self.name.clone(),
            provider: name.provider,
            model: name.model,
            protocol: provider.protocol,
            base_url,
            api_key,
            api_key_env: key_env,
            limits: self.limits.clone(),
            price: self.price,
            use_max_completion_tokens: provider.use_max_completion_tokens,
            strict_schema_subset: provider.strict_schema_subset,
        })
    }
}

/// Everything a backend needs to talk to one model at one endpoint.
#[derive(Clone)]
pub struct BackendConfig {
    /// The subject name as given (`openai/gpt-5`).
    pub subject: String,
    /// `openai`, `anthropic`, `xai`, `vllm`, … (`openai-api/<service>` for generic ones).
    pub provider: String,
    /// The model name sent to the API.
    pub model: String,
    pub protocol: Protocol,
    /// Without a trailing slash.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// The name (never the value) of the variable the key came from, for messages.
    pub api_key_env: String,
    pub limits: Limits,
    pub price: Option<Price>,
    /// OpenAI's own API wants `max_completion_tokens`; other servers `max_tokens`.
    pub use_max_completion_tokens: bool,
    /// OpenAI's own API takes only a subset of JSON Schema in a strict
    /// `json_schema` response format: what lies outside it (string lengths)
    /// is sent as words of the description
    /// ([`crate::backend::strict::subset`]). Other servers get the schema
    /// as it is.
    pub strict_schema_subset: bool,
}

impl BackendConfig {
    /// A config for a server at `base_url` speaking `protocol` (tests, local servers).
    pub fn custom(
        subject: impl Into<String>,
        protocol: Protocol,
        base_url: impl Into<String>,
        api_key: Option<ApiKey>,
    ) -> Result<Self> {
        let subject = subject.into();
        let name = parse_subject_name(&subject)?;
        Ok(BackendConfig {
            subject,
            provider: name.provider,
            model: name.model,
            protocol,
            base_url: normalise_base_url(&base_url.into())?,
            api_key,
            api_key_env: String::new(),
            limits: Limits::default(),
            price: None,
            use_max_completion_tokens: false,
            strict_schema_subset: false,
        })
    }

    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Where requests go, for messages and the endpoint-sharing key (no secret in it).
    pub fn endpoint(&self) -> String {
        match self.protocol {
            Protocol::OpenAiChat => format!("{}/chat/completions", self.base_url),
            Protocol::AnthropicMessages => format!("{}/v1/messages", self.base_url),
        }
    }

    /// `text` with the key (if any) redacted.
    pub fn redact(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) => key.redact(text),
            None => text.to_string(),
        }
    }
}

impl fmt::Debug for BackendConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendConfig")
            .field("subject", &self.subject)
            .field("provider", &self.provider)
            .field("model", &self.model)
            .field("protocol", &self.protocol)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("limits", &self.limits)
            .field("price", &self.price)
            .finish()
    }
}

/// A parsed `provider/model` name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectName {
    pub provider: String,
    pub model: String,
}

/// Splits `provider/model` at the first slash (`openai-api/<service>/<model>` at the
/// second). The model part may contain further slashes (`vllm/org/model`).
pub fn parse_subject_name(name: &str) -> Result<SubjectName> {
    let invalid = |reason: &str| Error::InvalidSubject {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let (provider, rest) = name
        .split_once('/')
        .ok_or_else(|| invalid("expected provider/model, e.g. openai/gpt-5"))?;
    if provider.is_empty() || rest.is_empty() {
        return Err(invalid("expected provider/model, e.g. openai/gpt-5"));
    }
    if provider.chars().any(char::is_whitespace) || rest.trim() != rest {
        return Err(invalid("whitespace in the name"));
    }
    if provider == "openai-api" {
        let (service, model) = rest
            .split_once('/')
            .filter(|(service, model)| !service.is_empty() && !model.is_empty())
            .ok_or_else(|| invalid("expected openai-api/<service>/<model>"))?;
        return Ok(SubjectName {
            provider: format!("openai-api/{service}"),
            model: model.to_string(),
        });
    }
    Ok(SubjectName {
        provider: provider.to_string(),
        model: rest.to_string(),
    })
}

struct ProviderInfo {
    protocol: Protocol,
    base_url_env: String,
    default_base_url: Option<&'static str>,
    api_key_env: String,
    key_required: bool,
    use_max_completion_tokens: bool,
    strict_schema_subset: bool,
}

fn provider_info(name: &SubjectName) -> Result<ProviderInfo> {
    let openai_like = |prefix: &str, default: Option<&'static str>, key_required: bool| ProviderInfo {
        protocol: Protocol::OpenAiChat,
        base_url_env: format!("{prefix}_BASE_URL"),
        default_base_url: default,
        api_key_env: format!("{prefix}_API_KEY"),
        key_required,
        use_max_completion_tokens: false,
        strict_schema_subset: false,
    };
    let info = match name.provider.as_str() {
        "openai" => ProviderInfo {
            use_max_completion_tokens: true,
            strict_schema_subset: true,
            ..openai_like("OPENAI", Some("https://api.openai.com/v1"), true)
        },
        "anthropic" => ProviderInfo {
            protocol: Protocol::AnthropicMessages,
            ..openai_like("ANTHROPIC", Some("https://api.anthropic.com"), true)
        },
        "xai" | "grok" => openai_like("XAI", Some("https://api.x.ai/v1"), true),
        "vllm" => openai_like("VLLM", None, false),
        "sglang" => openai_like("SGLANG", None, false),
        "ollama" => openai_like("OLLAMA", Some("http://localhost:11434/v1"), false),
        "llama-cpp" => openai_like("LLAMA_CPP", Some("http://localhost:8080/v1"), false),
        "litellm" => openai_like("LITELLM", Some("http://localhost:4000/v1"), false),
        other => match other.strip_prefix("openai-api/") {
            Some(service) => {
                let prefix: String = service
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() {
                            c.to_ascii_uppercase()
                        } else {
                            '_'
                        }
                    })
                    .collect();
                openai_like(&prefix, None, false)
            }
            None => {
                return Err(Error::InvalidSubject {
                    name: format!("{}/{}", name.provider, name.model),
                    reason: format!(
                        "unknown provider {other:?} (known: openai, anthropic, xai, vllm, sglang, \
                         ollama, llama-cpp, litellm, openai-api/<service>)"
                    ),
                });
            }
        },
    };
    Ok(info)
}

fn normalise_base_url(url: &str) -> Result<String> {
    let url = url.trim().trim_end_matches('/');
    let parsed = reqwest::Url::parse(url).map_err(|err| Error::InvalidSetting {
        what: "base URL".into(),
        reason: format!("{url:?} is not a URL: {err}"),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(Error::InvalidSetting {
            what: "base URL".into(),
            reason: format!("{url:?} must be http or https"),
        });
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(Error::InvalidSetting {
            what: "base URL".into(),
            reason: "credentials in the URL are not allowed; use the API key variable".into(),
        });
    }
    // A base URL is written to responses, the journal, the cache and error
    // messages: a secret in its query (`?api-key=…`) would leak into all of
    // them. Such a URL is refused, naming the parameter, never its value.
    if let Some((name, _)) = parsed.query_pairs().find(|(name, _)| is_secret_parameter(name)) {
        let mut shown = parsed.clone();
        shown.set_query(None);
        return Err(Error::InvalidSetting {
            what: "base URL".into(),
            reason: format!(
                "{shown} carries a secret in its query (`{name}`); it would be written to every table and log: give the key through the API key variable instead"
            ),
        });
    }
    Ok(url.to_string())
}

/// Whether a query parameter's name says it holds a secret (`api-key`,
/// `key`, `access_token`, `sig`, …).
fn is_secret_parameter(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('-', "_");
    matches!(
        name.as_str(),
        "key"
            | "apikey"
            | "api_key"
            | "x_api_key"
            | "token"
            | "access_token"
            | "auth"
            | "authorization"
            | "secret"
            | "client_secret"
            | "password"
            | "pass"
            | "sig"
            | "signature"
            | "subscription_key"
            | "code"
    ) || name.ends_with("_key")
        || name.ends_with("_token")
        || name.ends_with("_secret")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name: &str| map.get(name).cloned()
    }

    #[test]
    fn parses_names() {
        let name = parse_subject_name("vllm/meta-llama/Llama-3.1-8B").ok();
        assert_eq!(
            name,
            Some(SubjectName {
                provider: "vllm".into(),
                model: "meta-llama/Llama-3.1-8B".into()
            })
        );
        let generic = parse_subject_name("openai-api/deepseek/deepseek-chat").ok();
        assert_eq!(
            generic.map(|n| (n.provider, n.model)),
            Some(("openai-api/deepseek".into(), "deepseek-chat".into()))
        );
        for bad in ["gpt-5", "/gpt-5", "openai/", "openai-api/x", " openai/x"] {
            assert!(parse_subject_name(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn resolves_openai_and_xai_and_anthropic_from_env() {
        let lookup = env(&[
            ("OPENAI_API_KEY", "sk-openai-secret"),
            ("XAI_API_KEY", "xai-secret"),
            ("ANTHROPIC_API_KEY", "ant-secret"),
            ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/"),
        ]);
        let openai = SubjectSpec::new("openai/gpt-5").resolve_with(&lookup);
        let openai = openai.ok();
        assert_eq!(
            openai
                .as_ref()
                .map(|c| (c.base_url.as_str(), c.model.as_str(), c.protocol)),
            Some(("https://api.openai.com/v1", "gpt-5", Protocol::OpenAiChat))
        );
        assert!(openai.as_ref().is_some_and(|c| c.use_max_completion_tokens));
        let xai = SubjectSpec::new("xai/grok-4").resolve_with(&lookup).ok();
        assert_eq!(
            xai.as_ref().map(|c| c.endpoint()),
            Some("https://api.x.ai/v1/chat/completions".to_string())
        );
        let claude = SubjectSpec::new("anthropic/claude-opus-4-7")
            .resolve_with(&lookup)
            .ok();
        assert_eq!(
            claude.as_ref().map(|c| (c.endpoint(), c.protocol)),
            Some((
                "http://127.0.0.1:9/v1/messages".to_string(),
                Protocol::AnthropicMessages
            ))
        );
    }

    #[test]
    fn a_secret_in_the_base_url_query_is_refused_without_echoing_it() {
        for url in [
            "https://example.test/v1?api-key=sk-SECRET123",
            "https://example.test/v1?key=sk-SECRET123",
            "https://example.test/v1?foo=1&access_token=sk-SECRET123",
            "https://example.test/v1?Subscription-Key=sk-SECRET123",
        ] {
            let error = normalise_base_url(url).expect_err(url).to_string();
            assert!(!error.contains("SECRET123"), "{error}");
            assert!(error.contains("API key variable"), "{error}");
        }
        // Parameters that hold no secret stay (Azure's api-version).
        assert!(normalise_base_url("https://example.test/openai?api-version=2024-10-21").is_ok());
    }

    #[test]
    fn missing_key_and_base_url_are_named() {
        let lookup = env(&[]);
        let err = SubjectSpec::new("openai/gpt-5").resolve_with(&lookup).err();
        assert!(err.is_some_and(|e| e.to_string().contains("OPENAI_API_KEY")));
        let err = SubjectSpec::new("vllm/qwen").resolve_with(&lookup).err();
        assert!(err.is_some_and(|e| e.to_string().contains("VLLM_BASE_URL")));
        let err = SubjectSpec::new("mystery/x").resolve_with(&lookup).err();
        assert!(err.is_some_and(|e| e.to_string().contains("unknown provider")));
    }

    #[test]
    fn overrides_win() {
        let lookup = env(&[("MY_KEY", "k-123456"), ("OPENAI_BASE_URL", "http://ignored")]);
        let mut spec = SubjectSpec::new("openai/gpt-5");
        spec.base_url = Some("http://127.0.0.1:8000/v1/".into());
        spec.api_key_env = Some("MY_KEY".into());
        let config = spec.resolve_with(&lookup).ok();
        assert_eq!(
            config.as_ref().map(|c| c.base_url.as_str()),
            Some("http://127.0.0.1:8000/v1")
        );
        assert_eq!(
            config.as_ref().and_then(|c| c.api_key.clone()),
            Some(ApiKey::new("k-123456"))
        );
        // A named key variable that is unset is an error even for keyless providers.
        let mut local = SubjectSpec::new("vllm/qwen");
        local.base_url = Some("http://127.0.0.1:8000/v1".into());
        assert!(local.resolve_with(&lookup).is_ok());
        local.api_key_env = Some("UNSET_KEY".into());
        assert!(local.resolve_with(&lookup).is_err());
    }

    #[test]
    fn debug_never_shows_the_key() {
        let lookup = env(&[("OPENAI_API_KEY", "sk-very-secret-value")]);
        let config = SubjectSpec::new("openai/gpt-5").resolve_with(&lookup).ok();
        let text = format!("{config:?}");
        assert!(text.contains("gpt-5"));
        assert!(!text.contains("sk-very-secret-value"));
        let key = ApiKey::new("sk-very-secret-value");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert_eq!(key.redact("bad key sk-very-secret-value!"), "bad key <redacted>!");
    }

    #[test]
    fn rejects_credentials_in_urls() {
        let mut spec = SubjectSpec::new("vllm/qwen");
        spec.base_url = Some("http://user:pw@127.0.0.1:8000/v1".into());
        let err = spec.resolve_with(&env(&[])).err();
        assert!(err.is_some_and(|e| !e.to_string().contains("pw@")));
    }

    #[test]
    fn spec_deserialises_kebab_case_and_rejects_unknown_fields() {
        let spec: std::result::Result<SubjectSpec, _> = serde_json::from_str(
            r#"{"name":"vllm/qwen","base-url":"http://127.0.0.1:1/v1","limits":{"max-concurrency":4}}"#,
        );
        assert_eq!(spec.ok().map(|s| s.limits.max_concurrency), Some(4));
        let bad: std::result::Result<SubjectSpec, _> =
            serde_json::from_str(r#"{"name":"vllm/qwen","baseurl":"x"}"#);
        assert!(bad.is_err());
    }
}
