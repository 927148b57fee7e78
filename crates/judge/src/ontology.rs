//! The regimen and drug-class ontology (`data/ontology/oncology.yaml`) and
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
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::reading::context::{ContextRules, Direction, Phrases, Status, Trigger, tokens};
use crate::reading::mention::{MentionVocabulary, marker_reach, stage_mentions};
use crate::reading::plan::{Plan, PlanVocabulary, find_plan};

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
    intent: BTreeMap<String, Vec<String>>,
    curative_classes: Vec<String>,
    ancillary_classes: Vec<String>,
    lines: BTreeMap<String, Vec<String>>,
    order_words: Vec<String>,
    result_words: Vec<String>,
    markers: BTreeMap<String, Vec<String>>,
    mentions: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    mention_links: Vec<String>,
    stage_words: Vec<String>,
    metastatic_sites: Vec<String>,
    lesion_words: Vec<String>,
    plan_labels: Vec<String>,
    other_labels: Vec<String>,
    recommend_cues: Vec<String>,
    closings: Vec<String>,
    greetings: Vec<String>,
    unchanged_cues: Vec<String>,
    context: RawContext,
    interchangeable: BTreeMap<String, Vec<String>>,
    modulators: Vec<String>,
    not_treatments: Vec<String>,
    time_reference_words: Vec<String>,
    time_reference_fillers: Vec<String>,
    time_reference_classes: Vec<String>,
    followup_classes: Vec<String>,
    active_classes: Vec<String>,
    core_classes: Vec<String>,
    line_order: Vec<String>,
    backbone_classes: Vec<String>,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContext {
    /// Status (`negated`, `historical`, `conditional`, `hypothetical`) to its triggers.
    triggers: BTreeMap<String, RawTriggers>,
    pseudo: Vec<String>,
    terminators: Vec<String>,
    durations: Vec<String>,
    duration_anchors: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTriggers {
    #[serde(default)]
    forward: Vec<String>,
    #[serde(default)]
    backward: Vec<String>,
    #[serde(default)]
    both: Vec<String>,
}

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

/// What a planned treatment is for the order of a plan (see `analyze`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SettingRole {
    Operation,
    Systemic,
    Chemoradiation,
    Other,
}

/// One treatment mention of a clause: its drugs, its classes, its status.
type ReadTreatment = (Vec<String>, Vec<String>, Status);

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

fn phrase_set(phrases: &[String]) -> Phrases<()> {
    let mut set = Phrases::default();
    for phrase in phrases {
        set.insert(phrase, ());
    }
    set
}

fn keyed_set(map: &BTreeMap<String, Vec<String>>) -> Phrases<String> {
    let mut set = Phrases::default();
    for (key, phrases) in map {
        for phrase in phrases {
            set.insert(phrase, key.clone());
        }
    }
    set
}

fn phrase_words(phrases: &[String]) -> Vec<Vec<String>> {
    phrases
        .iter()
        .map(|phrase| words(phrase))
        .filter(|words| !words.is_empty())
        .collect()
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
        let mut treatments = Phrases::default();
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
        for phrase in &raw.not_treatments {
            treatments.insert(phrase, Treatment::Nothing);
        }
        let mut drug_group = BTreeMap::new();
        for (group, drugs) in &raw.interchangeable {
            for drug in drugs {
                if !raw.drugs.contains_key(drug) {
                    return Err(invalid(format!(
                        "interchangeable group `{group}` names unknown drug `{drug}`"
                    )));
                }
                drug_group.insert(drug.clone(), group.clone());
            }
        }
        if let Some(unknown) = raw.modulators.iter().find(|drug| !raw.drugs.contains_key(*drug)) {
            return Err(invalid(format!(
                "modulator `{unknown}` is not a drug of the ontology"
            )));
        }
        for kind in raw.intent.keys() {
            if kind != "curative" && kind != "palliative" {
                return Err(invalid(format!("unknown intent `{kind}`")));
            }
        }
        let mut context = ContextRules {
            pseudo: phrase_set(&raw.context.pseudo),
            terminators: phrase_set(&raw.context.terminators),
            durations: phrase_set(&raw.context.durations),
            duration_anchors: phrase_set(&raw.context.duration_anchors),
            ..ContextRules::default()
        };
        for (status, triggers) in &raw.context.triggers {
            let status = Status::parse(status).ok_or_else(|| {
                invalid(format!(
                    "unknown context status `{status}` (negated, historical, conditional or hypothetical)"
                ))
            })?;
            for (phrases, direction) in [
                (&triggers.forward, Direction::Forward),
                (&triggers.backward, Direction::Backward),
                (&triggers.both, Direction::Both),
            ] {
                for phrase in phrases {
                    context.triggers.insert(phrase, Trigger { status, direction });
                }
            }
        }
        let mentions = raw
            .mentions
            .iter()
            .map(|(kind, values)| (kind.clone(), keyed_set(values)))
            .collect();
        let mention_vocabulary = MentionVocabulary {
            links: phrase_set(&raw.mention_links),
            stage_words: phrase_set(&raw.stage_words),
            sites: raw
                .metastatic_sites
                .iter()
                .fold(Phrases::default(), |mut set, site| {
                    set.insert(site, site.clone());
                    set
                }),
            lesion_words: phrase_set(&raw.lesion_words),
        };
        Ok(Self {
            hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
            drug_classes,
            regimen_components,
            derived: raw.derived,
            curative_classes: raw.curative_classes.into_iter().collect(),
            ancillary_classes: raw.ancillary_classes.into_iter().collect(),
            treatments,
            monotherapy: phrase_set(&raw.monotherapy_words),
            intent: keyed_set(&raw.intent),
            lines: keyed_set(&raw.lines),
            order_words: phrase_set(&raw.order_words),
            result_words: phrase_set(&raw.result_words),
            markers: keyed_set(&raw.markers),
            marker_names: raw.markers.keys().cloned().collect(),
            mentions,
            mention_vocabulary,
            unchanged_cues: phrase_set(&raw.unchanged_cues),
            context,
            vocabulary: PlanVocabulary {
                plan_labels: phrase_words(&raw.plan_labels),
                other_labels: phrase_words(&raw.other_labels),
                recommend_cues: phrase_words(&raw.recommend_cues),
                closings: phrase_words(&raw.closings),
                greetings: phrase_words(&raw.greetings),
            },
            drug_group,
            modulators: raw.modulators.into_iter().collect(),
            time_reference_words: raw.time_reference_words.into_iter().collect(),
            time_reference_fillers: raw.time_reference_fillers.into_iter().collect(),
            time_reference_classes: raw.time_reference_classes.into_iter().collect(),
            followup_classes: raw.followup_classes.into_iter().collect(),
            active_classes: raw.active_classes.into_iter().collect(),
            core_classes: raw.core_classes.into_iter().collect(),
            line_order: raw.line_order,
            backbone_classes: raw.backbone_classes.into_iter().collect(),
        })
    }

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

    /// Whether a marker name is known (`HER2`, `PD-L1`, …).
    pub fn is_marker(&self, name: &str) -> bool {
        self.marker_names.contains(name)
    }

    /// Reads a whole reply: finds its plan, then reads the plan.
    pub fn read(&self, reply: &str) -> Reading {
        let has_content = |text: &str| {
            let tokens = words(text);
            self.treatments.contains(&tokens) || self.markers.contains(&tokens)
        };
        let plan = find_plan(&self.vocabulary, reply, &has_content);
        let mut analysis = self.analyze(&plan.text);
        // A test ordered anywhere in the reply is ordered ("I have asked
        // pathology to perform HER2 IHC" before the recommendation).
        for clause in clauses(reply) {
            let tokens = tokens(&clause);
            let items: Vec<(usize, usize)> = self
                .treatments
                .find(&tokens)
                .iter()
                .map(|(start, end, _)| (*start, *end))
                .collect();
            for marker in self.ordered_tests(&tokens, &items) {
                analysis.signature.insert(format!("test:{marker}"));
                analysis.tests.insert(marker);
            }
        }
        Reading { plan, analysis }
    }

    /// Reads a plan's text (or any recommendation) into what it plans.
    pub fn analyze(&self, text: &str) -> Analysis {
        let mut analysis = Analysis::default();
        let mut planned_classes = BTreeSet::new();
        let mut monotherapy_word = false;
        let mut explicit_intents = BTreeSet::new();
        // Each clause's treatments with their status, and the earliest line
        // of therapy the clause plans.
        let mut read: Vec<(Option<usize>, Vec<ReadTreatment>)> = Vec::new();
        for clause in clauses(text) {
            let tokens = tokens(&clause);
            let found = self.treatments.find(&tokens);
            let items: Vec<(usize, usize)> = found.iter().map(|(start, end, _)| (*start, *end)).collect();
            let statuses = self.context.classify(&tokens, &items, &items);
            let mut treatments = Vec::new();
            let mut after_operation = false;
            for ((start, _, treatment), status) in found.iter().zip(statuses) {
                let (drugs, classes) = self.expand(treatment);
                let time_reference = self.time_reference(&tokens, *start, &classes);
                let status = if status == Status::Planned && time_reference {
                    Status::Historical
                } else {
                    status
                };
                after_operation |= time_reference && status == Status::Historical;
                treatments.push((drugs, classes, status));
            }
            // Drug therapy timed from an operation ("CAPOX, starting within
            // 8 weeks of surgery", "pembrolizumab 4 weeks after resection")
            // is given after it: adjuvant.
            if after_operation
                && treatments.iter().any(|(_, classes, status)| {
                    *status == Status::Planned && self.setting_role(classes) == SettingRole::Systemic
                })
            {
                treatments.push((Vec::new(), vec!["adjuvant_therapy".into()], Status::Planned));
            }
            // A monotherapy word says what it stands beside: "IO mono — not
            // appropriate" rules monotherapy out, it does not plan it.
            let monotherapy_words = self.monotherapy.find(&tokens);
            let spans: Vec<(usize, usize)> = monotherapy_words
                .iter()
                .map(|(start, end, ())| (*start, *end))
                .collect();
            monotherapy_word |= self
                .context
                .classify(&tokens, &spans, &items)
                .contains(&Status::Planned);
            let intents = self.intent.find(&tokens);
            let spans: Vec<(usize, usize)> = intents.iter().map(|(start, end, _)| (*start, *end)).collect();
            for ((_, _, intent), status) in intents.iter().zip(self.context.classify(&tokens, &spans, &items))
            {
                if status == Status::Planned {
                    explicit_intents.insert(intent.clone());
                }
            }
            let lines = self.lines.find(&tokens);
            let spans: Vec<(usize, usize)> = lines.iter().map(|(start, end, _)| (*start, *end)).collect();
            let mut rank = None;
            for ((_, end, line), status) in lines.iter().zip(self.context.classify(&tokens, &spans, &items)) {
                // A line word takes the status of the treatment it
                // introduces ("switch to FOLFIRI only if progression is
                // confirmed" plans no switch).
                let introduced = found
                    .iter()
                    .position(|(start, _, _)| start >= end)
                    .map(|index| treatments[index].2);
                if status == Status::Planned && introduced.is_none_or(|status| status == Status::Planned) {
                    analysis.lines.insert(line.clone());
                    if let Some(order) = self.line_order.iter().position(|name| name == line) {
                        rank = Some(rank.map_or(order, |rank: usize| rank.min(order)));
                    }
                }
            }
            analysis.tests.extend(self.ordered_tests(&tokens, &items));
            analysis.unchanged |= self.unchanged_cues.contains(&tokens);
            read.push((rank, treatments));
        }
        // When a plan names several lines of therapy, the earliest is the
        // plan and the later ones are sequencing ("1L FOLFOX + nivo; 2L:
        // T-DXd"): their treatments are contingent.
        let earliest = read
            .iter()
            .filter(|(_, treatments)| treatments.iter().any(|(_, _, status)| *status == Status::Planned))
            .filter_map(|(rank, _)| *rank)
            .min();
        // What each planned treatment is, in the order the plan names them.
        let mut sequence: Vec<SettingRole> = Vec::new();
        for (rank, treatments) in read {
            let later = matches!((rank, earliest), (Some(rank), Some(earliest)) if rank > earliest);
            for (drugs, classes, status) in treatments {
                let status = if later && status == Status::Planned {
                    Status::Conditional
                } else {
                    status
                };
                let into = match status {
                    Status::Planned => {
                        sequence.push(self.setting_role(&classes));
                        analysis.drugs.extend(drugs);
                        planned_classes.extend(classes);
                        continue;
                    }
                    Status::Negated => &mut analysis.avoided,
                    Status::Historical => &mut analysis.history,
                    Status::Conditional | Status::Hypothetical => &mut analysis.contingent,
                };
                into.extend(drugs);
                into.extend(classes);
            }
        }
        // Drug therapy (or chemoradiation) named before a planned operation
        // is given before it, drug therapy named after it is given after it:
        // "FOLFOX, then chemoradiation, then TME" is neoadjuvant whether or
        // not it says so.
        if let Some(first) = sequence.iter().position(|role| *role == SettingRole::Operation) {
            let last = sequence
                .iter()
                .rposition(|role| *role == SettingRole::Operation)
                .unwrap_or(first);
            if sequence[..first]
                .iter()
                .any(|role| matches!(role, SettingRole::Systemic | SettingRole::Chemoradiation))
            {
                planned_classes.insert("neoadjuvant_therapy".into());
            }
            if sequence[last + 1..].contains(&SettingRole::Systemic) {
                planned_classes.insert("adjuvant_therapy".into());
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
        if planned_classes
            .iter()
            .any(|class| self.active_classes.contains(class))
        {
            analysis.followup = planned_classes
                .iter()
                .filter(|class| self.followup_classes.contains(*class))
                .cloned()
                .collect();
            planned_classes.retain(|class| !analysis.followup.contains(class));
        }
        analysis.classes = planned_classes;
        let mut signature = BTreeSet::new();
        signature.extend(
            analysis
                .classes
                .iter()
                .filter(|class| !self.ancillary_classes.contains(*class))
                .map(|class| format!("class:{class}")),
        );
        let drugs: BTreeSet<String> = self
            .groups(&analysis.drugs)
            .into_iter()
            .map(|group| format!("drug:{group}"))
            .collect();
        analysis.core = drugs.clone();
        analysis.core.extend(
            analysis
                .classes
                .iter()
                .filter(|class| self.core_classes.contains(*class))
                .map(|class| format!("class:{class}")),
        );
        signature.extend(drugs);
        signature.extend(analysis.tests.iter().map(|marker| format!("test:{marker}")));
        if let Some(intent) = &analysis.intent {
            signature.insert(format!("intent:{intent}"));
        }
        analysis.signature = signature;
        analysis
    }

    /// What a planned treatment is for the order of a plan: an operation,
    /// drug therapy, chemoradiation, or something else (a setting word,
    /// radiotherapy, follow-up).
    fn setting_role(&self, classes: &[String]) -> SettingRole {
        let has = |class: &str| classes.iter().any(|own| own == class);
        let systemic = self
            .derived
            .get("systemic_therapy")
            .is_some_and(|sources| sources.iter().any(|source| has(source)));
        if classes
            .iter()
            .any(|class| self.time_reference_classes.contains(class))
        {
            SettingRole::Operation
        } else if has("definitive_chemoradiation") {
            SettingRole::Chemoradiation
        } else if systemic && !has("neoadjuvant_therapy") && !has("adjuvant_therapy") {
            SettingRole::Systemic
        } else {
            SettingRole::Other
        }
    }

    /// Whether a procedure mention at `start` is a point in time ("within
    /// 12 weeks of surgery", "after total gastrectomy"): one of its classes
    /// is a time-reference class and a time-reference word precedes it,
    /// past any fillers.
    fn time_reference(&self, tokens: &[String], start: usize, classes: &[String]) -> bool {
        if !classes
            .iter()
            .any(|class| self.time_reference_classes.contains(class))
        {
            return false;
        }
        tokens[..start]
            .iter()
            .rev()
            .find(|token| !self.time_reference_fillers.contains(*token))
            .is_some_and(|token| self.time_reference_words.contains(token))
    }

    /// The markers a clause orders a test for: an order word (`order`,
    /// `send`, `testing`, `pending`) that is planned or conditional, in a
    /// clause that reports no result (`showed`, `returned`) — "HER2 IHC 2+,
    /// ISH amplified" is a result. Calling a marker unknown is not ordering
    /// its test (it is a mention of the fact, see [`Ontology::mentions`]);
    /// a negated or historical order (`no need to repeat`, `was tested`)
    /// never counts.
    fn ordered_tests(&self, tokens: &[String], items: &[(usize, usize)]) -> Vec<String> {
        let markers = self.markers.find(tokens);
        if markers.is_empty() || self.result_words.contains(tokens) {
            return Vec::new();
        }
        let orders: Vec<(usize, usize)> = self
            .order_words
            .find(tokens)
            .iter()
            .map(|(start, end, ())| (*start, *end))
            .collect();
        let ordered = self
            .context
            .classify(tokens, &orders, items)
            .into_iter()
            .any(|status| matches!(status, Status::Planned | Status::Conditional));
        if ordered {
            markers.into_iter().map(|(_, _, marker)| marker).collect()
        } else {
            Vec::new()
        }
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

    /// What a text says about one fact kind (`biomarker`, `surgery`,
    /// `stage`, `prior_line`), as values ([`crate::reading::mention`]): for
    /// biomarkers `MARKER:value` (a status value, or the number written:
    /// `TPS <1%` is `PD-L1:1`); for stage `stage:<group>`, `metastatic`,
    /// `non_metastatic`, `locally_advanced`; for surgery `resected`,
    /// `unresected`, `operable`; for prior lines `progression`.
    pub fn mentions(&self, text: &str, kind: &str) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for clause in clauses(text) {
            // Context needs the clause's punctuation (`,` `:` `(` `)`); a
            // stage numeral is read from the words alone (`cT4aN2M0 (III)`).
            let tokens = tokens(&clause);
            match kind {
                "biomarker" => found.extend(self.biomarker_mentions(&tokens)),
                "stage" => found.extend(stage_mentions(&self.mention_vocabulary, &words(&clause))),
                "surgery" => found.extend(self.surgery_mentions(&tokens)),
                _ => {}
            }
            if kind != "biomarker"
                && let Some(set) = self.mentions.get(kind)
            {
                // A fact named as a contingency or hypothesis ("lorlatinib
                // reserved for PD") is not stated.
                let hits = set.find(&tokens);
                let spans: Vec<(usize, usize)> = hits.iter().map(|(start, end, _)| (*start, *end)).collect();
                let statuses = self.context.classify(&tokens, &spans, &spans);
                found.extend(
                    hits.into_iter()
                        .zip(statuses)
                        .filter(|(_, status)| !matches!(status, Status::Conditional | Status::Hypothetical))
                        .map(|((_, _, value), _)| value),
                );
            }
        }
        found.remove("ignore");
        found
    }

    /// `MARKER:value` for each status (or number) a marker reaches: within
    /// three words of the marker's statement (past coordinated markers and
    /// linking words), with no other marker's statement between them.
    fn biomarker_mentions(&self, tokens: &[String]) -> Vec<String> {
        let mut statuses = self
            .mentions
            .get("biomarker_status")
            .map(|statuses| statuses.find(tokens))
            .unwrap_or_default();
        let markers = self.markers.find(tokens);
        let spans: Vec<(usize, usize)> = markers.iter().map(|(start, end, _)| (*start, *end)).collect();
        for (index, token) in tokens.iter().enumerate() {
            let inside_marker = spans.iter().any(|(start, end)| (*start..*end).contains(&index));
            if !inside_marker && token.chars().all(|character| character.is_ascii_digit()) {
                statuses.push((index, index + 1, token.clone()));
            }
        }
        let mut found = Vec::new();
        for (start, end, marker) in &markers {
            let (left, right) = marker_reach(&self.mention_vocabulary, tokens, (*start, *end), &spans);
            for (status_start, status_end, status) in &statuses {
                if (*start..*end).contains(status_start) {
                    continue;
                }
                let (near, between) = if *status_start >= *end {
                    (
                        *status_start < right || status_start - right <= 3,
                        (*end, *status_start),
                    )
                } else {
                    // Before the marker, a status is its own ("triple
                    // negative", "no PD-L1 result") only within the same
                    // phrase: no comma, colon or parenthesis between.
                    let apart = tokens[*status_end..*start]
                        .iter()
                        .any(|token| matches!(token.as_str(), "," | ":" | "(" | ")"));
                    (
                        !apart && (*status_end > left || left - status_end <= 3),
                        (*status_end, *start),
                    )
                };
                // Another marker's statement in between takes the status.
                let other = spans.iter().any(|(other_start, other_end)| {
                    *other_start >= between.0
                        && *other_end <= between.1
                        && (*other_start >= right || *other_end <= left)
                });
                if near && !other && status != "ignore" {
                    found.push(format!("{marker}:{status}"));
                }
            }
        }
        found
    }

    /// A surgical procedure named as history (`s/p esophagectomy`) is
    /// `resected`, one negated (`esophagectomy NOT done`, `no surgery`) is
    /// `unresected`.
    fn surgery_mentions(&self, tokens: &[String]) -> Vec<String> {
        let found = self.treatments.find(tokens);
        let items: Vec<(usize, usize)> = found.iter().map(|(start, end, _)| (*start, *end)).collect();
        let statuses = self.context.classify(tokens, &items, &items);
        found
            .iter()
            .zip(statuses)
            .filter_map(|((start, _, treatment), status)| {
                let (_, classes) = self.expand(treatment);
                if !classes
                    .iter()
                    .any(|class| self.time_reference_classes.contains(class))
                {
                    return None;
                }
                match status {
                    Status::Negated => Some("unresected".to_string()),
                    Status::Historical => Some("resected".to_string()),
                    Status::Planned if self.time_reference(tokens, *start, &classes) => {
                        Some("resected".to_string())
                    }
                    _ => None,
                }
            })
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
                .contains("unresected")
        );
        assert!(ontology.mentions("FOLFOX", "surgery").is_empty());
    }

    #[test]
    fn a_status_reaches_coordinated_markers_and_unknown_is_said_many_ways() {
        let ontology = ontology();
        let biomarkers = |text: &str| ontology.mentions(text, "biomarker");
        assert!(biomarkers("ER and PR are reported positive").contains("ER:positive"));
        assert!(biomarkers("ER and PR are reported positive").contains("PR:positive"));
        assert!(
            biomarkers("The oestrogen and progesterone receptor results were not included")
                .contains("ER:unknown")
        );
        assert!(biomarkers("73M mGC (liver), HER2 ? - not on chart.").contains("HER2:unknown"));
        assert!(biomarkers("HER2 wasn't specified").contains("HER2:unknown"));
        assert!(biomarkers("I could not find a PD-L1 result in the referral").contains("PD-L1:unknown"));
        // Another marker's statement keeps its own status.
        let mixed = biomarkers("HER2 3+, ER positive");
        assert!(
            mixed.contains("HER2:3") && mixed.contains("ER:positive") && !mixed.contains("HER2:positive")
        );
    }

    #[test]
    fn stage_surgery_and_progression_mentions_are_values() {
        let ontology = ontology();
        assert!(
            ontology
                .mentions("cT4aN2M0 (III) noted", "stage")
                .contains("stage:III")
        );
        assert!(
            ontology
                .mentions("M1a disease, i.e. stage IVA", "stage")
                .contains("stage:IV")
        );
        assert!(
            ontology
                .mentions("new FDG-avid liver lesions", "stage")
                .contains("metastatic")
        );
        assert!(
            ontology
                .mentions(
                    "s/p CROSS. Esophagectomy NOT done - not surg candidate.",
                    "surgery"
                )
                .contains("unresected")
        );
        assert!(
            ontology
                .mentions("s/p Ivor Lewis esophagectomy", "surgery")
                .contains("resected")
        );
        assert!(
            !ontology
                .mentions("Following resection of a stage III colon cancer", "surgery")
                .contains("unresected")
        );
        assert!(ontology.mentions("followed by surgery", "surgery").is_empty());
        let progression = |text: &str| ontology.mentions(text, "prior_line");
        assert!(progression("PD after 10 cycles of FOLFOX").contains("progression"));
        assert!(progression("lorlatinib reserved for PD").is_empty());
        assert!(progression("T-DXd at progression").is_empty());
        assert!(progression("high PD-L1 expression").is_empty());
        assert!(progression("switch to docetaxel if the disease progresses").is_empty());
    }

    #[test]
    fn drug_therapy_before_or_after_a_planned_operation_has_that_setting() {
        let ontology = ontology();
        let before = ontology.analyze("FOLFOX x 4 months, then chemoradiation to 50.4 Gy, then TME");
        assert!(before.classes.contains("neoadjuvant_therapy"), "{before:?}");
        assert!(!before.classes.contains("adjuvant_therapy"), "{before:?}");
        let after =
            ontology.analyze("Lumpectomy and sentinel node biopsy, then docetaxel-cyclophosphamide x4");
        assert!(after.classes.contains("adjuvant_therapy"), "{after:?}");
        assert!(!after.classes.contains("neoadjuvant_therapy"), "{after:?}");
        // No planned operation, no setting from order.
        let alone = ontology.analyze("FOLFOX, then chemoradiation");
        assert!(!alone.classes.contains("neoadjuvant_therapy"), "{alone:?}");
    }

    #[test]
    fn what_a_drug_failed_or_a_plan_leaves_for_later_is_not_planned() {
        let ontology = ontology();
        let switch = ontology.analyze(
            "Switch to lorlatinib, which covers most alectinib-resistance mutations. Platinum-pemetrexed is the line after that.",
        );
        assert!(switch.drugs.contains("lorlatinib"), "{switch:?}");
        assert!(!switch.drugs.contains("alectinib"), "{switch:?}");
        assert!(
            !switch.drugs.contains("pemetrexed") && switch.contingent.contains("pemetrexed"),
            "{switch:?}"
        );
        let stopped = ontology.analyze("d/c gem/nab-P. 2L nal-IRI + 5-FU/LV");
        assert!(stopped.avoided.contains("gemcitabine"), "{stopped:?}");
        let planned =
            ontology.analyze("TCHP followed by surgery, then completion of a year of HER2-directed therapy");
        assert!(!planned.history.contains("her2_targeted"), "{planned:?}");
    }

    #[test]
    fn a_line_word_takes_the_status_of_the_treatment_it_introduces() {
        let ontology = ontology();
        let analysis = ontology.analyze(
            "Continue pembrolizumab; switch to platinum-pemetrexed only if progression is confirmed",
        );
        assert!(!analysis.lines.contains("next"), "{analysis:?}");
        assert!(ontology.analyze("switch to FOLFIRI").lines.contains("next"));
    }

    #[test]
    fn supportive_care_and_radiation_doses_read_as_clinicians_mean_them() {
        let ontology = ontology();
        let chemo = ontology.analyze("Gemcitabine + Abraxane, first line; early palliative care involvement");
        assert!(!chemo.classes.contains("palliative_care") && chemo.followup.contains("palliative_care"));
        assert!(
            ontology
                .analyze("best supportive care")
                .classes
                .contains("palliative_care")
        );
        assert!(
            ontology
                .analyze("SBRT 50 Gy in 5 fractions")
                .classes
                .contains("radiotherapy")
        );
        assert_eq!(
            ontology
                .analyze("concurrent chemoradiotherapy 60 Gy with carboplatin/paclitaxel")
                .signature,
            ontology
                .analyze("concurrent chemoradiotherapy with carboplatin/paclitaxel")
                .signature
        );
        // A result is not an order, wherever the reply states it.
        let reading = ontology
            .read("HER2-positive, ER/PR-negative, with a biopsy-proven axillary node.\n\nPlan: TCHP.");
        assert!(reading.analysis.tests.is_empty(), "{:?}", reading.analysis);
        let ordered = ontology
            .read("I have asked pathology to perform HER2 IHC.\n\nRecommendation: THP if HER2-positive.");
        assert!(ordered.analysis.tests.contains("HER2"), "{:?}", ordered.analysis);
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
    fn words_that_name_no_treatment_are_not_read_as_one() {
        let ontology = ontology();
        let analysis = ontology.analyze("send PD-L1 on the resection specimen; surgical margins clear");
        assert!(!analysis.classes.contains("surgical_resection"), "{analysis:?}");
        assert_eq!(analysis.tests, set(&["PD-L1"]));
    }

    #[test]
    fn a_procedure_named_as_a_point_in_time_is_history() {
        let ontology = ontology();
        let analysis = ontology
            .analyze("adjuvant CAPOX starting within 8 weeks of surgery; B12 after total gastrectomy");
        assert!(!analysis.classes.contains("surgical_resection"), "{analysis:?}");
        assert!(analysis.classes.contains("adjuvant_therapy"));
        assert!(
            ontology
                .analyze("FOLFIRINOX then pancreaticoduodenectomy")
                .classes
                .contains("surgical_resection")
        );
    }

    #[test]
    fn follow_up_beside_a_treatment_is_not_a_surveillance_plan() {
        let ontology = ontology();
        let treated = ontology.analyze("definitive SBRT, then CT surveillance");
        assert!(!treated.classes.contains("surveillance") && treated.followup.contains("surveillance"));
        assert!(
            ontology
                .analyze("surveillance CT every 6 months")
                .classes
                .contains("surveillance")
        );
    }

    #[test]
    fn later_lines_named_beside_an_earlier_one_are_contingent() {
        let ontology = ontology();
        let analysis = ontology.analyze(
            "1L FOLFOX + nivolumab.
2L: ramucirumab + paclitaxel.",
        );
        assert!(
            analysis.drugs.contains("oxaliplatin") && !analysis.drugs.contains("ramucirumab"),
            "{analysis:?}"
        );
        assert!(analysis.contingent.contains("ramucirumab"));
        let only_later = ontology.analyze("2L: ramucirumab + paclitaxel");
        assert!(only_later.drugs.contains("ramucirumab"));
    }

    #[test]
    fn results_are_not_orders_and_unknowns_are() {
        let ontology = ontology();
        assert!(
            ontology
                .analyze("HER2 IHC 2+, ISH amplified: TCHP")
                .tests
                .is_empty()
        );
        assert!(ontology.analyze("HER2 testing showed IHC 3+").tests.is_empty());
        assert_eq!(
            ontology.analyze("PD-L1 not reported; send PD-L1 22C3").tests,
            set(&["PD-L1"])
        );
        assert!(
            ontology
                .analyze("no need to repeat HER2 testing")
                .tests
                .is_empty()
        );
    }

    #[test]
    fn numeric_marker_statements_are_mentions() {
        let ontology = ontology();
        assert!(
            ontology
                .mentions("PD-L1 TPS <1%", "biomarker")
                .contains("PD-L1:1")
        );
        assert!(
            ontology
                .mentions("HER2 IHC 3+", "biomarker")
                .iter()
                .any(|mention| mention.starts_with("HER2:"))
        );
    }

    #[test]
    fn read_finds_the_plan_then_reads_only_what_it_plans() {
        let ontology = ontology();
        let reading = ontology.read(
            "**Assessment:** s/p mastectomy, HER2-positive.
**Plan:** Herceptin and Perjeta (Phesgo SC); no role for endocrine therapy; on progression, Enhertu.",
        );
        assert_eq!(reading.plan.source.as_str(), "label");
        assert_eq!(reading.analysis.drugs, set(&["pertuzumab", "trastuzumab"]));
        assert!(reading.analysis.avoided.contains("endocrine_therapy"));
        assert!(reading.analysis.contingent.contains("trastuzumab deruxtecan"));
        assert!(
            reading.analysis.history.is_empty(),
            "the history is outside the plan"
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

    #[test]
    fn drug_therapy_timed_from_an_operation_is_adjuvant() {
        let ontology = ontology();
        let timed =
            ontology.analyze("Capecitabine and oxaliplatin, to start within six weeks of the operation");
        assert!(timed.classes.contains("adjuvant_therapy"), "{timed:?}");
        assert!(timed.history.contains("surgical_resection"), "{timed:?}");
        assert_eq!(timed.intent.as_deref(), Some("curative"));
        // An operation ruled out is no point in time.
        let instead = ontology.analyze("Cisplatin and vinorelbine in lieu of surgery");
        assert!(!instead.classes.contains("adjuvant_therapy"), "{instead:?}");
    }

    #[test]
    fn a_planned_length_of_time_is_not_history() {
        let ontology = ontology();
        let length = ontology.analyze("Six weeks of pelvic radiotherapy with weekly cisplatin");
        assert!(length.drugs.contains("cisplatin"), "{length:?}");
        assert!(length.classes.contains("radiotherapy"), "{length:?}");
        let after = ontology.analyze("Docetaxel after 9 months of FOLFOX");
        assert!(after.history.contains("oxaliplatin"), "{after:?}");
    }

    #[test]
    fn a_monotherapy_word_has_the_status_of_what_it_stands_beside() {
        let ontology = ontology();
        let ruled_out = ontology.analyze(
            "Pembrolizumab monotherapy is not appropriate. Carboplatin, pemetrexed and pembrolizumab.",
        );
        assert!(
            !ruled_out.classes.contains("immunotherapy_monotherapy"),
            "{ruled_out:?}"
        );
        let planned = ontology.analyze("1L: cemiplimab mono");
        assert!(
            planned.classes.contains("immunotherapy_monotherapy"),
            "{planned:?}"
        );
    }

    #[test]
    fn response_adapted_steps_are_part_of_the_pathway() {
        let ontology = ontology();
        let pathway =
            ontology.analyze("Neoadjuvant docetaxel, carboplatin and trastuzumab; T-DM1 if residual disease");
        assert!(pathway.drugs.contains("trastuzumab emtansine"), "{pathway:?}");
        let labelled = ontology.analyze("If non-pCR: nivolumab for a year after surgery");
        assert!(labelled.drugs.contains("nivolumab"), "{labelled:?}");
    }

    #[test]
    fn stopping_holding_and_future_treatment_read_as_meant() {
        let ontology = ontology();
        for text in ["Sunitinib should stop.", "We will stop sunitinib."] {
            let stopped = ontology.analyze(text);
            assert!(
                stopped.avoided.contains("sunitinib") && stopped.drugs.is_empty(),
                "{text}: {stopped:?}"
            );
        }
        let held = ontology.analyze("Axitinib with pembrolizumab now; cabozantinib is kept for progression");
        assert!(held.contingent.contains("cabozantinib"), "{held:?}");
        assert!(held.drugs.contains("axitinib"), "{held:?}");
        let future = ontology.analyze("The painful vertebra will be treated with radiotherapy");
        assert!(future.classes.contains("radiotherapy"), "{future:?}");
    }

    #[test]
    fn a_progressed_first_line_written_with_an_arrow_is_history() {
        let ontology = ontology();
        let plan = ontology.analyze("1L FOLFOX + pmab → PD.\n2L: FOLFIRI + bev");
        assert!(plan.history.contains("oxaliplatin"), "{plan:?}");
        assert!(
            plan.drugs.contains("irinotecan") && !plan.drugs.contains("oxaliplatin"),
            "{plan:?}"
        );
        let stopped = ontology.analyze("d/c nivo → 2L cabozantinib");
        assert!(stopped.avoided.contains("nivolumab"), "{stopped:?}");
        assert!(stopped.drugs.contains("cabozantinib"), "{stopped:?}");
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
