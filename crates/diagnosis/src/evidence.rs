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
//!   5. `abnormal_exam`: every examination finding that reads abnormal.
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
