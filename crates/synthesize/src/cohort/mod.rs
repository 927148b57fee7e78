//! The seeded synthetic oncology tumor-board cohort.
//!
//! Each case is drawn as structured truth ([`spec::Patient`]), written as
//! free text in one of four clinical styles (tumor-board note, referral
//! letter, discharge summary, terse bullets) with every ground-truth fact's
//! exact span recorded, and given the expert-consensus recommendation of
//! the guideline rule table (`data/packs/oncology/guidelines.yaml`).
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
        .map(|index| case_at(config, guidelines, index))
        .collect()
}

/// Case `index` of the cohort (each case depends only on the seed and its
/// index, so a cohort can be generated a case at a time).
fn case_at(config: &CohortConfig, guidelines: &Guidelines, index: usize) -> CohortCase {
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
}

/// Generates the cohort straight into `dir` (as [`write()`] lays it out),
/// one case at a time: memory stays flat for any cohort size.
pub fn generate_into(config: &CohortConfig, dir: &Path) -> Result<CohortFiles> {
    let guidelines = Guidelines::builtin()?;
    write_cases(
        (0..config.cases).map(|index| case_at(config, &guidelines, index)),
        dir,
    )
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
    write_cases(cases.iter().cloned(), dir)
}

fn write_cases(cases: impl Iterator<Item = CohortCase>, dir: &Path) -> Result<CohortFiles> {
    use std::io::Write as _;
    let text_dir = dir.join("text");
    fs_err::create_dir_all(&text_dir).map_err(|source| Error::Write {
        path: text_dir.clone(),
        source,
    })?;
    let path = dir.join("cohort.jsonl");
    // Written beside, renamed into place: a reader never sees half a cohort.
    let temp = dir.join(format!(".cohort.jsonl.{}.tmp", std::process::id()));
    let write_error = |source| Error::Write {
        path: temp.clone(),
        source,
    };
    let file = fs_err::File::create(&temp).map_err(write_error)?;
    let mut jsonl = std::io::BufWriter::new(file);
    let mut count = 0;
    for case in cases {
        serde_json::to_writer(&mut jsonl, &case)?;
        jsonl.write_all(b"\n").map_err(write_error)?;
        let text_path = text_dir.join(format!("{}.txt", case.id));
        fs_err::write(&text_path, &case.text).map_err(|source| Error::Write {
            path: text_path,
            source,
        })?;
        count += 1;
    }
    jsonl.flush().map_err(write_error)?;
    drop(jsonl);
    fs_err::rename(&temp, &path).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    Ok(CohortFiles {
        jsonl: path,
        text_dir,
        cases: count,
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
        let dir = tempfile::tempdir().unwrap();
        let streamed = generate_into(&config, dir.path()).unwrap();
        let written = write(&first, &dir.path().join("batch")).unwrap();
        assert_eq!(streamed.cases, 48);
        assert_eq!(
            std::fs::read(&streamed.jsonl).unwrap(),
            std::fs::read(&written.jsonl).unwrap(),
            "streamed and batch cohorts are the same bytes"
        );
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
