//! The regimen and drug-class ontology (`data/packs/oncology/ontology.yaml`) and
//! the reading of a reply into what it plans: classes, drugs, line, intent
//! and ordered tests.
//!
//! Reading follows a clinician: first find the plan ([`crate::reading::plan`]:
//! a `Recommendation:` label, a markdown or bold heading, an inline label,
//! else the last recommending paragraph), then classify every treatment and
//! test mention in it by context ([`crate::reading::context`]: planned,
//! negated, historical, conditional, hypothetical). Only planned mentions
//! enter the plan; negated ones are what the plan rules out.
//!
//! Matching is on normalised words (lower case, every run of other
//! characters one space), leftmost-longest, so `T-DXd`, `t-dxd` and `TDXd`
//! read alike and `trastuzumab deruxtecan` is never also `trastuzumab`.
//! Every phrase — drugs, brands, regimens, classes, triggers, plan labels —
//! is data in the ontology file.

use std::collections::{BTreeMap, BTreeSet};

use crate::reading::context::{ContextRules, Phrases};
use crate::reading::mention::MentionVocabulary;
use crate::reading::plan::{Plan, PlanVocabulary};

mod analyze;
mod facts;
mod load;

pub use load::BUILTIN_ONCOLOGY_YAML;

/// What a treatment phrase names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Treatment {
    Drug(String),
    Regimen(String),
    Class(String),
    /// A phrase that holds a treatment word but names none ("resection specimen").
    Nothing,
}

/// The loaded ontology.
#[derive(Debug, Clone)]
pub struct Ontology {
    hash: String,
    /// Canonical drug name to its classes.
    drug_classes: BTreeMap<String, BTreeSet<String>>,
    /// Regimen name to component drugs.
    regimen_components: BTreeMap<String, Vec<String>>,
    derived: BTreeMap<String, Vec<String>>,
    curative_classes: BTreeSet<String>,
    ancillary_classes: BTreeSet<String>,
    treatments: Phrases<Treatment>,
    monotherapy: Phrases<()>,
    /// Words that give two treatments at once (`with`, `concurrent`).
    concurrent: Phrases<()>,
    /// Words that stop a treatment under way (`stop`, `d/c`): what a plan
    /// stops, its other mentions do not plan.
    stop_words: Phrases<()>,
    /// Dose and schedule words (`mg`, `daily`, `q3w`) a status word after a
    /// treatment may stand past (`Letrozole 2.5 mg daily — STOP`).
    dose_words: Phrases<()>,
    /// Words that continue or give again a treatment (`continue`,
    /// `re-introducing`): a stop elsewhere does not undo them.
    continue_words: Phrases<()>,
    intent: Phrases<String>,
    lines: Phrases<String>,
    order_words: Phrases<()>,
    result_words: Phrases<()>,
    markers: Phrases<String>,
    marker_names: BTreeSet<String>,
    /// Fact kind to its phrases, each to the value it states.
    mentions: BTreeMap<String, Phrases<String>>,
    mention_vocabulary: MentionVocabulary,
    unchanged_cues: Phrases<()>,
    context: ContextRules,
    vocabulary: PlanVocabulary,
    /// Drug to the name of its interchangeable group.
    drug_group: BTreeMap<String, String>,
    modulators: BTreeSet<String>,
    time_reference_words: BTreeSet<String>,
    time_reference_fillers: BTreeSet<String>,
    time_reference_classes: BTreeSet<String>,
    followup_classes: BTreeSet<String>,
    active_classes: BTreeSet<String>,
    core_classes: BTreeSet<String>,
    line_order: Vec<String>,
    backbone_classes: BTreeSet<String>,
}

/// What a reply plans, as the ontology reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Treatment classes planned (derived classes included).
    pub classes: BTreeSet<String>,
    /// Canonical drugs planned (regimens expanded to their components).
    pub drugs: BTreeSet<String>,
    /// Classes and drugs the plan rules out ("no rechallenge with …").
    pub avoided: BTreeSet<String>,
    /// Classes and drugs named only as a contingency or hypothesis
    /// ("on progression, BRAF/MEK"): not planned.
    pub contingent: BTreeSet<String>,
    /// Classes and drugs named only as history ("s/p lobectomy").
    pub history: BTreeSet<String>,
    /// Follow-up classes planned beside an active treatment ("CT
    /// surveillance after SBRT"): part of that treatment, not in `classes`.
    pub followup: BTreeSet<String>,
    /// `curative` or `palliative`: stated, else inferred from the classes.
    pub intent: Option<String>,
    /// Line-of-therapy words found (`first`, `second`, `third`, `next`).
    pub lines: BTreeSet<String>,
    /// Markers the reply orders a test for (anywhere in it, see [`Ontology::read`]).
    pub tests: BTreeSet<String>,
    /// The reply says its plan is unchanged ("no change", "continue current plan").
    pub unchanged: bool,
    /// The plan's identity for "did it move": planned classes (less the
    /// ancillary ones: monitoring, survivorship, trials), drugs, tests, intent.
    pub signature: BTreeSet<String>,
    /// The plan's treatments alone: drugs (by interchangeable group) and
    /// treatment modalities, without settings, tests, intent or follow-up.
    /// A plan whose core held has not moved in any direction, whatever it
    /// added around it.
    pub core: BTreeSet<String>,
    /// The reply says its operation is done (`s/p lobectomy`, `after this R0
    /// gastrectomy`), anywhere in it.
    pub operation_done: bool,
}

impl Analysis {
    /// Whether nothing was recognised as planned, ruled out or ordered.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.drugs.is_empty() && self.tests.is_empty() && self.avoided.is_empty()
    }

    /// The plan's identity for "did it move".
    pub fn signature(&self) -> &BTreeSet<String> {
        &self.signature
    }

    /// Whether a catalog class is planned; `a_or_b` means either.
    pub fn has_class(&self, class: &str) -> bool {
        class_alternatives(class)
            .iter()
            .any(|alternative| self.classes.contains(alternative.as_str()))
    }
}

/// A reply read whole: where its plan is and what the plan says.
#[derive(Debug, Clone)]
pub struct Reading {
    pub plan: Plan,
    pub analysis: Analysis,
}

/// The alternatives of a catalog class name (`definitive_chemoradiation_or_systemic_therapy`).
pub fn class_alternatives(class: &str) -> Vec<String> {
    class.split("_or_").map(str::to_string).collect()
}

/// Lower case, every run of non-alphanumeric characters one separator.
pub fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_string)
        .collect()
}

/// Splits text into clauses at `;`, line ends, bullets and sentence ends.
pub(crate) fn clauses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let characters: Vec<char> = text.chars().collect();
    for (index, &character) in characters.iter().enumerate() {
        // A mark that stands alone ("HER2 ? - not on chart") is shorthand,
        // not the end of a sentence.
        let sentence_end = matches!(character, '.' | '?' | '!')
            && characters.get(index + 1).is_none_or(|next| next.is_whitespace())
            && index
                .checked_sub(1)
                .is_none_or(|previous| !characters[previous].is_whitespace());
        if matches!(character, ';' | '\n' | '•' | '|') || sentence_end {
            out.push(std::mem::take(&mut current));
        } else {
            current.push(character);
        }
    }
    out.push(current);
    out.retain(|clause| !clause.trim().is_empty());
    out
}

impl Ontology {
    /// BLAKE3 of the ontology file: part of every rule judgment's prompt hash.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Every class any drug, regimen or phrase can produce (derived included).
    pub fn known_classes(&self) -> BTreeSet<String> {
        let mut classes: BTreeSet<String> = self.drug_classes.values().flatten().cloned().collect();
        for treatment in self.treatments.values() {
            if let Treatment::Class(class) = treatment {
                classes.insert(class.clone());
            }
        }
        classes.extend(self.derived.keys().cloned());
        classes.insert("immunotherapy_monotherapy".into());
        classes
    }

    /// Every canonical drug name.
    pub fn drugs(&self) -> impl Iterator<Item = &str> {
        self.drug_classes.keys().map(String::as_str)
    }

    /// Whether a signature or core item (`class:surgical_resection`) is an
    /// operation.
    pub fn is_operation(&self, item: &str) -> bool {
        item.strip_prefix("class:")
            .is_some_and(|class| self.time_reference_classes.contains(class))
    }

    /// Whether a marker name is known (`HER2`, `PD-L1`, …).
    pub fn is_marker(&self, name: &str) -> bool {
        self.marker_names.contains(name)
    }

    /// The drugs and classes a regimen (as written, e.g. a prior line's name)
    /// contains, whatever negation cues its text holds.
    pub fn regimen(&self, text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut drugs = BTreeSet::new();
        let mut classes = BTreeSet::new();
        for (_, _, treatment) in self.treatments.find(&words(text)) {
            let (found_drugs, found_classes) = self.expand(&treatment);
            drugs.extend(found_drugs);
            classes.extend(found_classes);
        }
        self.derive(&mut classes, false);
        (drugs, classes)
    }

    /// A regimen's backbone (its drugs of a backbone class, else all its
    /// drugs, modulators left out), by interchangeable group.
    pub fn backbone(&self, regimen: &str) -> BTreeSet<String> {
        let (drugs, _) = self.regimen(regimen);
        let backbone: BTreeSet<String> = drugs
            .iter()
            .filter(|drug| {
                self.drug_classes
                    .get(*drug)
                    .is_some_and(|classes| classes.iter().any(|class| self.backbone_classes.contains(class)))
            })
            .cloned()
            .collect();
        self.groups(if backbone.is_empty() { &drugs } else { &backbone })
    }

    /// Drugs by interchangeable group, modulators left out.
    pub fn groups(&self, drugs: &BTreeSet<String>) -> BTreeSet<String> {
        drugs
            .iter()
            .filter(|drug| !self.modulators.contains(*drug))
            .map(|drug| self.drug_group.get(drug).unwrap_or(drug).clone())
            .collect()
    }

    fn expand(&self, treatment: &Treatment) -> (Vec<String>, Vec<String>) {
        match treatment {
            Treatment::Drug(name) => (
                vec![name.clone()],
                self.drug_classes
                    .get(name)
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect(),
            ),
            Treatment::Regimen(name) => {
                let components = self.regimen_components.get(name).cloned().unwrap_or_default();
                let classes = components
                    .iter()
                    .flat_map(|drug| self.drug_classes.get(drug).into_iter().flatten().cloned())
                    .collect();
                (components, classes)
            }
            Treatment::Class(class) => (Vec::new(), vec![class.clone()]),
            Treatment::Nothing => (Vec::new(), Vec::new()),
        }
    }
}

/// What the ontology's tests share.
#[cfg(test)]
pub(crate) mod testing {
    use std::collections::BTreeSet;

    use super::Ontology;

    pub(crate) fn ontology() -> Ontology {
        Ontology::builtin().expect("the built-in ontology loads")
    }

    pub(crate) fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|item| item.to_string()).collect()
    }
}

#[cfg(test)]
mod tests {

    use super::testing::{ontology, set};

    #[test]
    fn regimens_expand_to_components_and_classes() {
        let ontology = ontology();
        let folfirinox = ontology.analyze("FOLFIRINOX");
        assert_eq!(
            folfirinox.drugs,
            set(&["fluorouracil", "irinotecan", "leucovorin", "oxaliplatin"])
        );
        assert!(folfirinox.classes.contains("platinum_chemotherapy"));
        assert!(folfirinox.classes.contains("systemic_therapy"));
        let tdxd = ontology.analyze("T-DXd 5.4 mg/kg");
        assert_eq!(tdxd.drugs, set(&["trastuzumab deruxtecan"]));
        assert!(tdxd.classes.contains("her2_targeted"));
        let thp = ontology.analyze("THP (paclitaxel, Herceptin, Perjeta)");
        assert_eq!(thp.drugs, set(&["paclitaxel", "pertuzumab", "trastuzumab"]));
        let act = ontology.analyze("dose-dense AC-T");
        assert_eq!(act.drugs, set(&["cyclophosphamide", "doxorubicin", "paclitaxel"]));
        assert_eq!(
            ontology.analyze("TCHP").drugs,
            set(&["carboplatin", "docetaxel", "pertuzumab", "trastuzumab"])
        );
        assert_eq!(ontology.analyze("CAPOX").drugs, ontology.analyze("XELOX").drugs);
        assert_eq!(
            ontology.analyze("FOLFOX").drugs,
            set(&["fluorouracil", "leucovorin", "oxaliplatin"])
        );
    }

    /// Completing a perioperative course after the operation is its
    /// post-operative part: adjuvant, not neoadjuvant.
    #[test]
    fn completing_a_perioperative_course_is_adjuvant() {
        let ontology = ontology();
        let completing = ontology.analyze("adjuvant CAPOX to complete perioperative treatment");
        assert!(
            completing.classes.contains("adjuvant_therapy"),
            "{:?}",
            completing.classes
        );
        assert!(
            !completing.classes.contains("neoadjuvant_therapy"),
            "{:?}",
            completing.classes
        );
        let whole = ontology.analyze("perioperative FLOT, four cycles before and four after surgery");
        assert!(
            whole.classes.contains("neoadjuvant_therapy"),
            "{:?}",
            whole.classes
        );
    }

    #[test]
    fn longest_phrase_wins() {
        let ontology = ontology();
        let analysis = ontology.analyze("trastuzumab deruxtecan");
        assert_eq!(analysis.drugs, set(&["trastuzumab deruxtecan"]));
        let nab = ontology.analyze("gemcitabine + nab-paclitaxel");
        assert_eq!(nab.drugs, set(&["gemcitabine", "nab paclitaxel"]));
    }

    #[test]
    fn interchangeable_drugs_and_modulators_keep_the_signature() {
        let ontology = ontology();
        assert_eq!(
            ontology.analyze("FOLFOX").signature,
            ontology.analyze("CAPOX").signature
        );
        assert_eq!(
            ontology.analyze("letrozole").signature,
            ontology.analyze("anastrozole").signature
        );
        assert_ne!(
            ontology.analyze("FOLFOX").signature,
            ontology.analyze("FOLFIRI").signature
        );
    }

    #[test]
    fn guideline_drug_fragments_are_known_drugs() {
        let ontology = ontology();
        let table = cfeval_guidelines::Guidelines::builtin().expect("guidelines");
        for fragment in table.drug_classes.keys() {
            assert!(
                !ontology.analyze(fragment).drugs.is_empty(),
                "guideline drug fragment `{fragment}` is not a drug of the ontology"
            );
        }
    }
}
