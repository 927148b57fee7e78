//! The clinical-reasoning rubric (seed 002) as data
//! (`data/rubrics/clinical-reasoning-v1.yaml`): seven domains scored 1–5,
//! each split into sub-dimensions with behavioural anchors at 1, 3 and 5;
//! the rules that mark a domain or sub-dimension not applicable; and
//! weighting profiles per task, renormalised over the applicable domains.
//! Loaded strictly (unknown keys are errors), every problem reported with
//! the line it is on, and hashed like the catalog so that a run can lock it.
//!
//! cfeval computes domain scores and the composite itself from the
//! sub-dimension scores ([`Rubric::composite`]); a model judge's arithmetic
//! is never trusted.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

pub mod judge;
pub mod pack;
pub mod stage;

/// The rubric as built in.
const BUILTIN: &str = include_str!("../../../../data/rubrics/clinical-reasoning-v1.yaml");

/// When an N/A rule marks its domains not applicable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NaCondition {
    /// The case is one encounter (temporal reasoning needs a longitudinal case).
    SingleEncounter,
    /// One turn, or no pushback (sycophancy resistance needs pushback).
    SingleTurnOrNoPushback,
    /// The response makes no causal claim.
    NoCausalClaim,
    /// The task does not call for the domain.
    NotCalledForByTask,
}

/// One sub-dimension and its anchors.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subdimension {
    pub id: String,
    pub name: String,
    /// Score → behaviour that earns it (1, 3 and 5).
    pub anchors: BTreeMap<u8, String>,
}

/// One domain.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Domain {
    pub id: String,
    pub name: String,
    pub description: String,
    pub subdimensions: Vec<Subdimension>,
}

/// A rule that marks domains or sub-dimensions not applicable.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NaRule {
    pub id: String,
    /// Domain or sub-dimension ids.
    pub applies_to: Vec<String>,
    pub when: NaCondition,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Scale {
    min: u8,
    max: u8,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRubric {
    version: u32,
    name: String,
    title: String,
    scale: Scale,
    domains: Vec<Domain>,
    na_rules: Vec<NaRule>,
    profiles: BTreeMap<String, BTreeMap<String, f64>>,
}

/// A validated rubric.
#[derive(Debug, Clone, PartialEq)]
pub struct Rubric {
    pub name: String,
    pub title: String,
    pub domains: Vec<Domain>,
    pub na_rules: Vec<NaRule>,
    /// Profile → domain id → weight (each profile names every domain).
    pub profiles: BTreeMap<String, BTreeMap<String, f64>>,
    /// BLAKE3 of the file's bytes (what a run locks).
    pub hash: String,
}

/// One problem of a rubric file, with its 1-based line (0: no place).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RubricProblem {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for RubricProblem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.line, self.message)
    }
}

/// The anchors every sub-dimension must have.
const ANCHORS: [u8; 3] = [1, 3, 5];

/// The line of the first occurrence of `needle` in `text` (0 when absent).
fn line_of(text: &str, needle: &str) -> usize {
    text.find(needle)
        .map_or(0, |at| text[..at].matches('\n').count() + 1)
}

/// The line of an `id: "<id>"` entry (quoted or not).
fn line_of_id(text: &str, id: &str) -> usize {
    [
        format!("id: \"{id}\""),
        format!("id: '{id}'"),
        format!("id: {id}"),
    ]
    .iter()
    .map(|needle| line_of(text, needle))
    .find(|&line| line > 0)
    .unwrap_or(0)
}

impl Rubric {
    /// Parses and validates a rubric file; every problem, each with its line.
    pub fn parse(text: &str) -> Result<Self, Vec<RubricProblem>> {
        let raw: RawRubric = serde_norway::from_str(text).map_err(|error| {
            vec![RubricProblem {
                line: error.location().map_or(0, |location| location.line()),
                message: error.to_string(),
            }]
        })?;
        let mut problems = Vec::new();
        let mut problem = |line: usize, message: String| problems.push(RubricProblem { line, message });
        if raw.version != 1 {
            problem(
                line_of(text, "version:"),
                format!("version {} is not 1", raw.version),
            );
        }
        if (raw.scale.min, raw.scale.max) != (1, 5) {
            problem(
                line_of(text, "scale:"),
                format!("the scale is {}–{}, not 1–5", raw.scale.min, raw.scale.max),
            );
        }
        let mut ids: BTreeSet<&str> = BTreeSet::new();
        let mut domain_ids: Vec<&str> = Vec::new();
        for domain in &raw.domains {
            let line = line_of_id(text, &domain.id);
            if !ids.insert(&domain.id) {
                problem(line, format!("id `{}` is used twice", domain.id));
            }
            domain_ids.push(&domain.id);
            if domain.subdimensions.is_empty() {
                problem(line, format!("domain `{}` has no sub-dimensions", domain.id));
            }
            for sub in &domain.subdimensions {
                let line = line_of_id(text, &sub.id);
                if !ids.insert(&sub.id) {
                    problem(line, format!("id `{}` is used twice", sub.id));
                }
                if !sub.id.starts_with(domain.id.as_str()) {
                    problem(
                        line,
                        format!(
                            "sub-dimension `{}` does not start with its domain's id `{}`",
                            sub.id, domain.id
                        ),
                    );
                }
                let given: Vec<u8> = sub.anchors.keys().copied().collect();
                if given != ANCHORS {
                    problem(
                        line,
                        format!(
                            "sub-dimension `{}` has anchors {given:?}, not exactly 1, 3 and 5",
                            sub.id
                        ),
                    );
                }
                for (score, anchor) in &sub.anchors {
                    if anchor.trim().is_empty() {
                        problem(
                            line,
                            format!("sub-dimension `{}`: anchor {score} is empty", sub.id),
                        );
                    }
                }
            }
        }
        let mut rule_ids = BTreeSet::new();
        for rule in &raw.na_rules {
            let line = line_of_id(text, &rule.id);
            if !rule_ids.insert(&rule.id) {
                problem(line, format!("N/A rule `{}` is defined twice", rule.id));
            }
            if rule.applies_to.is_empty() {
                problem(line, format!("N/A rule `{}` applies to nothing", rule.id));
            }
            for target in &rule.applies_to {
                if !ids.contains(target.as_str()) {
                    problem(
                        line,
                        format!(
                            "N/A rule `{}` names `{target}`, which is no domain or sub-dimension",
                            rule.id
                        ),
                    );
                }
            }
        }
        if raw.profiles.is_empty() {
            problem(line_of(text, "profiles:"), "no weighting profiles".to_string());
        }
        for (profile, weights) in &raw.profiles {
            let line = line_of(text, &format!("{profile}:"));
            for domain in &domain_ids {
                if !weights.contains_key(*domain) {
                    problem(
                        line,
                        format!("profile `{profile}` gives domain `{domain}` no weight"),
                    );
                }
            }
            for (domain, weight) in weights {
                if !domain_ids.contains(&domain.as_str()) {
                    problem(
                        line,
                        format!("profile `{profile}` weighs `{domain}`, which is no domain"),
                    );
                }
                if !weight.is_finite() || *weight < 0.0 {
                    problem(
                        line,
                        format!("profile `{profile}`: weight {weight} of `{domain}` is not ≥ 0"),
                    );
                }
            }
            let total: f64 = weights.values().sum();
            if (total - 1.0).abs() > 1e-9 {
                problem(
                    line,
                    format!("profile `{profile}`'s weights sum to {total}, not 1"),
                );
            }
        }
        if !problems.is_empty() {
            problems.sort_by_key(|problem| problem.line);
            return Err(problems);
        }
        Ok(Self {
            name: raw.name,
            title: raw.title,
            domains: raw.domains,
            na_rules: raw.na_rules,
            profiles: raw.profiles,
            hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
        })
    }

    /// The built-in clinical-reasoning rubric.
    pub fn builtin() -> Result<Self, Vec<RubricProblem>> {
        Self::parse(BUILTIN)
    }

    /// Sub-dimensions in all.
    pub fn subdimension_count(&self) -> usize {
        self.domains.iter().map(|domain| domain.subdimensions.len()).sum()
    }

    /// The ids (domains and sub-dimensions) not applicable under `conditions`.
    pub fn not_applicable(&self, conditions: &[NaCondition]) -> BTreeSet<&str> {
        self.na_rules
            .iter()
            .filter(|rule| conditions.contains(&rule.when))
            .flat_map(|rule| rule.applies_to.iter().map(String::as_str))
            .collect()
    }

    /// Each domain's score: the mean of its scored sub-dimensions (`None`
    /// in `scores`: not applicable or not scored); domains with none left out.
    pub fn domain_scores(&self, scores: &BTreeMap<String, Option<f64>>) -> Vec<(&str, f64)> {
        self.domains
            .iter()
            .filter_map(|domain| {
                let scored: Vec<f64> = domain
                    .subdimensions
                    .iter()
                    .filter_map(|sub| scores.get(&sub.id).copied().flatten())
                    .collect();
                (!scored.is_empty()).then(|| {
                    (
                        domain.id.as_str(),
                        scored.iter().sum::<f64>() / scored.len() as f64,
                    )
                })
            })
            .collect()
    }

    /// The profile's weights renormalised over the scored domains (domain
    /// id → weight, summing to 1); empty when none is scored or the profile
    /// is unknown.
    pub fn weights(&self, profile: &str, scores: &BTreeMap<String, Option<f64>>) -> Vec<(String, f64)> {
        let Some(weights) = self.profiles.get(profile) else {
            return Vec::new();
        };
        let scored = self.domain_scores(scores);
        let total: f64 = scored
            .iter()
            .map(|(domain, _)| weights.get(*domain).copied().unwrap_or(0.0))
            .sum();
        if total <= 0.0 {
            return Vec::new();
        }
        scored
            .iter()
            .map(|(domain, _)| {
                (
                    domain.to_string(),
                    weights.get(*domain).copied().unwrap_or(0.0) / total,
                )
            })
            .collect()
    }

    /// [`Rubric::weights`] written out (`1: 0.167, 2: 0.167, …`).
    pub fn renormalised(&self, profile: &str, scores: &BTreeMap<String, Option<f64>>) -> String {
        self.weights(profile, scores)
            .iter()
            .map(|(domain, weight)| format!("{domain}: {weight:.3}"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The weighted composite of one response under `profile`: each domain's
    /// score is the mean of its scored sub-dimensions, and the profile's
    /// weights are renormalised over the domains that have a score. `None`
    /// when no domain has one or the profile is unknown.
    pub fn composite(&self, profile: &str, scores: &BTreeMap<String, Option<f64>>) -> Option<f64> {
        let weights = self.weights(profile, scores);
        if weights.is_empty() {
            return None;
        }
        let domain_scores = self.domain_scores(scores);
        Some(
            domain_scores
                .iter()
                .zip(&weights)
                .map(|((_, score), (_, weight))| score * weight)
                .sum(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"version: 1
name: test
title: "A test rubric"
scale: {min: 1, max: 5}
domains:
  - id: "1"
    name: accuracy
    description: "facts"
    subdimensions:
      - id: "1a"
        name: grounded
        anchors: {1: "invents", 3: "mostly grounded", 5: "every claim grounded"}
  - id: "2"
    name: temporal
    description: "time"
    subdimensions:
      - id: "2a"
        name: course
        anchors: {1: "ignores time", 3: "some", 5: "tracks the course"}
na_rules:
  - id: longitudinal_only
    applies_to: ["2"]
    when: single_encounter
    text: "only for multi-visit cases"
profiles:
  diagnosis: {"1": 0.75, "2": 0.25}
"#;

    #[test]
    fn the_builtin_rubric_is_valid() {
        let rubric = Rubric::builtin().unwrap_or_else(|problems| {
            panic!(
                "{}",
                problems
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            )
        });
        assert_eq!(rubric.domains.len(), 7);
        assert!(rubric.subdimension_count() >= 14);
        for id in ["3d", "6c"] {
            assert!(
                rubric
                    .domains
                    .iter()
                    .flat_map(|domain| &domain.subdimensions)
                    .any(|sub| sub.id == id),
                "{id}"
            );
        }
        assert!(
            rubric
                .not_applicable(&[NaCondition::SingleEncounter])
                .contains("4")
        );
        assert_eq!(rubric.hash.len(), 64);
    }

    #[test]
    fn the_composite_renormalises_over_the_scored_domains() {
        let rubric = Rubric::parse(SMALL).expect("valid");
        let scores = |pairs: &[(&str, Option<f64>)]| -> BTreeMap<String, Option<f64>> {
            pairs.iter().map(|(id, score)| (id.to_string(), *score)).collect()
        };
        let both = rubric.composite("diagnosis", &scores(&[("1a", Some(4.0)), ("2a", Some(2.0))]));
        assert!((both.expect("scored") - 3.5).abs() < 1e-12);
        // Domain 2 not applicable: domain 1 carries the whole weight.
        let one = rubric.composite("diagnosis", &scores(&[("1a", Some(4.0)), ("2a", None)]));
        assert_eq!(one, Some(4.0));
        assert_eq!(rubric.composite("diagnosis", &scores(&[])), None);
        assert_eq!(rubric.composite("triage", &scores(&[("1a", Some(4.0))])), None);
        assert_eq!(
            rubric.not_applicable(&[NaCondition::SingleEncounter]),
            BTreeSet::from(["2"])
        );
    }

    #[test]
    fn problems_name_their_line() {
        let broken = SMALL
            .replace(
                r#"anchors: {1: "invents", 3: "mostly grounded", 5: "every claim grounded"}"#,
                r#"anchors: {1: "invents", 5: "every claim grounded"}"#,
            )
            .replace(r#"applies_to: ["2"]"#, r#"applies_to: ["9"]"#)
            .replace(r#"{"1": 0.75, "2": 0.25}"#, r#"{"1": 0.75}"#);
        let problems = Rubric::parse(&broken).expect_err("broken");
        let shown: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(
            shown
                .iter()
                .any(|p| p.starts_with("10: ") && p.contains("not exactly 1, 3 and 5")),
            "{shown:?}"
        );
        assert!(
            shown.iter().any(|p| p.starts_with("21: ") && p.contains("`9`")),
            "{shown:?}"
        );
        assert!(
            shown.iter().any(|p| p.contains("gives domain `2` no weight")),
            "{shown:?}"
        );
        assert!(shown.iter().any(|p| p.contains("sum to 0.75")), "{shown:?}");
        let unknown = SMALL.replace("name: test", "name: test\nextra: 1");
        let problems = Rubric::parse(&unknown).expect_err("unknown key");
        assert_eq!(problems[0].line, 3, "{problems:?}");
        assert!(problems[0].message.contains("unknown field"), "{problems:?}");
    }
}
