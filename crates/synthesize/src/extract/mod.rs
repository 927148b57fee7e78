//! The fact extractor: a rule-based pass, plus any extra [`FactSource`]s
//! (an LLM-assisted pass later), all checked by the same span verification.
//!
//! The rules read a note with the word lists of [`lexicon::Lexicon`]
//! (`data/packs/oncology/extract.yaml`, drug names from the ontology) and stage
//! with the AJCC tables of `cfeval_guidelines::staging`. A fact the rules
//! compute from other facts rather than read (a stage group from a TNM) has
//! `origin = derived`; every other rule fact has `origin = rule`.

mod clinical;
mod dictation;
pub mod lexicon;
mod lines;
pub mod llm;
mod markers;
pub mod sections;
mod staging;
pub mod text;

use cfeval_schema::{Fact, Section};

use lexicon::Lexicon;
use text::Tokens;

/// A fact found by a rule, before it is placed in a section.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub kind: &'static str,
    pub name: String,
    pub value: String,
    pub polarity: &'static str,
    pub certainty: &'static str,
    pub detail: Option<String>,
    /// Byte offsets into the source text.
    pub start: usize,
    pub end: usize,
    /// Computed from other facts (`origin = derived`), not read.
    pub derived: bool,
    /// What makes two facts of a kind the same (a prior line's drugs).
    pub key: Option<String>,
}

/// A source of facts over a case's text. The rule-based extractor is one;
/// an LLM-assisted pass can be another. Every fact a source returns goes
/// through [`verify_fact`]: a fact whose span is not an exact substring of
/// the source at its offsets is dropped and counted, never kept.
pub trait FactSource: Send + Sync {
    /// The value written to `Fact::origin` (`rule`, `llm`).
    fn origin(&self) -> &str;

    /// Facts for one case. `sections` are the case's sections (with spans).
    fn facts(&self, source_text: &str, sections: &[Section]) -> Result<Vec<Fact>, String>;
}

/// The rule-based extractor (the default source).
#[derive(Debug, Default, Clone, Copy)]
pub struct RuleExtractor;

impl FactSource for RuleExtractor {
    fn origin(&self) -> &str {
        "rule"
    }

    fn facts(&self, source_text: &str, sections: &[Section]) -> Result<Vec<Fact>, String> {
        Ok(extract_facts(source_text, sections))
    }
}

/// Runs every rule over the text and places the facts in sections, with
/// the built-in lexicon (no facts, and an error logged, if it cannot load;
/// `crate::run` refuses to start then).
pub fn extract_facts(source_text: &str, sections: &[Section]) -> Vec<Fact> {
    match Lexicon::builtin() {
        Ok(lexicon) => extract_facts_with(lexicon, source_text, sections),
        Err(error) => {
            tracing::error!(%error, "the extractor lexicon did not load");
            Vec::new()
        }
    }
}

/// Runs every rule over the text with `lexicon`.
pub fn extract_facts_with(lexicon: &Lexicon, source_text: &str, sections: &[Section]) -> Vec<Fact> {
    let mut tokens = Tokens::new(source_text);
    dictation::respell(lexicon, &mut tokens);
    let clauses = tokens.clauses();
    let mut found = Vec::new();
    let mut stage_notes = staging::StageNotes::default();
    let (mut cancer, mut ecog) = (None, false);
    let mut surgeries: Vec<Found> = Vec::new();
    let preoperative = clinical::preoperative_note(lexicon, &tokens);
    let note_year = clinical::note_year(&tokens);
    for &clause in &clauses {
        if cancer.is_none() && clinical::cancer_type(lexicon, &tokens, clause, &mut found) {
            cancer = found.last().map(|fact: &Found| fact.value.clone());
        }
        staging::read_clause(lexicon, &tokens, clause, &mut stage_notes);
        if !tokens.is_question(clause) {
            clinical::surgery_in(lexicon, &tokens, clause, preoperative, note_year, &mut surgeries);
        }
        ecog = ecog || clinical::ecog(lexicon, &tokens, clause, &mut found);
        markers::extract(lexicon, &tokens, clause, &mut found);
        clinical::comorbidities(lexicon, &tokens, clause, &mut found);
        clinical::findings(lexicon, &tokens, clause, &mut found);
    }
    if cancer.is_none() {
        let by_clause = clauses.iter().any(|clause| {
            clinical::organ_cancer_type(lexicon, &tokens, &[*clause], lexicon.organ_window, &mut found)
        });
        if by_clause
            || clinical::organ_cancer_type(lexicon, &tokens, &clauses, lexicon.organ_reach, &mut found)
        {
            cancer = found.last().map(|fact| fact.value.clone());
        }
    }
    let surgery =
        clinical::current_surgery(lexicon, surgeries).or_else(|| clinical::non_surgical(lexicon, &tokens));
    found.extend(surgery);
    lines::prior_lines(lexicon, &tokens, &clauses, &mut found);
    let table = staging::table_for(lexicon, cancer.as_deref(), &found);
    staging::resolve(
        lexicon,
        &tokens,
        cancer.as_deref(),
        table,
        &stage_notes,
        &mut found,
    );
    let mut facts: Vec<Fact> = Vec::with_capacity(found.len());
    let mut seen_lines: Vec<String> = Vec::new();
    for item in found {
        // A biomarker pending or not tested and later resulted (`ALK FISH
        // pending` copied forward, `NGS resulted: ALK negative` in the
        // update) is the result: the later mention replaces the first.
        let resulted = (item.kind == "biomarker" && item.value != "unknown")
            .then(|| {
                facts.iter().position(|fact| {
                    fact.kind == "biomarker" && fact.name == item.name && fact.value == "unknown"
                })
            })
            .flatten();
        if let Some(position) = resulted {
            facts.remove(position);
        }
        // One fact per biomarker, comorbidity and finding: the first mention;
        // one per regimen (its drugs, however written).
        let duplicate = match item.kind {
            "biomarker" | "comorbidity" | "finding" => facts
                .iter()
                .any(|fact| fact.kind == item.kind && fact.name == item.name),
            "prior_line" => {
                let key = item.key.clone().unwrap_or_else(|| normalise_regimen(&item.name));
                if seen_lines.contains(&key) {
                    true
                } else {
                    seen_lines.push(key);
                    false
                }
            }
            _ => false,
        };
        if duplicate {
            continue;
        }
        facts.push(Fact {
            kind: item.kind.to_string(),
            name: item.name,
            value: item.value,
            polarity: item.polarity.to_string(),
            certainty: item.certainty.to_string(),
            detail: item.detail,
            section: sections::section_at(sections, item.start).to_string(),
            span_start: item.start as u64,
            span_end: item.end as u64,
            span_text: source_text[item.start..item.end].to_string(),
            origin: if item.derived { "derived" } else { "rule" }.to_string(),
        });
    }
    facts
}

/// A regimen name for comparison: lower case, drug separators unified.
pub fn normalise_regimen(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower
        .split(['/', '+', ',', '&'])
        .flat_map(|part| part.split(" and "))
        .flat_map(|part| part.split(" plus "))
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    parts.sort_unstable();
    parts.join("/")
}

/// Why a fact's span failed verification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanError {
    pub kind: String,
    pub name: String,
    pub reason: String,
}

impl std::fmt::Display for SpanError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "fact {}/{}: {}", self.kind, self.name, self.reason)
    }
}

/// Checks that a fact's span is an exact, non-empty substring of the source
/// at its byte offsets.
pub fn verify_fact(source_text: &str, fact: &Fact) -> Result<(), SpanError> {
    let error = |reason: String| SpanError {
        kind: fact.kind.clone(),
        name: fact.name.clone(),
        reason,
    };
    let (start, end) = (fact.span_start as usize, fact.span_end as usize);
    if start >= end {
        return Err(error(format!("empty or reversed span {start}..{end}")));
    }
    match source_text.get(start..end) {
        None => Err(error(format!(
            "span {start}..{end} is outside the source ({} bytes) or splits a character",
            source_text.len()
        ))),
        Some(slice) if slice != fact.span_text => Err(error(format!(
            "span {start}..{end} reads {slice:?}, not {:?}",
            fact.span_text
        ))),
        Some(_) => Ok(()),
    }
}

/// Checks every section span (where present) and every fact span.
pub fn verify_spans(source_text: &str, sections: &[Section], facts: &[Fact]) -> Vec<SpanError> {
    let mut errors = Vec::new();
    for section in sections {
        if let (Some(start), Some(end)) = (section.span_start, section.span_end)
            && source_text.get(start as usize..end as usize) != Some(section.text.as_str())
        {
            errors.push(SpanError {
                kind: "section".into(),
                name: section.name.clone(),
                reason: format!("section span {start}..{end} does not read the section text"),
            });
        }
    }
    errors.extend(
        facts
            .iter()
            .filter_map(|fact| verify_fact(source_text, fact).err()),
    );
    errors
}

/// Finds the byte offsets of `needle` in `source_text` for a fact source
/// that only knows the text of its evidence (e.g. an LLM's quote): the
/// offsets when the quote occurs exactly once, else `None`.
pub fn locate_span(source_text: &str, needle: &str) -> Option<(usize, usize)> {
    if needle.is_empty() {
        return None;
    }
    let mut matches = source_text.match_indices(needle);
    let (start, _) = matches.next()?;
    matches.next().is_none().then_some((start, start + needle.len()))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Runs one clause rule over every clause of `text`: (name, value, span
    /// text) of each fact, every span checked.
    pub(crate) fn run<R>(
        text: &str,
        rule: fn(&Lexicon, &Tokens<'_>, (usize, usize), &mut Vec<Found>) -> R,
    ) -> Vec<(String, String, String)> {
        let lexicon = Lexicon::builtin().unwrap();
        let tokens = Tokens::new(text);
        let mut out = Vec::new();
        for clause in tokens.clauses() {
            let _ = rule(lexicon, &tokens, clause, &mut out);
        }
        out.into_iter()
            .map(|fact| {
                assert!(text.get(fact.start..fact.end).is_some());
                (fact.name, fact.value, text[fact.start..fact.end].to_string())
            })
            .collect()
    }

    #[test]
    fn facts_carry_verified_spans_and_sections() {
        let text = "Pathology: invasive ductal carcinoma, grade 2.\nMolecular: ER 90%, PR-neg, HER2 equivocal.\nStage: clinical stage IIB (cT2N1M0).";
        let sections = sections::split(text);
        let facts = extract_facts(text, &sections);
        assert!(verify_spans(text, &sections, &facts).is_empty());
        let find = |kind: &str, name: &str| {
            facts
                .iter()
                .find(|fact| fact.kind == kind && fact.name == name)
                .unwrap()
        };
        assert_eq!(find("cancer_type", "primary").value, "breast");
        assert_eq!(find("cancer_type", "primary").section, "pathology");
        let her2 = find("biomarker", "HER2");
        assert_eq!(
            (her2.value.as_str(), her2.certainty.as_str()),
            ("equivocal", "uncertain")
        );
        assert_eq!(find("biomarker", "ER").value, "positive");
        assert_eq!(find("biomarker", "PR").polarity, "negated");
        assert_eq!(find("stage", "group").detail.as_deref(), Some("IIB"));
        assert_eq!(find("stage", "group").section, "staging");
        assert_eq!(find("stage", "tnm").value, "cT2N1M0");
    }

    /// A test pending in copied-forward text and resulted later is the
    /// result; a result written first stays, whatever comes after it.
    #[test]
    fn a_pending_biomarker_resulted_later_is_the_result() {
        let value = |text: &str, name: &str| {
            let facts = extract_facts(text, &sections::split(text));
            facts
                .iter()
                .find(|fact| fact.kind == "biomarker" && fact.name == name)
                .map(|fact| fact.value.clone())
        };
        let text = "Hx (copied): lung adenocarcinoma. ALK FISH pending.\nUPDATE: NGS resulted, ALK negative.";
        assert_eq!(value(text, "ALK").as_deref(), Some("negative"));
        let text = "Lung adenocarcinoma. ALK negative on IHC. Repeat ALK FISH pending.";
        assert_eq!(value(text, "ALK").as_deref(), Some("negative"));
    }

    /// Definitive non-surgical treatment leaves the surgery not done —
    /// unless the note says otherwise of surgery.
    #[test]
    fn definitive_chemoradiation_leaves_the_surgery_not_done() {
        let surgery = |text: &str| {
            extract_facts(text, &sections::split(text))
                .into_iter()
                .find(|fact| fact.kind == "surgery")
                .map(|fact| fact.value)
        };
        assert_eq!(
            surgery(
                "Base of tongue SCC, cT2 cN2 M0. Tumor board: definitive RT 70 Gy + concurrent cisplatin."
            )
            .as_deref(),
            Some("not_done")
        );
        assert_eq!(
            surgery("Lobectomy 2021. 2024 nodal recurrence: definitive chemoradiation.").as_deref(),
            Some("resected")
        );
        assert_eq!(surgery("Stage IV NSCLC on pembrolizumab."), None);
    }

    #[test]
    fn verification_rejects_wrong_spans() {
        let text = "HER2 positive";
        let mut fact = extract_facts(text, &[]).remove(0);
        assert!(verify_fact(text, &fact).is_ok());
        fact.span_start += 1;
        assert!(verify_fact(text, &fact).is_err());
        fact.span_end = 99;
        assert!(verify_fact(text, &fact).is_err());
        assert_eq!(locate_span("a b a", "b"), Some((2, 3)));
        assert_eq!(locate_span("a b a", "a"), None);
    }

    #[test]
    fn regimen_names_normalise() {
        assert_eq!(
            normalise_regimen("FOLFOX + Bevacizumab"),
            normalise_regimen("bevacizumab/FOLFOX")
        );
        assert_eq!(
            normalise_regimen("carboplatin and pemetrexed"),
            "carboplatin/pemetrexed"
        );
    }
}
