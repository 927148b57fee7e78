//! The layout of one answer as the reader sees it: its folded text, words,
//! cues, lines (with the section each belongs to), sentences and clauses,
//! and the context of every position (ruled out, history, offered, ordered).
//!
//! A line that holds only a cue and a colon (`**Differential:**`, `Workup:`,
//! `## Most likely diagnosis`) heads a section: the lines under it, to the
//! next blank line or header, read as under that cue. Sentences end at `.`,
//! `?` or `!` before a space, and at line ends (not before a lower-case word, an
//! abbreviation's period, unless the writer never capitalises a sentence:
//! `58m t2dm. diabetic polyneuropathy. optimize a1c` is three sentences);
//! clauses end at `,` `;` `(` `)` and the answer file's clause breaks.
//!
//! A markdown table reads as a ranked list: its header row (the row above
//! a `|---|` rule) heads a differential section of the rows under it, and
//! each cell ends a phrase.

use crate::cues::{Cues, Hit, Kind};
use crate::text::{Folded, Lexicon, Token, tokens};

/// Words allowed between a forward rule-out or history cue and what it scopes.
const FORWARD_REACH: usize = 5;
/// The same for a one-word cue (`not`, `no`), whose scope is shorter: `not
/// typical of X` rules X out, `no single test confirms X` does not.
const WORD_REACH: usize = 2;
/// Words allowed between what a backward rule-out cue scopes and the cue.
const BACKWARD_REACH: usize = 6;
/// Words allowed between a negation and the escalation or order it negates.
const NEGATION_REACH: usize = 3;

/// One line of the answer, in folded offsets.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub start: usize,
    pub end: usize,
    /// Where its content starts, past list markers and markdown.
    pub content: usize,
    pub blank: bool,
    /// The cue kind it heads a section for, when it is a header.
    pub header: Option<Kind>,
    /// The kind of the section it sits in.
    pub section: Option<Kind>,
    /// Past the colon of a rule-out label that opens it (`Less likely:`):
    /// what the line lists from there is ruled out.
    pub ruled_out_from: Option<usize>,
}

/// One answer laid out.
#[derive(Debug)]
pub(crate) struct Layout<'a> {
    pub original: &'a str,
    pub folded: Folded,
    pub tokens: Vec<Token>,
    pub hits: Vec<Hit>,
    pub lines: Vec<Line>,
    /// The writer never opens a sentence with a capital after a period
    /// (`nontender. likely giant fibroadenoma. excise`): a period before a
    /// lower-case word ends a sentence too.
    lower_case: bool,
}

/// Past the colon when a line's content (`start..end`, folded) opens with
/// one of `labels` and a colon, markup allowed around them.
fn ruled_out_label_end(text: &str, start: usize, end: usize, labels: &[String]) -> Option<usize> {
    let line = &text[start..end];
    let opening = line.trim_start_matches(is_markup);
    let offset = line.len() - opening.len();
    // A table row with a cell that opens with the label (`| X | Less
    // likely: ... |`) rules out its whole row.
    let labelled = |cell: &str| {
        let cell = cell.trim_start_matches(is_markup);
        labels.iter().any(|label| {
            cell.strip_prefix(label.as_str())
                .is_some_and(|rest| rest.trim_start_matches(is_markup).starts_with(':'))
        })
    };
    // (`start` is past the row's opening `|`.)
    let row = text[..start].trim_end_matches([' ', '\t']).ends_with('|');
    if row && line.split('|').skip(1).any(labelled) {
        return Some(start);
    }
    labels.iter().find_map(|label| {
        let rest = opening.strip_prefix(label.as_str())?;
        let after = rest.trim_start_matches(is_markup);
        after
            .starts_with(':')
            .then(|| start + offset + label.len() + (rest.len() - after.len()) + 1)
    })
}

fn is_markup(character: char) -> bool {
    matches!(
        character,
        '*' | '_' | '#' | '>' | '`' | ' ' | '\t' | '-' | '•' | '+' | '|'
    )
}

/// Whether a writer ends sentences with a period and goes on in lower case
/// and never opens one in capitals, the first included (`48f ... nontender.
/// likely giant fibroadenoma.`; not `Int. hemorrhoids`).
fn writes_lower_case(text: &str) -> bool {
    if text
        .chars()
        .find(|c| c.is_alphabetic())
        .is_some_and(char::is_uppercase)
    {
        return false;
    }
    let mut lower = false;
    for (index, _) in text.match_indices(". ") {
        let before = text[..index].chars().next_back();
        match text[index + 2..].chars().next() {
            _ if before.is_none_or(|c| !c.is_alphanumeric()) => {}
            Some(c) if c.is_uppercase() => return false,
            Some(c) if c.is_lowercase() => lower = true,
            _ => {}
        }
    }
    lower
}

/// Where a line's content starts: past indentation, list markers and markup.
fn content_start(line: &str) -> usize {
    let trimmed = line.trim_start_matches(is_markup);
    let mut offset = line.len() - trimmed.len();
    let digits = trimmed.len() - trimmed.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    // `1.`, `2)`, `3:` — and `#1 ` (a problem list's number).
    let numbered = line[..offset].ends_with('#');
    if digits > 0 && digits <= 2 {
        let rest = &trimmed[digits..];
        if rest.starts_with(['.', ')', ':']) || (numbered && rest.starts_with(' ')) {
            let after = &rest[1..];
            offset += digits + 1 + (after.len() - after.trim_start_matches(is_markup).len());
        }
    }
    offset
}

impl<'a> Layout<'a> {
    pub fn new(original: &'a str, cues: &Cues, lexicon: &Lexicon) -> Self {
        let folded = Folded::new(original);
        let tokens = tokens(original, &folded, lexicon);
        let hits = cues.find(&folded.text);
        let mut layout = Self {
            original,
            folded,
            tokens,
            hits,
            lines: Vec::new(),
            lower_case: writes_lower_case(original),
        };
        layout.lines = layout.lay_lines(&cues.ruled_out_labels);
        layout
    }

    fn lay_lines(&self, ruled_out_labels: &[String]) -> Vec<Line> {
        let text = &self.folded.text;
        let mut lines = Vec::new();
        let mut start = 0;
        let mut section = None;
        let pieces: Vec<&str> = text.split('\n').collect();
        let is_rule = |piece: &str| {
            piece.trim_start().starts_with('|')
                && piece.contains('-')
                && piece.trim().chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
        };
        for (index, piece) in pieces.iter().enumerate() {
            let end = start + piece.len();
            let blank = piece.trim_matches(is_markup).trim().is_empty();
            let content = start + content_start(piece);
            let table_header = piece.trim_start().starts_with('|')
                && !is_rule(piece)
                && pieces.get(index + 1).is_some_and(|next| is_rule(next));
            let header = if blank {
                None
            } else if table_header {
                Some(Kind::Differential)
            } else {
                self.header_of(content, end)
            };
            if is_rule(piece) {
                // A table's rule keeps its header's section.
            } else if blank {
                section = None;
            } else if header.is_some() {
                section = header;
            }
            lines.push(Line {
                start,
                end,
                content,
                blank,
                header,
                section: if header.is_some() { None } else { section },
                ruled_out_from: ruled_out_label_end(text, content, end, ruled_out_labels),
            });
            start = end + 1;
        }
        lines
    }

    /// The cue kind a line heads a section for: the line ends in a colon (or
    /// holds nothing but the cue) and its first cue says what follows.
    fn header_of(&self, start: usize, end: usize) -> Option<Kind> {
        let text = self.folded.text[start..end]
            .trim_end_matches(is_markup)
            .trim_end();
        let hit = self.hits.iter().find(|hit| {
            hit.start >= start
                && hit.end <= end
                && matches!(
                    hit.kind,
                    Kind::Label
                        | Kind::Differential
                        | Kind::RuledOutForward
                        | Kind::RuledOutBackward
                        | Kind::Order
                )
        })?;
        let rest = self.folded.text[hit.end..end].trim_matches(|c: char| is_markup(c) || c == ':');
        // A backward rule-out cue heading a section (`Unlikely:`) rules out
        // the lines under it, as a forward one does.
        let kind = match hit.kind {
            Kind::RuledOutBackward => Kind::RuledOutForward,
            kind => kind,
        };
        (text.ends_with(':') || rest.is_empty()).then_some(kind)
    }

    /// The line holding a folded offset.
    /// Whether the line of `position` opens with one of `labels` and a
    /// colon (`Positives: …`), markup allowed around the label.
    pub fn line_opens_with(&self, position: usize, labels: &[String]) -> bool {
        let line = self.line_of(position);
        ruled_out_label_end(&self.folded.text, line.content, line.end, labels).is_some()
    }

    pub fn line_of(&self, position: usize) -> &Line {
        let index = self
            .lines
            .iter()
            .position(|line| position <= line.end)
            .unwrap_or(self.lines.len().saturating_sub(1));
        &self.lines[index]
    }

    /// The sentence holding a folded offset, as folded bounds.
    pub fn sentence_of(&self, position: usize) -> (usize, usize) {
        let line = self.line_of(position);
        let text = &self.folded.text;
        let mut start = line.content.min(position);
        let mut end = line.end;
        let bytes = text.as_bytes();
        for index in line.content..line.end {
            if matches!(bytes[index], b'.' | b'?' | b'!')
                && (index + 1 == line.end || bytes[index + 1] == b' ')
                && !text[..index].ends_with("vs")
                && !text[..index].ends_with("e.g")
                && !text[..index].ends_with("i.e")
                && !text[..index].ends_with(|c: char| c.is_ascii_digit())
                && (self.lower_case
                    || !self.original[self.folded.original(index + 1)..]
                        .trim_start()
                        .starts_with(|c: char| c.is_lowercase()))
            {
                if index < position {
                    start = index + 1;
                } else {
                    end = index;
                    break;
                }
            }
        }
        (start, end.max(start))
    }

    /// The clause holding a folded offset, as folded bounds.
    pub fn clause_of(&self, position: usize) -> (usize, usize) {
        let (sentence_start, sentence_end) = self.sentence_of(position);
        let mut start = sentence_start;
        let mut end = sentence_end;
        let bytes = &self.folded.text.as_bytes()[sentence_start..sentence_end];
        for (offset, byte) in bytes.iter().enumerate() {
            let index = sentence_start + offset;
            if matches!(byte, b',' | b';' | b'(' | b')') {
                if index < position {
                    start = index + 1;
                } else {
                    end = index;
                    break;
                }
            }
        }
        for hit in &self.hits {
            if hit.kind == Kind::ClauseBreak && hit.start >= start && hit.end <= end {
                if hit.end <= position {
                    start = hit.end;
                } else if hit.start >= position {
                    end = hit.start;
                }
            }
        }
        (start, end)
    }

    /// How many words lie between two folded offsets.
    pub fn words_between(&self, from: usize, to: usize) -> usize {
        // Tokens are in text order: count by binary search.
        let first = self.tokens.partition_point(|token| token.start < from);
        let past = self.tokens.partition_point(|token| token.end <= to);
        past.saturating_sub(first)
    }

    /// The hits of a kind inside folded bounds.
    pub fn hits_in(&self, kind: Kind, start: usize, end: usize) -> impl Iterator<Item = &Hit> {
        self.hits
            .iter()
            .filter(move |hit| hit.kind == kind && hit.start >= start && hit.end <= end)
    }

    /// Whether a span is ruled out: a forward cue shortly before it or a
    /// backward cue shortly after it in its clause, or a rule-out section.
    pub fn is_ruled_out(&self, start: usize, end: usize) -> bool {
        // A name that fills a bracket (`X (TTP)`) is read where the bracket
        // stands: it glosses the phrase before it, so a forward cue reaches
        // it across that phrase too (about a word a letter of an
        // abbreviation: `not thrombotic thrombocytopenic purpura (TTP)`).
        let gloss = self.bracket_filled_by(start, end);
        let allowance = gloss.map_or(0, |_| gloss_words(&self.folded.text[start..end]));
        let (start, end) = gloss.unwrap_or((start, end));
        if self.line_of(start).section == Some(Kind::RuledOutForward) || self.is_under_ruled_out_label(start)
        {
            return true;
        }
        let (clause_start, _) = self.clause_of(start);
        let (_, clause_end) = self.clause_of(self.past_open_bracket(start, end));
        let (_, sentence_end) = self.sentence_of(start);
        // A leading cue two words or more past the cue ends its scope: what
        // it negates is the subject of a verb that leads (`the absence of
        // renal involvement fit a serum sickness-like reaction`), while one
        // right after it is negated with what it names (`rules out what
        // looks like botulism`).
        self.hits_in(Kind::RuledOutForward, clause_start, start)
            .any(|hit| {
                self.words_between(hit.end, start) <= self.reach(hit) + allowance
                    && !self
                        .hits_in(Kind::LeadingForward, hit.end, start)
                        .any(|lead| self.words_between(hit.end, lead.start) >= 2)
            })
            || self
                .hits_in(Kind::RuledOutBackward, end, clause_end.max(end))
                .any(|hit| self.words_between(end, hit.start) <= BACKWARD_REACH)
            || self
                .hits_in(Kind::RuledOutBackward, clause_end.max(end), sentence_end.max(end))
                .any(|hit| self.refers_back(hit.start))
    }

    /// Whether a span follows, on its line, a rule-out label that opens the
    /// line (`Less likely: X, Y`, `- **Excluded:** X`): the label rules out
    /// everything its line lists.
    fn is_under_ruled_out_label(&self, start: usize) -> bool {
        self.line_of(start)
            .ruled_out_from
            .is_some_and(|from| start >= from)
    }

    /// The bracket `(...)` a span fills (only spaces between them), as
    /// (the `(`, past the `)`).
    fn bracket_filled_by(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let text = &self.folded.text;
        let open = text[..start].trim_end();
        let close = text[end..].trim_start();
        (open.ends_with('(') && close.starts_with(')')).then(|| {
            let open_at = open.len() - 1;
            let close_at = text.len() - close.len();
            (open_at, close_at + 1)
        })
    }

    /// Where a span's own clause goes on after it: past the `)` that closes
    /// a bracket the span opened (`PML (progressive multifocal
    /// leukoencephalopathy) is unlikely` reads the cue after the bracket).
    fn past_open_bracket(&self, start: usize, end: usize) -> usize {
        let text = &self.folded.text;
        let span = &text[start..end];
        // A bracket right after the span glosses it (`TTP (thrombotic ...)
        // no longer fits`, `thrombotic ... purpura (TTP) no longer fits`):
        // the clause goes on past it.
        let after = text[end..].trim_start();
        if after.starts_with('(') {
            let open = text.len() - after.len();
            let (_, sentence_end) = self.sentence_of(start);
            if let Some(offset) = text[open..sentence_end.max(open)].find(')') {
                return open + offset + 1;
            }
        }
        if span.matches('(').count() > span.matches(')').count() {
            let (_, sentence_end) = self.sentence_of(start);
            if let Some(offset) = text[end..sentence_end.max(end)].find(')') {
                return end + offset + 1;
            }
        }
        end
    }

    /// Whether the clause of a backward cue at `cue` has a pronoun for its
    /// subject (`..., but they are unlikely`), which refers back to the
    /// sentence before it.
    fn refers_back(&self, cue: usize) -> bool {
        let (clause_start, _) = self.clause_of(cue);
        // The pronoun opens the cue's clause, or is the word that breaks the
        // clause open (`X, which I would exclude`).
        self.hits
            .iter()
            .filter(|hit| hit.kind == Kind::Pronoun && hit.end <= cue)
            .any(|hit| {
                let opens = if hit.start >= clause_start {
                    self.words_between(clause_start, hit.start) == 0
                } else {
                    hit.end <= clause_start && self.words_between(hit.end, clause_start) == 0
                };
                opens && self.words_between(hit.end, cue) <= 1
            })
    }

    /// How far a forward cue reaches: less for a one-word cue.
    fn reach(&self, hit: &Hit) -> usize {
        if self.words_between(hit.start, hit.end) <= 1 {
            WORD_REACH
        } else {
            FORWARD_REACH
        }
    }

    /// Whether a span restates history (`known X`, `history of X`).
    pub fn is_history(&self, start: usize) -> bool {
        let (clause_start, _) = self.clause_of(start);
        self.hits_in(Kind::History, clause_start, start)
            .any(|hit| self.words_between(hit.end, start) <= FORWARD_REACH)
    }

    /// Whether a span sits in a question (`is there bilious vomiting?`).
    pub fn is_question(&self, start: usize) -> bool {
        let (_, end) = self.sentence_of(start);
        self.folded.text[end..].starts_with('?')
    }

    /// Whether a span is a test's purpose: the nearest structural cue before
    /// it in its sentence is a purpose cue (`to rule out X, Y and Z`), or it
    /// sits in an ordering sentence or section with no such cue before it
    /// (`check AChR antibodies for MG`, `Next steps: CT chest for thymoma`).
    pub fn is_purpose(&self, start: usize) -> bool {
        self.nearest_cue(start)
            .map_or_else(|| self.is_ordering(start), |hit| hit.kind == Kind::Purpose)
    }

    /// The nearest forward-scoping structural cue before a span in its
    /// sentence.
    pub fn nearest_cue(&self, start: usize) -> Option<&Hit> {
        let (sentence_start, _) = self.sentence_of(start);
        self.hits
            .iter()
            .filter(|hit| hit.start >= sentence_start && hit.end <= start)
            .rfind(|hit| {
                matches!(
                    hit.kind,
                    Kind::Purpose
                        | Kind::Label
                        | Kind::LeadingForward
                        | Kind::LeadingOpener
                        | Kind::Differential
                        | Kind::RuledOutForward
                        | Kind::History
                )
            })
    }

    /// Whether a span sits in a sentence or section that orders tests.
    pub fn is_ordering(&self, start: usize) -> bool {
        if self.line_of(start).section == Some(Kind::Order) {
            return true;
        }
        let (sentence_start, _) = self.sentence_of(start);
        self.hits_in(Kind::Order, sentence_start, start)
            .any(|hit| !self.is_negated(hit))
    }

    /// Whether a span sits in a sentence that a management cue opens
    /// (`Start oral vancomycin ...`, `Counsel about febrile seizures`): it
    /// treats or advises, and names no diagnosis as the answer's.
    pub fn is_management(&self, start: usize) -> bool {
        let (sentence_start, _) = self.sentence_of(start);
        let rest = self.folded.text[sentence_start..].trim_start_matches(is_markup);
        let opening = self.folded.text.len() - rest.len();
        self.hits
            .iter()
            .any(|hit| hit.kind == Kind::Management && hit.start == opening)
    }

    /// Whether a span sits in a bulleted list whose first item treats,
    /// advises or orders (`- Reassure the parents`, `- Start ...`, `- Check
    /// TSH`): the list is a plan, and names no diagnosis as the answer's.
    pub fn is_in_plan_list(&self, start: usize) -> bool {
        let text = &self.folded.text;
        // A marker and a space (`- `, `* `, `• `); bold (`**X**`) is none.
        let bulleted = |line: &Line| {
            let marker = text[line.start..line.content].trim_start();
            !line.blank
                && marker
                    .strip_prefix(['-', '*', '•'])
                    .is_some_and(|rest| rest.starts_with(char::is_whitespace))
        };
        let Some(mut first) = self.lines.iter().position(|line| start <= line.end) else {
            return false;
        };
        if !bulleted(&self.lines[first]) {
            return false;
        }
        while first > 0 && bulleted(&self.lines[first - 1]) {
            first -= 1;
        }
        let item = &self.lines[first];
        self.is_management(item.content) || self.hits_in(Kind::Order, item.content, item.end).next().is_some()
    }

    /// Whether a span follows a differential cue in its own sentence (`Ddx:
    /// gout, CPPD`), not under a differential heading.
    pub fn is_in_inline_differential(&self, start: usize) -> bool {
        let (sentence_start, _) = self.sentence_of(start);
        self.hits_in(Kind::Differential, sentence_start, start)
            .next()
            .is_some()
    }

    /// Whether a span is offered by a differential cue (in its sentence,
    /// before or after it) or sits in a differential section.
    pub fn is_offered_by_cue(&self, start: usize) -> bool {
        if self.line_of(start).section == Some(Kind::Differential) {
            return true;
        }
        let (sentence_start, sentence_end) = self.sentence_of(start);
        self.hits_in(Kind::Differential, sentence_start, start)
            .next()
            .is_some()
            || self
                .hits_in(Kind::DifferentialBackward, start, sentence_end)
                .next()
                .is_some()
            || self
                .hits_in(Kind::LeadingForward, sentence_start, start)
                .next()
                .is_some()
    }

    /// Whether a cue is negated by a negation shortly before it in its clause.
    pub fn is_negated(&self, hit: &Hit) -> bool {
        let (clause_start, _) = self.clause_of(hit.start);
        self.hits_in(Kind::Negation, clause_start, hit.start)
            .any(|negation| self.words_between(negation.end, hit.start) <= NEGATION_REACH)
    }

    /// The original text of folded bounds.
    pub fn original_text(&self, start: usize, end: usize) -> &'a str {
        let from = self.folded.original(start);
        let to = self.folded.original(end).max(from);
        &self.original[from..to]
    }
}

/// About how many words a bracketed gloss stands for: a letter a word
/// for a one-word abbreviation (`TTP`: 3), else its own words; at most 6.
fn gloss_words(gloss: &str) -> usize {
    let words: Vec<&str> = gloss.split_whitespace().collect();
    let count = match words.as_slice() {
        [one] => one.chars().filter(|c| c.is_alphabetic()).count(),
        many => many.len(),
    };
    count.min(6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cues::tests::ANSWER_YAML;

    fn with_layout(text: &str, check: impl FnOnce(&Layout<'_>)) {
        let cues = match Cues::parse(ANSWER_YAML, "answer.yaml") {
            Ok(cues) => cues,
            Err(error) => panic!("{error}"),
        };
        let layout = Layout::new(text, &cues, &cues.lexicon);
        check(&layout);
    }

    fn at(text: &str, needle: &str) -> usize {
        text.to_lowercase().find(needle).unwrap_or(usize::MAX)
    }

    #[test]
    fn list_markers_are_skipped() {
        assert_eq!(content_start("  1. **MG**"), 7);
        assert_eq!(content_start("- LEMS"), 2);
        assert_eq!(content_start("12 mg"), 0);
        assert_eq!(content_start("#1: LEMS"), 4);
        assert_eq!(content_start("#2 LEMS"), 3);
        assert_eq!(content_start("# 12 mg"), 2);
    }

    #[test]
    fn a_bulleted_list_that_opens_with_a_plan_is_a_plan() {
        let text = "- Reassure the parents\n- Explain that the febrile seizure was simple\n- Pyridostigmine if weak\n\n- Myasthenia gravis\n- Start pyridostigmine";
        with_layout(text, |layout| {
            assert!(layout.is_in_plan_list(at(text, "febrile")));
            assert!(layout.is_in_plan_list(at(text, "pyridostigmine if")));
            // A list that opens with a diagnosis is no plan, even where a
            // later item treats.
            assert!(!layout.is_in_plan_list(at(text, "myasthenia")));
            assert!(!layout.is_in_plan_list(at(text, "start")));
        });
        // Bold is no bullet, and an ordering first item makes a plan too.
        let text = "**Check AChR antibodies.**\nMyasthenia gravis";
        with_layout(text, |layout| {
            assert!(!layout.is_in_plan_list(at(text, "myasthenia")));
        });
        let text = "- Check AChR antibodies\n- Myasthenia gravis clinic";
        with_layout(text, |layout| {
            assert!(layout.is_in_plan_list(at(text, "myasthenia")));
        });
    }

    #[test]
    fn a_table_cell_that_opens_with_a_rule_out_label_rules_out_its_row() {
        let text = "| Condition | Comment |\n|---|---|\n| Botulism | Typical |\n| Myasthenia gravis | Less likely: no fatigability |";
        with_layout(text, |layout| {
            let start = at(text, "myasthenia");
            assert!(layout.is_ruled_out(start, start + "myasthenia gravis".len()));
            let start = at(text, "botulism");
            assert!(!layout.is_ruled_out(start, start + "botulism".len()));
        });
    }

    #[test]
    fn header_lines_open_sections_until_a_blank_line() {
        let text = "**Differential:**\n- LEMS\n- botulism\n\nPlan: rest";
        with_layout(text, |layout| {
            assert_eq!(layout.lines[0].header, Some(Kind::Differential));
            assert_eq!(layout.lines[1].section, Some(Kind::Differential));
            assert_eq!(layout.lines[2].section, Some(Kind::Differential));
            assert_eq!(layout.lines[4].section, None);
        });
    }

    #[test]
    fn sentences_and_clauses_have_bounds() {
        let text = "MG is likely. LEMS vs. botulism, but not stroke";
        with_layout(text, |layout| {
            let lems = at(text, "lems");
            assert_eq!(layout.sentence_of(lems), (13, text.len()));
            let stroke = at(text, "stroke");
            let (start, _) = layout.clause_of(stroke);
            assert!(start > at(text, "botulism"));
        });
    }

    #[test]
    fn rule_out_cues_scope_both_directions() {
        let text = "No evidence of botulism. Stroke is unlikely. LEMS remains possible";
        with_layout(text, |layout| {
            let span = |word: &str| (at(text, word), at(text, word) + word.len());
            let (start, end) = span("botulism");
            assert!(layout.is_ruled_out(start, end));
            let (start, end) = span("stroke");
            assert!(layout.is_ruled_out(start, end));
            let (start, end) = span("lems");
            assert!(!layout.is_ruled_out(start, end));
        });
    }

    #[test]
    fn a_leading_verb_ends_a_rule_out_cue_scope_over_its_subject() {
        let text = "The absence of bulbar signs fits LEMS. The EMG rules out what looks like botulism.";
        with_layout(text, |layout| {
            let span = |word: &str| (at(text, word), at(text, word) + word.len());
            let (start, end) = span("lems");
            assert!(!layout.is_ruled_out(start, end));
            let (start, end) = span("botulism");
            assert!(layout.is_ruled_out(start, end));
        });
    }

    #[test]
    fn a_writer_who_never_capitalises_ends_sentences_at_periods() {
        let text = "58m, ptosis x2wk. myasthenia gravis. start pyridostigmine";
        with_layout(text, |layout| {
            let mg = at(text, "myasthenia");
            assert_eq!(layout.sentence_of(mg), (mg - 1, at(text, ". start")));
        });
        // One capitalised sentence start: a lower-case word after a period
        // continues the sentence (`pt. was`).
        let text = "Ptosis for weeks. Onset after pt. was vaccinated";
        with_layout(text, |layout| {
            let was = at(text, "was");
            assert_eq!(layout.sentence_of(was).0, at(text, " onset"));
        });
    }

    #[test]
    fn a_backward_cue_reads_past_the_bracket_a_span_opened() {
        let text = "Stroke (CVA) is unlikely. LEMS (or MG) is possible; botulism (toxin) fits";
        with_layout(text, |layout| {
            // The span ends inside its own bracket, as an abbreviation's does.
            let start = at(text, "stroke");
            assert!(layout.is_ruled_out(start, at(text, "cva") + 3));
            let start = at(text, "lems");
            assert!(!layout.is_ruled_out(start, at(text, "or mg") + 5));
            // A bracket the span did not open still ends the clause.
            let start = at(text, "botulism");
            assert!(!layout.is_ruled_out(start, start + "botulism".len()));
        });
        // A gloss right after the span: the cue after the gloss reaches it.
        let text = "So thrombotic purpura (TTP) no longer fits. Botulism (toxin), then stroke is unlikely";
        with_layout(text, |layout| {
            let start = at(text, "thrombotic");
            assert!(layout.is_ruled_out(start, start + "thrombotic purpura".len()));
            let start = at(text, "botulism");
            assert!(!layout.is_ruled_out(start, start + "botulism".len()));
        });
    }

    #[test]
    fn a_name_filling_a_bracket_is_read_where_the_bracket_stands() {
        let text = "Not thrombotic purpura (TTP). Stroke (CVA) is unlikely. LEMS (MG) is likely";
        with_layout(text, |layout| {
            let span = |word: &str| (at(text, word), at(text, word) + word.len());
            let (start, end) = span("ttp");
            assert!(layout.is_ruled_out(start, end));
            let (start, end) = span("cva");
            assert!(layout.is_ruled_out(start, end));
            let (start, end) = span("(mg");
            assert!(!layout.is_ruled_out(start + 1, end));
        });
        // The cue reaches the gloss across the phrase it glosses, and no
        // further.
        let text = "Diagnosis: not thrombotic thrombocytopenic purpura (TTP). Not a case of typical thrombotic thrombocytopenic purpura in an adult (TTP)";
        with_layout(text, |layout| {
            let first = at(text, "ttp");
            assert!(layout.is_ruled_out(first, first + 3));
            let second = at(&text[first + 3..], "ttp") + first + 3;
            assert!(!layout.is_ruled_out(second, second + 3));
        });
    }

    #[test]
    fn a_one_word_negation_reaches_less_far() {
        let text = "Not typical botulism. No single test confirms stroke";
        with_layout(text, |layout| {
            let span = |word: &str| (at(text, word), at(text, word) + word.len());
            let (start, end) = span("botulism");
            assert!(layout.is_ruled_out(start, end));
            let (start, end) = span("stroke");
            assert!(!layout.is_ruled_out(start, end));
        });
    }

    #[test]
    fn history_needs_a_history_cue_in_the_clause() {
        let text = "Known Crohn disease, now with fever; consider abscess";
        with_layout(text, |layout| {
            assert!(layout.is_history(at(text, "crohn")));
            assert!(!layout.is_history(at(text, "abscess")));
        });
    }

    #[test]
    fn negated_orders_do_not_order() {
        let text = "No need to order a CT. Check a CBC";
        with_layout(text, |layout| {
            assert!(!layout.is_ordering(at(text, "ct")));
            assert!(layout.is_ordering(at(text, "cbc")));
        });
    }
}
