//! Grading an answer against the case's reference diagnosis, and the pair
//! verdicts of the diagnosis interventions.
//!
//! Grades (the gold set's definitions):
//! - `exact`: the leading diagnosis is the reference under any name, or a
//!   more specific form of it (the ontology's `broader` chain; for a
//!   reference the ontology does not know, a leading phrase that holds all
//!   its content words, or its abbreviation);
//! - `related`: the leading diagnosis is a broader category holding the
//!   reference, or the reference is offered elsewhere and never ruled out;
//! - `wrong`: another leading diagnosis, the reference not offered;
//! - `none`: no diagnosis committed and the reference not offered.

use std::collections::HashSet;

use crate::answer::{Mention, Reader, Reading};
use crate::ontology::Diagnosis;
use crate::text::{Folded, Lexicon, content_words, tokens, words};

mod pair;

pub use pair::{Expectation, PairLabel, PairVerdict, judge_pair};

/// How an answer's diagnosis compares with the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grade {
    Exact,
    Related,
    Wrong,
    None,
}

impl Grade {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exact => "exact",
            Self::Related => "related",
            Self::Wrong => "wrong",
            Self::None => "none",
        }
    }

    pub fn score(self) -> f64 {
        match self {
            Self::Exact => 1.0,
            Self::Related => 0.5,
            Self::Wrong | Self::None => 0.0,
        }
    }
}

/// A reference diagnosis ready for comparison.
pub(crate) struct Reference<'a> {
    text: &'a str,
    entry: Option<&'a Diagnosis>,
    /// The content words of each of its names.
    forms: Vec<Vec<String>>,
    /// Abbreviations its names form (`chronic obstructive pulmonary disease`: `copd`).
    abbreviations: HashSet<String>,
    /// For a reference resolved to an entry that names only part of it
    /// (`Trochanteric bursitis` to `Bursitis`), the content words the entry
    /// leaves out (`trochanteric`), qualifiers aside; empty when the entry
    /// names it all. A mention of the entry names the reference only when it
    /// also holds these words.
    uncovered: Vec<String>,
}

/// The reference's content words the entry's best-fitting name leaves out,
/// past qualifiers (`acute`, `left`, stages) and numbers.
fn uncovered_words(text: &str, entry: &Diagnosis, lexicon: &Lexicon) -> Vec<String> {
    let wanted: Vec<String> = content_words(text, lexicon)
        .into_iter()
        .filter(|word| !lexicon.is_qualifier(word) && !word.chars().all(|c| c.is_ascii_digit()))
        .collect();
    std::iter::once(&entry.name)
        .chain(&entry.synonyms)
        .map(|name| {
            let covered: HashSet<String> = words(name, lexicon).into_iter().collect();
            wanted
                .iter()
                .filter(|word| !covered.contains(*word))
                .cloned()
                .collect::<Vec<String>>()
        })
        .min_by_key(Vec::len)
        .unwrap_or_default()
}

/// The initials of a name's words, with and without short stop words.
fn initials(name: &str, lexicon: &Lexicon) -> Vec<String> {
    let all = words(name, lexicon);
    if all.len() < 2 {
        return Vec::new();
    }
    let initial = |words: &mut dyn Iterator<Item = &String>| -> String {
        words.filter_map(|word| word.chars().next()).collect()
    };
    let full = initial(&mut all.iter());
    let short = initial(
        &mut all
            .iter()
            .filter(|word| lexicon.is_content(word) || word.len() > 4),
    );
    vec![full, short]
}

/// The words of a phrase written in capitals, lower-cased.
fn capital_words(phrase: &str, lexicon: &Lexicon) -> Vec<String> {
    let folded = Folded::new(phrase);
    tokens(phrase, &folded, lexicon)
        .into_iter()
        .filter(|token| token.capitals)
        .map(|token| folded.text[token.start..token.end].to_string())
        .collect()
}

impl<'a> Reference<'a> {
    pub(crate) fn new(reader: &'a Reader, text: &'a str) -> Self {
        let ontology = reader.ontology();
        let lexicon = ontology.lexicon();
        let entry = ontology.resolve(text);
        let mut names: Vec<&str> = vec![text];
        // `Progressive multifocal leukoencephalopathy (PML)`: the name and
        // its bracketed abbreviation are each a form.
        if let Some((outside, inside)) = text.split_once('(') {
            names = vec![outside.trim(), inside.trim_end().trim_end_matches(')')];
        }
        let uncovered = entry.map_or_else(Vec::new, |entry| {
            names
                .iter()
                .map(|name| uncovered_words(name, entry, lexicon))
                .min_by_key(Vec::len)
                .unwrap_or_default()
        });
        if let Some(entry) = entry
            && uncovered.is_empty()
        {
            names.push(&entry.name);
            names.extend(entry.synonyms.iter().map(String::as_str));
            names.extend(entry.translations.iter().map(String::as_str));
        }
        // Qualifiers (`acute`, `left`) do not make another disease.
        let forms = names
            .iter()
            .map(|name| {
                let all = content_words(name, lexicon);
                let kept: Vec<String> = all
                    .iter()
                    .filter(|word| !lexicon.is_qualifier(word))
                    .cloned()
                    .collect();
                if kept.is_empty() { all } else { kept }
            })
            .filter(|form| !form.is_empty())
            .collect();
        let abbreviations = names.iter().flat_map(|name| initials(name, lexicon)).collect();
        Self {
            text,
            entry,
            forms,
            abbreviations,
            uncovered,
        }
    }

    /// Whether a mention holds the words its entry leaves out of the reference.
    fn holds_uncovered(&self, reader: &Reader, mention: &Mention) -> bool {
        let present: HashSet<String> = content_words(&mention.text, reader.ontology().lexicon())
            .into_iter()
            .collect();
        self.uncovered.iter().all(|word| present.contains(word))
    }

    /// Whether a mention names the reference or a more specific form of it.
    pub(crate) fn is_exact(&self, reader: &Reader, mention: &Mention) -> bool {
        let ontology = reader.ontology();
        if let (Some(entry), Some(id)) = (self.entry, &mention.id) {
            if *id == entry.id || ontology.is_broader(&entry.id, id) {
                return self.holds_uncovered(reader, mention);
            }
            // A phrase read as a broader entry that still spells out one of
            // the reference's names (`spontaneous transmural oesophageal
            // rupture` under `oesophageal perforation`) names the reference.
            if !ontology.is_broader(id, &entry.id) {
                return false;
            }
            return self.spells_out(reader, &[mention.text.as_str()]);
        }
        let mut phrases = vec![mention.text.as_str()];
        if let Some(found) = mention.id.as_deref().and_then(|id| ontology.diagnosis(id)) {
            phrases.push(&found.name);
            phrases.extend(found.synonyms.iter().map(String::as_str));
        }
        self.spells_out(reader, &phrases)
    }

    /// Whether a phrase holds all the content words of one of the
    /// reference's names, or its abbreviation, or expands it.
    fn spells_out(&self, reader: &Reader, phrases: &[&str]) -> bool {
        let lexicon = reader.ontology().lexicon();
        phrases.iter().any(|phrase| {
            let present: HashSet<String> = content_words(phrase, lexicon).into_iter().collect();
            // A word of the form is there as written, or misspelt: one
            // letter off or two swapped, in a word of six letters or more
            // that names no diagnosis itself (so `arthritis` is never a
            // misspelt `arteritis`).
            let misspelt = |wanted: &str| {
                wanted.chars().count() >= 6
                    && present.iter().any(|word| {
                        word.chars().count() >= 6
                            && !reader.ontology().knows_word(word)
                            && crate::text::one_edit_apart(word, wanted)
                    })
            };
            let holds_form = self
                .forms
                .iter()
                .any(|form| form.iter().all(|word| present.contains(word) || misspelt(word)));
            let abbreviated = capital_words(phrase, lexicon)
                .iter()
                .any(|word| self.abbreviations.contains(word));
            let expands = capital_words(self.text, lexicon)
                .iter()
                .any(|word| initials(phrase, lexicon).contains(word));
            holds_form || abbreviated || expands
        })
    }

    /// Whether a mention is a broader category holding the reference.
    pub(crate) fn is_broader(&self, reader: &Reader, mention: &Mention) -> bool {
        let ontology = reader.ontology();
        if let (Some(entry), Some(id)) = (self.entry, &mention.id) {
            let names_less = *id == entry.id && !self.holds_uncovered(reader, mention);
            return names_less || ontology.is_broader(id, &entry.id);
        }
        let lexicon = ontology.lexicon();
        let present: HashSet<String> = content_words(&mention.text, lexicon)
            .into_iter()
            .filter(|word| !lexicon.is_qualifier(word))
            .collect();
        !present.is_empty()
            && self.forms.iter().any(|form| {
                present.len() < form.len()
                    && present.iter().all(|word| form.contains(word))
                    && form.last().is_some_and(|head| present.contains(head))
            })
    }

    /// Whether the reading offers the reference outside its leader and never
    /// rules it out.
    pub(crate) fn is_offered(&self, reader: &Reader, reading: &Reading) -> bool {
        reading
            .differential
            .iter()
            .any(|mention| self.is_exact(reader, mention))
            && !self.is_ruled_out(reader, reading)
    }

    /// Whether the reading rules the reference out.
    pub(crate) fn is_ruled_out(&self, reader: &Reader, reading: &Reading) -> bool {
        reading.ruled_out.iter().any(|mention| {
            self.is_exact(reader, mention) || self.is_short_form_after(reader, reading, mention)
        })
    }

    /// Whether a ruled-out mention refers back to the reference by a short
    /// form of its name (`… pes anserine bursitis. … I don't think bursitis
    /// fits`, `serum sickness-like reaction … I'll discard the serum
    /// sickness idea`): its words are all words of the reference's name,
    /// and the answer named the reference itself before it.
    fn is_short_form_after(&self, reader: &Reader, reading: &Reading, mention: &Mention) -> bool {
        let lexicon = reader.ontology().lexicon();
        let own: Vec<String> = content_words(&mention.text, lexicon)
            .into_iter()
            .filter(|word| !lexicon.is_qualifier(word))
            .collect();
        let short_form = !own.is_empty()
            && self
                .forms
                .iter()
                .any(|form| own.len() < form.len() && own.iter().all(|word| form.contains(word)));
        short_form
            && reading
                .leading
                .iter()
                .chain(&reading.differential)
                .any(|named| named.start < mention.start && self.is_exact(reader, named))
    }
}

/// Grades a read answer against the reference diagnosis, with a rationale.
pub fn grade(reader: &Reader, answer: &Reading, reference: &str) -> (Grade, String) {
    let reference = Reference::new(reader, reference);
    let named = |mention: &Mention| format!("'{}' ({})", mention.text, answer.source);
    if let Some(leading) = &answer.leading {
        // One of two alternatives with no choice made offers the reference.
        if answer.source == "alternatives"
            && (reference.is_exact(reader, leading) || reference.is_broader(reader, leading))
        {
            return (
                Grade::Related,
                format!("leading {} is an alternative with no choice made", named(leading)),
            );
        }
        if reference.is_exact(reader, leading) {
            return (
                Grade::Exact,
                format!("leading {} is the reference", named(leading)),
            );
        }
        if reference.is_broader(reader, leading) {
            return (
                Grade::Related,
                format!(
                    "leading {} is a broader category holding the reference",
                    named(leading)
                ),
            );
        }
        // A complication, manifestation or cause of the reference, or
        // another grade of it (the pack's `links.yaml`), is close but not it.
        if let (Some(id), Some(entry)) = (&leading.id, reference.entry)
            && reader.ontology().is_linked(id, &entry.id)
        {
            return (
                Grade::Related,
                format!("leading {} is linked to the reference", named(leading)),
            );
        }
    }
    if let Some(co_lead) = answer
        .co_leading
        .iter()
        .find(|mention| reference.is_exact(reader, mention))
    {
        return (
            Grade::Exact,
            format!("co-leading '{}' is the reference", co_lead.text),
        );
    }
    if reference.is_offered(reader, answer) {
        return (
            Grade::Related,
            "the reference is offered as a possibility".to_string(),
        );
    }
    let excluded = if reference.is_ruled_out(reader, answer) {
        "; the reference is ruled out"
    } else {
        ""
    };
    match &answer.leading {
        Some(leading) => (
            Grade::Wrong,
            format!("leading {} is not the reference{excluded}", named(leading)),
        ),
        None => {
            let why = if answer.declines {
                "the answer declines to commit"
            } else {
                "no leading diagnosis"
            };
            (Grade::None, format!("{why}{excluded}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::tests::reader;

    fn graded(answer: &str, reference: &str) -> Grade {
        let reader = reader();
        grade(&reader, &reader.read(answer), reference).0
    }

    #[test]
    fn a_co_leading_diagnosis_is_exact() {
        for (answer, expected) in [
            (
                "I'd commit to two coexisting diagnoses:\n1. Lambert-Eaton myasthenic syndrome – areflexia.\n2. Myasthenia gravis – fatigable ptosis.",
                Grade::Exact,
            ),
            // A differential list is no co-lead list.
            (
                "Differential:\n1. Lambert-Eaton myasthenic syndrome\n2. Myasthenia gravis",
                Grade::Related,
            ),
            // An item after the list's blank line is not one of its items.
            (
                "Two things going on at once:\n- Lambert-Eaton myasthenic syndrome\n- Botulism\n\nDifferential:\n- Myasthenia gravis",
                Grade::Related,
            ),
        ] {
            assert_eq!(graded(answer, "Myasthenia gravis"), expected, "{answer}");
        }
    }

    #[test]
    fn one_of_two_alternatives_is_related_and_neither_is_wrong() {
        let answer = "Myasthenia gravis or Lambert-Eaton syndrome; I can't separate them without EMG.";
        assert_eq!(graded(answer, "Myasthenia gravis"), Grade::Related);
        assert_eq!(
            graded(answer, "Lambert-Eaton myasthenic syndrome"),
            Grade::Related
        );
        assert_eq!(graded(answer, "Botulism"), Grade::Wrong);
    }

    #[test]
    fn a_diagnosis_linked_to_the_reference_is_related() {
        use crate::ontology::tests::{ONTOLOGY, TESTS};
        let ontology = crate::ontology::Ontology::parse(ONTOLOGY, TESTS, "pack")
            .and_then(|ontology| {
                ontology.with_links(
                    "version: 1\nlinks:\n  - id: myasthenia_gravis\n    linked:\n      - {id: pneumonia, kind: complication}\n",
                    "links.yaml",
                )
            })
            .unwrap_or_else(|error| panic!("{error}"));
        let reader = crate::answer::tests::reader_with(ontology);
        let graded = |answer: &str, reference: &str| grade(&reader, &reader.read(answer), reference).0;
        // Aspiration pneumonia complicating myasthenia gravis (either way).
        assert_eq!(
            graded("Most likely diagnosis: pneumonia.", "Myasthenia gravis"),
            Grade::Related
        );
        assert_eq!(
            graded("Most likely diagnosis: myasthenia gravis.", "Pneumonia"),
            Grade::Related
        );
        // An unlinked sibling stays wrong.
        assert_eq!(
            graded("Most likely diagnosis: botulism.", "Myasthenia gravis"),
            Grade::Wrong
        );
    }

    #[test]
    fn grade_strings_and_scores() {
        assert_eq!(Grade::Related.as_str(), "related");
        assert_eq!(Grade::Exact.score(), 1.0);
        assert_eq!(Grade::None.score(), 0.0);
    }

    #[test]
    fn a_short_form_ruled_out_after_the_full_name_rules_the_reference_out() {
        let answer = "At first ocular myasthenia came to mind. But the weakness is generalised, so I don't think myasthenia fits. Final answer: LEMS.";
        assert_eq!(graded(answer, "Ocular myasthenia"), Grade::Wrong);
        // Without the full name before it, a short form rules nothing out.
        let alone = "I don't think myasthenia fits. Final answer: LEMS. Differential: ocular myasthenia.";
        assert_eq!(graded(alone, "Ocular myasthenia"), Grade::Related);
    }

    #[test]
    fn a_misspelt_or_inflected_name_is_the_reference() {
        use crate::ontology::tests::{ONTOLOGY, TESTS};
        let ontology = crate::ontology::Ontology::parse_with_translations(
            ONTOLOGY,
            TESTS,
            Some("version: 1\nlanguages: [de]\ndiagnoses:\n  - id: myasthenia_gravis\n    de: [belastungsabhängige Muskelschwäche]\n"),
            "pack",
        )
        .unwrap_or_else(|error| panic!("{error}"));
        let reader = crate::answer::tests::reader_with(ontology);
        let graded = |answer: &str, reference: &str| grade(&reader, &reader.read(answer), reference).0;
        // One letter off or two swapped, in a long word that is no other
        // diagnosis's word.
        assert_eq!(
            graded("Most likely: myasthenia graivs", "Myasthenia gravis"),
            Grade::Exact
        );
        assert_eq!(
            graded("Diagnosis: myasthnia gravis", "Myasthenia gravis"),
            Grade::Exact
        );
        // A German name with a case ending is its translation.
        assert_eq!(
            graded(
                "Diagnose: Verdacht auf eine belastungsabhängigen Muskelschwäche",
                "Myasthenia gravis"
            ),
            Grade::Exact
        );
        // Short words are not read fuzzily, nor two edits.
        assert_eq!(
            graded("Most likely: botulisn", "Botulism"),
            Grade::Exact,
            "seven letters, one edit"
        );
        assert_ne!(graded("Most likely: butolisn", "Botulism"), Grade::Exact);
    }

    #[test]
    fn exact_under_a_synonym_or_a_more_specific_form() {
        assert_eq!(
            graded("Most likely diagnosis: MG", "Myasthenia gravis"),
            Grade::Exact
        );
        assert_eq!(
            graded("Diagnosis: ocular myasthenia", "Myasthenia gravis"),
            Grade::Exact
        );
    }

    #[test]
    fn exact_for_an_unknown_reference_by_content_words() {
        assert_eq!(
            graded(
                "Most likely: community-acquired pneumococcal pneumonias",
                "Pneumococcal pneumonia"
            ),
            Grade::Exact
        );
        assert_eq!(
            graded("Diagnosis: Kawasaki disease", "Kawasaki disease"),
            Grade::Exact
        );
    }

    #[test]
    fn exact_for_an_unknown_reference_by_abbreviation() {
        assert_eq!(
            graded("Diagnosis: AKI, secondary to NSAIDs", "Acute kidney injury"),
            Grade::Exact
        );
        assert_eq!(graded("Diagnosis: acute kidney injury", "AKI"), Grade::Exact);
    }

    #[test]
    fn a_bracketed_abbreviation_is_a_form_of_the_reference() {
        assert_eq!(
            graded("NRDS (preterm)", "Neonatal respiratory distress syndrome (NRDS)"),
            Grade::Exact
        );
        assert_eq!(
            graded(
                "Diagnosis: neonatal respiratory distress",
                "Neonatal respiratory distress syndrome (NRDS)"
            ),
            Grade::Exact
        );
    }

    #[test]
    fn a_reference_an_entry_names_only_in_part_needs_the_rest() {
        // `Ocular botulism` resolves to `Botulism`, which leaves out `ocular`.
        assert_eq!(graded("Diagnosis: botulism", "Ocular botulism"), Grade::Related);
        assert_eq!(
            graded("Diagnosis: ocular botulism", "Ocular botulism"),
            Grade::Exact
        );
        // Qualifiers do not count: `Severe botulism` is botulism.
        assert_eq!(graded("Diagnosis: botulism", "Severe botulism"), Grade::Exact);
    }

    #[test]
    fn qualifiers_do_not_change_an_unknown_reference() {
        assert_eq!(
            graded("Diagnosis: Kawasaki disease", "Recurrent Kawasaki disease"),
            Grade::Exact
        );
        assert_eq!(
            graded("Diagnosis: severe vasculitis", "Kawasaki vasculitis"),
            Grade::Related
        );
    }

    #[test]
    fn related_when_broader_or_offered() {
        assert_eq!(
            graded("Diagnosis: neuromuscular junction disorder", "Myasthenia gravis"),
            Grade::Related
        );
        assert_eq!(
            graded("Most likely LEMS; cannot exclude MG.", "Myasthenia gravis"),
            Grade::Related
        );
        assert_eq!(
            graded("Diagnosis: vasculitis", "Kawasaki vasculitis"),
            Grade::Related
        );
    }

    #[test]
    fn wrong_when_the_reference_is_only_ruled_out() {
        assert_eq!(
            graded("Most likely LEMS. MG is unlikely.", "Myasthenia gravis"),
            Grade::Wrong
        );
        assert_eq!(graded("Diagnosis: botulism", "Kawasaki disease"), Grade::Wrong);
    }

    #[test]
    fn none_when_nothing_is_committed() {
        assert_eq!(
            graded(
                "I need more information before naming a diagnosis.",
                "Myasthenia gravis"
            ),
            Grade::None
        );
        assert_eq!(
            graded("Order a CBC and an ECG.", "Myasthenia gravis"),
            Grade::None
        );
    }

    #[test]
    fn history_is_not_an_offer() {
        assert_eq!(
            graded("Known Crohn disease. Diagnosis: botulism.", "Crohn disease"),
            Grade::Wrong
        );
    }

    #[test]
    fn a_reference_argued_against_is_not_offered() {
        for answer in [
            "Most likely LEMS. Myasthenia gravis is less likely because the ptosis does not fatigue.",
            "Final diagnosis: LEMS. MG is less likely given the areflexia.",
            "Primary diagnosis: LEMS. The picture goes beyond myasthenia gravis because of the autonomic signs.",
            "Diagnosis: LEMS. Myasthenia gravis does not explain the areflexia.",
            "Most likely LEMS; myasthenia gravis can be excluded clinically.",
            "Most likely LEMS. Myasthenia gravis seems less likely given the areflexia.",
            "Diagnosis: LEMS. MG is effectively excluded by the negative antibodies.",
            "Diagnosis: LEMS. MG was considered and rejected.",
        ] {
            assert_eq!(graded(answer, "Myasthenia gravis"), Grade::Wrong, "{answer}");
        }
        // A ranked list's "less likely" still offers.
        assert_eq!(
            graded("1. LEMS - most likely\n2. MG - less likely", "Myasthenia gravis"),
            Grade::Related
        );
    }

    #[test]
    fn a_test_purpose_does_not_offer_the_reference() {
        for answer in [
            "A definitive diagnosis cannot be made. Order AChR antibodies to rule out myasthenia gravis.",
            "Before making a diagnosis, send AChR antibodies to evaluate for MG.",
        ] {
            assert_eq!(graded(answer, "Myasthenia gravis"), Grade::None, "{answer}");
        }
    }

    #[test]
    fn a_refusal_listing_possibilities_commits_to_none_of_them() {
        let answer = "I cannot make a diagnosis without antibodies. Possibilities include LEMS and botulism.";
        assert_eq!(graded(answer, "Myasthenia gravis"), Grade::None);
        assert_eq!(graded(answer, "Botulism"), Grade::Related);
        assert_eq!(
            graded(
                "The answer cannot be determined, but MG should be considered.",
                "Myasthenia gravis"
            ),
            Grade::Related
        );
    }
}
