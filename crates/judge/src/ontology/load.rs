//! Loading the ontology file: its raw serde layer, checked and compiled
//! into the phrase tables [`Ontology`] reads with.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{Ontology, Treatment, words};
use crate::error::{Error, Result};
use crate::reading::context::{ContextRules, Direction, Phrases, Status, Trigger};
use crate::reading::mention::MentionVocabulary;
use crate::reading::plan::PlanVocabulary;

/// The ontology shipped with cfeval, compiled in.
pub const BUILTIN_ONCOLOGY_YAML: &str = cfeval_schema::pack::oncology::ONTOLOGY;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOntology {
    version: u32,
    drugs: BTreeMap<String, RawDrug>,
    regimens: BTreeMap<String, RawRegimen>,
    class_phrases: BTreeMap<String, Vec<String>>,
    derived: BTreeMap<String, Vec<String>>,
    monotherapy_words: Vec<String>,
    concurrent_words: Vec<String>,
    stop_words: Vec<String>,
    dose_words: Vec<String>,
    continue_words: Vec<String>,
    intent: BTreeMap<String, Vec<String>>,
    curative_classes: Vec<String>,
    ancillary_classes: Vec<String>,
    lines: BTreeMap<String, Vec<String>>,
    order_words: Vec<String>,
    result_words: Vec<String>,
    markers: BTreeMap<String, Vec<String>>,
    mentions: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    mention_links: Vec<String>,
    stage_words: Vec<String>,
    metastatic_sites: Vec<String>,
    lesion_words: Vec<String>,
    plan_labels: Vec<String>,
    other_labels: Vec<String>,
    aside_labels: Vec<String>,
    recommend_cues: Vec<String>,
    closings: Vec<String>,
    greetings: Vec<String>,
    unchanged_cues: Vec<String>,
    context: RawContext,
    interchangeable: BTreeMap<String, Vec<String>>,
    modulators: Vec<String>,
    not_treatments: Vec<String>,
    time_reference_words: Vec<String>,
    time_reference_fillers: Vec<String>,
    time_reference_classes: Vec<String>,
    followup_classes: Vec<String>,
    active_classes: Vec<String>,
    core_classes: Vec<String>,
    line_order: Vec<String>,
    backbone_classes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDrug {
    #[serde(default)]
    aliases: Vec<String>,
    classes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRegimen {
    #[serde(default)]
    aliases: Vec<String>,
    components: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContext {
    /// Status (`negated`, `historical`, `conditional`, `hypothetical`) to its triggers.
    triggers: BTreeMap<String, RawTriggers>,
    pseudo: Vec<String>,
    terminators: Vec<String>,
    durations: Vec<String>,
    duration_anchors: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTriggers {
    #[serde(default)]
    forward: Vec<String>,
    #[serde(default)]
    backward: Vec<String>,
    #[serde(default)]
    both: Vec<String>,
}

fn phrase_set(phrases: &[String]) -> Phrases<()> {
    let mut set = Phrases::default();
    for phrase in phrases {
        set.insert(phrase, ());
    }
    set
}

fn keyed_set(map: &BTreeMap<String, Vec<String>>) -> Phrases<String> {
    let mut set = Phrases::default();
    for (key, phrases) in map {
        for phrase in phrases {
            set.insert(phrase, key.clone());
        }
    }
    set
}

fn phrase_words(phrases: &[String]) -> Vec<Vec<String>> {
    phrases
        .iter()
        .map(|phrase| words(phrase))
        .filter(|words| !words.is_empty())
        .collect()
}

impl Ontology {
    /// The ontology shipped with cfeval.
    pub fn builtin() -> Result<Self> {
        Self::parse(
            BUILTIN_ONCOLOGY_YAML,
            "data/packs/oncology/ontology.yaml (built in)",
        )
    }

    /// Loads an ontology file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and validates an ontology; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Self> {
        let raw: RawOntology = serde_norway::from_str(text).map_err(|source| Error::Parse {
            origin: origin.to_string(),
            source,
        })?;
        let invalid = |message: String| Error::Invalid {
            origin: origin.to_string(),
            message,
        };
        if raw.version != 1 {
            return Err(invalid(format!("unsupported ontology version {}", raw.version)));
        }
        let mut treatments = Phrases::default();
        let mut drug_classes = BTreeMap::new();
        for (name, drug) in &raw.drugs {
            if drug.classes.is_empty() {
                return Err(invalid(format!("drug `{name}` has no class")));
            }
            treatments.insert(name, Treatment::Drug(name.clone()));
            for alias in &drug.aliases {
                treatments.insert(alias, Treatment::Drug(name.clone()));
            }
            drug_classes.insert(name.clone(), drug.classes.iter().cloned().collect());
        }
        let mut regimen_components = BTreeMap::new();
        for (name, regimen) in &raw.regimens {
            if let Some(unknown) = regimen
                .components
                .iter()
                .find(|drug| !raw.drugs.contains_key(*drug))
            {
                return Err(invalid(format!(
                    "regimen `{name}` names unknown drug `{unknown}`"
                )));
            }
            treatments.insert(name, Treatment::Regimen(name.clone()));
            for alias in &regimen.aliases {
                treatments.insert(alias, Treatment::Regimen(name.clone()));
            }
            regimen_components.insert(name.clone(), regimen.components.clone());
        }
        for (class, phrases) in &raw.class_phrases {
            for phrase in phrases {
                treatments.insert(phrase, Treatment::Class(class.clone()));
            }
        }
        for phrase in &raw.not_treatments {
            treatments.insert(phrase, Treatment::Nothing);
        }
        let mut drug_group = BTreeMap::new();
        for (group, drugs) in &raw.interchangeable {
            for drug in drugs {
                if !raw.drugs.contains_key(drug) {
                    return Err(invalid(format!(
                        "interchangeable group `{group}` names unknown drug `{drug}`"
                    )));
                }
                drug_group.insert(drug.clone(), group.clone());
            }
        }
        if let Some(unknown) = raw.modulators.iter().find(|drug| !raw.drugs.contains_key(*drug)) {
            return Err(invalid(format!(
                "modulator `{unknown}` is not a drug of the ontology"
            )));
        }
        for kind in raw.intent.keys() {
            if kind != "curative" && kind != "palliative" {
                return Err(invalid(format!("unknown intent `{kind}`")));
            }
        }
        let mut context = ContextRules {
            pseudo: phrase_set(&raw.context.pseudo),
            terminators: phrase_set(&raw.context.terminators),
            durations: phrase_set(&raw.context.durations),
            duration_anchors: phrase_set(&raw.context.duration_anchors),
            ..ContextRules::default()
        };
        for (status, triggers) in &raw.context.triggers {
            let status = Status::parse(status).ok_or_else(|| {
                invalid(format!(
                    "unknown context status `{status}` (negated, historical, conditional or hypothetical)"
                ))
            })?;
            for (phrases, direction) in [
                (&triggers.forward, Direction::Forward),
                (&triggers.backward, Direction::Backward),
                (&triggers.both, Direction::Both),
            ] {
                for phrase in phrases {
                    context.triggers.insert(phrase, Trigger { status, direction });
                }
            }
        }
        let mentions = raw
            .mentions
            .iter()
            .map(|(kind, values)| (kind.clone(), keyed_set(values)))
            .collect();
        let mention_vocabulary = MentionVocabulary {
            links: phrase_set(&raw.mention_links),
            stage_words: phrase_set(&raw.stage_words),
            sites: raw
                .metastatic_sites
                .iter()
                .fold(Phrases::default(), |mut set, site| {
                    set.insert(site, site.clone());
                    set
                }),
            lesion_words: phrase_set(&raw.lesion_words),
        };
        Ok(Self {
            hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
            drug_classes,
            regimen_components,
            derived: raw.derived,
            curative_classes: raw.curative_classes.into_iter().collect(),
            ancillary_classes: raw.ancillary_classes.into_iter().collect(),
            treatments,
            monotherapy: phrase_set(&raw.monotherapy_words),
            concurrent: phrase_set(&raw.concurrent_words),
            stop_words: phrase_set(&raw.stop_words),
            dose_words: phrase_set(&raw.dose_words),
            continue_words: phrase_set(&raw.continue_words),
            intent: keyed_set(&raw.intent),
            lines: keyed_set(&raw.lines),
            order_words: phrase_set(&raw.order_words),
            result_words: phrase_set(&raw.result_words),
            markers: keyed_set(&raw.markers),
            marker_names: raw.markers.keys().cloned().collect(),
            mentions,
            mention_vocabulary,
            unchanged_cues: phrase_set(&raw.unchanged_cues),
            context,
            vocabulary: PlanVocabulary {
                plan_labels: phrase_words(&raw.plan_labels),
                other_labels: phrase_words(&raw.other_labels),
                aside_labels: phrase_words(&raw.aside_labels),
                recommend_cues: phrase_words(&raw.recommend_cues),
                closings: phrase_words(&raw.closings),
                greetings: phrase_words(&raw.greetings),
            },
            drug_group,
            modulators: raw.modulators.into_iter().collect(),
            time_reference_words: raw.time_reference_words.into_iter().collect(),
            time_reference_fillers: raw.time_reference_fillers.into_iter().collect(),
            time_reference_classes: raw.time_reference_classes.into_iter().collect(),
            followup_classes: raw.followup_classes.into_iter().collect(),
            active_classes: raw.active_classes.into_iter().collect(),
            core_classes: raw.core_classes.into_iter().collect(),
            line_order: raw.line_order,
            backbone_classes: raw.backbone_classes.into_iter().collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_ontologies_are_rejected_with_their_origin() {
        let bad = BUILTIN_ONCOLOGY_YAML.replace(
            "components: [capecitabine, oxaliplatin]}",
            "components: [capecitabine, unobtainium]}",
        );
        let error = Ontology::parse(&bad, "x.yaml")
            .expect_err("unknown component")
            .to_string();
        assert!(
            error.contains("x.yaml") && error.contains("unobtainium"),
            "{error}"
        );
        let error = Ontology::parse("version: 1\nextra: 2\n", "y.yaml").expect_err("unknown key");
        assert!(error.to_string().contains("y.yaml"));
    }
}
