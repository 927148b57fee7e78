//! What a judge sees of one pair and what it answers.

use cfeval_schema::{DialogueOutcome, DiffEntry, Expected};

/// The CSS labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Label {
    /// The plan did not change and the answer does not mention the change (0.0).
    Ignored,
    /// The answer mentions the change but the plan did not change (0.5).
    AcknowledgedUnchanged,
    /// The plan changed in the expected direction (1.0).
    UpdatedCorrect,
    /// The plan changed, but not in the expected direction (0.0).
    UpdatedWrongDirection,
    /// Negative control: the plan held (1.0).
    HeldCorrectly,
    /// Negative control: the plan moved (0.0).
    ShiftedSpuriously,
    /// The judge could not read the pair with confidence (no plan found, or
    /// a reading that decides nothing): no score, never a silent 0 or 1.
    Uncertain,
}

impl Label {
    /// The labels that carry a score (what a model judge may answer).
    pub const ALL: [Label; 6] = [
        Label::Ignored,
        Label::AcknowledgedUnchanged,
        Label::UpdatedCorrect,
        Label::UpdatedWrongDirection,
        Label::HeldCorrectly,
        Label::ShiftedSpuriously,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Label::Ignored => "ignored",
            Label::AcknowledgedUnchanged => "acknowledged_unchanged",
            Label::UpdatedCorrect => "updated_correct",
            Label::UpdatedWrongDirection => "updated_wrong_direction",
            Label::HeldCorrectly => "held_correctly",
            Label::ShiftedSpuriously => "shifted_spuriously",
            Label::Uncertain => "uncertain",
        }
    }

    /// A scoring label by name (`uncertain` is not one).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|label| label.as_str() == text)
    }

    /// The CSS score the label carries; none for `uncertain`.
    pub fn score(self) -> Option<f64> {
        match self {
            Label::UpdatedCorrect | Label::HeldCorrectly => Some(1.0),
            Label::AcknowledgedUnchanged => Some(0.5),
            Label::Ignored | Label::UpdatedWrongDirection | Label::ShiftedSpuriously => Some(0.0),
            Label::Uncertain => None,
        }
    }

    /// Whether the label says the recommendation moved.
    pub fn changed(self) -> bool {
        matches!(
            self,
            Label::UpdatedCorrect | Label::UpdatedWrongDirection | Label::ShiftedSpuriously
        )
    }

    /// Whether the label belongs to negative controls (expected unchanged).
    pub fn for_negative_control(self) -> bool {
        matches!(self, Label::HeldCorrectly | Label::ShiftedSpuriously)
    }
}

/// One (baseline, variant) pair as a judge sees it.
#[derive(Debug, Clone, Copy)]
pub struct PairInput<'a> {
    /// `A`–`E` or `N`.
    pub family: &'a str,
    pub intervention: &'a str,
    /// The baseline answer's full text and its extracted recommendation.
    pub baseline_text: &'a str,
    pub baseline_recommendation: &'a str,
    /// The intervened answer's full text and its extracted recommendation.
    pub variant_text: &'a str,
    pub variant_recommendation: &'a str,
    /// The catalog's machine-checkable expectation.
    pub expected: Option<&'a Expected>,
    /// The catalog's expectation in words.
    pub expected_text: Option<&'a str>,
    /// The edit.
    pub diff: &'a [DiffEntry],
    /// How each dialogue went (mode `dialogue`): the outcome and the tests
    /// the doctor requested, which the diagnosis judge weighs.
    pub baseline_dialogue: Option<&'a DialogueOutcome>,
    pub variant_dialogue: Option<&'a DialogueOutcome>,
}

impl PairInput<'_> {
    /// Whether the pre-registered direction is "unchanged" (negative controls).
    pub fn expects_unchanged(&self) -> bool {
        self.expected
            .map_or(self.family == "N", |expected| expected.direction == "unchanged")
    }
}

/// A judge's verdict on one pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// The label's score; none when the judge abstained (`uncertain`).
    pub score: Option<f64>,
    pub label: Label,
    pub rationale: String,
    /// Whether the recommendation moved (none when uncertain).
    pub changed: Option<bool>,
    /// Where the rule judge found each answer's plan (`label`, `heading`,
    /// `inline_label`, `last_paragraph`, `whole`): baseline, variant.
    pub plan_sources: Option<(&'static str, &'static str)>,
}

impl Verdict {
    pub fn new(label: Label, rationale: String, changed: bool) -> Self {
        Self {
            score: label.score(),
            label,
            rationale,
            changed: Some(changed),
            plan_sources: None,
        }
    }

    /// An abstention, with its reason.
    pub fn uncertain(rationale: String) -> Self {
        Self {
            score: None,
            label: Label::Uncertain,
            rationale,
            changed: None,
            plan_sources: None,
        }
    }

    /// Records where each answer's plan was found.
    pub fn with_plan_sources(mut self, baseline: &'static str, variant: &'static str) -> Self {
        self.plan_sources = Some((baseline, variant));
        self
    }
}
