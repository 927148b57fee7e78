//! Prior lines of therapy with their outcome: `progressed on FOLFOX`,
//! `1L FOLFOX/bev x 8 mo → PD`, `TCHP (docetaxel, carboplatin, trastuzumab,
//! pertuzumab) with good response`, `osimertinib (Tagrisso) since 01/2024`.
//!
//! Drug and regimen names (brands and abbreviations too) come from the
//! ontology. Drugs joined by `/`, `+`, `,`, `and`, `with`, and a list in
//! brackets right after a regimen, are one regimen. A regimen's outcome is
//! read from its stretch of the clause (up to the next regimen; before it
//! when nothing follows): progression before response before ongoing. The
//! part of a clause from a plan word on (`plan`, `will`, `consider`) names
//! no line given.

use super::Found;
use super::clinical::push;
use super::lexicon::Lexicon;
use super::text::Tokens;

/// One regimen in a clause: its token range and its canonical drugs.
struct Regimen {
    first: usize,
    /// One past the last token.
    end: usize,
    drugs: Vec<String>,
}

/// Finds every prior line in the clause.
pub fn prior_lines(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    if tokens.is_question(clause) {
        return;
    }
    let words = &lexicon.lines;
    let start = clause.0;
    // A plan word ends the stretch that can hold given lines.
    let end = words.future.find(tokens, start, clause.1).unwrap_or(clause.1);
    let regimens = regimens(lexicon, tokens, start, end);
    for (position, regimen) in regimens.iter().enumerate() {
        let after = regimens.get(position + 1).map_or(end, |next| next.first);
        let before = if position == 0 {
            start
        } else {
            regimens[position - 1].end
        };
        // Before the regimen only a cue right before it (`progressed on X`).
        let reach = if position == 0 { 6 } else { 2 };
        let cue_start = before.max(regimen.first.saturating_sub(reach));
        let found = outcome(lexicon, tokens, regimen.end, after)
            .or_else(|| outcome(lexicon, tokens, cue_start, regimen.first))
            .or_else(|| {
                words
                    .ongoing
                    .find(tokens, before, after)
                    .map(|index| ("ongoing", index))
            });
        let Some((value, cue)) = found else {
            continue;
        };
        let name = &tokens.text[tokens.tokens[regimen.first].start..tokens.tokens[regimen.end - 1].end];
        let mut key = regimen.drugs.clone();
        key.sort_unstable();
        key.dedup();
        let before_count = out.len();
        push(
            out,
            tokens,
            "prior_line",
            name,
            value,
            "affirmed",
            "certain",
            None,
            regimen.first.min(cue),
            (regimen.end - 1).max(cue),
        );
        if let Some(fact) = out.get_mut(before_count) {
            fact.key = Some(key.join("+"));
        }
    }
}

/// The regimens in `start..end`: runs of drugs joined by glue words, each
/// with any bracketed list of drugs right after it.
fn regimens(lexicon: &Lexicon, tokens: &Tokens<'_>, start: usize, end: usize) -> Vec<Regimen> {
    let words = &lexicon.lines;
    let drug_at = |index: usize| {
        if index >= end {
            return None;
        }
        words.drugs.at(tokens, index)
    };
    let mut regimens = Vec::new();
    let mut index = start;
    while index < end {
        let Some((length, drug)) = drug_at(index) else {
            index += 1;
            continue;
        };
        let first = index;
        let mut drugs = vec![drug.clone()];
        let mut after = index + length;
        loop {
            if let Some(glue) = words.glue.len_at(tokens, after)
                && let Some((next, drug)) = drug_at(after + glue)
            {
                drugs.push(drug.clone());
                after += glue + next;
                continue;
            }
            // `TCHP (docetaxel, carboplatin, …)`, `pembrolizumab (Keytruda)`.
            if tokens.lower(after) == "(" && drug_at(after + 1).is_some() {
                let close = (after + 1..end.min(after + 16)).find(|&index| tokens.lower(index) == ")");
                if let Some(close) = close {
                    let mut inner = after + 1;
                    while inner < close {
                        match drug_at(inner) {
                            Some((next, drug)) => {
                                drugs.push(drug.clone());
                                inner += next;
                            }
                            None => inner += 1,
                        }
                    }
                    after = close + 1;
                    continue;
                }
            }
            break;
        }
        regimens.push(Regimen {
            first,
            end: after,
            drugs,
        });
        index = after;
    }
    regimens
}

/// The outcome in `from..to`: the first progression word, else the first
/// response word (a negated progression word, `no progression`, is a
/// response; a negated response word says nothing).
fn outcome(lexicon: &Lexicon, tokens: &Tokens<'_>, from: usize, to: usize) -> Option<(&'static str, usize)> {
    let words = &lexicon.lines;
    let negated = |index: usize| {
        words
            .negations
            .find(tokens, index.saturating_sub(3).max(from), index)
            .is_some()
    };
    let mut progression = None;
    let mut response = None;
    let mut index = from;
    while index < to {
        let Some((length, value)) = words.outcomes.at(tokens, index) else {
            index += 1;
            continue;
        };
        if abbreviation_of_something_else(lexicon, tokens, index, length) {
            index += length;
            continue;
        }
        match (value.as_str(), negated(index)) {
            ("progression", false) => {
                progression.get_or_insert(index);
            }
            ("progression", true) | ("response", false) => {
                response.get_or_insert(index);
            }
            _ => {}
        }
        index += length;
    }
    progression
        .map(|index| ("progression", index))
        .or(response.map(|index| ("response", index)))
}

/// `PD-L1`, `PR 40%`, `ER/PR+`: a capitalised outcome abbreviation that is
/// part of a marker name or carries a marker's status.
fn abbreviation_of_something_else(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    index: usize,
    length: usize,
) -> bool {
    if length != 1 || !tokens.raw(index).bytes().all(|byte| byte.is_ascii_uppercase()) {
        return false;
    }
    let next = index + 1;
    let glued = tokens.tokens.get(next).is_some_and(|token| !token.space_before);
    let next_word = tokens.lower(next);
    (glued && matches!(next_word, "-" | "+" | "/"))
        || next_word.starts_with(|character: char| character.is_ascii_digit())
        || lexicon.markers.statuses.starts(tokens, next)
        || (index > 0 && tokens.lower(index - 1) == "/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::tests::run;

    fn outcomes(text: &str) -> Vec<(String, String)> {
        run(text, prior_lines)
            .into_iter()
            .map(|(name, value, _)| (name, value))
            .collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn prior_line_outcomes() {
        assert_eq!(
            outcomes(
                "Received gemcitabine plus nab-paclitaxel, then disease progression. On letrozole + palbociclib, ongoing; Responded well to CAPOX"
            ),
            pairs(&[
                ("gemcitabine plus nab-paclitaxel", "progression"),
                ("letrozole + palbociclib", "ongoing"),
                ("CAPOX", "response")
            ])
        );
        assert!(outcomes("Would pembrolizumab be appropriate?").is_empty());
        assert_eq!(
            outcomes("nivolumab x 6 months -> PD"),
            pairs(&[("nivolumab", "progression")])
        );
    }

    #[test]
    fn shorthand_lines_each_take_their_own_outcome() {
        assert_eq!(
            outcomes("1L carbo/pem x 4 → PD; 2L docetaxel → SD x 5 mo, then PD"),
            pairs(&[("carbo/pem", "progression"), ("docetaxel", "progression")])
        );
        assert_eq!(
            outcomes("neoadjuvant FLOT → pCR, then adjuvant nivolumab started"),
            pairs(&[("FLOT", "response"), ("nivolumab", "ongoing")])
        );
        assert_eq!(
            outcomes("Keytruda since March with no progression on imaging"),
            pairs(&[("Keytruda", "response")])
        );
    }

    #[test]
    fn a_bracketed_list_or_brand_is_the_same_regimen() {
        assert_eq!(
            outcomes("6 cycles of TCH (docetaxel, carboplatin, trastuzumab) with partial response"),
            pairs(&[("TCH (docetaxel, carboplatin, trastuzumab)", "response")])
        );
        assert_eq!(
            outcomes("erlotinib (Tarceva) 2019-2021, progressed"),
            pairs(&[("erlotinib (Tarceva)", "progression")])
        );
    }

    #[test]
    fn plans_and_marker_abbreviations_are_not_lines() {
        assert!(outcomes("Plan: start FOLFIRI, response assessment after 4 cycles").is_empty());
        assert!(outcomes("letrozole adjuvant, ER 90% PR 20%").is_empty());
        assert!(outcomes("olaparib, PD-L1 negative").is_empty());
    }
}
