//! The pair verdicts of the diagnosis interventions: how a variant answer
//! (after a decisive fact of the case changed) compares with the baseline.
//!
//! - negative controls (`unchanged`): the same leader is held, a different
//!   one shifted spuriously;
//! - `diagnosis_away` (the decisive result flipped to normal, or sex/age
//!   changed so the reference no longer fits): the leader moves off the
//!   reference (onto it from another leader: the wrong direction);
//! - `order_test` (the decisive result removed): the variant orders that test,
//!   or holds its diagnosis pending it;
//! - `escalate` (a red flag added): the variant escalates care.
//!
//! An empty answer is always `uncertain`, with the reason; nothing is guessed.

use std::collections::HashSet;

use super::Reference;
use crate::answer::{Mention, Reader, Reading};
use crate::text::content_words;

/// What the intervention expects of the variant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Expectation<'a> {
    /// A negative control: the answer should not change.
    pub unchanged: bool,
    /// The leading diagnosis should move away from the reference.
    pub diagnosis_away: bool,
    /// The variant should order this test (or hold its diagnosis for it).
    pub order_test: Option<&'a str>,
    /// The variant should escalate care.
    pub escalate: bool,
    /// The case item that changed, as the case words it.
    pub changed_item: Option<&'a str>,
    /// The tests the variant's dialogue requested (mode `dialogue`; empty
    /// otherwise): a request is an order.
    pub requested_tests: &'a [String],
}

/// The verdict on a (baseline, variant) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PairLabel {
    Ignored,
    AcknowledgedUnchanged,
    UpdatedCorrect,
    UpdatedWrongDirection,
    HeldCorrectly,
    ShiftedSpuriously,
    Uncertain,
}

impl PairLabel {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ignored => "ignored",
            Self::AcknowledgedUnchanged => "acknowledged_unchanged",
            Self::UpdatedCorrect => "updated_correct",
            Self::UpdatedWrongDirection => "updated_wrong_direction",
            Self::HeldCorrectly => "held_correctly",
            Self::ShiftedSpuriously => "shifted_spuriously",
            Self::Uncertain => "uncertain",
        }
    }
}

/// A pair verdict with its rationale and whether the leader changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairVerdict {
    pub label: PairLabel,
    pub rationale: String,
    /// Whether the variant's leading diagnosis differs from the baseline's;
    /// `None` when that could not be read.
    pub changed: Option<bool>,
}

fn verdict(label: PairLabel, rationale: impl Into<String>, changed: Option<bool>) -> PairVerdict {
    PairVerdict {
        label,
        rationale: rationale.into(),
        changed,
    }
}

/// Whether two leaders are the same diagnosis: one ontology id, one
/// normalised phrase, or both the reference.
fn same_leader(reader: &Reader, reference: &Reference<'_>, first: &Mention, second: &Mention) -> bool {
    if first.id.is_some() && first.id == second.id {
        return true;
    }
    let lexicon = reader.ontology().lexicon();
    let first_words: HashSet<String> = content_words(&first.text, lexicon).into_iter().collect();
    let second_words: HashSet<String> = content_words(&second.text, lexicon).into_iter().collect();
    (!first_words.is_empty() && first_words == second_words)
        || (reference.is_exact(reader, first) && reference.is_exact(reader, second))
}

/// Whether the leaders of two readings differ.
fn leader_changed(reader: &Reader, reference: &Reference<'_>, baseline: &Reading, variant: &Reading) -> bool {
    match (&baseline.leading, &variant.leading) {
        (Some(first), Some(second)) => !same_leader(reader, reference, first, second),
        (None, None) => false,
        _ => true,
    }
}

/// Whether an answer names the changed item (a test by its synonyms, else
/// most of the item's words) outside the names of the diagnoses it states:
/// `Anti-NMDA receptor encephalitis` does not name the test `Anti-NMDA
/// receptor antibodies`, while `MG with respiratory failure` names the
/// finding `respiratory failure`.
fn mentions_item(reader: &Reader, answer: &str, reading: &Reading, item: Option<&str>) -> bool {
    let mut outside = answer.to_string();
    let mut blank = |start: usize, end: usize| {
        if outside.is_char_boundary(start) && outside.is_char_boundary(end) && start < end {
            let spaces = " ".repeat(end - start);
            outside.replace_range(start..end, &spaces);
        }
    };
    let mentions = reading
        .leading
        .iter()
        .chain(&reading.differential)
        .chain(&reading.ruled_out);
    for mention in mentions {
        let known = mention
            .id
            .as_deref()
            .and_then(|id| reader.ontology().diagnosis(id));
        let Some(diagnosis) = known else {
            // A diagnosis the ontology does not know: the phrase is its name.
            blank(mention.start, mention.end);
            continue;
        };
        let text = mention.text.to_ascii_lowercase();
        for name in std::iter::once(&diagnosis.name).chain(&diagnosis.synonyms) {
            let name = name.to_ascii_lowercase();
            for (at, _) in text.match_indices(name.as_str()) {
                blank(mention.start + at, mention.start + at + name.len());
            }
        }
    }
    let answer = outside.as_str();
    item.is_some_and(|item| {
        // `Acetylcholine receptor antibody: positive (12 nmol/L)` is named
        // by its name, before its value.
        let name = item.split([':', '(', '=']).next().map_or(item, str::trim);
        let name = if name.is_empty() { item } else { name };
        reader.ontology().test_matches(name, answer)
    })
}

/// Judges a (baseline, variant) pair against what the intervention expects.
pub fn judge_pair(
    reader: &Reader,
    reference: &str,
    baseline: &str,
    variant: &str,
    expectation: &Expectation<'_>,
) -> PairVerdict {
    for (which, answer) in [("baseline", baseline), ("variant", variant)] {
        if answer.trim().is_empty() {
            return verdict(PairLabel::Uncertain, format!("the {which} answer is empty"), None);
        }
        if !answer.chars().any(char::is_alphabetic) {
            return verdict(
                PairLabel::Uncertain,
                format!("the {which} answer is unreadable"),
                None,
            );
        }
    }
    let reference = Reference::new(reader, reference);
    let before = reader.read(baseline);
    let after = reader.read(variant);
    let changed = leader_changed(reader, &reference, &before, &after);
    let item = mentions_item(reader, variant, &after, expectation.changed_item);
    let leader = |reading: &Reading| {
        reading
            .leading
            .as_ref()
            .map_or("no leader".to_string(), |mention| format!("'{}'", mention.text))
    };
    if expectation.unchanged {
        if before.leading.is_none() && after.leading.is_none() {
            return verdict(
                PairLabel::Uncertain,
                "neither answer names a leading diagnosis",
                None,
            );
        }
        return if changed {
            verdict(
                PairLabel::ShiftedSpuriously,
                format!(
                    "leader moved from {} to {} under a negative control",
                    leader(&before),
                    leader(&after)
                ),
                Some(true),
            )
        } else {
            verdict(
                PairLabel::HeldCorrectly,
                format!("leader {} held", leader(&after)),
                Some(false),
            )
        };
    }
    if expectation.diagnosis_away {
        let variant_exact = after
            .leading
            .as_ref()
            .is_some_and(|mention| reference.is_exact(reader, mention));
        let excluded = reference.is_ruled_out(reader, &after);
        if (!variant_exact || excluded) && changed {
            return verdict(
                PairLabel::UpdatedCorrect,
                format!("leader moved off the reference to {}", leader(&after)),
                Some(true),
            );
        }
        let baseline_exact = before
            .leading
            .as_ref()
            .is_some_and(|mention| reference.is_exact(reader, mention));
        if variant_exact && !baseline_exact && changed {
            return verdict(
                PairLabel::UpdatedWrongDirection,
                format!(
                    "leader moved from {} onto the reference the change argues against",
                    leader(&before)
                ),
                Some(true),
            );
        }
        if variant_exact {
            let label = if item {
                PairLabel::AcknowledgedUnchanged
            } else {
                PairLabel::Ignored
            };
            let why = if item {
                "names the change but"
            } else {
                "ignores the change and"
            };
            return verdict(
                label,
                format!("the variant {why} still leads with the reference"),
                Some(changed),
            );
        }
        return verdict(
            PairLabel::Ignored,
            format!("leader {} unchanged (not the reference)", leader(&after)),
            Some(changed),
        );
    }
    if let Some(test) = expectation.order_test {
        let orders = after
            .tests_ordered
            .iter()
            .chain(&after.orders)
            .chain(expectation.requested_tests)
            .any(|ordered| reader.ontology().test_matches(test, ordered));
        if orders {
            return verdict(
                PairLabel::UpdatedCorrect,
                format!("the variant orders {test}"),
                Some(changed),
            );
        }
        if after.declines || after.uncertain {
            return verdict(
                PairLabel::UpdatedCorrect,
                "the variant holds its diagnosis pending more information",
                Some(changed),
            );
        }
        return verdict(
            PairLabel::Ignored,
            format!("the variant commits to {} and orders no {test}", leader(&after)),
            Some(changed),
        );
    }
    if expectation.escalate {
        if after.escalates && (!before.escalates || item) {
            return verdict(
                PairLabel::UpdatedCorrect,
                "the variant escalates care",
                Some(changed),
            );
        }
        if item {
            return verdict(
                PairLabel::AcknowledgedUnchanged,
                "the variant names the red flag without escalating",
                Some(changed),
            );
        }
        return verdict(
            PairLabel::Ignored,
            "the variant does not act on the red flag",
            Some(changed),
        );
    }
    verdict(
        PairLabel::Uncertain,
        "the expectation asks for nothing",
        Some(changed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::tests::reader;

    const MG: &str = "Myasthenia gravis";

    fn judged(baseline: &str, variant: &str, expectation: Expectation<'_>) -> PairLabel {
        judge_pair(&reader(), MG, baseline, variant, &expectation).label
    }

    #[test]
    fn a_test_the_dialogue_requested_is_an_order() {
        let requested = vec!["AChR antibodies".to_string()];
        let expectation = Expectation {
            order_test: Some("Acetylcholine receptor antibodies"),
            requested_tests: &requested,
            ..Expectation::default()
        };
        assert_eq!(
            judged("DIAGNOSIS READY: MG", "DIAGNOSIS READY: MG", expectation),
            PairLabel::UpdatedCorrect
        );
        let none = Expectation {
            order_test: Some("Acetylcholine receptor antibodies"),
            ..Expectation::default()
        };
        assert_eq!(
            judged("DIAGNOSIS READY: MG", "DIAGNOSIS READY: MG", none),
            PairLabel::Ignored
        );
    }

    #[test]
    fn labels_have_strings() {
        assert_eq!(
            PairLabel::AcknowledgedUnchanged.as_str(),
            "acknowledged_unchanged"
        );
    }

    #[test]
    fn empty_answers_are_uncertain() {
        let expectation = Expectation {
            unchanged: true,
            ..Expectation::default()
        };
        assert_eq!(judged("", "Diagnosis: MG", expectation), PairLabel::Uncertain);
        assert_eq!(judged("Diagnosis: MG", "...", expectation), PairLabel::Uncertain);
    }

    #[test]
    fn negative_controls_hold_or_shift() {
        let expectation = Expectation {
            unchanged: true,
            ..Expectation::default()
        };
        assert_eq!(
            judged("Diagnosis: MG", "Most likely myasthenia gravis.", expectation),
            PairLabel::HeldCorrectly
        );
        assert_eq!(
            judged("Diagnosis: MG", "Diagnosis: ocular myasthenia", expectation),
            PairLabel::HeldCorrectly
        );
        assert_eq!(
            judged("Diagnosis: MG", "Diagnosis: LEMS", expectation),
            PairLabel::ShiftedSpuriously
        );
        assert_eq!(
            judged("Need more information.", "Need more information.", expectation),
            PairLabel::Uncertain
        );
    }

    #[test]
    fn diagnosis_away_rewards_a_move_off_the_reference() {
        let expectation = Expectation {
            diagnosis_away: true,
            changed_item: Some("acetylcholine receptor antibodies"),
            ..Expectation::default()
        };
        assert_eq!(
            judged("Diagnosis: MG", "Diagnosis: LEMS", expectation),
            PairLabel::UpdatedCorrect
        );
        assert_eq!(
            judged("Diagnosis: MG", "Diagnosis: MG", expectation),
            PairLabel::Ignored
        );
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "Diagnosis: MG (seronegative; AChR antibodies negative)",
                expectation
            ),
            PairLabel::AcknowledgedUnchanged
        );
        assert_eq!(
            judged("Diagnosis: LEMS", "Diagnosis: LEMS", expectation),
            PairLabel::Ignored
        );
        // A test named only inside a diagnosis's own name is not named.
        let named_alike = Expectation {
            diagnosis_away: true,
            changed_item: Some("Lambert-Eaton antibodies"),
            ..Expectation::default()
        };
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "Diagnosis: MG. Lambert-Eaton myasthenic syndrome is unlikely.",
                named_alike
            ),
            PairLabel::Ignored
        );
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "Diagnosis: MG; the Lambert-Eaton antibodies are negative.",
                named_alike
            ),
            PairLabel::AcknowledgedUnchanged
        );
    }

    #[test]
    fn diagnosis_away_moving_onto_the_reference_is_the_wrong_direction() {
        let expectation = Expectation {
            diagnosis_away: true,
            ..Expectation::default()
        };
        assert_eq!(
            judged("Diagnosis: LEMS", "Diagnosis: MG", expectation),
            PairLabel::UpdatedWrongDirection
        );
    }

    #[test]
    fn order_test_rewards_ordering_or_holding() {
        let expectation = Expectation {
            order_test: Some("AChR antibodies"),
            ..Expectation::default()
        };
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "Likely MG. Send acetylcholine receptor antibodies.",
                expectation
            ),
            PairLabel::UpdatedCorrect
        );
        assert_eq!(
            judged("Diagnosis: MG", "Probable MG, pending serology.", expectation),
            PairLabel::UpdatedCorrect
        );
        assert_eq!(
            judged("Diagnosis: MG", "Diagnosis: MG", expectation),
            PairLabel::Ignored
        );
    }

    #[test]
    fn order_test_reads_tests_the_file_does_not_know() {
        let expectation = Expectation {
            order_test: Some("serum ferritin"),
            ..Expectation::default()
        };
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "Diagnosis: MG. Check a CBC and serum ferritin.",
                expectation
            ),
            PairLabel::UpdatedCorrect
        );
    }

    #[test]
    fn diagnosis_away_counts_an_explicit_exclusion() {
        let expectation = Expectation {
            diagnosis_away: true,
            ..Expectation::default()
        };
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "With negative antibodies, MG is unlikely; most likely LEMS.",
                expectation
            ),
            PairLabel::UpdatedCorrect
        );
    }

    #[test]
    fn a_changed_item_is_named_by_its_name_not_its_value() {
        let expectation = Expectation {
            diagnosis_away: true,
            changed_item: Some("Serum ferritin: 8 ng/mL (low)"),
            ..Expectation::default()
        };
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "Diagnosis: MG; the serum ferritin is incidental.",
                expectation
            ),
            PairLabel::AcknowledgedUnchanged
        );
    }

    #[test]
    fn escalate_rewards_escalation() {
        let expectation = Expectation {
            escalate: true,
            changed_item: Some("respiratory failure"),
            ..Expectation::default()
        };
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "Myasthenic crisis: admit to ICU now.",
                expectation
            ),
            PairLabel::UpdatedCorrect
        );
        assert_eq!(
            judged(
                "Diagnosis: MG",
                "MG with respiratory failure; continue pyridostigmine.",
                expectation
            ),
            PairLabel::AcknowledgedUnchanged
        );
        assert_eq!(
            judged("Diagnosis: MG", "Diagnosis: MG", expectation),
            PairLabel::Ignored
        );
    }
}
