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
    /// Reads a subject's name (its options aside: see [`SubjectName`]).
    pub fn of(name: &'a str) -> Self {
        let name = SubjectName::model_of(name);
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

/// What separates a subject's options from its model in its name.
pub const OPTION_SEPARATOR: char = '+';

/// One option of a subject, written after its model: it runs the same model
/// another way, so it is another subject in every table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubjectOption {
    /// `turns=N`: a dialogue's interaction limit N.
    Turns(u32),
    /// `bias=<id>`: a dialogue bias of the pack's `biases.yaml`.
    Bias(String),
    /// `reflect`: one self-review step before the dialogue's diagnosis.
    Reflect,
    /// `notebook`: a notebook the doctor keeps across the run's cases.
    Notebook,
}

impl SubjectOption {
    /// The option as a name writes it.
    pub fn written(&self) -> String {
        match self {
            SubjectOption::Turns(turns) => format!("turns={turns}"),
            SubjectOption::Bias(id) => format!("bias={id}"),
            SubjectOption::Reflect => "reflect".into(),
            SubjectOption::Notebook => "notebook".into(),
        }
    }
}

/// A subject's name as tables write it: its model (`provider/model`,
/// `embedded/<model>` or `control/<kind>`) and its options, each after a
/// `+` (`vllm/llama-3-8b+bias=doctor_recency+turns=10`). Options are
/// settings of mode `dialogue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubjectName<'a> {
    pub model: &'a str,
    pub options: Vec<SubjectOption>,
}

impl<'a> SubjectName<'a> {
    /// The model part of a name (the whole name when it has no options).
    pub fn model_of(name: &str) -> &str {
        name.split_once(OPTION_SEPARATOR).map_or(name, |(model, _)| model)
    }

    /// Reads a name; `Err` says which option is not one.
    pub fn parse(name: &'a str) -> Result<Self, String> {
        let mut parts = name.split(OPTION_SEPARATOR);
        let model = parts.next().unwrap_or_default();
        let mut options: Vec<SubjectOption> = Vec::new();
        for part in parts {
            let option = match part.split_once('=') {
                Some(("turns", value)) => match value.parse::<u32>() {
                    Ok(turns) if turns >= 1 => SubjectOption::Turns(turns),
                    _ => {
                        return Err(format!(
                            "`turns={value}` in `{name}`: N must be a whole number, 1 or more"
                        ));
                    }
                },
                Some(("bias", id)) if !id.is_empty() => SubjectOption::Bias(id.to_string()),
                None if part == "reflect" => SubjectOption::Reflect,
                None if part == "notebook" => SubjectOption::Notebook,
                _ => {
                    return Err(format!(
                        "`{part}` in `{name}` is not a subject option (turns=N, bias=<id>, reflect, notebook)"
                    ));
                }
            };
            if options
                .iter()
                .any(|held| std::mem::discriminant(held) == std::mem::discriminant(&option))
            {
                return Err(format!("`{name}` gives `{part}` more than once"));
            }
            options.push(option);
        }
        Ok(Self { model, options })
    }

    /// The interaction limit the name sets.
    pub fn turns(&self) -> Option<u32> {
        self.options.iter().find_map(|option| match option {
            SubjectOption::Turns(turns) => Some(*turns),
            _ => None,
        })
    }

    /// The bias the name sets.
    pub fn bias(&self) -> Option<&str> {
        self.options.iter().find_map(|option| match option {
            SubjectOption::Bias(id) => Some(id.as_str()),
            _ => None,
        })
    }

    /// Whether the name asks for a self-review step.
    pub fn reflects(&self) -> bool {
        self.options.contains(&SubjectOption::Reflect)
    }

    /// Whether the name asks for a notebook kept across cases.
    pub fn keeps_notebook(&self) -> bool {
        self.options.contains(&SubjectOption::Notebook)
    }

    /// The name with its options in one order (as written, sorted): two
    /// names that set the same options read alike.
    pub fn canonical(&self) -> String {
        self.written(|_| true)
    }

    /// The canonical name without its bias: the subject a biased one is
    /// compared with (`None` for a name without a bias).
    pub fn without_bias(&self) -> Option<String> {
        self.bias()?;
        Some(self.written(|option| !matches!(option, SubjectOption::Bias(_))))
    }

    fn written(&self, keep: impl Fn(&SubjectOption) -> bool) -> String {
        let mut options: Vec<String> = self
            .options
            .iter()
            .filter(|option| keep(option))
            .map(SubjectOption::written)
            .collect();
        options.sort();
        let mut name = self.model.to_string();
        for option in options {
            name.push(OPTION_SEPARATOR);
            name.push_str(&option);
        }
        name
    }

    /// The canonical form of a name (the name itself when it does not read).
    pub fn canonical_of(name: &str) -> String {
        SubjectName::parse(name).map_or_else(|_| name.to_string(), |parsed| parsed.canonical())
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
    fn a_subjects_options_follow_its_model() {
        let name =
            SubjectName::parse("vllm/org/model+bias=doctor_recency+turns=10+reflect+notebook").unwrap();
        assert_eq!(name.model, "vllm/org/model");
        assert_eq!(
            (name.turns(), name.bias(), name.reflects()),
            (Some(10), Some("doctor_recency"), true)
        );
        assert_eq!(
            name.without_bias().as_deref(),
            Some("vllm/org/model+notebook+reflect+turns=10")
        );
        assert_eq!(
            SubjectName::canonical_of("m/x+turns=10+reflect"),
            SubjectName::canonical_of("m/x+reflect+turns=10")
        );
        assert_eq!(SubjectName::parse("openai/gpt-5").unwrap().options, vec![]);
        assert!(
            SubjectName::parse("openai/gpt-5")
                .unwrap()
                .without_bias()
                .is_none()
        );
        assert!(matches!(
            SubjectKind::of("embedded/smollm2-135m+turns=4"),
            SubjectKind::Embedded("smollm2-135m")
        ));
        assert!(matches!(
            ControlKind::of("control/reference+turns=4"),
            Some(ControlKind::Reference)
        ));
        for bad in [
            "m/x+turns=0",
            "m/x+turns=ten",
            "m/x+bias=",
            "m/x+colour=red",
            "m/x+reflect+reflect",
        ] {
            assert!(SubjectName::parse(bad).is_err(), "{bad}");
        }
    }

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
