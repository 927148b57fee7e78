//! What a reply says about a chart fact — the "does the answer mention the
//! changed fact" half of a verdict. Clinicians write a fact many ways: `ER
//! and PR are reported positive`, `HER2 ? - not on chart`, `cT4aN2M0 (III)`,
//! `FDG-avid liver lesions and a left adrenal nodule`, `esophagectomy NOT
//! done`. This module holds the general rules that read them into plain
//! values; every phrase they use is data in the ontology file.
//!
//! - A marker reaches its status across a list of coordinated markers and
//!   linking words (`ER and PR are reported positive`).
//! - A stage group is a Roman numeral (or digit) after a staging word (`stage
//!   IIIB`, `stages this as IV`) or right after a TNM code (`cT4aN2M0 (III)`).
//! - A TNM code's M category says metastatic (`M1a`) or not (`M0`).
//! - A named metastatic site next to a lesion word (`liver lesions`, `adrenal
//!   nodule`, `peritoneal disease`) says metastatic.

use super::context::Phrases;

/// Phrases the mention rules use, from the ontology file.
#[derive(Debug, Clone, Default)]
pub struct MentionVocabulary {
    /// Words that may stand between a marker and its status without ending
    /// the statement (`and`, `are`, `reported`, `now`).
    pub links: Phrases<()>,
    /// Words after which a Roman numeral is a stage group (`stage`, `staged`).
    pub stage_words: Phrases<()>,
    /// Metastatic sites (`liver`, `adrenal`, `peritoneal`).
    pub sites: Phrases<String>,
    /// Words that make a site a lesion (`lesion`, `nodule`, `metastases`).
    pub lesion_words: Phrases<()>,
}

/// A stage group written as a Roman numeral (`iii`, `iiib`, `iva`) or, right
/// after a staging word, a digit (`4`): the group without its sub-letter.
pub fn stage_group(token: &str, digits: bool) -> Option<&'static str> {
    let base = token.trim_end_matches(['a', 'b', 'c']);
    let base = if base.is_empty() { token } else { base };
    let group = match base {
        "i" => "I",
        "ii" => "II",
        "iii" => "III",
        "iv" => "IV",
        "1" if digits => "I",
        "2" if digits => "II",
        "3" if digits => "III",
        "4" if digits => "IV",
        _ => return None,
    };
    // Only one sub-letter may follow (`iiib`, not `ivac`).
    (token.len() <= base.len() + 1).then_some(group)
}

/// A TNM code as one word (`ct4an2m0`, `ypt3`, `pt2n1a`) or an M category
/// alone (`m1a`, `cm0`): `Some(Some(true))` when it says M1, `Some(Some(false))`
/// for M0, `Some(None)` for a code without an M category; `None` when the
/// word is not a TNM code.
pub fn tnm(token: &str) -> Option<Option<bool>> {
    let bytes = token.as_bytes();
    let mut index = 0;
    // Prefixes: y (after therapy), r (recurrence), a (autopsy), then c, p or u.
    while index < bytes.len() && matches!(bytes[index], b'y' | b'r' | b'a') && index < 2 {
        index += 1;
    }
    if index < bytes.len() && matches!(bytes[index], b'c' | b'p' | b'u') {
        index += 1;
    }
    let category = |index: &mut usize, letter: u8, values: &[&str]| -> Option<String> {
        if bytes.get(*index) != Some(&letter) {
            return None;
        }
        let rest = &token[*index + 1..];
        let value = values.iter().find(|value| rest.starts_with(**value))?;
        *index += 1 + value.len();
        // One sub-letter (`t4a`, `n1b`, `m1c`).
        if bytes.get(*index).is_some_and(|byte| matches!(byte, b'a'..=b'd')) {
            *index += 1;
        }
        Some((*value).to_string())
    };
    let start = index;
    let t = category(&mut index, b't', &["is", "x", "0", "1", "2", "3", "4"]);
    let n = category(&mut index, b'n', &["x", "0", "1", "2", "3"]);
    let m = category(&mut index, b'm', &["x", "0", "1"]);
    if index != bytes.len() || (t.is_none() && (n.is_some() || m.is_none())) {
        return None;
    }
    // `m1` alone needs no prefix; a bare `t2` or `n1` alone is too common a
    // word part to read (a T code needs its N or M, or a prefix).
    if t.is_some() && n.is_none() && m.is_none() && start == 0 {
        return None;
    }
    Some(m.and_then(|m| match m.as_str() {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    }))
}

/// Stage mentions of one clause's words: `stage:<group>`, `metastatic` and
/// `non_metastatic` values.
pub fn stage_mentions(vocabulary: &MentionVocabulary, tokens: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (_, end, ()) in vocabulary.stage_words.find(tokens) {
        // `stage IIIB`, `stage 4`, `stages this as IV`.
        for (offset, token) in tokens.iter().enumerate().skip(end).take(3) {
            if let Some(group) = stage_group(token, offset == end) {
                found.push(format!("stage:{group}"));
                break;
            }
        }
    }
    for (index, token) in tokens.iter().enumerate() {
        let Some(m) = tnm(token) else { continue };
        match m {
            Some(true) => found.push("metastatic".into()),
            Some(false) => found.push("non_metastatic".into()),
            None => {}
        }
        // `cT4aN2M0 (III)`: a numeral right after the code is its group.
        if let Some(group) = tokens.get(index + 1).and_then(|token| stage_group(token, false)) {
            found.push(format!("stage:{group}"));
        }
    }
    let lesions = vocabulary.lesion_words.find(tokens);
    for (start, end, _) in vocabulary.sites.find(tokens) {
        let near = lesions.iter().any(|(lesion_start, lesion_end, ())| {
            (*lesion_start >= end && lesion_start - end <= 2)
                || (*lesion_end <= start && start - lesion_end <= 2)
        });
        if near {
            found.push("metastatic".into());
        }
    }
    found
}

/// Where a marker's statement ends on each side: past any coordinated
/// markers and linking words (`ER and PR are reported` reaches `positive`).
pub fn marker_reach(
    vocabulary: &MentionVocabulary,
    tokens: &[String],
    marker: (usize, usize),
    markers: &[(usize, usize)],
) -> (usize, usize) {
    let bridges = |index: usize| {
        vocabulary
            .links
            .longest_at(tokens, index)
            .map(|(length, ())| length)
            .or_else(|| {
                markers
                    .iter()
                    .find(|(start, _)| *start == index)
                    .map(|(start, end)| end - start)
            })
    };
    let mut right = marker.1;
    while let Some(length) = bridges(right) {
        right += length;
    }
    let mut left = marker.0;
    'outer: while left > 0 {
        for length in 1..=left.min(4) {
            let from = left - length;
            if bridges(from) == Some(length) {
                left = from;
                continue 'outer;
            }
        }
        break;
    }
    (left, right)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ontology::words;

    fn vocabulary() -> MentionVocabulary {
        let mut vocabulary = MentionVocabulary::default();
        for link in ["and", "are", "is", "reported", "receptor", "results", "were"] {
            vocabulary.links.insert(link, ());
        }
        for word in ["stage", "stages", "staged"] {
            vocabulary.stage_words.insert(word, ());
        }
        for site in ["liver", "adrenal", "peritoneal"] {
            vocabulary.sites.insert(site, site.to_string());
        }
        for lesion in ["lesions", "nodule", "disease", "metastases"] {
            vocabulary.lesion_words.insert(lesion, ());
        }
        vocabulary
    }

    #[test]
    fn stage_groups_are_roman_numerals_with_one_sub_letter() {
        assert_eq!(stage_group("iiib", false), Some("III"));
        assert_eq!(stage_group("iva", false), Some("IV"));
        assert_eq!(stage_group("ii", false), Some("II"));
        assert_eq!(stage_group("4", true), Some("IV"));
        assert_eq!(stage_group("4", false), None);
        assert_eq!(stage_group("ivac", false), None);
        assert_eq!(stage_group("via", false), None);
        assert_eq!(stage_group("a", false), None);
    }

    #[test]
    fn tnm_codes_give_their_m_category() {
        assert_eq!(tnm("ct4an2m0"), Some(Some(false)));
        assert_eq!(tnm("pt3n0m0"), Some(Some(false)));
        assert_eq!(tnm("m1a"), Some(Some(true)));
        assert_eq!(tnm("cm1"), Some(Some(true)));
        assert_eq!(tnm("ypt3"), Some(None));
        assert_eq!(tnm("pt2n1a"), Some(None));
        assert_eq!(tnm("t3n1"), Some(None));
        assert_eq!(tnm("ut3n1"), Some(None));
        // Words that merely start like a code.
        assert_eq!(tnm("t2"), None);
        assert_eq!(tnm("pet"), None);
        assert_eq!(tnm("tps"), None);
        assert_eq!(tnm("mri"), None);
        assert_eq!(tnm("n1"), None);
    }

    #[test]
    fn stage_mentions_read_groups_codes_and_sites() {
        let vocabulary = vocabulary();
        let read = |text: &str| {
            let mut found = stage_mentions(&vocabulary, &words(text));
            found.sort();
            found.dedup();
            found
        };
        assert_eq!(
            read("The chart now lists M1a disease, i.e. stage IVA"),
            ["metastatic", "stage:IV"]
        );
        assert_eq!(read("cT4aN2M0 (III) noted"), ["non_metastatic", "stage:III"]);
        assert_eq!(read("the chart stages this as IV"), ["stage:IV"]);
        assert_eq!(
            read("FDG-avid liver lesions and a left adrenal nodule"),
            ["metastatic"]
        );
        assert_eq!(read("stage 4 colon cancer"), ["stage:IV"]);
        // A site without a lesion word, a staging word without a group.
        assert!(read("liver function is normal; staging laparoscopy negative").is_empty());
    }

    #[test]
    fn a_marker_reaches_its_status_across_coordinated_markers() {
        let vocabulary = vocabulary();
        let tokens = words("ER and PR are reported positive");
        let markers = [(0, 1), (2, 3)];
        assert_eq!(marker_reach(&vocabulary, &tokens, (0, 1), &markers), (0, 5));
        assert_eq!(marker_reach(&vocabulary, &tokens, (2, 3), &markers), (0, 5));
        let tokens = words("HER2 3 positive");
        assert_eq!(marker_reach(&vocabulary, &tokens, (0, 1), &[(0, 1)]), (0, 1));
    }
}
