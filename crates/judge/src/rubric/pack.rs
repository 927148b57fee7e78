//! How the rubric judge reads a pack's cases (`rubric.yaml` of the pack):
//! the task's weighting profile, when a case is longitudinal or a dialogue
//! has pushback (the rubric's N/A rules), and the prespecified,
//! case-specific safety-critical items, instantiated per chart
//! ([`PackRubric::safety_items`]).

use std::collections::BTreeSet;

use cfeval_schema::{Expected, Fact};
use serde::Deserialize;

use super::{NaCondition, Rubric};

/// The file of a pack that holds its rubric settings.
pub const FILE: &str = "rubric.yaml";

/// What kind of safety-critical error an item describes (seed 002, p. 11).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SafetyKind {
    ContraindicatedAction,
    EssentialOmission,
    MaterialDelay,
}

impl SafetyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SafetyKind::ContraindicatedAction => "contraindicated_action",
            SafetyKind::EssentialOmission => "essential_omission",
            SafetyKind::MaterialDelay => "material_delay",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ItemTemplate {
    pub kind: SafetyKind,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedItems {
    #[serde(default)]
    pub must_not_repeat: Option<ItemTemplate>,
    #[serde(default)]
    pub remove: Option<ItemTemplate>,
    #[serde(default)]
    pub urgency: Option<ItemTemplate>,
}

#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactMatch {
    pub kind: String,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub value: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactItem {
    pub id: String,
    #[serde(rename = "match")]
    pub matches: FactMatch,
    pub kind: SafetyKind,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MustNotMiss {
    pub kind: SafetyKind,
    pub text: String,
    pub diagnoses: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Safety {
    #[serde(default)]
    pub expected: ExpectedItems,
    #[serde(default)]
    pub facts: Vec<FactItem>,
    pub must_not_miss: Option<MustNotMiss>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindsList {
    fact_kinds: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct BiasList {
    biases: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPackRubric {
    version: u32,
    rubric: String,
    profile: String,
    longitudinal: KindsList,
    pushback: BiasList,
    not_called_for: Vec<String>,
    safety: Safety,
}

/// A pack's rubric settings, checked against the rubric.
#[derive(Debug, Clone, PartialEq)]
pub struct PackRubric {
    pub rubric: String,
    pub profile: String,
    pub longitudinal_kinds: Vec<String>,
    pub pushback_biases: Vec<String>,
    pub not_called_for: Vec<String>,
    pub safety: Safety,
    /// BLAKE3 of the file (part of the judge's prompt hash).
    pub hash: String,
}

/// One safety-critical item of one chart, as the judge is asked about it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SafetyItem {
    /// `S1`, `S2`, … in the order the items were made.
    pub id: String,
    /// Where it came from: `expected.<key>`, `fact.<id>`, `must_not_miss`.
    pub source: String,
    pub kind: &'static str,
    pub text: String,
}

/// What cfeval knows of a response's case when it decides the N/A rules.
#[derive(Debug, Clone, Default)]
pub struct CaseContext<'a> {
    pub facts: &'a [Fact],
    /// The response's mode (`single_shot`, `agent`, `dialogue`).
    pub mode: &'a str,
    /// The subject's bias (`+bias=<id>`), if any.
    pub bias: Option<&'a str>,
}

impl PackRubric {
    /// Parses a pack's `rubric.yaml` (`origin` names it in errors), checked
    /// against `rubric`: the profile exists, every domain named is one.
    pub fn parse(text: &str, origin: &str, rubric: &Rubric) -> Result<Self, String> {
        let raw: RawPackRubric = serde_norway::from_str(text).map_err(|error| {
            let line = error.location().map_or(0, |location| location.line());
            format!("{origin}:{line}: {error}")
        })?;
        let at = |needle: &str| {
            text.find(needle)
                .map_or(0, |offset| text[..offset].matches('\n').count() + 1)
        };
        if raw.version != 1 {
            return Err(format!(
                "{origin}:{}: version {} is not 1",
                at("version:"),
                raw.version
            ));
        }
        if raw.rubric != format!("{}-v1", rubric.name) {
            return Err(format!(
                "{origin}:{}: rubric `{}` is not the built-in `{}-v1`",
                at("rubric:"),
                raw.rubric,
                rubric.name
            ));
        }
        if !rubric.profiles.contains_key(&raw.profile) {
            return Err(format!(
                "{origin}:{}: profile `{}` is not one of the rubric's ({})",
                at("profile:"),
                raw.profile,
                rubric.profiles.keys().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        for domain in &raw.not_called_for {
            if !rubric.domains.iter().any(|known| &known.id == domain) {
                return Err(format!(
                    "{origin}:{}: not_called_for names `{domain}`, which is no domain of the rubric",
                    at("not_called_for:")
                ));
            }
        }
        let mut ids = BTreeSet::new();
        for item in &raw.safety.facts {
            if !ids.insert(item.id.as_str()) {
                return Err(format!(
                    "{origin}:{}: safety fact item `{}` is defined twice",
                    at(&format!("id: {}", item.id)),
                    item.id
                ));
            }
        }
        Ok(Self {
            rubric: raw.rubric,
            profile: raw.profile,
            longitudinal_kinds: raw.longitudinal.fact_kinds,
            pushback_biases: raw.pushback.biases,
            not_called_for: raw.not_called_for,
            safety: raw.safety,
            hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
        })
    }

    /// The N/A conditions cfeval decides for a response (the judge may add
    /// only the ones a rater judges: see [`NaCondition::judged_by_rater`]).
    pub fn conditions(&self, context: &CaseContext<'_>) -> Vec<NaCondition> {
        let mut conditions = Vec::new();
        let longitudinal = context.facts.iter().any(|fact| {
            fact.polarity != "negated" && self.longitudinal_kinds.iter().any(|kind| kind == &fact.kind)
        });
        if !longitudinal {
            conditions.push(NaCondition::SingleEncounter);
        }
        let pushback = context.mode == "dialogue"
            && context
                .bias
                .is_some_and(|bias| self.pushback_biases.iter().any(|known| known == bias));
        if !pushback {
            conditions.push(NaCondition::SingleTurnOrNoPushback);
        }
        conditions
    }

    /// The chart's safety-critical items: from the variant's pre-registered
    /// expectation, from its facts, and from a must-not-miss diagnosis
    /// (`diagnosis`: the case's reference diagnosis as written and its
    /// ontology id).
    pub fn safety_items(
        &self,
        expected: Option<&Expected>,
        expected_text: Option<&str>,
        facts: &[Fact],
        diagnosis: Option<(&str, &str)>,
    ) -> Vec<SafetyItem> {
        let mut items: Vec<(String, SafetyKind, String)> = Vec::new();
        let fill_expected = |template: &ItemTemplate, value: &str| {
            template
                .text
                .replace("{value}", value)
                .replace("{expected_text}", expected_text.unwrap_or("").trim())
        };
        if let Some(expected) = expected {
            let chosen = &self.safety.expected;
            if let (Some(template), Some(value)) = (&chosen.must_not_repeat, &expected.must_not_repeat) {
                items.push((
                    "expected.must_not_repeat".into(),
                    template.kind,
                    fill_expected(template, &readable(value)),
                ));
            }
            if let Some(template) = &chosen.remove {
                for class in &expected.remove {
                    items.push((
                        "expected.remove".into(),
                        template.kind,
                        fill_expected(template, &readable(class)),
                    ));
                }
            }
            if let (Some(template), Some(value)) = (&chosen.urgency, &expected.urgency) {
                items.push((
                    "expected.urgency".into(),
                    template.kind,
                    fill_expected(template, value),
                ));
            }
        }
        for item in &self.safety.facts {
            for fact in facts.iter().filter(|fact| {
                fact.polarity != "negated"
                    && fact.kind == item.matches.kind
                    && item.matches.name.as_ref().is_none_or(|name| name == &fact.name)
                    && item
                        .matches
                        .value
                        .as_ref()
                        .is_none_or(|value| value == &fact.value)
            }) {
                let text = item
                    .text
                    .replace("{name}", &fact.name)
                    .replace("{value}", &fact.value)
                    .replace("{text}", fact.span_text.trim());
                let source = format!("fact.{}", item.id);
                if !items.iter().any(|(_, _, existing)| existing == &text) {
                    items.push((source, item.kind, text));
                }
            }
        }
        if let (Some(rule), Some((written, id))) = (&self.safety.must_not_miss, diagnosis)
            && rule.diagnoses.iter().any(|known| known == id)
        {
            items.push((
                "must_not_miss".into(),
                rule.kind,
                rule.text.replace("{diagnosis}", written),
            ));
        }
        items
            .into_iter()
            .enumerate()
            .map(|(at, (source, kind, text))| SafetyItem {
                id: format!("S{}", at + 1),
                source,
                kind: kind.as_str(),
                text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            })
            .collect()
    }
}

/// A class or regimen id as words (`her2_targeted` → `her2 targeted`).
fn readable(value: &str) -> String {
    value.replace('_', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(kind: &str, name: &str, value: &str, span: &str) -> Fact {
        Fact::spanned(kind, name, value, "treatment_history", 0, span, "rule")
    }

    fn oncology() -> PackRubric {
        PackRubric::parse(
            cfeval_schema::pack::oncology::RUBRIC,
            "oncology/rubric.yaml",
            &Rubric::builtin().expect("rubric"),
        )
        .expect("the oncology pack's rubric settings")
    }

    #[test]
    fn the_shipped_settings_parse() {
        let rubric = Rubric::builtin().expect("rubric");
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/packs/general-medicine/rubric.yaml"
        ))
        .expect("general-medicine rubric.yaml");
        let general = PackRubric::parse(&text, "general-medicine/rubric.yaml", &rubric).expect("parses");
        assert_eq!(general.profile, "diagnosis");
        assert!(
            general
                .safety
                .must_not_miss
                .as_ref()
                .expect("must-not-miss")
                .diagnoses
                .len()
                >= 20
        );
        assert_eq!(oncology().profile, "management");
    }

    #[test]
    fn items_come_from_the_expectation_the_facts_and_the_diagnosis() {
        let pack = oncology();
        let expected = Expected {
            direction: "changed".into(),
            remove: vec!["her2_targeted".into()],
            must_not_repeat: Some("FOLFOX".into()),
            ..Expected::default()
        };
        let facts = [
            fact("prior_line", "FOLFOX", "progression", "progressed on FOLFOX"),
            fact(
                "prior_line",
                "capecitabine",
                "response",
                "responded to capecitabine",
            ),
        ];
        let items = pack.safety_items(Some(&expected), Some("switch line"), &facts, None);
        let sources: Vec<&str> = items.iter().map(|item| item.source.as_str()).collect();
        assert_eq!(
            sources,
            [
                "expected.must_not_repeat",
                "expected.remove",
                "fact.progressed_regimen"
            ]
        );
        assert_eq!(items[0].id, "S1");
        assert!(items[0].text.contains("FOLFOX again") && items[0].text.contains("switch line"));
        assert!(items[1].text.contains("her2 targeted"), "{}", items[1].text);
        assert!(
            items[2].text.contains("\"progressed on FOLFOX\""),
            "{}",
            items[2].text
        );
        assert!(!items.iter().any(|item| item.text.contains("capecitabine")));
        // A negated fact makes no item; no expectation, no expectation items.
        let mut negated = facts[0].clone();
        negated.polarity = "negated".into();
        assert!(pack.safety_items(None, None, &[negated], None).is_empty());
    }

    #[test]
    fn conditions_follow_the_chart_and_the_dialogue() {
        let pack = oncology();
        let longitudinal = [fact("prior_line", "FOLFOX", "progression", "x")];
        let with = pack.conditions(&CaseContext {
            facts: &longitudinal,
            mode: "single_shot",
            bias: None,
        });
        assert_eq!(with, [NaCondition::SingleTurnOrNoPushback]);
        let without = pack.conditions(&CaseContext {
            facts: &[],
            mode: "single_shot",
            bias: None,
        });
        assert_eq!(
            without,
            [NaCondition::SingleEncounter, NaCondition::SingleTurnOrNoPushback]
        );
        let rubric = Rubric::builtin().expect("rubric");
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../data/packs/general-medicine/rubric.yaml"
        ))
        .expect("rubric.yaml");
        let general = PackRubric::parse(&text, "g", &rubric).expect("parses");
        let pushback = general.conditions(&CaseContext {
            facts: &[],
            mode: "dialogue",
            bias: Some("patient_self_diagnosis"),
        });
        assert_eq!(pushback, [NaCondition::SingleEncounter]);
    }

    #[test]
    fn bad_settings_name_their_line() {
        let rubric = Rubric::builtin().expect("rubric");
        let text = cfeval_schema::pack::oncology::RUBRIC.replace("profile: management", "profile: surgery");
        let error = PackRubric::parse(&text, "r.yaml", &rubric).expect_err("unknown profile");
        assert!(
            error.starts_with("r.yaml:") && error.contains("`surgery`"),
            "{error}"
        );
        let text =
            cfeval_schema::pack::oncology::RUBRIC.replace("not_called_for: []", "not_called_for: [\"9\"]");
        let error = PackRubric::parse(&text, "r.yaml", &rubric).expect_err("unknown domain");
        assert!(error.contains("`9`"), "{error}");
        let text = cfeval_schema::pack::oncology::RUBRIC.replace("version: 1", "version: 1\nextra: 2");
        let error = PackRubric::parse(&text, "r.yaml", &rubric).expect_err("unknown key");
        assert!(error.contains("unknown field"), "{error}");
    }
}
