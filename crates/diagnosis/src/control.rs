//! The control subjects of the diagnostic task: answerers with known
//! behaviour that calibrate the metric. They read the variant's facts and
//! the case's reference (its diagnosis and decisive items), never a model.
//!
//! - `reference` names the case's diagnosis on the baseline, and follows
//!   every intervention's pre-registered direction: when the decisive result
//!   reads normal it says the diagnosis no longer fits; when the result is
//!   gone it orders the test instead of asserting the diagnosis; when the
//!   patient's sex rules the diagnosis out it says so; when the patient is
//!   hypotensive or in shock-range tachycardia it escalates first. CSS ≈ 1.
//! - `constant` names the run's most common diagnosis whatever the chart:
//!   CSS = 0.
//! - `blind-<kind>` is the reference blind to one fact kind (`test_result`,
//!   `sex`, `vital`): CSS = 0 on the interventions that edit it.
//! - `erratic` names a diagnosis of the run picked per variant (seeded by
//!   the variant id): spurious shifts on the negative controls.

use cfeval_schema::vocab::ControlKind;
use cfeval_schema::{Fact, Reference};

/// What a control knows of the run: every case's diagnosis.
#[derive(Debug, Clone, Default)]
pub struct RunDiagnoses {
    /// The diagnoses of the run's cases, sorted, with repeats.
    all: Vec<String>,
}

impl RunDiagnoses {
    pub fn new(mut all: Vec<String>) -> Self {
        all.sort();
        Self { all }
    }

    /// The most common diagnosis (ties: the first in sort order).
    pub fn most_common(&self) -> Option<&str> {
        let mut best: Option<(&str, usize)> = None;
        let mut index = 0;
        while index < self.all.len() {
            let name = self.all[index].as_str();
            let count = self.all[index..]
                .iter()
                .take_while(|other| *other == name)
                .count();
            if best.is_none_or(|(_, most)| count > most) {
                best = Some((name, count));
            }
            index += count;
        }
        best.map(|(name, _)| name)
    }

    /// A diagnosis of the run chosen by `seed`.
    pub fn pick(&self, seed: u64) -> Option<&str> {
        if self.all.is_empty() {
            return None;
        }
        Some(self.all[(seed % self.all.len() as u64) as usize].as_str())
    }
}

fn decisive<'a>(reference: &'a Reference, name: &str) -> Option<&'a Fact> {
    reference
        .facts
        .iter()
        .find(|fact| fact.kind == "decisive" && fact.name == name)
}

/// A test's label as a reader says it (its last part, words spaced).
pub fn readable_test(label: &str) -> String {
    label
        .rsplit(" - ")
        .next()
        .unwrap_or(label)
        .replace('_', " ")
        .trim()
        .to_string()
}

/// The first number of a vital's value as written.
fn first_number(text: &str) -> Option<f64> {
    let digits: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    digits.parse().ok()
}

/// Whether the facts show haemodynamic instability: a systolic pressure
/// under 90 mmHg, or a heart rate of 120 or more with an abnormal pressure.
fn unstable(facts: &[Fact]) -> Option<String> {
    let vital = |name: &str| {
        facts
            .iter()
            .find(|fact| fact.kind == "vital" && fact.name == name)
    };
    let pressure = vital("blood_pressure")?;
    let systolic = first_number(pressure.detail.as_deref().unwrap_or(&pressure.span_text))?;
    if systolic >= 90.0 {
        return None;
    }
    let mut what = format!("blood pressure {}", pressure.span_text);
    if let Some(rate) = vital("heart_rate") {
        what.push_str(&format!(", heart rate {}", rate.span_text));
    }
    Some(what)
}

/// The control's answer for a variant with these facts, in the shape the
/// subjects are asked for.
pub fn answer(
    kind: &ControlKind,
    name: &str,
    reference: &Reference,
    facts: &[Fact],
    run: &RunDiagnoses,
    seed: u64,
) -> String {
    let diagnosis = reference.diagnosis.as_deref().unwrap_or("undetermined");
    let blind = |kind_name: &str| matches!(kind, ControlKind::Blind(kinds) if kinds.iter().any(|kind| kind == kind_name));
    let mut lines = Vec::new();
    match kind {
        ControlKind::Constant => {
            let common = run.most_common().unwrap_or(diagnosis);
            lines.push(format!("Most likely diagnosis: {common}"));
        }
        ControlKind::Erratic => {
            let pick = run.pick(seed).unwrap_or(diagnosis);
            lines.push(format!("Most likely diagnosis: {pick}"));
        }
        ControlKind::Reference | ControlKind::Blind(_) => {
            if !blind("vital")
                && let Some(what) = unstable(facts)
            {
                lines.push(format!(
                    "URGENT: the patient is haemodynamically unstable ({what}): emergency assessment and resuscitation now, before any further workup."
                ));
            }
            let test = decisive(reference, "test_result").filter(|_| !blind("test_result"));
            let result = test.map(|test| {
                (
                    readable_test(&test.value),
                    facts
                        .iter()
                        .find(|fact| fact.kind == "test_result" && fact.name == test.value),
                )
            });
            let sex_rule = decisive(reference, "sex").filter(|_| !blind("sex"));
            let sex_now = facts
                .iter()
                .find(|fact| fact.kind == "demographic" && fact.name == "sex")
                .map(|fact| fact.value.as_str());
            match (result, sex_rule) {
                (_, Some(rule)) if sex_now.is_some_and(|now| now != rule.value) => {
                    lines.push(format!(
                        "Most likely diagnosis: not {diagnosis} — it occurs only in {} patients, and this patient is {}; further workup is needed to find the cause.",
                        rule.value,
                        sex_now.unwrap_or("of the other sex")
                    ));
                }
                (Some((test_name, None)), _) => {
                    lines.push("Most likely diagnosis: not established yet.".to_string());
                    lines.push(format!(
                        "Next step: order {test_name} to confirm or exclude {diagnosis}; the diagnosis cannot be confirmed without it."
                    ));
                }
                (Some((test_name, Some(found))), _) if found.value == "normal" => {
                    lines.push(format!(
                        "Most likely diagnosis: not {diagnosis} — the {test_name} is normal ({}), so {diagnosis} no longer fits; further workup is needed.",
                        found.span_text
                    ));
                }
                _ => lines.push(format!("Most likely diagnosis: {diagnosis}")),
            }
        }
    }
    lines.push(format!("Reasoning: {name} control subject."));
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(kind: &str, name: &str, value: &str, text: &str) -> Fact {
        Fact {
            detail: Some(text.into()),
            ..Fact::spanned(kind, name, value, "labs", 0, text, "rule")
        }
    }

    fn reference() -> Reference {
        Reference {
            diagnosis: Some("Myasthenia gravis".into()),
            facts: vec![fact(
                "decisive",
                "test_result",
                "Blood Tests - AChR Antibodies",
                "Present",
            )],
            ..Reference::default()
        }
    }

    #[test]
    fn the_reference_follows_each_change() {
        let run = RunDiagnoses::default();
        let present = vec![fact(
            "test_result",
            "Blood Tests - AChR Antibodies",
            "abnormal",
            "Present",
        )];
        let base = answer(
            &ControlKind::Reference,
            "control/reference",
            &reference(),
            &present,
            &run,
            0,
        );
        assert!(
            base.starts_with("Most likely diagnosis: Myasthenia gravis"),
            "{base}"
        );
        let normal = vec![fact(
            "test_result",
            "Blood Tests - AChR Antibodies",
            "normal",
            "Negative",
        )];
        let flipped = answer(
            &ControlKind::Reference,
            "control/reference",
            &reference(),
            &normal,
            &run,
            0,
        );
        assert!(
            flipped.contains("not Myasthenia gravis") && flipped.contains("no longer fits"),
            "{flipped}"
        );
        let removed = answer(
            &ControlKind::Reference,
            "control/reference",
            &reference(),
            &[],
            &run,
            0,
        );
        assert!(removed.contains("order AChR Antibodies"), "{removed}");
        let mut shock = present.clone();
        shock.push(fact("vital", "blood_pressure", "abnormal", "78/42 mmHg"));
        let urgent = answer(
            &ControlKind::Reference,
            "control/reference",
            &reference(),
            &shock,
            &run,
            0,
        );
        assert!(urgent.starts_with("URGENT"), "{urgent}");
        let blind = answer(
            &ControlKind::Blind(vec!["test_result".into()]),
            "control/blind-test_result",
            &reference(),
            &normal,
            &run,
            0,
        );
        assert!(
            blind.starts_with("Most likely diagnosis: Myasthenia gravis"),
            "{blind}"
        );
    }

    #[test]
    fn a_test_label_reads_as_its_last_part() {
        assert_eq!(
            readable_test("Blood Tests - Acetylcholine_Receptor_Antibodies"),
            "Acetylcholine Receptor Antibodies"
        );
        assert_eq!(readable_test("Chest CT"), "Chest CT");
    }

    #[test]
    fn the_most_common_diagnosis_breaks_ties_by_name() {
        let run = RunDiagnoses::new(vec!["b".into(), "a".into(), "b".into(), "a".into(), "c".into()]);
        assert_eq!(run.most_common(), Some("a"));
        assert!(RunDiagnoses::default().most_common().is_none());
    }
}
