//! Reference evidence (EviDx's third level): the findings a case's
//! diagnosis rests on, as exact spans of its source, and whether a
//! trajectory read and cited each of them.
//!
//! **The case's reference evidence** is, in chart order and each span once:
//! - a span the input curated (a case's `evidence` field: exact substrings
//!   of its text, checked at E-Synthesis) — when the input gives any, they
//!   are the whole set and the rule below does not run;
//! - otherwise, by rule ([`derive()`]), the facts of the chart that are
//!   1. `decisive`: the decisive test result ([`crate::findings::decisive`]);
//!   2. `names_diagnosis`: any finding (a result, an examination finding, a
//!      history item, a symptom) whose span names the reference diagnosis;
//!   3. `confirming`: any finding, not normal, that holds one of the
//!      diagnosis's confirming phrases (the ontology's);
//!   4. `abnormal_study`: every confirmatory study (biopsy, imaging,
//!      culture…: the pack's `studies` words) that reads abnormal;
//!   5. `abnormal_exam`: every examination finding that reads abnormal;
//!   6. `marked_result`: every result markedly abnormal against the pack's
//!      reference range (`ranges.yaml`: at least twice its upper end, at
//!      most half its lower end) — a mildly abnormal one is not, since a
//!      clinician cites the value that decides, not every value off range;
//!   7. `feature`: every sentence of the history, the symptoms or the
//!      examination that holds one of the diagnosis's clinical features
//!      (the pack's `features.yaml`: the exposure, drug, time course or
//!      sign that supports it over its alternatives), as whole words (a
//!      final `s` allowed) — the sentence, not its whole paragraph, is the
//!      span, and one already inside an earlier span is not taken again.
//!
//!   A finding whose result the chart says it lacks (`Not specified`,
//!   `pending`: the pack's `unavailable` cues) is never evidence, and never
//!   the decisive result.
//!
//! Each is a reference fact of kind `evidence`: its `name` is the chart
//! fact's kind, its `value` the chart fact's name (a test's label), its
//! `detail` the rule that chose it, and its span the chart fact's.
//!
//! **Read and cited** ([`recall`]): a span counts where the chart a subject
//! was served still holds it word for word (an intervention that rewrote
//! the decisive result leaves that span out of the variant's count). It was
//! read when its section was among those the trajectory read, and cited when
//! the subject's own words ([`cites`]) name at least half of its content
//! words (the span's and its label's together, stop words of the pack's
//! `answer.yaml` left out, rounded up) and at least one of the span's own —
//! so a citation may paraphrase, reorder or abbreviate a finding, but a
//! label alone (`chest X-ray`) does not cite its result.

use std::collections::BTreeSet;

use cfeval_schema::{Fact, Section};

use crate::answer::Reader;
use crate::findings::{Lexicon, confirms_diagnosis, diagnosis_names, names_diagnosis};
use crate::ontology::Ontology;
use crate::text;

/// The fact kind of reference evidence.
pub const KIND: &str = "evidence";

/// The chart fact kinds the rule reads for evidence.
const FINDING_KINDS: [&str; 5] = ["test_result", "exam", "history", "symptom", "vital"];

/// The case's reference evidence by rule (see the module's documentation):
/// `decisive` is the reference's decisive items (only its test result is
/// read).
pub fn derive(
    lexicon: &Lexicon,
    ontology: &Ontology,
    facts: &[Fact],
    reference: &str,
    decisive: &[Fact],
) -> Vec<Fact> {
    let diagnosis = ontology.resolve(reference);
    let names = diagnosis_names(ontology, reference);
    let decisive_span = decisive
        .iter()
        .find(|fact| fact.name == "test_result")
        .map(|fact| (fact.span_start, fact.span_end));
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for fact in facts.iter().filter(|fact| {
        FINDING_KINDS.contains(&fact.kind.as_str()) && !lexicon.is_unavailable(&fact.span_text)
    }) {
        let rule = if decisive_span == Some((fact.span_start, fact.span_end)) {
            "decisive"
        } else if names_diagnosis(fact, &names) {
            "names_diagnosis"
        } else if confirms_diagnosis(fact, diagnosis) {
            "confirming"
        } else if fact.kind == "test_result" && fact.value == "abnormal" && lexicon.is_study(&fact.name) {
            "abnormal_study"
        } else if fact.kind == "exam" && fact.value == "abnormal" {
            "abnormal_exam"
        } else if fact.kind == "test_result"
            && fact.value == "abnormal"
            && lexicon.is_marked(&fact.name, &fact.span_text)
        {
            "marked_result"
        } else {
            continue;
        };
        if !seen.insert((fact.span_start, fact.span_end)) {
            continue;
        }
        out.push(Fact {
            kind: KIND.into(),
            name: fact.kind.clone(),
            value: fact.name.clone(),
            detail: Some(rule.into()),
            origin: "reference".into(),
            ..fact.clone()
        });
    }
    let features = diagnosis.map_or(&[][..], |diagnosis| diagnosis.features.as_slice());
    for fact in facts.iter().filter(|fact| {
        FEATURE_KINDS.contains(&fact.kind.as_str()) && fact.value != "normal" && !features.is_empty()
    }) {
        for sentence in sentences(&fact.span_text) {
            let text = &fact.span_text[sentence.clone()];
            let lower = text.to_lowercase();
            if !features.iter().any(|phrase| holds_feature(&lower, phrase)) {
                continue;
            }
            let start = fact.span_start + sentence.start as u64;
            let end = fact.span_start + sentence.end as u64;
            if out
                .iter()
                .any(|taken| taken.span_start < end && start < taken.span_end)
            {
                continue;
            }
            out.push(Fact {
                kind: KIND.into(),
                name: fact.kind.clone(),
                value: fact.name.clone(),
                detail: Some("feature".into()),
                origin: "reference".into(),
                span_start: start,
                span_end: end,
                span_text: text.to_string(),
                ..fact.clone()
            });
        }
    }
    out.sort_by_key(|fact| (fact.span_start, fact.span_end));
    out
}

/// The chart fact kinds whose sentences the `feature` rule reads.
const FEATURE_KINDS: [&str; 3] = ["history", "symptom", "exam"];

/// Whether a lower-case sentence holds a feature phrase as whole words,
/// its last word perhaps with a final `s` or `es`.
fn holds_feature(lower: &str, phrase: &str) -> bool {
    let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
    lower.match_indices(phrase).any(|(at, _)| {
        let after = &lower[at + phrase.len()..];
        let rest = after
            .strip_prefix("es")
            .filter(|rest| boundary(rest.chars().next()))
            .or_else(|| {
                after
                    .strip_prefix('s')
                    .filter(|rest| boundary(rest.chars().next()))
            })
            .unwrap_or(after);
        boundary(lower[..at].chars().next_back()) && boundary(rest.chars().next())
    })
}

/// The sentences of a text (byte ranges, trimmed): a sentence ends at `.`,
/// `!` or `?` before white space or the end (not inside `40.5`), at `;`
/// and at a line break.
fn sentences(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let push = |from: usize, to: usize, out: &mut Vec<std::ops::Range<usize>>| {
        let piece = &text[from..to];
        let lead = piece.len() - piece.trim_start().len();
        let trimmed = piece.trim();
        if !trimmed.is_empty() {
            out.push(from + lead..from + lead + trimmed.len());
        }
    };
    for (at, c) in text.char_indices() {
        let next = text[at + c.len_utf8()..].chars().next();
        let ends = match c {
            '.' | '!' | '?' => next.is_none_or(char::is_whitespace),
            ';' | '\n' => true,
            _ => false,
        };
        if ends {
            push(start, at + c.len_utf8(), &mut out);
            start = at + c.len_utf8();
        }
    }
    push(start, text.len(), &mut out);
    out
}

/// A curated evidence span located in a case's source: the reference fact,
/// or why it cannot be one.
pub fn curated(source: &str, sections: &[Section], span: &str) -> Result<Fact, String> {
    let wanted = span.trim();
    if wanted.is_empty() {
        return Err("an evidence span is empty".into());
    }
    let Some(start) = source.find(wanted) else {
        return Err(format!(
            "the evidence span `{}` is not an exact substring of the case's text",
            excerpt(wanted)
        ));
    };
    let end = start + wanted.len();
    let section = sections
        .iter()
        .find(|section| match (section.span_start, section.span_end) {
            (Some(from), Some(to)) => from <= start as u64 && end as u64 <= to,
            _ => false,
        })
        .map(|section| section.name.clone())
        .unwrap_or_default();
    Ok(Fact {
        detail: Some("curated".into()),
        ..Fact::spanned(KIND, "curated", "", &section, start as u64, wanted, "reference")
    })
}

fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// Whether `text` (a subject's own words) cites the evidence `span`, whose
/// chart label is `label` (empty for none): the rule of the module's
/// documentation.
pub fn cites(reader: &Reader, label: &str, span: &str, text: &str) -> bool {
    let lexicon = reader.ontology().lexicon();
    let said: BTreeSet<String> = text::words(text, lexicon).into_iter().collect();
    let own: BTreeSet<String> = text::content_words(span, lexicon).into_iter().collect();
    let mut keys = own.clone();
    keys.extend(text::content_words(&label.replace('_', " "), lexicon));
    if own.is_empty() {
        return false;
    }
    let named = keys.iter().filter(|word| said.contains(*word)).count();
    named * 2 >= keys.len() && own.iter().any(|word| said.contains(word))
}

/// How much of a case's reference evidence one trajectory covered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recall {
    /// Evidence spans the served chart holds word for word.
    pub present: u32,
    /// Of those, spans in a section the trajectory read.
    pub read: u32,
    /// Of those read, spans the subject's words cite.
    pub cited: u32,
}

impl Recall {
    /// The share of present spans read; none when none is present.
    pub fn read_share(&self) -> Option<f64> {
        (self.present > 0).then(|| f64::from(self.read) / f64::from(self.present))
    }

    /// Reference evidence recall: the share of present spans read and
    /// cited; none when none is present.
    pub fn recall(&self) -> Option<f64> {
        (self.present > 0).then(|| f64::from(self.cited) / f64::from(self.present))
    }
}

/// The recall of `evidence` (reference facts of kind [`KIND`]) by a
/// trajectory served `sections` that read the sections named in `read` and
/// said `said` (its own words, every turn's together).
pub fn recall(
    reader: &Reader,
    evidence: &[Fact],
    sections: &[Section],
    read: &[String],
    said: &str,
) -> Recall {
    let mut out = Recall::default();
    for fact in evidence.iter().filter(|fact| fact.kind == KIND) {
        // The fact's own section first, then any that holds the span.
        let holder = sections
            .iter()
            .find(|section| section.name == fact.section && section.text.contains(&fact.span_text))
            .or_else(|| {
                sections
                    .iter()
                    .find(|section| section.text.contains(&fact.span_text))
            });
        let Some(section) = holder.filter(|_| !fact.span_text.trim().is_empty()) else {
            continue;
        };
        out.present += 1;
        if !read.contains(&section.name) {
            continue;
        }
        out.read += 1;
        if cites(reader, &fact.value, &fact.span_text, said) {
            out.cited += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn sentences_end_at_stops_not_inside_numbers() {
        let text = "Fever of 40.5°C five days ago. Then a rash; it spread!\nNo cough";
        let pieces: Vec<&str> = sentences(text).into_iter().map(|range| &text[range]).collect();
        assert_eq!(
            pieces,
            [
                "Fever of 40.5°C five days ago.",
                "Then a rash;",
                "it spread!",
                "No cough"
            ]
        );
        assert!(sentences("  ").is_empty());
    }

    #[test]
    fn a_feature_is_whole_words_with_a_plural_allowed() {
        assert!(holds_feature("he had automatisms and lip smacking", "automatism"));
        assert!(holds_feature("recent antibiotics for pneumonia", "antibiotic"));
        assert!(holds_feature("two rashes", "rash"));
        assert!(!holds_feature("the catheter was changed", "cat"));
        assert!(!holds_feature("antibiotically", "antibiotic"));
    }

    fn pack() -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/general-medicine")
    }

    fn reader() -> Reader {
        Reader::load(&pack()).unwrap()
    }

    fn fact(kind: &str, name: &str, value: &str, section: &str, span: &str, start: u64) -> Fact {
        Fact::spanned(kind, name, value, section, start, span, "rule")
    }

    #[test]
    fn a_paraphrase_cites_and_a_label_alone_does_not() {
        let reader = reader();
        let span = "Bilateral hilar lymphadenopathy";
        assert!(cites(
            &reader,
            "Chest X-ray",
            span,
            "Hilar lymphadenopathy on the chest film."
        ));
        assert!(cites(
            &reader,
            "Chest X-ray",
            span,
            "Chest radiograph with bilateral hilar lymphadenopathy"
        ));
        assert!(!cites(
            &reader,
            "Chest X-ray",
            span,
            "A chest X-ray was reviewed."
        ));
        assert!(!cites(&reader, "Chest X-ray", span, "No comment on imaging."));
    }

    #[test]
    fn numbers_and_plurals_are_words_of_a_citation() {
        let reader = reader();
        assert!(cites(
            &reader,
            "Hemoglobin",
            "8.2 g/dL",
            "anaemia, hemoglobin 8.2"
        ));
        assert!(!cites(&reader, "Hemoglobin", "8.2 g/dL", "hemoglobin was low"));
        assert!(cites(
            &reader,
            "",
            "Multiple ring-enhancing lesions",
            "ring enhancing lesion(s) on MRI"
        ));
    }

    #[test]
    fn an_empty_span_is_never_cited() {
        assert!(!cites(&reader(), "Biopsy", "", "biopsy"));
    }

    #[test]
    fn recall_counts_only_spans_the_chart_still_holds() {
        let reader = reader();
        let evidence = [
            Fact {
                kind: KIND.into(),
                ..fact(
                    "evidence",
                    "test_result",
                    "Chest X-ray",
                    "labs",
                    "Bilateral hilar lymphadenopathy",
                    0,
                )
            },
            Fact {
                kind: KIND.into(),
                ..fact(
                    "evidence",
                    "test_result",
                    "Calcium",
                    "labs",
                    "Calcium 11.8 mg/dL",
                    40,
                )
            },
            Fact {
                kind: KIND.into(),
                ..fact(
                    "evidence",
                    "exam",
                    "Skin",
                    "exam",
                    "Tender red nodules on both shins",
                    80,
                )
            },
        ];
        let sections = [
            Section {
                name: "labs".into(),
                text: "Chest X-ray: Bilateral hilar lymphadenopathy\nCalcium 9.1 mg/dL".into(),
                span_start: None,
                span_end: None,
            },
            Section {
                name: "exam".into(),
                text: "Skin: Tender red nodules on both shins".into(),
                span_start: None,
                span_end: None,
            },
        ];
        let read = ["labs".to_string()];
        let said = "Sarcoidosis: bilateral hilar lymphadenopathy.";
        let recall = super::recall(&reader, &evidence, &sections, &read, said);
        // The calcium span was edited away; the skin span was never read.
        assert_eq!(
            recall,
            Recall {
                present: 2,
                read: 1,
                cited: 1
            }
        );
        assert_eq!(recall.recall(), Some(0.5));
        assert_eq!(recall.read_share(), Some(0.5));
        assert_eq!(Recall::default().recall(), None);
    }

    #[test]
    fn curated_spans_must_be_exact_substrings() {
        let source = "## Exam\nTender red nodules\n## Labs\nESR 80 mm/h\n";
        let section = |name: &str, from: usize, to: usize| Section {
            name: name.into(),
            text: source[from..to].into(),
            span_start: Some(from as u64),
            span_end: Some(to as u64),
        };
        let sections = vec![section("Exam", 0, 26), section("Labs", 26, source.len())];
        let found = curated(source, &sections, " ESR 80 mm/h ").unwrap();
        assert_eq!(found.section, "Labs");
        assert_eq!(
            &source[found.span_start as usize..found.span_end as usize],
            "ESR 80 mm/h"
        );
        let error = curated(source, &sections, "ESR 90").unwrap_err();
        assert!(error.contains("not an exact substring"), "{error}");
        assert!(curated(source, &sections, "  ").is_err());
    }

    #[test]
    fn a_markedly_abnormal_result_is_evidence_and_a_mildly_abnormal_one_is_not() {
        let lexicon = Lexicon::load(&pack()).unwrap();
        let ontology = Ontology::load(&pack()).unwrap();
        let facts = [
            fact(
                "test_result",
                "Blood Work - Alkaline Phosphatase",
                "abnormal",
                "labs",
                "460 U/L",
                0,
            ),
            fact(
                "test_result",
                "Blood Tests - ESR",
                "abnormal",
                "labs",
                "33 mm/hr",
                20,
            ),
            fact("test_result", "CD4 Count", "abnormal", "labs", "36/mm3", 40),
        ];
        let evidence = derive(&lexicon, &ontology, &facts, "Sarcoidosis", &[]);
        let spans: Vec<(&str, &str)> = evidence
            .iter()
            .map(|fact| (fact.span_text.as_str(), fact.detail.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(spans, [("460 U/L", "marked_result"), ("36/mm3", "marked_result")]);
        // The pack's ranges read a number the chart gives no range for.
        assert_eq!(
            lexicon.classify_result("Blood Work - Alkaline Phosphatase", "460 U/L"),
            "abnormal"
        );
        assert_eq!(lexicon.classify_result("Blood Tests - ESR", "10 mm/hr"), "normal");
        assert_eq!(lexicon.classify_result("Urinalysis - WBC", "3-5/hpf"), "unknown");
    }

    #[test]
    fn a_sentence_holding_a_feature_of_the_diagnosis_is_evidence() {
        let lexicon = Lexicon::load(&pack()).unwrap();
        let ontology = Ontology::load(&pack())
            .unwrap()
            .with_features(
                "version: 1\nfeatures:\n  clostridioides_difficile_colitis: [recent antibiotic, watery diarrhea]\n",
                "features.yaml",
            )
            .unwrap();
        let history = "He was treated for pneumonia. He finished a recent antibiotic course last week. \
                       Now watery diarrheas, 9 a day; no blood.";
        let facts = [
            fact("history", "history", "stated", "history", history, 0),
            fact(
                "exam",
                "Abdomen",
                "normal",
                "exam",
                "Soft, no watery diarrhea on the sheet.",
                200,
            ),
            fact(
                "exam",
                "Skin",
                "abnormal",
                "exam",
                "Dry mucosa. Recent antibiotic rash.",
                300,
            ),
        ];
        let evidence = derive(
            &lexicon,
            &ontology,
            &facts,
            "Clostridioides difficile colitis",
            &[],
        );
        let spans: Vec<(&str, &str, u64)> = evidence
            .iter()
            .map(|fact| {
                (
                    fact.span_text.as_str(),
                    fact.detail.as_deref().unwrap_or(""),
                    fact.span_start,
                )
            })
            .collect();
        // The sentences, with their own offsets, not the paragraph; a
        // normal finding never; a sentence inside a span already taken
        // (the abnormal skin finding) not again.
        assert_eq!(
            spans,
            [
                ("He finished a recent antibiotic course last week.", "feature", 30),
                ("Now watery diarrheas, 9 a day;", "feature", 80),
                ("Dry mucosa. Recent antibiotic rash.", "abnormal_exam", 300),
            ]
        );
        for fact in &evidence {
            let start = fact.span_start as usize;
            if start < history.len() {
                assert_eq!(&history[start..fact.span_end as usize], fact.span_text);
            }
        }
        // A diagnosis without features: the rule takes nothing.
        assert!(derive(&lexicon, &ontology, &facts[..1], "Sarcoidosis", &[]).is_empty());
    }

    #[test]
    fn abnormal_examination_findings_are_evidence_and_a_missing_result_never_is() {
        let lexicon = Lexicon::load(&pack()).unwrap();
        let ontology = Ontology::load(&pack()).unwrap();
        let facts = [
            fact(
                "exam",
                "Skin Examination",
                "abnormal",
                "exam",
                "Tender erythematous nodules",
                0,
            ),
            fact("exam", "Heart", "normal", "exam", "Regular rate and rhythm", 40),
            fact(
                "test_result",
                "Stool toxin for the disease",
                "unknown",
                "labs",
                "Not specified",
                80,
            ),
            fact("test_result", "Chest X-ray", "unknown", "labs", "Pending.", 100),
        ];
        let evidence = derive(&lexicon, &ontology, &facts, "Sarcoidosis", &[]);
        let spans: Vec<(&str, &str)> = evidence
            .iter()
            .map(|fact| (fact.span_text.as_str(), fact.detail.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(spans, [("Tender erythematous nodules", "abnormal_exam")]);
        assert!(lexicon.is_unavailable("Not specified"));
        assert!(lexicon.is_unavailable("was not performed."));
        assert!(lexicon.is_unavailable("Pending, to follow"));
        assert!(!lexicon.is_unavailable("Pendingly slow"));
        assert!(!lexicon.is_unavailable("Positive"));
        // The decisive pick passes over a result that is not there, even
        // one whose label holds a confirming phrase; given one, it takes it.
        let pick = |span: &str| {
            let named = [fact(
                "test_result",
                "Stool C. diff toxin",
                "unknown",
                "labs",
                span,
                0,
            )];
            crate::findings::decisive(&lexicon, &ontology, &named, "Clostridioides difficile colitis").0
        };
        assert!(pick("Positive").iter().any(|fact| fact.name == "test_result"));
        let decisive = pick("Not specified");
        assert!(
            decisive.iter().all(|fact| fact.name != "test_result"),
            "{decisive:?}"
        );
    }

    #[test]
    fn the_rule_takes_the_decisive_result_naming_and_confirming_findings_and_abnormal_studies() {
        let lexicon = Lexicon::load(&pack()).unwrap();
        let ontology = Ontology::load(&pack()).unwrap();
        let facts = [
            fact("symptom", "fever", "present", "history", "fever", 0),
            fact(
                "history",
                "family",
                "stated",
                "history",
                "Mother had myasthenia gravis",
                10,
            ),
            fact(
                "test_result",
                "Chest CT",
                "abnormal",
                "labs",
                "Anterior mediastinal mass",
                50,
            ),
            fact("test_result", "Sodium", "abnormal", "labs", "128 mmol/L", 90),
            fact(
                "test_result",
                "Acetylcholine receptor antibodies",
                "abnormal",
                "labs",
                "Positive",
                110,
            ),
        ];
        let decisive = [Fact {
            kind: "decisive".into(),
            name: "test_result".into(),
            value: facts[4].name.clone(),
            ..facts[4].clone()
        }];
        let evidence = derive(&lexicon, &ontology, &facts, "Myasthenia gravis", &decisive);
        let rules: Vec<(&str, &str)> = evidence
            .iter()
            .map(|fact| (fact.span_text.as_str(), fact.detail.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            rules,
            [
                ("Mother had myasthenia gravis", "names_diagnosis"),
                ("Anterior mediastinal mass", "abnormal_study"),
                ("Positive", "decisive"),
            ]
        );
        assert!(
            evidence
                .iter()
                .all(|fact| fact.kind == KIND && fact.origin == "reference")
        );
    }
}
