//! Control subjects: recommenders with known behaviour that validate the
//! metric. They read the variant's facts (what the chart says after the
//! intervention), never call a model, and are marked `is_control` in every
//! output.
//!
//! - `control/reference` follows the guideline rule table: it should score CSS ≈ 1.
//! - `control/constant` gives one fixed plan per cancer type whatever the chart: CSS = 0.
//! - `control/blind-<kind>` is the reference blind to one fact kind
//!   (`surgery`, `biomarker`, `stage`, `prior_line`): CSS = 0 on the family
//!   that edits that kind, ≈ 1 elsewhere.
//! - `control/erratic` picks a guideline plan at random per variant (seeded by
//!   the variant id): it changes its answer on nearly every edit, so it shows a
//!   high spurious-shift rate on family N and a CSS far below `reference`.

use std::collections::HashMap;
use std::sync::Arc;

use cfeval_guidelines::Guidelines;
use cfeval_schema::{ConsensusItem, Fact, Reference, VariantRow};

use crate::error::{Error, Result};

pub use cfeval_schema::vocab::ControlKind;

/// A control subject.
#[derive(Debug, Clone)]
pub struct Control {
    pub name: String,
    pub kind: ControlKind,
    guidelines: Guidelines,
    /// A diagnosis pack's run: the cases' references (the control answers
    /// with [`cfeval_diagnosis::control`] instead of the guideline table).
    diagnosis: Option<Arc<DiagnosisRun>>,
}

/// What the diagnostic controls know of a run: each case's reference, and
/// every diagnosis of the run.
#[derive(Debug, Default)]
pub struct DiagnosisRun {
    pub references: HashMap<String, Reference>,
    pub diagnoses: cfeval_diagnosis::control::RunDiagnoses,
}

impl Control {
    /// Parses `control/<kind>`.
    pub fn parse(name: &str, guidelines: Guidelines) -> Result<Self> {
        let kind = ControlKind::of(name).ok_or_else(|| Error::UnknownControl(name.to_string()))?;
        Ok(Self {
            name: name.to_string(),
            kind,
            guidelines,
            diagnosis: None,
        })
    }

    /// This control for a diagnosis pack's run.
    pub fn for_diagnosis(mut self, run: Arc<DiagnosisRun>) -> Self {
        self.diagnosis = Some(run);
        self
    }

    /// The control's answer to a variant.
    pub fn answer_variant(&self, variant: &VariantRow) -> String {
        let Some(run) = &self.diagnosis else {
            return self.answer(&variant.facts, &variant.variant_id);
        };
        let empty = Reference::default();
        let reference = run.references.get(&variant.case_id).unwrap_or(&empty);
        cfeval_diagnosis::control::answer(
            &self.kind,
            &self.name,
            reference,
            &variant.facts,
            &run.diagnoses,
            cfeval_schema::ids::id_hash(&variant.variant_id),
        )
    }

    /// The plan items this control recommends for a chart's facts.
    pub fn recommend(&self, facts: &[Fact], variant_id: &str) -> Vec<ConsensusItem> {
        match &self.kind {
            ControlKind::Reference => self.guidelines.recommend(facts).items,
            ControlKind::Blind(kinds) => {
                let seen: Vec<Fact> = facts
                    .iter()
                    .filter(|fact| !kinds.contains(&fact.kind))
                    .cloned()
                    .collect();
                self.guidelines.recommend(&seen).items
            }
            ControlKind::Constant => {
                let cancer: Vec<Fact> = facts
                    .iter()
                    .filter(|fact| fact.kind == "cancer_type")
                    .cloned()
                    .collect();
                self.guidelines.recommend(&cancer).items
            }
            ControlKind::Erratic => {
                let cancer = facts
                    .iter()
                    .find(|fact| fact.kind == "cancer_type")
                    .map(|fact| fact.value.clone());
                let candidates: Vec<_> = self
                    .guidelines
                    .rules
                    .iter()
                    .filter(|rule| {
                        rule.when.cancer.is_empty()
                            || cancer.as_ref().is_some_and(|c| rule.when.cancer.contains(c))
                    })
                    .collect();
                if candidates.is_empty() {
                    return Vec::new();
                }
                let pick = (cfeval_schema::ids::id_hash(variant_id) % candidates.len() as u64) as usize;
                candidates[pick]
                    .items
                    .iter()
                    .map(|item| ConsensusItem {
                        text: item.text.clone(),
                        weight: item.weight,
                    })
                    .collect()
            }
        }
    }

    /// The control's answer in the same shape a model is asked for.
    pub fn answer(&self, facts: &[Fact], variant_id: &str) -> String {
        let items = self.recommend(facts, variant_id);
        let plan = if items.is_empty() {
            "no guideline plan applies; discuss at tumor board".to_string()
        } else {
            items
                .iter()
                .map(|item| item.text.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        };
        format!(
            "Reasoning: {} control subject ({}).\nRecommendation: {plan}",
            self.name,
            self.describe()
        )
    }

    fn describe(&self) -> &'static str {
        match self.kind {
            ControlKind::Reference => "follows the guideline rule table",
            ControlKind::Constant => "one fixed plan per cancer type",
            ControlKind::Blind(_) => "guideline rule table blind to one fact kind",
            ControlKind::Erratic => "a guideline plan picked at random per variant",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_control_names() {
        let table = Guidelines::builtin().expect("table");
        assert_eq!(
            Control::parse("control/reference", table.clone())
                .expect("ok")
                .kind,
            ControlKind::Reference
        );
        assert_eq!(
            Control::parse("control/blind-surgery", table.clone())
                .expect("ok")
                .kind,
            ControlKind::Blind(vec!["surgery".into()])
        );
        assert!(Control::parse("control/oracle", table.clone()).is_err());
        assert!(Control::parse("openai/gpt-5", table).is_err());
    }
}
