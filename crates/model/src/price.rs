//! Prices (USD per million tokens) and the table in `data/prices.yaml`.
//!
//! ```yaml
//! version: 1
//! prices:
//!   openai/gpt-5: {input: 1.25, output: 10.0, cached-input: 0.125}
//!   vllm/*: {input: 0.0, output: 0.0}      # a trailing `*` matches any suffix
//! ```
//! Lookup: the exact subject name first, then the longest matching `*` pattern.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::types::Usage;

/// The table shipped with the project (`data/prices.yaml`), compiled in.
pub const BUNDLED_PRICES: &str = include_str!("../../../data/prices.yaml");

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Price {
    pub input: f64,
    pub output: f64,
    /// Input tokens read from the provider's prompt cache; `input` when not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
}

impl Price {
    /// The cost of one call in USD.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let uncached = usage.input_tokens - cached;
        (uncached as f64 * self.input
            + cached as f64 * self.cached_input.unwrap_or(self.input)
            + usage.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawTable {
    version: u32,
    #[serde(default)]
    as_of: Option<String>,
    prices: BTreeMap<String, Price>,
}

/// Subject name (or `prefix*` pattern) → price.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PriceTable {
    exact: BTreeMap<String, Price>,
    /// (prefix, price), longest prefix first.
    patterns: Vec<(String, Price)>,
    /// The date the prices were copied from the providers' pages.
    pub as_of: Option<String>,
}

impl PriceTable {
    /// The table compiled into the crate.
    pub fn bundled() -> Result<Self> {
        Self::parse(BUNDLED_PRICES, Path::new("data/prices.yaml"))
    }

    pub fn load(path: &Path) -> Result<Self> {
        let text = fs_err::read_to_string(path).map_err(|err| Error::io("read price table", path, err))?;
        Self::parse(&text, path)
    }

    /// Parses YAML text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self> {
        let raw: RawTable = serde_norway::from_str(text).map_err(|source| Error::Yaml {
            path: path.to_path_buf(),
            source,
        })?;
        if raw.version != 1 {
            return Err(Error::InvalidSetting {
                what: format!("{}: version", path.display()),
                reason: format!("unsupported price table version {}", raw.version),
            });
        }
        let mut table = PriceTable {
            as_of: raw.as_of,
            ..PriceTable::default()
        };
        for (name, price) in raw.prices {
            for (what, value) in [
                ("input", Some(price.input)),
                ("output", Some(price.output)),
                ("cached-input", price.cached_input),
            ] {
                if value.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
                    return Err(Error::InvalidSetting {
                        what: format!("{}: prices.{name}.{what}", path.display()),
                        reason: "must be a non-negative number".into(),
                    });
                }
            }
            match name.strip_suffix('*') {
                Some(prefix) => table.patterns.push((prefix.to_string(), price)),
                None => {
                    table.exact.insert(name, price);
                }
            }
        }
        table
            .patterns
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Ok(table)
    }

    /// The price of `subject` (`provider/model`), if the table knows it.
    pub fn lookup(&self, subject: &str) -> Option<Price> {
        if let Some(price) = self.exact.get(subject) {
            return Some(*price);
        }
        self.patterns
            .iter()
            .find(|(prefix, _)| subject.starts_with(prefix.as_str()))
            .map(|(_, price)| *price)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_table_parses_and_prices_known_subjects() {
        let table = PriceTable::bundled().unwrap();
        let gpt5 = table.lookup("openai/gpt-5").unwrap();
        assert!(gpt5.output > gpt5.input);
        assert!(table.lookup("anthropic/claude-opus-4-7").is_some());
        assert!(table.lookup("xai/grok-4").is_some());
        assert_eq!(table.lookup("vllm/any/model").map(|p| p.output), Some(0.0));
        assert_eq!(table.lookup("mystery/model"), None);
    }

    #[test]
    fn longest_pattern_wins_and_exact_beats_pattern() {
        let text = "version: 1\nprices:\n  a/*: {input: 1, output: 1}\n  a/b*: {input: 2, output: 2}\n  a/bc: {input: 3, output: 3}\n";
        let table = PriceTable::parse(text, Path::new("t.yaml")).unwrap();
        assert_eq!(table.lookup("a/x").map(|p| p.input), Some(1.0));
        assert_eq!(table.lookup("a/bd").map(|p| p.input), Some(2.0));
        assert_eq!(table.lookup("a/bc").map(|p| p.input), Some(3.0));
    }

    #[test]
    fn cost_uses_cached_rate() {
        let price = Price {
            input: 2.0,
            output: 10.0,
            cached_input: Some(0.5),
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cached_input_tokens: 200_000,
        };
        let cost = price.cost(&usage);
        assert!((cost - (1.6 + 0.1 + 1.0)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn errors_name_the_file() {
        let err = PriceTable::parse("version: 1\nprices:\n  a/b: {input: x}\n", Path::new("p.yaml"));
        assert!(err.is_err_and(|e| e.to_string().contains("p.yaml")));
        let err = PriceTable::parse(
            "version: 1\nprices:\n  a/b: {input: -1, output: 1}\n",
            Path::new("p.yaml"),
        );
        assert!(err.is_err_and(|e| e.to_string().contains("prices.a/b.input")));
    }
}
