//! The SPEC's fact vocabulary, as far as a catalog may name it.

/// Fact kinds a predicate may name, with the names and values each allows
/// (`None`: free names or values, e.g. a regimen as written).
pub(crate) struct KindSpec {
    pub kind: &'static str,
    pub names: Option<&'static [&'static str]>,
    pub values: Option<&'static [&'static str]>,
}

pub(crate) const BIOMARKERS: &[&str] = &[
    "HER2", "ER", "PR", "PD-L1", "EGFR", "ALK", "ROS1", "KRAS", "NRAS", "BRAF", "MSI", "BRCA", "NTRK", "MET",
    "RET", "TMB", "HRD",
];

pub(crate) const CANCER_TYPES: &[&str] = &[
    "breast",
    "nsclc",
    "sclc",
    "colorectal",
    "pancreatic",
    "gastric",
    "esophageal",
    "melanoma",
    "prostate",
    "ovarian",
    "endometrial",
    "cervical",
    "head_and_neck",
    "bladder",
    "renal",
    "hepatocellular",
    "cholangiocarcinoma",
    "lymphoma",
    "sarcoma",
    "glioma",
];

pub(crate) const STAGE_GROUPS: &[&str] = &["0", "I", "II", "III", "IV"];

pub(crate) const KINDS: &[KindSpec] = &[
    KindSpec {
        kind: "cancer_type",
        names: None,
        values: Some(CANCER_TYPES),
    },
    KindSpec {
        kind: "stage",
        names: Some(&["group", "tnm"]),
        values: None,
    },
    KindSpec {
        kind: "metastatic",
        names: None,
        values: Some(&["true", "false"]),
    },
    KindSpec {
        kind: "biomarker",
        names: Some(BIOMARKERS),
        values: Some(&["positive", "negative", "equivocal", "unknown"]),
    },
    KindSpec {
        kind: "surgery",
        names: None,
        values: Some(&["resected", "unresected", "not_done"]),
    },
    KindSpec {
        kind: "prior_line",
        names: None,
        values: Some(&["progression", "response", "ongoing"]),
    },
    KindSpec {
        kind: "intent",
        names: None,
        values: Some(&["curative", "palliative"]),
    },
    KindSpec {
        kind: "ecog",
        names: None,
        values: Some(&["0", "1", "2", "3", "4"]),
    },
    KindSpec {
        kind: "comorbidity",
        names: None,
        values: None,
    },
    KindSpec {
        kind: "finding",
        names: None,
        values: None,
    },
];

pub(crate) fn kind(kind: &str) -> Option<&'static KindSpec> {
    KINDS.iter().find(|spec| spec.kind == kind)
}

/// Case-insensitive membership.
pub(crate) fn contains(list: &[&str], item: &str) -> bool {
    list.iter().any(|known| known.eq_ignore_ascii_case(item))
}

/// A stage group without its sub-stage letter (`IIIA` → `III`).
pub(crate) fn stage_group(value: &str) -> &str {
    let trimmed = value.trim();
    let end = trimmed
        .char_indices()
        .find(|(_, c)| !matches!(c, 'I' | 'V' | '0'))
        .map_or(trimmed.len(), |(index, _)| index);
    if end == 0 { trimmed } else { &trimmed[..end] }
}
