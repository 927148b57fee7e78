//! The structured truth of a synthetic patient, drawn before any text.

use cfeval_guidelines::staging::{Basis, Staging, split_group};

use crate::extract::normalise_regimen;
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cancer {
    Breast,
    Nsclc,
    Colorectal,
    Pancreatic,
    Gastric,
    Melanoma,
}

impl Cancer {
    pub fn value(self) -> &'static str {
        match self {
            Cancer::Breast => "breast",
            Cancer::Nsclc => "nsclc",
            Cancer::Colorectal => "colorectal",
            Cancer::Pancreatic => "pancreatic",
            Cancer::Gastric => "gastric",
            Cancer::Melanoma => "melanoma",
        }
    }
}

/// One block of the cancer mix; shuffled per block so that every block of
/// 16 cases holds every cancer type. Weighted towards the cancers whose
/// treatment turns on the catalog's facts (breast: HER2 and ER; NSCLC:
/// PD-L1, drivers and stage; melanoma: immunotherapy lines), as at a
/// thoracic-heavy tumor board, so that every intervention has enough cases.
const MIX: [Cancer; 16] = [
    Cancer::Breast,
    Cancer::Breast,
    Cancer::Breast,
    Cancer::Breast,
    Cancer::Nsclc,
    Cancer::Nsclc,
    Cancer::Nsclc,
    Cancer::Nsclc,
    Cancer::Nsclc,
    Cancer::Colorectal,
    Cancer::Pancreatic,
    Cancer::Gastric,
    Cancer::Gastric,
    Cancer::Melanoma,
    Cancer::Melanoma,
    Cancer::Melanoma,
];

/// The cancer of case `index` under `seed`.
pub fn cancer_for(seed: u64, index: usize) -> Cancer {
    let block = index / MIX.len();
    let mut order = MIX;
    Rng::derive(seed ^ 0xB10C, block as u64).shuffle(&mut order);
    order[index % MIX.len()]
}

#[derive(Debug, Clone, PartialEq)]
pub struct Marker {
    pub name: &'static str,
    /// positive | negative | equivocal | unknown
    pub value: &'static str,
    /// A level: percent for ER/PR/PD-L1 TPS, score for CPS, IHC score for HER2.
    pub level: Option<u32>,
    /// PD-L1 scored by CPS rather than TPS.
    pub cps: bool,
    /// A named variant (`V600E`, `G12C`, `L858R`).
    pub variant: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub regimen: String,
    /// progression | response | ongoing
    pub outcome: &'static str,
    pub setting: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Patient {
    pub cancer: Cancer,
    pub age: u32,
    pub female: bool,
    pub stage: u32,
    pub substage: Option<char>,
    /// The histology where it decides treatment (NSCLC: `squamous` or
    /// `nonsquamous`).
    pub histology: Option<&'static str>,
    pub tnm: Option<String>,
    pub sites: Vec<&'static str>,
    pub markers: Vec<Marker>,
    /// resected | unresected | not_done | None (not stated)
    pub surgery: Option<&'static str>,
    pub procedure: &'static str,
    pub lines: Vec<Line>,
    pub ecog: u32,
    pub comorbidities: Vec<(&'static str, &'static str)>,
    /// (finding phrase name, present)
    pub findings: Vec<(&'static str, bool)>,
    pub node_negative: bool,
}

fn marker(name: &'static str, value: &'static str) -> Marker {
    Marker {
        name,
        value,
        level: None,
        cps: false,
        variant: None,
    }
}

/// Draws a patient with cancer `cancer`.
pub fn draw(rng: &mut Rng, cancer: Cancer) -> Patient {
    let stage_weights: &[(u32, f64)] = match cancer {
        Cancer::Pancreatic => &[(1, 0.12), (2, 0.25), (3, 0.2), (4, 0.43)],
        // Few stage I NSCLC: most thoracic tumor-board cases are stage
        // II-IV, where PD-L1 and drivers decide treatment.
        Cancer::Nsclc => &[(1, 0.08), (2, 0.2), (3, 0.25), (4, 0.47)],
        // Melanoma reaches the tumor board mostly at stage III-IV.
        Cancer::Melanoma => &[(1, 0.08), (2, 0.17), (3, 0.25), (4, 0.5)],
        Cancer::Gastric => &[(1, 0.13), (2, 0.2), (3, 0.22), (4, 0.45)],
        _ => &[(1, 0.15), (2, 0.27), (3, 0.25), (4, 0.33)],
    };
    let stage = *rng.weighted(stage_weights);
    let female = match cancer {
        Cancer::Breast => !rng.chance(0.02),
        _ => rng.chance(0.5),
    };
    let surgery = draw_surgery(rng, stage);
    // T and N come from the AJCC rows of the stage group (pathologic rows
    // after a resection, clinical ones otherwise), and so does the
    // sub-stage; a pathologic prefix only after a resection.
    let resected = surgery == Some("resected");
    let basis = if resected {
        Basis::Pathologic
    } else {
        Basis::Clinical
    };
    let (t, n, group) = draw_tnm(rng, cancer, basis, stage);
    let substage = split_group(&group).1.chars().next().filter(|_| rng.chance(0.7));
    let node_negative = n == 0;
    let tnm = rng.chance(0.45).then(|| {
        let prefix = rng.pick(if resected { &["p", ""] } else { &["c", ""] });
        let m = u32::from(stage == 4);
        format!("{prefix}T{t}N{n}M{m}")
    });
    let histology = match cancer {
        Cancer::Nsclc => Some(*rng.weighted(&[("nonsquamous", 0.75), ("squamous", 0.25)])),
        _ => None,
    };
    let site_pool: &[&str] = match cancer {
        Cancer::Breast => &["bone", "liver", "lung"],
        Cancer::Nsclc => &["bone", "adrenal", "liver", "contralateral lung"],
        Cancer::Colorectal => &["liver", "lung", "peritoneum"],
        Cancer::Pancreatic => &["liver", "peritoneum"],
        Cancer::Gastric => &["peritoneum", "liver"],
        Cancer::Melanoma => &["lung", "liver", "subcutaneous tissue"],
    };
    let mut sites = Vec::new();
    if stage == 4 {
        let count = rng.range(1, 2) as usize;
        let mut pool = site_pool.to_vec();
        rng.shuffle(&mut pool);
        sites.extend(pool.into_iter().take(count));
    }
    let markers = draw_markers(rng, cancer);
    let procedure = *rng.pick(match cancer {
        Cancer::Breast => &["lumpectomy", "mastectomy", "partial mastectomy"][..],
        Cancer::Nsclc => &[
            "lobectomy",
            "right upper lobectomy",
            "wedge resection",
            "pneumonectomy",
        ],
        Cancer::Colorectal => &[
            "right hemicolectomy",
            "sigmoid colectomy",
            "low anterior resection",
            "hemicolectomy",
        ],
        Cancer::Pancreatic => &["Whipple", "pancreaticoduodenectomy", "distal pancreatectomy"],
        Cancer::Gastric => &["total gastrectomy", "subtotal gastrectomy"],
        Cancer::Melanoma => &["wide local excision", "wide excision"],
    });
    let lines = draw_lines(rng, cancer, stage, surgery, &markers, histology);
    let ecog = *rng.weighted(&[(0, 0.4), (1, 0.45), (2, 0.15)]);
    let mut pool = vec![
        ("hypertension", "hypertension"),
        ("type 2 diabetes", "diabetes"),
        ("COPD", "copd"),
        ("chronic kidney disease", "chronic kidney disease"),
        ("atrial fibrillation", "atrial fibrillation"),
        ("hypothyroidism", "hypothyroidism"),
        ("coronary artery disease", "coronary artery disease"),
        ("osteoarthritis", "osteoarthritis"),
        ("depression", "depression"),
        ("asthma", "asthma"),
    ];
    rng.shuffle(&mut pool);
    let comorbidities = pool
        .into_iter()
        .take(*rng.weighted(&[(0, 0.25), (1, 0.35), (2, 0.3), (3, 0.1)]))
        .collect();
    let mut findings = Vec::new();
    if rng.chance(0.5) {
        findings.push(("weight loss", rng.chance(0.4)));
    }
    if rng.chance(0.3) {
        findings.push(("night sweats", false));
    }
    Patient {
        cancer,
        age: rng.range(34, 84),
        female,
        stage,
        substage,
        histology,
        tnm,
        sites,
        markers,
        surgery,
        procedure,
        lines,
        ecog,
        comorbidities,
        findings,
        node_negative,
    }
}

fn draw_surgery(rng: &mut Rng, stage: u32) -> Option<&'static str> {
    if stage < 4 {
        Some(*rng.weighted(&[("resected", 0.55), ("unresected", 0.2), ("not_done", 0.25)]))
    } else {
        rng.weighted(&[
            (Some("resected"), 0.08),
            (Some("unresected"), 0.2),
            (Some("not_done"), 0.4),
            (None, 0.32),
        ])
        .to_owned()
    }
}

/// A T, N and group of stage `stage` (1-4) from the cancer's AJCC rows of
/// `basis`: M1 rows for stage IV, M0 rows otherwise.
fn draw_tnm(rng: &mut Rng, cancer: Cancer, basis: Basis, stage: u32) -> (u8, u8, String) {
    let main = match stage {
        1 => "I",
        2 => "II",
        3 => "III",
        _ => "IV",
    };
    let m = u8::from(stage == 4);
    let mut candidates: Vec<(u8, u8, &str)> = Vec::new();
    if let Some(table) = Staging::builtin()
        .ok()
        .and_then(|staging| staging.table(cancer.value()))
    {
        for row in table.rows(basis).filter(|row| row.m == m) {
            for group in row.groups.iter().filter(|group| split_group(group).0 == main) {
                candidates.push((row.t, row.n, group));
            }
        }
    }
    match candidates.as_slice() {
        [] => (1 + rng.below(4) as u8, 0, main.to_string()),
        _ => {
            let (t, n, group) = *rng.pick(&candidates);
            (t, n, group.to_string())
        }
    }
}

/// Whether a regimen suits the histology and markers: no pemetrexed in
/// squamous NSCLC, no anti-EGFR antibody unless KRAS is wild-type (the
/// pairs the chart coherence check of `cfeval-perturb` reads from
/// `data/packs/oncology/coherence.yaml`).
fn suits(regimen: &str, markers: &[Marker], histology: Option<&str>) -> bool {
    let lower = regimen.to_ascii_lowercase();
    let pemetrexed_in_squamous = histology == Some("squamous") && lower.contains("pemetrexed");
    let anti_egfr_without_wild_type = lower.contains("cetuximab") && value_of(markers, "KRAS") != "negative";
    !pemetrexed_in_squamous && !anti_egfr_without_wild_type
}

fn suitable(pool: &[&'static str], markers: &[Marker], histology: Option<&str>) -> Vec<&'static str> {
    let fitting: Vec<&'static str> = pool
        .iter()
        .copied()
        .filter(|regimen| suits(regimen, markers, histology))
        .collect();
    if fitting.is_empty() {
        pool.to_vec()
    } else {
        fitting
    }
}

// The explicit derefs fix the generic type to `&str`; clippy's suggested
// removal does not type-check.
#[allow(clippy::explicit_auto_deref)]
fn draw_markers(rng: &mut Rng, cancer: Cancer) -> Vec<Marker> {
    let mut markers = Vec::new();
    match cancer {
        Cancer::Breast => {
            let er = *rng.weighted(&[("positive", 0.64), ("negative", 0.33), ("unknown", 0.03)]);
            let pr = match er {
                "positive" => *rng.weighted(&[("positive", 0.75), ("negative", 0.25)]),
                _ => *rng.weighted(&[("negative", 0.85), ("positive", 0.1), ("unknown", 0.05)]),
            };
            let her2 = *rng.weighted(&[
                ("positive", 0.3),
                ("negative", 0.57),
                ("equivocal", 0.08),
                ("unknown", 0.05),
            ]);
            let mut er_marker = marker("ER", er);
            er_marker.level = (er == "positive").then(|| rng.range(10, 99));
            let mut pr_marker = marker("PR", pr);
            pr_marker.level = (pr == "positive").then(|| rng.range(5, 90));
            let mut her2_marker = marker("HER2", her2);
            her2_marker.level = match her2 {
                "positive" => Some(*rng.pick(&[3, 3, 2])),
                "negative" => Some(*rng.pick(&[0, 1, 2])),
                "equivocal" => Some(2),
                _ => None,
            };
            markers.extend([er_marker, pr_marker, her2_marker]);
        }
        Cancer::Nsclc => {
            let egfr = *rng.weighted(&[("positive", 0.16), ("negative", 0.76), ("unknown", 0.08)]);
            let mut egfr_marker = marker("EGFR", egfr);
            egfr_marker.variant = (egfr == "positive").then(|| *rng.pick(&["L858R", "exon 19 deletion"]));
            markers.push(egfr_marker);
            if egfr != "positive" {
                markers.push(marker(
                    "ALK",
                    *rng.weighted(&[("positive", 0.07), ("negative", 0.88), ("unknown", 0.05)]),
                ));
                if rng.chance(0.75) {
                    let kras = *rng.weighted(&[("positive", 0.35), ("negative", 0.65)]);
                    let mut kras_marker = marker("KRAS", kras);
                    kras_marker.variant = (kras == "positive").then(|| *rng.pick(&["G12C", "G12V", "G12D"]));
                    markers.push(kras_marker);
                }
            }
            let band = *rng.weighted(&[
                ("high", 0.33),
                ("low", 0.25),
                ("negative", 0.34),
                ("unknown", 0.08),
            ]);
            markers.push(pdl1(rng, band, false));
        }
        Cancer::Colorectal => {
            let kras = *rng.weighted(&[("positive", 0.45), ("negative", 0.5), ("unknown", 0.05)]);
            let mut kras_marker = marker("KRAS", kras);
            kras_marker.variant = (kras == "positive").then(|| *rng.pick(&["G12D", "G12V", "G13D"]));
            markers.push(kras_marker);
            if rng.chance(0.85) {
                let braf = *rng.weighted(&[("positive", 0.12), ("negative", 0.88)]);
                let mut braf_marker = marker("BRAF", braf);
                braf_marker.variant = (braf == "positive").then_some("V600E");
                markers.push(braf_marker);
            }
            markers.push(marker(
                "MSI",
                *rng.weighted(&[("positive", 0.16), ("negative", 0.79), ("unknown", 0.05)]),
            ));
        }
        Cancer::Pancreatic => {
            if rng.chance(0.9) {
                let kras = *rng.weighted(&[("positive", 0.88), ("negative", 0.12)]);
                let mut kras_marker = marker("KRAS", kras);
                kras_marker.variant = (kras == "positive").then(|| *rng.pick(&["G12D", "G12V", "G12R"]));
                markers.push(kras_marker);
            }
            if rng.chance(0.75) {
                markers.push(marker(
                    "MSI",
                    *rng.weighted(&[("positive", 0.05), ("negative", 0.85), ("unknown", 0.1)]),
                ));
            }
        }
        Cancer::Gastric => {
            let her2 = *rng.weighted(&[("positive", 0.22), ("negative", 0.68), ("unknown", 0.1)]);
            let mut her2_marker = marker("HER2", her2);
            her2_marker.level = match her2 {
                "positive" => Some(3),
                "negative" => Some(*rng.pick(&[0, 1])),
                _ => None,
            };
            markers.push(her2_marker);
            let band = *rng.weighted(&[("high", 0.45), ("low", 0.25), ("negative", 0.2), ("unknown", 0.1)]);
            markers.push(pdl1(rng, band, true));
            if rng.chance(0.85) {
                markers.push(marker(
                    "MSI",
                    *rng.weighted(&[("positive", 0.09), ("negative", 0.91)]),
                ));
            }
        }
        Cancer::Melanoma => {
            let braf = *rng.weighted(&[("positive", 0.45), ("negative", 0.5), ("unknown", 0.05)]);
            let mut braf_marker = marker("BRAF", braf);
            braf_marker.variant = (braf == "positive").then(|| *rng.pick(&["V600E", "V600K"]));
            markers.push(braf_marker);
            if rng.chance(0.85) {
                let band = *rng.weighted(&[("high", 0.3), ("low", 0.3), ("negative", 0.4)]);
                markers.push(pdl1(rng, band, false));
            }
        }
    }
    markers
}

fn pdl1(rng: &mut Rng, band: &str, cps: bool) -> Marker {
    let (value, level) = match (band, cps) {
        ("high", false) => ("positive", Some(rng.range(50, 95))),
        ("low", false) => ("positive", Some(rng.range(1, 49))),
        ("high", true) => ("positive", Some(rng.range(5, 40))),
        ("low", true) => ("positive", Some(rng.range(1, 4))),
        ("negative", _) => ("negative", Some(0)),
        _ => ("unknown", None),
    };
    Marker {
        name: "PD-L1",
        value,
        level,
        cps,
        variant: None,
    }
}

fn value_of(markers: &[Marker], name: &str) -> &'static str {
    markers
        .iter()
        .find(|marker| marker.name == name)
        .map_or("unknown", |marker| marker.value)
}

fn draw_lines(
    rng: &mut Rng,
    cancer: Cancer,
    stage: u32,
    surgery: Option<&str>,
    markers: &[Marker],
    histology: Option<&str>,
) -> Vec<Line> {
    let mut lines = Vec::new();
    if stage < 4 {
        let chance = if surgery == Some("resected") { 0.35 } else { 0.25 };
        if rng.chance(chance) {
            let regimen = *rng.pick(&suitable(early_regimens(cancer, markers), markers, histology));
            let (outcome, setting) = if surgery == Some("resected") {
                *rng.pick(&[("response", "neoadjuvant"), ("ongoing", "adjuvant")])
            } else {
                *rng.pick(&[("response", "neoadjuvant"), ("ongoing", "neoadjuvant")])
            };
            lines.push(Line {
                regimen: regimen.to_string(),
                outcome,
                setting,
            });
        }
        return lines;
    }
    // Stage IV: newly diagnosed (the first-line decision), on a first line,
    // or past a progressed one. PD-L1 decides first-line therapy in NSCLC,
    // gastric cancer and melanoma: more of those cases sit before any
    // progression, NSCLC most often at the first-line decision (PD-L1 and
    // drivers just reported), melanoma and gastric cancer more often on
    // first-line immunotherapy. Metastatic breast cancer whose receptor
    // profile is incomplete has no line yet: first-line therapy waits for
    // the profile.
    let count = match cancer {
        Cancer::Breast if !breast_profile_complete(markers) => 0,
        Cancer::Nsclc => *rng.weighted(&[(0, 0.46), (1, 0.46), (2, 0.08)]),
        Cancer::Gastric | Cancer::Melanoma => *rng.weighted(&[(0, 0.32), (1, 0.58), (2, 0.1)]),
        _ => *rng.weighted(&[(0, 0.35), (1, 0.45), (2, 0.2)]),
    };
    let first_pool = suitable(first_line_regimens(cancer, markers), markers, histology);
    let second_pool = suitable(second_line_regimens(cancer, markers), markers, histology);
    for index in 0..count {
        let last = index + 1 == count;
        let outcome = if !last {
            "progression"
        } else if index == 0 {
            *rng.weighted(&[("ongoing", 0.62), ("progression", 0.1), ("response", 0.28)])
        } else {
            *rng.weighted(&[("ongoing", 0.55), ("progression", 0.3), ("response", 0.15)])
        };
        let pool = if index == 0 { &first_pool } else { &second_pool };
        let mut regimen = rng.pick(pool).to_string();
        // A later line is a different regimen.
        let same = |a: &str, b: &str| normalise_regimen(a) == normalise_regimen(b);
        if lines.iter().any(|line: &Line| same(&line.regimen, &regimen)) {
            regimen = pool
                .iter()
                .find(|other| lines.iter().all(|line| !same(&line.regimen, other)))
                .map_or(regimen, |other| other.to_string());
        }
        if lines.iter().any(|line: &Line| same(&line.regimen, &regimen)) {
            break;
        }
        lines.push(Line {
            regimen,
            outcome,
            setting: if index == 0 { "first-line" } else { "second-line" },
        });
    }
    lines
}

/// Whether a breast cancer's ER and HER2 results pick a treatment family
/// (HER2-positive, hormone-receptor positive, or triple-negative).
fn breast_profile_complete(markers: &[Marker]) -> bool {
    let (er, her2) = (value_of(markers, "ER"), value_of(markers, "HER2"));
    her2 == "positive" || er == "positive" || (er == "negative" && her2 == "negative")
}

/// Triple-negative: ER and HER2 both reported negative.
fn triple_negative(markers: &[Marker]) -> bool {
    value_of(markers, "ER") == "negative" && value_of(markers, "HER2") == "negative"
}

fn early_regimens(cancer: Cancer, markers: &[Marker]) -> &'static [&'static str] {
    match cancer {
        Cancer::Breast if value_of(markers, "HER2") == "positive" => {
            &["TCHP", "docetaxel/carboplatin/trastuzumab/pertuzumab"]
        }
        Cancer::Breast if value_of(markers, "ER") == "positive" => &["AC-T", "letrozole", "tamoxifen"],
        Cancer::Breast if triple_negative(markers) => &["AC-T", "carboplatin/paclitaxel/pembrolizumab"],
        Cancer::Breast => &["AC-T"],
        Cancer::Nsclc if value_of(markers, "EGFR") == "positive" => &["osimertinib", "cisplatin/pemetrexed"],
        Cancer::Nsclc => &["cisplatin/pemetrexed", "carboplatin + paclitaxel"],
        Cancer::Colorectal => &["FOLFOX", "CAPOX"],
        Cancer::Pancreatic => &["FOLFIRINOX", "gemcitabine/capecitabine"],
        Cancer::Gastric => &["FLOT"],
        Cancer::Melanoma if value_of(markers, "BRAF") == "positive" => {
            &["nivolumab", "dabrafenib + trametinib"]
        }
        Cancer::Melanoma => &["nivolumab", "pembrolizumab"],
    }
}

fn first_line_regimens(cancer: Cancer, markers: &[Marker]) -> &'static [&'static str] {
    match cancer {
        Cancer::Breast if value_of(markers, "HER2") == "positive" => &[
            "docetaxel/trastuzumab/pertuzumab",
            "paclitaxel + trastuzumab + pertuzumab",
        ],
        Cancer::Breast if value_of(markers, "ER") == "positive" => &[
            "letrozole + palbociclib",
            "anastrozole/ribociclib",
            "letrozole/abemaciclib",
        ],
        Cancer::Breast => &["paclitaxel + pembrolizumab", "capecitabine"],
        Cancer::Nsclc if value_of(markers, "EGFR") == "positive" => &["osimertinib"],
        Cancer::Nsclc if value_of(markers, "ALK") == "positive" => &["alectinib"],
        Cancer::Nsclc => &[
            "carboplatin/pemetrexed/pembrolizumab",
            "pembrolizumab",
            "carboplatin + paclitaxel + pembrolizumab",
            "nivolumab + ipilimumab",
        ],
        Cancer::Colorectal if value_of(markers, "MSI") == "positive" => &["pembrolizumab"],
        Cancer::Colorectal => &["FOLFOX + bevacizumab", "CAPOX/bevacizumab", "FOLFIRI + cetuximab"],
        Cancer::Pancreatic => &["FOLFIRINOX", "gemcitabine + nab-paclitaxel"],
        Cancer::Gastric if value_of(markers, "HER2") == "positive" => {
            &["CAPOX + trastuzumab", "FOLFOX/trastuzumab/pembrolizumab"]
        }
        Cancer::Gastric => &["FOLFOX + nivolumab", "CAPOX/nivolumab", "FOLFOX"],
        // Immunotherapy first is preferred in BRAF-mutant melanoma too
        // (DREAMseq); BRAF/MEK inhibition first for the rest.
        Cancer::Melanoma if value_of(markers, "BRAF") == "positive" => &[
            "nivolumab",
            "ipilimumab + nivolumab",
            "nivolumab/relatlimab",
            "dabrafenib + trametinib",
        ],
        Cancer::Melanoma => &[
            "nivolumab",
            "pembrolizumab",
            "ipilimumab + nivolumab",
            "nivolumab/relatlimab",
        ],
    }
}

fn second_line_regimens(cancer: Cancer, markers: &[Marker]) -> &'static [&'static str] {
    match cancer {
        Cancer::Breast if value_of(markers, "HER2") == "positive" => &["trastuzumab deruxtecan", "T-DXd"],
        Cancer::Breast if value_of(markers, "ER") == "positive" => {
            &["fulvestrant", "exemestane/everolimus", "capecitabine"]
        }
        Cancer::Breast => &["sacituzumab", "eribulin"],
        Cancer::Nsclc => &["docetaxel", "docetaxel + ramucirumab", "carboplatin/pemetrexed"],
        Cancer::Colorectal => &["FOLFIRI + bevacizumab", "FOLFOX", "regorafenib"],
        Cancer::Pancreatic => &["gemcitabine + nab-paclitaxel", "nal-IRI/5-FU"],
        Cancer::Gastric => &["ramucirumab + paclitaxel", "irinotecan", "docetaxel"],
        Cancer::Melanoma if value_of(markers, "BRAF") == "positive" => &[
            "dabrafenib/trametinib",
            "ipilimumab + nivolumab",
            "encorafenib + binimetinib",
        ],
        Cancer::Melanoma => &["ipilimumab", "ipilimumab + nivolumab", "lifileucel"],
    }
}
