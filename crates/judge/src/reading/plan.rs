//! Where a reply states its plan.
//!
//! Replies mark their plan in many ways: a `Recommendation:` label (the form
//! the prompt asks for), a markdown heading (`## Plan`), a bold line
//! (`**Recommended plan**`), an underlined heading, a label inside a line of
//! shorthand (`… s/p lumpectomy. Plan: AC-T`), or nothing at all (a consult
//! letter). [`find_plan`] returns the plan's text and says which of these it
//! used ([`PlanSource`]), so a verdict can be traced to the part of the reply
//! it read.
//!
//! The words that mark a plan (`recommendation`, `plan`, `next steps`, …)
//! and those that mark another part (`reasoning`, `rationale`, `history`, …)
//! are data: [`PlanVocabulary`] comes from the ontology file.

use super::words;

/// How the plan was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanSource {
    /// A plan label line (`Recommendation: …`, `**Plan:** …`, `- Next steps:`).
    Label,
    /// A plan heading: markdown `#`, a bold line, or an underlined line.
    Heading,
    /// A plan label inside a line (`… pT2N1. Plan: AC-T`).
    InlineLabel,
    /// Nothing marked: the last paragraph that recommends, and what follows it.
    LastParagraph,
    /// Nothing marked and no paragraph recommends: the whole reply.
    Whole,
}

impl PlanSource {
    /// The name in `judgments.plan_source`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanSource::Label => "label",
            PlanSource::Heading => "heading",
            PlanSource::InlineLabel => "inline_label",
            PlanSource::LastParagraph => "last_paragraph",
            PlanSource::Whole => "whole",
        }
    }
}

/// A reply's plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub text: String,
    pub source: PlanSource,
}

/// The words that mark the parts of a reply (normalised by [`words`]).
#[derive(Debug, Clone, Default)]
pub struct PlanVocabulary {
    /// A heading or label holding one of these phrases introduces the plan.
    pub plan_labels: Vec<Vec<String>>,
    /// A heading or label holding one of these (and no plan phrase) starts
    /// another part, which ends a plan section.
    pub other_labels: Vec<Vec<String>>,
    /// Labels of an aside that is never the plan (`Dissenting view`,
    /// `Cons`): another part that, unmarked replies too, never starts or
    /// continues the plan.
    pub aside_labels: Vec<Vec<String>>,
    /// Phrases that make a paragraph a recommendation (`i would recommend`).
    pub recommend_cues: Vec<Vec<String>>,
    /// Phrases that open a closing line (`kind regards`, `please do not hesitate`).
    pub closings: Vec<Vec<String>>,
    /// Phrases that open a greeting line (`dear`).
    pub greetings: Vec<Vec<String>>,
}

/// What a line of the reply is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LineKind {
    /// A heading (markdown level 1–6, bold or underlined 7) and its text.
    Heading {
        level: u8,
        title: String,
    },
    /// `Label: rest` at the start of a line.
    Label {
        label: String,
        rest: String,
    },
    /// An underline (`---`, `===`) under the previous line.
    Underline,
    Blank,
    Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Plan,
    Other,
    Unknown,
}

impl PlanVocabulary {
    fn role(&self, title: &str) -> Role {
        let tokens = words(title);
        if tokens.is_empty() || tokens.len() > 8 {
            return Role::Unknown;
        }
        if self.plan_labels.iter().any(|phrase| contains(&tokens, phrase)) {
            Role::Plan
        } else if self
            .other_labels
            .iter()
            .chain(&self.aside_labels)
            .any(|phrase| contains(&tokens, phrase))
        {
            Role::Other
        } else {
            Role::Unknown
        }
    }

    /// Whether a label opens an aside (`Dissenting view`, `Cons`).
    fn aside(&self, title: &str) -> bool {
        let tokens = words(title);
        tokens.len() <= 8 && self.aside_labels.iter().any(|phrase| contains(&tokens, phrase))
    }

    fn recommends(&self, text: &str) -> bool {
        let tokens = words(text);
        self.recommend_cues.iter().any(|phrase| contains(&tokens, phrase))
    }

    fn closing(&self, text: &str) -> bool {
        let tokens = words(text);
        self.closings.iter().any(|phrase| tokens.starts_with(phrase))
    }

    /// A short greeting paragraph (`Dear Dr Smith,`).
    fn greeting(&self, text: &str) -> bool {
        let tokens = words(text);
        tokens.len() <= 6 && self.greetings.iter().any(|phrase| tokens.starts_with(phrase))
    }
}

/// Whether `phrase` occurs in `tokens` as consecutive words.
pub(crate) fn contains(tokens: &[String], phrase: &[String]) -> bool {
    !phrase.is_empty() && tokens.windows(phrase.len()).any(|window| window == phrase)
}

/// Strips markdown emphasis and list markers from the ends of a title.
fn clean_title(text: &str) -> String {
    text.trim()
        .trim_matches(|character: char| {
            matches!(character, '*' | '_' | '#' | ':' | '`') || character.is_whitespace()
        })
        .to_string()
}

/// Strips a list marker (`-`, `*`, `•`, `1.`, `a)`) from the start of a line.
fn strip_list_marker(line: &str) -> &str {
    let trimmed = line.trim_start();
    for marker in ["- ", "• ", "* ", "+ ", "– ", "— "] {
        if let Some(rest) = trimmed.strip_prefix(marker) {
            return rest.trim_start();
        }
    }
    let digits = trimmed
        .chars()
        .take_while(|character| character.is_ascii_alphanumeric())
        .count();
    if (1..=2).contains(&digits) {
        let rest = &trimmed[digits..];
        for marker in [". ", ") "] {
            if let Some(rest) = rest.strip_prefix(marker) {
                return rest.trim_start();
            }
        }
    }
    trimmed
}

fn classify(line: &str) -> LineKind {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return LineKind::Blank;
    }
    if trimmed.len() >= 3 && (trimmed.chars().all(|c| c == '-') || trimmed.chars().all(|c| c == '=')) {
        return LineKind::Underline;
    }
    let hashes = trimmed.chars().take_while(|character| *character == '#').count();
    if (1..=6).contains(&hashes) && trimmed[hashes..].starts_with(char::is_whitespace) {
        return LineKind::Heading {
            level: hashes as u8,
            title: clean_title(&trimmed[hashes..]),
        };
    }
    let body = strip_list_marker(trimmed);
    // A line that is all bold (`**Plan**`, `__Plan:__`, `**Plan:**`).
    for mark in ["**", "__"] {
        if let Some(inner) = body.strip_prefix(mark)
            && let Some(end) = inner.find(mark)
        {
            let title = &inner[..end];
            let after = inner[end + mark.len()..].trim();
            let after = after.strip_prefix(':').unwrap_or(after).trim();
            if after.is_empty() && !title.trim().is_empty() {
                return LineKind::Heading {
                    level: 7,
                    title: clean_title(title),
                };
            }
            // `**Plan:** rest` or `**Plan**: rest`.
            let title_colon = title.trim_end().ends_with(':');
            let after_colon = inner[end + mark.len()..].trim_start().starts_with(':');
            if title_colon || after_colon {
                return LineKind::Label {
                    label: clean_title(title),
                    rest: after.to_string(),
                };
            }
        }
    }
    // `Label: rest` with a short label of words.
    if let Some((label, rest)) = body.split_once(':') {
        let label_words = words(label);
        let plain = label
            .chars()
            .all(|character| character.is_alphanumeric() || " /&-()'*_".contains(character));
        if plain && (1..=6).contains(&label_words.len()) {
            return LineKind::Label {
                label: clean_title(label),
                rest: rest.trim().to_string(),
            };
        }
    }
    LineKind::Text
}

/// One marked part of the reply.
#[derive(Debug)]
struct Part {
    role: Role,
    /// Markdown level of a heading part (1–6), 7 for bold/label parts.
    level: u8,
    source: PlanSource,
    lines: Vec<String>,
}

/// Finds the plan in `reply`. `has_content` says whether a stretch of text
/// names a treatment or a test (the ontology decides).
pub fn find_plan(vocabulary: &PlanVocabulary, reply: &str, has_content: &dyn Fn(&str) -> bool) -> Plan {
    let plan = find_marked_plan(vocabulary, reply, has_content);
    Plan {
        text: with_chosen_option(reply, &plan.text),
        source: plan.source,
    }
}

fn find_marked_plan(vocabulary: &PlanVocabulary, reply: &str, has_content: &dyn Fn(&str) -> bool) -> Plan {
    let lines: Vec<&str> = reply.lines().collect();
    let mut kinds: Vec<LineKind> = lines.iter().map(|line| classify(line)).collect();
    // An underlined line is a heading; its underline is not content.
    for index in 1..kinds.len() {
        if kinds[index] == LineKind::Underline
            && matches!(kinds[index - 1], LineKind::Text | LineKind::Label { .. })
        {
            let level = if lines[index].trim().starts_with('=') {
                1
            } else {
                2
            };
            kinds[index - 1] = LineKind::Heading {
                level,
                title: clean_title(lines[index - 1]),
            };
        }
    }
    let mut parts: Vec<Part> = Vec::new();
    let mut current: Option<Part> = None;
    for (line, kind) in lines.iter().zip(&kinds) {
        match kind {
            LineKind::Heading { level, title } => {
                let role = vocabulary.role(title);
                let ends = match &current {
                    Some(part) if part.role == Role::Plan => {
                        role != Role::Unknown || (*level <= 6 && *level <= part.level)
                    }
                    Some(_) => role != Role::Unknown || *level <= 6,
                    None => true,
                };
                if ends {
                    parts.extend(current.take());
                    current = Some(Part {
                        role,
                        level: *level,
                        source: PlanSource::Heading,
                        lines: Vec::new(),
                    });
                } else if let Some(part) = &mut current {
                    part.lines.push(title.clone());
                }
            }
            LineKind::Label { label, rest } => {
                let role = vocabulary.role(label);
                if role == Role::Unknown {
                    match &mut current {
                        Some(part) => part.lines.push((*line).to_string()),
                        None => {
                            current = Some(Part {
                                role: Role::Unknown,
                                level: 8,
                                source: PlanSource::Label,
                                lines: vec![(*line).to_string()],
                            })
                        }
                    }
                    continue;
                }
                parts.extend(current.take());
                current = Some(Part {
                    role,
                    level: 7,
                    source: PlanSource::Label,
                    lines: vec![rest.clone()],
                });
            }
            LineKind::Underline => {}
            LineKind::Blank | LineKind::Text => {
                let text = if *kind == LineKind::Blank { "" } else { *line };
                match &mut current {
                    Some(part) => part.lines.push(text.to_string()),
                    None => {
                        current = Some(Part {
                            role: Role::Unknown,
                            level: 8,
                            source: PlanSource::Whole,
                            lines: vec![text.to_string()],
                        })
                    }
                }
            }
        }
    }
    parts.extend(current);
    let plan: Vec<&Part> = parts
        .iter()
        .filter(|part| part.role == Role::Plan && part.lines.iter().any(|line| !line.trim().is_empty()))
        .collect();
    if let Some(first) = plan.first() {
        let text = plan
            .iter()
            .map(|part| part.lines.join("\n"))
            .collect::<Vec<_>>()
            .join("\n");
        return Plan {
            text: trim_closing(vocabulary, &text),
            source: first.source,
        };
    }
    if let Some(text) = inline_label(vocabulary, reply) {
        return Plan {
            text,
            source: PlanSource::InlineLabel,
        };
    }
    last_paragraph(vocabulary, reply, has_content)
}

/// A plan that chooses an option by its name (`Choice: Option 2`) plans
/// what the reply's line for that option says (`Option 2 — carboplatin and
/// pemetrexed`): the first option the plan names is read into it, the pros
/// and cons under it are not.
fn with_chosen_option(reply: &str, plan: &str) -> String {
    let plan_words = words(plan);
    let Some(name) = plan_words
        .windows(2)
        .find(|pair| pair[0] == "option" && is_option_name(&pair[1]))
        .map(|pair| pair[1].clone())
    else {
        return plan.to_string();
    };
    let line = reply.lines().find(|line| {
        let body = strip_list_marker(line.trim_start_matches(['#', ' ']));
        let line_words = words(body);
        line_words.len() > 2
            && line_words[0] == "option"
            && line_words[1] == name
            && !plan.contains(line.trim())
    });
    match line {
        Some(line) => format!("{plan}\n{}", line.trim()),
        None => plan.to_string(),
    }
}

/// An option's name: a number or a single letter (`Option 2`, `Option B`).
fn is_option_name(word: &str) -> bool {
    word.len() <= 2 && (word.chars().all(|character| character.is_ascii_digit()) || word.len() == 1)
}

/// The text after the last plan label inside a line (`… . Plan: X`).
fn inline_label(vocabulary: &PlanVocabulary, reply: &str) -> Option<String> {
    let mut found = None;
    for (index, _) in reply.match_indices(':') {
        let before = &reply[..index];
        // The label starts after the last sentence end, line start or bullet.
        let start = before
            .rfind(['.', '\n', ';', '•', '|', '(', ')'])
            .map_or(0, |position| position + 1);
        let label = before[start..].trim().trim_matches(['*', '_']);
        if words(label).len() <= 4 && vocabulary.role(label) == Role::Plan {
            found = Some(index + 1);
        }
    }
    let text = reply[found?..].trim();
    (!text.is_empty()).then(|| trim_closing(vocabulary, text))
}

/// Drops closing lines (`Kind regards`, `Please let me know`) and what follows.
fn trim_closing(vocabulary: &PlanVocabulary, text: &str) -> String {
    let mut kept = Vec::new();
    for line in text.lines() {
        if vocabulary.closing(strip_list_marker(line)) {
            break;
        }
        kept.push(line);
    }
    kept.join("\n").trim().to_string()
}

/// What follows a paragraph's first sentence (empty when it has one).
fn after_first_sentence(paragraph: &str) -> &str {
    paragraph
        .char_indices()
        .find(|(index, character)| {
            matches!(character, '.' | '!' | '?' | '\n')
                && paragraph[index + character.len_utf8()..].starts_with(char::is_whitespace)
        })
        .map_or("", |(index, character)| {
            &paragraph[index + character.len_utf8()..]
        })
}

/// Whether a paragraph opens with a list marker (`1.`, `-`, `•`).
fn list_item(paragraph: &str) -> bool {
    let first = paragraph.lines().next().unwrap_or_default();
    strip_list_marker(first).len() < first.trim_start().len()
}

fn paragraphs(reply: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    for line in reply.lines() {
        if line.trim().is_empty() {
            if !current.is_empty() {
                out.push(current.join("\n"));
                current.clear();
            }
        } else {
            current.push(line);
        }
    }
    if !current.is_empty() {
        out.push(current.join("\n"));
    }
    out
}

/// Nothing marked: the last paragraph that recommends (`I would recommend`,
/// `we suggest`) with the content paragraphs after it, else the last
/// paragraph that names a treatment or test, else the whole reply.
fn last_paragraph(vocabulary: &PlanVocabulary, reply: &str, has_content: &dyn Fn(&str) -> bool) -> Plan {
    let all = paragraphs(reply);
    // A letter's greeting, thanks and sign-off are not its body. A courtesy
    // is the first sentence of the paragraph it opens: what follows it
    // ("Thanks for sending her pathology. pT2N0 … I'd start …") may be
    // substance, while a one-sentence offer that names a drug ("Let me know
    // if you'd like the abemaciclib data") is still a closing.
    let substance = |text: &str| has_content(text) || vocabulary.recommends(text);
    let body: Vec<&String> = all
        .iter()
        .filter(|paragraph| {
            (!vocabulary.closing(paragraph) || substance(after_first_sentence(paragraph)))
                && !vocabulary.greeting(paragraph)
        })
        .collect();
    // A paragraph opened by an aside's label (`Dissenting view: …`) neither
    // starts nor continues the plan.
    let other_part = |paragraph: &str| {
        matches!(
            classify(paragraph.lines().next().unwrap_or_default()),
            LineKind::Label { label, .. } if vocabulary.aside(&label)
        )
    };
    if body.len() > 1 {
        if let Some(mut start) = body
            .iter()
            .rposition(|paragraph| vocabulary.recommends(paragraph) && !other_part(paragraph))
        {
            // A list is one plan: a recommending item ("2. Consolidation:
            // durvalumab is still my recommendation") reads from the list's
            // first item, and from the paragraph that introduces the list
            // when that one recommends ("Here is my recommendation: …").
            if list_item(body[start]) {
                while start > 0 && list_item(body[start - 1]) && !other_part(body[start - 1]) {
                    start -= 1;
                }
                if start > 0 && vocabulary.recommends(body[start - 1]) && !other_part(body[start - 1]) {
                    start -= 1;
                }
            }
            let text = body[start..]
                .iter()
                .enumerate()
                .take_while(|(offset, paragraph)| {
                    *offset == 0 || (has_content(paragraph) && !other_part(paragraph))
                })
                .map(|(_, paragraph)| paragraph.as_str())
                .collect::<Vec<_>>()
                .join("\n\n");
            return Plan {
                text,
                source: PlanSource::LastParagraph,
            };
        }
        if let Some(last) = body
            .iter()
            .rev()
            .find(|paragraph| has_content(paragraph) && !other_part(paragraph))
        {
            return Plan {
                text: (*last).clone(),
                source: PlanSource::LastParagraph,
            };
        }
    }
    Plan {
        text: body
            .iter()
            .map(|paragraph| paragraph.as_str())
            .collect::<Vec<_>>()
            .join("\n\n"),
        source: PlanSource::Whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocabulary() -> PlanVocabulary {
        let list = |items: &[&str]| items.iter().map(|item| words(item)).collect();
        PlanVocabulary {
            plan_labels: list(&[
                "recommendation",
                "recommendations",
                "recommended",
                "plan",
                "next steps",
                "suggested management",
                "bottom line",
            ]),
            other_labels: list(&[
                "reasoning",
                "rationale",
                "assessment",
                "history",
                "background",
                "summary",
            ]),
            aside_labels: list(&["minority opinion"]),
            recommend_cues: list(&["recommend", "suggest", "i would", "my recommendation"]),
            closings: list(&[
                "kind regards",
                "best regards",
                "please do not hesitate",
                "sincerely",
                "thank you for",
                "thanks for",
                "many thanks",
                "let me know",
            ]),
            greetings: list(&["dear"]),
        }
    }

    fn content(text: &str) -> bool {
        ["folfox", "tchp", "radiotherapy", "letrozole"]
            .iter()
            .any(|drug| text.to_lowercase().contains(drug))
    }

    fn plan(reply: &str) -> Plan {
        find_plan(&vocabulary(), reply, &content)
    }

    #[test]
    fn a_label_line_starts_the_plan_and_an_other_label_ends_it() {
        let found = plan(
            "Reasoning: s/p colectomy, pT3N1.\nRecommendation: adjuvant FOLFOX\nfor 6 months\nRationale: stage III",
        );
        assert_eq!(found.source, PlanSource::Label);
        assert_eq!(found.text, "adjuvant FOLFOX\nfor 6 months");
    }

    #[test]
    fn markdown_headings_bound_the_plan_section() {
        let reply = "## Assessment\nShe had a mastectomy.\n\n## Recommendation\n- TCHP x6\n- **Radiation**: PMRT\n\n## Rationale\nHER2+";
        let found = plan(reply);
        assert_eq!(found.source, PlanSource::Heading);
        assert!(
            found.text.contains("TCHP") && found.text.contains("PMRT"),
            "{found:?}"
        );
        assert!(
            !found.text.contains("mastectomy") && !found.text.contains("HER2+"),
            "{found:?}"
        );
    }

    #[test]
    fn a_subheading_stays_inside_a_higher_plan_heading() {
        let reply = "# Plan\n## Systemic\nFOLFOX\n## Local\nradiotherapy\n# Background\nhistory";
        let found = plan(reply);
        assert!(
            found.text.contains("FOLFOX") && found.text.contains("radiotherapy"),
            "{found:?}"
        );
        assert!(!found.text.contains("history"));
    }

    #[test]
    fn bold_and_underlined_headings_mark_the_plan() {
        let bold = plan("**Key facts**\ns/p lobectomy\n\n**Recommended plan**\nadjuvant FOLFOX");
        assert_eq!(
            (bold.source, bold.text.as_str()),
            (PlanSource::Heading, "adjuvant FOLFOX")
        );
        let bold_label = plan("**Assessment:** s/p lobectomy\n**Bottom line:** FOLFOX");
        assert_eq!(
            (bold_label.source, bold_label.text.as_str()),
            (PlanSource::Label, "FOLFOX")
        );
        let underlined = plan("History\n-------\ns/p Whipple\n\nPlan\n----\nFOLFOX");
        assert_eq!(
            (underlined.source, underlined.text.as_str()),
            (PlanSource::Heading, "FOLFOX")
        );
    }

    #[test]
    fn bulleted_labels_count_and_unknown_labels_stay_in_the_plan() {
        let found = plan("- Assessment: pT2N1\n- Next steps:\n  - Systemic: TCHP\n  - Local: radiotherapy");
        assert_eq!(found.source, PlanSource::Label);
        assert!(
            found.text.contains("Systemic: TCHP") && found.text.contains("radiotherapy"),
            "{found:?}"
        );
        assert!(!found.text.contains("pT2N1"));
    }

    #[test]
    fn an_inline_label_in_shorthand_is_found() {
        let found = plan("62F ER+ IDC pT2N1, s/p lumpectomy. Plan: AC-T then letrozole x5y, RT.");
        assert_eq!(found.source, PlanSource::InlineLabel);
        assert_eq!(found.text, "AC-T then letrozole x5y, RT.");
    }

    #[test]
    fn a_letter_without_marks_reads_from_its_last_recommending_paragraph() {
        let letter = "Dear Dr Smith,\n\nThank you for referring Mrs A.\n\nShe had a lumpectomy and received FOLFOX in the past.\n\nI would recommend letrozole for five years.\n\nShe should also have radiotherapy.\n\nKind regards,\nDr B";
        let found = plan(letter);
        assert_eq!(found.source, PlanSource::LastParagraph);
        assert_eq!(
            found.text,
            "I would recommend letrozole for five years.\n\nShe should also have radiotherapy."
        );
    }

    #[test]
    fn without_a_recommending_paragraph_the_last_content_paragraph_is_the_plan() {
        let found = plan("Complex case.\n\nFOLFOX for six months.\n\nThanks.");
        assert_eq!(
            (found.source, found.text.as_str()),
            (PlanSource::LastParagraph, "FOLFOX for six months.")
        );
        let whole = plan("FOLFOX for six months");
        assert_eq!(whole.source, PlanSource::Whole);
    }

    #[test]
    fn a_closing_ends_a_labelled_plan() {
        let found = plan("Recommendation: FOLFOX\nPlease do not hesitate to call.\nDr B");
        assert_eq!(found.text, "FOLFOX");
    }

    #[test]
    fn another_parts_paragraph_is_not_the_plan_and_a_courtesy_is_not_a_closing() {
        let minutes =
            plan("The panel would recommend FOLFOX for six months.\n\nMinority opinion: radiotherapy first.");
        assert_eq!(minutes.text, "The panel would recommend FOLFOX for six months.");
        let email = plan(
            "Hello Ann,\n\nThank you for the scans. She is pT2N1; I would recommend letrozole.\n\nKind regards,\nBo",
        );
        assert_eq!(
            email.text,
            "Thank you for the scans. She is pT2N1; I would recommend letrozole."
        );
    }

    #[test]
    fn a_one_sentence_offer_is_a_closing_even_when_it_names_a_drug() {
        let found = plan(
            "Thank you for the referral. In summary, she is pT1N0 after lumpectomy.\n\nShe should have radiotherapy.\n\nLet me know if you'd like the letrozole data.",
        );
        assert_eq!(found.text, "She should have radiotherapy.");
        let thanks =
            plan("Thanks for the note. I would recommend letrozole.\n\nLet me know if anything changes.");
        assert_eq!(thanks.text, "Thanks for the note. I would recommend letrozole.");
    }

    #[test]
    fn a_recommending_list_item_reads_the_whole_list() {
        let found = plan(
            "Many thanks. My recommendation is as follows.\n\n1. Systemic: FOLFOX for six months.\n\n2. Local: radiotherapy is what I would recommend next.\n\nLet me know if you'd like the FOLFOX trial data.",
        );
        assert!(
            found.text.contains("FOLFOX for six months") && found.text.contains("radiotherapy"),
            "{found:?}"
        );
        assert!(!found.text.contains("trial data"), "{found:?}");
    }

    #[test]
    fn a_chosen_option_plans_what_its_line_says() {
        let found = plan(
            "Option A — FOLFOX for six months\nPros: fewer visits.\n\nOption B — radiotherapy alone\nCons: local only.\n\nRecommendation: option A, with CEA follow-up.",
        );
        assert!(found.text.contains("FOLFOX"), "{found:?}");
        assert!(!found.text.contains("radiotherapy"), "{found:?}");
    }

    #[test]
    fn a_numbered_list_marker_is_not_a_label() {
        assert_eq!(strip_list_marker("1. Plan: x"), "Plan: x");
        assert_eq!(strip_list_marker("a) FOLFOX"), "FOLFOX");
        assert_eq!(classify("HER2 IHC 3+ and ER 90%"), LineKind::Text);
    }
}
