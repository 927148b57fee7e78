//! The decision-relevant summary of a fact set.

use std::collections::{BTreeMap, BTreeSet};

use cfeval_schema::Fact;

use crate::{Guidelines, Setting};

/// What the guideline rules look at, derived from a case's facts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Profile {
    pub cancer_type: Option<String>,
    /// Stage group I–IV (a metastatic fact without a stage means IV).
    pub stage: Option<String>,
    /// `resected`, `unresected` or `not_done` (no surgery fact).
    pub surgery: String,
    /// Biomarker name to value; an absent marker is `unknown`.
    pub markers: BTreeMap<String, String>,
    /// The PD-L1 level (TPS % or CPS) when known.
    pub pdl1_level: Option<f64>,
    /// Drug classes of prior lines that progressed.
    pub progressed_classes: BTreeSet<String>,
    /// Whether any prior line progressed.
    pub any_progression: bool,
}

impl Profile {
    /// Summarises facts; affirmed facts only, the first of a kind wins
    /// (facts of `origin = reference` and extracted facts read the same).
    pub fn from_facts(facts: &[Fact], table: &Guidelines) -> Self {
        let mut profile = Profile {
            surgery: "not_done".to_string(),
            ..Profile::default()
        };
        let mut surgery_seen = false;
        let mut metastatic = false;
        for fact in facts {
            match fact.kind.as_str() {
                "cancer_type" if profile.cancer_type.is_none() => {
                    profile.cancer_type = Some(fact.value.clone());
                }
                "stage" if fact.name == "group" && profile.stage.is_none() => {
                    profile.stage = Some(fact.value.clone());
                }
                "metastatic" if fact.value == "true" => metastatic = true,
                "surgery" if !surgery_seen => {
                    surgery_seen = true;
                    profile.surgery = fact.value.clone();
                }
                "biomarker" => {
                    if profile.markers.contains_key(&fact.name) {
                        continue;
                    }
                    profile.markers.insert(fact.name.clone(), fact.value.clone());
                    if fact.name == "PD-L1" {
                        profile.pdl1_level = pdl1_level(&fact.value, fact.detail.as_deref());
                    }
                }
                "prior_line" if fact.value == "progression" => {
                    profile.any_progression = true;
                    profile
                        .progressed_classes
                        .extend(table.drug_classes_of(&fact.name));
                }
                _ => {}
            }
        }
        if metastatic && profile.stage.is_none() {
            profile.stage = Some("IV".to_string());
        }
        profile
    }

    /// A marker's value, `unknown` when there is no fact for it.
    pub fn marker(&self, name: &str) -> &str {
        self.markers.get(name).map_or("unknown", String::as_str)
    }

    /// First line or after progression.
    pub fn setting(&self) -> Setting {
        if self.any_progression {
            Setting::AfterProgression
        } else {
            Setting::FirstLine
        }
    }
}

/// The PD-L1 level from a biomarker value and its detail (`TPS 60%`,
/// `CPS 12`, `high`, `<1%`).
pub fn pdl1_level(value: &str, detail: Option<&str>) -> Option<f64> {
    match value {
        "negative" => return Some(detail.and_then(first_number).unwrap_or(0.0)),
        "positive" => {}
        _ => return None,
    }
    let Some(detail) = detail else {
        return Some(1.0);
    };
    if let Some(number) = first_number(detail) {
        return Some(number);
    }
    let lower = detail.to_ascii_lowercase();
    if lower.contains("high") {
        Some(50.0)
    } else if lower.contains("low") {
        Some(10.0)
    } else {
        Some(1.0)
    }
}

fn first_number(text: &str) -> Option<f64> {
    let start = text.find(|character: char| character.is_ascii_digit())?;
    let rest = &text[start..];
    let end = rest
        .find(|character: char| !(character.is_ascii_digit() || character == '.'))
        .unwrap_or(rest.len());
    let number: f64 = rest[..end].parse().ok()?;
    // "<1%" is below one.
    if text[..start].trim_end().ends_with('<') {
        return Some(number - 0.5);
    }
    Some(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pdl1_levels_parse() {
        assert_eq!(pdl1_level("positive", Some("TPS 60%")), Some(60.0));
        assert_eq!(pdl1_level("positive", Some("CPS 12")), Some(12.0));
        assert_eq!(pdl1_level("positive", Some("high")), Some(50.0));
        assert_eq!(pdl1_level("negative", Some("TPS <1%")), Some(0.5));
        assert_eq!(pdl1_level("negative", None), Some(0.0));
        assert_eq!(pdl1_level("unknown", Some("TPS 60%")), None);
    }
}
