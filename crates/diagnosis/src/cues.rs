//! The answer file (`answer.yaml`): its strict raw layer and the cue
//! matcher the reader uses. What each field means is commented at the top of
//! the pack's file.
//!
//! Cues are found in the folded answer at word boundaries (a cue ending in
//! `*` matches a word prefix). The structural cues — labels, leading,
//! differential, rule-out and history cues — compete: where two overlap, the
//! longer one is kept, so `cannot rule out X` offers X and `differential
//! diagnosis:` is no `diagnosis:` label; a rule-out cue listed both forward
//! and backward keeps both. The other kinds are found on their own.

use std::collections::{BTreeMap, HashSet};

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::text::{Lexicon, is_boundary, words};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCues {
    version: u32,
    leading_labels: Vec<String>,
    final_labels: Vec<String>,
    section_labels: Vec<String>,
    leading_forward: Vec<String>,
    leading_openers: Vec<String>,
    leading_backward: Vec<String>,
    differential: Vec<String>,
    to_exclude: Vec<String>,
    differential_backward: Vec<String>,
    label_links: Vec<String>,
    narrative_starts: Vec<String>,
    conclusions: Vec<String>,
    ruled_out_forward: Vec<String>,
    ruled_out_backward: Vec<String>,
    history: Vec<String>,
    purpose: Vec<String>,
    inert: Vec<String>,
    declines: Vec<String>,
    /// Optional: a pack without them has only its `declines` phrases.
    #[serde(default)]
    decline_modals: Vec<String>,
    #[serde(default)]
    commit_verbs: Vec<String>,
    uncertainty: Vec<String>,
    order: Vec<String>,
    /// Optional: words that open a sentence of management, not diagnosis.
    #[serde(default)]
    management: Vec<String>,
    escalation: Vec<String>,
    negations: Vec<String>,
    pronouns: Vec<String>,
    hedges: Vec<String>,
    phrase_ends: Vec<String>,
    clause_breaks: Vec<String>,
    list_separators: Vec<String>,
    stop_words: Vec<String>,
    qualifiers: Vec<String>,
    vague_heads: Vec<String>,
    /// Optional: phrases that rank a list (`in order of likelihood`).
    #[serde(default)]
    rankings: Vec<String>,
    /// Optional: the tags of a reasoning trace (`think`: `<think>…</think>`).
    #[serde(default)]
    reasoning_tags: Vec<String>,
    /// Optional: the speakers of a transcript whose turns are the answer
    /// (`assistant`), and those whose turns ask (`user`).
    /// Optional: labels of a line that lists findings (`Positives:`).
    #[serde(default)]
    findings_labels: Vec<String>,
    /// Optional: leading cues of a change of mind (`I'd now go with`,
    /// `I'll revise my lead to`): they conclude wherever they stand.
    #[serde(default)]
    revisions: Vec<String>,
    #[serde(default)]
    speakers: Vec<String>,
    #[serde(default)]
    asking_speakers: Vec<String>,
    /// Optional: words that make an opening line the document's title.
    #[serde(default)]
    titles: Vec<String>,
    /// Optional: words that make what follows a condition (`if`).
    #[serde(default)]
    conditionals: Vec<String>,
    /// Optional: labels whose line lists what is ruled out.
    #[serde(default)]
    ruled_out_labels: Vec<String>,
    /// Optional: phrases that introduce a list of co-leading diagnoses.
    #[serde(default)]
    co_leads: Vec<String>,
    /// Optional: words that join two diagnoses the answer will not choose
    /// between (`or`).
    #[serde(default)]
    alternatives: Vec<String>,
    /// Optional: words that open a pair of alternatives (`either`).
    #[serde(default)]
    alternative_openers: Vec<String>,
    /// Optional: phrases that pick a numbered item (`my answer is #3`).
    #[serde(default)]
    picks: Vec<String>,

    spellings: BTreeMap<String, String>,
}

/// What a cue marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Label,
    LeadingForward,
    LeadingOpener,
    LeadingBackward,
    Differential,
    DifferentialBackward,
    RuledOutForward,
    RuledOutBackward,
    History,
    /// A test's purpose (`to rule out X`): what follows is no diagnosis.
    Purpose,
    /// A phrase that looks like a cue but is none (`may be required`): it
    /// hides the cues it overlaps and marks nothing itself.
    Inert,
    Declines,
    /// `decline_modals` and `commit_verbs`: found only to make a
    /// [`Kind::Declines`] together (`wouldn't` … `label`), then dropped.
    DeclineModal,
    CommitVerb,
    Uncertainty,
    Order,
    /// A sentence of treatment or advice (`Start oral vancomycin`,
    /// `Reassurance and watchful waiting`) when the cue opens it.
    Management,
    Escalation,
    Negation,
    Pronoun,
    PhraseEnd,
    ClauseBreak,
    ListSeparator,
}

/// One cue found in a folded text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

/// The compiled answer file.
#[derive(Debug, Clone)]
pub(crate) struct Cues {
    structural: Vec<(Kind, String)>,
    /// The structural and the independent cues compiled for one pass over a text each.
    structural_matcher: Matcher,
    independent_matcher: Matcher,
    pub hedges: Vec<String>,
    /// Words between a label and its diagnosis (`is`, `would be`).
    pub label_links: Vec<String>,
    /// Words that open a sentence that is no diagnosis (`I`, `these`).
    pub narrative_starts: Vec<String>,
    /// Words that open a concluding sentence (`therefore`, `in summary`):
    /// its leading cue outranks earlier ones.
    pub conclusions: Vec<String>,
    /// Labels that state the answer's conclusion (`final diagnosis`): they
    /// outrank every other label.
    pub final_labels: HashSet<String>,
    /// Labels that head a section of any content (`assessment`): they name
    /// the leader only when no other label does.
    pub section_labels: HashSet<String>,
    /// Nouns that name no disease at the head of a short free phrase (`a
    /// neurological condition`), as canonical words.
    pub vague_heads: HashSet<String>,
    /// Differential cues of a diagnosis still to be excluded (`rule out
    /// X`): it is offered but never leads.
    pub to_exclude: HashSet<String>,
    /// Phrases that rank an inline list, so its first item leads
    /// (`Differential (in order): X, Y`).
    pub rankings: Vec<String>,
    /// The tags of a reasoning trace, lower case (`think`).
    pub reasoning_tags: Vec<String>,
    /// Labels of a line that lists findings (`Positives:`, `Pertinent
    /// negatives:`), lower case: what it lists is no first-listed leader.
    pub findings_labels: Vec<String>,
    /// Leading cues of a change of mind, lower case: the latest one names
    /// the leader, as a concluding sentence's cue does.
    pub revisions: HashSet<String>,
    /// A transcript's answering speakers (`assistant`) and asking ones
    /// (`user`), lower case.
    pub speakers: Vec<String>,
    pub asking_speakers: Vec<String>,
    /// Words that make a line naming no known diagnosis the title of the
    /// answer (`Problem list`, `Hand clinic dictation.`), not its answer.
    pub titles: Vec<String>,
    /// Words that make a leading cue conditional when they open its
    /// sentence or stand right before it (`If the MRCP shows beading,
    /// that's PSC`, `if this is FTD`): what it names is offered, not led.
    pub conditionals: Vec<String>,
    /// Labels that open a line with a colon and rule out everything the
    /// line lists (`Less likely: X, Y`).
    pub ruled_out_labels: Vec<String>,
    /// Phrases that introduce a list whose items all lead (`two coexisting
    /// diagnoses:`): the first diagnosis of each item is a co-lead.
    pub co_leads: Vec<String>,
    /// Words that join two diagnoses in the answer's opening sentence
    /// when it chooses neither (`X or Y; I can't separate them`): the
    /// first is not a leader, both are offered.
    pub alternatives: Vec<String>,
    /// Words that open a pair of alternatives (`either X or Y`), lower case.
    pub alternative_openers: Vec<String>,
    /// Phrases followed by a numbered item's number (`my answer is #3`,
    /// `I'd go with option 2`), lower case: that item leads.
    pub picks: Vec<String>,

    pub lexicon: Lexicon,
}

impl Cues {
    /// Parses and checks the answer file; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let raw: RawCues = crate::ontology::parse_yaml(text, origin)?;
        if raw.version != 1 {
            return Err(Error::Invalid(format!(
                "{origin}:1: unsupported version {}",
                raw.version
            )));
        }
        let lines = |field: &str| {
            text.lines()
                .position(|line| line.starts_with(&format!("{field}:")))
                .map_or(0, |index| index + 1)
        };
        let mut structural = Vec::new();
        let mut independent = Vec::new();
        let groups: [(&str, Kind, &Vec<String>, bool); 27] = [
            ("leading_labels", Kind::Label, &raw.leading_labels, true),
            ("final_labels", Kind::Label, &raw.final_labels, true),
            ("section_labels", Kind::Label, &raw.section_labels, true),
            (
                "leading_forward",
                Kind::LeadingForward,
                &raw.leading_forward,
                true,
            ),
            ("revisions", Kind::LeadingForward, &raw.revisions, true),
            ("leading_openers", Kind::LeadingOpener, &raw.leading_openers, true),
            (
                "leading_backward",
                Kind::LeadingBackward,
                &raw.leading_backward,
                true,
            ),
            ("differential", Kind::Differential, &raw.differential, true),
            ("to_exclude", Kind::Differential, &raw.to_exclude, true),
            (
                "differential_backward",
                Kind::DifferentialBackward,
                &raw.differential_backward,
                true,
            ),
            (
                "ruled_out_forward",
                Kind::RuledOutForward,
                &raw.ruled_out_forward,
                true,
            ),
            (
                "ruled_out_backward",
                Kind::RuledOutBackward,
                &raw.ruled_out_backward,
                true,
            ),
            ("history", Kind::History, &raw.history, true),
            ("purpose", Kind::Purpose, &raw.purpose, true),
            ("inert", Kind::Inert, &raw.inert, true),
            ("declines", Kind::Declines, &raw.declines, false),
            ("decline_modals", Kind::DeclineModal, &raw.decline_modals, false),
            ("commit_verbs", Kind::CommitVerb, &raw.commit_verbs, false),
            ("uncertainty", Kind::Uncertainty, &raw.uncertainty, false),
            ("order", Kind::Order, &raw.order, false),
            ("management", Kind::Management, &raw.management, false),
            ("escalation", Kind::Escalation, &raw.escalation, false),
            ("negations", Kind::Negation, &raw.negations, false),
            ("pronouns", Kind::Pronoun, &raw.pronouns, false),
            ("phrase_ends", Kind::PhraseEnd, &raw.phrase_ends, false),
            ("clause_breaks", Kind::ClauseBreak, &raw.clause_breaks, false),
            (
                "list_separators",
                Kind::ListSeparator,
                &raw.list_separators,
                false,
            ),
        ];
        for (field, kind, phrases, is_structural) in groups {
            for phrase in phrases {
                let cue = phrase.trim().to_string();
                if cue.is_empty() || cue.to_lowercase() != cue {
                    return Err(Error::Invalid(format!(
                        "{origin}:{}: `{field}` cue `{phrase}` must be non-empty lowercase",
                        lines(field)
                    )));
                }
                if is_structural {
                    structural.push((kind, cue));
                } else {
                    independent.push((kind, cue));
                }
            }
        }
        let lexicon = Lexicon {
            spellings: raw.spellings.into_iter().collect(),
            stop_words: raw.stop_words.into_iter().collect(),
            qualifiers: HashSet::new(),
        };
        let qualifiers = raw
            .qualifiers
            .iter()
            .flat_map(|qualifier| words(qualifier, &lexicon))
            .collect();
        let lexicon = Lexicon {
            qualifiers,
            ..lexicon
        };
        let vague_heads = raw
            .vague_heads
            .iter()
            .flat_map(|head| words(head, &lexicon))
            .collect();
        let structural_matcher = Matcher::new(&structural)?;
        let independent_matcher = Matcher::new(&independent)?;
        Ok(Self {
            structural,
            structural_matcher,
            independent_matcher,
            vague_heads,
            to_exclude: trimmed(&raw.to_exclude),
            rankings: lowered(&raw.rankings),
            reasoning_tags: lowered(&raw.reasoning_tags),
            revisions: trimmed(&raw.revisions),
            findings_labels: lowered(&raw.findings_labels),
            speakers: lowered(&raw.speakers),
            asking_speakers: lowered(&raw.asking_speakers),
            titles: lowered(&raw.titles),
            conditionals: lowered(&raw.conditionals),
            ruled_out_labels: lowered(&raw.ruled_out_labels),
            co_leads: lowered(&raw.co_leads),
            alternatives: lowered(&raw.alternatives),
            alternative_openers: lowered(&raw.alternative_openers),
            picks: lowered(&raw.picks),
            hedges: raw.hedges,
            label_links: raw.label_links,
            narrative_starts: raw.narrative_starts,
            conclusions: raw.conclusions,
            final_labels: trimmed(&raw.final_labels),
            section_labels: trimmed(&raw.section_labels),
            lexicon,
        })
    }

    /// Whether `phrase` (lower case) is a label, leading or differential
    /// cue, as written or with its colon (`primary` for `primary:`): the
    /// name of an XML element that means what the cue means.
    pub fn is_heading_cue(&self, phrase: &str) -> bool {
        self.structural.iter().any(|(kind, cue)| {
            matches!(kind, Kind::Label | Kind::LeadingForward | Kind::Differential)
                && (cue == phrase || cue.strip_suffix(':') == Some(phrase))
        })
    }

    /// Every cue in a folded text, sorted by start: the structural ones with
    /// overlaps resolved to the longer (an inert phrase hides what it
    /// overlaps and is then dropped), the others all kept.
    pub fn find(&self, text: &str) -> Vec<Hit> {
        let mut structural = self.structural_matcher.find_all(text);
        structural.sort_by(|left, right| {
            (right.end - right.start)
                .cmp(&(left.end - left.start))
                .then(left.start.cmp(&right.start))
        });
        // A rule-out cue listed both ways excludes both ways (`X, which I
        // would exclude`; `I would exclude X`): its two hits are both kept.
        let both_ways = |hit: &Hit, other: &Hit| {
            (hit.start, hit.end) == (other.start, other.end)
                && matches!(
                    (hit.kind, other.kind),
                    (Kind::RuledOutForward, Kind::RuledOutBackward)
                        | (Kind::RuledOutBackward, Kind::RuledOutForward)
                )
        };
        let mut kept: Vec<Hit> = Vec::new();
        for hit in structural {
            if !kept
                .iter()
                .any(|other| hit.start < other.end && other.start < hit.end && !both_ways(&hit, other))
            {
                kept.push(hit);
            }
        }
        let inert: Vec<Hit> = kept
            .iter()
            .copied()
            .filter(|hit| hit.kind == Kind::Inert)
            .collect();
        kept.retain(|hit| hit.kind != Kind::Inert);
        kept.extend(self.independent_matcher.find_all(text).into_iter().filter(|hit| {
            !inert
                .iter()
                .any(|other| hit.start < other.end && other.start < hit.end)
        }));
        kept.extend(composed_declines(&kept, text));
        kept.retain(|hit| !matches!(hit.kind, Kind::DeclineModal | Kind::CommitVerb));
        kept.sort_by_key(|hit| (hit.start, hit.end));
        kept.dedup();
        kept
    }
}

/// Words a decline modal may stand from its commit verb (`I wouldn't put a
/// label on it`: two).
const DECLINE_REACH: usize = 3;

/// A decline made of a modal and a commit verb after it in the same clause,
/// at most [`DECLINE_REACH`] words apart: `can't be definitive`, `before I'd
/// call it`, `not possible for me to make a diagnosis`.
fn composed_declines(hits: &[Hit], text: &str) -> Vec<Hit> {
    let mut declines = Vec::new();
    for modal in hits.iter().filter(|hit| hit.kind == Kind::DeclineModal) {
        let verb = hits.iter().find(|hit| {
            hit.kind == Kind::CommitVerb && hit.start >= modal.end && {
                let between = &text[modal.end..hit.start];
                !between.contains(['.', ';', ':', ',', '\n', '!', '?'])
                    && between.split_whitespace().count() <= DECLINE_REACH
            }
        });
        if let Some(verb) = verb {
            declines.push(Hit {
                kind: Kind::Declines,
                start: modal.start,
                end: verb.end,
            });
        }
    }
    declines
}

/// Phrases trimmed and lower-cased.
fn lowered<C: FromIterator<String>>(phrases: &[String]) -> C {
    phrases
        .iter()
        .map(|phrase| phrase.trim().to_lowercase())
        .collect()
}

/// Phrases trimmed.
fn trimmed<C: FromIterator<String>>(phrases: &[String]) -> C {
    phrases.iter().map(|phrase| phrase.trim().to_string()).collect()
}

/// A list of cues compiled into one automaton (Aho-Corasick), so that a
/// text is scanned once for all of them rather than once per cue.
#[derive(Debug, Clone)]
struct Matcher {
    automaton: aho_corasick::AhoCorasick,
    /// Per pattern: its kind and whether it matches a word prefix (`*`).
    cues: Vec<(Kind, bool, bool, bool)>,
}

impl Matcher {
    fn new(cues: &[(Kind, String)]) -> Result<Self> {
        let stems: Vec<&str> = cues
            .iter()
            .map(|(_, cue)| cue.strip_suffix('*').unwrap_or(cue))
            .collect();
        let automaton = aho_corasick::AhoCorasick::new(&stems)
            .map_err(|error| Error::Invalid(format!("answer cues: {error}")))?;
        let cues = cues
            .iter()
            .zip(&stems)
            .map(|((kind, cue), stem)| {
                (
                    *kind,
                    cue.ends_with('*'),
                    stem.starts_with(|c: char| c.is_alphanumeric()),
                    stem.ends_with(|c: char| c.is_alphanumeric()),
                )
            })
            .collect();
        Ok(Self { automaton, cues })
    }

    /// Every occurrence of every cue at word boundaries, in cue order and
    /// then text order (the order later steps break ties by).
    fn find_all(&self, text: &str) -> Vec<Hit> {
        // Each pattern's occurrences left to right, none overlapping the one
        // before it (as a search for that cue alone finds them).
        let mut raw: Vec<(usize, usize, usize)> = self
            .automaton
            .find_overlapping_iter(text)
            .map(|matched| (matched.pattern().as_usize(), matched.start(), matched.end()))
            .collect();
        raw.sort_unstable();
        let mut found: Vec<Hit> = Vec::new();
        let mut previous: Option<(usize, usize)> = None;
        for (pattern, start, stem_end) in raw {
            if previous.is_some_and(|(other, end)| other == pattern && start < end) {
                continue;
            }
            previous = Some((pattern, stem_end));
            let (kind, prefix, opens_word, closes_word) = self.cues[pattern];
            let mut end = stem_end;
            if !is_boundary(text, start) && opens_word {
                continue;
            }
            if prefix {
                end += text[end..]
                    .find(|c: char| !c.is_alphanumeric())
                    .unwrap_or(text.len() - end);
            } else if !is_boundary(text, end) && closes_word {
                continue;
            }
            found.push(Hit { kind, start, end });
        }
        found
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The pack's answer file.
    pub(crate) const ANSWER_YAML: &str = include_str!("../../../data/packs/general-medicine/answer.yaml");

    fn cues() -> Cues {
        match Cues::parse(ANSWER_YAML, "answer.yaml") {
            Ok(cues) => cues,
            Err(error) => panic!("{error}"),
        }
    }

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        cues()
            .find(text)
            .into_iter()
            .filter(|hit| hit.kind != Kind::Negation && hit.kind != Kind::ClauseBreak)
            .map(|hit| (hit.kind, text[hit.start..hit.end].to_string()))
            .collect()
    }

    #[test]
    fn the_pack_file_parses() {
        assert!(!cues().hedges.is_empty());
    }

    #[test]
    fn the_longer_cue_wins() {
        assert_eq!(
            kinds("cannot rule out lems"),
            [(Kind::Differential, "cannot rule out".to_string())]
        );
        assert_eq!(
            kinds("differential diagnosis: mg"),
            [(Kind::Differential, "differential diagnosis".to_string())]
        );
    }

    #[test]
    fn cues_match_whole_words_and_prefixes() {
        assert!(kinds("nothing here").is_empty());
        let hits = kinds("begin resuscitation");
        assert_eq!(hits, [(Kind::Escalation, "resuscitation".to_string())]);
    }

    #[test]
    fn an_inert_phrase_hides_the_cue_it_overlaps() {
        assert!(kinds("a biopsy may be required").is_empty());
        assert_eq!(
            kinds("differential (in order): lems"),
            [(Kind::Differential, "differential".to_string())]
        );
        assert_eq!(
            kinds("lems may be the cause"),
            [(Kind::Differential, "may be".to_string())]
        );
    }

    #[test]
    fn uppercase_cues_are_rejected() {
        let text = ANSWER_YAML.replacen("  - most likely diagnosis", "  - Most Likely", 1);
        let error = Cues::parse(&text, "answer.yaml").err().map(|e| e.to_string());
        assert!(error.is_some_and(|error| error.contains("leading_labels")));
    }
}
