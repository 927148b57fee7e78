//! Reading a dictated note: speech recognition writes what it hears, so a
//! TNM comes as `T three N one M zero`, a stage group as `stage two A`, an
//! abbreviation letter by letter (`P D L one`, `F L O T`), a drug name in
//! pieces (`durva lumab`, `B raf`) and some terms misheard (`brack a one`).
//! [`respell`] reads such tokens as the word that was said (their span stays
//! the source text), before any rule runs; a note written by hand has none
//! of these and reads as before.
//!
//! The words are data (`dictation` in `data/packs/oncology/extract.yaml`);
//! the names pieces may join into are the one-word drug, regimen and marker
//! names of the lexicon.

use super::lexicon::Lexicon;
use super::text::Tokens;

/// Reads the dictated words of `tokens` as written ones.
pub fn respell(lexicon: &Lexicon, tokens: &mut Tokens<'_>) {
    let words = &lexicon.dictation;
    let mut index = 0;
    while index < tokens.len() {
        // A misheard term, then maybe a number that belongs to it
        // (`brack a one` -> `BRCA1`).
        if let Some((length, said)) = words.heard.at(tokens, index) {
            let said = said.clone();
            let (end, word) = with_number(lexicon, tokens, index + length, &said);
            tokens.respell(index, end, &word);
            index += 1;
            continue;
        }
        if let Some((end, word)) = letter_run(tokens, index)
            .or_else(|| joined_name(lexicon, tokens, index))
            .map(|(end, word)| with_number(lexicon, tokens, end, &word))
        {
            tokens.respell(index, end, &word);
            index += 1;
            continue;
        }
        if let Some((end, word)) = spoken_tnm(lexicon, tokens, index) {
            tokens.respell(index, end, &word);
            index += 1;
            continue;
        }
        if lexicon.staging.words.starts(tokens, index) {
            spoken_group(lexicon, tokens, index);
        }
        // A marker name with its number spoken (`her two`).
        if tokens.tokens[index].word
            && let Some(number) = number_at(lexicon, tokens, index + 1, true)
            && number.len() == 1
            && words.names.contains(&format!("{}{number}", tokens.lower(index)))
        {
            let word = format!("{}{number}", tokens.raw(index));
            tokens.respell(index, index + 2, &word);
            index += 1;
            continue;
        }
        if let Some(number) = number_at(lexicon, tokens, index, false) {
            tokens.respell(index, index + 1, &number);
        }
        index += 1;
    }
}

/// Whether token `index` follows the one before it on the same line, apart.
fn spoken_after(tokens: &Tokens<'_>, index: usize) -> bool {
    tokens
        .tokens
        .get(index)
        .is_some_and(|token| index > 0 && token.space_before && !token.newline_before)
}

/// The digits token `index` says: a number word, or digits. An everyday
/// number word (`one`) is one only when `expected` or after a cue word.
fn number_at(lexicon: &Lexicon, tokens: &Tokens<'_>, index: usize, expected: bool) -> Option<String> {
    let token = tokens.tokens.get(index)?;
    if !token.word || token.spelled.is_some() {
        return None;
    }
    let word = tokens.lower(index);
    if word.bytes().all(|byte| byte.is_ascii_digit()) {
        return expected.then(|| word.to_string());
    }
    let words = &lexicon.dictation;
    let digits = words.numbers.get(word)?;
    let everyday = words.everyday_numbers.starts(tokens, index);
    let cued = index > 0 && words.number_cues.starts(tokens, index - 1);
    (!everyday || expected || cued).then(|| digits.clone())
}

/// `word` with the number spoken after it glued on, when that makes a
/// known name (`PDL` + `one` -> `PDL1`, `FGFR` + `two`): the end of the
/// tokens read and the word.
fn with_number(lexicon: &Lexicon, tokens: &Tokens<'_>, end: usize, word: &str) -> (usize, String) {
    if spoken_after(tokens, end)
        && let Some(number) = number_at(lexicon, tokens, end, true)
        && number.len() == 1
    {
        let joined = format!("{word}{number}");
        if lexicon.dictation.names.contains(&joined.to_ascii_lowercase()) {
            return (end + 1, joined);
        }
    }
    (end, word.to_string())
}

/// Two or more capital letters spoken apart on one line (`C O P D`,
/// `A B V D`): the end of the run and the letters as one word.
fn letter_run(tokens: &Tokens<'_>, index: usize) -> Option<(usize, String)> {
    let letter = |at: usize| {
        let raw = tokens.raw(at);
        tokens.tokens.get(at).is_some_and(|token| token.spelled.is_none())
            && raw.len() == 1
            && raw.bytes().all(|byte| byte.is_ascii_uppercase())
    };
    if !letter(index) {
        return None;
    }
    let mut end = index + 1;
    while letter(end) && spoken_after(tokens, end) {
        end += 1;
    }
    (end - index >= 2).then(|| (end, (index..end).map(|at| tokens.raw(at)).collect()))
}

/// Two to four words on one line that together spell a one-word drug or
/// marker name (`durva lumab`, `bren tux i mab`, `B raf`): the end and the
/// name as written.
fn joined_name(lexicon: &Lexicon, tokens: &Tokens<'_>, index: usize) -> Option<(usize, String)> {
    let piece = |at: usize| {
        tokens
            .tokens
            .get(at)
            .is_some_and(|token| token.word && token.spelled.is_none())
            && tokens.lower(at).bytes().all(|byte| byte.is_ascii_lowercase())
    };
    if !piece(index) {
        return None;
    }
    let mut joined = tokens.lower(index).to_string();
    let mut found = None;
    for end in index + 2..=index + 4 {
        let last = end - 1;
        if !piece(last) || !spoken_after(tokens, last) {
            break;
        }
        joined.push_str(tokens.lower(last));
        if lexicon.dictation.names.contains(&joined) {
            found = Some(end);
        }
    }
    let end = found?;
    Some((end, (index..end).map(|at| tokens.raw(at)).collect()))
}

/// A TNM category letter (`T`, `pN`, `M`) with its number spoken apart and
/// maybe its sub-letter (`T two B`, `pT four b`, `N zero`): the end and the
/// category as one word (`T2b`).
fn spoken_tnm(lexicon: &Lexicon, tokens: &Tokens<'_>, index: usize) -> Option<(usize, String)> {
    let raw = tokens.raw(index);
    let letter = raw.chars().last()?;
    let prefix = &raw[..raw.len() - letter.len_utf8()];
    let highest = match letter {
        'T' | 'N' => '4',
        'M' => '1',
        _ => return None,
    };
    if !(prefix.is_empty() || lexicon.staging.tnm_prefixes.iter().any(|known| known == prefix))
        || !spoken_after(tokens, index + 1)
    {
        return None;
    }
    let number = number_at(lexicon, tokens, index + 1, true)?;
    if number.len() != 1 || number.as_str() > "4" || number.chars().next()? > highest {
        return None;
    }
    let mut word = format!("{raw}{number}");
    let mut end = index + 2;
    let sub = tokens.raw(end);
    if spoken_after(tokens, end)
        && sub.len() == 1
        && matches!(sub.to_ascii_lowercase().as_str(), "a" | "b" | "c" | "d")
        && letter != 'N'
    {
        word.push_str(&sub.to_ascii_lowercase());
        end += 1;
    }
    Some((end, word))
}

/// After a stage word (past its fillers), a group with its number spoken
/// and its letter apart (`stage three A`, `FIGO three C one`) is read as
/// one word (`3A`, `3C1`).
fn spoken_group(lexicon: &Lexicon, tokens: &mut Tokens<'_>, index: usize) {
    let staging = &lexicon.staging;
    let Some(length) = staging.words.len_at(tokens, index) else {
        return;
    };
    let mut at = index + length;
    while let Some(filler) = staging.fillers.len_at(tokens, at) {
        at += filler;
    }
    let Some(number) = number_at(lexicon, tokens, at, true).filter(|number| number.as_str() <= "4") else {
        return;
    };
    let mut word = number;
    let mut end = at + 1;
    let letter = tokens.raw(end);
    if spoken_after(tokens, end) && matches!(letter, "A" | "B" | "C" | "D" | "b" | "c" | "d") {
        word.push_str(&letter.to_ascii_uppercase());
        end += 1;
        if spoken_after(tokens, end)
            && let Some(sub) =
                number_at(lexicon, tokens, end, true).filter(|sub| matches!(sub.as_str(), "1" | "2" | "3"))
        {
            word.push_str(&sub);
            end += 1;
        }
    }
    if end > at + 1 || tokens.raw(at) != word {
        tokens.respell(at, end, &word);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The words a dictated text is read as.
    fn read(text: &str) -> Vec<String> {
        let lexicon = Lexicon::builtin().unwrap();
        let mut tokens = Tokens::new(text);
        respell(lexicon, &mut tokens);
        for token in &tokens.tokens {
            assert!(text.get(token.start..token.end).is_some());
        }
        (0..tokens.len())
            .map(|index| tokens.raw(index).to_string())
            .collect()
    }

    fn said(words: &[&str]) -> Vec<String> {
        words.iter().map(|word| word.to_string()).collect()
    }

    #[test]
    fn spoken_tnm_and_stage_groups_read_as_written() {
        assert_eq!(
            read("clinically T four N two M zero, stage three B"),
            said(&["clinically", "T4", "N2", "M0", ",", "stage", "3B"])
        );
        assert_eq!(
            read("pT one c, FIGO stage four"),
            said(&["pT1c", ",", "FIGO", "stage", "4"])
        );
        assert_eq!(read("stage: three C two"), said(&["stage", ":", "3C2"]));
    }

    #[test]
    fn spelled_letters_and_pieces_of_names_join() {
        assert_eq!(
            read("P D L one high, M S I stable"),
            said(&["PDL1", "high", ",", "MSI", "stable"])
        );
        assert_eq!(read("on pembro lizumab"), said(&["on", "pembrolizumab"]));
        assert_eq!(read("K ras wild type"), said(&["Kras", "wild", "type"]));
        assert_eq!(read("a brack a two carrier"), said(&["a", "BRCA2", "carrier"]));
        assert_eq!(read("her two amplified"), said(&["her2", "amplified"]));
    }

    /// Everyday number words stay words unless a number is expected; a
    /// hand-written note reads as written.
    #[test]
    fn everyday_words_and_written_notes_are_left_alone() {
        assert_eq!(read("one of the nodes"), said(&["one", "of", "the", "nodes"]));
        assert_eq!(read("score of one"), said(&["score", "of", "1"]));
        assert_eq!(read("six cycles"), said(&["6", "cycles"]));
        assert_eq!(
            read("cT2 N1 M0, stage IIB"),
            said(&["cT2", "N1", "M0", ",", "stage", "IIB"])
        );
        assert_eq!(read("I\nA"), said(&["I", "A"]));
    }
}
