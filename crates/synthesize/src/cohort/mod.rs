//! The seeded synthetic oncology tumor-board cohort.
//!
//! Each case is drawn as structured truth ([`spec::Patient`]), written as
//! free text in one of four clinical styles (tumor-board note, referral
//! letter, discharge summary, terse bullets) with every ground-truth fact's
//! exact span recorded, and given the expert-consensus recommendation of
//! the guideline rule table (`data/guidelines/oncology.yaml`).
//!
//! [`write()`] lays a cohort out as `DIR/cohort.jsonl` (one case per line:
//! id, text, consensus, facts, rules, style, cancer_type) and
//! `DIR/text/<id>.txt`; `cfeval synthesize --input DIR/cohort.jsonl` carries
//! the reference through.

pub mod evaluate;
mod render;
pub mod spec;

use std::path::{Path, PathBuf};

use cfeval_guidelines::Guidelines;
use cfeval_schema::{ConsensusItem, Fact};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::rng::Rng;

pub use render::STYLES;

/// The default cohort size.
pub const DEFAULT_CASES: usize = 224;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CohortConfig {
    pub cases: usize,
    pub seed: u64,
}

impl Default for CohortConfig {
    fn default() -> Self {
        Self {
            cases: DEFAULT_CASES,
            seed: 0,
        }
    }
}

/// One generated case, as written to `cohort.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CohortCase {
    pub id: String,
    pub text: String,
    /// The expert-consensus recommendation: weighted plan items.
    pub consensus: Vec<ConsensusItem>,
    /// Ground-truth facts, each with its exact span in `text`.
    pub facts: Vec<Fact>,
    /// The guideline rules the consensus came from.
    pub rules: Vec<String>,
    pub style: String,
    pub cancer_type: String,
}

/// Generates the cohort (pure: same config, same cases, byte for byte).
pub fn generate(config: &CohortConfig) -> Result<Vec<CohortCase>> {
    let guidelines = Guidelines::builtin()?;
    Ok(generate_with(config, &guidelines))
}

/// Generates the cohort under a given rule table.
pub fn generate_with(config: &CohortConfig, guidelines: &Guidelines) -> Vec<CohortCase> {
    (0..config.cases)
        .map(|index| {
            let cancer = spec::cancer_for(config.seed, index);
            let mut rng = Rng::derive(config.seed, index as u64);
            let patient = spec::draw(&mut rng, cancer);
            let style = STYLES[rng.below(STYLES.len())];
            let doc = render::render(&mut rng, &patient, style);
            let recommendation = guidelines.recommend(&doc.facts);
            CohortCase {
                id: format!("cohort-s{}-{index:04}", config.seed),
                text: doc.text,
                consensus: recommendation.items,
                facts: doc.facts,
                rules: recommendation.rules,
                style: style.to_string(),
                cancer_type: cancer.value().to_string(),
            }
        })
        .collect()
}

/// Where [`write()`] put the cohort.
#[derive(Debug, Clone, PartialEq)]
pub struct CohortFiles {
    pub jsonl: PathBuf,
    pub text_dir: PathBuf,
    pub cases: usize,
}

/// Writes `cohort.jsonl` and one text file per case into `dir`.
pub fn write(cases: &[CohortCase], dir: &Path) -> Result<CohortFiles> {
    let text_dir = dir.join("text");
    let create = |path: &Path| {
        fs_err::create_dir_all(path).map_err(|source| Error::Write {
            path: path.to_path_buf(),
            source,
        })
    };
    create(&text_dir)?;
    let mut jsonl = String::new();
    for case in cases {
        jsonl.push_str(&serde_json::to_string(case)?);
        jsonl.push('\n');
        let path = text_dir.join(format!("{}.txt", case.id));
        fs_err::write(&path, &case.text).map_err(|source| Error::Write { path, source })?;
    }
    let path = dir.join("cohort.jsonl");
    fs_err::write(&path, jsonl).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    Ok(CohortFiles {
        jsonl: path,
        text_dir,
        cases: cases.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::verify_fact;

    #[test]
    fn same_seed_same_cohort_and_spans_hold() {
        let config = CohortConfig { cases: 48, seed: 11 };
        let first = generate(&config).unwrap();
        assert_eq!(first, generate(&config).unwrap());
        let other = generate(&CohortConfig { cases: 48, seed: 12 }).unwrap();
        assert_ne!(first[0].text, other[0].text);
        for case in &first {
            assert!(!case.consensus.is_empty(), "{} has no consensus", case.id);
            for fact in &case.facts {
                verify_fact(&case.text, fact).unwrap();
            }
        }
        let styles: std::collections::BTreeSet<&str> = first.iter().map(|case| case.style.as_str()).collect();
        assert_eq!(styles.len(), 4);
    }
}
