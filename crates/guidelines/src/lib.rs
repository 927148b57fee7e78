//! `cfeval-guidelines`: the oncology guideline rule table and its evaluator.
//!
//! The table is data (`data/packs/oncology/guidelines.yaml`): one rule per line of
//! guidance, each naming the guideline it paraphrases. [`Guidelines::recommend`]
//! maps a fact set (the `cases` table's [`Fact`]s, in the SPEC vocabulary) to
//! the weighted plan items of the expert-consensus recommendation and the ids
//! of the rules that produced them.
//!
//! The cohort generator (`cfeval-synthesize`) uses it to write each case's
//! reference; the guideline-following control subject and the rule judge use
//! it directly, which is why it is a leaf crate of its own.
//!
//! [`staging`] holds the AJCC stage-group tables (`data/packs/oncology/staging.yaml`):
//! the generator draws T and N consistent with a stage group from them, and
//! the chart coherence check of `cfeval-perturb` reads them.

mod error;
mod profile;
pub mod staging;

use std::collections::BTreeMap;
use std::path::Path;

use cfeval_schema::{ConsensusItem, Fact};
use serde::{Deserialize, Serialize};

pub use error::{Error, Result};
pub use profile::Profile;
pub use staging::{Basis, Staging};

/// The rule table shipped with cfeval, compiled in.
pub const BUILTIN_ONCOLOGY_YAML: &str = cfeval_schema::pack::oncology::GUIDELINES;

/// A loaded, validated guideline rule table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guidelines {
    pub version: u32,
    /// Lower-case drug or regimen name fragments to drug classes.
    pub drug_classes: BTreeMap<String, String>,
    pub rules: Vec<Rule>,
}

/// One line of guidance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub id: String,
    /// Rules of one group compete: the first match in file order wins.
    pub group: String,
    /// The guideline (and section) the rule paraphrases.
    pub guideline: String,
    /// The line of guidance in one sentence.
    pub says: String,
    #[serde(default)]
    pub when: Condition,
    pub items: Vec<Item>,
}

/// A weighted plan item of a rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Item {
    pub text: String,
    pub weight: f64,
}

/// When a rule applies; every present condition must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    #[serde(default)]
    pub cancer: Vec<String>,
    #[serde(default)]
    pub stage: Vec<String>,
    #[serde(default)]
    pub surgery: Vec<String>,
    #[serde(default)]
    pub markers: BTreeMap<String, Vec<String>>,
    #[serde(default)]
    pub pdl1_at_least: Option<f64>,
    #[serde(default)]
    pub pdl1_below: Option<f64>,
    #[serde(default)]
    pub setting: Option<Setting>,
    #[serde(default)]
    pub progressed_on: Option<String>,
    #[serde(default)]
    pub not_progressed_on: Option<String>,
}

/// The treatment setting a case is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setting {
    /// No prior line has progressed.
    FirstLine,
    /// At least one prior line progressed.
    AfterProgression,
}

/// The recommendation a fact set gets: weighted items and the rules behind them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recommendation {
    pub items: Vec<ConsensusItem>,
    pub rules: Vec<String>,
}

const STAGES: [&str; 4] = ["I", "II", "III", "IV"];
const SURGERY: [&str; 3] = ["resected", "unresected", "not_done"];
const MARKER_VALUES: [&str; 4] = ["positive", "negative", "equivocal", "unknown"];

impl Guidelines {
    /// The table shipped with cfeval.
    pub fn builtin() -> Result<Self> {
        Self::parse(
            BUILTIN_ONCOLOGY_YAML,
            "data/packs/oncology/guidelines.yaml (built in)",
        )
    }

    /// Loads and validates a rule table file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and validates a rule table; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let table: Guidelines = serde_norway::from_str(text).map_err(|source| Error::Parse {
            origin: origin.to_string(),
            source,
        })?;
        table.validate(origin)?;
        Ok(table)
    }

    fn validate(&self, origin: &str) -> Result<()> {
        let invalid = |rule: &str, message: String| Error::Invalid {
            origin: origin.to_string(),
            rule: rule.to_string(),
            message,
        };
        let mut seen = std::collections::BTreeSet::new();
        for rule in &self.rules {
            if !seen.insert(rule.id.as_str()) {
                return Err(invalid(&rule.id, "duplicate rule id".into()));
            }
            if rule.items.is_empty() {
                return Err(invalid(&rule.id, "a rule needs at least one item".into()));
            }
            for item in &rule.items {
                if !(item.weight > 0.0 && item.weight <= 1.0) {
                    return Err(invalid(
                        &rule.id,
                        format!("item weight {} is not in (0, 1]", item.weight),
                    ));
                }
            }
            let when = &rule.when;
            if let Some(bad) = when.stage.iter().find(|stage| !STAGES.contains(&stage.as_str())) {
                return Err(invalid(&rule.id, format!("unknown stage group `{bad}`")));
            }
            if let Some(bad) = when
                .surgery
                .iter()
                .find(|value| !SURGERY.contains(&value.as_str()))
            {
                return Err(invalid(&rule.id, format!("unknown surgery status `{bad}`")));
            }
            for (marker, values) in &when.markers {
                if let Some(bad) = values
                    .iter()
                    .find(|value| !MARKER_VALUES.contains(&value.as_str()))
                {
                    return Err(invalid(
                        &rule.id,
                        format!("unknown value `{bad}` for marker {marker}"),
                    ));
                }
            }
            for class in when.progressed_on.iter().chain(&when.not_progressed_on) {
                if !self.drug_classes.values().any(|known| known == class) {
                    return Err(invalid(&rule.id, format!("unknown drug class `{class}`")));
                }
            }
        }
        Ok(())
    }

    /// The drug classes a regimen (as written) belongs to, sorted.
    pub fn drug_classes_of(&self, regimen: &str) -> Vec<String> {
        let lower = regimen.to_ascii_lowercase();
        let mut classes: Vec<String> = self
            .drug_classes
            .iter()
            .filter(|(fragment, _)| lower.contains(fragment.as_str()))
            .map(|(_, class)| class.clone())
            .collect();
        classes.sort();
        classes.dedup();
        classes
    }

    /// The recommendation for a fact set (facts of any origin).
    pub fn recommend(&self, facts: &[Fact]) -> Recommendation {
        self.recommend_profile(&Profile::from_facts(facts, self))
    }

    /// The recommendation for a profile.
    pub fn recommend_profile(&self, profile: &Profile) -> Recommendation {
        let mut decided_groups: Vec<&str> = Vec::new();
        let mut recommendation = Recommendation::default();
        for rule in &self.rules {
            if decided_groups.contains(&rule.group.as_str()) || !self.matches(&rule.when, profile) {
                continue;
            }
            decided_groups.push(&rule.group);
            recommendation.rules.push(rule.id.clone());
            for item in &rule.items {
                if !recommendation.items.iter().any(|known| known.text == item.text) {
                    recommendation.items.push(ConsensusItem {
                        text: item.text.clone(),
                        weight: item.weight,
                    });
                }
            }
        }
        recommendation
    }

    /// Whether a condition holds for a profile.
    pub fn matches(&self, when: &Condition, profile: &Profile) -> bool {
        let within = |allowed: &[String], value: Option<&str>| {
            allowed.is_empty() || value.is_some_and(|value| allowed.iter().any(|item| item == value))
        };
        if !within(&when.cancer, profile.cancer_type.as_deref())
            || !within(&when.stage, profile.stage.as_deref())
            || !within(&when.surgery, Some(profile.surgery.as_str()))
        {
            return false;
        }
        for (marker, allowed) in &when.markers {
            if !allowed.iter().any(|value| value == profile.marker(marker)) {
                return false;
            }
        }
        if let Some(minimum) = when.pdl1_at_least
            && !profile.pdl1_level.is_some_and(|level| level >= minimum)
        {
            return false;
        }
        if let Some(bound) = when.pdl1_below
            && !profile.pdl1_level.is_some_and(|level| level < bound)
        {
            return false;
        }
        if let Some(setting) = when.setting
            && setting != profile.setting()
        {
            return false;
        }
        if let Some(class) = &when.progressed_on
            && !profile.progressed_classes.contains(class)
        {
            return false;
        }
        if let Some(class) = &when.not_progressed_on
            && profile.progressed_classes.contains(class)
        {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(kind: &str, name: &str, value: &str, detail: Option<&str>) -> Fact {
        Fact {
            detail: detail.map(str::to_string),
            ..Fact::spanned(kind, name, value, "x", 0, "", "reference")
        }
    }

    fn texts(recommendation: &Recommendation) -> Vec<&str> {
        recommendation
            .items
            .iter()
            .map(|item| item.text.as_str())
            .collect()
    }

    #[test]
    fn builtin_table_loads_and_validates() {
        let table = Guidelines::builtin().unwrap();
        assert!(table.rules.len() > 50);
        assert!(table.rules.iter().all(|rule| !rule.guideline.is_empty()));
    }

    #[test]
    fn her2_flip_changes_breast_plan() {
        let table = Guidelines::builtin().unwrap();
        let mut facts = vec![
            fact("cancer_type", "primary", "breast", None),
            fact("stage", "group", "IV", None),
            fact("biomarker", "HER2", "positive", None),
            fact("biomarker", "ER", "positive", None),
        ];
        let positive = table.recommend(&facts);
        assert!(texts(&positive).contains(&"trastuzumab + pertuzumab with taxane"));
        assert!(
            positive
                .rules
                .contains(&"breast-her2pos-metastatic-first-line".to_string())
        );
        facts[2].value = "negative".into();
        let negative = table.recommend(&facts);
        assert!(texts(&negative).contains(&"aromatase inhibitor + CDK4/6 inhibitor"));
        assert!(!texts(&negative).contains(&"trastuzumab + pertuzumab with taxane"));
        facts.remove(2);
        let unknown = table.recommend(&facts);
        assert!(texts(&unknown).contains(&"HER2 testing (IHC with reflex ISH)"));
    }

    #[test]
    fn pdl1_level_and_progression_on_immunotherapy_change_nsclc_plan() {
        let table = Guidelines::builtin().unwrap();
        let mut facts = vec![
            fact("cancer_type", "primary", "nsclc", None),
            fact("stage", "group", "IV", None),
            fact("biomarker", "EGFR", "negative", None),
            fact("biomarker", "PD-L1", "positive", Some("TPS 80%")),
        ];
        assert!(texts(&table.recommend(&facts)).contains(&"pembrolizumab monotherapy"));
        facts[3].detail = Some("TPS 10%".into());
        assert!(texts(&table.recommend(&facts)).contains(&"platinum doublet chemotherapy + pembrolizumab"));
        facts.push(fact(
            "prior_line",
            "carboplatin/pemetrexed/pembrolizumab",
            "progression",
            None,
        ));
        let after = table.recommend(&facts);
        assert!(texts(&after).contains(&"docetaxel with or without ramucirumab"));
        let last = facts.len() - 1;
        facts[last].name = "carboplatin/pemetrexed".into();
        assert!(texts(&table.recommend(&facts)).contains(&"PD-1 inhibitor (nivolumab or pembrolizumab)"));
    }

    #[test]
    fn surgery_and_stage_change_plan() {
        let table = Guidelines::builtin().unwrap();
        let mut facts = vec![
            fact("cancer_type", "primary", "colorectal", None),
            fact("stage", "group", "III", None),
            fact("surgery", "hemicolectomy", "resected", None),
            fact("biomarker", "MSI", "negative", None),
        ];
        assert!(texts(&table.recommend(&facts)).contains(&"adjuvant FOLFOX or CAPOX"));
        facts[2].value = "not_done".into();
        assert!(
            texts(&table.recommend(&facts)).contains(&"surgical resection (colectomy with lymphadenectomy)")
        );
        // Unresected = not a surgical candidate: never "go to surgery".
        facts[2].value = "unresected".into();
        let unresected = table.recommend(&facts);
        assert!(!texts(&unresected).contains(&"surgical resection (colectomy with lymphadenectomy)"));
        assert!(texts(&unresected).contains(
            &"definitive chemoradiation (rectal primary) or fluoropyrimidine-based systemic chemotherapy"
        ));
        facts[1].value = "IV".into();
        assert!(texts(&table.recommend(&facts)).contains(&"FOLFOX or CAPOX + bevacizumab"));
    }

    #[test]
    fn after_progression_the_progressed_regimen_is_not_repeated() {
        let table = Guidelines::builtin().unwrap();
        let mut facts = vec![
            fact("cancer_type", "primary", "pancreatic", None),
            fact("stage", "group", "IV", None),
            fact("prior_line", "gemcitabine + nab-paclitaxel", "progression", None),
        ];
        let after_gnp = texts(&table.recommend(&facts)).join("; ");
        assert!(after_gnp.contains("nal-IRI"), "{after_gnp}");
        assert!(!after_gnp.contains("gemcitabine"), "{after_gnp}");
        facts[2].name = "FOLFIRINOX".into();
        let after_ffx = texts(&table.recommend(&facts)).join("; ");
        assert!(after_ffx.contains("gemcitabine + nab-paclitaxel"), "{after_ffx}");
        let melanoma = vec![
            fact("cancer_type", "primary", "melanoma", None),
            fact("stage", "group", "IV", None),
            fact("biomarker", "BRAF", "negative", None),
            fact("prior_line", "ipilimumab + nivolumab", "progression", None),
        ];
        let after_ipi = texts(&table.recommend(&melanoma)).join("; ");
        assert!(!after_ipi.contains("ipilimumab"), "{after_ipi}");
    }

    #[test]
    fn invalid_tables_are_rejected_with_the_rule_named() {
        let bad = "version: 1\ndrug_classes: {}\nrules:\n  - {id: a, group: g, guideline: x, says: y, when: {stage: [V]}, items: [{text: t, weight: 1.0}]}\n";
        let error = Guidelines::parse(bad, "bad.yaml").unwrap_err().to_string();
        assert!(
            error.contains("bad.yaml") && error.contains("rule a") && error.contains("`V`"),
            "{error}"
        );
        let unknown_key = "version: 1\ndrug_classes: {}\nrules: []\nextra: 1\n";
        let error = Guidelines::parse(unknown_key, "k.yaml").unwrap_err().to_string();
        assert!(error.contains("k.yaml") && error.contains("line"), "{error}");
    }
}
