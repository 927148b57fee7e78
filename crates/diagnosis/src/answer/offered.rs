//! What an answer offers besides its leader: free-text differential items,
//! what it rules out, and the tests it orders.

use super::{Mention, Reader};
use crate::cues::Kind;
use crate::layout::Layout;
use crate::ontology::Found;

impl Reader {
    /// Free-text items a differential cue or section offers that name no
    /// ontology entry.
    pub(super) fn free_differential(&self, layout: &Layout<'_>, found: &[Found]) -> Vec<Mention> {
        let mut spans = Vec::new();
        for hit in layout.hits.iter().filter(|hit| hit.kind == Kind::Differential) {
            let (_, end) = layout.sentence_of(hit.end);
            let end = end.max(hit.end);
            spans.push((hit.end, end));
            for separator in layout.hits_in(Kind::ListSeparator, hit.end, end) {
                spans.push((separator.end, end));
            }
            for (offset, byte) in layout.folded.text.as_bytes()[hit.end..end].iter().enumerate() {
                if matches!(byte, b',' | b';' | b'/') {
                    spans.push((hit.end + offset + 1, end));
                }
            }
        }
        for line in &layout.lines {
            if line.section == Some(Kind::Differential) && !line.blank {
                spans.push((line.content, line.end));
            }
        }
        for hit in layout
            .hits
            .iter()
            .filter(|hit| hit.kind == Kind::DifferentialBackward)
        {
            let (clause_start, _) = layout.clause_of(hit.start);
            spans.push((clause_start.min(hit.start), hit.start));
        }
        spans.sort_unstable();
        spans.dedup_by_key(|span| span.0);
        let mut mentions: Vec<Mention> = Vec::new();
        for (start, end) in spans {
            let Some(phrase) = self.phrase_at(layout, start, end, &[]) else {
                continue;
            };
            let names_entry = found.iter().any(|f| f.start < phrase.end && phrase.start < f.end)
                || self.names_test(layout, &phrase);
            let ruled = layout.is_ruled_out(phrase.start, phrase.end)
                || layout.is_history(phrase.start)
                || layout.is_ordering(phrase.start)
                || layout.is_management(phrase.start)
                || layout.is_purpose(phrase.start);
            if !names_entry && !ruled {
                let mention = self.mention(layout, phrase.start, phrase.end, None);
                if !mentions.iter().any(|other| other.text == mention.text) {
                    mentions.push(mention);
                }
            }
        }
        mentions
    }

    /// The entries a forward rule-out cue excludes through a pronoun
    /// (`reactive arthritis would need a sterile joint, so I'm dropping
    /// it`): the last entry before the cue in its sentence that opens its
    /// clause (an article before it allowed), the clause's subject; with no
    /// such subject, the last entry before the cue in its sentence (`it's
    /// tempting to call this dumping syndrome, but I'd exclude it`).
    pub(super) fn dropped_by_pronoun(&self, layout: &Layout<'_>, found: &[Found]) -> Vec<Found> {
        let mut dropped = Vec::new();
        for hit in layout.hits.iter().filter(|hit| hit.kind == Kind::RuledOutForward) {
            let object = layout.hits.iter().any(|pronoun| {
                pronoun.kind == Kind::Pronoun
                    && pronoun.start >= hit.end
                    && layout.words_between(hit.end, pronoun.start) == 0
            });
            if !object {
                continue;
            }
            let (sentence_start, _) = layout.sentence_of(hit.start);
            let before: Vec<&Found> = found
                .iter()
                .filter(|f| f.start >= sentence_start && f.end <= hit.start)
                .collect();
            let subject = before
                .iter()
                .rfind(|f| layout.words_between(layout.clause_of(f.start).0, f.start) <= 1)
                .or(before.last());
            if let Some(subject) = subject {
                dropped.push(**subject);
            }
        }
        dropped
    }

    /// The ruled-out entries (with those `dropped` through a pronoun, see
    /// [`Reader::dropped_by_pronoun`]), and the free phrases rule-out cues
    /// scope.
    pub(super) fn ruled_out(&self, layout: &Layout<'_>, found: &[Found], dropped: &[Found]) -> Vec<Mention> {
        let mut mentions: Vec<Mention> = found
            .iter()
            .filter(|f| layout.is_ruled_out(f.start, f.end) || dropped.contains(f))
            .map(|f| self.mention(layout, f.start, f.end, Some(*f)))
            .collect();
        for hit in &layout.hits {
            let (start, end) = match hit.kind {
                Kind::RuledOutForward => (hit.end, layout.clause_of(hit.end).1.max(hit.end)),
                Kind::RuledOutBackward => (layout.clause_of(hit.start).0.min(hit.start), hit.start),
                _ => continue,
            };
            let covered = found.iter().any(|f| f.start >= start && f.end <= end);
            if covered {
                continue;
            }
            if let Some(phrase) = self.phrase_at(layout, start, end, &[]) {
                mentions.push(self.mention(layout, phrase.start, phrase.end, None));
            }
        }
        mentions
    }

    /// The tests ordering sentences and sections name.
    pub(super) fn tests_ordered(&self, layout: &Layout<'_>) -> (Vec<String>, Vec<String>) {
        let mut spans = Vec::new();
        for hit in layout.hits.iter().filter(|hit| hit.kind == Kind::Order) {
            if !layout.is_negated(hit) {
                let (_, end) = layout.sentence_of(hit.end);
                spans.push((hit.end, end.max(hit.end)));
            }
        }
        for line in &layout.lines {
            if line.section == Some(Kind::Order) && !line.blank {
                spans.push((line.content, line.end));
            }
        }
        let mut tests: Vec<String> = Vec::new();
        let mut phrases = Vec::new();
        for (start, end) in spans {
            let written = layout.original_text(start, end);
            phrases.push(written.trim().to_string());
            let mut named = self.ontology.tests_in(written);
            if named.is_empty() {
                let phrase = written.trim_matches(|c: char| !c.is_alphanumeric());
                if !phrase.is_empty() {
                    named.push(phrase.to_string());
                }
            }
            for name in named {
                if !tests.contains(&name) {
                    tests.push(name);
                }
            }
        }
        (tests, phrases)
    }
}
