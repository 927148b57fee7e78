//! AgentClinic NEJM cases (one JSON object per line: `question`,
//! `patient_info`, `physical_exams`, `answers`, `image_url`).
//!
//! The chart is what AgentClinic's doctor can learn: the patient's account
//! (`patient_info`) and the results the measurement actor reports
//! (`physical_exams`). The vignette (`question`) states the results too, so
//! it stays out of the chart (an intervention on a result would leave the
//! vignette telling the old one): it is kept in `extra` with the image and
//! the answer options. The correct option goes to `reference.diagnosis`.
//!
//! Both free-text fields are cut into `Label: value` lines, the shape the
//! OSCE cases have: items start at list markers (` - `, `1. `) and at a
//! sentence that opens with its own `Label:`; an item that is only a label
//! (`Laboratory studies:`) heads the items after it (`Laboratory studies -
//! Ferritin: 12`); an item without a label under a heading takes the
//! heading as its label. Results that are neither a list nor a `Label:`
//! item (a paragraph saying there are none) are kept whole as a note, from
//! which no fact is read.

use std::path::Path;

use cfeval_schema::{KeyValue, Reference};
use serde_json::Value;

use super::{Body, RawCase};

/// The longest label, in words, a `Label:` may have.
const LABEL_WORDS: usize = 12;

/// Whether a first line is an AgentClinic NEJM case.
pub fn looks_like(value: &Value) -> bool {
    value.get("physical_exams").is_some() && value.get("answers").is_some()
}

/// A case from one NEJM line.
pub fn case_from_line(line: &str, path: &Path, number: u64) -> Result<RawCase, String> {
    let mut top = super::fields::object_of_line(line, number)?;
    let mut text_field = |key: &str| -> Result<String, String> {
        match top.remove(key) {
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(format!(
                "line {number}: field `{key}` is {}, not a string",
                super::fields::described(&other)
            )),
            None => Err(format!(
                "line {number}: no `{key}` field (is this an AgentClinic NEJM file?)"
            )),
        }
    };
    let patient = text_field("patient_info")?;
    let exams = text_field("physical_exams")?;
    let reference = Reference {
        diagnosis: Some(correct_answer(top.get("answers"), number)?),
        ..Reference::default()
    };
    let mut sections = vec![(
        "question".to_string(),
        "Question".to_string(),
        "Objective: What is the most likely diagnosis?".to_string(),
    )];
    let account = items(&patient, Grouping::EachItem);
    // The patient's first sentence with a number in it says who they are
    // (`You are a 9-year-old boy`); an actor's introduction comes before it.
    let who = account
        .iter()
        .position(|item| item.value.contains(|c: char| c.is_ascii_digit()))
        .unwrap_or(0);
    if let Some(first) = account.get(who) {
        let (opening, more) = first_sentence(&first.value);
        sections.push(("demographics".into(), "Patient".into(), opening.to_string()));
        let mut lines: Vec<String> = account[..who].iter().map(Item::line).collect();
        if !more.is_empty() {
            lines.push(more.to_string());
        }
        lines.extend(account[who + 1..].iter().map(Item::line));
        if !lines.is_empty() {
            sections.push((
                "history".into(),
                "History (the patient's account)".into(),
                lines.join("\n"),
            ));
        }
    }
    let results = items(&exams, Grouping::OneLinePerTest);
    if results.len() > 1 || results.iter().any(|item| item.label.is_some()) {
        let lines: Vec<String> = results.iter().map(Item::line).collect();
        sections.push(("labs".into(), "Test results".into(), lines.join("\n")));
    } else if !exams.trim().is_empty() {
        sections.push((
            "tests_note".into(),
            "Test results (as reported)".into(),
            exams.trim().to_string(),
        ));
    }
    if sections.len() == 1 {
        return Err(format!(
            "line {number}: `patient_info` and `physical_exams` are both empty (no case text)"
        ));
    }
    let extra = top
        .into_iter()
        .map(|(key, value)| KeyValue {
            key,
            value: match value {
                Value::String(text) => text,
                other => other.to_string(),
            },
        })
        .collect();
    Ok(RawCase {
        source_id: format!("agentclinic-nejm-{number}"),
        source_format: "agentclinic_nejm",
        source_path: path.display().to_string(),
        source_line: Some(number),
        id_given: false,
        body: Body::Sections(sections),
        reference,
        extra,
    })
}

/// The text of the one answer marked correct.
fn correct_answer(answers: Option<&Value>, number: u64) -> Result<String, String> {
    let Some(Value::Array(options)) = answers else {
        return Err(format!("line {number}: `answers` is not a list of options"));
    };
    let correct: Vec<&str> = options
        .iter()
        .filter(|option| option.get("correct").and_then(Value::as_bool) == Some(true))
        .filter_map(|option| option.get("text").and_then(Value::as_str))
        .collect();
    match correct.as_slice() {
        [one] if !one.trim().is_empty() => Ok(one.trim().to_string()),
        [] => Err(format!(
            "line {number}: no answer is marked `\"correct\": true` with a text"
        )),
        [_] => Err(format!("line {number}: the correct answer's text is empty")),
        several => Err(format!(
            "line {number}: {} answers are marked correct ({}); a case has one diagnosis",
            several.len(),
            several.join(", ")
        )),
    }
}

/// One item of a free-text list: its label (with the heading it sits
/// under) and its value.
#[derive(Debug, Clone, PartialEq)]
struct Item {
    label: Option<String>,
    value: String,
}

impl Item {
    fn line(&self) -> String {
        match &self.label {
            Some(label) => format!("{label}: {}", self.value),
            None => self.value.clone(),
        }
    }
}

/// How the items with no label of their own under one heading are kept.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Grouping {
    /// Each its own line (the patient's account: one symptom a line).
    EachItem,
    /// One line under the heading, the items joined by `; ` (results:
    /// `Imaging studies: effusion; liver metastases` is one study, so that
    /// an edit or an order of it means all it found).
    OneLinePerTest,
}

/// The items of a free-text list, headings applied.
fn items(text: &str, grouping: Grouping) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    let mut heading: Option<String> = None;
    // Whether the last item is an unlabelled one under the current heading.
    let mut open_group = false;
    for piece in pieces(text) {
        let (body, next_heading) = trailing_heading(&piece.text, piece.listed);
        let body = body.trim();
        if !body.is_empty() {
            match label_split(body) {
                Some((label, value)) => {
                    out.push(Item {
                        label: Some(match &heading {
                            Some(heading) => format!("{heading} - {label}"),
                            None => label.to_string(),
                        }),
                        value: value.to_string(),
                    });
                    open_group = false;
                }
                None => match out.last_mut() {
                    Some(last) if open_group && grouping == Grouping::OneLinePerTest => {
                        let joined = last.value.trim_end_matches(['.', ';', ',']).to_string();
                        last.value = format!("{joined}; {body}");
                    }
                    _ => {
                        out.push(Item {
                            label: heading.clone(),
                            value: body.to_string(),
                        });
                        open_group = heading.is_some();
                    }
                },
            }
        }
        if let Some(next) = next_heading {
            heading = Some(next);
            open_group = false;
        }
    }
    out
}

/// One piece of a free-text list, and whether a list marker (` - `, `1. `)
/// opened it.
struct Piece {
    text: String,
    listed: bool,
}

/// The text cut at line breaks, at list markers and at sentences that open
/// with a label.
fn pieces(text: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut current = String::new();
        let mut listed = false;
        let words: Vec<&str> = line.split(' ').filter(|word| !word.is_empty()).collect();
        let mut index = 0;
        while index < words.len() {
            let word = words[index];
            let next = words.get(index + 1).copied().unwrap_or("");
            let marker = word == "-"
                || (word.ends_with('.')
                    && word.len() <= 3
                    && word[..word.len() - 1].chars().all(|c| c.is_ascii_digit())
                    && next.starts_with(|c: char| c.is_uppercase() || c == '*'));
            if marker {
                flush(&mut current, listed, &mut out);
                listed = true;
                index += 1;
                continue;
            }
            let after_sentence = current.trim_end().ends_with('.') && !ends_in_abbreviation(&current);
            if after_sentence && opens_with_label(&words[index..]) {
                flush(&mut current, listed, &mut out);
                listed = false;
            }
            if !current.is_empty() {
                current.push(' ');
            }
            current.push_str(word);
            index += 1;
        }
        flush(&mut current, listed, &mut out);
    }
    out
}

fn flush(current: &mut String, listed: bool, out: &mut Vec<Piece>) {
    let piece = current.trim();
    if !piece.is_empty() {
        out.push(Piece {
            text: piece.to_string(),
            listed,
        });
    }
    current.clear();
}

/// Whether a text ends in a one-letter or dotted abbreviation (`e.g.`,
/// `U.S.`), whose period ends no sentence.
fn ends_in_abbreviation(text: &str) -> bool {
    let last = text.split_whitespace().last().unwrap_or("");
    let core = last.trim_end_matches('.');
    let numeric = core
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | ',' | '%'));
    !numeric && (core.chars().count() <= 1 || core.contains('.'))
}

/// Whether these words open with `Label:` (a capitalised label of at most
/// [`LABEL_WORDS`] words).
fn opens_with_label(words: &[&str]) -> bool {
    let Some(first) = words.first() else {
        return false;
    };
    if !first.starts_with(|c: char| c.is_uppercase() || c == '*') {
        return false;
    }
    let mut depth = 0i32;
    for word in words.iter().take(LABEL_WORDS) {
        for character in word.chars() {
            match character {
                '(' => depth += 1,
                ')' => depth -= 1,
                '.' | ';' if depth == 0 => return false,
                _ => {}
            }
        }
        if depth == 0 && word.ends_with(':') {
            return true;
        }
    }
    false
}

/// Byte offsets of the colons outside brackets.
fn colons(text: &str) -> Vec<usize> {
    let mut depth = 0i32;
    let mut out = Vec::new();
    for (at, character) in text.char_indices() {
        match character {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ':' if depth <= 0 => out.push(at),
            _ => {}
        }
    }
    out
}

/// `Label: value` → (label, value), when the label is short and the value
/// is not empty. Markdown emphasis is taken off the label.
fn label_split(piece: &str) -> Option<(String, &str)> {
    let at = *colons(piece).first()?;
    let label = piece[..at].trim().trim_matches('*').trim();
    let value = piece[at + 1..].trim().trim_start_matches('*').trim();
    let words = label.split_whitespace().count();
    (words > 0 && words <= LABEL_WORDS && !value.is_empty() && !label.ends_with('.'))
        .then(|| (label.to_string(), value))
}

/// A piece that ends with a label and no value (`... Negative Imaging
/// results:`, `Laboratory studies:`): the piece before the heading, and the
/// heading (from its last capitalised word that is not the piece's first
/// word of a value, to the colon).
fn trailing_heading(piece: &str, listed: bool) -> (String, Option<String>) {
    let trimmed = piece.trim_end();
    let Some(body) = trimmed.strip_suffix(':') else {
        return (piece.to_string(), None);
    };
    let value_start = colons(body).last().map_or(0, |at| at + 1);
    let region = &body[value_start..];
    // Word starts outside brackets in the region.
    let mut depth = 0i32;
    let mut starts: Vec<usize> = Vec::new();
    let mut previous = ' ';
    for (at, character) in region.char_indices() {
        match character {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 && previous == ' ' && character != ' ' && character != ')' {
            starts.push(at);
        }
        previous = character;
    }
    let first_word = starts.first().copied();
    let capitalised = |at: usize| region[at..].starts_with(|c: char| c.is_uppercase() || c == '*');
    let last_capitalised = starts
        .iter()
        .rposition(|&at| Some(at) != first_word && capitalised(at));
    let heading_start = match last_capitalised {
        // After a value (`HIV: Negative Imaging results:`): the heading is
        // the last capitalised word on.
        Some(index) if value_start > 0 => starts[index],
        // A list item that runs into the next heading (`- Perihepatic fluid
        // Chest tube placement:`): the heading is the last run of
        // capitalised words, when a lower-case word comes before it.
        Some(mut index) if listed => {
            while index > 0 && capitalised(starts[index - 1]) {
                index -= 1;
            }
            starts[index]
        }
        _ if value_start > 0 => 0,
        _ => first_word.unwrap_or(0),
    };
    let heading = region[heading_start..]
        .trim()
        .trim_matches('*')
        .trim()
        .to_string();
    let before = format!("{}{}", &body[..value_start], &region[..heading_start]);
    match heading_phrase(&heading) {
        Some(heading) => (before, Some(heading)),
        None => (piece.to_string(), None),
    }
}

/// What a heading names, or `None` for an introduction, which heads
/// nothing: a long one ("For your role as a patient, here is what you need
/// to know"), or one about the text itself ("The information provided for
/// the instrument reader is as follows"). A lead-in sentence is cut to
/// the phrase it introduces: "Here are the relevant MRI findings from the
/// case" → "MRI findings"; "The laboratory examinations revealed the
/// following" → "laboratory examinations".
fn heading_phrase(heading: &str) -> Option<String> {
    let words: Vec<&str> = heading.split_whitespace().collect();
    if words.is_empty() || words.len() > LABEL_WORDS {
        return None;
    }
    let lower: Vec<String> = words.iter().map(|word| word.to_lowercase()).collect();
    let verb = lower
        .iter()
        .position(|word| LEAD_IN_VERBS.contains(&word.as_str()));
    let Some(verb) = verb else {
        return Some(heading.to_string());
    };
    // `Here are X` names what follows the verb; `X revealed the following`
    // what comes before it.
    let (mut start, mut end) = if lower[..verb].iter().all(|word| word == "here") {
        (verb + 1, words.len())
    } else {
        (0, verb)
    };
    while start < end && LEAD_IN_FILLERS.contains(&lower[start].as_str()) {
        start += 1;
    }
    // A trailing `from the case`, `in the report`.
    if let Some(cut) = (start..end).find(|&at| {
        matches!(lower[at].as_str(), "from" | "in" | "of")
            && lower[at + 1..end]
                .iter()
                .any(|word| META_WORDS.contains(&word.as_str()))
    }) {
        end = cut;
    }
    let phrase = &lower[start..end];
    if phrase.is_empty() || phrase.iter().any(|word| META_WORDS.contains(&word.as_str())) {
        return None;
    }
    Some(words[start..end].join(" "))
}

/// Verbs that make a heading a lead-in sentence.
const LEAD_IN_VERBS: &[&str] = &[
    "is",
    "are",
    "was",
    "were",
    "include",
    "includes",
    "included",
    "including",
    "revealed",
    "showed",
    "shows",
    "demonstrated",
    "follows",
];

/// Words that open the phrase a lead-in introduces.
const LEAD_IN_FILLERS: &[&str] = &[
    "the",
    "a",
    "an",
    "some",
    "relevant",
    "key",
    "pertinent",
    "following",
    "main",
    "available",
];

/// Words about the text rather than the patient: a heading made of them
/// heads nothing.
const META_WORDS: &[&str] = &[
    "information",
    "text",
    "case",
    "report",
    "provided",
    "actor",
    "reader",
    "details",
    "summary",
];

/// The first sentence of a text, and the rest.
fn first_sentence(text: &str) -> (&str, &str) {
    let mut search = 0;
    while let Some(offset) = text[search..].find(". ") {
        let end = search + offset + 1;
        if !ends_in_abbreviation(&text[..end]) {
            return (text[..end].trim(), text[end..].trim());
        }
        search = end;
    }
    (text.trim(), "")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        items(text, Grouping::EachItem).iter().map(Item::line).collect()
    }

    fn results(text: &str) -> Vec<String> {
        items(text, Grouping::OneLinePerTest)
            .iter()
            .map(Item::line)
            .collect()
    }

    #[test]
    fn a_lead_in_heads_with_the_phrase_it_introduces() {
        assert_eq!(
            heading_phrase("Here are the relevant MRI findings from the case").as_deref(),
            Some("MRI findings")
        );
        assert_eq!(
            heading_phrase("The laboratory examinations revealed the following").as_deref(),
            Some("laboratory examinations")
        );
        assert_eq!(
            heading_phrase("Laboratory studies").as_deref(),
            Some("Laboratory studies")
        );
        assert_eq!(
            heading_phrase("The information provided for the instrument reader actor is as follows"),
            None
        );
        assert_eq!(
            heading_phrase("Here is the information from the case report"),
            None
        );
    }

    #[test]
    fn a_list_item_running_into_a_heading_ends_before_it() {
        assert_eq!(
            results(
                "Imaging: - Perihepatic fluid Chest tube placement: - Fluid color: brown - Complete Blood Count: - Anemia"
            ),
            vec![
                "Imaging: Perihepatic fluid",
                "Chest tube placement - Fluid color: brown",
                "Complete Blood Count: Anemia"
            ]
        );
    }

    #[test]
    fn a_line_break_ends_an_item() {
        assert_eq!(
            results(
                "Imaging studies:\n- Pleural effusion\n- Liver metastases\n\nChest tube placement:\n- Fluid color: Olive brown"
            ),
            vec![
                "Imaging studies: Pleural effusion; Liver metastases",
                "Chest tube placement - Fluid color: Olive brown"
            ]
        );
    }

    #[test]
    fn unlabelled_results_under_one_heading_are_one_test() {
        assert_eq!(
            results(
                "Imaging studies: - Pleural effusion - Perihepatic fluid Chest tube: - Fluid color: brown"
            ),
            vec![
                "Imaging studies: Pleural effusion; Perihepatic fluid",
                "Chest tube - Fluid color: brown"
            ]
        );
        // A labelled item between them closes the group.
        assert_eq!(
            results("Labs: - Anemia - Ferritin: 8 - Low iron"),
            vec!["Labs: Anemia", "Labs - Ferritin: 8", "Labs: Low iron"]
        );
        // The patient's account keeps one item a line.
        assert_eq!(
            lines("Symptoms: - fever - cough"),
            vec!["Symptoms: fever", "Symptoms: cough"]
        );
    }

    #[test]
    fn dash_items_under_a_heading_take_it_as_prefix() {
        assert_eq!(
            lines("Laboratory studies: - Kidney function: Normal - Urine culture: Negative"),
            vec![
                "Laboratory studies - Kidney function: Normal",
                "Laboratory studies - Urine culture: Negative"
            ]
        );
    }

    #[test]
    fn a_heading_after_a_value_starts_a_new_group() {
        assert_eq!(
            lines("Labs: - HIV: Negative Imaging results: - CT of the neck: bilateral nodes"),
            vec![
                "Labs - HIV: Negative",
                "Imaging results - CT of the neck: bilateral nodes"
            ]
        );
        assert_eq!(
            lines("- Viral load: 450 copies (Reference range: <20) Biopsy findings include: - Necrosis"),
            vec![
                "Viral load: 450 copies (Reference range: <20)",
                "Biopsy findings: Necrosis"
            ]
        );
    }

    #[test]
    fn numbered_items_and_labelled_sentences_split() {
        assert_eq!(
            lines("1. Dermoscopy: pinpoint macules. 2. Skin biopsy: ochre bodies."),
            vec!["Dermoscopy: pinpoint macules.", "Skin biopsy: ochre bodies."]
        );
        assert_eq!(
            lines("Laryngoscopy: white plaques. Biopsy: hyphae. Silver stain: positive."),
            vec![
                "Laryngoscopy: white plaques.",
                "Biopsy: hyphae.",
                "Silver stain: positive."
            ]
        );
    }

    #[test]
    fn a_number_ends_a_sentence() {
        assert_eq!(
            lines("Blood gas: pH 7.51. Urea nitrogen: 19 mg. E. coli: not grown"),
            vec!["Blood gas: pH 7.51.", "Urea nitrogen: 19 mg. E. coli: not grown"]
        );
    }

    #[test]
    fn a_sentence_without_a_label_stays_with_its_value() {
        assert_eq!(
            lines("Chest CT: ground-glass opacities. Areas of septal thickening. - Biopsy: granulomas"),
            vec![
                "Chest CT: ground-glass opacities. Areas of septal thickening.",
                "Biopsy: granulomas"
            ]
        );
    }

    #[test]
    fn unlabelled_items_without_a_heading_stay_whole() {
        assert_eq!(
            lines("Pronounced eosinophilia - Serum IgE: Negative"),
            vec!["Pronounced eosinophilia", "Serum IgE: Negative"]
        );
    }

    #[test]
    fn markdown_labels_lose_their_emphasis() {
        assert_eq!(
            lines("- **Age**: You are a 9-year-old boy. - **Symptoms**: - fever"),
            vec!["Age: You are a 9-year-old boy.", "Symptoms: fever"]
        );
    }

    #[test]
    fn an_introduction_heads_nothing() {
        assert_eq!(
            lines(
                "For your role as a patient actor, here is the minimal information you need to know: - You have a cough"
            ),
            vec![
                "For your role as a patient actor, here is the minimal information you need to know:",
                "You have a cough"
            ]
        );
    }

    #[test]
    fn a_paragraph_without_items_has_no_label() {
        let text = "The text does not include instrument readings. Therefore, none can be given.";
        assert!(
            items(text, Grouping::OneLinePerTest)
                .iter()
                .all(|item| item.label.is_none())
        );
    }

    #[test]
    fn the_case_keeps_the_vignette_out_of_the_chart() {
        let line = r#"{"image_url":"u","question":"A 9-year-old boy. Biopsy showed X. What is it?","patient_info":"You are a 9-year-old boy with fever. You have night sweats.","physical_exams":"Lymph node biopsy: granulomas - HIV test: Negative","answers":[{"text":"Tuberculosis","correct":true},{"text":"Lymphoma","correct":false}]}"#;
        let case = case_from_line(line, Path::new("n.jsonl"), 3).unwrap();
        assert_eq!(case.reference.diagnosis.as_deref(), Some("Tuberculosis"));
        let Body::Sections(sections) = &case.body else {
            panic!("sections expected")
        };
        let names: Vec<&str> = sections.iter().map(|(name, _, _)| name.as_str()).collect();
        assert_eq!(names, vec!["question", "demographics", "history", "labs"]);
        assert_eq!(sections[1].2, "You are a 9-year-old boy with fever.");
        assert_eq!(sections[3].2, "Lymph node biopsy: granulomas\nHIV test: Negative");
        assert!(
            sections
                .iter()
                .all(|(_, _, text)| !text.contains("Biopsy showed"))
        );
        assert!(case.extra.iter().any(|kv| kv.key == "question"));
    }

    #[test]
    fn the_correct_answer_must_be_one() {
        let none = r#"{"patient_info":"a","physical_exams":"b","answers":[{"text":"X","correct":false}]}"#;
        let error = case_from_line(none, Path::new("n.jsonl"), 2).unwrap_err();
        assert!(error.contains("line 2") && error.contains("no answer"), "{error}");
        let two = r#"{"patient_info":"a","physical_exams":"b","answers":[{"text":"X","correct":true},{"text":"Y","correct":true}]}"#;
        let error = case_from_line(two, Path::new("n.jsonl"), 4).unwrap_err();
        assert!(error.contains("2 answers"), "{error}");
    }
}
