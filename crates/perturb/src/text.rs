//! Text edits on a chart: non-overlapping byte-range replacements, applied
//! at once, with an offset map that carries every span into the new text.

use std::ops::Range;

/// One replacement of `range` in the original text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    pub range: Range<usize>,
    pub replacement: String,
}

/// A set of non-overlapping edits.
#[derive(Debug, Default, Clone)]
pub(crate) struct Plan {
    edits: Vec<Edit>,
}

impl Plan {
    /// Adds an edit; `Err` names the conflict when it overlaps another.
    pub fn push(&mut self, range: Range<usize>, replacement: impl Into<String>) -> Result<(), String> {
        let replacement = replacement.into();
        if replacement.is_empty() {
            // Overlapping deletions merge into one.
            if let Some(at) = self.edits.iter().position(|edit| {
                edit.replacement.is_empty() && range.start <= edit.range.end && edit.range.start <= range.end
            }) {
                let merged = self.edits.remove(at);
                let union = range.start.min(merged.range.start)..range.end.max(merged.range.end);
                return self
                    .push(union, String::new())
                    .inspect_err(|_| self.edits.push(merged.clone()));
            }
        }
        for edit in &self.edits {
            let overlaps = range.start < edit.range.end && edit.range.start < range.end;
            let same_point = range.is_empty() && edit.range.is_empty() && range.start == edit.range.start;
            if overlaps || same_point {
                if edit.range == range && edit.replacement == replacement {
                    return Ok(());
                }
                return Err(format!(
                    "two edits overlap at bytes {}..{} and {}..{}",
                    edit.range.start, edit.range.end, range.start, range.end
                ));
            }
        }
        self.edits.push(Edit { range, replacement });
        Ok(())
    }

    /// Deletions that end a line also take the spaces before them, so that no
    /// line is left with trailing blanks.
    pub fn tidy(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let ranges: Vec<Range<usize>> = self.edits.iter().map(|edit| edit.range.clone()).collect();
        for edit in &mut self.edits {
            if !edit.replacement.is_empty()
                || !(edit.range.end == bytes.len() || bytes[edit.range.end] == b'\n')
            {
                continue;
            }
            let mut start = edit.range.start;
            while start > 0
                && matches!(bytes[start - 1], b' ' | b'\t')
                && !ranges
                    .iter()
                    .any(|other| other.start < start && start - 1 < other.end)
            {
                start -= 1;
            }
            edit.range.start = start;
        }
    }

    /// Whether some edit touches `range`.
    pub fn touches(&self, range: &Range<usize>) -> bool {
        self.edits
            .iter()
            .any(|edit| edit.range.start < range.end && range.start < edit.range.end)
    }

    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// The edits in text order.
    pub fn sorted(&self) -> Vec<Edit> {
        let mut edits = self.edits.clone();
        edits.sort_by_key(|edit| (edit.range.start, edit.range.end));
        edits
    }

    /// Applies every edit to `text`.
    pub fn apply(&self, text: &str) -> (String, OffsetMap) {
        let edits = self.sorted();
        let mut out = String::with_capacity(text.len() + 64);
        let mut last = 0;
        let mut map = Vec::with_capacity(edits.len());
        for edit in &edits {
            out.push_str(&text[last..edit.range.start]);
            let new_start = out.len();
            out.push_str(&edit.replacement);
            map.push(Mapped {
                old: edit.range.clone(),
                new: new_start..out.len(),
            });
            last = edit.range.end;
        }
        out.push_str(&text[last..]);
        (out, OffsetMap { map })
    }
}

#[derive(Debug, Clone)]
struct Mapped {
    old: Range<usize>,
    new: Range<usize>,
}

/// Carries offsets of the old text into the new one.
#[derive(Debug, Clone)]
pub(crate) struct OffsetMap {
    map: Vec<Mapped>,
}

impl OffsetMap {
    /// Where a span starting at `offset` starts now (an edit it falls inside
    /// maps it to the start of the replacement).
    pub fn start(&self, offset: usize) -> usize {
        let mut delta: isize = 0;
        for mapped in &self.map {
            if offset < mapped.old.start {
                break;
            }
            if offset < mapped.old.end {
                return mapped.new.start;
            }
            delta = mapped.new.end as isize - mapped.old.end as isize;
        }
        (offset as isize + delta) as usize
    }

    /// Where a span ending at `offset` ends now (an edit it falls inside maps
    /// it to the end of the replacement).
    pub fn end(&self, offset: usize) -> usize {
        let mut delta: isize = 0;
        for mapped in &self.map {
            if offset <= mapped.old.start {
                break;
            }
            if offset <= mapped.old.end {
                return mapped.new.end;
            }
            delta = mapped.new.end as isize - mapped.old.end as isize;
        }
        (offset as isize + delta) as usize
    }

    /// Where the replacement of the edit of `old` starts in the new text.
    pub fn replacement_start(&self, old: &Range<usize>) -> Option<usize> {
        self.map
            .iter()
            .find(|mapped| mapped.old == *old)
            .map(|mapped| mapped.new.start)
    }

    /// Whether `range` lies wholly inside a deletion (an edit with an empty
    /// replacement).
    pub fn deleted(&self, range: &Range<usize>) -> bool {
        self.map.iter().any(|mapped| {
            mapped.new.is_empty()
                && mapped.old.start <= range.start
                && range.end <= mapped.old.end
                && !range.is_empty()
        })
    }
}

const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "vs", "e.g", "i.e", "approx", "no", "st", "cf", "pt", "fig", "etc", "dx", "hx",
];

/// The sentences of `text`, as byte ranges without surrounding whitespace. A
/// sentence ends at `.`, `!` or `?` followed by whitespace (not after a known
/// abbreviation or inside a number), or at a line break. A leading section
/// header (`Pathology:`) is not part of the sentence after it.
pub(crate) fn sentences(text: &str) -> Vec<Range<usize>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        let boundary = if byte == b'\n' {
            Some(index)
        } else if matches!(byte, b'.' | b'!' | b'?')
            && bytes.get(index + 1).is_none_or(|next| next.is_ascii_whitespace())
            && !ends_with_abbreviation(&text[start..index])
        {
            Some(index + 1)
        } else {
            None
        };
        if let Some(end) = boundary {
            push_sentence(text, start..end, &mut out);
            start = end;
        }
        index += 1;
    }
    push_sentence(text, start..text.len(), &mut out);
    out
}

fn ends_with_abbreviation(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    ABBREVIATIONS.contains(&word.as_str())
}

fn push_sentence(text: &str, range: Range<usize>, out: &mut Vec<Range<usize>>) {
    let slice = &text[range.clone()];
    let leading = slice.len() - slice.trim_start().len();
    let mut start = range.start + leading;
    let end = range.start + slice.trim_end().len();
    if start >= end {
        return;
    }
    let header_len = header_length(&text[start..end]);
    if header_len > 0 {
        start += header_len;
        let rest = &text[start..end];
        start += rest.len() - rest.trim_start().len();
        if start >= end {
            return;
        }
    }
    out.push(start..end);
}

/// Length of a `Header:` prefix (up to 40 letters, spaces, `/`, `&`, `-`).
fn header_length(sentence: &str) -> usize {
    let Some(colon) = sentence.find(':') else {
        return 0;
    };
    let head = &sentence[..colon];
    if colon == 0
        || colon > 40
        || !head
            .chars()
            .all(|c| c.is_ascii_alphabetic() || matches!(c, ' ' | '/' | '&' | '-' | '_'))
        || !head.starts_with(|c: char| c.is_ascii_uppercase())
    {
        return 0;
    }
    colon + 1
}

/// The range that deletes `sentence` cleanly: with the spaces after it, or,
/// when it ends its line, with the spaces before it.
pub(crate) fn deletion_range(text: &str, sentence: &Range<usize>) -> Range<usize> {
    let bytes = text.as_bytes();
    let mut end = sentence.end;
    while end < bytes.len() && (bytes[end] == b' ' || bytes[end] == b'\t') {
        end += 1;
    }
    if end < bytes.len() && bytes[end] != b'\n' {
        return sentence.start..end;
    }
    let mut start = sentence.start;
    while start > 0 && (bytes[start - 1] == b' ' || bytes[start - 1] == b'\t') {
        start -= 1;
    }
    start..end
}

/// Upper-cases the first character.
pub(crate) fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_follow_edits() {
        let text = "HER2 positive. ER positive.";
        let mut plan = Plan::default();
        plan.push(5..13, "negative").unwrap_or_default();
        plan.push(0..0, "Tumor: ").unwrap_or_default();
        let (out, map) = plan.apply(text);
        assert_eq!(out, "Tumor: HER2 negative. ER positive.");
        assert_eq!(&out[map.start(15)..map.end(27)], "ER positive.");
        assert_eq!(&out[map.start(5)..map.end(13)], "negative");
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let mut plan = Plan::default();
        assert!(plan.push(0..5, "a").is_ok());
        assert!(plan.push(3..7, "b").is_err());
        assert!(plan.push(5..7, "c").is_ok());
    }

    #[test]
    fn sentences_skip_numbers_abbreviations_and_headers() {
        let text = "Pathology: A 2.5 cm mass, approx. 3 cm deep. Dr. Smith saw her.\nPlan: TBD";
        let found: Vec<&str> = sentences(text).into_iter().map(|range| &text[range]).collect();
        assert_eq!(
            found,
            vec!["A 2.5 cm mass, approx. 3 cm deep.", "Dr. Smith saw her.", "TBD"]
        );
    }

    #[test]
    fn deletion_takes_neighbouring_spaces() {
        let text = "One. Two. Three.\nFour.";
        let sentence = 5..9;
        assert_eq!(&text[deletion_range(text, &sentence)], "Two. ");
        let last = 10..16;
        assert_eq!(&text[deletion_range(text, &last)], " Three.");
    }
}
