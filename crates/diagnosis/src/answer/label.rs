//! The leader a label names (`Most likely diagnosis: X`, `## Final
//! diagnosis` over the line under it): labels rank final over diagnosis over
//! section labels, and a label in a question or before a restated case names
//! nothing.

use super::exam::Choice;
use super::{Mention, Phrase, Reader};
use crate::cues::{Hit, Kind};
use crate::layout::Layout;
use crate::ontology::Found;

impl Reader {
    /// How a label ranks: a final label (`final diagnosis`) above a
    /// diagnosis label (`most likely diagnosis`) above a section label
    /// (`assessment`).
    fn label_rank(&self, layout: &Layout<'_>, start: usize, end: usize) -> u8 {
        let written = &layout.folded.text[start..end];
        if self.cues.final_labels.contains(written) {
            2
        } else if self.cues.section_labels.contains(written) {
            0
        } else {
            1
        }
    }

    /// Step 1: a label followed by a colon or dash (or a label ending `is`
    /// or written with its colon, `primary:`);
    /// of several, the highest ranked, then the first. A label in a question
    /// (`Most likely diagnosis?`) or before a restated case (`Assessment: the
    /// patient is ...`) names nothing.
    /// A label that chooses one of an exam's `choices` by its letter
    /// (`Final answer: (C)`) leads with that option (source `option`).
    pub(super) fn by_label(
        &self,
        layout: &Layout<'_>,
        offered: &[Found],
        choices: &[Choice],
    ) -> (Option<Mention>, &'static str) {
        let mut best: Option<(u8, Mention, &'static str)> = None;
        for hit in &layout.hits {
            if layout.is_question(hit.start) {
                continue;
            }
            // A label after an order in its sentence (`arrange a biopsy and
            // a tissue diagnosis of the lung mass`) names what is to be
            // found, not what was.
            let (sentence_start, _) = layout.sentence_of(hit.start);
            if layout
                .hits_in(Kind::Order, sentence_start, hit.start)
                .any(|order| !layout.is_negated(order))
            {
                continue;
            }
            let Some((mention, source)) = self.label_at(layout, hit, offered, choices) else {
                continue;
            };
            let rank = self.label_rank(layout, hit.start, hit.end);
            if best.as_ref().is_none_or(|(best_rank, _, _)| rank > *best_rank) {
                best = Some((rank, mention, source));
            }
        }
        match best {
            Some((_, mention, source)) => (Some(mention), source),
            None => (None, "none"),
        }
    }

    /// The first known diagnosis right after an arrow (`→`, `->`, `=>`)
    /// between `from` and `to`.
    fn after_arrow(&self, layout: &Layout<'_>, from: usize, to: usize, offered: &[Found]) -> Option<Phrase> {
        let text = &layout.folded.text;
        let window = text.get(from..to)?;
        let arrow_end = ["→", "->", "=>", "⇒"]
            .iter()
            .filter_map(|arrow| window.find(arrow).map(|at| from + at + arrow.len()))
            .min()?;
        Self::entry_after(layout, arrow_end, to, offered, 1)
    }

    /// The first known diagnosis a leading cue between `from` and `to`
    /// names right after it (`fibroepithelial neoplasm …, consistent with
    /// phyllodes tumour`): what a descriptive phrase adds up to.
    fn after_forward_cue(
        &self,
        layout: &Layout<'_>,
        from: usize,
        to: usize,
        offered: &[Found],
    ) -> Option<Phrase> {
        let cue = layout.hits_in(Kind::LeadingForward, from, to).next()?;
        Self::entry_after(layout, cue.end, to, offered, 1)
    }

    /// The first offered entry that starts at most `reach` words after `at`
    /// and ends by `to`.
    pub(super) fn entry_after(
        layout: &Layout<'_>,
        at: usize,
        to: usize,
        offered: &[Found],
        reach: usize,
    ) -> Option<Phrase> {
        offered
            .iter()
            .copied()
            .find(|f| f.start >= at && f.end <= to && layout.words_between(at, f.start) <= reach)
            .map(|f| Phrase {
                start: f.start,
                end: f.end,
                found: Some(f),
            })
    }

    /// The leader a label hit names, inline or on the next line.
    fn label_at(
        &self,
        layout: &Layout<'_>,
        hit: &Hit,
        offered: &[Found],
        choices: &[Choice],
    ) -> Option<(Mention, &'static str)> {
        let text = &layout.folded.text;
        {
            let line = layout.line_of(hit.start);
            let after = text[hit.end..line.end].trim_start_matches(['*', '_', ' ', '#', ')', '"']);
            let heading = hit.kind == Kind::LeadingForward
                && after.trim_matches(|c: char| !c.is_alphanumeric()).is_empty()
                && layout.words_between(line.content, hit.start) == 0;
            if hit.kind != Kind::Label && !heading {
                return None;
            }
            let link = self
                .cues
                .label_links
                .iter()
                .find(|link| after.starts_with(link.as_str()) && after[link.len()..].starts_with(' '));
            let cue = &text[hit.start..hit.end];
            let labelled = after.is_empty()
                || after.starts_with([':', '-', '='])
                || link.is_some()
                || cue.ends_with(" is")
                || cue.ends_with(':');
            // A label linked by a word (`..., the most likely diagnosis is
            // X`) may sit anywhere in its clause; one before a colon opens it.
            let (clause_start, _) = layout.clause_of(hit.start);
            let deep = layout.words_between(clause_start, hit.start) > 3 && link.is_none();
            if !labelled || layout.is_negated(hit) || deep {
                return None;
            }
            let (start, letter) =
                past_option_letter(text, line.end - after.len() + link.map_or(0, String::len));
            if let Some(choice) =
                letter.and_then(|letter| choices.iter().find(|choice| choice.letter == letter))
                && let Some(phrase) = self.phrase_at(layout, choice.start, choice.end, offered)
            {
                return Some((self.lead(layout, phrase), "option"));
            }
            let (_, sentence_end) = layout.sentence_of(start + 1);
            let inline = self.phrase_at(layout, start, sentence_end.max(start).min(line.end), offered);
            // A terse label that lists findings and arrows to its
            // conclusion (`A/P: postpartum, T 38.9, tender uterus →
            // endometritis`) leads with the diagnosis after the arrow.
            let inline = match inline {
                Some(phrase) if phrase.found.is_none() => Some(
                    self.after_arrow(layout, phrase.end, sentence_end, offered)
                        .unwrap_or(phrase),
                ),
                other => other,
            };
            if let Some(phrase) = inline {
                // A restated case or a diagnosis the label's own sentence
                // rules out (`Diagnosis: MG is unlikely; ...`) is no leader.
                let narrative =
                    phrase.found.is_none() && self.opens_narrative(&text[phrase.start..phrase.end]);
                if narrative || layout.is_ruled_out(phrase.start, phrase.end) {
                    return None;
                }
                return Some((self.lead(layout, phrase), "label"));
            }
            if after.trim_matches(|c: char| !c.is_alphanumeric()).is_empty() {
                // A line under the heading that ends with a colon heads what
                // follows it (a pathology report's specimen, `Skin, chest,
                // excisional biopsy:`): the leader is on the line after it.
                let next = layout
                    .lines
                    .iter()
                    .filter(|next| next.start > line.end && !next.blank)
                    .take(2)
                    .find(|next| !text[next.content..next.end].trim_end().ends_with(':'));
                if let Some(next) = next {
                    let (_, end) = layout.sentence_of(next.content);
                    if let Some(phrase) = self.phrase_at(layout, next.content, end, offered) {
                        let phrase = match phrase.found {
                            None => self
                                .after_forward_cue(layout, phrase.end, end, offered)
                                .unwrap_or(phrase),
                            Some(_) => phrase,
                        };
                        return Some((self.lead(layout, phrase), "heading"));
                    }
                }
            }
        }
        None
    }
}

/// Past an exam option's letter after a label (`Answer: E. Glanzmann
/// thrombasthenia`, `The answer is C: …`, `(D) …`): a letter from `a` to
/// `j`, bracketed or followed by `.`, `:`, `)` or a dash, then a space —
/// or alone at the end of its line or sentence (`Answer: C`). The letter
/// comes back with the position.
fn past_option_letter(text: &str, start: usize) -> (usize, Option<char>) {
    let rest = &text[start..];
    let trimmed = rest.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '-' | '=' | '*'));
    let skipped = rest.len() - trimmed.len();
    let (open, body) = match trimmed.strip_prefix('(') {
        Some(body) => (1, body),
        None => (0, trimmed),
    };
    let Some(letter) = body.chars().next() else {
        return (start, None);
    };
    if !('a'..='j').contains(&letter) {
        return (start, None);
    }
    let after_letter = &body[letter.len_utf8()..];
    // The letter alone: `Answer: C`, `Final answer: (B)`, `Answer: D.`.
    let closed = if open == 1 {
        after_letter.strip_prefix(')')
    } else {
        Some(after_letter)
    };
    if let Some(closed) = closed {
        let tail = closed.strip_prefix('.').unwrap_or(closed);
        if tail.trim_start_matches(' ').is_empty() || tail.trim_start_matches(' ').starts_with('\n') {
            return (start + skipped + (trimmed.len() - tail.len()), Some(letter));
        }
    }
    // `C: X`, `E. X`, `(B) X`, `C — X`.
    let spaced = after_letter.trim_start_matches(' ');
    let (mark, after_mark) = match (open, after_letter.chars().next(), spaced.chars().next()) {
        (1, Some(')'), _) => (1, &after_letter[1..]),
        (0, Some(mark @ ('.' | ':' | ')')), _) => (mark.len_utf8(), &after_letter[mark.len_utf8()..]),
        (0, _, Some(dash @ ('-' | '—' | '–'))) => {
            let gap = after_letter.len() - spaced.len();
            (gap + dash.len_utf8(), &spaced[dash.len_utf8()..])
        }
        _ => return (start, None),
    };
    if !after_mark.starts_with(' ') {
        return (start, None);
    }
    let rest_of = after_mark.trim_start_matches(' ');
    (
        start + skipped + open + letter.len_utf8() + mark + (after_mark.len() - rest_of.len()),
        Some(letter),
    )
}

#[cfg(test)]
mod tests {
    use crate::answer::tests::{assert_all_lead, leading};

    #[test]
    fn a_terse_label_leads_with_the_diagnosis_after_its_arrow() {
        assert_all_lead(
            &[
                "A/P: 34F, fatigable ptosis, diplopia → myasthenia gravis. DDx: LEMS.",
                "Imp: ptosis worse by evening -> MG; r/o botulism",
            ],
            "myasthenia_gravis",
        );
        // A known diagnosis after the label still leads, arrow or not.
        assert_eq!(
            leading("A/P: LEMS → check VGCC antibodies, CT chest")
                .0
                .as_deref(),
            Some("lambert_eaton")
        );
    }

    #[test]
    fn an_exam_option_letter_after_an_answer_label_is_skipped() {
        assert_all_lead(
            &[
                "The answer is C: Myasthenia gravis.\n(A) LEMS would improve with use.",
                "The correct answer is D: myasthenia gravis.",
                "Answer: E. Myasthenia gravis.\nLEMS (A) improves with exercise.",
                "Answer: C — myasthenia gravis (generalised).",
                "Final answer: (B) Myasthenia gravis",
            ],
            "myasthenia_gravis",
        );
        assert_eq!(super::past_option_letter("answer: acute mi", 6), (6, None));
        assert_eq!(super::past_option_letter("answer: (c) x", 6), (12, Some('c')));
        assert_eq!(super::past_option_letter("answer: (c)\nnext", 6), (11, Some('c')));
        assert_eq!(super::past_option_letter("answer: d.", 6), (10, Some('d')));
        assert_eq!(super::past_option_letter("answer: a cough", 6), (6, None));
    }

    #[test]
    fn a_report_heading_leads_with_the_line_under_its_specimen() {
        assert_all_lead(
            &[
                "DIAGNOSIS\nThymus, resection specimen:\n- MYASTHENIA GRAVIS with thymic hyperplasia.\n- Margins clear.",
                "FINAL DIAGNOSIS\nMuscle, left deltoid, biopsy:\n- Junctional transmission defect on single-fibre study, consistent with myasthenia gravis.",
            ],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_lettered_assessment_line_labels_only_at_the_line_start() {
        assert_all_lead(
            &[
                "P – 34F, ptosis, diplopia.\nA – Myasthenia gravis most likely; botulism less likely.\nS – AChR antibodies.",
            ],
            "myasthenia_gravis",
        );
        assert_all_lead(
            &["Fatigable ptosis: type A - botulism is far less likely than myasthenia gravis here."],
            "myasthenia_gravis",
        );
    }

    #[test]
    fn a_label_after_an_order_names_nothing() {
        let (id, _, _) = leading(
            "Myasthenia gravis, generalised. Arrange a CT chest and a tissue diagnosis of the anterior mediastinal mass.",
        );
        assert_eq!(id.as_deref(), Some("myasthenia_gravis"));
        // Before the order, the label still leads.
        assert_eq!(
            leading("Final diagnosis: LEMS. Obtain a CT chest.").0.as_deref(),
            Some("lambert_eaton")
        );
    }

    #[test]
    fn a_final_label_outranks_a_section_heading_and_earlier_labels() {
        for answer in [
            "### Assessment\nYoung woman with fatigable ptosis.\n\n**Final Diagnosis:** LEMS\n\n### Differential\n1. MG",
            "Most likely diagnosis: MG\nDifferential: botulism\nFinal diagnosis: LEMS",
            "1. MG - fatigable ptosis\n2. Botulism\n3. LEMS\n\nFinal answer: LEMS",
            "## Impression\nDashboard injury; ptosis.\n\nDiagnosis: LEMS",
        ] {
            assert_eq!(leading(answer).0.as_deref(), Some("lambert_eaton"), "{answer}");
        }
        // A section heading still names the leader when no label does.
        assert_eq!(
            leading("## Assessment\nBotulism\n").0.as_deref(),
            Some("botulism")
        );
    }

    #[test]
    fn a_label_in_a_question_or_before_a_restated_case_names_nothing() {
        for answer in [
            "Most likely diagnosis? The patient is 45 with ptosis. I need more information.",
            "Assessment: The patient is a 20 year old male with ptosis and diplopia.",
            "What is the most likely diagnosis? More history is needed first.",
        ] {
            assert_eq!(leading(answer).2, "none", "{answer}");
        }
    }

    #[test]
    fn a_linked_label_may_follow_a_preamble() {
        for answer in [
            "Based on the fatigable ptosis, diplopia and proximal weakness that improves with rest, the most likely diagnosis is LEMS.",
            "Thank you for the case. Given the autonomic signs, areflexia and a smoking history, my leading concern is LEMS.",
        ] {
            assert_eq!(leading(answer).0.as_deref(), Some("lambert_eaton"), "{answer}");
        }
    }

    /// Each answer is led by LEMS, found by its label.
    fn labelled_lems(answers: &[&str]) {
        for answer in answers {
            let (id, _, source) = leading(answer);
            assert_eq!(
                (id.as_deref(), source),
                (Some("lambert_eaton"), "label"),
                "{answer}"
            );
        }
    }

    #[test]
    fn labels_in_other_languages_name_the_leader() {
        labelled_lems(&[
            "Verdachtsdiagnose: LEMS.\nDifferentialdiagnosen: Botulismus.",
            "Diagnóstico más probable: LEMS.\nDiagnóstico diferencial: botulismo.",
            "Diagnostic le plus probable : LEMS.\nDiagnostics différentiels : botulisme.",
            "Impresión diagnóstica: LEMS.",
            "Diagnosi più probabile: LEMS.",
            "Wahrscheinlichste Diagnose: LEMS.",
            "Diagnóstico mais provável: LEMS.",
            "O diagnóstico mais provável é LEMS, dada a arreflexia.",
            "Diagnostic : LEMS.",
        ]);
    }

    #[test]
    fn note_shorthand_and_linked_labels_name_the_leader() {
        labelled_lems(&[
            "Imp: LEMS. Check VGCC antibodies.",
            "NB: ptosis, areflexia. A/P: LEMS, CT chest.",
            "Thank you for the referral. My impression is of LEMS with a possible underlying tumour.",
            "Diagnoses: (1) LEMS; (2) pneumonia.",
            "Given the areflexia, the likeliest explanation by far is LEMS.",
        ]);
    }

    #[test]
    fn a_json_answer_is_read_by_its_keys() {
        let (id, _, source) =
            leading("{\"most_likely_diagnosis\": \"LEMS (paraneoplastic)\", \"differential\": [\"MG\"]}");
        assert_eq!((id.as_deref(), source), (Some("lambert_eaton"), "label"));
        let (id, _, source) = leading("{\"most_likely_diagnosis\": null, \"tests\": [\"CBC\"]}");
        assert_eq!((id, source), (None, "none"));
    }

    #[test]
    fn a_labelled_diagnosis_its_sentence_rules_out_does_not_lead() {
        let (id, _, _) = leading(
            "Diagnosis: myasthenia gravis is unlikely given the normal antibodies; the most likely diagnosis is LEMS.",
        );
        assert_eq!(id.as_deref(), Some("lambert_eaton"));
    }

    #[test]
    fn committing_phrasings_name_the_leader() {
        for answer in [
            "I would go with LEMS.",
            "My best guess is LEMS, though MG is possible.",
            "Top pick: LEMS. Runner-up: MG.",
            "Leading: LEMS\nAlso consider: MG, botulism",
            "I lean towards LEMS given the areflexia.",
            "The autonomic signs and areflexia point firmly to LEMS.",
            "Ptosis with areflexia and post-exercise facilitation. This meets criteria for LEMS.",
            "The picture is best captured by LEMS.",
            "I'd treat this as LEMS until the antibodies are back.",
            "Weakness that improves with exercise. I'd call it LEMS.",
            "Areflexia with facilitation: that's LEMS.",
        ] {
            assert_eq!(leading(answer).0.as_deref(), Some("lambert_eaton"), "{answer}");
        }
    }
}
