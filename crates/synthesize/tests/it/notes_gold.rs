//! The rule extractor on oncology notes written by hand by a clinician who
//! never saw its code (`tests/gold/notes/*.jsonl`: tumor-board summaries,
//! discharge summaries, referral letters, clinic shorthand, bullet lists,
//! pathology reports, radiology-heavy notes, non-native English), each with
//! its true decisive facts. Precision and recall per fact kind, with every
//! miss printed under `CFEVAL_NOTES_REPORT=1`:
//!
//! ```sh
//! CFEVAL_NOTES_REPORT=1 cargo test -p cfeval-synthesize --test it notes_gold -- --nocapture
//! ```
//!
//! Issue 15's goal is precision >= 0.97 and recall >= 0.95 per kind; the
//! floors below hold what the extractor reached when the set was added, so
//! that no change makes it worse (BENCHMARKS.md, "E-Synthesis on notes
//! written by hand").

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cfeval_schema::Fact;
use cfeval_synthesize::extract::{extract_facts, sections, verify_fact};
use serde::Deserialize;

#[derive(Debug, Deserialize)]
struct Note {
    id: String,
    style: String,
    text: String,
    truth: Truth,
}

#[derive(Debug, Deserialize)]
struct Truth {
    cancer_type: Option<String>,
    stage: Option<String>,
    metastatic: Option<bool>,
    #[serde(default)]
    biomarkers: BTreeMap<String, String>,
    surgery: Option<String>,
    #[serde(default)]
    prior_lines: Vec<PriorLine>,
}

#[derive(Debug, Deserialize)]
struct PriorLine {
    outcome: String,
}

fn notes(set: &str) -> Vec<Note> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/gold")
        .join(set);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "jsonl"))
        .collect();
    files.sort();
    let mut notes = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("notes file");
        for (index, line) in text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
        {
            notes.push(
                serde_json::from_str(line)
                    .unwrap_or_else(|error| panic!("{}:{}: {error}", file.display(), index + 1)),
            );
        }
    }
    notes
}

/// The (kind, key → value) facts a note states, as comparable pairs: one
/// value per key (the extractor's first affirmed fact of the key).
/// A gold cancer type in the vocabulary's words: the held-out set's writer
/// used short names (`hcc`, `rcc`, …) for some of the vocabulary's types.
/// Alternatives are joined by `|`: a gastro-oesophageal junction cancer is
/// treated as gastric or as oesophageal, and either reading is right.
fn vocabulary_cancer_type(value: &str) -> &str {
    match value {
        "biliary" => "cholangiocarcinoma",
        "hcc" => "hepatocellular",
        "head_neck" => "head_and_neck",
        "rcc" => "renal",
        "glioblastoma" => "glioma",
        "gej" => "gastric|esophageal",
        // A gastrointestinal stromal tumour is a soft-tissue sarcoma (WHO);
        // the vocabulary has no type of its own for it.
        "gist" => "sarcoma",
        other => other,
    }
}

/// Whether an extracted value is the gold value (or one of its `|`
/// alternatives).
fn matches(gold: &str, found: &str) -> bool {
    gold == found || gold.split('|').any(|alternative| alternative == found)
}

fn truth_pairs(truth: &Truth) -> BTreeMap<String, String> {
    let mut pairs = BTreeMap::new();
    if let Some(value) = &truth.cancer_type {
        pairs.insert(
            "cancer_type".to_string(),
            vocabulary_cancer_type(value).to_string(),
        );
    }
    if let Some(value) = &truth.stage {
        // The group without its sub-letter, as extracted groups are compared.
        pairs.insert("stage:group".to_string(), stage_group(value));
    }
    if let Some(value) = truth.metastatic {
        pairs.insert("metastatic".to_string(), value.to_string());
    }
    for (marker, value) in &truth.biomarkers {
        pairs.insert(format!("biomarker:{marker}"), value.clone());
    }
    if let Some(value) = &truth.surgery {
        pairs.insert("surgery".to_string(), value.clone());
    }
    // Prior lines: how many of each outcome.
    let mut outcomes: BTreeMap<&str, usize> = BTreeMap::new();
    for line in &truth.prior_lines {
        *outcomes.entry(line.outcome.as_str()).or_default() += 1;
    }
    for (outcome, count) in outcomes {
        pairs.insert(format!("prior_line:{outcome}"), count.to_string());
    }
    pairs
}

fn extracted_pairs(facts: &[Fact]) -> BTreeMap<String, String> {
    let mut pairs = BTreeMap::new();
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    // Every fact the extractor states (a negative marker is `negated`
    // polarity with value `negative`: still a statement of its value).
    for fact in facts {
        let key = match fact.kind.as_str() {
            "cancer_type" | "metastatic" | "surgery" => fact.kind.clone(),
            "stage" if fact.name.eq_ignore_ascii_case("group") => "stage:group".to_string(),
            "biomarker" => format!("biomarker:{}", fact.name),
            "prior_line" => {
                *outcomes.entry(fact.value.clone()).or_default() += 1;
                continue;
            }
            _ => continue,
        };
        let value = if key == "stage:group" {
            stage_group(&fact.value)
        } else {
            fact.value.clone()
        };
        pairs.entry(key).or_insert(value);
    }
    for (outcome, count) in outcomes {
        pairs.insert(format!("prior_line:{outcome}"), count.to_string());
    }
    pairs
}

/// A stage group without its sub-letter (IIIB is III).
fn stage_group(value: &str) -> String {
    value
        .trim_end_matches(['A', 'B', 'C', 'a', 'b', 'c', '1', '2'])
        .to_string()
}

/// The report group of a key: `biomarker:HER2` stays, prior-line outcomes
/// pool as `prior_line`.
fn group(key: &str) -> String {
    if key.starts_with("prior_line:") {
        "prior_line".to_string()
    } else {
        key.to_string()
    }
}

#[derive(Debug, Default)]
struct Counts {
    correct: usize,
    extracted: usize,
    truth: usize,
}

impl Counts {
    fn precision(&self) -> f64 {
        self.correct as f64 / self.extracted.max(1) as f64
    }
    fn recall(&self) -> f64 {
        self.correct as f64 / self.truth.max(1) as f64
    }
}

/// Scores the rule extractor on the notes of `set`, prints the figures per
/// fact kind (and, with `verbose`, every miss) and returns the overall
/// counts and the number of styles.
fn score_set(set: &str, verbose: bool) -> (Counts, usize) {
    let notes = notes(set);
    assert!(notes.len() >= 90, "the {set} set has {} notes", notes.len());
    let mut groups: BTreeMap<String, Counts> = BTreeMap::new();
    let mut styles: BTreeSet<&str> = BTreeSet::new();
    for note in &notes {
        styles.insert(&note.style);
        let facts = extract_facts(&note.text, &sections::split(&note.text));
        let truth = truth_pairs(&note.truth);
        let extracted = extracted_pairs(&facts);
        // Only kinds the truth speaks to are scored (a note that says
        // nothing of surgery has no surgery truth to be wrong against).
        for (key, value) in &truth {
            let counts = groups.entry(group(key)).or_default();
            counts.truth += 1;
            match extracted.get(key) {
                Some(found) if matches(value, found) => counts.correct += 1,
                found => {
                    if verbose {
                        println!(
                            "{} [{}] {key}: truth {value}, extracted {found:?}",
                            note.id, note.style
                        );
                    }
                }
            }
        }
        for (key, value) in &extracted {
            let counts = groups.entry(group(key)).or_default();
            counts.extracted += 1;
            if verbose && !truth.contains_key(key) {
                println!(
                    "{} [{}] {key}: extracted {value}, not in the truth",
                    note.id, note.style
                );
            }
        }
    }
    println!("{set}: {} notes, {} styles", notes.len(), styles.len());
    let mut overall = Counts::default();
    for (group, counts) in &groups {
        println!(
            "{group:<22} truth={:>3} extracted={:>3} correct={:>3} precision={:.3} recall={:.3}",
            counts.truth,
            counts.extracted,
            counts.correct,
            counts.precision(),
            counts.recall()
        );
        overall.correct += counts.correct;
        overall.extracted += counts.extracted;
        overall.truth += counts.truth;
    }
    println!(
        "{:<22} truth={:>3} extracted={:>3} correct={:>3} precision={:.3} recall={:.3}",
        "overall",
        overall.truth,
        overall.extracted,
        overall.correct,
        overall.precision(),
        overall.recall()
    );
    (overall, styles.len())
}

#[test]
fn notes_gold_precision_and_recall_per_fact_kind() {
    let (overall, styles) = score_set("notes", std::env::var_os("CFEVAL_NOTES_REPORT").is_some());
    assert!(overall.truth >= 500, "{} true facts", overall.truth);
    assert!(styles >= 8, "{styles} styles");
    // Floors: what the extractor reached when the set was added.
    assert!(overall.recall() >= RECALL_FLOOR, "recall {:.3}", overall.recall());
    assert!(
        overall.precision() >= PRECISION_FLOOR,
        "precision {:.3}",
        overall.precision()
    );
}

/// Just under the last measurement (BENCHMARKS.md: precision 0.950, recall
/// 0.909, prior lines 0.810 / 0.845; before, 0.934 / 0.900, 0.907 / 0.833,
/// 0.881 / 0.766 and first 0.861 / 0.492) —
/// still short of issue 15's goal; raise these as the extractor improves.
const RECALL_FLOOR: f64 = 0.90;
const PRECISION_FLOOR: f64 = 0.94;

/// A second set of 96 notes in 8 other styles (ED handover, MDT referral
/// forms, GP letters, progress notes, second opinions, telegraphic
/// shorthand, trial screening, translated notes), written by another hand
/// after the extractor work above. It was held out for four rounds (0.798
/// / 0.613 when added, then 0.800 / 0.667, 0.816 / 0.732, 0.819 / 0.735)
/// and has been read as a development set since the fifth, when a new
/// held-out set took its place (`notes-heldout2`, below): every miss is
/// printed under `CFEVAL_NOTES_REPORT=1`.
#[test]
fn notes_second_development_set_precision_and_recall() {
    let verbose = std::env::var_os("CFEVAL_NOTES_REPORT").is_some();
    assert_set_holds("notes-dev2", verbose, DEV2_PRECISION_FLOOR, DEV2_RECALL_FLOOR);
}

/// Scores `set` and checks its styles and its floors.
fn assert_set_holds(set: &str, verbose: bool, precision_floor: f64, recall_floor: f64) {
    let (overall, styles) = score_set(set, verbose);
    assert!(styles >= 8, "{set}: {styles} styles");
    assert!(
        overall.recall() >= recall_floor,
        "{set}: recall {:.3}",
        overall.recall()
    );
    assert!(
        overall.precision() >= precision_floor,
        "{set}: precision {:.3}",
        overall.precision()
    );
}

/// Just under the fifth round's measurement: precision 0.845, recall 0.772
/// (cancer type 1.000 / 0.948, metastatic 0.977 / 0.925, stage group 0.940
/// / 0.876, surgery 0.707 / 0.646, prior lines 0.518 / 0.475). Surgery and
/// prior lines are capped by label conventions that differ from the
/// vocabulary's (BENCHMARKS.md, "Fifth round").
const DEV2_RECALL_FLOOR: f64 = 0.76;
const DEV2_PRECISION_FLOOR: f64 = 0.83;

/// A third set of 120 notes in 8 more styles (nurse navigator notes,
/// pharmacists' chemotherapy order checks, palliative care consults,
/// dictated letters with speech-recognition slips, SOAP notes, prior
/// authorisation letters, EHR summaries pasted from structured fields,
/// radiation oncology consults), written blind by a third hand after the
/// fifth round with the vocabulary's conventions written out for it. It was
/// held out once (0.902 / 0.836) and is read as a development set since the
/// sixth round, when `notes-heldout3` took its place: every miss is printed
/// under `CFEVAL_NOTES_REPORT=1`.
#[test]
fn notes_third_development_set_precision_and_recall() {
    let verbose = std::env::var_os("CFEVAL_NOTES_REPORT").is_some();
    assert_set_holds("notes-dev3", verbose, DEV3_PRECISION_FLOOR, DEV3_RECALL_FLOOR);
}

/// Just under what the extractor reached after the sixth round (dictated
/// notes read as said, stopped lines, new lesions): precision 0.912, recall
/// 0.888 (cancer type 1.000 / 0.992, metastatic 0.981 / 0.882, stage group
/// 0.951 / 0.860, surgery 0.962 / 0.926, prior lines 0.669 / 0.736); after
/// the eighth 0.915 / 0.887. Held out it measured 0.902 / 0.836.
const DEV3_RECALL_FLOOR: f64 = 0.88;
const DEV3_PRECISION_FLOOR: f64 = 0.91;

/// A fourth set of 96 notes in 8 more styles (tumour-board summaries,
/// discharge summaries, second-opinion letters that correct the outside
/// record, emergency department notes, trial screening checklists,
/// telehealth visits with facts as the patient recalls them, resident
/// handoffs, notes by non-native writers with European conventions),
/// written blind by a fourth hand with the vocabulary's conventions. It was
/// held out twice (0.849 / 0.827 when added, 0.856 / 0.841 after the sixth
/// round) and is read as a development set since the seventh, when
/// `notes-heldout4` took its place: every miss is printed under
/// `CFEVAL_NOTES_REPORT=1`.
#[test]
fn notes_fourth_development_set_precision_and_recall() {
    let verbose = std::env::var_os("CFEVAL_NOTES_REPORT").is_some();
    assert_set_holds("notes-dev4", verbose, DEV4_PRECISION_FLOOR, DEV4_RECALL_FLOOR);
}

/// Just under what the extractor reached after the seventh round (lab
/// symbols, diseases treated for, history blocks, corrected stages, M0
/// written apart, stages at relapse): precision 0.881, recall 0.867
/// (cancer type 0.978 / 0.958, metastatic 0.978 / 0.917, stage group 0.864
/// / 0.844, surgery 0.912 / 0.912, prior lines 0.638 / 0.698); after the
/// eighth 0.886 / 0.875. Held out it measured 0.856 / 0.841.
const DEV4_RECALL_FLOOR: f64 = 0.86;
const DEV4_PRECISION_FLOOR: f64 = 0.88;

/// A fifth set of 96 notes in 8 more styles (survivorship care plans,
/// cancer genetics letters, pre-operative histories and physicals, infusion
/// nursing notes, hospice referrals, patient-portal message threads,
/// cardio-oncology consults, UK clinic letters to the general
/// practitioner), written blind by a fifth and a sixth hand. It was held out
/// twice (0.850 / 0.828 when added, 0.854 / 0.831 after the seventh round)
/// and is read as a development set since the eighth, when `notes-heldout5`
/// became the one held out and `notes-heldout6` was written: every miss is
/// printed under `CFEVAL_NOTES_REPORT=1`.
#[test]
fn notes_fifth_development_set_precision_and_recall() {
    let verbose = std::env::var_os("CFEVAL_NOTES_REPORT").is_some();
    assert_set_holds("notes-dev5", verbose, DEV5_PRECISION_FLOOR, DEV5_RECALL_FLOOR);
}

/// Just under what the extractor reached after the eighth round (operations
/// still to come in pre-operative notes, regimens advised against or only
/// considered, medication lists, cycles of any number, markers and sizes
/// written falling or rising, TMB counts, the pre-treatment stage kept
/// after neoadjuvant therapy, conditions, completed courses, risks):
/// precision 0.890, recall 0.873 (cancer type 0.989 / 0.979, metastatic
/// 0.989 / 0.927, stage group 0.944 / 0.934, surgery 0.879 / 0.829, prior
/// lines 0.626 / 0.706). Held out it measured 0.850 / 0.828 and 0.854 /
/// 0.831.
const DEV5_RECALL_FLOOR: f64 = 0.86;
const DEV5_PRECISION_FLOOR: f64 = 0.88;

/// A sixth set of 96 notes in 8 more styles (pharmacy medication
/// reconciliations, molecular tumour board reports, trial eligibility
/// emails, nurse telephone triage, inpatient SOAP progress notes, radiation
/// oncology on-treatment reviews, insurance appeal letters, ICU consults),
/// written blind by a seventh hand from the fifth set's README alone, and
/// never read to write a rule: only the figures are printed, never a note,
/// so that it stays a measurement.
#[test]
fn notes_held_out_precision_and_recall() {
    assert_set_holds(
        "notes-heldout5",
        false,
        HELD_OUT_PRECISION_FLOOR,
        HELD_OUT_RECALL_FLOOR,
    );
}

/// Just under what the set measured when it was added, after the seventh
/// round: precision 0.903, recall 0.886 (cancer type 1.000 / 0.990,
/// metastatic 0.989 / 0.948, stage group 0.924 / 0.924, surgery 0.903 /
/// 0.848, prior lines 0.647 / 0.688, biomarkers 0.969 / 0.913). After the
/// eighth round, the second time it was measured: 0.909 / 0.897 (stage
/// group 0.946 / 0.946, prior lines 0.652 / 0.688). After the ninth: 0.919
/// / 0.911 (stage group 1.000 / 1.000, metastatic 0.990 / 0.990).
const HELD_OUT_RECALL_FLOOR: f64 = 0.88;
const HELD_OUT_PRECISION_FLOOR: f64 = 0.90;

/// A seventh set of 96 notes in 8 more styles (nurse navigator intakes,
/// haematology-oncology fellows' overnight admissions, tumour registry
/// abstracts, clinical trial serious adverse event narratives, long
/// dictated new-patient consults, chemotherapy teaching notes, acute
/// oncology assessments, progress notes copied forward with dated
/// updates), written blind by an eighth hand from the fifth and sixth sets'
/// READMEs alone. It was held out once (0.859 / 0.837 when added, after
/// the eighth round) and is read as a development set since the ninth, when
/// `notes-heldout7` was written: every miss is printed under
/// `CFEVAL_NOTES_REPORT=1`.
#[test]
fn notes_sixth_development_set_precision_and_recall() {
    let verbose = std::env::var_os("CFEVAL_NOTES_REPORT").is_some();
    assert_set_holds("notes-dev6", verbose, DEV6_PRECISION_FLOOR, DEV6_RECALL_FLOOR);
}

/// Just under what the set measured held out, after the eighth round:
/// precision 0.859, recall 0.837 (cancer type 0.990 / 1.000, metastatic
/// 0.955 / 0.885, stage group 0.851 / 0.813, surgery 0.938 / 0.871, prior
/// lines 0.541 / 0.545).
const DEV6_RECALL_FLOOR: f64 = 0.83;
const DEV6_PRECISION_FLOOR: f64 = 0.85;

/// An eighth set of 96 notes in 8 more styles (tumour board pre-meeting
/// worksheets, general practitioners' letters, palliative care referrals,
/// surgical oncology follow-up letters, handovers typed on a phone,
/// patients' own written histories, notes by authors writing English as a
/// second language, radiation oncology consults), written blind by a ninth
/// hand from the sixth and seventh sets' READMEs alone. It was held out
/// twice (0.843 / 0.794 before the ninth round, 0.853 / 0.810 after it) and
/// is read as a development set since the tenth, when `notes-heldout8` was
/// written: every miss is printed under `CFEVAL_NOTES_REPORT=1`.
#[test]
fn notes_seventh_development_set_precision_and_recall() {
    let verbose = std::env::var_os("CFEVAL_NOTES_REPORT").is_some();
    assert_set_holds("notes-dev7", verbose, DEV7_PRECISION_FLOOR, DEV7_RECALL_FLOOR);
}

/// Just under the tenth round's measurement: precision 0.889, recall 0.850
/// (stage group 0.978 / 0.978, metastatic 0.989 / 0.969, prior lines 0.667
/// / 0.703); held out it measured 0.853 / 0.810.
const DEV7_RECALL_FLOOR: f64 = 0.84;
const DEV7_PRECISION_FLOOR: f64 = 0.88;

/// A ninth set of 96 notes in 8 more styles (chemotherapy day-unit nurse
/// pre-assessments, tumour-registry abstracts, emergency-department
/// oncology clerkings, cancer-genetics clinic letters, discharge summaries,
/// dictated letters with speech-recognition errors, EHR problem lists,
/// clinic notes opening with a pasted pathology report), written blind on
/// 2026-12-07 by a tenth hand from the seventh set's and the fifth set's
/// READMEs alone. It was held out twice (0.897 / 0.861 before the tenth
/// round, 0.910 / 0.875 after it) and is read as a development set since
/// the eleventh, when `notes-heldout10` was written: every miss is printed
/// under `CFEVAL_NOTES_REPORT=1`.
#[test]
fn notes_eighth_development_set_precision_and_recall() {
    let verbose = std::env::var_os("CFEVAL_NOTES_REPORT").is_some();
    assert_set_holds("notes-dev8", verbose, DEV8_PRECISION_FLOOR, DEV8_RECALL_FLOOR);
}

/// Just under its last held-out measurement, after the tenth round:
/// precision 0.910, recall 0.875 (cancer type 1.000 / 1.000, metastatic
/// 0.989 / 0.979, stage group 0.966 / 0.945, prior lines 0.626 / 0.620).
const DEV8_RECALL_FLOOR: f64 = 0.86;
const DEV8_PRECISION_FLOOR: f64 = 0.89;

/// A tenth set of 96 notes in 8 more styles (hospice and district-nurse
/// home visits, second-opinion letters from a tertiary centre, telehealth
/// visits quoting the patient, operation notes with a post-operative
/// addendum, survivorship care plans, medical students' write-ups,
/// interpreter-mediated visits, handwritten-style fax referrals), written
/// blind on 2026-12-07 by an eleventh hand from the `notes-heldout8`,
/// `notes-dev7` and `notes-heldout5` READMEs alone, after the tenth round;
/// never read to write a rule: only the figures are printed.
#[test]
fn notes_third_held_out_precision_and_recall() {
    assert_set_holds(
        "notes-heldout9",
        false,
        THIRD_HELD_OUT_PRECISION_FLOOR,
        THIRD_HELD_OUT_RECALL_FLOOR,
    );
}

/// Just under what the set measured when it was added, after the tenth
/// round: precision 0.904, recall 0.888.
const THIRD_HELD_OUT_RECALL_FLOOR: f64 = 0.87;
const THIRD_HELD_OUT_PRECISION_FLOOR: f64 = 0.89;

/// An eleventh set of 96 notes in 8 more styles (oncology day-unit nursing
/// handovers, clinical-trial screening logs, pharmacists' chemotherapy
/// verifications, geriatric-oncology assessments, patients' portal
/// messages, radiology reports with a clinical-history header,
/// inter-hospital transfer summaries, general practitioners' cancer care
/// reviews), written blind on 2026-12-07 by a twelfth hand from the
/// `notes-heldout9` and `notes-heldout8` READMEs alone, before the
/// eleventh round; never read to write a rule: only the figures are
/// printed.
#[test]
fn notes_fourth_held_out_precision_and_recall() {
    assert_set_holds(
        "notes-heldout10",
        false,
        FOURTH_HELD_OUT_PRECISION_FLOOR,
        FOURTH_HELD_OUT_RECALL_FLOOR,
    );
}

/// Just under what the set measured when it was added, before the
/// eleventh round: precision 0.923, recall 0.880 (cancer type 0.989 /
/// 0.958, metastatic 0.967 / 0.927, stage group 0.966 / 0.924, surgery
/// 0.800 / 0.696, prior lines 0.786 / 0.778).
const FOURTH_HELD_OUT_RECALL_FLOOR: f64 = 0.87;
const FOURTH_HELD_OUT_PRECISION_FLOOR: f64 = 0.91;

/// No panic on any cut of a real note: every prefix (at every 5th character
/// boundary) of every note, as an editor or a broken export would leave it,
/// is read, and every fact it gives still points at its own text.
#[test]
fn every_cut_of_every_note_is_read_without_a_panic() {
    let mut cuts = 0;
    for note in notes("notes")
        .into_iter()
        .chain(notes("notes-dev2"))
        .chain(notes("notes-dev3"))
        .chain(notes("notes-dev4"))
        .chain(notes("notes-dev5"))
        .chain(notes("notes-dev6"))
        .chain(notes("notes-heldout5"))
        .chain(notes("notes-dev7"))
        .chain(notes("notes-dev8"))
        .chain(notes("notes-heldout9"))
        .chain(notes("notes-heldout10"))
    {
        let ends: Vec<usize> = note
            .text
            .char_indices()
            .map(|(index, _)| index)
            .chain([note.text.len()])
            .step_by(5)
            .collect();
        for end in ends {
            let text = &note.text[..end];
            let facts = extract_facts(text, &sections::split(text));
            for fact in &facts {
                assert!(
                    verify_fact(text, fact).is_ok(),
                    "{} cut at {end}: {fact:?}",
                    note.id
                );
            }
            cuts += 1;
        }
    }
    assert!(cuts > 10_000, "{cuts} cuts");
}

/// `CFEVAL_NOTE=NOTE-001` prints one development note's text and every fact
/// the extractor reads in it (the held-out set is never printed).
#[test]
fn one_development_note_is_printed_on_request() {
    let Some(id) = std::env::var_os("CFEVAL_NOTE") else {
        return;
    };
    let development = [
        "notes",
        "notes-dev2",
        "notes-dev3",
        "notes-dev4",
        "notes-dev5",
        "notes-dev6",
        "notes-dev7",
        "notes-dev8",
    ];
    for note in development.into_iter().flat_map(notes) {
        if std::ffi::OsStr::new(&note.id) != id {
            continue;
        }
        println!("{}\n{}\n{:?}", note.id, note.text, note.truth);
        for fact in extract_facts(&note.text, &sections::split(&note.text)) {
            println!("{}:{}={} {:?}", fact.kind, fact.name, fact.value, fact.span_text);
        }
    }
}
