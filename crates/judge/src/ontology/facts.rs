//! What a reply says about the facts of its chart — biomarkers, stage,
//! surgery, progression — read into values the judge compares with the
//! diff ([`Ontology::mentions`]).

use std::collections::BTreeSet;

use super::{Ontology, clauses, words};
use crate::reading::context::{self, Status, tokens};

/// A sign right after a marker's name is its status (`ER+/PR-`, `HER2-`):
/// it is written out (`ER positive /PR negative`) so that it reads as one.
/// A sign after a bare number (`IHC 2+`) is a score, and a hyphen inside a
/// word (`HER2-negative`, `5-FU`) is no sign.
fn signed_statuses(text: &str) -> String {
    let characters: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (index, &character) in characters.iter().enumerate() {
        let sign = match character {
            '+' => Some(" positive "),
            '-' | '−' => Some(" negative "),
            _ => None,
        };
        let ends_word = characters
            .get(index + 1)
            .is_none_or(|next| !next.is_alphanumeric());
        let word: Vec<char> = characters[..index]
            .iter()
            .rev()
            .take_while(|previous| previous.is_alphanumeric())
            .copied()
            .collect();
        // `ER- and PR-positive` suspends a hyphen: no sign.
        let rest: String = characters[index + 1..].iter().collect();
        let suspended = character != '+'
            && [" and ", " or ", " & "]
                .iter()
                .any(|joint| rest.starts_with(joint));
        match sign {
            Some(status) if ends_word && !suspended && word.iter().any(|letter| letter.is_alphabetic()) => {
                out.push_str(status)
            }
            _ => out.push(character),
        }
    }
    out
}
use crate::reading::mention::{marker_reach, stage_mentions};

impl Ontology {
    /// What a text says about one fact kind (`biomarker`, `surgery`,
    /// `stage`, `prior_line`), as values ([`crate::reading::mention`]): for
    /// biomarkers `MARKER:value` (a status value, or the number written:
    /// `TPS <1%` is `PD-L1:1`); for stage `stage:<group>`, `metastatic`,
    /// `non_metastatic`, `locally_advanced`; for surgery `resected`,
    /// `unresected`, `operable`; for prior lines `progression`.
    pub fn mentions(&self, text: &str, kind: &str) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for clause in clauses(text) {
            // Context needs the clause's punctuation (`,` `:` `(` `)`); a
            // stage numeral is read from the words alone (`cT4aN2M0 (III)`).
            let tokens = tokens(&clause);
            match kind {
                "biomarker" => {
                    found.extend(self.biomarker_mentions(&context::tokens(&signed_statuses(&clause))))
                }
                "stage" => found.extend(stage_mentions(&self.mention_vocabulary, &words(&clause))),
                "surgery" => found.extend(self.surgery_mentions(&tokens)),
                _ => {}
            }
            if kind != "biomarker"
                && let Some(set) = self.mentions.get(kind)
            {
                // A fact named as a contingency or hypothesis ("lorlatinib
                // reserved for PD") is not stated.
                let hits = set.find(&tokens);
                let spans: Vec<(usize, usize)> = hits.iter().map(|(start, end, _)| (*start, *end)).collect();
                let statuses = self.context.classify(&tokens, &spans, &spans);
                found.extend(
                    hits.into_iter()
                        .zip(statuses)
                        .filter(|(_, status)| !matches!(status, Status::Conditional | Status::Hypothetical))
                        .map(|((_, _, value), _)| value),
                );
            }
        }
        found.remove("ignore");
        found
    }

    /// `MARKER:value` for each status (or number) a marker reaches: within
    /// three words of the marker's statement (past coordinated markers and
    /// linking words), with no other marker's statement between them.
    fn biomarker_mentions(&self, tokens: &[String]) -> Vec<String> {
        let mut statuses = self
            .mentions
            .get("biomarker_status")
            .map(|statuses| statuses.find(tokens))
            .unwrap_or_default();
        let markers = self.markers.find(tokens);
        let spans: Vec<(usize, usize)> = markers.iter().map(|(start, end, _)| (*start, *end)).collect();
        for (index, token) in tokens.iter().enumerate() {
            let inside_marker = spans.iter().any(|(start, end)| (*start..*end).contains(&index));
            if !inside_marker && token.chars().all(|character| character.is_ascii_digit()) {
                statuses.push((index, index + 1, token.clone()));
            }
        }
        let mut found = Vec::new();
        for (start, end, marker) in &markers {
            let (left, right) = marker_reach(&self.mention_vocabulary, tokens, (*start, *end), &spans);
            for (status_start, status_end, status) in &statuses {
                if (*start..*end).contains(status_start) {
                    continue;
                }
                let (near, between) = if *status_start >= *end {
                    (
                        *status_start < right || status_start - right <= 3,
                        (*end, *status_start),
                    )
                } else {
                    // Before the marker, a status is its own ("triple
                    // negative", "no PD-L1 result") only within the same
                    // phrase: no comma, colon or parenthesis between.
                    let apart = tokens[*status_end..*start]
                        .iter()
                        .any(|token| matches!(token.as_str(), "," | ":" | "(" | ")"));
                    (
                        !apart && (*status_end > left || left - status_end <= 3),
                        (*status_end, *start),
                    )
                };
                // Another marker's statement in between takes the status.
                let other = spans.iter().any(|(other_start, other_end)| {
                    *other_start >= between.0
                        && *other_end <= between.1
                        && (*other_start >= right || *other_end <= left)
                });
                if near && !other && status != "ignore" {
                    found.push(format!("{marker}:{status}"));
                }
            }
        }
        found
    }

    /// A surgical procedure named as history (`s/p esophagectomy`) is
    /// `resected`, one negated (`esophagectomy NOT done`, `no surgery`) is
    /// `unresected`.
    fn surgery_mentions(&self, tokens: &[String]) -> Vec<String> {
        let found = self.treatments.find(tokens);
        let items: Vec<(usize, usize)> = found.iter().map(|(start, end, _)| (*start, *end)).collect();
        let statuses = self.context.classify(tokens, &items, &items);
        found
            .iter()
            .zip(statuses)
            .filter_map(|((start, _, treatment), status)| {
                let (_, classes) = self.expand(treatment);
                if !classes
                    .iter()
                    .any(|class| self.time_reference_classes.contains(class))
                {
                    return None;
                }
                match status {
                    Status::Negated => Some("unresected".to_string()),
                    Status::Historical => Some("resected".to_string()),
                    Status::Planned if self.time_reference(tokens, *start, &classes) => {
                        Some("resected".to_string())
                    }
                    _ => None,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ontology::testing::{ontology, set};

    #[test]
    fn mentions_pair_markers_with_statuses() {
        let ontology = ontology();
        assert_eq!(
            ontology.mentions(
                "Because the tumour is now HER2-negative, drop trastuzumab.",
                "biomarker"
            ),
            set(&["HER2:negative"])
        );
        assert!(
            ontology
                .mentions("not a surgical candidate", "surgery")
                .contains("unresected")
        );
        assert!(ontology.mentions("FOLFOX", "surgery").is_empty());
    }

    #[test]
    fn a_status_reaches_coordinated_markers_and_unknown_is_said_many_ways() {
        let ontology = ontology();
        let biomarkers = |text: &str| ontology.mentions(text, "biomarker");
        assert!(biomarkers("ER and PR are reported positive").contains("ER:positive"));
        assert!(biomarkers("ER and PR are reported positive").contains("PR:positive"));
        assert!(
            biomarkers("The oestrogen and progesterone receptor results were not included")
                .contains("ER:unknown")
        );
        assert!(biomarkers("73M mGC (liver), HER2 ? - not on chart.").contains("HER2:unknown"));
        assert!(biomarkers("HER2 wasn't specified").contains("HER2:unknown"));
        assert!(biomarkers("I could not find a PD-L1 result in the referral").contains("PD-L1:unknown"));
        // Another marker's statement keeps its own status.
        let mixed = biomarkers("HER2 3+, ER positive");
        assert!(
            mixed.contains("HER2:3") && mixed.contains("ER:positive") && !mixed.contains("HER2:positive")
        );
    }

    #[test]
    fn stage_surgery_and_progression_mentions_are_values() {
        let ontology = ontology();
        assert!(
            ontology
                .mentions("cT4aN2M0 (III) noted", "stage")
                .contains("stage:III")
        );
        assert!(
            ontology
                .mentions("M1a disease, i.e. stage IVA", "stage")
                .contains("stage:IV")
        );
        assert!(
            ontology
                .mentions("new FDG-avid liver lesions", "stage")
                .contains("metastatic")
        );
        assert!(
            ontology
                .mentions(
                    "s/p CROSS. Esophagectomy NOT done - not surg candidate.",
                    "surgery"
                )
                .contains("unresected")
        );
        assert!(
            ontology
                .mentions("s/p Ivor Lewis esophagectomy", "surgery")
                .contains("resected")
        );
        assert!(
            !ontology
                .mentions("Following resection of a stage III colon cancer", "surgery")
                .contains("unresected")
        );
        assert!(ontology.mentions("followed by surgery", "surgery").is_empty());
        let progression = |text: &str| ontology.mentions(text, "prior_line");
        assert!(progression("PD after 10 cycles of FOLFOX").contains("progression"));
        assert!(progression("lorlatinib reserved for PD").is_empty());
        assert!(progression("T-DXd at progression").is_empty());
        assert!(progression("high PD-L1 expression").is_empty());
        assert!(progression("switch to docetaxel if the disease progresses").is_empty());
    }

    #[test]
    fn progression_is_said_by_what_the_scan_shows_and_a_missing_result_plainly() {
        let ontology = ontology();
        let progression = |text: &str| ontology.mentions(text, "prior_line").contains("progression");
        assert!(progression(
            "MRI: the pelvic mass has grown and there is a new bone lesion"
        ));
        assert!(progression("enlarging nodes on today's scan"));
        assert!(progression("new lesions in the liver"));
        assert!(!progression("no new lesions and no growth"));
        let biomarkers = |text: &str| ontology.mentions(text, "biomarker");
        assert!(biomarkers("We don't have the PD-L1 yet").contains("PD-L1:unknown"));
        assert!(biomarkers("HER2 results weren't included in the outside report").contains("HER2:unknown"));
        assert!(biomarkers("the PR is not back").contains("PR:unknown"));
    }

    #[test]
    fn a_sign_after_a_marker_is_its_status() {
        let ontology = ontology();
        let biomarkers = |text: &str| ontology.mentions(text, "biomarker");
        let signed = biomarkers("Recurrence is ER+/PR-, HER2 negative");
        assert!(
            signed.contains("ER:positive")
                && signed.contains("PR:negative")
                && !signed.contains("ER:negative"),
            "{signed:?}"
        );
        assert!(!biomarkers("HER2 IHC 2+").contains("HER2:positive"));
        assert!(!biomarkers("ER- and PR-positive").contains("ER:negative"));
        assert_eq!(signed_statuses("5-FU and T-DXd"), "5-FU and T-DXd");
    }

    #[test]
    fn numeric_marker_statements_are_mentions() {
        let ontology = ontology();
        assert!(
            ontology
                .mentions("PD-L1 TPS <1%", "biomarker")
                .contains("PD-L1:1")
        );
        assert!(
            ontology
                .mentions("HER2 IHC 3+", "biomarker")
                .iter()
                .any(|mention| mention.starts_with("HER2:"))
        );
    }
}
