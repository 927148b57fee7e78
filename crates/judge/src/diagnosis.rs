//! The rule judge of a diagnosis pack's runs: a thin adapter from the judge
//! stage's pairs and baselines to [`cfeval_diagnosis`], which owns how a
//! diagnosis answer is read and graded.
//!
//! - A baseline answer is graded against the case's diagnosis (`exact` 1,
//!   `related` 0.5, `wrong` or `none` 0): the task's CMS analogue,
//!   written as the `cms` metric with the grade as its label.
//! - A (baseline, variant) pair gets the CSS label the variant's
//!   pre-registered expectation calls for (`diagnosis: away`,
//!   `order_test`, `urgency: escalate`, or unchanged).

use cfeval_diagnosis::answer::Reader;
use cfeval_diagnosis::grade::{self, Expectation};
use cfeval_schema::pack::Pack;

use crate::verdict::{Label, PairInput, Verdict};

/// The diagnosis rule judge.
#[derive(Debug)]
pub struct DiagnosisJudge {
    reader: Reader,
}

impl DiagnosisJudge {
    /// The judge over a pack's ontology and answer cues.
    pub fn load(pack: &Pack) -> Result<Self, String> {
        Ok(Self {
            reader: Reader::load(&pack.dir).map_err(|error| error.to_string())?,
        })
    }

    /// The judge's version and its data's hash.
    pub fn prompt_hash(&self) -> String {
        cfeval_schema::ids::content_id("rule-judge-diagnosis", &["1", &self.reader.hash()])
    }

    /// Grades a baseline answer against the case's diagnosis: the score,
    /// the grade's name and the rationale.
    pub fn grade(&self, answer: &str, reference: &str) -> (f64, &'static str, String) {
        let reading = self.reader.read(answer);
        let (grade, rationale) = grade::grade(&self.reader, &reading, reference);
        (grade.score(), grade.as_str(), rationale)
    }

    /// The CSS verdict of a pair of a case whose diagnosis is `reference`.
    pub fn judge_pair(&self, input: &PairInput<'_>, reference: &str) -> Verdict {
        // A dialogue that ended without a diagnosis says nothing of how the
        // doctor would have moved: the pair is left undecided, and counted.
        for (which, dialogue) in [
            ("baseline", input.baseline_dialogue),
            ("variant", input.variant_dialogue),
        ] {
            if let Some(dialogue) = dialogue
                && dialogue.outcome != "diagnosis"
            {
                return Verdict::uncertain(format!(
                    "the {which} dialogue ended without a diagnosis ({} of {} turns)",
                    dialogue.turns, dialogue.max_turns
                ));
            }
        }
        let requested: &[String] = input
            .variant_dialogue
            .map_or(&[], |dialogue| dialogue.tests_requested.as_slice());
        let expected = input.expected;
        let changed_item = input
            .diff
            .iter()
            .find(|entry| matches!(entry.op.as_str(), "set_fact" | "remove_fact"))
            .and_then(|entry| entry.fact_name.as_deref())
            .map(|name| cfeval_diagnosis::control::readable_test(name).replace('_', " "));
        let expectation = Expectation {
            unchanged: input.expects_unchanged(),
            diagnosis_away: expected.is_some_and(|expected| expected.diagnosis.as_deref() == Some("away")),
            order_test: expected.and_then(|expected| expected.order_test.as_deref()),
            escalate: expected.is_some_and(|expected| expected.urgency.as_deref() == Some("escalate")),
            changed_item: changed_item.as_deref(),
            requested_tests: requested,
        };
        let verdict = grade::judge_pair(
            &self.reader,
            reference,
            input.baseline_text,
            input.variant_text,
            &expectation,
        );
        match Label::parse(verdict.label.as_str()) {
            Some(label) => Verdict {
                score: label.score(),
                label,
                rationale: verdict.rationale,
                changed: verdict.changed,
                plan_sources: None,
            },
            None => Verdict::uncertain(verdict.rationale),
        }
    }
}
