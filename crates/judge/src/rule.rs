//! The deterministic rule judge: reads both recommendations through the
//! ontology and scores the pair against the catalog's machine-checkable
//! expected direction; and CMS, the weighted recall of a case's consensus
//! items in the baseline recommendation.

use std::collections::BTreeSet;

use cfeval_schema::{ConsensusItem, DiffEntry, Expected};

use crate::ontology::{Analysis, Ontology, class_alternatives, words};
use crate::verdict::{Label, PairInput, Verdict};

/// Classes that name a treatment setting or modality rather than a drug.
const SETTING_CLASSES: [&str; 7] = [
    "adjuvant_therapy",
    "neoadjuvant_therapy",
    "perioperative_therapy",
    "surgical_resection",
    "radiotherapy",
    "definitive_chemoradiation",
    "surveillance",
];

/// The rule judge.
#[derive(Debug, Clone)]
pub struct RuleJudge {
    ontology: Ontology,
}

/// A consensus item's coverage in a response.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemCoverage {
    pub text: String,
    pub weight: f64,
    pub covered: bool,
}

impl RuleJudge {
    /// The judge's name in `judgments.judge`.
    pub const NAME: &'static str = "rule";

    pub fn new(ontology: Ontology) -> Self {
        Self { ontology }
    }

    /// The judge over the built-in ontology.
    pub fn builtin() -> crate::Result<Self> {
        Ok(Self::new(Ontology::builtin()?))
    }

    pub fn ontology(&self) -> &Ontology {
        &self.ontology
    }

    /// The rule judge's "prompt hash": its version and the ontology's hash.
    pub fn prompt_hash(&self) -> String {
        cfeval_schema::ids::content_id("rule-judge", &["2", self.ontology.hash()])
    }

    /// Scores one (baseline, variant) pair. Each answer is read whole: its
    /// plan is found (a label, a heading, else the last recommending
    /// paragraph) and only what it plans counts, not what it rules out,
    /// recounts as history or offers as a contingency. The judge abstains
    /// (`uncertain`, no score) when an answer has no readable plan, or when
    /// what the expectation asks for is offered only as a contingency.
    pub fn judge_pair(&self, input: &PairInput<'_>) -> Result<Verdict, String> {
        let base_reading = self.ontology.read(input.baseline_text);
        let variant_reading = self.ontology.read(input.variant_text);
        let sources = (
            base_reading.plan.source.as_str(),
            variant_reading.plan.source.as_str(),
        );
        // Word for word the same plan has not moved, readable or not.
        let same_words = words(&base_reading.plan.text) == words(&variant_reading.plan.text);
        let verdict = self.judge_readings(
            input,
            &base_reading.analysis,
            &variant_reading.analysis,
            same_words,
        )?;
        Ok(verdict.with_plan_sources(sources.0, sources.1))
    }

    fn judge_readings(
        &self,
        input: &PairInput<'_>,
        base: &Analysis,
        variant: &Analysis,
        same_words: bool,
    ) -> Result<Verdict, String> {
        if same_words && (input.expects_unchanged() || input.expected.is_some()) {
            return Ok(if input.expects_unchanged() {
                Verdict::new(
                    Label::HeldCorrectly,
                    "the plan is word for word the same, as expected for an irrelevant edit".into(),
                    false,
                )
            } else if self.acknowledged(input).is_empty() {
                Verdict::new(
                    Label::Ignored,
                    "the plan is word for word the same and the changed fact is not mentioned".into(),
                    false,
                )
            } else {
                Verdict::new(
                    Label::AcknowledgedUnchanged,
                    "the answer mentions the changed fact but its plan is word for word the same".into(),
                    false,
                )
            });
        }
        if base.is_empty() {
            return Ok(Verdict::uncertain(
                "no treatment, test or ruled-out option could be read in the baseline answer's plan".into(),
            ));
        }
        if variant.is_empty() && !variant.unchanged {
            return Ok(Verdict::uncertain(
                "no treatment, test or ruled-out option could be read in the intervened answer's plan".into(),
            ));
        }
        // "No change" said of a plan that now rules out what the baseline
        // planned ("the backbone is unchanged … durvalumab is not
        // recommended") is said of a part: the plan moved.
        let rules_out_planned = base
            .drugs
            .iter()
            .chain(&base.classes)
            .any(|item| variant.avoided.contains(item));
        let said_unchanged =
            variant.unchanged && !rules_out_planned && variant.signature().is_subset(base.signature());
        let changed = !said_unchanged && base.signature() != variant.signature();
        let moved = describe_move(base, variant);
        if input.expects_unchanged() {
            return Ok(if changed {
                Verdict::new(
                    Label::ShiftedSpuriously,
                    format!("the plan moved although no decisive fact changed: {moved}"),
                    changed,
                )
            } else {
                Verdict::new(
                    Label::HeldCorrectly,
                    "the plan held, as expected for an irrelevant edit".into(),
                    changed,
                )
            });
        }
        let Some(expected) = input.expected else {
            return Err(format!(
                "intervention {} has no machine-checkable expected direction; the rule judge cannot score it",
                input.intervention
            ));
        };
        let failures = self.check(expected, base, variant, input.diff);
        if changed && failures.is_empty() {
            return Ok(Verdict::new(
                Label::UpdatedCorrect,
                format!("the plan moved as expected ({})", describe_expected(expected)),
                changed,
            ));
        }
        let hedged: Vec<String> = expected
            .add
            .iter()
            .filter(|class| !variant.has_class(class))
            .filter(|class| {
                class_alternatives(class)
                    .iter()
                    .any(|alternative| variant.contingent.contains(alternative))
            })
            .cloned()
            .collect();
        if !hedged.is_empty() {
            return Ok(Verdict::uncertain(format!(
                "the intervened answer offers {} only as a contingency; whether that is the plan is a clinical reading",
                hedged.join(", ")
            )));
        }
        // A plan that announces a new line of therapy but keeps the
        // progressed regimen's backbone ("switch to 2L CAPOX" after FOLFOX)
        // believes it moved and repeats what failed: the wrong direction.
        // A plan that names a first line is that line; later lines beside
        // it are sequencing, not an announced switch.
        let announced: Vec<&String> = variant
            .lines
            .iter()
            .filter(|line| !variant.lines.contains("first") && !base.lines.contains(*line))
            .collect();
        if !announced.is_empty()
            && let Some(repeat) = expected
                .must_not_repeat
                .as_ref()
                .and_then(|target| self.repeated(target, variant, input.diff))
        {
            return Ok(Verdict::new(
                Label::UpdatedWrongDirection,
                format!("the answer announces a new line but {repeat}"),
                true,
            ));
        }
        // The expectation is not met. A plan whose core treatments held (it
        // only added tests, follow-up or reworded its setting) did not move
        // in any direction; one whose treatments moved went the wrong way.
        // An operation the intervened answer says is done has not been
        // dropped from its plan: it happened. Its cores are compared without
        // operations.
        let (mut base_core, mut variant_core) = (base.core.clone(), variant.core.clone());
        if variant.operation_done {
            base_core.retain(|item| !self.ontology.is_operation(item));
            variant_core.retain(|item| !self.ontology.is_operation(item));
        }
        if changed && base_core != variant_core {
            return Ok(Verdict::new(
                Label::UpdatedWrongDirection,
                format!(
                    "the plan moved ({moved}) but not as expected: {}",
                    failures.join("; ")
                ),
                changed,
            ));
        }
        let noticed = self.acknowledged(input);
        Ok(if noticed.is_empty() {
            Verdict::new(
                Label::Ignored,
                "the plan did not change and the changed fact is not mentioned".into(),
                changed,
            )
        } else {
            Verdict::new(
                Label::AcknowledgedUnchanged,
                format!(
                    "the answer mentions the changed fact ({}) but the plan did not change",
                    noticed.into_iter().collect::<Vec<_>>().join(", ")
                ),
                changed,
            )
        })
    }

    fn check(
        &self,
        expected: &Expected,
        base: &Analysis,
        variant: &Analysis,
        diff: &[DiffEntry],
    ) -> Vec<String> {
        let mut failures = Vec::new();
        for class in &expected.add {
            if !variant.has_class(class) {
                failures.push(format!("does not add {}", class_alternatives(class).join(" or ")));
            }
        }
        for class in &expected.remove {
            if variant.has_class(class) {
                failures.push(format!("still plans {class}"));
            }
        }
        if let Some(intent) = &expected.intent
            && variant.intent.as_deref() != Some(intent.as_str())
        {
            failures.push(format!(
                "intent is {} instead of {intent}",
                variant.intent.as_deref().unwrap_or("not recognisable")
            ));
        }
        if expected.switch_line.is_some() {
            let later_line = ["second", "third", "next"]
                .iter()
                .any(|line| variant.lines.contains(*line));
            let new_drugs = !variant.drugs.is_empty() && variant.drugs != base.drugs;
            if !later_line && !new_drugs {
                failures.push("does not switch to another line of therapy".into());
            }
        }
        if let Some(failure) = expected
            .must_not_repeat
            .as_ref()
            .and_then(|target| self.repeated(target, variant, diff))
        {
            failures.push(failure);
        }
        if let Some(marker) = &expected.order_test
            && !variant.tests.contains(marker)
        {
            failures.push(format!("does not order {marker} testing"));
        }
        failures
    }

    /// Whether the plan repeats what must not be repeated: a class name, or
    /// `progressed_regimen` (the prior line the diff marks as progressed).
    fn repeated(&self, target: &str, variant: &Analysis, diff: &[DiffEntry]) -> Option<String> {
        if self.ontology.known_classes().contains(target) {
            return variant.has_class(target).then(|| format!("repeats {target}"));
        }
        let regimen = if target == "progressed_regimen" {
            diff.iter()
                .find(|entry| {
                    entry.fact_kind.as_deref() == Some("prior_line")
                        && entry.after.as_deref() == Some("progression")
                })
                .or_else(|| {
                    diff.iter()
                        .find(|entry| entry.fact_kind.as_deref() == Some("prior_line"))
                })
                .and_then(|entry| entry.fact_name.clone())?
        } else {
            target.to_string()
        };
        // Progression means the regimen's backbone failed: the plan repeats
        // it when it keeps every backbone drug (by interchangeable group), a
        // biologic continued beside a new backbone is a switch.
        let backbone = self.ontology.backbone(&regimen);
        let planned = self.ontology.groups(&variant.drugs);
        (!backbone.is_empty() && backbone.is_subset(&planned))
            .then(|| format!("repeats the progressed regimen {regimen}"))
    }

    /// Mentions of the changed fact the variant's answer makes. Where the
    /// diff's new value can be read (a stage group, a surgery or
    /// progression status), a mention counts when it states that value
    /// (`M1a` or `liver lesions` for stage IV; `esophagectomy not done` for
    /// unresected) — restating the old value is not noticing the change.
    /// Otherwise (biomarkers, or a value that cannot be read) a mention
    /// counts when the baseline's answer does not make it.
    fn acknowledged(&self, input: &PairInput<'_>) -> BTreeSet<String> {
        let mut kinds: BTreeSet<&str> = input
            .diff
            .iter()
            .filter_map(|entry| entry.fact_kind.as_deref())
            .collect();
        if kinds.is_empty() {
            kinds.extend(match input.family {
                "A" | "C" => Some("biomarker"),
                "B" => Some("prior_line"),
                "D" => Some("surgery"),
                "E" => Some("stage"),
                _ => None,
            });
        }
        let markers: BTreeSet<&str> = input
            .diff
            .iter()
            .filter(|entry| entry.fact_kind.as_deref() == Some("biomarker"))
            .filter_map(|entry| entry.fact_name.as_deref())
            .collect();
        let mut noticed = BTreeSet::new();
        for kind in kinds {
            let after: Option<&str> = input
                .diff
                .iter()
                .find(|entry| entry.fact_kind.as_deref() == Some(kind))
                .and_then(|entry| entry.after.as_deref());
            let kind = if kind == "metastatic" { "stage" } else { kind };
            let said = self.ontology.mentions(input.variant_text, kind);
            if let Some(stating) = after.and_then(|after| values_stating(kind, after)) {
                noticed.extend(said.into_iter().filter(|value| stating.contains(value)));
                continue;
            }
            let before = self.ontology.mentions(input.baseline_text, kind);
            for mention in said {
                let about_changed_marker = kind != "biomarker"
                    || markers.is_empty()
                    || markers
                        .iter()
                        .any(|marker| mention.starts_with(&format!("{marker}:")));
                if about_changed_marker && !before.contains(&mention) {
                    noticed.insert(mention);
                }
            }
        }
        noticed
    }

    /// CMS: the weighted recall of `consensus` in the plan of `answer` (read
    /// as [`Ontology::read`] does), with each item's coverage; `None` when
    /// there are no items (or no weight).
    pub fn cms(&self, consensus: &[ConsensusItem], answer: &str) -> Option<(f64, Vec<ItemCoverage>)> {
        let reading = self.ontology.read(answer);
        let response = reading.analysis;
        let response_words = format!(" {} ", words(&reading.plan.text).join(" "));
        let mut total = 0.0;
        let mut covered_weight = 0.0;
        let mut coverage = Vec::with_capacity(consensus.len());
        for item in consensus {
            let covered = self.covers(&response, &response_words, &item.text);
            total += item.weight;
            if covered {
                covered_weight += item.weight;
            }
            coverage.push(ItemCoverage {
                text: item.text.clone(),
                weight: item.weight,
                covered,
            });
        }
        (total > 0.0).then(|| (covered_weight / total, coverage))
    }

    /// Whether a response covers one consensus item: its tests are ordered,
    /// what it rules out is ruled out, one of its drugs is planned in the same setting, or (without drugs)
    /// its classes are planned; an item the ontology cannot read at all must
    /// appear word for word.
    pub fn covers(&self, response: &Analysis, response_words: &str, item_text: &str) -> bool {
        let item = self.ontology.analyze(item_text);
        if item.is_empty() {
            let needle = format!(" {} ", words(item_text).join(" "));
            return response_words.contains(&needle);
        }
        if !item.tests.is_subset(&response.tests) || !item.avoided.is_subset(&response.avoided) {
            return false;
        }
        // Follow-up beside a treatment still covers a follow-up item.
        let planned = |class: &String| response.classes.contains(class) || response.followup.contains(class);
        let settings_met = item
            .classes
            .iter()
            .filter(|class| SETTING_CLASSES.contains(&class.as_str()))
            .all(planned);
        if !item.drugs.is_empty() {
            return settings_met && item.drugs.iter().any(|drug| response.drugs.contains(drug));
        }
        item.classes.iter().all(planned)
    }
}

/// The mention values (see [`crate::Ontology::mentions`]) that state a
/// fact kind's new value `after`, when it can be read.
fn values_stating(kind: &str, after: &str) -> Option<BTreeSet<String>> {
    let values: &[&str] = match (kind, after.to_lowercase().as_str()) {
        ("stage", "true") => &["metastatic", "stage:IV"],
        ("stage", "false") => &["non_metastatic", "locally_advanced"],
        ("stage", group) => {
            let group = crate::reading::mention::stage_group(group, true)?;
            let mut values: BTreeSet<String> = [format!("stage:{group}")].into();
            if group == "IV" {
                values.insert("metastatic".into());
            } else {
                values.insert("non_metastatic".into());
                if group == "III" {
                    values.insert("locally_advanced".into());
                }
            }
            return Some(values);
        }
        ("surgery", "resected" | "done" | "r0" | "r1") => &["resected", "after_operation"],
        ("surgery", "unresected" | "not_done" | "unresectable" | "not done") => &["unresected"],
        ("prior_line", "progression" | "progressed" | "refractory") => &["progression"],
        _ => return None,
    };
    Some(values.iter().map(|value| value.to_string()).collect())
}

fn describe_move(base: &Analysis, variant: &Analysis) -> String {
    let before = base.signature();
    let after = variant.signature();
    let added: Vec<&String> = after.difference(before).collect();
    let dropped: Vec<&String> = before.difference(after).collect();
    let list = |items: &[&String]| {
        if items.is_empty() {
            "nothing".to_string()
        } else {
            items
                .iter()
                .map(|item| item.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    format!("added {}; dropped {}", list(&added), list(&dropped))
}

fn describe_expected(expected: &Expected) -> String {
    let mut parts = Vec::new();
    if !expected.add.is_empty() {
        parts.push(format!("adds {}", expected.add.join(", ")));
    }
    if !expected.remove.is_empty() {
        parts.push(format!("drops {}", expected.remove.join(", ")));
    }
    if let Some(intent) = &expected.intent {
        parts.push(format!("{intent} intent"));
    }
    if let Some(line) = &expected.switch_line {
        parts.push(format!("switches to the {line} line"));
    }
    if let Some(target) = &expected.must_not_repeat {
        parts.push(format!("does not repeat {target}"));
    }
    if let Some(marker) = &expected.order_test {
        parts.push(format!("orders {marker} testing"));
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cfeval_guidelines::Guidelines;

    fn judge() -> RuleJudge {
        RuleJudge::builtin().expect("ontology")
    }

    fn expected(add: &[&str], remove: &[&str]) -> Expected {
        Expected {
            direction: "changed".into(),
            add: add.iter().map(|class| class.to_string()).collect(),
            remove: remove.iter().map(|class| class.to_string()).collect(),
            ..Expected::default()
        }
    }

    fn diff(kind: &str, name: &str, before: &str, after: &str) -> Vec<DiffEntry> {
        vec![DiffEntry {
            op: "set_fact".into(),
            section: Some("biomarkers".into()),
            fact_kind: Some(kind.into()),
            fact_name: Some(name.into()),
            before: Some(before.into()),
            after: Some(after.into()),
        }]
    }

    fn pair<'a>(
        family: &'a str,
        base: &'a str,
        variant: &'a str,
        expected: Option<&'a Expected>,
        diff: &'a [DiffEntry],
    ) -> PairInput<'a> {
        PairInput {
            family,
            intervention: "X",
            baseline_text: base,
            baseline_recommendation: base,
            variant_text: variant,
            variant_recommendation: variant,
            expected,
            expected_text: None,
            diff,
            baseline_dialogue: None,
            variant_dialogue: None,
        }
    }

    #[test]
    fn announcing_a_new_line_on_the_failed_backbone_is_the_wrong_direction() {
        let judge = judge();
        let expected = Expected {
            direction: "changed".into(),
            switch_line: Some("next".into()),
            must_not_repeat: Some("progressed_regimen".into()),
            ..Expected::default()
        };
        let diff = diff("prior_line", "mFOLFOX6 + bevacizumab", "ongoing", "progression");
        let verdict = judge
            .judge_pair(&pair(
                "B",
                "Plan: continue FOLFOX/bev, CT q8wk.",
                "PD after 10 cycles. Plan: switch to 2L CAPOX + bev. Later: TAS-102/bev.",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(
            verdict.label,
            Label::UpdatedWrongDirection,
            "{}",
            verdict.rationale
        );
        // Continuing it with a switch only as a contingency noticed the change.
        let verdict = judge
            .judge_pair(&pair(
                "B",
                "Plan: continue FOLFOX/bev, CT q8wk.",
                "CT shows progression (a new liver lesion). Continue FOLFOX/bev for now and repeat imaging; if progression is confirmed, switch to FOLFIRI.",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(
            verdict.label,
            Label::AcknowledgedUnchanged,
            "{}",
            verdict.rationale
        );
    }

    #[test]
    fn calling_a_marker_unknown_notices_the_change_ordering_its_test_meets_it() {
        let judge = judge();
        let expected = Expected {
            direction: "changed".into(),
            order_test: Some("HER2".into()),
            ..Expected::default()
        };
        let diff = diff("biomarker", "HER2", "negative", "unknown");
        let base = "HR+/HER2- breast cancer. Plan: letrozole + ribociclib.";
        let noticed = judge
            .judge_pair(&pair(
                "C",
                base,
                "HR+ breast cancer, HER2 not available. Plan: letrozole + ribociclib.",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(
            noticed.label,
            Label::AcknowledgedUnchanged,
            "{}",
            noticed.rationale
        );
        let updated = judge
            .judge_pair(&pair(
                "C",
                base,
                "HER2 result missing; I have asked pathology to perform HER2 IHC. Plan: letrozole + ribociclib, adding trastuzumab if HER2-positive.",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(updated.label, Label::UpdatedCorrect, "{}", updated.rationale);
    }

    #[test]
    fn noticing_a_stage_or_surgery_change_means_stating_the_new_value() {
        let judge = judge();
        let expected = expected(&["systemic_therapy"], &["surgical_resection"]);
        let diff = diff("stage", "group", "II", "IV");
        let base = "pT2N0M0, stage IIA. Plan: lobectomy done; surveillance.";
        let stated = judge
            .judge_pair(&pair(
                "E",
                base,
                "New M1a disease (pleural nodule), i.e. stage IVA. Plan: lobectomy done; surveillance.",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(stated.label, Label::AcknowledgedUnchanged, "{}", stated.rationale);
        let restated = judge
            .judge_pair(&pair(
                "E",
                base,
                "Stage II disease. Plan: lobectomy done; surveillance.",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(restated.label, Label::Ignored, "{}", restated.rationale);
    }

    #[test]
    fn her2_flip_scores_all_four_outcomes() {
        let judge = judge();
        let expected = expected(&[], &["her2_targeted"]);
        let diff = diff("biomarker", "HER2", "positive", "negative");
        let base = "Recommendation: trastuzumab + pertuzumab with taxane; cardiac monitoring";
        let cases = [
            (
                "Recommendation: aromatase inhibitor + CDK4/6 inhibitor",
                Label::UpdatedCorrect,
            ),
            (base, Label::Ignored),
            (
                "HER2 now negative, noted. Recommendation: trastuzumab + pertuzumab with taxane; cardiac monitoring",
                Label::AcknowledgedUnchanged,
            ),
            ("Recommendation: T-DXd", Label::UpdatedWrongDirection),
        ];
        for (variant, label) in cases {
            let verdict = judge
                .judge_pair(&pair("A", base, variant, Some(&expected), &diff))
                .expect("scored");
            assert_eq!(verdict.label, label, "{variant}: {}", verdict.rationale);
            assert_eq!(verdict.score, label.score());
        }
    }

    #[test]
    fn negative_controls_hold_or_shift() {
        let judge = judge();
        let unchanged = Expected {
            direction: "unchanged".into(),
            ..Expected::default()
        };
        let base = "Recommendation: FOLFOX or CAPOX + bevacizumab";
        let held = judge
            .judge_pair(&pair(
                "N",
                base,
                "Plan: CAPOX with bevacizumab, or FOLFOX + bev",
                Some(&unchanged),
                &[],
            ))
            .expect("scored");
        assert_eq!(
            (held.label, held.score, held.changed),
            (Label::HeldCorrectly, Some(1.0), Some(false))
        );
        let shifted = judge
            .judge_pair(&pair(
                "N",
                base,
                "Recommendation: FOLFIRI + bevacizumab",
                Some(&unchanged),
                &[],
            ))
            .expect("scored");
        assert_eq!(
            (shifted.label, shifted.score, shifted.changed),
            (Label::ShiftedSpuriously, Some(0.0), Some(true))
        );
    }

    #[test]
    fn progression_checks_line_and_repeat() {
        let judge = judge();
        let expected = Expected {
            direction: "changed".into(),
            switch_line: Some("next".into()),
            must_not_repeat: Some("progressed_regimen".into()),
            ..Expected::default()
        };
        let diff = diff("prior_line", "FOLFOX + bevacizumab", "ongoing", "progression");
        let base = "Recommendation: FOLFOX or CAPOX + bevacizumab";
        let good = judge
            .judge_pair(&pair(
                "B",
                base,
                "Recommendation: FOLFIRI + bevacizumab (switch chemotherapy backbone)",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(good.label, Label::UpdatedCorrect, "{}", good.rationale);
        let repeat = judge
            .judge_pair(&pair(
                "B",
                base,
                "Recommendation: continue FOLFOX + bevacizumab",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        // Continuing the progressed regimen (CAPOX and FOLFOX are one
        // oxaliplatin-fluoropyrimidine doublet) is a plan that did not move.
        assert_eq!(repeat.label, Label::Ignored, "{}", repeat.rationale);
        let other_doublet = judge
            .judge_pair(&pair(
                "B",
                base,
                "Recommendation: switch to CAPOX + panitumumab",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(
            other_doublet.label,
            Label::UpdatedWrongDirection,
            "{}",
            other_doublet.rationale
        );
        let immuno = Expected {
            direction: "changed".into(),
            switch_line: Some("next".into()),
            remove: vec!["immunotherapy".into()],
            must_not_repeat: Some("immunotherapy".into()),
            ..Expected::default()
        };
        let io = judge
            .judge_pair(&pair(
                "B",
                "Recommendation: platinum doublet chemotherapy + pembrolizumab",
                "Recommendation: docetaxel with or without ramucirumab; no rechallenge with a PD-1/PD-L1 inhibitor",
                Some(&immuno),
                &diff,
            ))
            .expect("scored");
        assert_eq!(io.label, Label::UpdatedCorrect, "{}", io.rationale);
    }

    #[test]
    fn surgery_stage_and_strip_expectations() {
        let judge = judge();
        let d1 = expected(
            &["definitive_chemoradiation_or_systemic_therapy"],
            &["adjuvant_therapy", "surveillance"],
        );
        let verdict = judge
            .judge_pair(&pair(
                "D",
                "Recommendation: adjuvant FOLFOX or CAPOX",
                "Recommendation: concurrent chemoradiotherapy",
                Some(&d1),
                &[],
            ))
            .expect("scored");
        assert_eq!(verdict.label, Label::UpdatedCorrect, "{}", verdict.rationale);
        let mut e1 = expected(&["systemic_therapy"], &["surgical_resection", "adjuvant_therapy"]);
        e1.intent = Some("palliative".into());
        let verdict = judge
            .judge_pair(&pair(
                "E",
                "Recommendation: surgical resection (colectomy with lymphadenectomy)",
                "Recommendation: FOLFOX or CAPOX + bevacizumab",
                Some(&e1),
                &[],
            ))
            .expect("scored");
        assert_eq!(verdict.label, Label::UpdatedCorrect, "{}", verdict.rationale);
        let c1 = Expected {
            direction: "changed".into(),
            order_test: Some("HER2".into()),
            ..Expected::default()
        };
        let verdict = judge
            .judge_pair(&pair(
                "C",
                "Recommendation: trastuzumab + pertuzumab with taxane",
                "Recommendation: HER2 testing (IHC with reflex ISH)",
                Some(&c1),
                &[],
            ))
            .expect("scored");
        assert_eq!(verdict.label, Label::UpdatedCorrect, "{}", verdict.rationale);
    }

    #[test]
    fn a_changed_pair_without_expectation_is_an_error_not_a_guess() {
        let judge = judge();
        let error = judge
            .judge_pair(&pair(
                "A",
                "Recommendation: FOLFOX",
                "Recommendation: FOLFIRI",
                None,
                &[],
            ))
            .expect_err("no expectation");
        assert!(error.contains("machine-checkable"), "{error}");
    }

    #[test]
    fn no_readable_plan_or_a_contingent_expectation_abstains() {
        let judge = judge();
        let expected = expected(
            &["definitive_chemoradiation_or_systemic_therapy"],
            &["adjuvant_therapy"],
        );
        let diff = diff("surgery", "lobectomy", "resected", "unresected");
        let verdict = judge
            .judge_pair(&pair(
                "D",
                "Thanks for the referral.",
                "Recommendation: SBRT",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(
            (verdict.label, verdict.score),
            (Label::Uncertain, None),
            "{}",
            verdict.rationale
        );
        let verdict = judge
            .judge_pair(&pair(
                "D",
                "Recommendation: adjuvant cisplatin/pemetrexed",
                "Recommendation: restage with PET; adjuvant chemotherapy is not indicated; if unresectable, concurrent chemoradiotherapy",
                Some(&expected),
                &diff,
            ))
            .expect("scored");
        assert_eq!(verdict.label, Label::Uncertain, "{}", verdict.rationale);
        assert!(verdict.rationale.contains("contingency"), "{}", verdict.rationale);
    }

    #[test]
    fn history_negation_and_follow_up_are_not_the_plan() {
        let judge = judge();
        let d1 = expected(
            &["definitive_chemoradiation_or_systemic_therapy"],
            &["adjuvant_therapy", "surveillance"],
        );
        let diff = diff("surgery", "lobectomy", "resected", "unresected");
        let base = "## Assessment\nStage IIIA, s/p lobectomy.\n\n## Recommendation\nAdjuvant cisplatin/pemetrexed, then surveillance.";
        let variant = "## Assessment\nNot a surgical candidate; the lobectomy was not performed.\n\n## Recommendation\n**Concurrent chemoradiotherapy** followed by durvalumab, then CT surveillance. Adjuvant chemotherapy no longer applies.";
        let verdict = judge
            .judge_pair(&pair("D", base, variant, Some(&d1), &diff))
            .expect("scored");
        assert_eq!(verdict.label, Label::UpdatedCorrect, "{}", verdict.rationale);
        assert_eq!(verdict.plan_sources, Some(("heading", "heading")));
    }

    #[test]
    fn a_word_for_word_same_plan_has_not_moved_even_when_unreadable() {
        let judge = judge();
        let text = "Recommendation: no guideline plan applies; discuss at tumor board";
        let unchanged = Expected {
            direction: "unchanged".into(),
            ..Expected::default()
        };
        let held = judge
            .judge_pair(&pair("N", text, text, Some(&unchanged), &[]))
            .expect("scored");
        assert_eq!(held.label, Label::HeldCorrectly, "{}", held.rationale);
        let a1 = expected(&[], &["her2_targeted"]);
        let diff = diff("biomarker", "HER2", "positive", "negative");
        let ignored = judge
            .judge_pair(&pair("A", text, text, Some(&a1), &diff))
            .expect("scored");
        assert_eq!(ignored.label, Label::Ignored, "{}", ignored.rationale);
    }

    #[test]
    fn an_operation_said_done_is_not_dropped_from_the_plan() {
        let judge = judge();
        let d2 = expected(&["adjuvant_therapy_or_surveillance"], &["neoadjuvant_therapy"]);
        let diff = diff("surgery", "mastectomy", "not_done", "resected");
        // The operation left the plan because it happened; the drugs held:
        // the change was noticed, the plan did not move the wrong way.
        let verdict = judge
            .judge_pair(&pair(
                "D",
                "Plan: preoperative docetaxel and cyclophosphamide, then mastectomy.",
                "She is s/p mastectomy. Plan: docetaxel and cyclophosphamide, neoadjuvant-style.",
                Some(&d2),
                &diff,
            ))
            .expect("scored");
        assert_eq!(
            verdict.label,
            Label::AcknowledgedUnchanged,
            "{}",
            verdict.rationale
        );
    }

    #[test]
    fn a_plan_that_keeps_its_treatments_did_not_move() {
        let judge = judge();
        let a1 = expected(&[], &["her2_targeted"]);
        let diff = diff("biomarker", "HER2", "positive", "negative");
        // Adding a test around the same treatment is not a wrong-direction move.
        let verdict = judge
            .judge_pair(&pair(
                "A",
                "Plan: TCHP x6, then surgery.",
                "HER2 is now negative on the core; I would repeat HER2 testing on the resection specimen. Plan: TCHP x6, then surgery.",
                Some(&a1),
                &diff,
            ))
            .expect("scored");
        assert_eq!(
            verdict.label,
            Label::AcknowledgedUnchanged,
            "{}",
            verdict.rationale
        );
    }

    #[test]
    fn no_change_said_of_a_part_does_not_hide_a_treatment_ruled_out() {
        let judge = judge();
        let a3 = expected(&[], &["immunotherapy"]);
        let diff = diff("biomarker", "PD-L1", "positive", "negative");
        let verdict = judge
            .judge_pair(&pair(
                "A",
                "Plan: cisplatin/etoposide with 66 Gy, then a year of durvalumab.",
                "Plan: cisplatin/etoposide with 66 Gy, unchanged. Durvalumab is no longer advised now that PD-L1 is negative.",
                Some(&a3),
                &diff,
            ))
            .expect("scored");
        assert_eq!(verdict.label, Label::UpdatedCorrect, "{}", verdict.rationale);
    }

    #[test]
    fn cms_is_weighted_recall() {
        let judge = judge();
        let consensus = vec![
            ConsensusItem {
                text: "adjuvant FOLFOX or CAPOX".into(),
                weight: 1.0,
            },
            ConsensusItem {
                text: "survivorship care plan".into(),
                weight: 0.2,
            },
            ConsensusItem {
                text: "MMR/MSI testing".into(),
                weight: 1.0,
            },
        ];
        let (score, coverage) = judge
            .cms(&consensus, "Recommendation: adjuvant CAPOX for 3 months")
            .expect("weights");
        assert!((score - 1.0 / 2.2).abs() < 1e-9, "{score}");
        assert_eq!(
            coverage.iter().map(|item| item.covered).collect::<Vec<_>>(),
            [true, false, false]
        );
        let (score, _) = judge
            .cms(
                &consensus,
                "Plan: CAPOX (adjuvant); order MSI testing; survivorship care",
            )
            .expect("weights");
        assert!((score - 1.0).abs() < 1e-9, "{score}");
        let (score, _) = judge.cms(&consensus, "CAPOX").expect("weights");
        assert_eq!(
            score, 0.0,
            "a drug outside its setting does not cover an adjuvant item"
        );
        assert!(judge.cms(&[], "anything").is_none());
    }

    /// Every item the guideline table can recommend is recognised, and a
    /// recommendation of a rule's items covers them fully.
    #[test]
    fn ontology_recognises_every_guideline_item() {
        let judge = judge();
        let table = Guidelines::builtin().expect("guidelines");
        for rule in &table.rules {
            for item in &rule.items {
                let analysis = judge.ontology().analyze(&item.text);
                assert!(
                    !analysis.is_empty(),
                    "rule {}: item `{}` is not recognised",
                    rule.id,
                    item.text
                );
            }
            let consensus: Vec<ConsensusItem> = rule
                .items
                .iter()
                .map(|item| ConsensusItem {
                    text: item.text.clone(),
                    weight: item.weight,
                })
                .collect();
            let text = format!(
                "Recommendation: {}",
                rule.items
                    .iter()
                    .map(|item| item.text.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            let (score, coverage) = judge.cms(&consensus, &text).expect("weights");
            assert_eq!(score, 1.0, "rule {}: {coverage:?}", rule.id);
        }
    }

    /// The classes the catalog's expectations look for are what the rule
    /// table's items say, rule by rule.
    #[test]
    fn guideline_items_carry_the_classes_the_catalog_expects() {
        let judge = judge();
        let table = Guidelines::builtin().expect("guidelines");
        for rule in &table.rules {
            let text = rule
                .items
                .iter()
                .map(|item| item.text.as_str())
                .collect::<Vec<_>>()
                .join("; ");
            let analysis = judge.ontology().analyze(&text);
            let when = &rule.when;
            let marker = |name: &str| when.markers.get(name).map(Vec::as_slice).unwrap_or_default();
            let systemic = rule.group == "systemic";
            let check = |class: &str, holds: bool| {
                assert!(
                    holds,
                    "rule {} ({text}) should plan {class}: {:?}",
                    rule.id, analysis.classes
                );
            };
            if systemic && marker("HER2") == ["positive"] {
                check("her2_targeted", analysis.classes.contains("her2_targeted"));
            }
            if systemic && marker("HER2").contains(&"negative".to_string()) {
                check("no her2_targeted", !analysis.classes.contains("her2_targeted"));
            }
            if systemic && marker("ER") == ["positive"] && when.stage.iter().all(|stage| stage == "IV") {
                check(
                    "endocrine_therapy",
                    analysis.classes.contains("endocrine_therapy"),
                );
            }
            if systemic && marker("ER") == ["negative"] {
                check(
                    "no endocrine_therapy",
                    !analysis.classes.contains("endocrine_therapy"),
                );
            }
            if systemic && when.stage == ["IV"] {
                check("systemic_therapy", analysis.classes.contains("systemic_therapy"));
                check(
                    "palliative intent",
                    analysis.intent.as_deref() == Some("palliative"),
                );
            }
            if systemic && when.surgery == ["resected"] && !when.stage.contains(&"IV".to_string()) {
                check(
                    "adjuvant_therapy or surveillance",
                    analysis.classes.contains("adjuvant_therapy")
                        || analysis.classes.contains("surveillance"),
                );
            }
            if rule.group == "local" && !when.surgery.contains(&"resected".to_string()) {
                check("local_therapy", analysis.classes.contains("local_therapy"));
            }
            if when.pdl1_at_least.is_some_and(|level| level >= 50.0) {
                check(
                    "immunotherapy_monotherapy",
                    analysis.classes.contains("immunotherapy_monotherapy"),
                );
            }
            if when.progressed_on.as_deref() == Some("immunotherapy") {
                // Known conflict with catalog B2 (remove immunotherapy): after
                // anti-PD-1 progression the melanoma rule recommends
                // ipilimumab-based therapy, itself immunotherapy.
                let conflict = rule.id == "melanoma-after-immunotherapy";
                check(
                    if conflict {
                        "immunotherapy (known conflict)"
                    } else {
                        "no immunotherapy"
                    },
                    analysis.classes.contains("immunotherapy") == conflict,
                );
            }
            if rule.group.starts_with("testing") {
                check("an ordered test", !analysis.tests.is_empty());
            }
        }
    }
}
