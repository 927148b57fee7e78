//! Cancer type, stage, metastatic status, surgery, prior lines, ECOG,
//! comorbidities and negated/uncertain findings.

use super::Found;
use super::lexicon::{Lexicon, PhraseSet, Words};
use super::text::Tokens;

#[allow(clippy::too_many_arguments)]
pub(super) fn push(
    out: &mut Vec<Found>,
    tokens: &Tokens<'_>,
    kind: &'static str,
    name: &str,
    value: &str,
    polarity: &'static str,
    certainty: &'static str,
    detail: Option<String>,
    first: usize,
    last: usize,
) {
    let (start, end) = tokens.span(first, last);
    out.push(Found {
        kind,
        name: name.to_string(),
        value: value.to_string(),
        polarity,
        certainty,
        detail,
        start,
        end,
        derived: false,
        key: None,
    });
}

/// The primary cancer type named outright (`NSCLC`, `breast IDC`, `mCRPC`):
/// the first mention outside family history.
pub fn cancer_type(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    clause: (usize, usize),
    out: &mut Vec<Found>,
) -> bool {
    if lexicon.family_words.find(tokens, clause.0, clause.1).is_some() {
        return false;
    }
    for index in clause.0..clause.1 {
        if let Some((length, value)) = lexicon.cancer_types.at(tokens, index) {
            push(
                out,
                tokens,
                "cancer_type",
                "primary",
                value,
                "affirmed",
                "certain",
                None,
                index,
                index + length - 1,
            );
            return true;
        }
    }
    false
}

/// The primary cancer type from an organ and a histology written near each
/// other (`adenocarcinoma of the RUL`, `low rectal adenocarcinoma`,
/// `pancreatic tail adenocarcinoma`): within `window` words, over the
/// `clauses` given (one clause, or every clause of the note with a wider
/// window: a specimen header, then its diagnosis). An organ beside a
/// metastasis or lesion word (`lung metastases`) or a histology after one
/// (`metastatic adenocarcinoma`) is a deposit, not the primary; clauses
/// about a relative are skipped.
pub fn organ_cancer_type(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    clauses: &[(usize, usize)],
    window: usize,
    out: &mut Vec<Found>,
) -> bool {
    let deposit = |index: usize, clause: (usize, usize)| {
        (index > clause.0 && lexicon.metastasis_words.starts(tokens, index - 1))
            || lexicon.metastasis_words.starts(tokens, index + 1)
    };
    let clauses: Vec<(usize, usize)> = clauses
        .iter()
        .copied()
        .filter(|clause| lexicon.family_words.find(tokens, clause.0, clause.1).is_none())
        .collect();
    let mut histologies = Vec::new();
    let mut organs = Vec::new();
    for &clause in &clauses {
        let mut index = clause.0;
        while index < clause.1 {
            if let Some(length) = lexicon.histologies.len_at(tokens, index) {
                if !deposit(index, clause) {
                    histologies.push((index, index + length - 1));
                }
                index += length;
            } else if let Some((length, value)) = lexicon.organs.at(tokens, index) {
                let last = index + length - 1;
                let site_lesion = lexicon.metastatic.sites.starts(tokens, index)
                    && (lexicon.site_lesion_words.starts(tokens, last + 1)
                        || (index > clause.0 && lexicon.site_lesion_words.starts(tokens, index - 1)));
                if !deposit(index, clause) && !deposit(last, clause) && !site_lesion {
                    organs.push((index, last, value));
                }
                index += length;
            } else {
                index += 1;
            }
        }
    }
    for (index, last, value) in organs {
        let near = histologies.iter().find(|(first, end)| {
            (*first > last && *first - last <= window) || (*end < index && index - *end <= window)
        });
        if let Some(&(first, end)) = near {
            push(
                out,
                tokens,
                "cancer_type",
                "primary",
                value,
                "affirmed",
                "certain",
                None,
                index.min(first),
                last.max(end),
            );
            return true;
        }
    }
    false
}

/// Surgery status: resected (a procedure done), unresected (judged
/// unresectable or inoperable) or not_done (declined, deferred, not yet),
/// with the note's title read for each clause (the extractor reads it
/// once and calls [`surgery_in`]).
#[cfg(test)]
pub fn surgery(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    surgery_in(
        lexicon,
        tokens,
        clause,
        preoperative_note(lexicon, tokens),
        note_year(tokens),
        out,
    )
}

/// The note's own year: the first year (`19xx`, `20xx`) of its first three
/// lines (`Date: 11/30/2026`, `12/02/2026 | …`).
pub fn note_year(tokens: &Tokens<'_>) -> Option<u32> {
    let mut lines = 0;
    for index in 0..tokens.len() {
        if index > 0 && tokens.opens_line(index) {
            lines += 1;
            if lines == 3 {
                return None;
            }
        }
        if let Some(year) = year_at(tokens, index) {
            return Some(year);
        }
    }
    None
}

/// A year written at token `index` (`2023`).
fn year_at(tokens: &Tokens<'_>, index: usize) -> Option<u32> {
    let raw = tokens.raw(index);
    (raw.len() == 4
        && (raw.starts_with("19") || raw.starts_with("20"))
        && raw.bytes().all(|b| b.is_ascii_digit()))
    .then(|| raw.parse().ok())
    .flatten()
}

/// Whether the note's first line (its title) makes it a pre-operative note
/// (`SURGICAL ONCOLOGY — PRE-OPERATIVE H&P`, `Preop visit`).
pub fn preoperative_note(lexicon: &Lexicon, tokens: &Tokens<'_>) -> bool {
    let end = (1..tokens.len())
        .find(|&index| tokens.opens_line(index))
        .unwrap_or(tokens.len());
    lexicon.surgery.preoperative_titles.find(tokens, 0, end).is_some()
}

/// [`surgery`] for a note already known to be pre-operative or not: there
/// an operation named with no word that it was done (`s/p`, a pathologic
/// TNM, a margin) is planned, and `post-op` tells of the time after it.
pub fn surgery_in(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    clause: (usize, usize),
    preoperative: bool,
    note_year: Option<u32>,
    out: &mut Vec<Found>,
) -> bool {
    let words = &lexicon.surgery;
    let (start, end) = clause;
    let mut procedure: Option<(usize, usize)> = None;
    let mut unresected: Option<(usize, usize)> = None;
    let mut generic: Option<usize> = None;
    let mut resected_word: Option<usize> = None;
    let mut not_done_phrase: Option<(usize, usize)> = None;
    let mut alone: Option<(usize, usize)> = None;
    let mut index = start;
    while index < end {
        if let Some(length) = words.unfit_cues.len_at(tokens, index) {
            let reach = (index + length..(index + length + 3).min(end))
                .find(|&next| words.procedures.starts(tokens, next) || words.words.starts(tokens, next));
            if let Some(target) = reach {
                let target_end = target + words.procedures.len_at(tokens, target).unwrap_or(1);
                unresected.get_or_insert((index, target_end));
                index = target_end;
                continue;
            }
        }
        if let Some(length) = words.unresected.len_at(tokens, index) {
            unresected.get_or_insert((index, index + length));
            index += length;
            continue;
        }
        if let Some(length) = words.procedures.len_at(tokens, index) {
            procedure.get_or_insert((index, index + length));
            index += length;
            continue;
        }
        if let Some(length) = words.not_done_phrases.len_at(tokens, index) {
            not_done_phrase.get_or_insert((index, index + length));
            index += length;
            continue;
        }
        if words.words.starts(tokens, index) {
            generic.get_or_insert(index);
        }
        if words.resected_words.starts(tokens, index) {
            resected_word.get_or_insert(index);
        }
        if let Some(length) = words.resected_alone.len_at(tokens, index).or_else(|| {
            words
                .after_operation
                .len_at(tokens, index)
                .filter(|_| !preoperative)
        }) {
            alone.get_or_insert((index, index + length));
            index += length;
            continue;
        }
        index += 1;
    }
    let name = |span: Option<(usize, usize)>| {
        span.map_or_else(
            || "surgery".to_string(),
            |(first, end)| tokens.lower[tokens.tokens[first].start..tokens.tokens[end - 1].end].to_string(),
        )
    };
    let bounds = |points: &[Option<usize>]| {
        let first = points.iter().flatten().min().copied();
        let last = points.iter().flatten().max().copied();
        first.zip(last)
    };
    if let Some((first, after)) = unresected {
        let (first, last) = bounds(&[
            Some(first),
            Some(after - 1),
            procedure.map(|(_, end)| end - 1),
            procedure.map(|(first, _)| first),
        ])
        .unwrap_or((first, after - 1));
        push(
            out,
            tokens,
            "surgery",
            &name(procedure),
            "unresected",
            "affirmed",
            "certain",
            None,
            first,
            last,
        );
        return true;
    }
    let target = procedure.map(|(first, _)| first).or(generic);
    let Some(target) = target else {
        // `Adjuvant tx to be decided post-op`: a margin or `post-op` in a
        // plan tells of an operation to come.
        let alone = alone.filter(|_| words.planned_cues.find(tokens, start, end).is_none());
        if let Some((first, after)) = resected_word.map(|word| (word, word + 1)).or(alone) {
            push(
                out,
                tokens,
                "surgery",
                "surgery",
                "resected",
                "affirmed",
                "certain",
                None,
                first,
                after - 1,
            );
            return true;
        }
        if let Some((first, after)) = not_done_phrase {
            push(
                out,
                tokens,
                "surgery",
                "surgery",
                "not_done",
                "affirmed",
                "uncertain",
                None,
                first,
                after - 1,
            );
            return true;
        }
        return false;
    };
    let target_last = procedure.map_or(target, |(_, end)| end - 1);
    let is_surgical = |index: usize| {
        words.words.starts(tokens, index)
            || procedure.is_some_and(|(first, end)| (first..end).contains(&index))
    };
    // A not-done cue: declined/deferred anywhere, or a negation within a
    // few words of a surgery word (`no surgery`, `surgery not yet performed`).
    let cue = (start..end).find_map(|index| {
        if words.not_done_cues.starts(tokens, index) {
            return Some((index, target));
        }
        if !words.negations.starts(tokens, index) {
            return None;
        }
        // Not across an arrow, a colon, a comma or a bracket (`no ulceration
        // -> WLE`, `no LVI, lobectomy`).
        let after = (index + 1..(index + 5).min(end))
            .take_while(|&next| !matches!(tokens.lower(next), ">" | "→" | ":" | "," | "(" | ")" | ";"))
            .find(|&next| is_surgical(next));
        // After the surgical word only `not`/`never` negate it (`surgery not
        // performed`); `lobectomy, no adjuvant therapy` is about the next.
        let before = matches!(tokens.lower(index), "not" | "never")
            .then(|| {
                (index.saturating_sub(3).max(start)..index)
                    .rev()
                    .find(|&previous| is_surgical(previous))
            })
            .flatten();
        after.or(before).map(|surgical| (index, surgical))
    });
    if let Some((cue, surgical)) = cue {
        let (first, last) = (
            cue.min(surgical),
            cue.max(surgical).max(if procedure.is_some() {
                target_last
            } else {
                surgical
            }),
        );
        push(
            out,
            tokens,
            "surgery",
            &name(procedure),
            "not_done",
            "affirmed",
            "certain",
            None,
            first,
            last,
        );
        return true;
    }
    // A surgery named only by a noun (`surgery after completion of AC`) is
    // read when a plan goes with it.
    let planned_noun = matches!(
        tokens.lower(target),
        "surgery" | "operation" | "resection" | "excision"
    ) && words.planned_cues.find(tokens, start, end).is_some();
    if procedure.is_none() && resected_word.is_none() && !planned_noun {
        return false;
    }
    let done = resected_before(&words.done_before, tokens, target, start).or_else(|| {
        resected_before(&words.time_before, tokens, target, start)
            .filter(|_| !preoperative && words.planned_cues.find(tokens, start, end).is_none())
    });
    let done_after = procedure.and_then(|(_, after)| done_after(words, tokens, after, end));
    // `then TME`: the next step of a plan, unless told in the past.
    let then = words
        .planned_before
        .find(tokens, target.saturating_sub(3).max(start), target)
        .filter(|&cue| {
            let after = cue + words.planned_before.len_at(tokens, cue).unwrap_or(1);
            words.past_words.find(tokens, after, target).is_none()
        });
    // A date or margin right after the procedure says it was done, unless
    // the plan is named before it (`Plan left mastectomy 06/2024`).
    // In a pre-operative note only a pathologic TNM or a margin after the
    // operation says it was done, or a date in a year before the note's
    // own (`WLE + SLNB 06/2023` in a note of 2026); another date there is
    // the day it is booked for.
    let done_after = done_after.filter(|&after| {
        !preoperative
            || !tokens.lower(after).starts_with(|c: char| c.is_ascii_digit())
            || (after..(after + 8).min(end)).any(|index| {
                year_at(tokens, index).is_some_and(|year| note_year.is_some_and(|note| year < note))
            })
    });
    let planned = words
        .planned_cues
        .find(tokens, start, end)
        .filter(|&cue| done_after.is_none() || cue < target)
        .or(then)
        .or(not_done_phrase.map(|(first, _)| first))
        .or_else(|| (preoperative && done_after.is_none()).then_some(target));
    if done.is_none()
        && let Some(planned) = planned
    {
        let (first, last) = (planned.min(target), planned.max(target_last));
        push(
            out,
            tokens,
            "surgery",
            &name(procedure),
            "not_done",
            "affirmed",
            "uncertain",
            None,
            first,
            last,
        );
        return true;
    }
    let first = done.unwrap_or(target);
    let last = resected_word.map_or(target_last, |word| word.max(target_last));
    let last = done_after.map_or(last, |after| after.max(last));
    push(
        out,
        tokens,
        "surgery",
        &name(procedure),
        "resected",
        "affirmed",
        "certain",
        None,
        first,
        last,
    );
    true
}

/// The note's surgery status from every clause's statement: a resection
/// by a definitive procedure anywhere (the primary stays resected whatever
/// followed: a recurrence, an unresectable relapse), else the first
/// statement that is not only a diagnostic procedure (`TURBT`, then
/// `declined cystectomy`), else the first.
pub fn current_surgery(lexicon: &Lexicon, statements: Vec<Found>) -> Option<Found> {
    let diagnostic = |fact: &Found| {
        let tokens = Tokens::new(&fact.name);
        lexicon.surgery.diagnostic.len_at(&tokens, 0) == Some(tokens.len())
    };
    let definitive = |fact: &&Found| !diagnostic(fact);
    statements
        .iter()
        .filter(definitive)
        .find(|fact| fact.value == "resected" && fact.certainty == "certain")
        .or_else(|| statements.iter().find(definitive))
        .or_else(|| statements.first())
        .cloned()
}

/// A note that states nothing of surgery but treats with definitive
/// non-surgical therapy (`definitive chemoradiation`, `radical RT`; the
/// pack's `non_surgical`): the surgery is `not_done`, as that treatment
/// takes its place.
pub fn non_surgical(lexicon: &Lexicon, tokens: &Tokens<'_>) -> Option<Found> {
    let words = &lexicon.surgery.non_surgical;
    let first = words.find(tokens, 0, tokens.len())?;
    let length = words.len_at(tokens, first).unwrap_or(1);
    let mut out = Vec::new();
    push(
        &mut out,
        tokens,
        "surgery",
        "surgery",
        "not_done",
        "affirmed",
        "certain",
        None,
        first,
        first + length - 1,
    );
    out.pop()
}

/// A date, a year, a pathologic TNM or a margin status right after a
/// procedure (`lap R hemi 04/2024: pT4a`, `IDS 11/2023 (R0)`, `lobectomy
/// in 2021`): the token that says it was done.
fn done_after(
    words: &super::lexicon::SurgeryWords,
    tokens: &Tokens<'_>,
    after: usize,
    end: usize,
) -> Option<usize> {
    let mut index = after;
    while index < end && index < after + 5 {
        let raw = tokens.raw(index);
        let lower = tokens.lower(index);
        let year = year_at(tokens, index).is_some();
        let date = raw.bytes().all(|b| b.is_ascii_digit())
            && !raw.is_empty()
            && raw.len() <= 2
            && matches!(tokens.lower(index + 1), "/" | ".")
            && tokens.lower(index + 2).bytes().all(|b| b.is_ascii_digit())
            && !tokens.lower(index + 2).is_empty();
        let pathologic = (lower.starts_with("pt") || lower.starts_with("ypt"))
            && lower
                .trim_start_matches('y')
                .as_bytes()
                .get(2)
                .is_some_and(|b| b.is_ascii_digit() || *b == b'x' || *b == b'i');
        if year || date || pathologic || words.done_after.starts(tokens, index) {
            return Some(index);
        }
        if let Some(length) = words
            .done_links
            .len_at(tokens, index)
            .or_else(|| words.procedures.len_at(tokens, index))
            .or_else(|| words.diagnostic.len_at(tokens, index))
        {
            index += length;
            continue;
        }
        return None;
    }
    None
}

/// `s/p`, `status post`, `underwent` right before the procedure.
fn resected_before(done_before: &Words, tokens: &Tokens<'_>, target: usize, start: usize) -> Option<usize> {
    done_before.find(tokens, target.saturating_sub(4).max(start), target)
}

/// `ECOG 1`, `ECOG PS 0`, `ECOG performance status of 2`.
pub fn ecog(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) -> bool {
    for index in clause.0..clause.1 {
        if !lexicon.ecog.starts(tokens, index) {
            continue;
        }
        let stop = (index + 6).min(clause.1);
        if let Some(score) =
            (index + 1..stop).find(|&next| matches!(tokens.lower(next), "0" | "1" | "2" | "3" | "4"))
        {
            let value = tokens.lower(score).to_string();
            push(
                out, tokens, "ecog", "ECOG", &value, "affirmed", "certain", None, index, score,
            );
            return true;
        }
    }
    false
}

fn cue_before(tokens: &Tokens<'_>, index: usize, clause_start: usize, cues: &Words) -> Option<usize> {
    cues.find(tokens, index.saturating_sub(6).max(clause_start), index)
}

/// Comorbidities, affirmed or negated (`no history of diabetes`).
pub fn comorbidities(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    labelled_findings(
        lexicon,
        tokens,
        clause,
        &lexicon.comorbidities,
        "comorbidity",
        out,
    );
}

/// Symptoms and signs with polarity and certainty (`denies weight loss`,
/// `no nodal involvement`, `possible pleural effusion`).
pub fn findings(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    labelled_findings(lexicon, tokens, clause, &lexicon.findings, "finding", out);
}

fn labelled_findings(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    clause: (usize, usize),
    phrases: &PhraseSet<String>,
    kind: &'static str,
    out: &mut Vec<Found>,
) {
    let mut index = clause.0;
    while index < clause.1 {
        let Some((length, name)) = phrases.at(tokens, index) else {
            index += 1;
            continue;
        };
        let last = index + length - 1;
        let negation = cue_before(tokens, index, clause.0, &lexicon.finding_negations);
        let uncertain = cue_before(tokens, index, clause.0, &lexicon.uncertain_cues);
        let (value, polarity, first) = match negation {
            Some(cue) => ("absent", "negated", cue),
            None => ("present", "affirmed", index),
        };
        let (certainty, first) = match uncertain {
            Some(cue) => ("uncertain", first.min(cue)),
            None => ("certain", first),
        };
        push(
            out, tokens, kind, name, value, polarity, certainty, None, first, last,
        );
        index += length;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::tests::run;

    #[test]
    fn surgery_statuses() {
        let got = run("She is s/p Whipple with R0 margins.", surgery);
        assert_eq!(got[0].1, "resected");
        assert_eq!(got[0].2, "s/p Whipple");
        assert_eq!(run("The patient declined surgery.", surgery)[0].1, "not_done");
        assert_eq!(
            run("Tumour judged unresectable owing to SMA encasement", surgery)[0].1,
            "unresected"
        );
        assert_eq!(
            run("Has not undergone any operation yet", surgery)[0].1,
            "not_done"
        );
        assert_eq!(run("Right upper lobectomy in 2023", surgery)[0].1, "resected");
        assert!(
            run("Surgical oncology opinion welcome", surgery)
                .iter()
                .all(|fact| fact.1 != "resected")
        );
    }

    /// `post-op` or a margin in a plan is an operation to come, not one done.
    #[test]
    fn post_op_in_a_plan_is_no_resection() {
        assert!(run("Adjuvant tx to be decided post-op.", surgery).is_empty());
        assert!(run("Adjuvant therapy will be discussed post-op.", surgery).is_empty());
        assert_eq!(run("CEA normal post-op.", surgery)[0].1, "resected");
    }

    /// "Not a (surgical) candidate" is `unresected`, as the cohort writes it
    /// and the judge reads it; declining or deferring is `not_done`.
    #[test]
    fn not_a_candidate_is_unresected() {
        assert_eq!(
            run(
                "Thoracic surgery: not a candidate for upfront resection given bulky nodes",
                surgery
            )[0]
            .1,
            "unresected"
        );
        assert_eq!(
            run("He is not a surgical candidate (frailty).", surgery)[0].1,
            "unresected"
        );
        assert_eq!(
            run("Cystectomy deferred at her request", surgery)[0].1,
            "not_done"
        );
    }

    #[test]
    fn new_procedures_read_as_resected() {
        assert_eq!(run("s/p radical nephrectomy 2021", surgery)[0].1, "resected");
        assert_eq!(run("Underwent TURBT last month", surgery)[0].1, "resected");
    }

    #[test]
    fn named_cancer_types() {
        for (text, value) in [
            ("Dx: mCRPC on ADT", "prostate"),
            ("known HNSCC of the oropharynx", "head_and_neck"),
            ("clear cell RCC, s/p nephrectomy", "renal"),
            ("muscle-invasive urothelial carcinoma", "bladder"),
            ("FIGO IIIC high-grade serous carcinoma", "ovarian"),
            ("HCC on a background of cirrhosis", "hepatocellular"),
            ("intrahepatic cholangiocarcinoma", "cholangiocarcinoma"),
            ("IDH-wildtype glioblastoma", "glioma"),
            ("GOJ adenocarcinoma Siewert II", "gastric"),
            ("DLBCL, stage II bulky", "lymphoma"),
            ("PDAC of the uncinate", "pancreatic"),
        ] {
            assert_eq!(run(text, cancer_type)[0].1, value, "{text}");
        }
        assert!(run("Mother had breast cancer at 50", cancer_type).is_empty());
    }

    #[test]
    fn more_names_of_the_vocabulary_cancers_and_none_for_others() {
        for (text, value) in [
            (
                "upper tract urothelial carcinoma (UTUC) of the left ureter",
                "bladder",
            ),
            ("metastatic papillary RCC", "renal"),
            ("hepatoma in a cirrhotic liver", "hepatocellular"),
            ("carcinoma of the pancreas head with SMV abutment", "pancreatic"),
            ("perihilar cholangiocarcinoma (Klatskin)", "cholangiocarcinoma"),
            ("iCCA, FGFR2 fusion", "cholangiocarcinoma"),
            ("GBM, IDH-wildtype", "glioma"),
            ("cervical squamous cell carcinoma, FIGO IB2", "cervical"),
            ("OPSCC, p16-positive", "head_and_neck"),
        ] {
            assert_eq!(
                run(text, cancer_type).first().map(|fact| fact.1.as_str()),
                Some(value),
                "{text}"
            );
        }
        // Cancers outside the vocabulary are none of its types.
        for text in [
            "papillary thyroid carcinoma",
            "Merkel cell carcinoma of the cheek",
            "gallbladder adenocarcinoma",
            "mesothelioma of the pleura",
        ] {
            assert!(run(text, cancer_type).is_empty(), "{text}");
        }
    }

    /// The organ rule over each clause, then over the whole note.
    fn organ(text: &str) -> Vec<(String, String, String)> {
        let lexicon = Lexicon::builtin().unwrap();
        let tokens = Tokens::new(text);
        let clauses = tokens.clauses();
        let mut out = Vec::new();
        let _ = clauses
            .iter()
            .any(|clause| organ_cancer_type(lexicon, &tokens, &[*clause], lexicon.organ_window, &mut out))
            || organ_cancer_type(lexicon, &tokens, &clauses, lexicon.organ_reach, &mut out);
        out.into_iter()
            .map(|fact| (fact.name, fact.value, text[fact.start..fact.end].to_string()))
            .collect()
    }

    #[test]
    fn a_lesion_names_a_primary_except_in_an_organ_metastases_go_to() {
        assert_eq!(
            organ("incidental gastric lesion at OGD. ESD: tubular adenocarcinoma, R0")
                .first()
                .map(|fact| fact.1.as_str()),
            Some("gastric")
        );
        assert!(organ("two liver lesions, biopsy: adenocarcinoma").is_empty());
        // Hilar nodes are the lung's, not a bile duct's.
        assert_eq!(
            organ("right upper lobectomy; adenocarcinoma with 1/4 hilar nodes")
                .first()
                .map(|fact| fact.1.as_str()),
            Some("nsclc")
        );
    }

    #[test]
    fn an_organ_in_a_header_and_a_histology_below_name_the_primary() {
        assert_eq!(
            organ("SPECIMEN: Kidney, left, partial nephrectomy\n- Diagnosis: clear cell carcinoma, grade 2")
                [0]
            .1,
            "renal"
        );
        assert!(organ("Mother: ovarian cancer.\nHe has a carcinoma").is_empty());
    }

    /// The note's status from all its surgery statements.
    fn note_surgery(text: &str) -> Option<String> {
        let lexicon = Lexicon::builtin().unwrap();
        let tokens = Tokens::new(text);
        let mut statements = Vec::new();
        for clause in tokens.clauses() {
            surgery(lexicon, &tokens, clause, &mut statements);
        }
        current_surgery(lexicon, statements).map(|fact| fact.value)
    }

    #[test]
    fn a_resection_stays_the_status_after_later_events() {
        assert_eq!(
            note_surgery("Surgery was deferred during COVID. Anterior resection 2021, R0. 2024: unresectable pelvic recurrence.")
                .as_deref(),
            Some("resected")
        );
        // A diagnostic procedure gives way to the definitive one's status.
        assert_eq!(
            note_surgery("Underwent TURBT in May. Radical cystectomy declined by the patient.").as_deref(),
            Some("not_done")
        );
        assert_eq!(
            note_surgery("Underwent TURBT in May.").as_deref(),
            Some("resected")
        );
    }

    #[test]
    fn a_done_procedure_is_not_a_plan_and_a_later_no_is_not_its_negation() {
        assert_eq!(
            run(
                "I would welcome your view on Ms K., who underwent a hemicolectomy in 2022",
                surgery
            )[0]
            .1,
            "resected"
        );
        assert_eq!(
            run(
                "treated with right pneumonectomy, no adjuvant chemotherapy",
                surgery
            )[0]
            .1,
            "resected"
        );
        assert_eq!(
            run("Recommendation: lumpectomy and SLNB", surgery)[0].1,
            "not_done"
        );
    }

    #[test]
    fn more_forms_of_done_planned_and_not_done_surgery() {
        for (text, status) in [
            ("58M s/p lap R hemi 04/2024: pT4a pN2b (9/31), R0.", "resected"),
            ("NACT x3 → IDS 11/2023 (R0) → carbo/pacli x3", "resected"),
            ("choroidal melanoma 2019 → enucleation (pT3a)", "resected"),
            ("CEA post-op 2.1", "resected"),
            ("neoadjuvant FOLFOX, restaging MRI, then TME", "not_done"),
            ("surgery after completion of the AC phase", "not_done"),
            ("Decision: active surveillance (PSA q6m)", "not_done"),
            (
                "Consensus: borderline resectable (venous) pancreatic adenocarcinoma",
                "not_done",
            ),
            ("he did not accept the surgery", "not_done"),
            ("Patient is not agree for total laryngectomy", "not_done"),
            ("peritoneal disease, not for gastrectomy", "unresected"),
            (
                "Not a candidate for CN given poor risk; not for nephrectomy",
                "unresected",
            ),
            // History told in sequence, and a dated plan.
            ("wide local excision + RT, then adjuvant anastrozole", "resected"),
            (
                "and then was done wide excision and sentinel node biopsy",
                "resected",
            ),
            ("Surgical note: Plan left mastectomy + ALND 06/2024", "not_done"),
        ] {
            let got = run(text, surgery);
            assert_eq!(got.first().map(|fact| fact.1.as_str()), Some(status), "{text}");
        }
    }

    #[test]
    fn unfit_for_a_procedure_is_unresected() {
        assert_eq!(
            run("Judged unfit for pancreatectomy given frailty", surgery)[0].1,
            "unresected"
        );
        assert!(
            run("Not fit for chemotherapy", surgery)
                .iter()
                .all(|fact| fact.1 != "unresected")
        );
        assert_eq!(
            run("Listed for robotic prostatectomy next month", surgery)[0].1,
            "not_done"
        );
    }

    #[test]
    fn organ_and_histology_name_the_primary() {
        let got = organ("Biopsy: adenocarcinoma of the RUL, TTF-1 positive");
        assert_eq!(
            (got[0].1.as_str(), got[0].2.as_str()),
            ("nsclc", "adenocarcinoma of the RUL")
        );
        assert_eq!(organ("distal oesophagus adenocarcinoma")[0].1, "esophageal");
        assert_eq!(organ("carcinoma arising in the cervix")[0].1, "cervical");
        assert!(organ("Lung metastases from a known adenocarcinoma").is_empty());
        assert!(organ("liver: metastatic adenocarcinoma").is_empty());
    }

    #[test]
    fn negated_findings_and_comorbidities() {
        let got = run(
            "Denies weight loss or night sweats; possible pleural effusion",
            findings,
        );
        assert_eq!(got[0].1, "absent");
        assert_eq!(got[1].1, "absent");
        assert_eq!(got[2].1, "present");
        let got = run("No history of diabetes. Known HTN", comorbidities);
        assert_eq!((got[0].0.as_str(), got[0].1.as_str()), ("diabetes", "absent"));
        assert_eq!(
            (got[1].0.as_str(), got[1].1.as_str()),
            ("hypertension", "present")
        );
    }

    /// In a note titled pre-operative, an operation named with no word that
    /// it was done is the one to come, a date after it is the day booked,
    /// and `post-op` is the time after it; `s/p`, a pathologic TNM or a
    /// margin still say an earlier one was done. Elsewhere `post-op` alone
    /// still says an operation was done.
    #[test]
    fn a_pre_operative_note_names_the_operation_to_come() {
        let note = |text: &str| note_surgery(text);
        assert_eq!(
            note("Thoracic Surgery - Preop H&P\nProcedure: robotic RUL lobectomy, 12/14/2026\nPlan: VTE ppx post-op.")
                .as_deref(),
            Some("not_done")
        );
        assert_eq!(
            note("PRE-OPERATIVE ASSESSMENT\nDVT prophylaxis post-op; adjuvant therapy per path.").as_deref(),
            None
        );
        assert_eq!(
            note("Pre-operative H&P\nOnc history: 02/2024 lap sigmoidectomy -> pT3 pN1b M0. Now liver mets.")
                .as_deref(),
            Some("resected")
        );
        assert_eq!(
            note("Pre-op visit\ns/p right hemicolectomy 2019. Planned: liver resection.").as_deref(),
            Some("resected")
        );
        assert_eq!(
            note("Clinic letter\nCEA normal post-op.").as_deref(),
            Some("resected")
        );
        // A negation before an arrow says nothing of the operation after it.
        assert_eq!(
            note("Clinic note\nBreslow 2.8 mm, no ulceration -> WLE + SLNB 06/2023").as_deref(),
            Some("resected")
        );
        // An operation dated in a year before the note's own was done.
        assert_eq!(
            note("Pre-operative H&P — melanoma\n12/02/2026 Planned: groin dissection.\nOnc Hx: WLE + SLNB (0/2) 06/2023, pT3a pN0.")
                .as_deref(),
            Some("resected")
        );
        assert_eq!(
            note("Pre-op H&P\nDate: 11/20/2026\nProcedure: radical nephrectomy, 12/01/2026").as_deref(),
            Some("not_done")
        );
    }

    /// `after`/`following` before an operation say it was done, unless the
    /// clause names a plan (`Plan adjuvant pembrolizumab after surgery`).
    #[test]
    fn after_surgery_in_a_plan_is_to_come() {
        assert_eq!(
            run("Plan adjuvant pembro x 15 after surgery.", surgery)[0].1,
            "not_done"
        );
        assert_eq!(run("Recovered well after lobectomy.", surgery)[0].1, "resected");
    }

    /// An arrow and a staging node procedure between an operation and its
    /// pathology or date still tie them (`sigmoidectomy -> pT3`,
    /// `lumpectomy + SLNB 07/2026: ypT1b … planned cycles`).
    #[test]
    fn arrows_and_node_staging_tie_an_operation_to_its_pathology() {
        assert_eq!(
            run("lap sigmoidectomy -> pT3 pN1b (3/19) M0; planned review", surgery)[0].1,
            "resected"
        );
        assert_eq!(
            run(
                "L lumpectomy + SLNB 07/2026: ypT1b, 5 of 14 planned cycles given",
                surgery
            )[0]
            .1,
            "resected"
        );
    }
}
