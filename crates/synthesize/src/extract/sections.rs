//! Splits free text into ordered, named sections that are exact substrings
//! of the source: headed blocks (`Pathology:`, `MOLECULAR`, `- Path: …`)
//! take the header's normalised name; unheaded sentences are named by
//! what they talk about; neighbours of one name merge.

use cfeval_schema::Section;

use super::text::Tokens;

/// Header words (lower case, as tokens joined by spaces) to section names.
const HEADERS: &[(&str, &str)] = &[
    ("patient", "demographics"),
    ("patient details", "demographics"),
    ("demographics", "demographics"),
    ("identification", "demographics"),
    ("id", "demographics"),
    ("history", "history"),
    ("hpi", "history"),
    ("history of present illness", "history"),
    ("presentation", "history"),
    ("clinical history", "history"),
    ("clinical summary", "history"),
    ("oncologic history", "history"),
    ("oncological history", "history"),
    ("presenting complaint", "history"),
    ("diagnosis", "history"),
    ("summary", "history"),
    ("hospital course", "history"),
    ("background", "history"),
    ("indication", "history"),
    ("performance status", "history"),
    ("functional status", "history"),
    ("admission diagnosis", "history"),
    ("discharge diagnosis", "history"),
    ("pathology", "pathology"),
    ("path", "pathology"),
    ("histology", "pathology"),
    ("histopathology", "pathology"),
    ("biopsy", "pathology"),
    ("biomarkers", "biomarkers"),
    ("biomarker", "biomarkers"),
    ("biomarker profile", "biomarkers"),
    ("molecular", "biomarkers"),
    ("molecular profile", "biomarkers"),
    ("molecular testing", "biomarkers"),
    ("molecular pathology", "biomarkers"),
    ("receptor status", "biomarkers"),
    ("receptors", "biomarkers"),
    ("markers", "biomarkers"),
    ("ihc", "biomarkers"),
    ("ngs", "biomarkers"),
    ("genomics", "biomarkers"),
    ("staging", "staging"),
    ("stage", "staging"),
    ("surgery", "surgery"),
    ("surgical history", "surgery"),
    ("surgical status", "surgery"),
    ("operative history", "surgery"),
    ("procedures", "surgery"),
    ("operations", "surgery"),
    ("treatment history", "treatment_history"),
    ("treatment to date", "treatment_history"),
    ("prior therapy", "treatment_history"),
    ("prior therapies", "treatment_history"),
    ("prior treatment", "treatment_history"),
    ("prior treatments", "treatment_history"),
    ("prior lines", "treatment_history"),
    ("lines of therapy", "treatment_history"),
    ("systemic therapy", "treatment_history"),
    ("oncologic treatment", "treatment_history"),
    ("treatment", "treatment_history"),
    ("therapy", "treatment_history"),
    ("tx", "treatment_history"),
    ("imaging", "imaging"),
    ("radiology", "imaging"),
    ("restaging", "imaging"),
    ("scans", "imaging"),
    ("ct", "imaging"),
    ("pet / ct", "imaging"),
    ("mri", "imaging"),
    ("labs", "labs"),
    ("lab", "labs"),
    ("laboratory", "labs"),
    ("laboratory results", "labs"),
    ("bloods", "labs"),
    ("tumor markers", "labs"),
    ("tumour markers", "labs"),
    ("comorbidities", "comorbidities"),
    ("comorbidity", "comorbidities"),
    ("co - morbidities", "comorbidities"),
    ("pmh", "comorbidities"),
    ("past medical history", "comorbidities"),
    ("medical history", "comorbidities"),
    ("social", "social"),
    ("social history", "social"),
    ("sh", "social"),
    ("question", "question"),
    ("questions", "question"),
    ("question for the board", "question"),
    ("question for tumor board", "question"),
    ("question for tumour board", "question"),
    ("board question", "question"),
    ("query", "question"),
    ("reason for referral", "question"),
    ("request", "question"),
    ("for discussion", "question"),
    ("discussion", "question"),
];

/// The name of the section holding byte `offset` (`history` if none does).
pub fn section_at(sections: &[Section], offset: usize) -> &str {
    let offset = offset as u64;
    sections
        .iter()
        .find(|section| {
            section.span_start.is_some_and(|start| start <= offset)
                && section.span_end.is_some_and(|end| offset < end)
        })
        .map_or("history", |section| section.name.as_str())
}

struct Unit {
    name: &'static str,
    start: usize,
    end: usize,
}

/// Splits a free text into named sections.
pub fn split(text: &str) -> Vec<Section> {
    let mut units: Vec<Unit> = Vec::new();
    // The open headed block: its index in `units`, whether the header stood
    // alone on its line, and whether a blank line followed its content.
    let mut open: Option<(usize, bool, bool)> = None;
    let mut has_content = false;
    let mut line_start = 0;
    for line in text.split_inclusive('\n') {
        let start = line_start;
        line_start += line.len();
        let trimmed_start = start + (line.len() - line.trim_start().len());
        let trimmed_end = start + line.trim_end().len();
        if trimmed_end <= trimmed_start {
            if let Some((_, _, blank)) = open.as_mut()
                && has_content
            {
                *blank = true;
            }
            continue;
        }
        let content = &text[trimmed_start..trimmed_end];
        let bullet = content.starts_with(['-', '*', '•']);
        if let Some((name, alone)) = header_of(content) {
            units.push(Unit {
                name,
                start: trimmed_start,
                end: trimmed_end,
            });
            open = Some((units.len() - 1, alone, false));
            has_content = !alone;
            continue;
        }
        if let Some((index, _, blank)) = open
            && !blank
            && !bullet
        {
            units[index].end = trimmed_end;
            has_content = true;
            continue;
        }
        open = None;
        classify_sentences(text, trimmed_start, trimmed_end, &mut units);
    }
    let mut sections: Vec<Section> = Vec::new();
    for unit in units {
        if let Some(last) = sections.last_mut()
            && last.name == unit.name
        {
            last.span_end = Some(unit.end as u64);
            continue;
        }
        sections.push(Section {
            name: unit.name.to_string(),
            text: String::new(),
            span_start: Some(unit.start as u64),
            span_end: Some(unit.end as u64),
        });
    }
    for section in &mut sections {
        if let (Some(start), Some(end)) = (section.span_start, section.span_end) {
            section.text = text[start as usize..end as usize].to_string();
        }
    }
    sections
}

/// A header at the start of a line: `Pathology:`, `- Path: …`, `MOLECULAR`.
/// Returns the section name and whether the header stands alone.
fn header_of(line: &str) -> Option<(&'static str, bool)> {
    let body = line.trim_start_matches(['-', '*', '•', '#', ' ']);
    let (label, alone) = match body.find(':') {
        Some(colon) => (&body[..colon], body[colon + 1..].trim().is_empty()),
        None => {
            // A header alone on its line, in capitals or title case, short.
            let letters = body.chars().filter(|character| character.is_alphabetic()).count();
            let upper = body.chars().filter(|character| character.is_uppercase()).count();
            if letters == 0 || body.len() > 40 || upper * 2 < letters {
                return None;
            }
            (body, true)
        }
    };
    if label.len() > 40 {
        return None;
    }
    let tokens = Tokens::new(label);
    let words: Vec<&str> = (0..tokens.len()).map(|index| tokens.lower(index)).collect();
    let key = words.join(" ");
    HEADERS
        .iter()
        .find(|(header, _)| *header == key)
        .map(|(_, name)| (*name, alone))
}

fn classify_sentences(text: &str, start: usize, end: usize, units: &mut Vec<Unit>) {
    let line = &text[start..end];
    let mut sentence_start = 0;
    let bytes = line.as_bytes();
    for index in 0..bytes.len() {
        let ends_sentence = matches!(bytes[index], b'.' | b'?' | b'!')
            && bytes.get(index + 1).is_none_or(|next| next.is_ascii_whitespace());
        if ends_sentence || index + 1 == bytes.len() {
            let sentence = &line[sentence_start..=index];
            let leading = sentence.len() - sentence.trim_start().len();
            if !sentence.trim().is_empty() {
                units.push(Unit {
                    name: classify(sentence.trim()),
                    start: start + sentence_start + leading,
                    end: start + index + 1,
                });
            }
            sentence_start = index + 1;
        }
    }
}

const CLASSES: &[(&str, &[&str])] = &[
    (
        "biomarkers",
        &[
            "her2",
            "pd-l1",
            "pdl1",
            "egfr",
            "alk",
            "kras",
            "braf",
            "msi",
            "mss",
            "dmmr",
            "pmmr",
            "mismatch",
            "microsatellite",
            "triple-negative",
            "triple negative",
            "receptor",
            "ros1",
        ],
    ),
    ("staging", &["stage", "tnm"]),
    (
        "surgery",
        &[
            "resect",
            "surgery",
            "surgical",
            "operable",
            "ectomy",
            "whipple",
            "excision",
            "s/p",
            "operation",
        ],
    ),
    (
        "treatment_history",
        &[
            "cycles",
            "folfox",
            "folfiri",
            "capox",
            "flot",
            "platin",
            "mab",
            "nib",
            "taxel",
            "chemotherapy",
            "letrozole",
            "anastrozole",
            "tamoxifen",
            "fulvestrant",
            "gemcitabine",
            "pemetrexed",
            "ciclib",
            "line",
        ],
    ),
    (
        "imaging",
        &[
            "ct ",
            "ct:",
            "pet",
            "mri",
            "scan",
            "imaging",
            "ultrasound",
            "x-ray",
            "radiograph",
        ],
    ),
    (
        "labs",
        &[
            "cea",
            "ca 19-9",
            "ca19-9",
            "hemoglobin",
            "haemoglobin",
            "creatinine",
            "bilirubin",
            "labs",
        ],
    ),
    (
        "comorbidities",
        &[
            "diabetes",
            "hypertension",
            "copd",
            "kidney disease",
            "fibrillation",
            "hypothyroidism",
            "artery disease",
            "comorbid",
            "heart failure",
            "asthma",
            "osteoarthritis",
        ],
    ),
    (
        "social",
        &[
            "smok",
            "alcohol",
            "pack-year",
            "lives ",
            "works ",
            "retired",
            "married",
            "drinks",
        ],
    ),
    (
        "pathology",
        &[
            "biopsy",
            "carcinoma",
            "histolog",
            "grade",
            "melanoma",
            "breslow",
            "differentiated",
        ],
    ),
    (
        "demographics",
        &[
            "year-old", "year old", "-yo", " yo ", "aged ", "male", "female", "woman", " man",
        ],
    ),
];

fn classify(sentence: &str) -> &'static str {
    let lower = sentence.to_ascii_lowercase();
    if sentence.ends_with('?')
        || [
            "would appreciate",
            "please advise",
            "your opinion",
            "kindly",
            "question",
            "your advice",
            "your recommendation",
        ]
        .iter()
        .any(|cue| lower.contains(cue))
    {
        return "question";
    }
    let original = format!(" {sentence} ");
    if [" ER", " PR", "/ER", "/PR", "(ER", "(PR", ",ER", ",PR"]
        .iter()
        .any(|cue| {
            original.match_indices(cue).any(|(at, _)| {
                original[at + cue.len()..].starts_with(|next: char| !next.is_ascii_alphanumeric())
            })
        })
    {
        return "biomarkers";
    }
    let padded = format!(" {lower} ");
    CLASSES
        .iter()
        .find(|(_, cues)| cues.iter().any(|cue| padded.contains(cue)))
        .map_or("history", |(name, _)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headed_blocks_and_sentences() {
        let text = "TUMOUR BOARD\nPatient: 61F.\nHISTOLOGY\n\nModerately differentiated adenocarcinoma\nof the sigmoid.\n\n- Receptors: ER+\n- lives alone, ex-smoker\nWe would appreciate your advice on next steps.";
        let sections = split(text);
        let names: Vec<&str> = sections.iter().map(|section| section.name.as_str()).collect();
        assert_eq!(
            names,
            vec![
                "history",
                "demographics",
                "pathology",
                "biomarkers",
                "social",
                "question"
            ]
        );
        for section in &sections {
            let (start, end) = (
                section.span_start.unwrap() as usize,
                section.span_end.unwrap() as usize,
            );
            assert_eq!(&text[start..end], section.text);
        }
        assert!(sections[2].text.ends_with("of the sigmoid."));
    }
}
