//! Writes a patient as free clinical text in one of four styles, recording
//! the exact byte span of every ground-truth fact as it is written.

use cfeval_schema::Fact;

use super::spec::{Cancer, Line, Marker, Patient};
use crate::rng::Rng;

/// The clinical writing styles of the cohort.
pub const STYLES: [&str; 4] = ["tumor_board", "referral_letter", "discharge_summary", "bullets"];

/// A document being written, with its ground-truth facts.
pub struct Doc {
    pub text: String,
    pub facts: Vec<Fact>,
    section: &'static str,
}

/// A fact to record over a phrase.
struct Truth {
    kind: &'static str,
    name: String,
    value: String,
    detail: Option<String>,
}

fn truth(kind: &'static str, name: &str, value: &str) -> Truth {
    Truth {
        kind,
        name: name.to_string(),
        value: value.to_string(),
        detail: None,
    }
}

impl Doc {
    fn new() -> Self {
        Doc {
            text: String::with_capacity(2048),
            facts: Vec::new(),
            section: "history",
        }
    }

    fn section(&mut self, name: &'static str) {
        self.section = name;
    }

    fn put(&mut self, text: &str) {
        self.text.push_str(text);
    }

    fn fact(&mut self, phrase: &str, truths: Vec<Truth>) {
        let start = self.text.len();
        self.text.push_str(phrase);
        let end = self.text.len();
        for truth in truths {
            let (polarity, certainty) = match (truth.kind, truth.value.as_str()) {
                ("biomarker", "negative") | ("metastatic", "false") | (_, "absent") => ("negated", "certain"),
                ("biomarker", "equivocal" | "unknown") => ("affirmed", "uncertain"),
                _ => ("affirmed", "certain"),
            };
            self.facts.push(Fact {
                kind: truth.kind.to_string(),
                name: truth.name,
                value: truth.value,
                polarity: polarity.to_string(),
                certainty: certainty.to_string(),
                detail: truth.detail,
                section: self.section.to_string(),
                span_start: start as u64,
                span_end: end as u64,
                span_text: phrase.to_string(),
                origin: "reference".to_string(),
            });
        }
    }
}

fn fill(template: &str, pairs: &[(&str, &str)]) -> String {
    let mut text = template.to_string();
    for (key, value) in pairs {
        text = text.replace(key, value);
    }
    text
}

fn capitalise(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn roman(stage: u32) -> &'static str {
    match stage {
        1 => "I",
        2 => "II",
        3 => "III",
        _ => "IV",
    }
}

/// Renders a patient in `style`.
pub fn render(rng: &mut Rng, patient: &Patient, style: &str) -> Doc {
    let mut doc = Doc::new();
    match style {
        "referral_letter" => letter(rng, patient, &mut doc),
        "discharge_summary" => discharge(rng, patient, &mut doc),
        "bullets" => bullets(rng, patient, &mut doc),
        _ => tumor_board(rng, patient, &mut doc),
    }
    doc
}

fn demographics(rng: &mut Rng, patient: &Patient) -> String {
    let age = patient.age.to_string();
    let (noun, short, adjective) = if patient.female {
        ("woman", "F", "female")
    } else {
        ("man", "M", "male")
    };
    let template = rng.text(&[
        "{age}-year-old {noun}",
        "{age}{short}",
        "{age} yo {adjective}",
        "a {age}-year-old {adjective} patient",
    ]);
    fill(
        template,
        &[
            ("{age}", &age),
            ("{noun}", noun),
            ("{short}", short),
            ("{adjective}", adjective),
        ],
    )
}

fn cancer_phrase(rng: &mut Rng, cancer: Cancer) -> &'static str {
    rng.text(match cancer {
        Cancer::Breast => &[
            "invasive ductal carcinoma of the left breast",
            "right breast IDC",
            "invasive lobular carcinoma",
            "breast cancer",
            "carcinoma of the breast",
        ][..],
        Cancer::Nsclc => &[
            "non-small cell lung cancer (adenocarcinoma)",
            "NSCLC, adenocarcinoma subtype",
            "lung adenocarcinoma",
            "non-small-cell lung carcinoma",
        ],
        Cancer::Colorectal => &[
            "adenocarcinoma of the sigmoid colon",
            "rectal adenocarcinoma",
            "colorectal cancer",
            "ascending colon adenocarcinoma",
            "adenocarcinoma of the rectum",
        ],
        Cancer::Pancreatic => &[
            "pancreatic ductal adenocarcinoma",
            "adenocarcinoma of the pancreatic head",
            "PDAC",
            "pancreatic cancer",
            "adenocarcinoma of the pancreas",
        ],
        Cancer::Gastric => &[
            "gastric adenocarcinoma",
            "adenocarcinoma of the stomach",
            "GEJ adenocarcinoma",
            "diffuse-type gastric cancer",
            "gastric cancer (signet-ring cell)",
        ],
        Cancer::Melanoma => &[
            "cutaneous melanoma",
            "nodular melanoma of the back",
            "superficial spreading melanoma",
            "melanoma of the left calf",
        ],
    })
}

fn symptom(rng: &mut Rng, cancer: Cancer) -> &'static str {
    rng.text(match cancer {
        Cancer::Breast => &[
            "a palpable lump found on self-examination",
            "an abnormal screening mammogram",
        ][..],
        Cancer::Nsclc => &["a persistent cough", "an incidental nodule on imaging"],
        Cancer::Colorectal => &[
            "rectal bleeding",
            "iron-deficiency anaemia",
            "a change in bowel habit",
        ],
        Cancer::Pancreatic => &[
            "epigastric discomfort and early satiety",
            "back pain and poor appetite",
        ],
        Cancer::Gastric => &["early satiety and anaemia", "epigastric discomfort"],
        Cancer::Melanoma => &["a changing pigmented lesion", "an enlarging mole"],
    })
}

fn cancer_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient) {
    let phrase = match patient.histology {
        Some("squamous") => "squamous cell carcinoma of the lung",
        _ => cancer_phrase(rng, patient.cancer),
    };
    doc.fact(
        phrase,
        vec![truth("cancer_type", "primary", patient.cancer.value())],
    );
}

fn stage_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient) {
    let group = roman(patient.stage);
    let sub = patient.substage.map(String::from).unwrap_or_default();
    let digit = patient.stage.to_string();
    // Pathologic staging describes a resection specimen.
    let mut templates = vec![
        "stage {R}{s}",
        "Stage {D}{s}",
        "clinical stage {R}{s}",
        "AJCC stage {R}{s}",
        "stage group {R}{s}",
    ];
    if patient.surgery == Some("resected") {
        templates.push("pathologic stage {R}{s}");
    }
    let template = rng.text(&templates);
    let phrase = fill(template, &[("{R}", group), ("{s}", &sub), ("{D}", &digit)]);
    let mut fact = truth("stage", "group", group);
    fact.detail = patient.substage.map(|letter| format!("{group}{letter}"));
    doc.fact(&phrase, vec![fact]);
    if let Some(tnm) = &patient.tnm {
        doc.put(" (");
        doc.fact(tnm, vec![truth("stage", "tnm", tnm)]);
        doc.put(")");
    }
}

/// Writes the metastatic statement (with a leading separator) when there is one.
fn metastatic_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient, separator: &str) {
    if patient.stage == 4 {
        let site = patient.sites[0];
        let phrase = match patient.sites.get(1) {
            Some(second) => fill(
                rng.text(&[
                    "widely metastatic ({a} and {b})",
                    "with {a} and {b} metastases",
                    "metastatic to the {a} and {b}",
                ]),
                &[("{a}", site), ("{b}", second)],
            ),
            None => fill(
                rng.text(&[
                    "metastatic to the {a}",
                    "with {a} metastases",
                    "distant metastases to the {a}",
                ]),
                &[("{a}", site)],
            ),
        };
        doc.put(separator);
        doc.fact(&phrase, vec![truth("metastatic", "metastatic", "true")]);
    } else if rng.chance(0.6) {
        let phrase = rng.text(&[
            "no evidence of metastatic disease",
            "no distant metastases",
            "without distant metastasis",
            "no evidence of distant metastatic disease",
        ]);
        doc.put(separator);
        doc.fact(phrase, vec![truth("metastatic", "metastatic", "false")]);
    }
    if patient.node_negative && rng.chance(0.45) {
        doc.put(", ");
        doc.fact(
            "no nodal involvement",
            vec![truth("finding", "nodal involvement", "absent")],
        );
    }
}

fn marker_phrase(rng: &mut Rng, marker: &Marker) -> (String, Option<String>) {
    let level = marker.level.unwrap_or(0).to_string();
    let variant = marker.variant.unwrap_or("");
    let templates: &[&str] = match (marker.name, marker.value, marker.level) {
        ("HER2", "positive", Some(3)) => &[
            "HER2 3+",
            "HER2 positive (IHC 3+)",
            "HER2+",
            "HER2-positive",
            "HER2 IHC 3+",
        ],
        ("HER2", "positive", _) => &[
            "HER2 IHC 2+, FISH amplified",
            "HER2 2+ with ISH amplification",
            "HER2 2+ (FISH amplified)",
        ],
        ("HER2", "negative", Some(0)) => &["HER2 0", "HER2 negative (IHC 0)", "HER2-negative", "HER2-"],
        ("HER2", "negative", Some(1)) => &["HER2 1+", "HER2 IHC 1+", "HER2 negative (1+)"],
        ("HER2", "negative", _) => &[
            "HER2 IHC 2+, FISH non-amplified",
            "HER2 2+ (ISH not amplified)",
            "HER2 2+, FISH negative",
        ],
        ("HER2", "equivocal", _) => &[
            "HER2 equivocal (IHC 2+, ISH pending)",
            "HER2 2+ (equivocal), FISH pending",
            "HER2 IHC 2+ with reflex FISH pending",
        ],
        ("HER2", _, _) => &[
            "HER2 not tested",
            "HER2 status pending",
            "HER2 testing not performed",
        ],
        ("ER", "positive", _) => &[
            "ER+",
            "ER positive ({l}%)",
            "ER {l}%",
            "ER-pos",
            "estrogen receptor positive",
            "ER strongly positive ({l}%)",
        ],
        ("ER", "negative", _) => &[
            "ER-",
            "ER negative",
            "ER-neg",
            "ER 0%",
            "estrogen receptor negative",
        ],
        ("ER", _, _) => &["ER not assessed", "ER pending"],
        ("PR", "positive", _) => &[
            "PR+",
            "PR positive ({l}%)",
            "PgR {l}%",
            "PR-pos",
            "progesterone receptor positive",
        ],
        ("PR", "negative", _) => &[
            "PR-",
            "PR negative",
            "PR-neg",
            "PgR 0%",
            "progesterone receptor negative",
        ],
        ("PR", _, _) => &["PR not assessed", "PgR pending"],
        ("PD-L1", "positive", _) if marker.cps => &[
            "PD-L1 CPS {l}",
            "PD-L1 combined positive score {l}",
            "PD-L1 (22C3) CPS {l}",
        ],
        ("PD-L1", "negative", _) if marker.cps => &["PD-L1 CPS <1", "PD-L1 CPS 0"],
        ("PD-L1", "positive", Some(level)) if level >= 50 => &[
            "PD-L1 TPS {l}%",
            "PD-L1 high (TPS {l}%)",
            "PD-L1 {l}%",
            "PD-L1 tumor proportion score {l}%",
        ],
        ("PD-L1", "positive", _) => &[
            "PD-L1 TPS {l}%",
            "PD-L1 {l}%",
            "PD-L1 expression {l}% (22C3)",
            "PD-L1 positive, TPS {l}%",
        ],
        ("PD-L1", "negative", _) => &[
            "PD-L1 TPS <1%",
            "PD-L1 negative (<1%)",
            "PD-L1 0%",
            "PD-L1 not expressed (TPS <1%)",
        ],
        ("PD-L1", _, _) => &["PD-L1 pending", "PD-L1 not tested", "PD-L1 testing pending"],
        ("EGFR", "positive", _) => &[
            "EGFR {v}",
            "EGFR-mutant ({v})",
            "EGFR mutation detected ({v})",
            "EGFR positive ({v})",
        ],
        ("EGFR", "negative", _) => &[
            "EGFR wild-type",
            "EGFR negative",
            "no EGFR mutation",
            "EGFR WT",
            "EGFR not mutated",
        ],
        ("EGFR", _, _) => &["EGFR pending", "EGFR not tested", "EGFR testing pending"],
        ("ALK", "positive", _) => &[
            "ALK rearranged",
            "ALK-positive",
            "ALK fusion detected",
            "ALK IHC positive",
        ],
        ("ALK", "negative", _) => &[
            "ALK negative",
            "no ALK rearrangement",
            "ALK not rearranged",
            "ALK-neg",
        ],
        ("ALK", _, _) => &["ALK pending", "ALK not tested"],
        ("KRAS", "positive", _) => &[
            "KRAS {v}",
            "KRAS {v} mutated",
            "KRAS-mutant ({v})",
            "KRAS mutation ({v})",
        ],
        ("KRAS", "negative", _) => &["KRAS wild-type", "KRAS WT", "no KRAS mutation", "KRAS negative"],
        ("KRAS", _, _) => &["KRAS pending", "KRAS not tested"],
        ("BRAF", "positive", _) => &[
            "BRAF {v}",
            "BRAF {v} mutant",
            "BRAF {v} mutation detected",
            "BRAF-mutant ({v})",
        ],
        ("BRAF", "negative", _) => &["BRAF wild-type", "BRAF WT", "no BRAF mutation", "BRAF negative"],
        ("BRAF", _, _) => &["BRAF pending", "BRAF testing pending"],
        ("MSI", "positive", _) => &[
            "MSI-H",
            "dMMR",
            "MSI-high",
            "mismatch repair deficient (loss of MLH1/PMS2)",
            "microsatellite instability-high",
        ],
        ("MSI", "negative", _) => &[
            "MSS",
            "pMMR",
            "microsatellite stable",
            "MMR proficient",
            "MMR proteins intact",
            "MSS/pMMR",
        ],
        _ => &["MSI pending", "MMR status not assessed"],
    };
    let phrase = fill(rng.text(templates), &[("{l}", &level), ("{v}", variant)]);
    let detail = match marker.name {
        "PD-L1" if marker.value == "negative" && marker.cps => Some("CPS <1".to_string()),
        "PD-L1" if marker.value == "negative" => Some("TPS <1%".to_string()),
        "PD-L1" if marker.cps => marker.level.map(|level| format!("CPS {level}")),
        "PD-L1" => marker.level.map(|level| format!("TPS {level}%")),
        _ => None,
    };
    (phrase, detail)
}

fn marker_truth(marker: &Marker, detail: Option<String>) -> Truth {
    let mut fact = truth("biomarker", marker.name, marker.value);
    fact.detail = detail;
    fact
}

/// Writes the biomarker list, with combined forms where the values allow.
fn markers_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient, separator: &str) {
    let markers = &patient.markers;
    let value = |name: &str| {
        markers
            .iter()
            .find(|marker| marker.name == name)
            .map(|marker| marker.value)
    };
    let mut written: Vec<&str> = Vec::new();
    let mut pieces = 0;
    let next = |doc: &mut Doc, pieces: &mut usize| {
        if *pieces > 0 {
            doc.put(separator);
        }
        *pieces += 1;
    };
    let triple = value("ER") == Some("negative")
        && value("PR") == Some("negative")
        && value("HER2") == Some("negative");
    if triple && rng.chance(0.35) {
        next(doc, &mut pieces);
        let phrase = rng.text(&["triple-negative", "triple negative"]);
        let truths = ["ER", "PR", "HER2"]
            .iter()
            .filter_map(|name| markers.iter().find(|marker| marker.name == *name))
            .map(|marker| marker_truth(marker, None))
            .collect();
        doc.fact(phrase, truths);
        return;
    }
    if let (Some(er), Some(pr)) = (value("ER"), value("PR"))
        && er == pr
        && matches!(er, "positive" | "negative")
        && rng.chance(0.4)
    {
        next(doc, &mut pieces);
        let phrase = fill(
            rng.text(&["ER/PR {v}", "ER and PR {v}", "{v} for ER and PR"]),
            &[("{v}", er)],
        );
        let phrase = capitalise_if(&phrase, pieces == 1 && separator.contains('\n'));
        doc.fact(
            &phrase,
            vec![truth("biomarker", "ER", er), truth("biomarker", "PR", pr)],
        );
        written.extend(["ER", "PR"]);
    }
    if value("EGFR") == Some("negative") && value("ALK") == Some("negative") && rng.chance(0.4) {
        next(doc, &mut pieces);
        let phrase = rng.text(&[
            "negative for EGFR and ALK",
            "no EGFR or ALK alterations",
            "EGFR/ALK negative",
        ]);
        doc.fact(
            phrase,
            vec![
                truth("biomarker", "EGFR", "negative"),
                truth("biomarker", "ALK", "negative"),
            ],
        );
        written.extend(["EGFR", "ALK"]);
    }
    for marker in markers {
        if written.contains(&marker.name) {
            continue;
        }
        next(doc, &mut pieces);
        let (phrase, detail) = marker_phrase(rng, marker);
        doc.fact(&phrase, vec![marker_truth(marker, detail)]);
    }
}

fn capitalise_if(text: &str, yes: bool) -> String {
    if yes { capitalise(text) } else { text.to_string() }
}

fn surgery_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient) -> bool {
    let Some(status) = patient.surgery else {
        return false;
    };
    let month = rng.text(&MONTHS);
    let year = rng.range(2021, 2025).to_string();
    let weeks = rng.range(3, 12).to_string();
    let template = rng.text(match status {
        "resected" => &[
            "s/p {P}",
            "status post {P} ({M} {Y})",
            "underwent {P} in {M} {Y}",
            "{P} performed {W} weeks ago with R0 margins",
            "{Pc} ({M} {Y}), R0",
        ][..],
        "unresected" => &[
            "deemed unresectable given the extent of local disease",
            "unresectable disease",
            "not a surgical candidate owing to frailty",
            "judged inoperable by the surgical team",
            "primary not resectable owing to vascular involvement",
        ],
        _ => &[
            "declined surgery",
            "has declined {P}",
            "no surgery to date",
            "surgery not yet performed",
            "surgical resection deferred",
            "has not undergone surgery",
        ],
    });
    let phrase = fill(
        template,
        &[
            ("{P}", patient.procedure),
            ("{Pc}", &capitalise(patient.procedure)),
            ("{M}", month),
            ("{Y}", &year),
            ("{W}", &weeks),
        ],
    );
    let name = if template.contains("{P") {
        patient.procedure.to_ascii_lowercase()
    } else {
        "surgery".to_string()
    };
    let phrase = capitalise(&phrase);
    doc.fact(&phrase, vec![truth("surgery", &name, status)]);
    true
}

fn line_phrase(rng: &mut Rng, line: &Line) -> String {
    let (upper, lower): (&str, &str) = match line.setting {
        "first-line" => *rng.pick(&[("First-line ", "first-line "), ("1L ", ""), ("", "")]),
        "second-line" => *rng.pick(&[("Second-line ", "second-line "), ("2L ", ""), ("", "")]),
        "adjuvant" => *rng.pick(&[("Adjuvant ", "adjuvant "), ("Postoperative ", "postoperative ")]),
        _ => *rng.pick(&[
            ("Neoadjuvant ", "neoadjuvant "),
            ("Preoperative ", "preoperative "),
        ]),
    };
    let template = rng.text(match line.outcome {
        "progression" => &[
            "{S}{R} x{n} cycles with progression after {m} months",
            "progressed on {s}{R} after {m} months",
            "{S}{R} -> PD at {m} months",
            "disease progression on {s}{R} ({Y})",
            "{S}{R}, complicated by progressive disease after {m} months",
            "{S}{R}: refractory, progressed within {m} months",
        ][..],
        "response" => &[
            "{S}{R} x {n} cycles with partial response",
            "completed {n} cycles of {s}{R} with a complete response",
            "good radiologic response to {s}{R}",
            "{S}{R} ({n} cycles), partial response on restaging",
        ],
        _ => &[
            "currently on {s}{R} (cycle {n})",
            "{S}{R} ongoing, tolerating well",
            "continues on {s}{R} since {M}",
            "{S}{R}, now cycle {n}, stable disease",
            "receiving {s}{R}, cycle {n} of {k}",
        ],
    });
    let cycles = rng.range(2, 8).to_string();
    let months = rng.range(3, 14).to_string();
    let total = rng.range(8, 12).to_string();
    let year = rng.range(2022, 2025).to_string();
    let month = rng.text(&MONTHS);
    capitalise(&fill(
        template,
        &[
            ("{S}", upper),
            ("{s}", lower),
            ("{R}", &line.regimen),
            ("{n}", &cycles),
            ("{m}", &months),
            ("{k}", &total),
            ("{Y}", &year),
            ("{M}", month),
        ],
    ))
}

fn lines_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient, separator: &str) -> bool {
    for (index, line) in patient.lines.iter().enumerate() {
        if index > 0 {
            doc.put(separator);
        }
        let phrase = line_phrase(rng, line);
        doc.fact(&phrase, vec![truth("prior_line", &line.regimen, line.outcome)]);
    }
    !patient.lines.is_empty()
}

fn ecog_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient) {
    let template = rng.text(&[
        "ECOG {e}",
        "ECOG PS {e}",
        "performance status ECOG {e}",
        "ECOG performance status of {e}",
    ]);
    let score = patient.ecog.to_string();
    let phrase = capitalise(&fill(template, &[("{e}", &score)]));
    doc.fact(&phrase, vec![truth("ecog", "ECOG", &score)]);
}

fn comorbidities_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient) {
    if patient.comorbidities.is_empty() {
        doc.put(rng.text(&["no significant comorbidities", "nil of note", "otherwise well"]));
        return;
    }
    for (index, (phrase, name)) in patient.comorbidities.iter().enumerate() {
        if index > 0 {
            doc.put(if index + 1 == patient.comorbidities.len() {
                " and "
            } else {
                ", "
            });
        }
        doc.fact(phrase, vec![truth("comorbidity", name, "present")]);
    }
}

fn findings_fact(rng: &mut Rng, doc: &mut Doc, patient: &Patient) {
    for (name, present) in &patient.findings {
        doc.put(" ");
        let phrase = match (*name, present) {
            ("weight loss", true) => fill(
                rng.text(&[
                    "Reports {k} kg weight loss over three months",
                    "Notes weight loss of {k} kg",
                ]),
                &[("{k}", &rng.range(3, 9).to_string())],
            ),
            ("weight loss", false) => rng.pick(&["Denies weight loss", "No weight loss"]).to_string(),
            _ => rng.pick(&["Denies night sweats", "No night sweats"]).to_string(),
        };
        let value = if *present { "present" } else { "absent" };
        doc.fact(&phrase, vec![truth("finding", name, value)]);
        doc.put(".");
    }
}

fn question(rng: &mut Rng) -> &'static str {
    rng.text(&[
        "recommended next step in management?",
        "optimal management going forward.",
        "what do we recommend now?",
        "please advise on the next best step.",
    ])
}

fn imaging(rng: &mut Rng, doc: &mut Doc, patient: &Patient) {
    if patient.stage == 4 {
        let size = format!("{}.{}", rng.range(1, 5), rng.range(0, 9));
        doc.put(&format!(
            "CT chest/abdomen/pelvis: {} lesions, largest {size} cm.",
            patient.sites[0]
        ));
    } else {
        doc.put(rng.text(&[
            "CT chest/abdomen/pelvis: no distant disease.",
            "PET/CT: FDG-avid primary only.",
        ]));
    }
}

fn social(rng: &mut Rng) -> &'static str {
    rng.text(&[
        "Never smoker.",
        "Former smoker (30 pack-years).",
        "Lives with family.",
        "Drinks alcohol socially.",
    ])
}

fn tumor_board(rng: &mut Rng, patient: &Patient, doc: &mut Doc) {
    let upper = rng.chance(0.3);
    let header = |name: &str| {
        if upper {
            name.to_ascii_uppercase()
        } else {
            name.to_string()
        }
    };
    doc.put(rng.text(&[
        "MULTIDISCIPLINARY TUMOR BOARD\n",
        "Tumour board note\n",
        "Tumor Board Case Presentation\n",
    ]));
    doc.section("demographics");
    doc.put(&format!(
        "{}: {}. ",
        header("Patient"),
        demographics(rng, patient)
    ));
    ecog_fact(rng, doc, patient);
    doc.put(".\n");
    doc.section("history");
    doc.put(&format!(
        "{}: Presented with {}.",
        header("History"),
        symptom(rng, patient.cancer)
    ));
    findings_fact(rng, doc, patient);
    doc.put("\n");
    doc.section("pathology");
    let pathology = rng.text(&["Pathology", "Histology", "Path"]);
    doc.put(&format!("{}: Core biopsy showed ", header(pathology)));
    cancer_fact(rng, doc, patient);
    doc.put(&format!(", grade {}.\n", rng.range(1, 3)));
    let mut order = [0, 1, 2];
    rng.shuffle(&mut order);
    for part in order {
        match part {
            0 => {
                doc.section("biomarkers");
                let label = rng.text(&[
                    "Biomarkers",
                    "Molecular",
                    "Molecular profile",
                    "Biomarker profile",
                ]);
                doc.put(&format!("{}: ", header(label)));
                let separator = rng.text(&[", ", "; ", " / "]);
                markers_fact(rng, doc, patient, separator);
                doc.put(".\n");
            }
            1 => {
                doc.section("staging");
                doc.put(&format!("{}: ", header(rng.text(&["Staging", "Stage"]))));
                stage_fact(rng, doc, patient);
                metastatic_fact(rng, doc, patient, ", ");
                doc.put(".\n");
            }
            _ => {
                if patient.surgery.is_some() {
                    doc.section("surgery");
                    doc.put(&format!(
                        "{}: ",
                        header(rng.text(&["Surgery", "Surgical history", "Operative history"]))
                    ));
                    surgery_fact(rng, doc, patient);
                    doc.put(".\n");
                }
            }
        }
    }
    doc.section("treatment_history");
    doc.put(&format!(
        "{}: ",
        header(rng.text(&[
            "Prior therapy",
            "Treatment history",
            "Systemic therapy",
            "Treatment to date"
        ]))
    ));
    if !lines_fact(rng, doc, patient, "; ") {
        doc.put("none");
    }
    doc.put(".\n");
    doc.section("imaging");
    doc.put(&format!("{}: ", header("Imaging")));
    imaging(rng, doc, patient);
    doc.put("\n");
    doc.section("comorbidities");
    doc.put(&format!(
        "{}: ",
        header(rng.text(&["Comorbidities", "PMH", "Past medical history"]))
    ));
    comorbidities_fact(rng, doc, patient);
    doc.put(".\n");
    doc.section("social");
    doc.put(&format!("{}: {}\n", header("Social history"), social(rng)));
    doc.section("question");
    doc.put(&format!(
        "{}: {}\n",
        header(rng.text(&["Question", "Question for the board", "Discussion"])),
        capitalise(question(rng))
    ));
}

fn letter(rng: &mut Rng, patient: &Patient, doc: &mut Doc) {
    let doctor = rng.text(&["Patel", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Hughes"]);
    doc.put(&format!("Dear Dr {doctor},\n\n"));
    doc.section("demographics");
    doc.put(&format!(
        "Thank you for seeing this {}, whom I am referring with ",
        demographics(rng, patient).trim_start_matches("a ")
    ));
    doc.section("history");
    cancer_fact(rng, doc, patient);
    doc.put(
        &format!(". She first presented with {}.", symptom(rng, patient.cancer))
            .replace("She ", if patient.female { "She " } else { "He " }),
    );
    findings_fact(rng, doc, patient);
    doc.put("\n\n");
    doc.section("biomarkers");
    doc.put(rng.text(&[
        "Molecular testing showed ",
        "Receptor and molecular studies were as follows: ",
        "Biomarker results: ",
    ]));
    markers_fact(rng, doc, patient, ", ");
    doc.put(". ");
    doc.section("staging");
    doc.put("The disease is ");
    stage_fact(rng, doc, patient);
    metastatic_fact(rng, doc, patient, ", ");
    doc.put(".\n\n");
    doc.section("surgery");
    if surgery_fact(rng, doc, patient) {
        doc.put(". ");
    }
    doc.section("treatment_history");
    if lines_fact(rng, doc, patient, ". ") {
        doc.put(".");
    } else {
        doc.put("No systemic therapy has been given so far.");
    }
    doc.put("\n\n");
    doc.section("comorbidities");
    doc.put("Other history: ");
    comorbidities_fact(rng, doc, patient);
    doc.put(". ");
    doc.section("history");
    ecog_fact(rng, doc, patient);
    doc.put(". ");
    doc.section("social");
    doc.put(social(rng));
    doc.put("\n\n");
    doc.section("question");
    doc.put(rng.text(&[
        "I would appreciate your opinion on further management.",
        "Kindly advise on the next step.",
        "Your recommendation regarding management would be welcome.",
    ]));
    doc.put(&format!(
        "\n\nYours sincerely,\nDr {}\n",
        rng.text(&["Ahmed", "Costa", "Novak"])
    ));
}

fn discharge(rng: &mut Rng, patient: &Patient, doc: &mut Doc) {
    doc.put("DISCHARGE SUMMARY\n");
    doc.put(&format!(
        "Admission date: {} {} 2025\n",
        rng.range(1, 28),
        rng.text(&MONTHS)
    ));
    doc.section("history");
    doc.put("Diagnosis: ");
    stage_fact(rng, doc, patient);
    doc.put(" ");
    cancer_fact(rng, doc, patient);
    metastatic_fact(rng, doc, patient, ", ");
    doc.put("\n");
    doc.put(&format!(
        "Hospital course:\nAdmitted with {} for work-up.",
        symptom(rng, patient.cancer)
    ));
    findings_fact(rng, doc, patient);
    doc.put(" Symptoms settled with supportive care.\n");
    doc.section("treatment_history");
    doc.put("Oncologic history:\n");
    doc.section("surgery");
    if surgery_fact(rng, doc, patient) {
        doc.put(".\n");
    }
    doc.section("treatment_history");
    if lines_fact(rng, doc, patient, ".\n") {
        doc.put(".\n");
    }
    doc.section("biomarkers");
    doc.put("Molecular pathology: ");
    markers_fact(rng, doc, patient, "; ");
    doc.put(".\n");
    doc.section("comorbidities");
    doc.put("Past medical history: ");
    comorbidities_fact(rng, doc, patient);
    doc.put(".\n");
    doc.section("history");
    doc.put("Performance status: ");
    ecog_fact(rng, doc, patient);
    doc.put(".\n");
    doc.section("social");
    doc.put(&format!("Social history: {}\n", social(rng)));
    doc.section("question");
    doc.put(&format!("Reason for referral: {}\n", question(rng)));
}

fn bullets(rng: &mut Rng, patient: &Patient, doc: &mut Doc) {
    doc.section("demographics");
    doc.put(&format!("{}, ", demographics(rng, patient)));
    cancer_fact(rng, doc, patient);
    doc.put("\n");
    doc.section("biomarkers");
    doc.put("- ");
    markers_fact(rng, doc, patient, " / ");
    doc.put("\n");
    doc.section("staging");
    doc.put("- ");
    stage_fact(rng, doc, patient);
    metastatic_fact(rng, doc, patient, ", ");
    doc.put("\n");
    doc.section("surgery");
    doc.put("- ");
    if !surgery_fact(rng, doc, patient) {
        doc.put("Surgical status: n/a");
    }
    doc.put("\n");
    doc.section("treatment_history");
    doc.put("- Tx: ");
    if !lines_fact(rng, doc, patient, "; ") {
        doc.put("treatment-naive");
    }
    doc.put("\n");
    doc.section("comorbidities");
    doc.put("- PMH: ");
    comorbidities_fact(rng, doc, patient);
    doc.put("\n");
    doc.section("history");
    doc.put("- ");
    ecog_fact(rng, doc, patient);
    findings_fact(rng, doc, patient);
    doc.put("\n");
    doc.section("question");
    doc.put(&format!("- Question: {}\n", question(rng)));
}
