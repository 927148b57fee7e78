//! Markup that carries meaning in how an answer is written rather than in
//! its words, rewritten byte for byte (same length, so every offset stays
//! the answer's) before the answer is read:
//!
//! - A reasoning trace (`<think>…</think>`, for each of the pack's
//!   `reasoning_tags`) before the answer is its reasoning, not its answer:
//!   blanked, when the answer goes on after it.
//! - `~~struck~~` text (Markdown strikethrough) is what the writer
//!   crossed out: it is blanked, as if never written.
//! - `\boxed{…}` (LaTeX, with `\text{…}` and `$$` around it) is how a
//!   model marks its final answer: it reads as the label `boxed:` before
//!   the boxed text, and the label is one of the pack's final labels.
//! - An ICD-10 code opening a line (`C83.38 – Diffuse large B-cell
//!   lymphoma`) is blanked, so the name after it is what the line says. A
//!   code of chapter R (symptoms, signs and abnormal findings not
//!   elsewhere classified) or Z (reasons for an encounter) codes no
//!   diagnosis: its whole line is blanked.
//! - A line that is all quotation (`'Increasingly aggressive … amphetamines
//!   positive.'`, 40 characters or more) quotes the case back: it is
//!   blanked, so the answer's own words are what is read.
//! - Dictated text with its punctuation spoken (`pain comma history of …
//!   period`, three such words or more, a `comma` among them) gets the
//!   punctuation back:
//!   `comma`, `period`, and `colon` after a sentence's first word
//!   (`Impression colon X` reads `Impression: X`).
//! - A JSON object (the answer opens with `{`, in a code fence or not) is
//!   read by its fields: a field named by a cue (`"primary_diagnosis":`,
//!   `_` and `-` read as spaces) reads as that label before its value, with
//!   the value's quotes and brackets blanked; every other field
//!   (`"supporting_evidence"`, `"confidence"`) is blanked, as are braces.
//! - A CSV table (a header of plain names, two commas or more, then rows of
//!   as many cells) is read by its first column named by a cue: the header
//!   line reads as that label, and each row keeps only that column's cell.

/// What the pack says about markup: the tags of a reasoning trace, a
/// transcript's speakers, and which XML element names are cues.
pub(super) struct Marks<'a> {
    pub reasoning_tags: &'a [String],
    /// Speakers whose turns are the answer (`assistant`, `doctor`).
    pub speakers: &'a [String],
    /// Speakers whose turns ask (`user`, `patient`).
    pub asking_speakers: &'a [String],
    /// Whether an XML element's name (lower case, `_` and `-` read as
    /// spaces) is a label, leading or differential cue.
    pub is_cue: &'a dyn Fn(&str) -> bool,
}

/// `answer` with its reasoning traces blanked and then its other
/// meaningful markup rewritten (see the module), or `None` when it has
/// neither.
pub(super) fn plain(answer: &str, marks: &Marks<'_>) -> Option<String> {
    let answered = without_reasoning(answer, marks.reasoning_tags);
    let text = answered.as_deref().unwrap_or(answer);
    let mut out = text.as_bytes().to_vec();
    let mut changed = elements(text, &mut out, marks.is_cue);
    changed |= lettered(text, &mut out);
    changed |= turns(text, &mut out, marks);
    changed |= strike(text, &mut out);
    changed |= boxed(text, &mut out);
    changed |= codes(text, &mut out);
    // A JSON field or a CSV cell is quoted, and is no quotation of the case.
    let structured = json_fields(text, &mut out, marks.is_cue) || csv_table(text, &mut out, marks.is_cue);
    changed |= structured;
    if !structured {
        changed |= quotations(text, &mut out);
    }
    changed |= dictation(text, &mut out);
    // Whole characters were replaced by ASCII bytes, so the bytes are
    // still UTF-8.
    if changed {
        String::from_utf8(out).ok()
    } else {
        answered
    }
}

/// The speaker of `line` among `speakers` when the line opens with the
/// speaker's name and a colon (`Assistant: …`, `**User:** …`), and the
/// length of that prefix.
fn speaker<'s>(line: &str, speakers: &'s [String]) -> Option<(&'s str, usize)> {
    let opening = line.trim_start_matches([' ', '\t', '*', '>', '#']);
    let lower = opening.to_lowercase();
    speakers.iter().find_map(|name| {
        let rest = lower.strip_prefix(name.as_str())?;
        let after = rest.trim_start_matches(['*', ' ']);
        let colon = after.strip_prefix(':')?;
        let taken = lower.len() - colon.len() + (colon.len() - colon.trim_start_matches('*').len());
        // Lower-casing keeps these ASCII prefixes' lengths.
        (lower.len() == opening.len()).then_some((name.as_str(), line.len() - opening.len() + taken))
    })
}

/// A transcript (`User: …` / `Assistant: …`, both kinds of speaker
/// present): the asking turns (a turn runs to the next speaker's line) are
/// the question, blanked; the answering speakers' names are blanked, so
/// their turns read as the answer's own text.
fn turns(answer: &str, out: &mut [u8], marks: &Marks<'_>) -> bool {
    let all = lines(answer).collect::<Vec<_>>();
    let answering = all
        .iter()
        .any(|(_, line)| speaker(line, marks.speakers).is_some());
    let asking = all
        .iter()
        .any(|(_, line)| speaker(line, marks.asking_speakers).is_some());
    if !(answering && asking) {
        return false;
    }
    let mut in_question = false;
    for (start, line) in all {
        if let Some((_, length)) = speaker(line, marks.speakers) {
            in_question = false;
            blank(out, start..start + length);
        } else if speaker(line, marks.asking_speakers).is_some() {
            in_question = true;
        }
        if in_question {
            blank(out, start..start + line.len());
        }
    }
    true
}

/// A JSON object's fields as labels (see the module).
fn json_fields(answer: &str, out: &mut [u8], is_cue: &dyn Fn(&str) -> bool) -> bool {
    let body = answer.trim_start();
    let body = match body.strip_prefix("```") {
        Some(fenced) => fenced.split_once('\n').map_or("", |(_, rest)| rest).trim_start(),
        None => body,
    };
    if !body.starts_with('{') {
        return false;
    }
    let open = answer.len() - body.len();
    let named = lines(&answer[open..])
        .any(|(_, line)| json_field(line.trim()).is_some_and(|(key, _)| is_cue(&cue_phrase(key))));
    if !named {
        return false;
    }
    let nesting = |text: &str| {
        text.bytes().fold(0isize, |depth, byte| match byte {
            b'[' | b'{' => depth + 1,
            b']' | b'}' => depth - 1,
            _ => depth,
        })
    };
    // Depth of a field's value being blanked (0: none).
    let mut skipping = 0usize;
    let mut changed = false;
    for (at, line) in lines(answer) {
        if at + line.len() <= open {
            // The fence's opening line.
            blank(out, at..at + line.len());
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let trimmed = line.trim();
        if skipping > 0 {
            skipping = (skipping as isize + nesting(trimmed)).max(0) as usize;
            blank(out, at..at + line.len());
            changed = true;
            continue;
        }
        let Some((key, value)) = json_field(trimmed) else {
            // A line of braces, brackets and commas, or a fence, is blanked;
            // an element of a cue's list keeps its words.
            if trimmed.bytes().all(|byte| b"{}[],`".contains(&byte)) || trimmed.starts_with("```") {
                blank(out, at..at + line.len());
            } else {
                blank_punctuation(out, at..at + line.len());
            }
            changed = true;
            continue;
        };
        let phrase = cue_phrase(key);
        let start = at + indent;
        let value_at = at + line.len() - value.len();
        if is_cue(&phrase) {
            blank(out, start..value_at);
            out[start..start + phrase.len()].copy_from_slice(phrase.as_bytes());
            out[start + phrase.len()] = b':';
            blank_punctuation(out, value_at..at + line.len());
        } else {
            blank(out, at..at + line.len());
            skipping = nesting(value).max(0) as usize;
        }
        changed = true;
    }
    changed
}

/// A JSON field line's key and the value text after its colon
/// (`"primary_diagnosis": "X",` gives `primary_diagnosis` and ` "X",`).
fn json_field(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = line.strip_prefix('"')?.split_once('"')?;
    Some((key, rest.trim_start().strip_prefix(':')?))
}

/// A name as a cue phrase: lower case, `_` and `-` read as spaces (an XML
/// element's, a JSON key's, a CSV column's).
fn cue_phrase(name: &str) -> String {
    name.to_ascii_lowercase().replace(['_', '-'], " ")
}

/// Blanks a JSON value's quotes, brackets, braces and a trailing comma.
fn blank_punctuation(out: &mut [u8], range: std::ops::Range<usize>) {
    let end = range.end;
    for byte in &mut out[range.clone()] {
        if b"\"[]{}".contains(byte) {
            *byte = b' ';
        }
    }
    if let Some(last) = (range.start..end)
        .rev()
        .find(|&index| out[index] != b' ' && out[index] != b'\r')
        && out[last] == b','
    {
        out[last] = b' ';
    }
}

/// The cells of one CSV line with the offset each starts at (a cell in
/// double quotes may hold commas).
fn csv_cells(line: &str) -> Vec<(usize, &str)> {
    let mut cells = Vec::new();
    let (mut start, mut quoted) = (0, false);
    for (index, byte) in line.bytes().enumerate() {
        match byte {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                cells.push((start, &line[start..index]));
                start = index + 1;
            }
            _ => {}
        }
    }
    cells.push((start, &line[start..]));
    cells
}

/// A CSV table's cue column as a label (see the module).
fn csv_table(answer: &str, out: &mut [u8], is_cue: &dyn Fn(&str) -> bool) -> bool {
    let mut rows = lines(answer).filter(|(_, line)| !line.trim().is_empty());
    let Some((header_at, header)) = rows.next() else {
        return false;
    };
    let names = csv_cells(header.trim_end());
    let plain_name = |name: &str| {
        !name.is_empty()
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"_- ".contains(&byte))
    };
    if names.len() < 3 || !names.iter().all(|(_, name)| plain_name(name.trim())) {
        return false;
    }
    let rows: Vec<(usize, &str)> = rows.collect();
    if rows.is_empty()
        || !rows
            .iter()
            .all(|(_, line)| csv_cells(line.trim_end()).len() == names.len())
    {
        return false;
    }
    let Some((column, phrase)) = names.iter().enumerate().find_map(|(column, (_, name))| {
        let phrase = cue_phrase(name.trim());
        is_cue(&phrase).then_some((column, phrase))
    }) else {
        return false;
    };
    blank(out, header_at..header_at + header.len());
    if phrase.len() < header.len() {
        out[header_at..header_at + phrase.len()].copy_from_slice(phrase.as_bytes());
        out[header_at + phrase.len()] = b':';
    }
    for (at, line) in rows {
        for (index, (start, cell)) in csv_cells(line.trim_end()).into_iter().enumerate() {
            let range = at + start..at + start + cell.len();
            if index == column {
                for byte in &mut out[range.clone()] {
                    if *byte == b'"' {
                        *byte = b' ';
                    }
                }
            } else {
                blank(out, range.clone());
            }
            // The comma that ends the cell.
            if range.end < at + line.len() && out[range.end] == b',' {
                out[range.end] = b' ';
            }
        }
    }
    true
}

fn blank(out: &mut [u8], range: std::ops::Range<usize>) {
    for byte in &mut out[range] {
        *byte = b' ';
    }
}

/// The lines of `text` with the offset each starts at.
fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n').scan(0, |start, line| {
        let at = *start;
        *start += line.len() + 1;
        Some((at, line))
    })
}

/// `answer` with its reasoning traces (`<think>…</think>`, for each of
/// `tags`, any case) blanked out byte for byte, so offsets stay those of
/// the answer — when the answer goes on after its last trace. `None` when
/// there is no closed trace, or nothing but the trace.
pub(super) fn without_reasoning(answer: &str, tags: &[String]) -> Option<String> {
    let lower = answer.to_ascii_lowercase();
    let mut blocks = Vec::new();
    for tag in tags {
        let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
        let mut from = 0;
        while let Some(at) = lower[from..].find(&open) {
            let start = from + at;
            let Some(length) = lower[start..].find(&close) else {
                break;
            };
            let end = start + length + close.len();
            blocks.push(start..end);
            from = end;
        }
    }
    let last = blocks.iter().map(|block| block.end).max()?;
    if !answer[last..].chars().any(char::is_alphanumeric) {
        return None;
    }
    let mut out = answer.as_bytes().to_vec();
    for block in blocks {
        blank(&mut out, block);
    }
    // Whole characters were blanked (a block starts and ends at ASCII `<`
    // and `>`), so the bytes are still UTF-8.
    String::from_utf8(out).ok()
}

/// An XML tag at the start of `text` (`<primary confidence="0.9">`,
/// `</dx>`): whether it closes, its name, and its length. A name opens with
/// a letter and holds letters, digits, `_` and `-`; the tag ends on its line.
fn xml_tag(text: &str) -> Option<(bool, &str, usize)> {
    let rest = text.strip_prefix('<')?;
    let (closing, rest) = match rest.strip_prefix('/') {
        Some(rest) => (true, rest),
        None => (false, rest),
    };
    let name_length = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    let name = &rest[..name_length];
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let after = &rest[name_length..];
    if !after.starts_with(['>', ' ', '/']) {
        return None;
    }
    let close = after.find('>')?;
    if after[..close].contains('\n') || (closing && !after[..close].trim().is_empty()) {
        return None;
    }
    Some((closing, name, text.len() - rest.len() + name_length + close + 1))
}

/// XML output (`<primary>X</primary>`, `<differential><dx>Y</dx>…`): an
/// element named by a cue reads as that cue's label (`primary:` before X,
/// a `differential:` heading over its items), every other tag, and an
/// element named more than once (a list's items), is blanked. Only an
/// answer with at least one element closed by name is XML.
fn elements(answer: &str, out: &mut [u8], is_cue: &dyn Fn(&str) -> bool) -> bool {
    let mut tags = Vec::new();
    for (at, _) in answer.match_indices('<') {
        if let Some((closing, name, length)) = xml_tag(&answer[at..]) {
            tags.push((at, closing, name.to_ascii_lowercase(), length));
        }
    }
    let closed = |name: &str| {
        tags.iter()
            .any(|(_, closing, other, _)| *closing && other == name)
    };
    let xml = tags.iter().any(|(_, closing, name, _)| !closing && closed(name));
    if !xml {
        return false;
    }
    for (at, closing, name, length) in &tags {
        blank(out, *at..*at + *length);
        let repeated = tags
            .iter()
            .filter(|(_, closing, other, _)| !closing && other == name)
            .count()
            > 1;
        let phrase = cue_phrase(name);
        if !closing && !repeated && phrase.len() < *length && is_cue(&phrase) {
            out[*at..*at + phrase.len()].copy_from_slice(phrase.as_bytes());
            out[*at + phrase.len()] = b':';
        }
    }
    true
}

/// A handoff's or a SOAP note's lettered line written with a dash (`A –
/// X`, `P - 24F …`: one capital, a space, a dash, a space) reads as the
/// letter's label (`A:   X`).
fn lettered(answer: &str, out: &mut [u8]) -> bool {
    let mut changed = false;
    for (line_start, line) in lines(answer) {
        let indent = line.len() - line.trim_start().len();
        let rest = &line[indent..];
        let mut chars = rest.chars();
        let (Some(letter), Some(' ')) = (chars.next(), chars.next()) else {
            continue;
        };
        let after = chars.as_str();
        let Some(dash) = ['-', '–', '—'].into_iter().find(|dash| after.starts_with(*dash)) else {
            continue;
        };
        if !letter.is_ascii_uppercase() || !after[dash.len_utf8()..].starts_with(' ') {
            continue;
        }
        let at = line_start + indent;
        out[at + 1] = b':';
        blank(out, at + 2..at + 2 + dash.len_utf8());
        changed = true;
    }
    changed
}

/// Blanks `~~…~~` spans that open and close on one line.
fn strike(answer: &str, out: &mut [u8]) -> bool {
    let mut changed = false;
    for (line_start, line) in lines(answer) {
        let mut from = 0;
        while let Some(open) = line[from..].find("~~") {
            let open = from + open;
            let Some(close) = line[open + 2..].find("~~") else {
                break;
            };
            let end = open + 2 + close + 2;
            blank(out, line_start + open..line_start + end);
            changed = true;
            from = end;
        }
    }
    changed
}

/// Rewrites `\boxed{X}` as ` boxed:X ` (the braces, `\text{`-like commands
/// inside and `$` around it blanked).
fn boxed(answer: &str, out: &mut [u8]) -> bool {
    const OPEN: &str = "\\boxed{";
    let mut changed = false;
    let mut from = 0;
    while let Some(at) = answer[from..].find(OPEN) {
        let start = from + at;
        let body = start + OPEN.len();
        let Some(close) = matching_brace(answer, body) else {
            break;
        };
        out[start..body].copy_from_slice(b" boxed:");
        let bytes = answer.as_bytes();
        let mut index = body;
        while index < close {
            if bytes[index] == b'\\' {
                // A command (`\text`, `\mathrm`) and the brace it opens.
                let mut end = index + 1;
                while end < close && bytes[end].is_ascii_alphabetic() {
                    end += 1;
                }
                blank(out, index..end);
                index = end;
            } else {
                if matches!(bytes[index], b'{' | b'}') {
                    out[index] = b' ';
                }
                index += 1;
            }
        }
        out[close] = b' ';
        // `$`/`$$` right around the box.
        let mut before = start;
        while before > 0 && bytes[before - 1] == b'$' {
            before -= 1;
            out[before] = b' ';
        }
        let mut after = close + 1;
        while after < bytes.len() && bytes[after] == b'$' {
            out[after] = b' ';
            after += 1;
        }
        changed = true;
        from = close + 1;
    }
    changed
}

/// The offset of the `}` that closes the brace opened just before `body`.
fn matching_brace(text: &str, body: usize) -> Option<usize> {
    let mut depth = 1usize;
    for (offset, byte) in text.as_bytes()[body..].iter().enumerate() {
        match byte {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(body + offset);
                }
            }
            b'\n' => return None,
            _ => {}
        }
    }
    None
}

/// Blanks an ICD-10 code that opens a line and is followed by a dash or a
/// colon; the whole line when the code is of chapter R or Z.
fn codes(answer: &str, out: &mut [u8]) -> bool {
    let mut changed = false;
    for (line_start, line) in lines(answer) {
        let content = line.len()
            - line
                .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '-' | '*' | '•'))
                .len();
        for (at, _) in line.char_indices() {
            let boundary =
                at == content || (at > content && line[..at].ends_with([' ', '(', '/', ';', ':', ',']));
            let Some(length) = boundary.then(|| icd10_code(&line[at..])).flatten() else {
                continue;
            };
            let rest = line[at + length..].trim_start();
            let separated = rest.starts_with(['-', ':', '–', '—', '|', '/']);
            // A dotted code (`K52.9`) is a code wherever it stands; an
            // undotted one (`B12`) only when a separator follows it.
            let dotted = line[at..at + length].contains('.');
            if !(separated || dotted) {
                continue;
            }
            let chapter = line.as_bytes()[at];
            // The code and its separator (`C83.38 – `).
            let separator = if separated {
                rest.chars().next().map_or(0, char::len_utf8)
            } else {
                0
            };
            let end = if matches!(chapter, b'R' | b'Z') && at == content {
                line.len()
            } else {
                line.len() - rest.len() + separator
            };
            blank(out, line_start + at..line_start + end);
            changed = true;
        }
    }
    changed
}

/// Blanks lines that are all quotation.
fn quotations(answer: &str, out: &mut [u8]) -> bool {
    const PAIRS: [(&str, &str); 4] = [("'", "'"), ("\"", "\""), ("“", "”"), ("‘", "’")];
    let mut changed = false;
    for (line_start, line) in lines(answer) {
        let trimmed = line.trim();
        let body = trimmed.trim_end_matches(['.', ',']);
        let quoted = PAIRS.iter().any(|(open, close)| {
            body.len() > open.len() + close.len() && body.starts_with(open) && body.ends_with(close)
        });
        if quoted && trimmed.chars().count() >= 40 {
            blank(out, line_start..line_start + line.len());
            changed = true;
        }
    }
    changed
}

/// Puts back spoken punctuation in dictated text.
fn dictation(answer: &str, out: &mut [u8]) -> bool {
    let words = |word: &'static str| {
        answer
            .match_indices(word)
            .filter(move |(at, _)| {
                let before = answer[..*at].chars().next_back();
                let after = answer[at + word.len()..].chars().next();
                before == Some(' ') && !after.is_some_and(char::is_alphanumeric)
            })
            .map(|(at, _)| at)
    };
    // `period` alone is an everyday word (`the neonatal period`); spoken
    // punctuation has commas too.
    let commas = words("comma").count();
    if commas == 0 || commas + words("period").count() < 3 {
        return false;
    }
    for (word, mark) in [("comma", b','), ("period", b'.')] {
        for at in words(word).collect::<Vec<_>>() {
            // ` comma` → `,` where the space was, the word blanked (only
            // blanked when the writer typed the mark as well: `period.`).
            let typed = answer[at + word.len()..].starts_with(['.', ',', ':', ';']);
            if !typed {
                out[at - 1] = mark;
            }
            blank(out, at..at + word.len());
        }
    }
    for at in words("colon").collect::<Vec<_>>() {
        // Right after a sentence's first word: `Impression colon`.
        let before = answer[..at - 1].trim_end_matches(|c: char| c.is_alphanumeric());
        let spoken_end = before.trim_end();
        let opens = spoken_end.is_empty()
            || before.ends_with('\n')
            || spoken_end.ends_with('.')
            || spoken_end.ends_with(" period");
        if opens {
            out[at - 1] = b':';
            blank(out, at..at + "colon".len());
        }
    }
    true
}

/// The length of an ICD-10 code at the start of `text`: a capital, two
/// digits (the second may be a letter), then optionally a dot and one to
/// four digits or capitals — and nothing alphanumeric right after.
fn icd10_code(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let letter = bytes.first().is_some_and(u8::is_ascii_uppercase);
    let digits = bytes.get(1).is_some_and(u8::is_ascii_digit)
        && bytes
            .get(2)
            .is_some_and(|b| b.is_ascii_digit() || b.is_ascii_uppercase());
    if !(letter && digits) {
        return None;
    }
    let mut length = 3;
    if bytes.get(3) == Some(&b'.') {
        let sub = bytes[4..]
            .iter()
            .take_while(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            .count();
        if (1..=4).contains(&sub) {
            length = 4 + sub;
        }
    }
    (!bytes.get(length).is_some_and(u8::is_ascii_alphanumeric)).then_some(length)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONE: Marks<'static> = Marks {
        reasoning_tags: &[],
        speakers: &[],
        asking_speakers: &[],
        is_cue: &|_| false,
    };

    #[test]
    fn a_transcript_reads_as_its_answering_turns() {
        let speakers = ["assistant".to_string(), "doctor".to_string()];
        let asking = ["user".to_string(), "patient".to_string()];
        let marks = Marks {
            speakers: &speakers,
            asking_speakers: &asking,
            ..NONE
        };
        let answer = "User: My son can't sit still on risperidone.\nIs it schizophrenia?\n**Assistant:** Most likely akathisia.\nPatient: thanks";
        let read = plain(answer, &marks).unwrap_or_default();
        assert_eq!(read.len(), answer.len());
        assert_eq!(
            read.split_whitespace().collect::<Vec<_>>().join(" "),
            "Most likely akathisia."
        );
        // One kind of speaker alone is no transcript.
        assert!(plain("User: is it MG?", &marks).is_none());
        assert!(plain("Doctor: MG.", &marks).is_none());
    }

    #[test]
    fn struck_text_is_blanked_byte_for_byte() {
        let answer = "~~Seborrheic keratosis~~ → **Melanoma**\nnot ~~this";
        let plain = plain(answer, &NONE).unwrap_or_default();
        assert_eq!(plain.len(), answer.len());
        assert!(!plain.contains("Seborrheic"));
        assert!(plain.contains("**Melanoma**"));
        // An unclosed mark on its line strikes nothing.
        assert!(plain.ends_with("not ~~this"));
    }

    #[test]
    fn a_boxed_answer_reads_as_a_label() {
        let answer = "Findings.\n\n$$\\boxed{\\text{Acute myeloid leukemia (AML)}}$$\n";
        let plain = plain(answer, &NONE).unwrap_or_default();
        assert_eq!(plain.len(), answer.len());
        assert_eq!(
            plain.split_whitespace().collect::<Vec<_>>(),
            ["Findings.", "boxed:", "Acute", "myeloid", "leukemia", "(AML)"]
        );
    }

    #[test]
    fn icd10_codes_are_blanked_and_symptom_codes_take_their_line() {
        let answer = "C83.38 – Diffuse large B-cell lymphoma\nR42 – Dizziness and giddiness\nB12 deficiency";
        let blanked = plain(answer, &NONE).unwrap_or_default();
        let lines: Vec<&str> = blanked.lines().map(str::trim).collect();
        assert_eq!(lines, ["Diffuse large B-cell lymphoma", "", "B12 deficiency"]);
        // Codes inside a line: after a label, chained with a slash, dotted
        // in a list.
        let answer = "Primary: C91.10 — Chronic lymphocytic leukemia\nT88.7XXA / L27.0 — Serum sickness-like reaction\nAlso: K52.9 gastroenteritis; A08.4 viral enteritis; vitamin B12 low";
        let coded = plain(answer, &NONE).unwrap_or_default();
        let lines: Vec<String> = coded
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            lines,
            [
                "Primary: Chronic lymphocytic leukemia",
                "Serum sickness-like reaction",
                "Also: gastroenteritis; viral enteritis; vitamin B12 low"
            ]
        );
        assert_eq!(icd10_code("M91.12 x"), Some(6));
        assert_eq!(icd10_code("COVID"), None);
        assert_eq!(icd10_code("H30.91"), Some(6));
        assert!(plain_is_none("Plain text, nothing marked."));
    }

    #[test]
    fn a_quoted_case_is_blanked_and_short_quotes_stay() {
        let answer = "'Persistent, forceful vomiting after alcohol ... free mediastinal air.'\n\nBoerhaave.";
        let plain = plain(answer, &NONE).unwrap_or_default();
        assert_eq!(plain.trim(), "Boerhaave.");
        assert!(plain_is_none("'Boerhaave.'\nThat is all."));
    }

    #[test]
    fn spoken_punctuation_is_put_back() {
        let answer = "Hand clinic dictation. Pain comma swelling period. Impression colon de Quervain tenosynovitis period. Plan colon splint comma NSAIDs period.";
        let put_back = plain(answer, &NONE).unwrap_or_default();
        assert_eq!(put_back.len(), answer.len());
        let squeezed = put_back.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(
            squeezed,
            // A mark the writer typed as well stays where it was typed.
            "Hand clinic dictation. Pain, swelling . Impression: de Quervain tenosynovitis . Plan: splint, NSAIDs ."
        );
        // The organ stays, and an answer that says `period` once is no dictation.
        let organ = plain(
            "Impression colon X comma Y period. A mass in the distal colon period.",
            &NONE,
        )
        .unwrap_or_default();
        let organ = organ.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(organ, "Impression: X, Y . A mass in the distal colon .");
        assert!(plain_is_none("Symptoms for a period of two weeks, then better."));
        assert!(plain_is_none(
            "Jaundice in the neonatal period, worse after the period of fasting; incubation period short."
        ));
    }

    #[test]
    fn xml_elements_named_by_cues_read_as_labels() {
        let answer = "<assessment>\n  <primary confidence=\"0.9\">Myasthenia gravis</primary>\n  <differential>\n    <dx>LEMS</dx>\n    <dx>Botulism</dx>\n  </differential>\n  <note>x < 5</note>\n</assessment>";
        let cues = ["primary", "differential", "dx", "assessment"];
        let marks = Marks {
            is_cue: &|name| cues.contains(&name),
            ..NONE
        };
        let plain = plain(answer, &marks).unwrap_or_default();
        assert_eq!(plain.len(), answer.len());
        let lines: Vec<String> = plain
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            lines,
            [
                "assessment:",
                "primary: Myasthenia gravis",
                "differential:",
                "LEMS",
                "Botulism",
                "",
                "x < 5",
                ""
            ]
        );
        // Angle brackets that close no element are text.
        assert!(plain_is_none("WBC <4 or >11, a <b> that never closes"));
    }

    #[test]
    fn a_lettered_line_with_a_dash_reads_as_its_label() {
        let answer = "I – Watcher\nA – Postpartum endometritis\n  P - 24F\nhemophilia A — factor VIII";
        let lettered = plain(answer, &NONE).unwrap_or_default();
        assert_eq!(lettered.len(), answer.len());
        let lines: Vec<String> = lettered
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert_eq!(
            lines,
            [
                "I: Watcher",
                "A: Postpartum endometritis",
                "P: 24F",
                "hemophilia A — factor VIII"
            ]
        );
        assert!(plain_is_none("A-fib with RVR.\nAB – blood group"));
    }

    /// A JSON answer reads by its cue-named fields; a CSV table by its
    /// cue-named column.
    #[test]
    fn json_fields_and_csv_columns_named_by_cues_read_as_labels() {
        let cues = ["most likely diagnosis", "differential", "primary dx", "diagnosis"];
        let marks = Marks {
            is_cue: &|name| cues.contains(&name),
            ..NONE
        };
        let squeezed = |text: &str| -> Vec<String> {
            let plain = plain(text, &marks).unwrap_or_default();
            assert_eq!(plain.len(), text.len());
            plain
                .lines()
                .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|line| !line.is_empty())
                .collect()
        };
        let answer = "```json\n{\n  \"most_likely_diagnosis\": \"Primary sclerosing cholangitis\",\n  \"supporting_evidence\": [\"ulcerative colitis\",\n    \"pruritus\"],\n  \"differential\": [\"PBC\", \"IgG4 cholangitis\"],\n  \"confidence\": 0.8\n}\n```";
        assert_eq!(
            squeezed(answer),
            [
                "most likely diagnosis: Primary sclerosing cholangitis",
                "differential: PBC , IgG4 cholangitis"
            ]
        );
        let table = "case,primary_dx,secondary_dx,confidence\n13,\"Femoral neck fracture (subcapital, displaced)\",\"contusion\",0.62";
        assert_eq!(
            squeezed(table),
            ["primary dx:", "Femoral neck fracture (subcapital, displaced)"]
        );
        // Not a table: prose with commas, a header with a sentence in it.
        assert!(plain_is_none(
            "Fever, rash, joint pain\nlikely parvovirus, less likely rubella, or lupus"
        ));
        assert!(plain_is_none("{ not json at all"));
    }

    fn plain_is_none(answer: &str) -> bool {
        plain(answer, &NONE).is_none()
    }
}
