//! The pack's diagnosis ontology (`ontology.yaml`), its names in other
//! languages (`translations.yaml`, optional), the test names (`tests.yaml`),
//! and the matcher that finds their mentions in free text.
//!
//! Both files are strict (unknown fields are errors) and checked as a whole:
//! every `broader` id must be an entry, ids are unique, no name or synonym
//! (in canonical words) belongs to two entries, names are not empty. Errors
//! read `origin:LINE: what is wrong`.
//!
//! Matching is on canonical words (the crate's `text` module), leftmost-longest, so
//! `myasthenic crisis` is never also `myasthenia`. A synonym written in
//! capitals (`MG`, `ALL`) only matches capitals, so `60 mg` names nothing.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::text::{Folded, Lexicon, Token, content_words, tokens, words};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOntology {
    version: u32,
    diagnoses: Vec<RawDiagnosis>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDiagnosis {
    id: String,
    name: String,
    #[serde(default)]
    synonyms: Vec<String>,
    #[serde(default)]
    broader: Vec<String>,
    #[serde(default)]
    sex: Option<String>,
    #[serde(default)]
    confirming: Vec<String>,
}

/// `translations.yaml`: each entry's names in other languages.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTranslations {
    version: u32,
    languages: Vec<String>,
    diagnoses: Vec<RawTranslation>,
}

#[derive(Debug, Deserialize)]
struct RawTranslation {
    id: String,
    /// Language code: names.
    #[serde(flatten)]
    names: std::collections::BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTests {
    version: u32,
    tests: Vec<RawTest>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTest {
    id: String,
    name: String,
    #[serde(default)]
    synonyms: Vec<String>,
}

/// One diagnosis of the ontology.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub id: String,
    pub name: String,
    pub synonyms: Vec<String>,
    /// Ids of the broader categories that contain this diagnosis.
    pub broader: Vec<String>,
    /// `female` or `male` for a sex-specific diagnosis.
    pub sex: Option<String>,
    /// Lowercase phrases naming the test that confirms it.
    pub confirming: Vec<String>,
    /// Its names in other languages (`translations.yaml`), matched as its
    /// synonyms are.
    pub translations: Vec<String>,
    /// Lowercase phrases of the history, symptoms and examination that
    /// support it over its usual alternatives (`features.yaml`): what the
    /// reference-evidence rule looks for in a case's own words.
    pub features: Vec<String>,
}

/// One test of `tests.yaml`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Test {
    name: String,
    synonyms: Vec<String>,
}

/// One phrase of an index: the entry it names and, for a phrase written in
/// capitals, the requirement that the text writes it in capitals too.
#[derive(Debug, Clone)]
struct Phrase {
    entry: usize,
    capitals: bool,
}

/// Canonical word sequences to the entries they name.
#[derive(Debug, Clone, Default)]
struct PhraseIndex {
    phrases: HashMap<Vec<String>, Vec<Phrase>>,
    longest: usize,
}

impl PhraseIndex {
    /// Adds a phrase; returns the entry that already holds it, if another.
    fn insert(&mut self, phrase: &str, entry: usize, lexicon: &Lexicon) -> Option<usize> {
        let key = words(phrase, lexicon);
        if key.is_empty() {
            return None;
        }
        let letters: Vec<char> = phrase.chars().filter(|c| c.is_alphabetic()).collect();
        let capitals = key.len() == 1
            && letters.len() >= 2
            && letters.len() <= 5
            && letters.iter().all(|c| c.is_uppercase());
        self.longest = self.longest.max(key.len());
        let slot = self.phrases.entry(key).or_default();
        let clash = slot
            .iter()
            .find(|held| held.entry != entry && held.capitals == capitals)
            .map(|held| held.entry);
        if clash.is_none() {
            match slot.iter_mut().find(|held| held.entry == entry) {
                // The same words written another way (`FDP`, `FDPs`): the
                // entry needs capitals only if every way it is written has them.
                Some(held) => held.capitals &= capitals,
                None => slot.push(Phrase { entry, capitals }),
            }
        }
        clash
    }

    /// The entry named by words starting at `at` and how many words it takes.
    fn longest_at(&self, tokens: &[Token], at: usize) -> Option<(usize, usize)> {
        let most = self.longest.min(tokens.len() - at);
        for length in (1..=most).rev() {
            let key: Vec<String> = tokens[at..at + length]
                .iter()
                .map(|token| token.word.clone())
                .collect();
            if let Some(phrases) = self.phrases.get(&key) {
                let written_in_capitals = tokens[at].capitals;
                let found = phrases
                    .iter()
                    .find(|phrase| !phrase.capitals || written_in_capitals);
                if let Some(phrase) = found {
                    return Some((phrase.entry, length));
                }
            }
        }
        None
    }

    /// Every leftmost-longest match: (entry, first token, token count).
    fn scan(&self, tokens: &[Token]) -> Vec<(usize, usize, usize)> {
        let mut found = Vec::new();
        let mut at = 0;
        while at < tokens.len() {
            match self.longest_at(tokens, at) {
                Some((entry, length)) => {
                    found.push((entry, at, length));
                    at += length;
                }
                None => at += 1,
            }
        }
        found
    }
}

/// A diagnosis named in a text: its entry and its byte span in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Found {
    pub entry: usize,
    pub start: usize,
    pub end: usize,
}

/// The pack's diagnoses and tests.
#[derive(Debug, Clone)]
pub struct Ontology {
    diagnoses: Vec<Diagnosis>,
    by_id: HashMap<String, usize>,
    tests: Vec<Test>,
    hash: String,
    lexicon: Lexicon,
    diagnosis_index: PhraseIndex,
    test_index: PhraseIndex,
    /// Every word of every diagnosis name, as compared (canonical).
    words: HashSet<String>,
    /// Pairs of entries linked clinically (`links.yaml`: a complication, a
    /// manifestation, a cause, or another grade of the same disorder), both
    /// ways, as entry indexes.
    links: HashSet<(usize, usize)>,
}

/// The file of a pack's clinical links between diagnoses.
pub const LINKS: &str = "links.yaml";

/// How two linked diagnoses relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum LinkKind {
    Complication,
    Manifestation,
    Cause,
    Grade,
}

/// The file of a pack's clinical features per diagnosis.
pub const FEATURES: &str = "features.yaml";

/// The 1-based line of the first line holding `needle` at or after `from`.
pub(crate) fn line_of(text: &str, needle: &str, from: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1))
        .find(|(_, line)| line.contains(needle))
        .map_or(from.max(1), |(index, _)| index + 1)
}

/// The line of an entry's `id:` line.
fn line_of_id(text: &str, id: &str) -> usize {
    text.lines()
        .position(|line| {
            let line = line.trim_start().trim_start_matches("- ").trim_start();
            line.strip_prefix("id:")
                .is_some_and(|rest| rest.trim().trim_matches(['"', '\'']) == id)
        })
        .map_or(0, |index| index + 1)
}

/// Adds the names of `translations.yaml` to their entries: every id must be
/// an entry's, every language one the file declares, every name non-empty.
fn translate(
    diagnoses: &mut [Diagnosis],
    by_id: &HashMap<String, usize>,
    text: &str,
    origin: &str,
) -> Result<()> {
    let raw: RawTranslations = parse_yaml(text, origin)?;
    let invalid = |line: usize, message: String| Error::Invalid(format!("{origin}:{line}: {message}"));
    check_version(raw.version, text, origin)?;
    for entry in raw.diagnoses {
        let line = line_of_id(text, &entry.id);
        let Some(&index) = by_id.get(&entry.id) else {
            return Err(invalid(line, format!("unknown diagnosis id `{}`", entry.id)));
        };
        for (language, names) in entry.names {
            if !raw.languages.contains(&language) {
                return Err(invalid(
                    line_of(text, &format!("{language}:"), line),
                    format!(
                        "`{}`: language `{language}` is not one of `languages` ({})",
                        entry.id,
                        raw.languages.join(", ")
                    ),
                ));
            }
            for name in names {
                if name.trim().is_empty() {
                    return Err(invalid(
                        line_of(text, &format!("{language}:"), line),
                        format!("`{}`: an empty `{language}` name", entry.id),
                    ));
                }
                diagnoses[index].translations.push(name);
            }
        }
    }
    Ok(())
}

pub(crate) fn parse_yaml<T: for<'de> Deserialize<'de>>(text: &str, origin: &str) -> Result<T> {
    serde_norway::from_str(text).map_err(|error| {
        let line = error.location().map_or(0, |location| location.line());
        Error::Invalid(format!("{origin}:{line}: {error}"))
    })
}

/// Refuses a pack file whose `version` is not 1, naming the line it is on.
pub(crate) fn check_version(version: u32, text: &str, origin: &str) -> Result<()> {
    if version == 1 {
        return Ok(());
    }
    Err(Error::Invalid(format!(
        "{origin}:{}: unsupported version {version}",
        line_of(text, "version", 1)
    )))
}

impl Ontology {
    /// Parses `ontology.yaml` and `tests.yaml`; `origin` names them in errors
    /// (`origin/ontology.yaml:LINE: ...`).
    pub fn parse(ontology_yaml: &str, tests_yaml: &str, origin: &str) -> Result<Self> {
        Self::parse_with_translations(ontology_yaml, tests_yaml, None, origin)
    }

    /// As [`Ontology::parse`], with the names of `translations.yaml`.
    pub fn parse_with_translations(
        ontology_yaml: &str,
        tests_yaml: &str,
        translations_yaml: Option<&str>,
        origin: &str,
    ) -> Result<Self> {
        let ontology_origin = format!("{origin}/ontology.yaml");
        let tests_origin = format!("{origin}/tests.yaml");
        let raw: RawOntology = parse_yaml(ontology_yaml, &ontology_origin)?;
        let raw_tests: RawTests = parse_yaml(tests_yaml, &tests_origin)?;
        let invalid = |origin: &str, line: usize, message: String| {
            Error::Invalid(format!("{origin}:{line}: {message}"))
        };
        check_version(raw.version, ontology_yaml, &ontology_origin)?;
        check_version(raw_tests.version, tests_yaml, &tests_origin)?;
        let mut by_id = HashMap::new();
        for (index, diagnosis) in raw.diagnoses.iter().enumerate() {
            let line = line_of_id(ontology_yaml, &diagnosis.id);
            if diagnosis.id.trim().is_empty() {
                return Err(invalid(&ontology_origin, line, "empty id".into()));
            }
            if diagnosis.name.trim().is_empty() {
                return Err(invalid(
                    &ontology_origin,
                    line,
                    format!("`{}` has an empty name", diagnosis.id),
                ));
            }
            if by_id.insert(diagnosis.id.clone(), index).is_some() {
                let second = ontology_yaml
                    .lines()
                    .enumerate()
                    .filter(|(_, text)| text.contains(&format!("id: {}", diagnosis.id)))
                    .nth(1)
                    .map_or(line, |(number, _)| number + 1);
                return Err(invalid(
                    &ontology_origin,
                    second,
                    format!("duplicate id `{}`", diagnosis.id),
                ));
            }
            if let Some(sex) = &diagnosis.sex
                && sex != "female"
                && sex != "male"
            {
                return Err(invalid(
                    &ontology_origin,
                    line_of(ontology_yaml, "sex:", line),
                    format!("`{}`: sex must be female or male, not `{sex}`", diagnosis.id),
                ));
            }
        }
        for diagnosis in &raw.diagnoses {
            let line = line_of_id(ontology_yaml, &diagnosis.id);
            for broader in &diagnosis.broader {
                if !by_id.contains_key(broader) {
                    return Err(invalid(
                        &ontology_origin,
                        line_of(ontology_yaml, broader, line),
                        format!("`{}` names unknown broader id `{broader}`", diagnosis.id),
                    ));
                }
            }
        }
        let mut test_ids = HashSet::new();
        for test in &raw_tests.tests {
            let line = line_of_id(tests_yaml, &test.id);
            if test.name.trim().is_empty() {
                return Err(invalid(
                    &tests_origin,
                    line,
                    format!("test `{}` has an empty name", test.id),
                ));
            }
            if !test_ids.insert(test.id.clone()) {
                return Err(invalid(
                    &tests_origin,
                    line,
                    format!("duplicate test id `{}`", test.id),
                ));
            }
        }
        let mut diagnoses: Vec<Diagnosis> = raw
            .diagnoses
            .into_iter()
            .map(|raw| Diagnosis {
                id: raw.id,
                name: raw.name,
                synonyms: raw.synonyms,
                broader: raw.broader,
                sex: raw.sex,
                confirming: raw.confirming,
                translations: Vec::new(),
                features: Vec::new(),
            })
            .collect();
        let translations_origin = format!("{origin}/translations.yaml");
        if let Some(text) = translations_yaml {
            translate(&mut diagnoses, &by_id, text, &translations_origin)?;
        }
        let tests: Vec<Test> = raw_tests
            .tests
            .into_iter()
            .map(|raw| Test {
                name: raw.name,
                synonyms: raw.synonyms,
            })
            .collect();
        let mut ontology = Self {
            diagnoses,
            by_id,
            tests,
            hash: blake3::Hasher::new()
                .update(ontology_yaml.as_bytes())
                .update(tests_yaml.as_bytes())
                .update(translations_yaml.unwrap_or_default().as_bytes())
                .finalize()
                .to_hex()
                .to_string(),
            lexicon: Lexicon::default(),
            diagnosis_index: PhraseIndex::default(),
            test_index: PhraseIndex::default(),
            words: HashSet::new(),
            links: HashSet::new(),
        };
        if let Some((id, phrase)) = ontology.index() {
            let translated = ontology
                .diagnoses
                .iter()
                .any(|diagnosis| diagnosis.id == id && diagnosis.translations.contains(&phrase));
            let (origin, text) = match translations_yaml {
                Some(text) if translated => (&translations_origin, text),
                _ => (&ontology_origin, ontology_yaml),
            };
            let line = line_of(text, &phrase, line_of_id(text, &id));
            return Err(invalid(
                origin,
                line,
                format!("`{id}`: name or synonym `{phrase}` already belongs to another entry"),
            ));
        }
        Ok(ontology)
    }

    /// Reads `ontology.yaml`, `tests.yaml` and, when the pack has one,
    /// `translations.yaml` from a pack directory.
    pub fn load(pack_dir: &Path) -> Result<Self> {
        let read = |name: &str| {
            let path = pack_dir.join(name);
            std::fs::read_to_string(&path).map_err(|source| Error::Read { path, source })
        };
        let optional = |name: &str| pack_dir.join(name).exists().then(|| read(name)).transpose();
        let translations = optional("translations.yaml")?;
        let ontology = Self::parse_with_translations(
            &read("ontology.yaml")?,
            &read("tests.yaml")?,
            translations.as_deref(),
            &pack_dir.display().to_string(),
        )?;
        let ontology = match optional(FEATURES)? {
            Some(text) => ontology.with_features(&text, &pack_dir.join(FEATURES).display().to_string())?,
            None => ontology,
        };
        match optional(LINKS)? {
            Some(text) => ontology.with_links(&text, &pack_dir.join(LINKS).display().to_string()),
            None => Ok(ontology),
        }
    }

    /// Adds the clinical links of `links.yaml` (`origin` names it in
    /// errors, with the line): every id an entry's, no entry linked to
    /// itself or to one of its broader categories, no pair twice. The file
    /// joins the ontology's hash.
    pub fn with_links(mut self, text: &str, origin: &str) -> Result<Self> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawLinks {
            version: u32,
            links: Vec<RawEntry>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawEntry {
            id: String,
            linked: Vec<RawLink>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawLink {
            id: String,
            #[allow(dead_code)]
            kind: LinkKind,
        }
        let raw: RawLinks = parse_yaml(text, origin)?;
        let invalid = |line: usize, message: String| Error::Invalid(format!("{origin}:{line}: {message}"));
        check_version(raw.version, text, origin)?;
        for entry in raw.links {
            let line = line_of_id(text, &entry.id);
            let Some(&from) = self.by_id.get(&entry.id) else {
                return Err(invalid(line, format!("unknown diagnosis id `{}`", entry.id)));
            };
            for link in entry.linked {
                let Some(&to) = self.by_id.get(&link.id) else {
                    return Err(invalid(
                        line,
                        format!("`{}`: unknown linked id `{}`", entry.id, link.id),
                    ));
                };
                let problem = if from == to {
                    Some("is linked to itself".to_string())
                } else if self.is_broader(&link.id, &entry.id) || self.is_broader(&entry.id, &link.id) {
                    Some(format!(
                        "`{}` is one of its broader categories or narrower forms",
                        link.id
                    ))
                } else if !self.links.insert((from, to)) || !self.links.insert((to, from)) {
                    Some(format!("the link to `{}` is there twice", link.id))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return Err(invalid(line, format!("`{}`: {problem}", entry.id)));
                }
            }
        }
        self.hash = crate::chained_hash(&self.hash, text);
        Ok(self)
    }

    /// Whether two entries (by id) are linked clinically (`links.yaml`),
    /// either way.
    pub fn is_linked(&self, id: &str, other: &str) -> bool {
        match (self.by_id.get(id), self.by_id.get(other)) {
            (Some(&a), Some(&b)) => self.links.contains(&(a, b)),
            _ => false,
        }
    }

    /// Adds the clinical features of `features.yaml` (`origin` names it in
    /// errors, with the line): every key an entry's id, once; every phrase
    /// lower case, not empty, at most four words, once in its entry. The
    /// file joins the ontology's hash.
    pub fn with_features(mut self, text: &str, origin: &str) -> Result<Self> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct RawFeatures {
            version: u32,
            features: BTreeMap<String, Vec<String>>,
        }
        let raw: RawFeatures = parse_yaml(text, origin)?;
        let invalid = |line: usize, message: String| Error::Invalid(format!("{origin}:{line}: {message}"));
        check_version(raw.version, text, origin)?;
        // A key's line: the first line that opens with it.
        let line_of_key = |id: &str| {
            text.lines()
                .position(|line| {
                    line.trim_start()
                        .strip_prefix(id)
                        .is_some_and(|rest| rest.trim_start().starts_with(':'))
                })
                .map_or(0, |index| index + 1)
        };
        for (id, phrases) in raw.features {
            let line = line_of_key(&id);
            let Some(&index) = self.by_id.get(&id) else {
                return Err(invalid(line, format!("unknown diagnosis id `{id}`")));
            };
            let mut seen = BTreeSet::new();
            for phrase in phrases {
                let words = phrase.split_whitespace().count();
                let problem = if words == 0 {
                    Some("an empty phrase".to_string())
                } else if words > 4 {
                    Some(format!("`{phrase}` has more than four words"))
                } else if phrase.to_lowercase() != phrase {
                    Some(format!("`{phrase}` is not lower case"))
                } else if !seen.insert(phrase.clone()) {
                    Some(format!("`{phrase}` is there twice"))
                } else {
                    None
                };
                if let Some(problem) = problem {
                    return Err(invalid(line, format!("`{id}`: {problem}")));
                }
                self.diagnoses[index].features.push(phrase);
            }
        }
        self.hash = crate::chained_hash(&self.hash, text);
        Ok(self)
    }

    /// (Re)builds the phrase indexes; the first clash as (id, phrase).
    fn index(&mut self) -> Option<(String, String)> {
        let mut clash = None;
        self.diagnosis_index = PhraseIndex::default();
        self.words.clear();
        for (entry, diagnosis) in self.diagnoses.iter().enumerate() {
            let names = std::iter::once(&diagnosis.name)
                .chain(&diagnosis.synonyms)
                .chain(&diagnosis.translations);
            for phrase in names {
                self.words.extend(words(phrase, &self.lexicon));
                if self
                    .diagnosis_index
                    .insert(phrase, entry, &self.lexicon)
                    .is_some()
                    && clash.is_none()
                {
                    clash = Some((diagnosis.id.clone(), phrase.clone()));
                }
            }
        }
        self.test_index = PhraseIndex::default();
        for (entry, test) in self.tests.iter().enumerate() {
            for phrase in std::iter::once(&test.name).chain(&test.synonyms) {
                self.test_index.insert(phrase, entry, &self.lexicon);
            }
        }
        clash
    }

    /// Installs the reader's spelling rules and stop words.
    pub(crate) fn set_lexicon(&mut self, lexicon: Lexicon) {
        self.lexicon = lexicon;
        self.index();
    }

    pub(crate) fn lexicon(&self) -> &Lexicon {
        &self.lexicon
    }

    /// Whether a word (canonical, as [`words`] gives it) is a word of some
    /// diagnosis's name: such a word is never read as another's misspelling.
    pub(crate) fn knows_word(&self, word: &str) -> bool {
        self.words.contains(word)
    }

    /// BLAKE3 hex of the two files' bytes.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// Every diagnosis, in file order.
    pub fn diagnoses(&self) -> &[Diagnosis] {
        &self.diagnoses
    }

    /// The diagnosis with this id.
    pub fn diagnosis(&self, id: &str) -> Option<&Diagnosis> {
        self.by_id.get(id).map(|&index| &self.diagnoses[index])
    }

    pub(crate) fn entry(&self, index: usize) -> &Diagnosis {
        &self.diagnoses[index]
    }

    /// The entry a reference diagnosis names: an exact name or synonym match,
    /// else the entry whose name or synonym is the longest one wholly
    /// contained in the string.
    pub fn resolve(&self, name: &str) -> Option<&Diagnosis> {
        let key = words(name, &self.lexicon);
        if let Some(phrases) = self.diagnosis_index.phrases.get(&key)
            && let Some(phrase) = phrases.first()
        {
            return Some(&self.diagnoses[phrase.entry]);
        }
        let folded = Folded::new(name);
        let tokens = tokens(name, &folded, &self.lexicon);
        self.diagnosis_index
            .scan(&tokens)
            .into_iter()
            .max_by(|left, right| left.2.cmp(&right.2).then(right.1.cmp(&left.1)))
            .map(|(entry, _, _)| &self.diagnoses[entry])
    }

    /// Every diagnosis named in a text, leftmost-longest, with folded offsets.
    pub(crate) fn find(&self, tokens: &[Token]) -> Vec<Found> {
        self.diagnosis_index
            .scan(tokens)
            .into_iter()
            .map(|(entry, first, count)| Found {
                entry,
                start: tokens[first].start,
                end: tokens[first + count - 1].end,
            })
            .collect()
    }

    /// The test names (`tests.yaml` names) a text mentions.
    pub(crate) fn tests_in(&self, text: &str) -> Vec<String> {
        let folded = Folded::new(text);
        let tokens = tokens(text, &folded, &self.lexicon);
        let mut names: Vec<String> = Vec::new();
        for (entry, _, _) in self.test_index.scan(&tokens) {
            let name = &self.tests[entry].name;
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// The names of the `tests.yaml` entries a text mentions, each with its
    /// synonyms: `(name, synonyms)`.
    pub fn tests_named(&self, text: &str) -> Vec<(String, Vec<String>)> {
        let folded = Folded::new(text);
        let tokens = tokens(text, &folded, &self.lexicon);
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for (entry, _, _) in self.test_index.scan(&tokens) {
            let test = &self.tests[entry];
            if !out.iter().any(|(name, _)| *name == test.name) {
                out.push((test.name.clone(), test.synonyms.clone()));
            }
        }
        out
    }

    /// Whether `ancestor_id` is a broader category of `id`, transitively.
    pub fn is_broader(&self, ancestor_id: &str, id: &str) -> bool {
        let mut seen = HashSet::new();
        let mut stack = vec![id];
        while let Some(current) = stack.pop() {
            if !seen.insert(current) {
                continue;
            }
            if let Some(diagnosis) = self.diagnosis(current) {
                for broader in &diagnosis.broader {
                    if broader == ancestor_id {
                        return true;
                    }
                    stack.push(broader);
                }
            }
        }
        false
    }

    /// How many of a phrase's content words `text` holds, of how many
    /// (words canonical, stop words left out).
    pub fn content_overlap(&self, phrase: &str, text: &str) -> (usize, usize) {
        let wanted = content_words(phrase, &self.lexicon);
        let present: HashSet<String> = content_words(text, &self.lexicon).into_iter().collect();
        let shared = wanted.iter().filter(|word| present.contains(*word)).count();
        (shared, wanted.len())
    }

    /// Whether `text` names the test `test_name`: through `tests.yaml`
    /// synonyms when the name is a known test, else when the text holds at
    /// least three fifths of the name's content words.
    pub fn test_matches(&self, test_name: &str, text: &str) -> bool {
        let folded = Folded::new(test_name);
        let name_tokens = tokens(test_name, &folded, &self.lexicon);
        let known: HashSet<usize> = self
            .test_index
            .scan(&name_tokens)
            .into_iter()
            .map(|(entry, _, _)| entry)
            .collect();
        if !known.is_empty() {
            let folded = Folded::new(text);
            let text_tokens = tokens(text, &folded, &self.lexicon);
            if self
                .test_index
                .scan(&text_tokens)
                .iter()
                .any(|(entry, _, _)| known.contains(entry))
            {
                return true;
            }
        }
        let wanted = content_words(test_name, &self.lexicon);
        if wanted.is_empty() {
            return false;
        }
        let present: HashSet<String> = content_words(text, &self.lexicon).into_iter().collect();
        let shared = wanted.iter().filter(|word| present.contains(*word)).count();
        shared * 5 >= wanted.len() * 3
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const ONTOLOGY: &str = "version: 1
diagnoses:
  - id: neuromuscular_junction_disorder
    name: Neuromuscular junction disorder
  - id: myasthenia_gravis
    name: Myasthenia gravis
    synonyms: [MG, myasthenia, Erb-Goldflam disease]
    broader: [neuromuscular_junction_disorder]
    confirming: [acetylcholine receptor]
  - id: ocular_myasthenia
    name: Ocular myasthenia gravis
    synonyms: [ocular myasthenia]
    broader: [myasthenia_gravis]
  - id: myasthenic_crisis
    name: Myasthenic crisis
    broader: [myasthenia_gravis]
  - id: lambert_eaton
    name: Lambert-Eaton myasthenic syndrome
    synonyms: [LEMS, Lambert-Eaton syndrome]
    broader: [neuromuscular_junction_disorder]
  - id: botulism
    name: Botulism
  - id: pneumonia
    name: Pneumonia
  - id: ovarian_torsion
    name: Ovarian torsion
    sex: female
  - id: acute_lymphoblastic_leukemia
    name: Acute lymphoblastic leukemia
    synonyms: [ALL]
  - id: crohn_disease
    name: Crohn disease
    synonyms: [Crohn's disease]
  - id: stroke
    name: Stroke
    synonyms: [CVA]
";

    pub(crate) const TESTS: &str = "version: 1
tests:
  - id: cbc
    name: Complete blood count
    synonyms: [CBC, FBC, full blood count]
  - id: ecg
    name: Electrocardiogram
    synonyms: [ECG, EKG]
  - id: achr
    name: Acetylcholine receptor antibodies
    synonyms: [AChR antibodies, anti-AChR]
";

    pub(crate) fn ontology() -> Ontology {
        match Ontology::parse(ONTOLOGY, TESTS, "test") {
            Ok(ontology) => ontology,
            Err(error) => panic!("test ontology: {error}"),
        }
    }

    #[test]
    fn links_name_known_entries_once_and_never_a_broader_one() {
        let error = |links: &str| match ontology().with_links(links, "links.yaml") {
            Ok(_) => String::from("no error"),
            Err(error) => error.to_string(),
        };
        let head = "version: 1\nlinks:\n  - id: myasthenia_gravis\n    linked:\n";
        assert_eq!(
            error(&format!("{head}      - {{id: botulism, kind: cause}}\n")),
            "no error"
        );
        assert!(
            error(&format!("{head}      - {{id: nope, kind: cause}}\n")).contains("unknown linked id `nope`")
        );
        assert!(error(&format!("{head}      - {{id: myasthenia_gravis, kind: grade}}\n")).contains("itself"));
        assert!(
            error(&format!(
                "{head}      - {{id: neuromuscular_junction_disorder, kind: grade}}\n"
            ))
            .contains("broader")
        );
        assert!(
            error(&format!(
                "{head}      - {{id: botulism, kind: cause}}\n  - id: botulism\n    linked:\n      - {{id: myasthenia_gravis, kind: cause}}\n"
            ))
            .contains("twice")
        );
        assert!(error(&format!("{head}      - {{id: botulism, kind: sibling}}\n")).contains("links.yaml:"));
        let hash = ontology().hash().to_string();
        let linked = ontology()
            .with_links(
                &format!("{head}      - {{id: botulism, kind: cause}}\n"),
                "links.yaml",
            )
            .unwrap_or_else(|error| panic!("{error}"));
        assert_ne!(linked.hash(), hash);
        assert!(linked.is_linked("botulism", "myasthenia_gravis"));
    }

    fn error_of(ontology: &str) -> String {
        match Ontology::parse(ontology, TESTS, "pack") {
            Ok(_) => String::from("no error"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn features_join_their_entry_and_are_checked_with_their_line() {
        let with = |features: &str| {
            super::tests::ontology()
                .with_features(features, "pack/features.yaml")
                .map_err(|error| error.to_string())
        };
        let ontology = with("version: 1\nfeatures:\n  myasthenia_gravis: [ptosis, worse by evening]\n")
            .unwrap_or_else(|error| panic!("{error}"));
        let entry = ontology
            .resolve("myasthenia gravis")
            .map(|found| found.features.clone());
        assert_eq!(
            entry,
            Some(vec!["ptosis".to_string(), "worse by evening".to_string()])
        );
        assert_ne!(
            ontology.hash(),
            super::tests::ontology().hash(),
            "the features join the hash"
        );
        let error = |features: &str| with(features).err().unwrap_or_else(|| "no error".into());
        assert_eq!(
            error("version: 1\nfeatures:\n  myasthenia_gravis: [ptosis]\n  nope: [x]\n"),
            "pack/features.yaml:4: unknown diagnosis id `nope`"
        );
        assert_eq!(
            error("version: 1\nfeatures:\n  myasthenia_gravis: [Ptosis]\n"),
            "pack/features.yaml:3: `myasthenia_gravis`: `Ptosis` is not lower case"
        );
        assert_eq!(
            error("version: 1\nfeatures:\n  myasthenia_gravis: [ptosis, ptosis]\n"),
            "pack/features.yaml:3: `myasthenia_gravis`: `ptosis` is there twice"
        );
        assert_eq!(
            error("version: 1\nfeatures:\n  myasthenia_gravis: [weak when chewing a big meal]\n"),
            "pack/features.yaml:3: `myasthenia_gravis`: `weak when chewing a big meal` has more than four words"
        );
        assert!(error("version: 2\nfeatures: {}\n").starts_with("pack/features.yaml:1: unsupported version"));
    }

    #[test]
    fn translations_name_their_entry_and_are_checked_with_their_line() {
        let parse = |translations: &str| {
            Ontology::parse_with_translations(ONTOLOGY, TESTS, Some(translations), "pack")
        };
        let ontology = match parse(
            "version: 1\nlanguages: [es, de]\ndiagnoses:\n  - id: myasthenia_gravis\n    es: [miastenia grave]\n    de: [Myasthenia gravis pseudoparalytica]\n",
        ) {
            Ok(ontology) => ontology,
            Err(error) => panic!("{error}"),
        };
        let id = |name: &str| ontology.resolve(name).map(|found| found.id.clone());
        assert_eq!(id("Miastenia grave").as_deref(), Some("myasthenia_gravis"));
        assert_eq!(
            id("myasthenia gravis pseudoparalytica").as_deref(),
            Some("myasthenia_gravis")
        );
        // The names join the ontology's hash.
        assert_ne!(ontology.hash(), super::tests::ontology().hash());
        let error = |translations: &str| match parse(translations) {
            Ok(_) => String::from("no error"),
            Err(error) => error.to_string(),
        };
        assert_eq!(
            error(
                "version: 1\nlanguages: [es]\ndiagnoses:\n  - id: myasthenia_gravis\n    es: [miastenia]\n  - id: nope\n    es: [nada]\n"
            ),
            "pack/translations.yaml:6: unknown diagnosis id `nope`"
        );
        assert_eq!(
            error("version: 1\nlanguages: [es]\ndiagnoses:\n  - id: botulism\n    fr: [botulisme]\n"),
            "pack/translations.yaml:5: `botulism`: language `fr` is not one of `languages` (es)"
        );
        // A name another entry already has is refused where it is written.
        assert_eq!(
            error("version: 1\nlanguages: [es]\ndiagnoses:\n  - id: botulism\n    es: [botulismo, LEMS]\n"),
            "pack/translations.yaml:5: `botulism`: name or synonym `LEMS` already belongs to another entry"
        );
    }

    #[test]
    fn resolves_names_synonyms_and_contained_names() {
        let ontology = ontology();
        let id = |name: &str| ontology.resolve(name).map(|found| found.id.clone());
        assert_eq!(id("myasthenia gravis").as_deref(), Some("myasthenia_gravis"));
        assert_eq!(id("MG").as_deref(), Some("myasthenia_gravis"));
        assert_eq!(id("Crohn's disease").as_deref(), Some("crohn_disease"));
        assert_eq!(
            id("Acute myasthenic crisis due to MG").as_deref(),
            Some("myasthenic_crisis")
        );
        assert_eq!(id("Kawasaki disease"), None);
    }

    #[test]
    fn capital_synonyms_match_only_capitals() {
        let ontology = ontology();
        let text = "give all of pyridostigmine 60 mg; ALL is possible";
        let folded = Folded::new(text);
        let found = ontology.find(&tokens(text, &folded, ontology.lexicon()));
        assert_eq!(found.len(), 1);
        assert_eq!(ontology.entry(found[0].entry).id, "acute_lymphoblastic_leukemia");
    }

    #[test]
    fn broader_is_transitive() {
        let ontology = ontology();
        assert!(ontology.is_broader("myasthenia_gravis", "myasthenic_crisis"));
        assert!(ontology.is_broader("neuromuscular_junction_disorder", "myasthenic_crisis"));
        assert!(!ontology.is_broader("myasthenic_crisis", "myasthenia_gravis"));
        assert!(!ontology.is_broader("botulism", "botulism"));
    }

    #[test]
    fn tests_match_through_synonyms_and_word_overlap() {
        let ontology = ontology();
        assert!(ontology.test_matches("ECG", "obtain a 12-lead EKG now"));
        assert!(ontology.test_matches("complete blood count", "send a CBC"));
        assert!(!ontology.test_matches("ECG", "send a CBC"));
        assert!(ontology.test_matches("serum ferritin", "check ferritin levels and serum iron"));
        assert!(!ontology.test_matches("serum ferritin", "check serum sodium"));
    }

    #[test]
    fn a_synonym_written_in_mixed_case_relaxes_capitals() {
        let ontology = Ontology::parse(
            "version: 1\ndiagnoses: []\n",
            "version: 1\ntests:\n  - id: abg\n    name: Arterial blood gas\n    synonyms: [ABG, ABGs]\n  - id: mg\n    name: Magnesium\n    synonyms: [MG]\n",
            "test",
        )
        .unwrap();
        assert!(ontology.test_matches("Arterial blood gas", "ABGs"));
        assert!(ontology.test_matches("Arterial blood gas", "ABG"));
        // A synonym written only in capitals still needs them.
        assert!(!ontology.test_matches("Magnesium", "60 mg"));
    }

    #[test]
    fn unknown_broader_is_an_error_with_its_line() {
        let text = "version: 1\ndiagnoses:\n  - id: a\n    name: A\n    broader: [missing]\n";
        assert_eq!(
            error_of(text),
            "pack/ontology.yaml:5: `a` names unknown broader id `missing`"
        );
    }

    #[test]
    fn duplicate_id_is_an_error() {
        let text = "version: 1\ndiagnoses:\n  - id: a\n    name: A\n  - id: a\n    name: B\n";
        assert_eq!(error_of(text), "pack/ontology.yaml:5: duplicate id `a`");
    }

    #[test]
    fn shared_synonym_is_an_error() {
        let text = "version: 1\ndiagnoses:\n  - id: a\n    name: Alpha\n    synonyms: [AB]\n  - id: b\n    name: Beta\n    synonyms: [AB]\n";
        assert!(
            error_of(text).starts_with("pack/ontology.yaml:8: `b`"),
            "{}",
            error_of(text)
        );
    }

    #[test]
    fn empty_name_and_unknown_fields_are_errors() {
        let empty = "version: 1\ndiagnoses:\n  - id: a\n    name: ' '\n";
        assert_eq!(error_of(empty), "pack/ontology.yaml:3: `a` has an empty name");
        let unknown = "version: 1\ndiagnoses:\n  - id: a\n    name: A\n    colour: red\n";
        assert!(
            error_of(unknown).starts_with("pack/ontology.yaml:5: "),
            "{}",
            error_of(unknown)
        );
    }

    #[test]
    fn hash_covers_both_files() {
        let first = ontology();
        let other =
            Ontology::parse(ONTOLOGY, "version: 1\ntests: []\n", "test").map(|o| o.hash().to_string());
        assert_eq!(first.hash().len(), 64);
        assert_ne!(other.ok().as_deref(), Some(first.hash()));
    }
}
