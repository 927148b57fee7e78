//! Tokens with byte offsets, and clauses, over a case's source text.
//!
//! Tokens are maximal ASCII-alphanumeric runs or single punctuation bytes;
//! every token keeps its byte range in the source, so that any span built
//! from tokens is an exact substring of the source. A token may be read as
//! another word than its source text ([`Tokens::respell`]: dictated `T three`
//! is read `T3`), its span still the source's.

/// One token of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    /// Whitespace (or the start of text) precedes the token.
    pub space_before: bool,
    /// A line break lies between the previous token and this one.
    pub newline_before: bool,
    pub word: bool,
    /// The word the token is read as, when not its source text: an index
    /// into [`Tokens::spelled`].
    pub spelled: Option<u32>,
}

/// A tokenised text: the original, its ASCII-lower-cased twin (same byte
/// offsets) and the tokens.
#[derive(Debug)]
pub struct Tokens<'a> {
    pub text: &'a str,
    pub lower: String,
    pub tokens: Vec<Token>,
    /// Words tokens are read as (as written, lower-cased).
    pub spelled: Vec<(String, String)>,
}

impl<'a> Tokens<'a> {
    pub fn new(text: &'a str) -> Self {
        let lower = text.to_ascii_lowercase();
        let bytes = text.as_bytes();
        let mut tokens = Vec::with_capacity(text.len() / 4);
        let mut index = 0;
        let mut space_before = true;
        let mut newline_before = false;
        while index < bytes.len() {
            let byte = bytes[index];
            if byte.is_ascii_whitespace() {
                space_before = true;
                newline_before |= byte == b'\n';
                index += 1;
                continue;
            }
            let start = index;
            let word = byte.is_ascii_alphanumeric();
            if word {
                while index < bytes.len() && bytes[index].is_ascii_alphanumeric() {
                    index += 1;
                }
            } else if byte.is_ascii() {
                index += 1;
            } else {
                // A non-ASCII character: one token over all its bytes.
                index += 1;
                while index < bytes.len() && (bytes[index] & 0xC0) == 0x80 {
                    index += 1;
                }
            }
            tokens.push(Token {
                start,
                end: index,
                space_before,
                newline_before,
                word,
                spelled: None,
            });
            space_before = false;
            newline_before = false;
        }
        Tokens {
            text,
            lower,
            tokens,
            spelled: Vec::new(),
        }
    }

    /// Reads tokens `first..end` as one token spelled `word` (its span from
    /// the first token's start to the last one's end).
    pub fn respell(&mut self, first: usize, end: usize, word: &str) {
        if first >= end || end > self.tokens.len() {
            return;
        }
        let mut token = self.tokens[first];
        token.end = self.tokens[end - 1].end;
        token.word = true;
        token.spelled = Some(self.spelled.len() as u32);
        self.spelled.push((word.to_string(), word.to_ascii_lowercase()));
        self.tokens.splice(first..end, [token]);
    }

    /// The lower-cased text of token `index` (empty past the end).
    pub fn lower(&self, index: usize) -> &str {
        self.tokens.get(index).map_or("", |token| match token.spelled {
            Some(at) => &self.spelled[at as usize].1,
            None => &self.lower[token.start..token.end],
        })
    }

    /// The original text of token `index`.
    pub fn raw(&self, index: usize) -> &str {
        self.tokens.get(index).map_or("", |token| match token.spelled {
            Some(at) => &self.spelled[at as usize].0,
            None => &self.text[token.start..token.end],
        })
    }

    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }

    /// Whether the lower-cased tokens from `index` spell `phrase` (words
    /// separated by spaces, punctuation as its own word: `"wild - type"`).
    pub fn matches(&self, index: usize, phrase: &[&str]) -> bool {
        phrase
            .iter()
            .enumerate()
            .all(|(offset, word)| self.lower(index + offset) == *word)
    }

    /// Whether token `index` opens a line (the first token, or one after a
    /// line break).
    pub fn opens_line(&self, index: usize) -> bool {
        index == 0 || self.tokens.get(index).is_some_and(|token| token.newline_before)
    }

    /// Token `index`, or the one after it when it is a bullet mark (`-`,
    /// `•`, `*`, `·`): the first word of a line that opens at `index`.
    pub fn past_bullet(&self, index: usize) -> usize {
        match self.lower(index) {
            "-" | "•" | "*" | "·" => index + 1,
            _ => index,
        }
    }

    /// Whether a clause ends before token `index`: `.`/`;`/`?`/`!` at the
    /// previous token (a `.` only when followed by space) or a line break.
    pub fn clause_break_before(&self, index: usize) -> bool {
        let Some(token) = self.tokens.get(index) else {
            return true;
        };
        if self.opens_line(index) {
            return true;
        }
        let previous = self.lower(index - 1);
        matches!(previous, ";" | "?" | "!") || (previous == "." && token.space_before)
    }

    /// Token ranges of the clauses, in order.
    pub fn clauses(&self) -> Vec<(usize, usize)> {
        let mut clauses = Vec::new();
        let mut start = 0;
        for index in 1..=self.tokens.len() {
            if index == self.tokens.len() || self.clause_break_before(index) {
                if index > start {
                    clauses.push((start, index));
                }
                start = index;
            }
        }
        clauses
    }

    /// Whether the sentence holding the clause ends with a question mark.
    pub fn is_question(&self, clause: (usize, usize)) -> bool {
        self.lower(clause.1.saturating_sub(1)) == "?"
    }

    /// Byte span of tokens `first..=last`.
    pub fn span(&self, first: usize, last: usize) -> (usize, usize) {
        (self.tokens[first].start, self.tokens[last].end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_keep_offsets_and_clauses_split() {
        let text = "HER2+ (IHC 3+). ER-neg; s/p Whipple\nnext 1.5 cm";
        let tokens = Tokens::new(text);
        let words: Vec<&str> = (0..tokens.len()).map(|index| tokens.raw(index)).collect();
        assert_eq!(&words[..6], &["HER2", "+", "(", "IHC", "3", "+"]);
        for token in &tokens.tokens {
            assert!(text.get(token.start..token.end).is_some());
        }
        assert_eq!(tokens.clauses().len(), 4);
        assert!(tokens.matches(8, &["er", "-", "neg"]));
    }

    #[test]
    fn non_ascii_is_one_token() {
        let tokens = Tokens::new("36.6°C ok");
        assert!(
            tokens
                .tokens
                .iter()
                .any(|token| &tokens.text[token.start..token.end] == "°")
        );
    }
}
