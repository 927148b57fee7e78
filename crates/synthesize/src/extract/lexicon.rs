//! The rule extractor's lexicon: every word list it reads a note with, loaded
//! from data (`data/packs/oncology/extract.yaml`, plus the drug and regimen names
//! of the judge's ontology, `data/packs/oncology/ontology.yaml`, their one owner).
//!
//! A phrase is split into tokens the way a note is ([`Tokens`]) and stored
//! under its first word; matching ignores case, skips a hyphen in the note
//! between two words of a phrase, and prefers the longest phrase. A phrase
//! that fails to parse (empty, or a bad `exact` spelling) is refused while
//! the YAML is read, so the error carries the file's line and column.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::OnceLock;

use serde::Deserialize;

use super::text::Tokens;
use crate::error::{Error, Result};

/// The extractor lexicon shipped with cfeval, compiled in.
pub const BUILTIN_EXTRACT_YAML: &str = cfeval_schema::pack::oncology::EXTRACT;
/// The ontology whose `drugs` and `regimens` name the drugs of a prior line.
pub const BUILTIN_ONTOLOGY_YAML: &str = cfeval_schema::pack::oncology::ONTOLOGY;

const EXTRACT_ORIGIN: &str = "data/packs/oncology/extract.yaml (built in)";
const ONTOLOGY_ORIGIN: &str = "data/packs/oncology/ontology.yaml (built in)";

/// A phrase as lower-case tokens; `exact` holds the raw tokens when the
/// phrase must be written exactly so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phrase {
    words: Vec<String>,
    exact: Option<Vec<String>>,
}

impl Phrase {
    fn parse(text: &str, exact: bool) -> std::result::Result<Self, String> {
        let tokens = Tokens::new(text);
        if tokens.is_empty() {
            return Err(format!("the phrase {text:?} has no words"));
        }
        let words: Vec<String> = (0..tokens.len())
            .map(|index| tokens.lower(index).to_string())
            .collect();
        let exact = exact.then(|| {
            (0..tokens.len())
                .map(|index| tokens.raw(index).to_string())
                .collect()
        });
        Ok(Phrase { words, exact })
    }

    /// How many tokens from `index` spell the phrase (a hyphen between two
    /// of its words is skipped), or `None`.
    fn match_at(&self, tokens: &Tokens<'_>, index: usize) -> Option<usize> {
        let mut at = index;
        for (position, word) in self.words.iter().enumerate() {
            if position > 0 && word != "-" && tokens.lower(at) == "-" {
                at += 1;
            }
            if tokens.lower(at) != word {
                return None;
            }
            if let Some(exact) = &self.exact
                && tokens.raw(at) != exact[position]
            {
                return None;
            }
            at += 1;
        }
        Some(at - index)
    }
}

/// A phrase in the YAML: parsed while it is read, so a bad one is reported
/// at its line.
#[derive(Debug, Clone)]
struct RawPhrase(Phrase);

impl<'de> Deserialize<'de> for RawPhrase {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Phrase::parse(&text, false)
            .map(RawPhrase)
            .map_err(serde::de::Error::custom)
    }
}

/// An exactly-written phrase in the YAML.
#[derive(Debug, Clone)]
struct ExactPhrase(Phrase);

impl<'de> Deserialize<'de> for ExactPhrase {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Phrase::parse(&text, true)
            .map(ExactPhrase)
            .map_err(serde::de::Error::custom)
    }
}

/// Phrases with a label each, indexed by first word.
#[derive(Debug, Clone)]
pub struct PhraseSet<L> {
    by_first: HashMap<String, Vec<(Phrase, L)>>,
}

impl<L> Default for PhraseSet<L> {
    fn default() -> Self {
        PhraseSet {
            by_first: HashMap::new(),
        }
    }
}

impl<L: Clone> PhraseSet<L> {
    fn insert(&mut self, phrase: Phrase, label: L) {
        let entries = self.by_first.entry(phrase.words[0].clone()).or_default();
        if !entries.iter().any(|(known, _)| *known == phrase) {
            entries.push((phrase, label));
            entries.sort_by_key(|(phrase, _)| std::cmp::Reverse(phrase.words.len()));
        }
    }

    fn labelled(lists: impl IntoIterator<Item = (L, Vec<Phrase>)>) -> Self {
        let mut set = PhraseSet::default();
        for (label, phrases) in lists {
            for phrase in phrases {
                set.insert(phrase, label.clone());
            }
        }
        set
    }

    /// The longest phrase at token `index`: tokens it covers and its label.
    pub fn at(&self, tokens: &Tokens<'_>, index: usize) -> Option<(usize, &L)> {
        let entries = self.by_first.get(tokens.lower(index))?;
        entries
            .iter()
            .find_map(|(phrase, label)| phrase.match_at(tokens, index).map(|length| (length, label)))
    }

    /// Every label, once per phrase.
    pub fn labels(&self) -> impl Iterator<Item = &L> {
        self.by_first.values().flatten().map(|(_, label)| label)
    }

    /// The tokens the longest phrase at `index` covers.
    pub fn len_at(&self, tokens: &Tokens<'_>, index: usize) -> Option<usize> {
        self.at(tokens, index).map(|(length, _)| length)
    }

    /// Whether a phrase starts at `index`.
    pub fn starts(&self, tokens: &Tokens<'_>, index: usize) -> bool {
        self.at(tokens, index).is_some()
    }

    /// Every phrase of one word that need not be written exactly so.
    fn single_words(&self) -> impl Iterator<Item = &str> {
        self.by_first
            .values()
            .flatten()
            .filter(|(phrase, _)| phrase.words.len() == 1 && phrase.exact.is_none())
            .map(|(phrase, _)| phrase.words[0].as_str())
    }

    /// The first index in `from..to` where a phrase starts.
    pub fn find(&self, tokens: &Tokens<'_>, from: usize, to: usize) -> Option<usize> {
        (from..to).find(|&index| self.starts(tokens, index))
    }
}

/// A set of unlabelled phrases.
pub type Words = PhraseSet<()>;

fn words(phrases: Vec<RawPhrase>) -> Words {
    PhraseSet::labelled([((), phrases.into_iter().map(|phrase| phrase.0).collect())])
}

fn labelled(map: BTreeMap<String, Vec<RawPhrase>>) -> PhraseSet<String> {
    PhraseSet::labelled(
        map.into_iter()
            .map(|(label, phrases)| (label, phrases.into_iter().map(|phrase| phrase.0).collect())),
    )
}

/// A marker a mention names, and the value the mention carries if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MarkerName {
    pub name: String,
    pub fixed: Option<&'static str>,
    /// A name that is also another word (`PR`, a partial response): its
    /// status must be written right after it or shared with a marker list.
    pub ambiguous: bool,
}

/// Receptor shorthand: one phrase, several markers, one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shorthand {
    pub markers: Vec<String>,
    pub value: String,
}

/// The word lists for stage.
#[derive(Debug, Clone)]
pub struct StagingWords {
    pub words: Words,
    pub fillers: Words,
    pub arrows: Words,
    pub metastatic_group: String,
    /// TNM prefixes, longest first.
    pub tnm_prefixes: Vec<String>,
    /// Tables chosen by a marker: (cancer, marker, value, table).
    pub marker_tables: Vec<MarkerTable>,
    /// Phrases that put a non-metastatic cancer in one group when nothing
    /// else gives one (`locally advanced` pancreatic cancer is III): the
    /// phrases, and the group by cancer type.
    pub locally_advanced: Words,
    pub locally_advanced_groups: BTreeMap<String, String>,
    /// Words that correct the record's stage (`revised to`, `the correct
    /// stage is`): a group a few words after one is the current stage.
    pub revisions: Words,
    /// Words that date a group to a relapse (`stage IIA at relapse`).
    pub restagings: Words,
}

/// A staging table chosen by a marker's value (p16-positive oropharynx).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkerTable {
    pub cancer: String,
    pub marker: String,
    pub value: String,
    pub table: String,
}

/// The word lists for metastatic status.
#[derive(Debug, Clone)]
pub struct MetastaticWords {
    pub stems: Vec<String>,
    pub words: Words,
    pub negations: Words,
    pub partial: Words,
    pub organs: Words,
    pub regional: Words,
    pub distant: Words,
    pub sites: Words,
    pub lesion_words: Words,
    pub lesion_site_links: Words,
    pub phrases: Words,
    pub negative_phrases: Words,
    pub recurrence: Words,
    /// After a recurrence word, these make it no event (`relapse-free`,
    /// `Recurrence Score`).
    pub recurrence_qualifiers: Words,
    /// Per cancer type, spread that is regional there, not distant
    /// (peritoneal disease in ovarian cancer is FIGO III).
    pub not_distant_for: HashMap<String, Words>,
    /// Cancer types so rarely spread beyond their organ that a note which
    /// states no spread is not metastatic (glioma).
    pub local_cancers: Vec<String>,
}

/// The word lists for surgery.
#[derive(Debug, Clone)]
pub struct SurgeryWords {
    pub procedures: Words,
    pub unresected: Words,
    pub unfit_cues: Words,
    pub words: Words,
    pub not_done_cues: Words,
    pub negations: Words,
    pub planned_cues: Words,
    pub resected_words: Words,
    pub done_before: Words,
    pub not_done_phrases: Words,
    pub resected_alone: Words,
    pub planned_before: Words,
    pub past_words: Words,
    pub done_links: Words,
    pub done_after: Words,
    pub diagnostic: Words,
    /// Words of a note's first line that make it a pre-operative note
    /// (`Pre-operative H&P`): an operation it names is to come.
    pub preoperative_titles: Words,
    /// Right before a procedure, these say it was done unless a plan is
    /// named in the clause or the note is pre-operative (`after surgery`
    /// is past in `CEA normal after surgery`, to come in `Plan adjuvant
    /// pembrolizumab after surgery`).
    pub time_before: Words,
    /// Words that tell of the time after an operation (`post-op`): one was
    /// done, except in a pre-operative note.
    pub after_operation: Words,
    /// A definitive treatment that is no operation (`definitive
    /// chemoradiation`): in a note that states nothing else of surgery, the
    /// surgery is not done.
    pub non_surgical: Words,
}

/// The word lists for prior lines; `drugs` label each name with its
/// canonical drug or regimen.
#[derive(Debug, Clone)]
pub struct LineWords {
    pub drugs: PhraseSet<String>,
    /// The canonical names in `drugs` that are named regimens (`FOLFOX`),
    /// with their component drugs: two regimens never join into one, and a
    /// line's drugs are compared through the components.
    pub regimens: HashMap<String, Vec<String>>,
    pub outcomes: PhraseSet<String>,
    pub ongoing: Words,
    pub stable: Words,
    pub assessments: Words,
    pub future: Words,
    /// Labels that head a decision (`MDT:`) as a plan word does.
    pub plan_labels: Words,
    pub not_carried: Words,
    pub links: Words,
    pub settings: Words,
    pub curative: Words,
    pub past: Words,
    pub retreatment: Words,
    /// Progression words that, right after `for`, name the disease a line
    /// treats (`on X for recurrent cervical cancer`), not its outcome.
    pub indications: Words,
    /// Labels opening a line that tell the history from its start
    /// (`History:`, `Background (from our records):`).
    pub history_labels: Words,
    pub metastasis_events: Words,
    pub qualifiers: Words,
    pub negations: Words,
    pub glue: Words,
    /// Right after a regimen (past `not_given_fillers`), these say it was
    /// not given (`T-DXd not an option`, `carboplatin-based NAC is not
    /// supported`, `osimertinib to be considered`).
    pub not_given: Words,
    pub not_given_fillers: Words,
    /// Right after a regimen, these describe the patient, not a line
    /// (`cisplatin-ineligible`).
    pub patient_words: Words,
    /// Right before a regimen (past setting and retreatment words), these
    /// say it was not given (`no adjuvant nivolumab`, `advise against
    /// cisplatin`, `do not rechallenge capecitabine`).
    pub refusals: Words,
    /// Labels of lines that list what is not a line's story (`Meds:`,
    /// `Allergies:`, `FHx:`): an outcome word there (`aspirin stopped`)
    /// travels to no line named elsewhere.
    pub aside_labels: Words,
    /// Tumour markers whose fall or rise written as `A -> B` (`PSA 48 ->
    /// 3.1`) is a response or a progression, as is a size in `size_units`
    /// (`3.1 -> 2.6 cm`).
    pub measures: Words,
    pub size_units: Words,
    /// Near a regimen, these say its course was completed: with no outcome
    /// written, a response (`I finished my TC chemo in July`).
    pub completed: Words,
    /// Right before an outcome word, these make it no event (`lowers the
    /// chance of recurrence`, `watch for progression`).
    pub hypothetical: Words,
}

/// The word lists for biomarkers.
#[derive(Debug, Clone)]
pub struct MarkerWords {
    pub markers: PhraseSet<MarkerName>,
    pub shorthand: PhraseSet<Shorthand>,
    pub statuses: PhraseSet<String>,
    pub negation_fillers: Words,
    pub negated_nouns: Words,
    pub ish_words: Words,
    /// Words that make a result after them (within four words) a condition,
    /// not a result: `adjuvant olaparib if gBRCA+`.
    pub conditions: Words,
    /// Markers read by a count per megabase (`TMB 3 mut/Mb`): positive at
    /// or above the threshold, negative below.
    pub counts: BTreeMap<String, f64>,
}

/// How a dictated note is read (the extractor's `dictation` module).
#[derive(Debug, Clone)]
pub struct DictationWords {
    /// Number word -> digits.
    pub numbers: HashMap<String, String>,
    /// Number words that are everyday words too.
    pub everyday_numbers: Words,
    /// Words after which an everyday number word is a number.
    pub number_cues: Words,
    /// Misheard phrases, labelled with what was said.
    pub heard: PhraseSet<String>,
    /// Drug, regimen and marker names of one word (lower case): pieces
    /// that join into one are read as it.
    pub names: HashSet<String>,
}

/// Everything the rule extractor reads a note with.
#[derive(Debug, Clone)]
pub struct Lexicon {
    pub cancer_types: PhraseSet<String>,
    pub organs: PhraseSet<String>,
    pub histologies: Words,
    pub organ_window: usize,
    pub organ_reach: usize,
    pub family_words: Words,
    pub metastasis_words: Words,
    /// Beside an organ that is a common site of metastasis (the metastatic
    /// `sites`), these make it a deposit (`liver lesions`); beside another
    /// organ they may name the primary (`gastric lesion at OGD`).
    pub site_lesion_words: Words,
    pub staging: StagingWords,
    pub metastatic: MetastaticWords,
    pub surgery: SurgeryWords,
    pub lines: LineWords,
    pub ecog: Words,
    pub comorbidities: PhraseSet<String>,
    pub findings: PhraseSet<String>,
    pub finding_negations: Words,
    pub uncertain_cues: Words,
    pub markers: MarkerWords,
    pub dictation: DictationWords,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLexicon {
    version: u32,
    cancer_types: BTreeMap<String, Vec<RawPhrase>>,
    organs: BTreeMap<String, Vec<RawPhrase>>,
    histologies: Vec<RawPhrase>,
    organ_window: usize,
    organ_reach: usize,
    family_words: Vec<RawPhrase>,
    metastasis_words: Vec<RawPhrase>,
    #[serde(default)]
    site_lesion_words: Vec<RawPhrase>,
    staging: RawStaging,
    metastatic: RawMetastatic,
    surgery: RawSurgery,
    prior_lines: RawLines,
    ecog: RawEcog,
    comorbidities: BTreeMap<String, Vec<RawPhrase>>,
    findings: BTreeMap<String, Vec<RawPhrase>>,
    finding_negations: Vec<RawPhrase>,
    uncertain_cues: Vec<RawPhrase>,
    biomarkers: RawBiomarkers,
    dictation: RawDictation,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDictation {
    numbers: HashMap<String, String>,
    everyday_numbers: Vec<RawPhrase>,
    number_cues: Vec<RawPhrase>,
    heard: BTreeMap<String, Vec<RawPhrase>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStaging {
    words: Vec<RawPhrase>,
    fillers: Vec<RawPhrase>,
    arrows: Vec<RawPhrase>,
    metastatic_group: String,
    tnm_prefixes: Vec<String>,
    #[serde(default)]
    marker_tables: Vec<MarkerTable>,
    #[serde(default)]
    locally_advanced: Vec<RawPhrase>,
    #[serde(default)]
    locally_advanced_groups: BTreeMap<String, String>,
    #[serde(default)]
    revisions: Vec<RawPhrase>,
    #[serde(default)]
    restagings: Vec<RawPhrase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetastatic {
    stems: Vec<String>,
    words: Vec<RawPhrase>,
    negations: Vec<RawPhrase>,
    partial: Vec<RawPhrase>,
    organs: Vec<RawPhrase>,
    regional: Vec<RawPhrase>,
    distant: Vec<RawPhrase>,
    sites: Vec<RawPhrase>,
    lesion_words: Vec<RawPhrase>,
    #[serde(default)]
    lesion_site_links: Vec<RawPhrase>,
    phrases: Vec<RawPhrase>,
    negative_phrases: Vec<RawPhrase>,
    recurrence: Vec<RawPhrase>,
    #[serde(default)]
    recurrence_qualifiers: Vec<RawPhrase>,
    #[serde(default)]
    not_distant_for: BTreeMap<String, Vec<RawPhrase>>,
    #[serde(default)]
    local_cancers: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSurgery {
    procedures: Vec<RawPhrase>,
    unresected: Vec<RawPhrase>,
    unfit_cues: Vec<RawPhrase>,
    words: Vec<RawPhrase>,
    not_done_cues: Vec<RawPhrase>,
    negations: Vec<RawPhrase>,
    planned_cues: Vec<RawPhrase>,
    resected_words: Vec<RawPhrase>,
    done_before: Vec<RawPhrase>,
    #[serde(default)]
    not_done_phrases: Vec<RawPhrase>,
    #[serde(default)]
    resected_alone: Vec<RawPhrase>,
    #[serde(default)]
    planned_before: Vec<RawPhrase>,
    #[serde(default)]
    past_words: Vec<RawPhrase>,
    #[serde(default)]
    done_links: Vec<RawPhrase>,
    #[serde(default)]
    done_after: Vec<RawPhrase>,
    diagnostic: Vec<RawPhrase>,
    #[serde(default)]
    preoperative_titles: Vec<RawPhrase>,
    #[serde(default)]
    time_before: Vec<RawPhrase>,
    #[serde(default)]
    after_operation: Vec<RawPhrase>,
    #[serde(default)]
    non_surgical: Vec<RawPhrase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLines {
    progression: Vec<RawPhrase>,
    stopped: Vec<RawPhrase>,
    progression_exact: Vec<ExactPhrase>,
    response: Vec<RawPhrase>,
    response_exact: Vec<ExactPhrase>,
    ongoing: Vec<RawPhrase>,
    stable: Vec<RawPhrase>,
    assessments: Vec<RawPhrase>,
    future: Vec<RawPhrase>,
    plan_labels: Vec<RawPhrase>,
    not_carried: Vec<RawPhrase>,
    links: Vec<RawPhrase>,
    settings: Vec<RawPhrase>,
    curative: Vec<RawPhrase>,
    past: Vec<RawPhrase>,
    retreatment: Vec<RawPhrase>,
    indications: Vec<RawPhrase>,
    history_labels: Vec<RawPhrase>,
    metastasis_events: Vec<RawPhrase>,
    qualifiers: Vec<RawPhrase>,
    negations: Vec<RawPhrase>,
    glue: Vec<RawPhrase>,
    not_given: Vec<RawPhrase>,
    not_given_fillers: Vec<RawPhrase>,
    patient_words: Vec<RawPhrase>,
    refusals: Vec<RawPhrase>,
    aside_labels: Vec<RawPhrase>,
    measures: Vec<RawPhrase>,
    size_units: Vec<RawPhrase>,
    completed: Vec<RawPhrase>,
    hypothetical: Vec<RawPhrase>,
    skip_classes: Vec<String>,
    skip_names: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEcog {
    words: Vec<RawPhrase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBiomarkers {
    markers: BTreeMap<String, RawMarker>,
    shorthand: Vec<RawShorthand>,
    statuses: BTreeMap<Status, Vec<RawPhrase>>,
    negation_fillers: Vec<RawPhrase>,
    negated_nouns: Vec<RawPhrase>,
    ish_words: Vec<RawPhrase>,
    #[serde(default)]
    conditions: Vec<RawPhrase>,
    #[serde(default)]
    counts: BTreeMap<String, f64>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
enum Status {
    Positive,
    Negative,
    Equivocal,
    Unknown,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Positive => "positive",
            Status::Negative => "negative",
            Status::Equivocal => "equivocal",
            Status::Unknown => "unknown",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMarker {
    #[serde(default)]
    names: Vec<RawPhrase>,
    #[serde(default)]
    exact: Vec<ExactPhrase>,
    #[serde(default)]
    ambiguous: Vec<ExactPhrase>,
    #[serde(default)]
    positive: Vec<RawPhrase>,
    #[serde(default)]
    negative: Vec<RawPhrase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawShorthand {
    phrases: Vec<RawPhrase>,
    markers: Vec<String>,
    value: Status,
}

/// The two ontology sections the extractor reads (the judge's loader owns
/// the rest of the file and its checks).
#[derive(Deserialize)]
struct RawOntology {
    drugs: BTreeMap<String, RawDrug>,
    regimens: BTreeMap<String, RawRegimen>,
}

#[derive(Deserialize)]
struct RawDrug {
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    classes: Vec<String>,
}

#[derive(Deserialize)]
struct RawRegimen {
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    components: Vec<String>,
}

impl Lexicon {
    /// The built-in lexicon (parsed once per process).
    pub fn builtin() -> Result<&'static Lexicon> {
        static CELL: OnceLock<std::result::Result<Lexicon, String>> = OnceLock::new();
        CELL.get_or_init(|| {
            Lexicon::parse(
                BUILTIN_EXTRACT_YAML,
                EXTRACT_ORIGIN,
                BUILTIN_ONTOLOGY_YAML,
                ONTOLOGY_ORIGIN,
            )
            .map_err(|error| {
                let mut message = error.to_string();
                let mut source = std::error::Error::source(&error);
                while let Some(cause) = source {
                    message.push_str(&format!(": {cause}"));
                    source = cause.source();
                }
                message
            })
        })
        .as_ref()
        .map_err(|message| Error::Lexicon {
            origin: EXTRACT_ORIGIN.to_string(),
            message: message.clone(),
        })
    }

    /// Parses an extractor lexicon and the ontology it takes drug names
    /// from; the origins name the files in errors.
    pub fn parse(text: &str, origin: &str, ontology: &str, ontology_origin: &str) -> Result<Lexicon> {
        let raw: RawLexicon = serde_norway::from_str(text).map_err(|source| Error::LexiconParse {
            origin: origin.to_string(),
            source,
        })?;
        let invalid = |message: String| Error::Lexicon {
            origin: origin.to_string(),
            message,
        };
        if raw.version != 1 {
            return Err(invalid(format!("version {} is not 1", raw.version)));
        }
        for organ in raw.organs.keys() {
            if !raw.cancer_types.contains_key(organ) {
                return Err(invalid(format!(
                    "organs: `{organ}` is not one of the cancer_types"
                )));
            }
        }
        let drugs: RawOntology = serde_norway::from_str(ontology).map_err(|source| Error::LexiconParse {
            origin: ontology_origin.to_string(),
            source,
        })?;
        let markers = markers(&raw.biomarkers).map_err(invalid)?;
        let mut outcomes = PhraseSet::default();
        for (label, phrases) in [
            ("progression", raw.prior_lines.progression),
            ("response", raw.prior_lines.response),
            ("unknown", raw.prior_lines.stopped),
        ] {
            for phrase in phrases {
                outcomes.insert(phrase.0, label.to_string());
            }
        }
        for (label, phrases) in [
            ("progression", raw.prior_lines.progression_exact),
            ("response", raw.prior_lines.response_exact),
        ] {
            for phrase in phrases {
                outcomes.insert(phrase.0, label.to_string());
            }
        }
        let drugs_set = drug_names(&drugs, &raw.prior_lines.skip_classes, &raw.prior_lines.skip_names);
        let names: HashSet<String> = drugs_set
            .single_words()
            .chain(markers.markers.single_words())
            .filter(|name| name.len() >= 4)
            .map(str::to_string)
            .collect();
        let mut prefixes = raw.staging.tnm_prefixes;
        prefixes.sort_by_key(|prefix| std::cmp::Reverse(prefix.len()));
        Ok(Lexicon {
            cancer_types: labelled(raw.cancer_types),
            organs: labelled(raw.organs),
            histologies: words(raw.histologies),
            organ_window: raw.organ_window,
            organ_reach: raw.organ_reach,
            family_words: words(raw.family_words),
            metastasis_words: words(raw.metastasis_words),
            site_lesion_words: words(raw.site_lesion_words),
            staging: StagingWords {
                words: words(raw.staging.words),
                fillers: words(raw.staging.fillers),
                arrows: words(raw.staging.arrows),
                metastatic_group: raw.staging.metastatic_group,
                tnm_prefixes: prefixes,
                marker_tables: raw.staging.marker_tables,
                locally_advanced: words(raw.staging.locally_advanced),
                locally_advanced_groups: raw.staging.locally_advanced_groups,
                revisions: words(raw.staging.revisions),
                restagings: words(raw.staging.restagings),
            },
            metastatic: MetastaticWords {
                stems: raw.metastatic.stems,
                words: words(raw.metastatic.words),
                negations: words(raw.metastatic.negations),
                partial: words(raw.metastatic.partial),
                organs: words(raw.metastatic.organs),
                regional: words(raw.metastatic.regional),
                distant: words(raw.metastatic.distant),
                sites: words(raw.metastatic.sites),
                lesion_words: words(raw.metastatic.lesion_words),
                lesion_site_links: words(raw.metastatic.lesion_site_links),
                phrases: words(raw.metastatic.phrases),
                negative_phrases: words(raw.metastatic.negative_phrases),
                recurrence: words(raw.metastatic.recurrence),
                recurrence_qualifiers: words(raw.metastatic.recurrence_qualifiers),
                not_distant_for: raw
                    .metastatic
                    .not_distant_for
                    .into_iter()
                    .map(|(cancer, phrases)| (cancer, words(phrases)))
                    .collect(),
                local_cancers: raw.metastatic.local_cancers,
            },
            surgery: SurgeryWords {
                procedures: words(raw.surgery.procedures),
                unresected: words(raw.surgery.unresected),
                unfit_cues: words(raw.surgery.unfit_cues),
                words: words(raw.surgery.words),
                not_done_cues: words(raw.surgery.not_done_cues),
                negations: words(raw.surgery.negations),
                planned_cues: words(raw.surgery.planned_cues),
                resected_words: words(raw.surgery.resected_words),
                done_before: words(raw.surgery.done_before),
                not_done_phrases: words(raw.surgery.not_done_phrases),
                resected_alone: words(raw.surgery.resected_alone),
                planned_before: words(raw.surgery.planned_before),
                past_words: words(raw.surgery.past_words),
                done_links: words(raw.surgery.done_links),
                done_after: words(raw.surgery.done_after),
                diagnostic: words(raw.surgery.diagnostic),
                preoperative_titles: words(raw.surgery.preoperative_titles),
                time_before: words(raw.surgery.time_before),
                after_operation: words(raw.surgery.after_operation),
                non_surgical: words(raw.surgery.non_surgical),
            },
            lines: LineWords {
                drugs: drugs_set,
                regimens: drugs
                    .regimens
                    .iter()
                    .map(|(name, regimen)| (name.clone(), regimen.components.clone()))
                    .collect(),
                outcomes,
                ongoing: words(raw.prior_lines.ongoing),
                stable: words(raw.prior_lines.stable),
                assessments: words(raw.prior_lines.assessments),
                future: words(raw.prior_lines.future),
                plan_labels: words(raw.prior_lines.plan_labels),
                not_carried: words(raw.prior_lines.not_carried),
                links: words(raw.prior_lines.links),
                settings: words(raw.prior_lines.settings),
                curative: words(raw.prior_lines.curative),
                past: words(raw.prior_lines.past),
                retreatment: words(raw.prior_lines.retreatment),
                indications: words(raw.prior_lines.indications),
                history_labels: words(raw.prior_lines.history_labels),
                metastasis_events: words(raw.prior_lines.metastasis_events),
                qualifiers: words(raw.prior_lines.qualifiers),
                negations: words(raw.prior_lines.negations),
                glue: words(raw.prior_lines.glue),
                not_given: words(raw.prior_lines.not_given),
                not_given_fillers: words(raw.prior_lines.not_given_fillers),
                patient_words: words(raw.prior_lines.patient_words),
                refusals: words(raw.prior_lines.refusals),
                aside_labels: words(raw.prior_lines.aside_labels),
                measures: words(raw.prior_lines.measures),
                size_units: words(raw.prior_lines.size_units),
                completed: words(raw.prior_lines.completed),
                hypothetical: words(raw.prior_lines.hypothetical),
            },
            ecog: words(raw.ecog.words),
            comorbidities: labelled(raw.comorbidities),
            findings: labelled(raw.findings),
            finding_negations: words(raw.finding_negations),
            uncertain_cues: words(raw.uncertain_cues),
            markers,
            dictation: DictationWords {
                numbers: raw.dictation.numbers,
                everyday_numbers: words(raw.dictation.everyday_numbers),
                number_cues: words(raw.dictation.number_cues),
                heard: labelled(raw.dictation.heard),
                names,
            },
        })
    }
}

fn markers(raw: &RawBiomarkers) -> std::result::Result<MarkerWords, String> {
    let mut markers = PhraseSet::default();
    for (name, marker) in &raw.markers {
        let plain = MarkerName {
            name: name.clone(),
            fixed: None,
            ambiguous: false,
        };
        for phrase in &marker.names {
            markers.insert(phrase.0.clone(), plain.clone());
        }
        for phrase in &marker.exact {
            markers.insert(phrase.0.clone(), plain.clone());
        }
        for phrase in &marker.ambiguous {
            markers.insert(
                phrase.0.clone(),
                MarkerName {
                    ambiguous: true,
                    ..plain.clone()
                },
            );
        }
        for (value, phrases) in [("positive", &marker.positive), ("negative", &marker.negative)] {
            for phrase in phrases {
                markers.insert(
                    phrase.0.clone(),
                    MarkerName {
                        name: name.clone(),
                        fixed: Some(value),
                        ambiguous: false,
                    },
                );
            }
        }
    }
    let mut shorthand = PhraseSet::default();
    for item in &raw.shorthand {
        if let Some(unknown) = item.markers.iter().find(|name| !raw.markers.contains_key(*name)) {
            return Err(format!("shorthand names the unknown marker `{unknown}`"));
        }
        for phrase in &item.phrases {
            shorthand.insert(
                phrase.0.clone(),
                Shorthand {
                    markers: item.markers.clone(),
                    value: item.value.as_str().to_string(),
                },
            );
        }
    }
    let mut statuses = PhraseSet::default();
    for (status, phrases) in &raw.statuses {
        for phrase in phrases {
            statuses.insert(phrase.0.clone(), status.as_str().to_string());
        }
    }
    Ok(MarkerWords {
        markers,
        shorthand,
        statuses,
        negation_fillers: words(raw.negation_fillers.clone()),
        negated_nouns: words(raw.negated_nouns.clone()),
        ish_words: words(raw.ish_words.clone()),
        conditions: words(raw.conditions.clone()),
        counts: raw.counts.clone(),
    })
}

/// Every drug and regimen name of the ontology (canonical names and
/// aliases), each labelled with its canonical name; names of one or two
/// letters only in capitals.
fn drug_names(ontology: &RawOntology, skip_classes: &[String], skip_names: &[String]) -> PhraseSet<String> {
    let mut set = PhraseSet::default();
    let mut add = |canonical: &str, name: &str| {
        if skip_names.iter().any(|skip| skip == name) {
            return;
        }
        let short = name.len() <= 2;
        let written = if short {
            name.to_ascii_uppercase()
        } else {
            name.to_string()
        };
        if let Ok(phrase) = Phrase::parse(&written, short) {
            set.insert(phrase, canonical.to_string());
        }
    };
    for (canonical, drug) in &ontology.drugs {
        if drug.classes.iter().any(|class| skip_classes.contains(class)) || skip_names.contains(canonical) {
            continue;
        }
        add(canonical, canonical);
        for alias in &drug.aliases {
            add(canonical, alias);
        }
    }
    for (canonical, regimen) in &ontology.regimens {
        add(canonical, canonical);
        for alias in &regimen.aliases {
            add(canonical, alias);
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_lexicon_loads_with_ontology_drugs() {
        let lexicon = Lexicon::builtin().unwrap();
        let tokens = Tokens::new("pembro then Tagrisso, then nab-paclitaxel");
        assert_eq!(
            lexicon.lines.drugs.at(&tokens, 0).map(|(_, name)| name.as_str()),
            Some("pembrolizumab")
        );
        assert_eq!(
            lexicon.lines.drugs.at(&tokens, 2).map(|(_, name)| name.as_str()),
            Some("osimertinib")
        );
        assert_eq!(
            lexicon.lines.drugs.at(&tokens, 5),
            Some((3, &"nab paclitaxel".to_string()))
        );
        // Names a note uses for something else are left out.
        assert!(lexicon.lines.drugs.at(&Tokens::new("cross"), 0).is_none());
    }

    #[test]
    fn phrases_skip_a_hyphen_and_prefer_the_longest() {
        let mut set = PhraseSet::default();
        set.insert(Phrase::parse("non small cell", false).unwrap(), "a");
        set.insert(Phrase::parse("non", false).unwrap(), "b");
        set.insert(Phrase::parse("ER", true).unwrap(), "c");
        let tokens = Tokens::new("Non-small cell; er ER");
        assert_eq!(set.at(&tokens, 0), Some((4, &"a")));
        assert_eq!(set.at(&tokens, 5), None);
        assert_eq!(set.at(&tokens, 6), Some((1, &"c")));
    }

    #[test]
    fn bad_lexicons_are_refused_with_their_line() {
        let bad = BUILTIN_EXTRACT_YAML.replacen("histologies: [adenocarcinoma,", "histologies: [\"\",", 1);
        let error = Lexicon::parse(&bad, "test.yaml", BUILTIN_ONTOLOGY_YAML, "ontology").unwrap_err();
        let message = format!("{error}: {}", std::error::Error::source(&error).unwrap());
        assert!(
            message.contains("test.yaml") && message.contains("line"),
            "{message}"
        );
        let bad = BUILTIN_EXTRACT_YAML.replacen("organ_window: 6", "organ_window: 6\nunknown_list: []", 1);
        assert!(Lexicon::parse(&bad, "test.yaml", BUILTIN_ONTOLOGY_YAML, "ontology").is_err());
        let bad = BUILTIN_EXTRACT_YAML.replacen("markers: [ER, PR, HER2]", "markers: [ER, PR, HER3]", 1);
        let error = Lexicon::parse(&bad, "test.yaml", BUILTIN_ONTOLOGY_YAML, "ontology").unwrap_err();
        assert!(error.to_string().contains("HER3"), "{error}");
    }
}
