//! The regimen and drug-class ontology (`data/ontology/oncology.yaml`) and
//! the analysis of a recommendation's text into classes, drugs, line, intent
//! and ordered tests.
//!
//! Matching is on normalised words (lower case, every run of other
//! characters one space), leftmost-longest, so `T-DXd`, `t-dxd` and `TDXd`
//! read alike and `trastuzumab deruxtecan` is never also `trastuzumab`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// The ontology shipped with cfeval, compiled in.
pub const BUILTIN_ONCOLOGY_YAML: &str = include_str!("../../../data/ontology/oncology.yaml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOntology {
    version: u32,
    drugs: BTreeMap<String, RawDrug>,
    regimens: BTreeMap<String, RawRegimen>,
    class_phrases: BTreeMap<String, Vec<String>>,
    derived: BTreeMap<String, Vec<String>>,
    monotherapy_words: Vec<String>,
    negation_cues: Vec<String>,
    intent: BTreeMap<String, Vec<String>>,
    curative_classes: Vec<String>,
    lines: BTreeMap<String, Vec<String>>,
    test_words: Vec<String>,
    markers: BTreeMap<String, Vec<String>>,
    mentions: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDrug {
    #[serde(default)]
    aliases: Vec<String>,
    classes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegimen {
    #[serde(default)]
    aliases: Vec<String>,
    components: Vec<String>,
}

/// What a treatment phrase names.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Treatment {
    Drug(String),
    Regimen(String),
    Class(String),
}

/// Phrases of one kind, matched leftmost-longest on normalised words.
#[derive(Debug, Clone)]
struct PhraseSet<T> {
    /// First word to (phrase words, value), longest first.
    by_first: HashMap<String, Vec<(Vec<String>, T)>>,
}

impl<T> Default for PhraseSet<T> {
    fn default() -> Self {
        Self {
            by_first: HashMap::new(),
        }
    }
}

impl<T: Clone> PhraseSet<T> {
    fn insert(&mut self, phrase: &str, value: T) {
        let words = words(phrase);
        let Some(first) = words.first().cloned() else {
            return;
        };
        let list = self.by_first.entry(first).or_default();
        list.push((words, value));
        list.sort_by_key(|(words, _)| std::cmp::Reverse(words.len()));
    }

    /// Every match as (start word, end word, value), leftmost-longest.
    fn find(&self, tokens: &[String]) -> Vec<(usize, usize, T)> {
        let mut found = Vec::new();
        let mut index = 0;
        while index < tokens.len() {
            let hit = self.by_first.get(&tokens[index]).and_then(|candidates| {
                candidates.iter().find(|(phrase, _)| {
                    tokens.len() - index >= phrase.len() && tokens[index..index + phrase.len()] == phrase[..]
                })
            });
            match hit {
                Some((phrase, value)) => {
                    found.push((index, index + phrase.len(), value.clone()));
                    index += phrase.len();
                }
                None => index += 1,
            }
        }
        found
    }

    fn contains(&self, tokens: &[String]) -> bool {
        !self.find(tokens).is_empty()
    }
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
    treatments: PhraseSet<Treatment>,
    monotherapy: PhraseSet<()>,
    negation: PhraseSet<()>,
    intent: PhraseSet<String>,
    lines: PhraseSet<String>,
    test_words: PhraseSet<()>,
    markers: PhraseSet<String>,
    marker_names: BTreeSet<String>,
    mentions: BTreeMap<String, PhraseSet<String>>,
}

/// What a recommendation says, as the ontology reads it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// Treatment classes planned (derived classes included).
    pub classes: BTreeSet<String>,
    /// Canonical drugs planned (regimens expanded to their components).
    pub drugs: BTreeSet<String>,
    /// Classes and drugs named only in negated stretches ("no rechallenge with …").
    pub avoided: BTreeSet<String>,
    /// `curative` or `palliative`: stated, else inferred from the classes.
    pub intent: Option<String>,
    /// Line-of-therapy words found (`first`, `second`, `third`, `next`).
    pub lines: BTreeSet<String>,
    /// Markers the text orders a test for or calls unknown.
    pub tests: BTreeSet<String>,
}

impl Analysis {
    /// Whether nothing at all was recognised.
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty() && self.drugs.is_empty() && self.tests.is_empty() && self.avoided.is_empty()
    }

    /// The plan's identity for "did it move": classes, drugs, tests, intent.
    pub fn signature(&self) -> BTreeSet<String> {
        let mut signature = BTreeSet::new();
        signature.extend(self.classes.iter().map(|class| format!("class:{class}")));
        signature.extend(self.drugs.iter().map(|drug| format!("drug:{drug}")));
        signature.extend(self.tests.iter().map(|marker| format!("test:{marker}")));
        if let Some(intent) = &self.intent {
            signature.insert(format!("intent:{intent}"));
        }
        signature
    }

    /// Whether a catalog class is planned; `a_or_b` means either.
    pub fn has_class(&self, class: &str) -> bool {
        class_alternatives(class)
            .iter()
            .any(|alternative| self.classes.contains(alternative.as_str()))
    }
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

/// Splits text into clauses at `;`, newlines, bullets and sentence ends.
fn clauses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let characters: Vec<char> = text.chars().collect();
    for (index, &character) in characters.iter().enumerate() {
        let sentence_end =
            character == '.' && characters.get(index + 1).is_none_or(|next| next.is_whitespace());
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
    /// The ontology shipped with cfeval.
    pub fn builtin() -> Result<Self> {
        Self::parse(BUILTIN_ONCOLOGY_YAML, "data/ontology/oncology.yaml (built in)")
    }

    /// Loads an ontology file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and validates an ontology; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let raw: RawOntology = serde_norway::from_str(text).map_err(|source| Error::Parse {
            origin: origin.to_string(),
            source,
        })?;
        let invalid = |message: String| Error::Invalid {
            origin: origin.to_string(),
            message,
        };
        if raw.version != 1 {
            return Err(invalid(format!("unsupported ontology version {}", raw.version)));
        }
        let mut treatments = PhraseSet::default();
        let mut drug_classes = BTreeMap::new();
        for (name, drug) in &raw.drugs {
            if drug.classes.is_empty() {
                return Err(invalid(format!("drug `{name}` has no class")));
            }
            treatments.insert(name, Treatment::Drug(name.clone()));
            for alias in &drug.aliases {
                treatments.insert(alias, Treatment::Drug(name.clone()));
            }
            drug_classes.insert(name.clone(), drug.classes.iter().cloned().collect());
        }
        let mut regimen_components = BTreeMap::new();
        for (name, regimen) in &raw.regimens {
            if let Some(unknown) = regimen
                .components
                .iter()
                .find(|drug| !raw.drugs.contains_key(*drug))
            {
                return Err(invalid(format!(
                    "regimen `{name}` names unknown drug `{unknown}`"
                )));
            }
            treatments.insert(name, Treatment::Regimen(name.clone()));
            for alias in &regimen.aliases {
                treatments.insert(alias, Treatment::Regimen(name.clone()));
            }
            regimen_components.insert(name.clone(), regimen.components.clone());
        }
        for (class, phrases) in &raw.class_phrases {
            for phrase in phrases {
                treatments.insert(phrase, Treatment::Class(class.clone()));
            }
        }
        let set = |phrases: &[String]| {
            let mut set = PhraseSet::default();
            for phrase in phrases {
                set.insert(phrase, ());
            }
            set
        };
        let keyed = |map: &BTreeMap<String, Vec<String>>| {
            let mut set = PhraseSet::default();
            for (key, phrases) in map {
                for phrase in phrases {
                    set.insert(phrase, key.clone());
                }
            }
            set
        };
        for kind in raw.intent.keys() {
            if kind != "curative" && kind != "palliative" {
                return Err(invalid(format!("unknown intent `{kind}`")));
            }
        }
        let mentions = raw
            .mentions
            .iter()
            .map(|(kind, phrases)| {
                let mut set = PhraseSet::default();
                for phrase in phrases {
                    set.insert(phrase, words(phrase).join(" "));
                }
                (kind.clone(), set)
            })
            .collect();
        Ok(Self {
            hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
            drug_classes,
            regimen_components,
            derived: raw.derived,
            curative_classes: raw.curative_classes.into_iter().collect(),
            treatments,
            monotherapy: set(&raw.monotherapy_words),
            negation: set(&raw.negation_cues),
            intent: keyed(&raw.intent),
            lines: keyed(&raw.lines),
            test_words: set(&raw.test_words),
            markers: keyed(&raw.markers),
            marker_names: raw.markers.keys().cloned().collect(),
            mentions,
        })
    }

    /// BLAKE3 of the ontology file: part of every rule judgment's prompt hash.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Every class any drug, regimen or phrase can produce (derived included).
    pub fn known_classes(&self) -> BTreeSet<String> {
        let mut classes: BTreeSet<String> = self.drug_classes.values().flatten().cloned().collect();
        for candidates in self.treatments.by_first.values() {
            for (_, treatment) in candidates {
                if let Treatment::Class(class) = treatment {
                    classes.insert(class.clone());
                }
            }
        }
        classes.extend(self.derived.keys().cloned());
        classes.insert("immunotherapy_monotherapy".into());
        classes
    }

    /// Whether a marker name is known (`HER2`, `PD-L1`, …).
    pub fn is_marker(&self, name: &str) -> bool {
        self.marker_names.contains(name)
    }

    /// Reads a recommendation.
    pub fn analyze(&self, text: &str) -> Analysis {
        let mut analysis = Analysis::default();
        let mut planned_classes = BTreeSet::new();
        let mut monotherapy_word = false;
        let mut explicit_intents = BTreeSet::new();
        for clause in clauses(text) {
            let tokens = words(&clause);
            let negated_from = self.negation_start(&tokens);
            for (start, _, treatment) in self.treatments.find(&tokens) {
                let negated = negated_from.is_some_and(|from| start >= from);
                let (drugs, classes) = self.expand(&treatment);
                if negated {
                    analysis.avoided.extend(drugs);
                    analysis.avoided.extend(classes);
                } else {
                    analysis.drugs.extend(drugs);
                    planned_classes.extend(classes);
                }
            }
            monotherapy_word |= self.monotherapy.contains(&tokens);
            for (start, _, intent) in self.intent.find(&tokens) {
                if negated_from.is_none_or(|from| start < from) {
                    explicit_intents.insert(intent);
                }
            }
            analysis
                .lines
                .extend(self.lines.find(&tokens).into_iter().map(|(_, _, line)| line));
            if self.test_words.contains(&tokens) {
                analysis.tests.extend(
                    self.markers
                        .find(&tokens)
                        .into_iter()
                        .map(|(_, _, marker)| marker),
                );
            }
        }
        self.derive(&mut planned_classes, monotherapy_word);
        analysis.intent = if explicit_intents.len() == 1 {
            explicit_intents.into_iter().next()
        } else if planned_classes
            .iter()
            .any(|class| self.curative_classes.contains(class))
        {
            Some("curative".into())
        } else if planned_classes.contains("systemic_therapy") || planned_classes.contains("palliative_care")
        {
            Some("palliative".into())
        } else {
            None
        };
        analysis.classes = planned_classes;
        analysis
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

    /// Mention keys of one fact kind (`biomarker`, `surgery`, `stage`,
    /// `prior_line`) in a text: for biomarkers `MARKER:status word` pairs
    /// within three words, for the other kinds the phrases themselves.
    pub fn mentions(&self, text: &str, kind: &str) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for clause in clauses(text) {
            let tokens = words(&clause);
            if kind == "biomarker" {
                let Some(statuses) = self.mentions.get("biomarker_status") else {
                    continue;
                };
                let status_hits = statuses.find(&tokens);
                for (start, end, marker) in self.markers.find(&tokens) {
                    for (status_start, status_end, status) in &status_hits {
                        let near = (*status_start >= end && status_start - end <= 3)
                            || (*status_end <= start && start - status_end <= 3);
                        if near {
                            found.insert(format!("{marker}:{status}"));
                        }
                    }
                }
            } else if let Some(set) = self.mentions.get(kind) {
                found.extend(set.find(&tokens).into_iter().map(|(_, _, phrase)| phrase));
            }
        }
        found
    }

    fn negation_start(&self, tokens: &[String]) -> Option<usize> {
        self.negation
            .find(tokens)
            .into_iter()
            .map(|(start, _, ())| start)
            .find(|&start| {
                // "with or without X" offers X; it does not rule it out.
                !(tokens[start] == "without"
                    && start >= 2
                    && tokens[start - 2] == "with"
                    && tokens[start - 1] == "or")
            })
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
        }
    }

    fn derive(&self, classes: &mut BTreeSet<String>, monotherapy_word: bool) {
        // Derived classes may build on each other (platinum → chemotherapy → systemic).
        for _ in 0..3 {
            for (derived, sources) in &self.derived {
                if sources.iter().any(|source| classes.contains(source)) {
                    classes.insert(derived.clone());
                }
            }
        }
        if classes.contains("immunotherapy") && (monotherapy_word || !classes.contains("chemotherapy")) {
            classes.insert("immunotherapy_monotherapy".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ontology() -> Ontology {
        Ontology::builtin().expect("the built-in ontology loads")
    }

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|item| item.to_string()).collect()
    }

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

    #[test]
    fn longest_phrase_wins() {
        let ontology = ontology();
        let analysis = ontology.analyze("trastuzumab deruxtecan");
        assert_eq!(analysis.drugs, set(&["trastuzumab deruxtecan"]));
        let nab = ontology.analyze("gemcitabine + nab-paclitaxel");
        assert_eq!(nab.drugs, set(&["gemcitabine", "nab paclitaxel"]));
    }

    #[test]
    fn negated_stretches_are_not_planned() {
        let ontology = ontology();
        let analysis = ontology
            .analyze("docetaxel with or without ramucirumab; no rechallenge with a PD-1/PD-L1 inhibitor");
        assert!(
            analysis.drugs.contains("ramucirumab"),
            "with or without offers the drug"
        );
        assert!(!analysis.classes.contains("immunotherapy"));
        assert!(analysis.avoided.contains("immunotherapy"));
        let surveillance = ontology.analyze("surveillance without adjuvant chemotherapy");
        assert!(surveillance.classes.contains("surveillance"));
        assert!(!surveillance.classes.contains("adjuvant_therapy"));
        assert!(!surveillance.classes.contains("chemotherapy"));
        assert_eq!(surveillance.intent.as_deref(), Some("curative"));
    }

    #[test]
    fn monotherapy_intent_line_and_tests() {
        let ontology = ontology();
        assert!(
            ontology
                .analyze("pembrolizumab monotherapy")
                .classes
                .contains("immunotherapy_monotherapy")
        );
        assert!(
            ontology
                .analyze("Keytruda 200 mg q3w")
                .classes
                .contains("immunotherapy_monotherapy")
        );
        let combo = ontology.analyze("carboplatin/pemetrexed/pembrolizumab");
        assert!(!combo.classes.contains("immunotherapy_monotherapy"));
        assert!(combo.classes.contains("platinum_chemotherapy"));
        let palliative = ontology.analyze("FOLFOX + bevacizumab");
        assert_eq!(palliative.intent.as_deref(), Some("palliative"));
        assert_eq!(
            ontology.analyze("second-line docetaxel, palliative intent").lines,
            set(&["second"])
        );
        assert_eq!(
            ontology.analyze("HER2 status is unknown: send HER2 IHC").tests,
            set(&["HER2"])
        );
        assert_eq!(ontology.analyze("ER/PR testing by IHC").tests, set(&["ER", "PR"]));
        assert!(ontology.analyze("HER2-positive disease: THP").tests.is_empty());
        assert_eq!(ontology.analyze("PD-L1 result pending").tests, set(&["PD-L1"]));
    }

    #[test]
    fn mentions_pair_markers_with_statuses() {
        let ontology = ontology();
        assert_eq!(
            ontology.mentions(
                "Because the tumour is now HER2-negative, drop trastuzumab.",
                "biomarker"
            ),
            set(&["HER2:negative"])
        );
        assert!(
            ontology
                .mentions("not a surgical candidate", "surgery")
                .contains("not a surgical candidate")
        );
        assert!(ontology.mentions("FOLFOX", "surgery").is_empty());
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

    #[test]
    fn bad_ontologies_are_rejected_with_their_origin() {
        let bad = BUILTIN_ONCOLOGY_YAML.replace(
            "components: [capecitabine, oxaliplatin]}",
            "components: [capecitabine, unobtainium]}",
        );
        let error = Ontology::parse(&bad, "x.yaml")
            .expect_err("unknown component")
            .to_string();
        assert!(
            error.contains("x.yaml") && error.contains("unobtainium"),
            "{error}"
        );
        let error = Ontology::parse("version: 1\nextra: 2\n", "y.yaml").expect_err("unknown key");
        assert!(error.to_string().contains("y.yaml"));
    }
}
