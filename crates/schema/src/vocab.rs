//! The vocabulary every stage shares, with one owner: the baseline's id,
//! which units answer which families, how a subject's name says what it is,
//! and the pack's task, families and fact kinds (data:
//! `data/packs/oncology/vocabulary.yaml`). Parquet columns keep these as
//! plain strings, for notebooks; code names them through this module.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;

/// The family and intervention id of a case's unedited chart (its variant
/// id is the case's baseline variant): every subject answers it, every
/// pair is judged against it.
pub const BASELINE: &str = "baseline";

/// The prefix of a control subject's name (`control/reference`).
pub const CONTROL_PREFIX: &str = "control/";

/// The prefix of an in-process model's name (`embedded/smollm2-135m`).
pub const EMBEDDED_PREFIX: &str = "embedded/";

/// What a subject's (or judge's) name says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectKind<'a> {
    /// A built-in control (`control/<kind>`): the kind.
    Control(&'a str),
    /// The embedded model (`embedded/<model>`): the model.
    Embedded(&'a str),
    /// A model behind an API (`provider/model`), or a name that is neither
    /// of the above (the model crate checks its shape).
    Remote(&'a str),
}

impl<'a> SubjectKind<'a> {
    /// Reads a subject's name.
    pub fn of(name: &'a str) -> Self {
        if let Some(kind) = name.strip_prefix(CONTROL_PREFIX) {
            SubjectKind::Control(kind)
        } else if let Some(model) = name.strip_prefix(EMBEDDED_PREFIX) {
            SubjectKind::Embedded(model)
        } else {
            SubjectKind::Remote(name)
        }
    }

    /// Whether the name is a control's.
    pub fn is_control(name: &str) -> bool {
        matches!(SubjectKind::of(name), SubjectKind::Control(_))
    }

    /// Whether the name is the embedded model's.
    pub fn is_embedded(name: &str) -> bool {
        matches!(SubjectKind::of(name), SubjectKind::Embedded(_))
    }
}

/// What a control subject does, as its name (`control/<kind>`) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlKind {
    /// Follows the ground truth (guideline table, or the case's own answer).
    Reference,
    /// One answer whatever the chart.
    Constant,
    /// The reference blind to these fact kinds.
    Blind(Vec<String>),
    /// An answer picked per variant at random (seeded by the variant id).
    Erratic,
}

impl ControlKind {
    /// The kind a control's name says (`None`: not a control, or an unknown
    /// kind). `blind-<kind>` takes oncology's kinds (`surgery`, `biomarker`,
    /// `stage`, `prior_line`) and diagnosis's (`test_result`, `sex`, `vital`).
    pub fn of(name: &str) -> Option<Self> {
        let SubjectKind::Control(kind) = SubjectKind::of(name) else {
            return None;
        };
        Some(match kind {
            "reference" => ControlKind::Reference,
            "constant" => ControlKind::Constant,
            "erratic" => ControlKind::Erratic,
            blind => {
                let kinds: Vec<&str> = match blind.strip_prefix("blind-")? {
                    "surgery" => vec!["surgery"],
                    "biomarker" | "biomarkers" => vec!["biomarker"],
                    "stage" => vec!["stage", "metastatic"],
                    "prior_line" | "prior-line" | "progression" => vec!["prior_line"],
                    "test_result" | "test" | "tests" => vec!["test_result"],
                    "sex" => vec!["sex"],
                    "vital" | "vitals" => vec!["vital"],
                    _ => return None,
                };
                ControlKind::Blind(kinds.into_iter().map(String::from).collect())
            }
        })
    }
}

/// Whether a unit limited to `families` (empty: all) covers `family`: the
/// baseline always, since every pair is judged against it.
pub fn covers_family(families: &[String], family: &str) -> bool {
    family == BASELINE || families.is_empty() || families.iter().any(|name| name == family)
}

/// What a subject is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// Recommend the next treatment (oncology).
    Treatment,
    /// Name the most likely diagnosis.
    Diagnosis,
}

/// A fact kind with the names and values it allows (`None`: free text).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FactKind {
    #[serde(skip)]
    pub kind: String,
    #[serde(default)]
    pub names: Option<Vec<String>>,
    #[serde(default)]
    pub values: Option<Vec<String>>,
}

impl FactKind {
    /// Whether `name` is allowed (case-insensitive; any name when free).
    pub fn allows_name(&self, name: &str) -> bool {
        self.names.as_ref().is_none_or(|names| contains(names, name))
    }

    /// Whether `value` is allowed (case-insensitive; any value when free).
    pub fn allows_value(&self, value: &str) -> bool {
        self.values.as_ref().is_none_or(|values| contains(values, value))
    }
}

/// Case-insensitive membership.
pub fn contains(list: &[String], item: &str) -> bool {
    list.iter().any(|known| known.eq_ignore_ascii_case(item))
}

/// A pack's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vocabulary {
    pub pack: String,
    pub task: TaskKind,
    /// Family → what it changes, in order.
    pub families: Vec<(String, String)>,
    /// The families scored as CSS.
    pub css_families: Vec<String>,
    /// The negative-control family.
    pub control_family: String,
    pub stage_groups: Vec<String>,
    pub fact_kinds: Vec<FactKind>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVocabulary {
    version: u32,
    pack: String,
    task: TaskKind,
    families: BTreeMap<String, String>,
    css_families: Vec<String>,
    control_family: String,
    stage_groups: Vec<String>,
    fact_kinds: BTreeMap<String, FactKind>,
}

/// The oncology pack's vocabulary, as built in.
const ONCOLOGY: &str = crate::pack::oncology::VOCABULARY;

impl Vocabulary {
    /// Parses a vocabulary file; `origin` names it in errors (with the line).
    pub fn parse(text: &str, origin: &str) -> Result<Self, String> {
        let raw: RawVocabulary =
            serde_norway::from_str(text).map_err(|error| format!("{origin}: {error}"))?;
        if raw.version != 1 {
            return Err(format!("{origin}: version {} is not 1", raw.version));
        }
        for family in raw.css_families.iter().chain([&raw.control_family]) {
            if !raw.families.contains_key(family) {
                return Err(format!("{origin}: family `{family}` is not in `families`"));
            }
        }
        if raw.families.contains_key(BASELINE) {
            return Err(format!("{origin}: `{BASELINE}` is not a family of interventions"));
        }
        Ok(Self {
            pack: raw.pack,
            task: raw.task,
            families: raw.families.into_iter().collect(),
            css_families: raw.css_families,
            control_family: raw.control_family,
            stage_groups: raw.stage_groups,
            fact_kinds: raw
                .fact_kinds
                .into_iter()
                .map(|(kind, spec)| FactKind { kind, ..spec })
                .collect(),
        })
    }

    /// The built-in oncology vocabulary (parsed once; a broken file is a
    /// build defect, caught by this module's tests).
    pub fn builtin() -> &'static Vocabulary {
        static BUILTIN: OnceLock<Vocabulary> = OnceLock::new();
        BUILTIN.get_or_init(|| {
            Vocabulary::parse(ONCOLOGY, "data/packs/oncology/vocabulary.yaml (built in)")
                .unwrap_or_else(|error| panic!("the built-in vocabulary does not parse: {error}"))
        })
    }

    /// A fact kind by its name.
    pub fn kind(&self, kind: &str) -> Option<&FactKind> {
        self.fact_kinds.iter().find(|spec| spec.kind == kind)
    }

    /// The allowed values of a kind (empty when free).
    pub fn values(&self, kind: &str) -> &[String] {
        self.kind(kind)
            .and_then(|spec| spec.values.as_deref())
            .unwrap_or_default()
    }

    /// The allowed names of a kind (empty when free).
    pub fn names(&self, kind: &str) -> &[String] {
        self.kind(kind)
            .and_then(|spec| spec.names.as_deref())
            .unwrap_or_default()
    }

    /// Every family name, in order.
    pub fn family_names(&self) -> impl Iterator<Item = &str> {
        self.families.iter().map(|(name, _)| name.as_str())
    }

    /// Whether `family` is one of the pack's families.
    pub fn is_family(&self, family: &str) -> bool {
        self.family_names().any(|name| name == family)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_kinds_read_from_names() {
        assert_eq!(ControlKind::of("control/reference"), Some(ControlKind::Reference));
        assert_eq!(
            ControlKind::of("control/blind-stage"),
            Some(ControlKind::Blind(vec!["stage".into(), "metastatic".into()]))
        );
        assert_eq!(
            ControlKind::of("control/blind-tests"),
            Some(ControlKind::Blind(vec!["test_result".into()]))
        );
        assert_eq!(ControlKind::of("control/blind-mood"), None);
        assert_eq!(ControlKind::of("openai/gpt-5"), None);
    }

    #[test]
    fn the_builtin_vocabulary_parses_and_names_its_families() {
        let vocabulary = Vocabulary::builtin();
        assert_eq!(vocabulary.task, TaskKind::Treatment);
        assert_eq!(
            vocabulary.family_names().collect::<Vec<_>>(),
            ["A", "B", "C", "D", "E", "N"]
        );
        assert_eq!(vocabulary.css_families, ["A", "B", "C", "D", "E"]);
        assert_eq!(vocabulary.control_family, "N");
        let biomarker = vocabulary.kind("biomarker").expect("biomarker");
        assert!(biomarker.allows_name("her2") && !biomarker.allows_name("FOO1"));
        assert!(biomarker.allows_value("Equivocal") && !biomarker.allows_value("maybe"));
        let line = vocabulary.kind("prior_line").expect("prior line");
        assert!(line.allows_name("FOLFOX + bevacizumab"));
        assert!(
            vocabulary
                .values("cancer_type")
                .iter()
                .any(|value| value == "nsclc")
        );
        assert!(vocabulary.kind("intervention").is_none());
    }

    #[test]
    fn broken_vocabularies_are_refused_with_their_place() {
        let error = Vocabulary::parse("version: 1\npack: x\ntask: surgery\n", "v.yaml").expect_err("task");
        assert!(
            error.starts_with("v.yaml: ") && error.contains("line 3"),
            "{error}"
        );
        let unknown = "version: 1\npack: x\ntask: treatment\nfamilies: {A: a}\ncss_families: [A, B]\ncontrol_family: A\nstage_groups: []\nfact_kinds: {}\n";
        assert!(
            Vocabulary::parse(unknown, "v.yaml")
                .expect_err("B")
                .contains("family `B`")
        );
        let baseline = "version: 1\npack: x\ntask: treatment\nfamilies: {A: a, baseline: b}\ncss_families: [A]\ncontrol_family: A\nstage_groups: []\nfact_kinds: {}\n";
        assert!(
            Vocabulary::parse(baseline, "v.yaml")
                .expect_err("baseline")
                .contains("baseline")
        );
    }

    #[test]
    fn subject_names_say_what_they_are() {
        assert_eq!(
            SubjectKind::of("control/reference"),
            SubjectKind::Control("reference")
        );
        assert_eq!(
            SubjectKind::of("embedded/smollm2-135m"),
            SubjectKind::Embedded("smollm2-135m")
        );
        assert_eq!(
            SubjectKind::of("openai/gpt-5"),
            SubjectKind::Remote("openai/gpt-5")
        );
        assert!(SubjectKind::is_control("control/blind-D") && !SubjectKind::is_control("controls/x"));
        assert!(SubjectKind::is_embedded("embedded/m") && !SubjectKind::is_embedded("vllm/embedded"));
    }

    #[test]
    fn a_unit_limited_to_families_still_covers_the_baseline() {
        let d = vec!["D".to_string()];
        assert!(covers_family(&d, BASELINE) && covers_family(&d, "D") && !covers_family(&d, "A"));
        assert!(covers_family(&[], "A"));
    }
}
