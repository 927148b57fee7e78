//! Hand-written charts in several styles, with facts anchored by exact spans.

use cfeval_schema::{CaseRow, Fact, Reference, Section};

/// Builds a case from `(section name, header, text)` parts and facts given as
/// `(kind, name, value, needle)`: the span is the needle's first occurrence
/// in the section the fact names (or anywhere when the section is "").
pub fn case(
    id: &str,
    cancer: &str,
    parts: &[(&str, &str, &str)],
    facts: &[(&str, &str, &str, &str, &str)],
) -> CaseRow {
    let mut source = String::new();
    let mut sections = Vec::new();
    for (name, header, text) in parts {
        if !source.is_empty() {
            source.push('\n');
        }
        source.push_str(header);
        let start = source.len();
        source.push_str(text);
        sections.push(Section {
            name: (*name).to_string(),
            text: (*text).to_string(),
            span_start: Some(start as u64),
            span_end: Some(source.len() as u64),
        });
    }
    let mut out_facts = Vec::new();
    for (kind, name, value, section, needle) in facts {
        let (from, to) = sections
            .iter()
            .find(|candidate| candidate.name == *section)
            .map_or((0, source.len()), |found| {
                (
                    found.span_start.unwrap_or(0) as usize,
                    found.span_end.unwrap_or(0) as usize,
                )
            });
        let Some(at) = source[from..to].find(needle) else {
            panic!("fixture {id}: `{needle}` not found in section {section}");
        };
        let start = from + at;
        out_facts.push(Fact {
            kind: (*kind).to_string(),
            name: (*name).to_string(),
            value: (*value).to_string(),
            polarity: "affirmed".into(),
            certainty: "certain".into(),
            detail: None,
            section: (*section).to_string(),
            span_start: start as u64,
            span_end: (start + needle.len()) as u64,
            span_text: (*needle).to_string(),
            origin: "reference".into(),
        });
    }
    CaseRow {
        run: "test".into(),
        case_id: id.into(),
        source_id: id.into(),
        source_format: "text".into(),
        source_path: "fixtures".into(),
        source_line: None,
        source_text: source,
        cancer_type: Some(cancer.into()),
        sections,
        facts: out_facts,
        reference: Reference::default(),
        extra: Vec::new(),
    }
}

/// Early breast cancer after lumpectomy, terse tumor-board style.
pub fn breast_resected() -> CaseRow {
    case(
        "breast-resected",
        "breast",
        &[
            ("demographics", "Patient: ", "58-year-old woman."),
            (
                "history",
                "History: ",
                "She presented with a palpable left breast mass found on self-examination.",
            ),
            (
                "pathology",
                "Pathology: ",
                "Invasive ductal carcinoma, grade 2, 2.1 cm.",
            ),
            (
                "biomarkers",
                "Biomarkers: ",
                "ER-positive (90%), PR-positive, HER2-negative (IHC 1+).",
            ),
            ("staging", "Staging: ", "Pathologic stage IIA, pT2N0M0."),
            (
                "surgery",
                "Surgery: ",
                "She underwent left lumpectomy with sentinel lymph node biopsy. Margins were negative. 0/3 sentinel nodes involved.",
            ),
            ("social", "Social: ", "Retired librarian, lives with her husband."),
            (
                "question",
                "Question: ",
                "What adjuvant therapy do you recommend?",
            ),
        ],
        &[
            (
                "cancer_type",
                "breast",
                "breast",
                "pathology",
                "Invasive ductal carcinoma",
            ),
            ("biomarker", "ER", "positive", "biomarkers", "ER-positive (90%)"),
            ("biomarker", "PR", "positive", "biomarkers", "PR-positive"),
            (
                "biomarker",
                "HER2",
                "negative",
                "biomarkers",
                "HER2-negative (IHC 1+)",
            ),
            ("stage", "group", "II", "staging", "stage IIA"),
            ("stage", "tnm", "pT2N0M0", "staging", "pT2N0M0"),
            (
                "surgery",
                "left lumpectomy",
                "resected",
                "surgery",
                "underwent left lumpectomy",
            ),
        ],
    )
}

/// HER2-positive gastric cancer, metastatic, narrative style.
pub fn gastric_metastatic() -> CaseRow {
    case(
        "gastric-metastatic",
        "gastric",
        &[
            (
                "demographics",
                "",
                "A 64-year-old man was referred to the tumor board.",
            ),
            (
                "history",
                "",
                "He presented with early satiety and weight loss of 8 kg over three months.",
            ),
            (
                "pathology",
                "",
                "Endoscopic biopsy showed poorly differentiated adenocarcinoma of the gastric body. The tumor is HER2 3+ by IHC.",
            ),
            (
                "imaging",
                "",
                "CT of the chest, abdomen and pelvis showed multiple liver metastases.",
            ),
            ("staging", "", "Clinical stage IV, cT3N2M1."),
            ("question", "", "What first-line treatment is recommended?"),
        ],
        &[
            (
                "cancer_type",
                "gastric",
                "gastric",
                "pathology",
                "adenocarcinoma of the gastric body",
            ),
            ("biomarker", "HER2", "positive", "pathology", "HER2 3+"),
            ("stage", "group", "IV", "staging", "stage IV"),
            ("stage", "tnm", "cT3N2M1", "staging", "cT3N2M1"),
            (
                "metastatic",
                "metastatic",
                "true",
                "imaging",
                "multiple liver metastases",
            ),
        ],
    )
}

/// Metastatic NSCLC on first-line pembrolizumab, responding.
pub fn nsclc_on_io() -> CaseRow {
    case(
        "nsclc-io",
        "nsclc",
        &[
            (
                "demographics",
                "DEMOGRAPHICS: ",
                "71 yo male, former smoker (40 pack-years).",
            ),
            (
                "pathology",
                "PATHOLOGY: ",
                "Adenocarcinoma of the right upper lobe.",
            ),
            (
                "biomarkers",
                "BIOMARKERS: ",
                "EGFR wild-type, ALK negative. PD-L1 TPS 80%.",
            ),
            (
                "staging",
                "STAGING: ",
                "Stage IVB with bone and adrenal metastases.",
            ),
            (
                "treatment_history",
                "TREATMENT HISTORY: ",
                "Started first-line pembrolizumab in March; restaging CT after 4 cycles showed a partial response.",
            ),
            ("question", "QUESTION: ", "What is the next step in management?"),
        ],
        &[
            (
                "cancer_type",
                "nsclc",
                "nsclc",
                "pathology",
                "Adenocarcinoma of the right upper lobe",
            ),
            ("biomarker", "EGFR", "negative", "biomarkers", "EGFR wild-type"),
            ("biomarker", "ALK", "negative", "biomarkers", "ALK negative"),
            ("biomarker", "PD-L1", "positive", "biomarkers", "PD-L1 TPS 80%"),
            ("stage", "group", "IV", "staging", "Stage IVB"),
            (
                "prior_line",
                "pembrolizumab",
                "response",
                "treatment_history",
                "first-line pembrolizumab",
            ),
        ],
    )
}

/// Locally advanced pancreatic cancer, unresectable.
pub fn pancreas_unresected() -> CaseRow {
    case(
        "pancreas-unresected",
        "pancreatic",
        &[
            ("demographics", "", "Mrs. K is a 67-year-old woman."),
            ("history", "", "She presented with painless jaundice."),
            ("imaging", "", "CT shows a 3.5 cm pancreatic head mass."),
            (
                "surgery",
                "",
                "The tumor was deemed unresectable because of encasement of the superior mesenteric artery. She is not a surgical candidate.",
            ),
            (
                "pathology",
                "",
                "EUS-guided biopsy confirmed pancreatic ductal adenocarcinoma.",
            ),
            (
                "staging",
                "",
                "Stage III, cT4N1M0. No distant metastases on staging CT.",
            ),
            ("question", "", "Should she receive neoadjuvant chemotherapy?"),
        ],
        &[
            (
                "cancer_type",
                "pancreatic",
                "pancreatic",
                "pathology",
                "pancreatic ductal adenocarcinoma",
            ),
            (
                "surgery",
                "resection",
                "unresected",
                "surgery",
                "The tumor was deemed unresectable",
            ),
            ("stage", "group", "III", "staging", "Stage III"),
            ("stage", "tnm", "cT4N1M0", "staging", "cT4N1M0"),
            (
                "metastatic",
                "metastatic",
                "false",
                "staging",
                "No distant metastases",
            ),
        ],
    )
}

/// Resected colon cancer, abbreviation-heavy note style.
pub fn colon_resected() -> CaseRow {
    case(
        "colon-resected",
        "colorectal",
        &[
            ("demographics", "Pt: ", "62M."),
            (
                "history",
                "HPI: ",
                "Presented with iron-deficiency anemia and a history of intermittent rectal bleeding.",
            ),
            (
                "surgery",
                "Surgery: ",
                "s/p right hemicolectomy. R0 resection. 3/18 lymph nodes positive.",
            ),
            (
                "pathology",
                "Path: ",
                "Moderately differentiated adenocarcinoma of the cecum.",
            ),
            ("staging", "Stage: ", "Stage IIIB (pT3N1bM0)."),
            ("biomarkers", "Markers: ", "MSS, KRAS G12D mutated."),
            ("comorbidities", "PMH: ", "HTN, s/p appendectomy."),
            ("question", "Q: ", "Adjuvant therapy recommendation?"),
        ],
        &[
            (
                "cancer_type",
                "colorectal",
                "colorectal",
                "pathology",
                "adenocarcinoma of the cecum",
            ),
            (
                "surgery",
                "right hemicolectomy",
                "resected",
                "surgery",
                "s/p right hemicolectomy",
            ),
            ("stage", "group", "III", "staging", "Stage IIIB"),
            ("stage", "tnm", "pT3N1bM0", "staging", "pT3N1bM0"),
            ("biomarker", "MSI", "negative", "biomarkers", "MSS"),
            ("biomarker", "KRAS", "positive", "biomarkers", "KRAS G12D mutated"),
            ("comorbidity", "hypertension", "present", "comorbidities", "HTN"),
        ],
    )
}

/// Triple-negative wording: presupposes the receptor statuses.
pub fn breast_triple_negative() -> CaseRow {
    case(
        "breast-tnbc",
        "breast",
        &[
            ("demographics", "", "A 45-year-old woman."),
            (
                "pathology",
                "",
                "Core biopsy: triple-negative invasive ductal carcinoma. ER negative, PR negative, HER2 negative.",
            ),
            ("staging", "", "Clinical stage IIB."),
            ("question", "", "What treatment do you recommend?"),
        ],
        &[
            (
                "cancer_type",
                "breast",
                "breast",
                "pathology",
                "invasive ductal carcinoma",
            ),
            ("biomarker", "ER", "negative", "pathology", "ER negative"),
            ("biomarker", "PR", "negative", "pathology", "PR negative"),
            ("biomarker", "HER2", "negative", "pathology", "HER2 negative"),
            ("stage", "group", "II", "staging", "stage IIB"),
        ],
    )
}

pub fn all() -> Vec<CaseRow> {
    vec![
        breast_resected(),
        gastric_metastatic(),
        nsclc_on_io(),
        pancreas_unresected(),
        colon_resected(),
        breast_triple_negative(),
    ]
}
