//! The intervention catalog: the pre-registration every variant is made under.
//!
//! A catalog is a YAML file (see `data/packs/oncology/catalog.yaml`). Loading
//! parses it strictly (unknown keys are errors) and then checks it against the
//! fact vocabulary; every problem is a [`Diagnostic`] with a line and column.
//! The catalog's identity is the BLAKE3 hash of its bytes ([`Catalog::hash`]):
//! any change to the file, even a comment, is a different pre-registration.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use cfeval_schema::pack::Pack;
use cfeval_schema::vocab::Vocabulary;

use crate::vocab;

/// One problem in a catalog file, at a 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// An intervention family, as the pack's vocabulary names it (`A`–`E` and
/// `N` in oncology, `F` and `N` in general-medicine diagnosis).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(transparent)]
pub struct Family(String);

impl Family {
    /// The family's name, as written in the `family` column.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A string or a list of strings.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn items(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(one) => vec![one.as_str()],
            OneOrMany::Many(many) => many.iter().map(String::as_str).collect(),
        }
    }
}

/// A pattern over one fact: every field given must match.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactPattern {
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    /// Any of these (case-insensitive) substrings in the fact's name.
    #[serde(default)]
    pub name_contains: Option<Vec<String>>,
    #[serde(default)]
    pub value: Option<OneOrMany>,
    #[serde(default)]
    pub polarity: Option<String>,
}

/// A predicate over a case's facts.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Predicate {
    All(Vec<Predicate>),
    Any(Vec<Predicate>),
    Not(Box<Predicate>),
    /// Some fact matches the pattern.
    Fact(FactPattern),
    /// Some reference fact (what no subject sees: the decisive items of a
    /// diagnostic case) matches the pattern.
    Reference(FactPattern),
    /// The case's cancer type is one of these.
    CancerType(Vec<String>),
    /// The case is metastatic (stage group IV, `M1`, or a metastatic fact).
    Metastatic(bool),
    /// Always true (`true`) or never (`false`).
    Always(bool),
}

/// Which surgery status a D intervention sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SurgeryTarget {
    Resected,
    Unresected,
}

/// Which line a B intervention marks as progressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressionTarget {
    /// The most recent line whose outcome is response or ongoing.
    CurrentLine,
    /// The most recent such line that contains a checkpoint inhibitor.
    Immunotherapy,
}

/// Which way an E intervention moves the stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageDirection {
    /// I–III → IV (M0 → M1, negative metastasis statements made positive).
    UpToFour,
    /// IV → III (M1 → M0, distant-metastasis mentions removed).
    DownToThree,
}

/// One edit operation. Every edit changes the facts and every sentence of
/// the chart that mentions them, or the variant is not applicable.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum EditOp {
    /// Positive ⇄ negative (`PD-L1`: high TPS ≥ 50% ⇄ < 1%) for `name`, and
    /// for each of `also` stated in the chart (e.g. PR with ER).
    FlipBiomarker {
        name: String,
        #[serde(default)]
        also: Vec<String>,
    },
    /// Delete every mention of the marker, and of each of `also` (the
    /// status becomes unknown).
    StripBiomarker {
        name: String,
        #[serde(default)]
        also: Vec<String>,
    },
    /// Toggle the surgery status, rewriting operative statements, margins,
    /// pathologic staging and adjuvant / neoadjuvant framing.
    SetSurgery {
        to: SurgeryTarget,
        /// The procedure named when the chart names none, per cancer type.
        #[serde(default)]
        procedure_by_cancer: BTreeMap<String, String>,
        default_procedure: String,
    },
    /// Mark a line of therapy as progressed.
    InjectProgression {
        on: ProgressionTarget,
        /// Drug names that make a regimen immunotherapy.
        #[serde(default)]
        checkpoint_inhibitors: Vec<String>,
    },
    /// Move the stage.
    SetStage { direction: StageDirection },
    /// Reword without changing any fact: each pair's two sides are swapped
    /// wherever one occurs outside a fact's span, and the sections' order is
    /// rotated (first and last section stay in place).
    Paraphrase {
        pairs: Vec<(String, String)>,
        #[serde(default = "default_true")]
        reorder_sections: bool,
    },
    /// Append one irrelevant sentence (chosen by the case id) to the first
    /// section of `sections` the chart has. `{She}`/`{she}`/`{her}` follow the
    /// chart's pronouns.
    AddSentence {
        sentences: Vec<String>,
        sections: Vec<String>,
    },
    /// The decisive result (the case's reference fact `decisive` of kind
    /// `target`) made normal: its value is rewritten with the first
    /// replacement whose cue occurs in it, else `default`.
    FlipResult {
        target: String,
        #[serde(default)]
        replacements: Vec<Replacement>,
        default: String,
    },
    /// The decisive result's line deleted from the chart.
    RemoveResult { target: String },
    /// Findings set to new values (a red flag): each named fact's value is
    /// rewritten; a case without every named fact is not applicable.
    SetFindings { values: Vec<FindingValue> },
    /// The patient's sex swapped: each pair's words (and the pronouns)
    /// exchanged across the whole chart.
    SwapSex {
        pairs: Vec<(String, String)>,
        /// Words after which `her` is an object (`him`), not a possessive.
        #[serde(default)]
        object_before: Vec<String>,
    },
}

/// A cue-dependent replacement of a result.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    /// Any of these (lowercase words) in the result as written.
    pub cue: Vec<String>,
    pub text: String,
}

/// One finding [`EditOp::SetFindings`] sets.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingValue {
    pub kind: String,
    pub name: String,
    /// The new text of the value.
    pub text: String,
    /// The new normalised value (`abnormal`).
    pub value: String,
}

fn default_true() -> bool {
    true
}

/// `changed` or `unchanged`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Changed,
    Unchanged,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Changed => "changed",
            Direction::Unchanged => "unchanged",
        }
    }
}

/// One branch of an intervention's expected direction. The first branch
/// whose `when` holds for the unedited case is the one pre-registered for it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedBranch {
    #[serde(default)]
    pub when: Option<Predicate>,
    pub direction: Direction,
    /// What the judge reads. `{regimen}` and `{procedure}` are filled per case.
    pub text: String,
    #[serde(default)]
    pub add: Vec<String>,
    #[serde(default)]
    pub remove: Vec<String>,
    /// `first`…`fourth`, or `next` (one after the progressed line).
    #[serde(default)]
    pub switch_line: Option<String>,
    #[serde(default)]
    pub intent: Option<String>,
    /// A class, or `progressed_regimen` (the regimen as the chart names it).
    #[serde(default)]
    pub must_not_repeat: Option<String>,
    /// A marker (oncology), or `decisive` (the removed test, by name).
    #[serde(default)]
    pub order_test: Option<String>,
    /// `away`: the answer must no longer assert the case's diagnosis.
    #[serde(default)]
    pub diagnosis: Option<String>,
    /// `escalate`: the answer must call for urgent care.
    #[serde(default)]
    pub urgency: Option<String>,
}

/// One pre-registered intervention.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intervention {
    pub id: String,
    pub family: Family,
    pub title: String,
    #[serde(default)]
    pub rationale: Option<String>,
    pub applies_when: Predicate,
    pub edits: Vec<EditOp>,
    pub expected: Vec<ExpectedBranch>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCatalog {
    catalog: String,
    version: u32,
    #[serde(default)]
    description: Option<String>,
    /// Enums are written as one-key maps (`all: [...]`, `flip_biomarker: {...}`).
    #[serde(with = "serde_norway::with::singleton_map_recursive")]
    interventions: Vec<Intervention>,
}

/// A loaded, checked catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    name: String,
    description: Option<String>,
    hash: String,
    interventions: Vec<Intervention>,
    /// Compiled paraphrase lists, by intervention index.
    paraphrasers: Vec<Option<crate::ops::control::Paraphraser>>,
    /// The pack the catalog belongs to (none: the built-in oncology
    /// vocabulary, a catalog outside any pack).
    pack: Option<Pack>,
}

impl Catalog {
    /// Reads and checks a catalog file. A catalog inside a pack (a folder
    /// above it holds `pack.yaml`) is checked against the pack's vocabulary
    /// and its hash takes in the pack's.
    pub fn load(path: &Path) -> Result<Catalog> {
        let bytes = fs_err::read(path).map_err(|source| Error::ReadCatalog {
            path: path.to_path_buf(),
            source,
        })?;
        let pack = match Pack::containing(path) {
            Some(dir) => Some(Pack::load(&dir).map_err(|message| Error::InvalidCatalog {
                path: path.to_path_buf(),
                diagnostics: vec![Diagnostic {
                    line: 0,
                    column: 0,
                    message: format!("its pack does not load: {message}"),
                }],
            })?),
            None => None,
        };
        Catalog::from_bytes_in(&bytes, pack).map_err(|diagnostics| Error::InvalidCatalog {
            path: path.to_path_buf(),
            diagnostics,
        })
    }

    /// Parses and checks catalog bytes (outside any pack).
    pub fn from_bytes(bytes: &[u8]) -> std::result::Result<Catalog, Vec<Diagnostic>> {
        Self::from_bytes_in(bytes, None)
    }

    /// Parses and checks catalog bytes of `pack`.
    pub fn from_bytes_in(bytes: &[u8], pack: Option<Pack>) -> std::result::Result<Catalog, Vec<Diagnostic>> {
        let vocabulary: &Vocabulary = match &pack {
            Some(pack) => &pack.vocabulary,
            None => Vocabulary::builtin(),
        };
        let (_, raw) = parse(bytes, vocabulary)?;
        let paraphrasers = raw
            .interventions
            .iter()
            .map(|intervention| {
                intervention.edits.iter().find_map(|edit| match edit {
                    EditOp::Paraphrase { pairs, .. } => crate::ops::control::Paraphraser::new(pairs),
                    _ => None,
                })
            })
            .collect();
        // A catalog outside any pack is of the oncology pack compiled in:
        // its hash takes in that pack's, as the same file's would inside
        // `data/packs/oncology`.
        let file_hash = cfeval_schema::ids::hash_bytes(bytes);
        let pack_hash = pack
            .as_ref()
            .map_or(cfeval_schema::pack::oncology::hash(), |pack| pack.hash());
        let hash = cfeval_schema::ids::content_id("catalog-in-pack", &[&file_hash, pack_hash]);
        Ok(Catalog {
            paraphrasers,
            name: raw.catalog,
            description: raw.description,
            hash,
            interventions: raw.interventions,
            pack,
        })
    }

    /// The pack the catalog belongs to, if any.
    pub fn pack(&self) -> Option<&Pack> {
        self.pack.as_ref()
    }

    /// The vocabulary the catalog was checked against.
    pub fn vocabulary(&self) -> &Vocabulary {
        match &self.pack {
            Some(pack) => &pack.vocabulary,
            None => Vocabulary::builtin(),
        }
    }

    /// Whether an intervention is a negative control (its family is the
    /// vocabulary's control family).
    pub fn is_control(&self, intervention: &Intervention) -> bool {
        intervention.family.as_str() == self.vocabulary().control_family
    }

    /// The BLAKE3 hash of the file's bytes with its pack's (the compiled
    /// oncology pack's for a catalog outside any pack): the
    /// pre-registration lock.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The catalog's declared name (`oncology-v1`).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The interventions, in file order.
    pub fn interventions(&self) -> &[Intervention] {
        &self.interventions
    }

    pub(crate) fn paraphraser(&self, index: usize) -> Option<&crate::ops::control::Paraphraser> {
        self.paraphrasers.get(index).and_then(Option::as_ref)
    }

    /// The intervention with this id.
    pub fn intervention(&self, id: &str) -> Option<&Intervention> {
        self.interventions
            .iter()
            .find(|intervention| intervention.id == id)
    }
}

/// The interventions after a split point (see [`parse_raw`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTail {
    #[serde(with = "serde_norway::with::singleton_map_recursive")]
    interventions: Vec<Intervention>,
}

/// From this size on, a catalog is parsed in two halves at once: the YAML
/// parser is nearly all the time a large catalog takes to check.
const SPLIT_PARSE_BYTES: usize = 1 << 20;

/// Parses the catalog's YAML. A large catalog whose `interventions` list is
/// its last top-level key (and that uses no anchors, aliases or document
/// markers) is cut at the list item nearest its middle and the halves are
/// parsed on two threads; the second half is padded with blank lines so
/// that every error keeps the line and column it has in the file, and the
/// first half's error wins as the file's first error would.
fn parse_raw(source: &str) -> std::result::Result<RawCatalog, serde_norway::Error> {
    let Some(split) = split_point(source) else {
        return serde_norway::from_str(source);
    };
    let (head, tail) = source.split_at(split);
    let lines_before = head.matches('\n').count();
    let padded = format!(
        "{}interventions:\n{tail}",
        "\n".repeat(lines_before.saturating_sub(1))
    );
    let (first, second) = std::thread::scope(|scope| {
        let second = scope.spawn(|| serde_norway::from_str::<RawTail>(&padded));
        (serde_norway::from_str::<RawCatalog>(head), second.join())
    });
    let mut raw = first?;
    match second {
        Ok(tail) => raw.interventions.extend(tail?.interventions),
        // A parser thread that panicked: read the whole file as one.
        Err(_) => return serde_norway::from_str(source),
    }
    Ok(raw)
}

/// Where [`parse_raw`] may cut a large catalog: the start of the first
/// `interventions` item at or after the middle; `None` when the file is
/// small or its shape is not the plain one the cut needs.
fn split_point(source: &str) -> Option<usize> {
    if source.len() < SPLIT_PARSE_BYTES {
        return None;
    }
    let mut offset = 0;
    let mut list_start = None;
    let mut item_indent = None;
    let mut candidate = None;
    for line in source.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let content = line.trim_end();
        let trimmed = content.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        // Anchors, aliases, tags and document markers can tie the halves.
        if content.starts_with("---")
            || content.starts_with("...")
            || trimmed.starts_with('&')
            || trimmed.starts_with('*')
            || trimmed.starts_with('!')
            || content.contains(": &")
            || content.contains(": *")
            || content.contains(": !")
            || content.contains("- &")
            || content.contains("- *")
        {
            return None;
        }
        let indent = content.len() - trimmed.len();
        match list_start {
            None => {
                if indent == 0 && content.trim_end() == "interventions:" {
                    list_start = Some(start);
                }
            }
            Some(_) => {
                let is_item = trimmed.starts_with("- ") || trimmed == "-";
                match item_indent {
                    None if is_item => item_indent = Some(indent),
                    None => return None,
                    Some(item) if indent < item || (indent == item && !is_item) => {
                        // Another top-level key after the list.
                        return None;
                    }
                    Some(item) => {
                        if indent == item && is_item && candidate.is_none() && start >= source.len() / 2 {
                            candidate = Some(start);
                        }
                    }
                }
            }
        }
    }
    candidate
}

/// The catalog's text and raw form, once its syntax and rules are checked.
fn parse<'a>(
    bytes: &'a [u8],
    vocabulary: &Vocabulary,
) -> std::result::Result<(&'a str, RawCatalog), Vec<Diagnostic>> {
    let source = std::str::from_utf8(bytes).map_err(|error| {
        let (line, column) = position(&String::from_utf8_lossy(bytes), error.valid_up_to());
        vec![Diagnostic {
            line,
            column,
            message: "the catalog is not valid UTF-8".into(),
        }]
    })?;
    let raw = parse_raw(source).map_err(|error| vec![yaml_diagnostic(&error)])?;
    let diagnostics = validate(source, &raw, vocabulary);
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    Ok((source, raw))
}

/// Checks a catalog file; an empty list means it is valid.
pub fn check(path: &Path) -> Vec<Diagnostic> {
    check_with(path, None)
}

/// [`check`], and with `known_class` (the judge's treatment-class
/// vocabulary, which this crate does not own) that every class the catalog
/// names in `add`, `remove` and `must_not_repeat` is known; a class
/// `a_or_b` needs each alternative known.
pub fn check_with(path: &Path, known_class: Option<&dyn Fn(&str) -> bool>) -> Vec<Diagnostic> {
    let bytes = match fs_err::read(path) {
        Ok(bytes) => bytes,
        Err(error) => {
            return vec![Diagnostic {
                line: 0,
                column: 0,
                message: error.to_string(),
            }];
        }
    };
    let pack = match Pack::containing(path).map(|dir| Pack::load(&dir)) {
        None => None,
        Some(Ok(pack)) => Some(pack),
        Some(Err(message)) => {
            return vec![Diagnostic {
                line: 0,
                column: 0,
                message: format!("its pack does not load: {message}"),
            }];
        }
    };
    let vocabulary: &Vocabulary = match &pack {
        Some(pack) => &pack.vocabulary,
        None => Vocabulary::builtin(),
    };
    let (source, raw) = match parse(&bytes, vocabulary) {
        Ok(parsed) => parsed,
        Err(diagnostics) => return diagnostics,
    };
    let Some(known_class) = known_class else {
        return Vec::new();
    };
    let locator = Locator::new(source, &raw);
    let mut out = Vec::new();
    for (index, intervention) in raw.interventions.iter().enumerate() {
        for branch in &intervention.expected {
            let named = branch.add.iter().chain(&branch.remove).chain(
                branch
                    .must_not_repeat
                    .iter()
                    .filter(|class| *class != "progressed_regimen"),
            );
            for class in named {
                let unknown: Vec<&str> = class
                    .split("_or_")
                    .filter(|alternative| !known_class(alternative))
                    .collect();
                if !unknown.is_empty() {
                    out.push(locator.at(
                        index,
                        class,
                        format!(
                            "intervention `{}`: unknown treatment class `{}` (the classes are those of the judge's ontology, data/packs/oncology/ontology.yaml)",
                            intervention.id,
                            unknown.join("`, `")
                        ),
                    ));
                }
            }
        }
    }
    out.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
    out
}

fn yaml_diagnostic(error: &serde_norway::Error) -> Diagnostic {
    let (line, column) = error
        .location()
        .map_or((0, 0), |location| (location.line(), location.column()));
    let mut message = error.to_string();
    if let Some(index) = message.rfind(" at line ") {
        message.truncate(index);
    }
    Diagnostic {
        line,
        column,
        message,
    }
}

/// 1-based line and column of a byte offset.
fn position(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |index| index + 1);
    let column = source
        .get(line_start..offset)
        .map_or(offset - line_start, |text| text.chars().count())
        + 1;
    (line, column)
}

/// Finds where things are in the source, for semantic diagnostics.
struct Locator<'a> {
    source: &'a str,
    /// Start offset of each intervention's `id:` key, in file order.
    starts: Vec<usize>,
    /// Offset of each line's start (a diagnostic's line by binary search,
    /// so that reporting is linear in the diagnostics, not quadratic).
    line_starts: Vec<usize>,
}

impl<'a> Locator<'a> {
    fn new(source: &'a str, raw: &RawCatalog) -> Self {
        // The `id:` keys at the indentation of the first one, in order: the
        // n-th intervention's is the n-th (its value is checked; an id
        // written differently, e.g. quoted, still takes its turn).
        let keys = id_keys(source);
        let mut starts = Vec::with_capacity(raw.interventions.len());
        let mut next = 0;
        for intervention in &raw.interventions {
            let found = keys[next.min(keys.len())..]
                .iter()
                .take(4)
                .position(|(_, value)| *value == intervention.id)
                .map_or(next, |ahead| next + ahead);
            let offset = keys
                .get(found)
                .map(|(offset, _)| *offset)
                .or_else(|| starts.last().copied())
                .unwrap_or(0);
            starts.push(offset);
            next = found + 1;
        }
        let line_starts = std::iter::once(0)
            .chain(source.match_indices('\n').map(|(at, _)| at + 1))
            .collect();
        Locator {
            source,
            starts,
            line_starts,
        }
    }

    /// 1-based line and column of a byte offset.
    fn position(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.source.len());
        let line = self.line_starts.partition_point(|start| *start <= offset);
        let line_start = self.line_starts[line.saturating_sub(1)];
        let column = self
            .source
            .get(line_start..offset)
            .map_or(offset - line_start, |text| text.chars().count())
            + 1;
        (line.max(1), column)
    }

    fn section(&self, index: usize) -> (usize, usize) {
        let start = self.starts.get(index).copied().unwrap_or(0);
        let end = self.starts.get(index + 1).copied().unwrap_or(self.source.len());
        (start, end.max(start))
    }

    /// The position of the first occurrence of `needle` inside intervention
    /// `index` (falling back to the intervention's start).
    fn at(&self, index: usize, needle: &str, message: String) -> Diagnostic {
        let (start, end) = self.section(index);
        let offset = self.source[start..end]
            .find(needle)
            .map_or(start, |relative| start + relative);
        let (line, column) = self.position(offset);
        Diagnostic {
            line,
            column,
            message,
        }
    }

    fn at_key(&self, index: usize, key: &str, message: String) -> Diagnostic {
        let (start, end) = self.section(index);
        let offset = find_key(&self.source[start..end], key).map_or(start, |relative| start + relative);
        let (line, column) = self.position(offset);
        Diagnostic {
            line,
            column,
            message,
        }
    }

    fn top(&self, key: &str, message: String) -> Diagnostic {
        let offset = find_key(self.source, key).unwrap_or(0);
        let (line, column) = self.position(offset);
        Diagnostic {
            line,
            column,
            message,
        }
    }
}

/// Offset of `key:` as a YAML key (at line start after indentation or `- `).
fn find_key(text: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start_matches([' ', '-', '\t']);
        let indent = line.len() - trimmed.len();
        let bare = trimmed.trim_start_matches(['"', '\'']);
        if let Some(rest) = bare.strip_prefix(key)
            && rest.trim_start_matches(['"', '\'']).starts_with(':')
        {
            return Some(offset + indent);
        }
        offset += line.len();
    }
    None
}

/// Every `id:` key of the file at the indentation of the first: its offset
/// and value (unquoted), in one pass.
fn id_keys(source: &str) -> Vec<(usize, &str)> {
    let mut keys = Vec::new();
    let mut indent_of_first = None;
    let mut offset = 0;
    for line in source.split_inclusive('\n') {
        let trimmed = line.trim_start_matches([' ', '-', '\t']);
        let indent = line.len() - trimmed.len();
        if let Some(rest) = trimmed.strip_prefix("id")
            && let Some(rest) = rest.trim_start().strip_prefix(':')
            && *indent_of_first.get_or_insert(indent) == indent
        {
            keys.push((offset + indent, rest.trim().trim_matches(['"', '\''])));
        }
        offset += line.len();
    }
    keys
}

const SWITCH_LINES: &[&str] = &["first", "second", "third", "fourth", "next"];
/// The placeholders an expected text may hold, filled per case by the engine.
const PLACEHOLDERS: &[&str] = &["regimen", "procedure", "test", "diagnosis"];

/// The `{name}` placeholders of a text (letters, digits and `_` between braces).
fn placeholders(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close)
                if close > 0
                    && after[..close]
                        .chars()
                        .all(|character| character.is_alphanumeric() || character == '_') =>
            {
                found.push(&after[..close]);
                rest = &after[close + 1..];
            }
            _ => rest = after,
        }
    }
    found
}
const FLIPPABLE: &[&str] = &["HER2", "ER", "PR", "PD-L1"];

fn validate(source: &str, raw: &RawCatalog, vocabulary: &Vocabulary) -> Vec<Diagnostic> {
    let locator = Locator::new(source, raw);
    let mut out = Vec::new();
    if raw.version != 1 {
        out.push(locator.top(
            "version",
            format!(
                "unsupported catalog version {} (this cfeval reads version 1)",
                raw.version
            ),
        ));
    }
    if raw.catalog.trim().is_empty() {
        out.push(locator.top("catalog", "the catalog needs a name".into()));
    }
    if raw.interventions.is_empty() {
        out.push(locator.top("interventions", "the catalog has no interventions".into()));
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (index, intervention) in raw.interventions.iter().enumerate() {
        let id = intervention.id.as_str();
        if let Some(first) = seen.insert(id, index) {
            let (line, _) = locator.position(locator.section(first).0);
            out.push(locator.at_key(
                index,
                "id",
                format!("duplicate intervention id `{id}` (first defined on line {line})"),
            ));
        }
        if id == cfeval_schema::vocab::BASELINE {
            out.push(locator.at_key(
                index,
                "id",
                "`baseline` is reserved for the unedited chart".into(),
            ));
        } else if !id.starts_with(intervention.family.as_str()) || id.len() < 2 {
            out.push(locator.at_key(
                index,
                "id",
                format!(
                    "intervention id `{id}` must start with its family letter `{}` (e.g. `{}1`)",
                    intervention.family.as_str(),
                    intervention.family.as_str()
                ),
            ));
        }
        if !vocabulary.is_family(intervention.family.as_str()) {
            out.push(locator.at_key(
                index,
                "family",
                format!(
                    "unknown family `{}` (the {} pack's families: {})",
                    intervention.family.as_str(),
                    vocabulary.pack,
                    vocabulary.family_names().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        if intervention.title.trim().is_empty() {
            out.push(locator.at_key(index, "title", format!("intervention `{id}` has an empty title")));
        }
        check_predicate(&locator, vocabulary, index, &intervention.applies_when, &mut out);
        if intervention.edits.is_empty() {
            out.push(locator.at_key(index, "edits", format!("intervention `{id}` has no edits")));
        }
        for edit in &intervention.edits {
            check_edit(&locator, vocabulary, index, intervention, edit, &mut out);
        }
        check_expected(&locator, vocabulary, index, intervention, &mut out);
    }
    out.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
    out
}

fn check_predicate(
    locator: &Locator<'_>,
    vocabulary: &Vocabulary,
    index: usize,
    predicate: &Predicate,
    out: &mut Vec<Diagnostic>,
) {
    match predicate {
        Predicate::All(items) | Predicate::Any(items) => {
            if items.is_empty() {
                let key = if matches!(predicate, Predicate::All(_)) {
                    "all"
                } else {
                    "any"
                };
                out.push(locator.at_key(index, key, format!("`{key}` needs at least one predicate")));
            }
            for item in items {
                check_predicate(locator, vocabulary, index, item, out);
            }
        }
        Predicate::Not(inner) => check_predicate(locator, vocabulary, index, inner, out),
        Predicate::Fact(pattern) | Predicate::Reference(pattern) => {
            let Some(spec) = vocabulary.kind(&pattern.kind) else {
                out.push(locator.at(
                    index,
                    &pattern.kind,
                    format!(
                        "unknown fact kind `{}` (known: {})",
                        pattern.kind,
                        kind_names(vocabulary).join(", ")
                    ),
                ));
                return;
            };
            if let (Some(name), Some(names)) = (&pattern.name, spec.names.as_deref())
                && !vocab::contains(names, name)
            {
                out.push(locator.at(
                    index,
                    name,
                    format!(
                        "unknown {} name `{name}` (known: {})",
                        spec.kind,
                        names.join(", ")
                    ),
                ));
            }
            if let Some(value) = &pattern.value {
                let items = value.items();
                if items.is_empty() {
                    out.push(locator.at_key(index, "value", "`value` needs at least one value".into()));
                }
                let values: Option<&[String]> = if spec.kind == "stage"
                    && pattern
                        .name
                        .as_deref()
                        .is_some_and(|name| name.eq_ignore_ascii_case("group"))
                {
                    Some(&vocabulary.stage_groups[..])
                } else {
                    spec.values.as_deref()
                };
                if let Some(values) = values {
                    for item in items {
                        if !vocab::contains(values, item) {
                            out.push(locator.at(
                                index,
                                item,
                                format!(
                                    "unknown {} value `{item}` (known: {})",
                                    spec.kind,
                                    values.join(", ")
                                ),
                            ));
                        }
                    }
                }
            }
            if let Some(polarity) = &pattern.polarity
                && polarity != "affirmed"
                && polarity != "negated"
            {
                out.push(locator.at(
                    index,
                    polarity,
                    format!("unknown polarity `{polarity}` (known: affirmed, negated)"),
                ));
            }
            if let Some(needles) = &pattern.name_contains
                && (needles.is_empty() || needles.iter().any(|needle| needle.trim().is_empty()))
            {
                out.push(locator.at_key(
                    index,
                    "name_contains",
                    "`name_contains` needs non-empty strings".into(),
                ));
            }
        }
        Predicate::CancerType(types) => {
            if types.is_empty() {
                out.push(locator.at_key(
                    index,
                    "cancer_type",
                    "`cancer_type` needs at least one type".into(),
                ));
            }
            for kind in types {
                if !vocab::contains(vocabulary.values("cancer_type"), kind) {
                    out.push(locator.at(
                        index,
                        kind,
                        format!(
                            "unknown cancer type `{kind}` (known: {})",
                            vocabulary.values("cancer_type").join(", ")
                        ),
                    ));
                }
            }
        }
        Predicate::Metastatic(_) | Predicate::Always(_) => {}
    }
}

fn check_edit(
    locator: &Locator<'_>,
    vocabulary: &Vocabulary,
    index: usize,
    intervention: &Intervention,
    edit: &EditOp,
    out: &mut Vec<Diagnostic>,
) {
    let family = intervention.family.as_str();
    let control = vocabulary.control_family.as_str();
    let oncology = vocabulary.pack == "oncology";
    // Oncology's edits belong to its families; the task-neutral edits of a
    // result or finding to any scored family; the controls' to the control.
    let (op_name, wanted): (&str, Option<&str>) = match edit {
        EditOp::FlipBiomarker { .. } => ("flip_biomarker", Some("A")),
        EditOp::StripBiomarker { .. } => ("strip_biomarker", Some("C")),
        EditOp::SetSurgery { .. } => ("set_surgery", Some("D")),
        EditOp::InjectProgression { .. } => ("inject_progression", Some("B")),
        EditOp::SetStage { .. } => ("set_stage", Some("E")),
        EditOp::Paraphrase { .. } => ("paraphrase", Some(control)),
        EditOp::AddSentence { .. } => ("add_sentence", Some(control)),
        EditOp::FlipResult { .. } => ("flip_result", None),
        EditOp::RemoveResult { .. } => ("remove_result", None),
        EditOp::SetFindings { .. } => ("set_findings", None),
        EditOp::SwapSex { .. } => ("swap_sex", None),
    };
    let oncology_only = matches!(
        edit,
        EditOp::FlipBiomarker { .. }
            | EditOp::StripBiomarker { .. }
            | EditOp::SetSurgery { .. }
            | EditOp::InjectProgression { .. }
            | EditOp::SetStage { .. }
    );
    if oncology_only && !oncology {
        out.push(locator.at_key(
            index,
            op_name,
            format!(
                "edit `{op_name}` is the oncology pack's; the {} pack cannot use it",
                vocabulary.pack
            ),
        ));
    } else if let Some(wanted) = wanted
        && wanted != family
    {
        out.push(locator.at_key(
            index,
            op_name,
            format!("edit `{op_name}` belongs to family {wanted}, not family {family}"),
        ));
    } else if wanted.is_none() && family == control {
        out.push(locator.at_key(
            index,
            op_name,
            format!("edit `{op_name}` changes a fact: it cannot belong to the control family {control}"),
        ));
    }
    match edit {
        EditOp::FlipBiomarker { name, also } => {
            for marker in std::iter::once(name).chain(also) {
                if !vocab::contains(FLIPPABLE, marker) {
                    out.push(locator.at(
                        index,
                        marker,
                        format!(
                            "cannot flip biomarker `{marker}` (flippable: {})",
                            FLIPPABLE.join(", ")
                        ),
                    ));
                }
            }
        }
        EditOp::StripBiomarker { name, also } => {
            for marker in std::iter::once(name).chain(also) {
                if !vocab::contains(FLIPPABLE, marker) {
                    out.push(locator.at(
                        index,
                        marker,
                        format!(
                            "cannot strip biomarker `{marker}` (strippable: {})",
                            FLIPPABLE.join(", ")
                        ),
                    ));
                }
            }
        }
        EditOp::SetSurgery {
            procedure_by_cancer,
            default_procedure,
            ..
        } => {
            if default_procedure.trim().is_empty() {
                out.push(locator.at_key(index, "default_procedure", "`default_procedure` is empty".into()));
            }
            for kind in procedure_by_cancer.keys() {
                if !vocab::contains(vocabulary.values("cancer_type"), kind) {
                    out.push(locator.at(index, kind, format!("unknown cancer type `{kind}`")));
                }
            }
        }
        EditOp::InjectProgression {
            on,
            checkpoint_inhibitors,
        } => {
            if *on == ProgressionTarget::Immunotherapy && checkpoint_inhibitors.is_empty() {
                out.push(locator.at_key(
                    index,
                    "inject_progression",
                    "`on: immunotherapy` needs `checkpoint_inhibitors`".into(),
                ));
            }
        }
        EditOp::SetStage { .. } => {}
        EditOp::Paraphrase { pairs, .. } => {
            if pairs.is_empty() {
                out.push(locator.at_key(index, "pairs", "`pairs` is empty".into()));
            }
            for (left, right) in pairs {
                if left.trim().is_empty() || right.trim().is_empty() || left.eq_ignore_ascii_case(right) {
                    out.push(locator.at(
                        index,
                        left,
                        format!(
                            "paraphrase pair `{left}` / `{right}` must be two different non-empty phrases"
                        ),
                    ));
                }
            }
        }
        EditOp::AddSentence { sentences, sections } => {
            if sentences.is_empty() || sentences.iter().any(|sentence| sentence.trim().is_empty()) {
                out.push(locator.at_key(index, "sentences", "`sentences` needs non-empty sentences".into()));
            }
            if sections.is_empty() {
                out.push(locator.at_key(index, "sections", "`sections` needs at least one section".into()));
            }
        }
        EditOp::FlipResult {
            target,
            replacements,
            default,
        } => {
            check_target(locator, vocabulary, index, target, out);
            if default.trim().is_empty()
                || replacements
                    .iter()
                    .any(|r| r.text.trim().is_empty() || r.cue.is_empty())
            {
                out.push(locator.at_key(
                    index,
                    "flip_result",
                    "`flip_result` needs a non-empty `default` and, per replacement, cues and a text".into(),
                ));
            }
        }
        EditOp::RemoveResult { target } => check_target(locator, vocabulary, index, target, out),
        EditOp::SetFindings { values } => {
            if values.is_empty() {
                out.push(locator.at_key(index, "values", "`values` needs at least one finding".into()));
            }
            for finding in values {
                match vocabulary.kind(&finding.kind) {
                    None => out.push(locator.at(
                        index,
                        &finding.kind,
                        format!(
                            "unknown fact kind `{}` (known: {})",
                            finding.kind,
                            kind_names(vocabulary).join(", ")
                        ),
                    )),
                    Some(spec) if !spec.allows_value(&finding.value) => out.push(locator.at(
                        index,
                        &finding.value,
                        format!("unknown {} value `{}`", finding.kind, finding.value),
                    )),
                    Some(_) if finding.text.trim().is_empty() || finding.name.trim().is_empty() => {
                        out.push(locator.at_key(index, "values", "a finding needs a name and a text".into()))
                    }
                    Some(_) => {}
                }
            }
        }
        EditOp::SwapSex { pairs, .. } => {
            if pairs.is_empty()
                || pairs.iter().any(|(left, right)| {
                    left.trim().is_empty() || right.trim().is_empty() || left.eq_ignore_ascii_case(right)
                })
            {
                out.push(locator.at_key(
                    index,
                    "pairs",
                    "`pairs` needs pairs of two different non-empty words".into(),
                ));
            }
        }
    }
}

/// A result edit's target: a fact kind of the vocabulary.
fn check_target(
    locator: &Locator<'_>,
    vocabulary: &Vocabulary,
    index: usize,
    target: &str,
    out: &mut Vec<Diagnostic>,
) {
    if vocabulary.kind(target).is_none() {
        out.push(locator.at(
            index,
            target,
            format!(
                "unknown target kind `{target}` (known: {})",
                kind_names(vocabulary).join(", ")
            ),
        ));
    }
}

/// Every fact kind's name.
fn kind_names(vocabulary: &Vocabulary) -> Vec<&str> {
    vocabulary
        .fact_kinds
        .iter()
        .map(|spec| spec.kind.as_str())
        .collect()
}

fn check_expected(
    locator: &Locator<'_>,
    vocabulary: &Vocabulary,
    index: usize,
    intervention: &Intervention,
    out: &mut Vec<Diagnostic>,
) {
    let id = &intervention.id;
    if intervention.expected.is_empty() {
        out.push(locator.at_key(
            index,
            "expected",
            format!("intervention `{id}` has no expected direction"),
        ));
    }
    let mut unconditional_seen = false;
    for branch in &intervention.expected {
        if unconditional_seen {
            out.push(locator.at_key(
                index,
                "direction",
                format!(
                    "intervention `{id}`: a branch after an unconditional `expected` branch can never apply"
                ),
            ));
        }
        match &branch.when {
            Some(when) => check_predicate(locator, vocabulary, index, when, out),
            None => unconditional_seen = true,
        }
        let want = if intervention.family.as_str() == vocabulary.control_family {
            Direction::Unchanged
        } else {
            Direction::Changed
        };
        if branch.direction != want {
            out.push(locator.at_key(
                index,
                "direction",
                format!(
                    "family {} must expect `{}`, not `{}`",
                    intervention.family.as_str(),
                    want.as_str(),
                    branch.direction.as_str()
                ),
            ));
        }
        if branch.text.trim().is_empty() {
            out.push(locator.at_key(
                index,
                "text",
                format!("intervention `{id}`: expected `text` is empty"),
            ));
        }
        for placeholder in placeholders(&branch.text) {
            if !PLACEHOLDERS.contains(&placeholder) {
                out.push(locator.at(
                    index,
                    &format!("{{{placeholder}}}"),
                    format!(
                        "intervention `{id}`: unknown placeholder `{{{placeholder}}}` in expected `text` (known: {})",
                        PLACEHOLDERS
                            .iter()
                            .map(|name| format!("{{{name}}}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
        if let Some(line) = &branch.switch_line
            && !SWITCH_LINES.contains(&line.as_str())
        {
            out.push(locator.at(
                index,
                line,
                format!(
                    "unknown switch_line `{line}` (known: {})",
                    SWITCH_LINES.join(", ")
                ),
            ));
        }
        if let Some(intent) = &branch.intent
            && !vocab::contains(vocabulary.values("intent"), intent)
        {
            out.push(locator.at(
                index,
                intent,
                format!(
                    "unknown intent `{intent}` (known: {})",
                    vocabulary.values("intent").join(", ")
                ),
            ));
        }
        // The diagnosis task's one-word directions.
        for (field, value, known) in [
            ("diagnosis", &branch.diagnosis, "away"),
            ("urgency", &branch.urgency, "escalate"),
        ] {
            if let Some(value) = value
                && value != known
            {
                out.push(locator.at(
                    index,
                    value,
                    format!("unknown {field} `{value}` (known: {known})"),
                ));
            }
        }
        if let Some(marker) = &branch.order_test
            && marker != "decisive"
            && !vocab::contains(vocabulary.names("biomarker"), marker)
        {
            out.push(locator.at(
                index,
                marker,
                format!("unknown biomarker `{marker}` in order_test"),
            ));
        }
        if intervention.family.as_str() == vocabulary.control_family
            && (!branch.add.is_empty() || !branch.remove.is_empty() || branch.switch_line.is_some())
        {
            out.push(locator.at_key(
                index,
                "direction",
                "a negative control cannot expect added or removed treatments".into(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped catalog with copies of its interventions appended until it
    /// passes the split size.
    fn large_catalog() -> String {
        let text = cfeval_schema::pack::oncology::CATALOG;
        let list = text.find("interventions:\n").expect("list") + "interventions:\n".len();
        let items = &text[list..];
        let mut out = text.to_string();
        let mut copy = 0;
        while out.len() < 2 * SPLIT_PARSE_BYTES {
            copy += 1;
            out.push_str(&items.replace("  - id: ", &format!("  - id: X{copy}")));
        }
        out
    }

    #[test]
    fn a_large_catalog_parsed_in_halves_equals_it_parsed_whole() {
        let text = large_catalog();
        let cut = split_point(&text).expect("a large plain catalog is cut");
        assert!(text[cut..].starts_with("  - id: "), "{}", &text[cut..cut + 20]);
        let halves = parse_raw(&text).expect("parses");
        let whole: RawCatalog = serde_norway::from_str(&text).expect("parses");
        assert_eq!(halves.interventions, whole.interventions);
        assert_eq!((halves.catalog, halves.version), (whole.catalog, whole.version));
        // Small, anchored or with a key after the list: read whole.
        assert_eq!(split_point(cfeval_schema::pack::oncology::CATALOG), None);
        assert_eq!(split_point(&format!("{text}\nextra: 1\n")), None);
        assert_eq!(split_point(&text.replacen("family: A", "family: &f A", 1)), None);
    }

    #[test]
    fn an_error_in_either_half_keeps_its_line_and_column() {
        let text = large_catalog();
        let cut = split_point(&text).expect("cut");
        for at in [cut / 2, cut + (text.len() - cut) / 2] {
            let line_start = text[..at].rfind("\n    family:").expect("a family line") + 1;
            let broken = format!("{}    family: [A\n{}", &text[..line_start], &text[line_start..]);
            let whole = serde_norway::from_str::<RawCatalog>(&broken).expect_err("broken");
            let halves = parse_raw(&broken).expect_err("broken");
            let place = |error: &serde_norway::Error| {
                error
                    .location()
                    .map(|location| (location.line(), location.column()))
            };
            assert_eq!(place(&halves), place(&whole), "{halves} / {whole}");
        }
    }

    #[test]
    fn positions_are_one_based() {
        let text = "ab\ncd\n";
        assert_eq!(position(text, 0), (1, 1));
        assert_eq!(position(text, 4), (2, 2));
    }

    #[test]
    fn keys_are_found_after_list_dashes() {
        let text = "interventions:\n  - id: A1\n    family: A\n";
        assert_eq!(find_key(text, "family"), Some(30));
        assert_eq!(id_keys(text), vec![(19, "A1")]);
        // Only keys at the first one's indentation: nested `id:` keys are not
        // interventions.
        let text = "interventions:\n  - id: A1\n    x:\n      id: inner\n  - id: \"A2\"\n";
        assert_eq!(
            id_keys(text).iter().map(|(_, id)| *id).collect::<Vec<_>>(),
            vec!["A1", "A2"]
        );
    }
}
