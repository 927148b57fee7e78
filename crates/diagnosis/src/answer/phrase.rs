//! The diagnosis phrase at a position: past hedges and markup, ended at a
//! phrase end, list separator, cue or clause punctuation, with the ontology
//! entry inside it (or the one a bracketed gloss or a following
//! specification names).

use super::{Phrase, Reader};
use crate::cues::Kind;
use crate::layout::Layout;
use crate::ontology::Found;
use crate::text::content_words;

/// Most content words a free-text diagnosis phrase may have.
const PHRASE_WORDS: usize = 8;
/// Most content words a free phrase headed by a vague noun may have and
/// still name no disease.
const VAGUE_WORDS: usize = 3;

impl Reader {
    /// The diagnosis phrase starting at `start` (folded), up to `limit`: past
    /// hedges and markup, ended at a phrase end, list separator or clause
    /// punctuation; with the first offered ontology entry inside it.
    pub(super) fn phrase_at(
        &self,
        layout: &Layout<'_>,
        start: usize,
        limit: usize,
        offered: &[Found],
    ) -> Option<Phrase> {
        let text = &layout.folded.text;
        let mut start = start;
        loop {
            let rest = &text[start..limit];
            let trimmed = rest.trim_start_matches(|c: char| {
                c.is_whitespace() || matches!(c, ':' | '*' | '_' | '#' | '-' | '"' | '`' | '>')
            });
            start += rest.len() - trimmed.len();
            // Markup tags (`<b>`, `</strong>`) are skipped like markdown.
            let tag = trimmed
                .strip_prefix('<')
                .and_then(|inner| inner.find('>'))
                .filter(|close| {
                    *close <= 8
                        && trimmed[1..=*close]
                            .trim_end_matches('>')
                            .trim_start_matches('/')
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric())
                });
            if let Some(close) = tag {
                start += close + 2;
                continue;
            }
            let hedge = self.cues.hedges.iter().find(|hedge| {
                trimmed.starts_with(hedge.as_str())
                    && trimmed[hedge.len()..].starts_with(|c: char| !c.is_alphanumeric())
            });
            match hedge {
                Some(hedge) => start += hedge.len(),
                None => break,
            }
        }
        let mut end = limit;
        let mut from = start;
        while let Some(index) = text[from..limit].find([',', ';', ':', '(', '[', '|', '>', '\n']) {
            let at = from + index;
            // A parenthesis inside a name (`Epidermoid (epidermal inclusion)
            // cyst`) is skipped when a word follows it.
            let closing = text[at..limit].find(')').map(|offset| at + offset + 1);
            let continues = closing.is_some_and(|close| {
                text[close..limit].starts_with(' ')
                    && text[close..limit]
                        .trim_start()
                        .starts_with(|c: char| c.is_alphanumeric())
            });
            match closing {
                Some(close) if text.as_bytes()[at] == b'(' && continues => from = close,
                _ => {
                    end = at;
                    break;
                }
            }
        }
        for hit in &layout.hits {
            if matches!(hit.kind, Kind::PhraseEnd | Kind::ListSeparator)
                && hit.start >= start
                && hit.start < end
            {
                end = hit.start;
            }
        }
        if let Some(index) = text[start..end].find(" - ") {
            end = start + index;
        }
        // A cue ends the phrase; a phrase that starts with one is none.
        for hit in &layout.hits {
            let stops = !matches!(
                hit.kind,
                Kind::Negation | Kind::ClauseBreak | Kind::ListSeparator | Kind::PhraseEnd | Kind::Escalation
            );
            if stops && hit.start >= start && hit.start < end {
                end = hit.start;
            }
            // Hedges taken off the front of a cue (`most likely` of `most
            // likely diagnosis is X`) leave the rest of the cue, no phrase.
            if stops && hit.start < start && hit.end > start {
                return None;
            }
        }
        // A free phrase an ordering cue ends (`Initial tests: ...`, `Further
        // workup`) heads workup, not a diagnosis.
        let ordered = layout
            .hits
            .iter()
            .any(|hit| hit.kind == Kind::Order && hit.start == end);
        let end = start
            + text[start..end]
                .trim_end_matches(|c: char| !c.is_alphanumeric() && c != ')')
                .len();
        if end <= start {
            return None;
        }
        let mut end = end;
        let mut found = offered.iter().copied().find(|f| f.start >= start && f.end <= end);
        // A name the ontology does not know, glossed by one it does in a
        // bracket (`Löfgren syndrome (acute sarcoidosis)`), is read as the
        // gloss, and so is a known name glossed by a more specific one
        // (`lymphoplasmacytic lymphoma (Waldenström macroglobulinemia)`); a
        // bracket listing findings (`(AIDS, CD4 36)`) is not a gloss.
        let general = found.map(|f| &self.ontology.entry(f.entry).id);
        let narrower = |gloss: &Found| {
            general.is_none_or(|id| self.ontology.is_broader(id, &self.ontology.entry(gloss.entry).id))
        };
        {
            let rest = &text[end..limit];
            let open = end + (rest.len() - rest.trim_start().len());
            if text[open..limit].starts_with('(')
                && let Some(close) = text[open..limit].find(')').map(|offset| open + offset)
                && !text[open..close].contains([',', ';', '/'])
                && layout.hits_in(Kind::ListSeparator, open, close).next().is_none()
            {
                let gloss = offered
                    .iter()
                    .copied()
                    .find(|f| f.start > open && f.end <= close)
                    .filter(narrower);
                if gloss.is_some() {
                    found = gloss;
                    end = close + 1;
                }
            }
        }
        // A category specified right after it (`neuromuscular junction
        // disorder, most likely myasthenia gravis`) names the more specific.
        if let Some(general) = found {
            let mut next = end;
            loop {
                let rest = &text[next..limit];
                let trimmed = rest.trim_start_matches([' ', ',', '-', ':', '(']);
                next += rest.len() - trimmed.len();
                let hedge = self.cues.hedges.iter().find(|hedge| {
                    trimmed.starts_with(hedge.as_str()) && trimmed[hedge.len()..].starts_with(' ')
                });
                match hedge {
                    Some(hedge) => next += hedge.len(),
                    None => break,
                }
            }
            let general_id = &self.ontology.entry(general.entry).id;
            let specific = offered.iter().copied().find(|f| {
                f.start == next
                    && f.end <= limit
                    && self
                        .ontology
                        .is_broader(general_id, &self.ontology.entry(f.entry).id)
            });
            // One of several (`NMJ disorder - MG or LEMS`) specifies nothing.
            let listed = |specific: &Found| {
                let after = text[specific.end..limit].trim_start();
                let at = limit - after.len();
                after.starts_with([',', '/'])
                    || layout
                        .hits_in(Kind::ListSeparator, at, limit)
                        .any(|hit| hit.start == at)
            };
            if let Some(specific) = specific.filter(|specific| !listed(specific)) {
                found = Some(specific);
                end = specific.end;
            }
        }
        // A free phrase that opens with a number is an age or a count
        // (`34F with ptosis`), not a diagnosis.
        if found.is_none() && (ordered || text[start..end].starts_with(|c: char| c.is_ascii_digit())) {
            return None;
        }
        let words = content_words(layout.original_text(start, end), self.ontology.lexicon());
        // A short free phrase headed by a vague noun (`a neurological
        // condition`, `an inflammatory process`) names no disease.
        let vague = words.len() <= VAGUE_WORDS
            && words
                .last()
                .is_some_and(|head| self.cues.vague_heads.contains(head));
        let fits = (1..=PHRASE_WORDS).contains(&words.len()) && !vague;
        (found.is_some() || fits).then_some(Phrase { start, end, found })
    }

    /// Whether an unlabelled phrase names a test (`an ECG could be
    /// considered`): workup, not a diagnosis.
    pub(super) fn names_test(&self, layout: &Layout<'_>, phrase: &Phrase) -> bool {
        !self
            .ontology
            .tests_in(layout.original_text(phrase.start, phrase.end))
            .is_empty()
    }
}

#[cfg(test)]
mod tests {
    use crate::answer::tests::{assert_all_lead, leading};

    #[test]
    fn a_more_specific_gloss_names_the_leader() {
        assert_all_lead(
            &[
                "Most likely diagnosis: myasthenia gravis (ocular myasthenia)",
                "The picture is most suggestive of a neuromuscular junction disorder (ocular myasthenia).",
            ],
            "ocular_myasthenia",
        );
        // A broader or unrelated gloss does not.
        let (id, _, _) =
            leading("Most likely diagnosis: ocular myasthenia (neuromuscular junction disorder)");
        assert_eq!(id.as_deref(), Some("ocular_myasthenia"));
        let (id, _, _) = leading("Most likely diagnosis: LEMS (botulism)");
        assert_eq!(id.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn a_category_specified_after_it_names_the_specific() {
        assert_all_lead(
            &[
                "Diagnosis: neuromuscular junction disorder, most likely myasthenia gravis.",
                "Neuromuscular junction disorder - probably myasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
        // One of several is no specification, in a bracket or after a dash.
        assert_all_lead(
            &[
                "Diagnosis: neuromuscular junction disorder (myasthenia gravis vs LEMS)",
                "Diagnosis: neuromuscular junction disorder - myasthenia gravis or LEMS",
            ],
            "neuromuscular_junction_disorder",
        );
        // An unrelated diagnosis after a comma is not a specification.
        let (id, _, _) = leading("Diagnosis: LEMS, likely botulism exposure too.");
        assert_eq!(id.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn markup_tags_are_skipped() {
        for answer in [
            "<b>Diagnosis:</b> LEMS",
            "<strong>Most likely diagnosis:</strong> <i>LEMS</i>",
        ] {
            let (id, text, _) = leading(answer);
            assert_eq!(id.as_deref(), Some("lambert_eaton"), "{answer}");
            assert!(text.is_some_and(|text| text.starts_with("LEMS")), "{answer}");
        }
    }

    #[test]
    fn a_vague_phrase_names_no_disease() {
        for answer in [
            "The most likely diagnosis is a neurological condition.",
            "Diagnosis: an inflammatory process.",
            "Most likely an underlying systemic illness.",
        ] {
            assert_eq!(leading(answer).0, None, "{answer}");
            assert_eq!(leading(answer).1, None, "{answer}");
        }
        let (_, text, _) = leading("Diagnosis: Kawasaki disease.");
        assert_eq!(text.as_deref(), Some("Kawasaki disease"));
    }

    #[test]
    fn a_cue_cut_off_before_its_diagnosis_names_nothing() {
        for answer in [
            "Assessment: The patient has ptosis. This is concerning for",
            "The labs show a high CK. The most likely diagnosis is",
        ] {
            assert_eq!(leading(answer).2, "none", "{answer}");
        }
    }
}
