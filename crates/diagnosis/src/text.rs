//! Text normalisation shared by the ontology and the reader.
//!
//! Text is read in two forms. The *folded* form is the text lower-cased with
//! diacritics and typographic punctuation folded (`Guillain–Barré` reads as
//! `guillain-barre`), keeping a map back to the original byte offsets so a
//! mention can point into what the subject wrote; cues are found in it.
//! The *word* form splits the folded text into alphanumeric tokens, each in
//! canonical spelling: British spellings mapped to American through the
//! fragments the pack's answer file lists, possessive `'s` dropped and a plural
//! `s` taken off, so `Crohn's`, `leukaemias` and `leukemia` read alike.
//! Diagnosis and test names are matched on words, leftmost-longest.

use std::collections::HashSet;

/// How words are spelled canonically: the pack's spelling fragments and stop
/// words (empty until a reader installs the answer file's).
#[derive(Debug, Clone, Default)]
pub(crate) struct Lexicon {
    /// British fragment to American fragment, replaced within a word.
    pub spellings: Vec<(String, String)>,
    /// Function words that carry no content (`of`, `the`, `with`).
    pub stop_words: HashSet<String>,
    /// Words that qualify a diagnosis without naming another (`acute`,
    /// `left`, `stage`).
    pub qualifiers: HashSet<String>,
}

impl Lexicon {
    /// The canonical form of one folded word.
    pub fn canonical(&self, word: &str) -> String {
        let mut word = word.to_string();
        for (british, american) in &self.spellings {
            if word.contains(british.as_str()) {
                word = word.replace(british.as_str(), american);
            }
        }
        singular(&word)
    }

    /// Whether a canonical word only qualifies a diagnosis.
    pub fn is_qualifier(&self, word: &str) -> bool {
        self.qualifiers.contains(word)
    }

    /// Whether a canonical word carries content.
    pub fn is_content(&self, word: &str) -> bool {
        !self.stop_words.contains(word)
    }
}

/// A plural or possessive `s` taken off a word long enough to have one.
fn singular(word: &str) -> String {
    let length = word.chars().count();
    if length > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..word.len() - 3]);
    }
    if length > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        return word[..word.len() - 1].to_string();
    }
    word.to_string()
}

/// Text lower-cased and folded, with the original offset of every byte.
#[derive(Debug, Clone)]
pub(crate) struct Folded {
    pub text: String,
    /// `origin[i]` is the original byte offset of folded byte `i`; one extra
    /// entry maps the end.
    origin: Vec<usize>,
}

impl Folded {
    pub fn new(original: &str) -> Self {
        let mut text = String::with_capacity(original.len());
        let mut origin = Vec::with_capacity(original.len() + 1);
        for (offset, character) in original.char_indices() {
            let mut push = |folded: &str| {
                for _ in 0..folded.len() {
                    origin.push(offset);
                }
                text.push_str(folded);
            };
            match fold_char(character) {
                Some(folded) => push(folded),
                None => {
                    for lower in character.to_lowercase() {
                        let mut buffer = [0u8; 4];
                        push(lower.encode_utf8(&mut buffer));
                    }
                }
            }
        }
        origin.push(original.len());
        Self { text, origin }
    }

    /// The original byte offset of a folded offset.
    pub fn original(&self, folded: usize) -> usize {
        self.origin.get(folded).copied().unwrap_or(0)
    }
}

/// Diacritics and typographic punctuation folded to ASCII.
fn fold_char(character: char) -> Option<&'static str> {
    Some(match character {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'À' | 'Á' | 'Â' | 'Ã' | 'Ä' | 'Å' => "a",
        'ç' | 'Ç' | 'ć' => "c",
        'è' | 'é' | 'ê' | 'ë' | 'È' | 'É' | 'Ê' | 'Ë' => "e",
        'ì' | 'í' | 'î' | 'ï' | 'Ì' | 'Í' | 'Î' | 'Ï' => "i",
        'ñ' | 'Ñ' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'Ò' | 'Ó' | 'Ô' | 'Õ' | 'Ö' | 'Ø' => "o",
        'ù' | 'ú' | 'û' | 'ü' | 'Ù' | 'Ú' | 'Û' | 'Ü' => "u",
        'ý' | 'ÿ' | 'Ý' => "y",
        'ß' => "ss",
        'æ' | 'Æ' => "ae",
        'œ' | 'Œ' => "oe",
        '\u{2018}' | '\u{2019}' | '\u{2032}' => "'",
        '\u{201c}' | '\u{201d}' => "\"",
        // `most_likely_diagnosis` (a JSON key) reads as words.
        '_' => " ",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2212}' => "-",
        '\u{a0}' => " ",
        _ => return None,
    })
}

/// One word of a text.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    /// The canonical word.
    pub word: String,
    /// Byte offsets in the folded text.
    pub start: usize,
    pub end: usize,
    /// Whether the word was written in capitals (two letters or more).
    pub capitals: bool,
}

/// The words of a text, each canonical, with folded offsets.
pub(crate) fn tokens(original: &str, folded: &Folded, lexicon: &Lexicon) -> Vec<Token> {
    let text = &folded.text;
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut index = 0;
    while index < text.len() {
        let Some(character) = text[index..].chars().next() else {
            break;
        };
        if !character.is_alphanumeric() {
            index += character.len_utf8();
            continue;
        }
        let start = index;
        while index < text.len() {
            match text[index..].chars().next() {
                Some(next) if next.is_alphanumeric() => index += next.len_utf8(),
                _ => break,
            }
        }
        let end = index;
        // A possessive `'s` belongs to its word and is dropped.
        if bytes.get(index) == Some(&b'\'')
            && bytes.get(index + 1) == Some(&b's')
            && !bytes
                .get(index + 2)
                .is_some_and(|next| next.is_ascii_alphanumeric())
        {
            index += 2;
        }
        let written = &original[folded.original(start)..folded.original(end).max(folded.original(start))];
        let letters: Vec<char> = written.chars().filter(|c| c.is_alphabetic()).collect();
        let capitals = letters.len() >= 2 && letters.iter().all(|c| c.is_uppercase());
        tokens.push(Token {
            word: lexicon.canonical(&text[start..end]),
            start,
            end,
            capitals,
        });
    }
    tokens
}

/// The canonical words of a phrase.
pub(crate) fn words(phrase: &str, lexicon: &Lexicon) -> Vec<String> {
    let folded = Folded::new(phrase);
    tokens(phrase, &folded, lexicon)
        .into_iter()
        .map(|token| token.word)
        .collect()
}

/// The content words of a phrase (stop words left out).
pub(crate) fn content_words(phrase: &str, lexicon: &Lexicon) -> Vec<String> {
    words(phrase, lexicon)
        .into_iter()
        .filter(|word| lexicon.is_content(word))
        .collect()
}

/// Whether `position` in `text` starts or ends at a word boundary.
/// Where `phrase` occurs in `text` as whole words: the character before
/// and after each place is not alphanumeric. An empty phrase is nowhere.
pub(crate) fn whole_word_places<'t>(text: &'t str, phrase: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(phrase).map(|(at, _)| at).filter(move |&at| {
        let before = text[..at].chars().next_back();
        let after = text[at + phrase.len()..].chars().next();
        !phrase.is_empty()
            && before.is_none_or(|c| !c.is_alphanumeric())
            && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

pub(crate) fn is_boundary(text: &str, position: usize) -> bool {
    let before = text[..position].chars().next_back();
    let after = text[position..].chars().next();
    !(before.is_some_and(char::is_alphanumeric) && after.is_some_and(char::is_alphanumeric))
}

/// Whether two words differ by one edit: a letter changed, added or
/// dropped, or two neighbouring letters swapped (Damerau's transposition).
pub(crate) fn one_edit_apart(a: &str, b: &str) -> bool {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a == b || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let (rest_a, rest_b) = (&a[prefix..], &b[prefix..]);
    match rest_a.len().cmp(&rest_b.len()) {
        std::cmp::Ordering::Equal => {
            rest_a[1..] == rest_b[1..]
                || (rest_a.len() >= 2
                    && rest_a[0] == rest_b[1]
                    && rest_a[1] == rest_b[0]
                    && rest_a[2..] == rest_b[2..])
        }
        std::cmp::Ordering::Less => rest_a == &rest_b[1..],
        std::cmp::Ordering::Greater => &rest_a[1..] == rest_b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_edit_is_a_change_an_addition_a_drop_or_a_swap() {
        assert!(one_edit_apart("phylodes", "phyllodes"));
        assert!(one_edit_apart("atreisa", "atresia"));
        assert!(one_edit_apart("ekzematous", "eczematous"));
        assert!(one_edit_apart("jonhson", "johnson"));
        assert!(one_edit_apart("sickness", "sicknes"));
        assert!(!one_edit_apart("hypokalemia", "hyperkalemia"));
        assert!(!one_edit_apart("same", "same"));
        assert!(!one_edit_apart("quervian", "quervainx"));
        assert!(!one_edit_apart("abcd", "badc"));
    }

    fn lexicon() -> Lexicon {
        Lexicon {
            spellings: vec![("aemia".into(), "emia".into()), ("oesoph".into(), "esoph".into())],
            stop_words: ["of", "the"].iter().map(|word| word.to_string()).collect(),
            qualifiers: HashSet::new(),
        }
    }

    #[test]
    fn folding_keeps_original_offsets() {
        let folded = Folded::new("Guillain–Barré syndrome");
        assert_eq!(folded.text, "guillain-barre syndrome");
        let start = folded.text.find("syndrome").unwrap_or(0);
        assert_eq!(folded.original(start), "Guillain–Barré ".len());
    }

    #[test]
    fn spelling_plural_and_possessive_are_canonical() {
        let lexicon = lexicon();
        assert_eq!(words("Leukaemias", &lexicon), ["leukemia"]);
        assert_eq!(words("Crohn's disease", &lexicon), ["crohn", "disease"]);
        assert_eq!(words("oesophageal varices", &lexicon), ["esophageal", "varice"]);
        assert_eq!(words("sepsis abscess", &lexicon), ["sepsis", "abscess"]);
    }

    #[test]
    fn capitals_are_marked() {
        let text = "MG 60 mg";
        let folded = Folded::new(text);
        let marks: Vec<bool> = tokens(text, &folded, &Lexicon::default())
            .iter()
            .map(|token| token.capitals)
            .collect();
        assert_eq!(marks, [true, false, false]);
    }

    #[test]
    fn content_words_leave_out_stop_words() {
        assert_eq!(
            content_words("Disease of the heart", &lexicon()),
            ["disease", "heart"]
        );
    }

    #[test]
    fn boundaries_are_between_words() {
        assert!(is_boundary("not mg", 3));
        assert!(!is_boundary("nothing", 3));
    }
}
