//! The model-family map and the self-preference guard.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The family map shipped with cfeval, compiled in.
pub const BUILTIN_FAMILIES_YAML: &str = include_str!("../../../data/model-families.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamilies {
    version: u32,
    families: BTreeMap<String, RawFamily>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFamily {
    #[serde(default)]
    providers: Vec<String>,
    #[serde(default)]
    models: Vec<String>,
}

/// Which model family a subject or judge name belongs to.
#[derive(Debug, Clone)]
pub struct Families {
    families: BTreeMap<String, RawFamily>,
}

/// Who judges a subject's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardPlan {
    /// The named judge.
    Primary,
    /// The fallback: the primary judge is of the subject's family.
    Fallback,
}

impl Families {
    /// The map shipped with cfeval.
    pub fn builtin() -> Result<Self> {
        Self::parse(BUILTIN_FAMILIES_YAML, "data/model-families.yaml (built in)")
    }

    /// Loads a family map file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses a family map; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let raw: RawFamilies = serde_norway::from_str(text).map_err(|source| Error::Parse {
            origin: origin.to_string(),
            source,
        })?;
        if raw.version != 1 {
            return Err(Error::Invalid {
                origin: origin.to_string(),
                message: format!("unsupported family map version {}", raw.version),
            });
        }
        Ok(Self {
            families: raw.families,
        })
    }

    /// The family of `provider/model` (or a bare model name), if any.
    pub fn family_of(&self, name: &str) -> Option<&str> {
        // A subject's options (`+bias=…`) do not change its model.
        let lower = cfeval_schema::vocab::SubjectName::model_of(name).to_ascii_lowercase();
        let (provider, model) = lower.split_once('/').unwrap_or(("", lower.as_str()));
        for (family, rule) in &self.families {
            if rule
                .providers
                .iter()
                .any(|known| known.eq_ignore_ascii_case(provider))
            {
                return Some(family);
            }
        }
        for (family, rule) in &self.families {
            let hit = model.split('/').any(|part| {
                rule.models
                    .iter()
                    .any(|prefix| part.starts_with(&prefix.to_ascii_lowercase()))
            });
            if hit {
                return Some(family);
            }
        }
        None
    }

    /// Decides who judges `subject`: the judge, or the fallback when the
    /// judge is of the subject's family; refuses when there is no fallback
    /// or the fallback is of the subject's family too.
    pub fn guard(&self, judge: &str, fallback: Option<&str>, subject: &str) -> Result<GuardPlan> {
        let Some(subject_family) = self.family_of(subject) else {
            return Ok(GuardPlan::Primary);
        };
        if self.family_of(judge) != Some(subject_family) {
            return Ok(GuardPlan::Primary);
        }
        let Some(fallback) = fallback else {
            return Err(Error::SelfPreference {
                judge: judge.to_string(),
                subject: subject.to_string(),
                family: subject_family.to_string(),
            });
        };
        if self.family_of(fallback) == Some(subject_family) {
            return Err(Error::FallbackSameFamily {
                fallback: fallback.to_string(),
                subject: subject.to_string(),
                family: subject_family.to_string(),
            });
        }
        Ok(GuardPlan::Fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_families() {
        let families = Families::builtin().expect("map");
        let cases = [
            ("openai/gpt-5.4", Some("openai")),
            ("openai/o3-mini", Some("openai")),
            ("anthropic/claude-opus-4-7", Some("anthropic")),
            ("xai/grok-4.20-reasoning", Some("xai")),
            ("google/gemini-2.5-pro", Some("google")),
            ("vllm/meta-llama/Llama-3.1-8B-Instruct", Some("meta")),
            ("ollama/qwen2.5:7b", Some("qwen")),
            ("openrouter/anthropic/claude-3.5-sonnet", Some("anthropic")),
            ("vllm/gpt-oss-20b", Some("openai")),
            ("embedded/smollm2-135m", Some("embedded")),
            ("control/reference", Some("control")),
            ("rule", None),
            ("vllm/some-unknown-model", None),
        ];
        for (name, family) in cases {
            assert_eq!(families.family_of(name), family, "{name}");
        }
    }

    #[test]
    fn guard_refuses_own_family_without_fallback() {
        let families = Families::builtin().expect("map");
        let error = families
            .guard("openai/gpt-5.4", None, "openai/gpt-5")
            .expect_err("same family");
        let message = error.to_string();
        assert!(
            message.contains("openai/gpt-5.4")
                && message.contains("openai/gpt-5")
                && message.contains("fallback"),
            "{message}"
        );
        assert_eq!(
            families
                .guard(
                    "openai/gpt-5.4",
                    Some("anthropic/claude-opus-4-7"),
                    "openai/gpt-5"
                )
                .expect("fallback named"),
            GuardPlan::Fallback
        );
        assert_eq!(
            families
                .guard("openai/gpt-5.4", None, "xai/grok-4")
                .expect("other family"),
            GuardPlan::Primary
        );
        assert!(matches!(
            families.guard("openai/gpt-5.4", Some("openai/gpt-4o"), "openai/gpt-5"),
            Err(Error::FallbackSameFamily { .. })
        ));
        assert_eq!(
            families.guard("rule", None, "control/reference").expect("rule"),
            GuardPlan::Primary
        );
    }
}
