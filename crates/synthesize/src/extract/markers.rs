//! Biomarker statuses: `HER2+`, `ER-neg`, `ER/PR positive`, `positive for
//! ER and PR`, `no EGFR mutation`, `HER2 IHC 2+, FISH non-amplified`,
//! `PD-L1 TPS 60%`, `MSI-H`, `pMMR`, `triple-negative`, `BRAF pending`.

use super::Found;
use super::lexicon::Lexicon;
use super::text::Tokens;

#[derive(Debug, Clone)]
struct Mention<'l> {
    name: &'l str,
    fixed: Option<&'static str>,
    ambiguous: bool,
    first: usize,
    /// One past the last token.
    end: usize,
}

#[derive(Debug, Clone)]
struct Status {
    value: String,
    detail: Option<String>,
    /// Token range the status covers (inclusive first, exclusive end).
    first: usize,
    end: usize,
}

fn marker_at<'l>(lexicon: &'l Lexicon, tokens: &Tokens<'_>, index: usize) -> Option<Mention<'l>> {
    let (length, marker) = lexicon.markers.markers.at(tokens, index)?;
    Some(Mention {
        name: &marker.name,
        fixed: marker.fixed,
        ambiguous: marker.ambiguous,
        first: index,
        end: index + length,
    })
}

fn status_at<'l>(
    lexicon: &'l Lexicon,
    tokens: &Tokens<'_>,
    index: usize,
    marker: &str,
) -> Option<(&'l str, usize)> {
    let word = tokens.lower(index);
    if marker == "MSI" {
        match word {
            "h" => return Some(("positive", 1)),
            "l" | "low" => return Some(("negative", 1)),
            _ => {}
        }
    }
    if marker == "PD-L1" && word == "low" {
        return Some(("positive", 1));
    }
    if is_variant(tokens.raw(index)) {
        return Some(("positive", 1));
    }
    lexicon
        .markers
        .statuses
        .at(tokens, index)
        .map(|(length, value)| (value.as_str(), length))
}

/// `V600E`, `G12C`, `L858R`: a protein change names a mutation.
fn is_variant(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.len() >= 4
        && bytes.len() <= 7
        && bytes[0].is_ascii_uppercase()
        && bytes[bytes.len() - 1].is_ascii_uppercase()
        && bytes[1..bytes.len() - 1].iter().all(u8::is_ascii_digit)
}

/// A number written at token `index` (`45`, `1.5`): its value and the
/// token after it.
fn number_at(tokens: &Tokens<'_>, index: usize) -> Option<(f64, usize)> {
    let word = tokens.lower(index);
    if !word.bytes().all(|byte| byte.is_ascii_digit()) || word.is_empty() {
        return None;
    }
    let mut text = word.to_string();
    let mut end = index + 1;
    // `1.5` is three tokens.
    if tokens.lower(index + 1) == "."
        && !tokens
            .tokens
            .get(index + 1)
            .is_some_and(|token| token.space_before)
        && tokens.lower(index + 2).bytes().all(|byte| byte.is_ascii_digit())
        && !tokens.lower(index + 2).is_empty()
    {
        text.push('.');
        text.push_str(tokens.lower(index + 2));
        end = index + 3;
    }
    text.parse().ok().map(|value| (value, end))
}

/// Finds every biomarker fact in the clause `clause` (token range).
pub fn extract(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    let before = out.len();
    read(lexicon, tokens, clause, out);
    // A result under a condition (`olaparib if gBRCA+`) is none: only this
    // clause's facts are looked at, each found by its first token.
    let conditions = &lexicon.markers.conditions;
    let read_here = out.split_off(before);
    out.extend(read_here.into_iter().filter(|fact| {
        let Ok(first) = tokens
            .tokens
            .binary_search_by_key(&fact.start, |token| token.start)
        else {
            return true;
        };
        conditions
            .find(tokens, first.saturating_sub(4).max(clause.0), first)
            .is_none()
    }));
}

fn read(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), out: &mut Vec<Found>) {
    let (start, end) = clause;
    let mut mentions: Vec<Mention> = Vec::new();
    let mut index = start;
    while index < end {
        if let Some((length, shorthand)) = lexicon.markers.shorthand.at(tokens, index) {
            let last = index + length - 1;
            for name in &shorthand.markers {
                out.push(found(tokens, name, &shorthand.value, None, index, last));
            }
            index += length;
            continue;
        }
        if let Some(mention) = marker_at(lexicon, tokens, index) {
            index = mention.end;
            // `PD-L1 tumor proportion score`: one mention of one marker.
            match mentions.last_mut() {
                Some(last)
                    if last.name == mention.name && last.end == mention.first && last.fixed.is_none() =>
                {
                    last.end = mention.end;
                    last.fixed = mention.fixed;
                }
                _ => mentions.push(mention),
            }
        } else {
            index += 1;
        }
    }
    // Whether tokens `from..to` only join two markers (`/`, `,`, `and`).
    let joined = |from: usize, to: usize| {
        to > from
            && (from..to).all(|between| match tokens.lower(between) {
                // `ER/PR` joins; a spaced ` / ` separates list items.
                "/" => !tokens.tokens[between].space_before && !tokens.tokens[between + 1].space_before,
                "," | "and" | "&" | "or" => true,
                _ => false,
            })
    };
    // Whether mention `index` carries its own status right after it.
    let own_status = |index: usize| {
        let mention = &mentions[index];
        let limit = mentions.get(index + 1).map_or(end, |next| next.first);
        attached(lexicon, tokens, mention.end, end, mention.name).is_some()
            || forward(lexicon, tokens, mention.end, limit, end, mention.name).is_some()
    };
    // Mentions with no status of their own that share the next group's
    // (`ER, PR positive`).
    let mut pending: Vec<usize> = Vec::new();
    let mut position = 0;
    while position < mentions.len() {
        let mention = &mentions[position];
        if let Some(value) = mention.fixed {
            out.push(found(
                tokens,
                mention.name,
                value,
                None,
                mention.first,
                mention.end - 1,
            ));
            pending.clear();
            position += 1;
            continue;
        }
        // A group: `ER/PR`, `EGFR, ALK and ROS1` share one status; a
        // mention with a status of its own starts a new group.
        let mut group_end = position + 1;
        while group_end < mentions.len()
            && mentions[group_end].fixed.is_none()
            && attached(
                lexicon,
                tokens,
                mentions[group_end - 1].end,
                end,
                mentions[group_end - 1].name,
            )
            .is_none()
            && joined(mentions[group_end - 1].end, mentions[group_end].first)
            && (tokens.lower(mentions[group_end].first - 1) == "/" || !own_status(group_end))
        {
            group_end += 1;
        }
        let first = mentions[position].first;
        let last_end = mentions[group_end - 1].end;
        let name = mentions[position].name;
        let next_marker = mentions.get(group_end).map_or(end, |next| next.first);
        // A lone name that is also another word (`→ PR →`, `CT: PR
        // primary`) takes only a status right after it.
        // Right after another marker's status (`ER 90, PR 0`) it is a
        // marker panel.
        let in_panel = position > 0 && mentions[position - 1].end + 4 >= mentions[position].first;
        let lone_ambiguous =
            group_end == position + 1 && pending.is_empty() && mentions[position].ambiguous && !in_panel;
        let next_marker = if lone_ambiguous {
            next_marker.min(last_end + 3)
        } else {
            next_marker
        };
        let status = attached(lexicon, tokens, last_end, end, name)
            .or_else(|| negated_before(lexicon, tokens, first, start, last_end, next_marker))
            .or_else(|| status_for_before(lexicon, tokens, first, start, name))
            .or_else(|| forward(lexicon, tokens, last_end, next_marker, end, name))
            // A bare number after it is a date or a size, not a percentage
            // or an Allred score (`PR 6/8`).
            .filter(|status| {
                !lone_ambiguous
                    || status.detail.is_none()
                    || tokens.lower(status.end - 1) == "%"
                    || (tokens.lower(status.end) == "/" && tokens.lower(status.end + 1) == "8")
            });
        match status {
            Some(status) => {
                let span_first = status.first.min(first);
                let span_last = status.end.max(last_end) - 1;
                for index in pending.drain(..).chain(position..group_end) {
                    out.push(found(
                        tokens,
                        mentions[index].name,
                        &status.value,
                        status.detail.clone(),
                        span_first.min(mentions[index].first),
                        span_last,
                    ));
                }
            }
            None => {
                let chained = mentions
                    .get(group_end)
                    .is_some_and(|next| joined(last_end, next.first));
                if chained {
                    pending.extend(position..group_end);
                } else {
                    pending.clear();
                }
            }
        }
        position = group_end;
    }
}

fn found(
    tokens: &Tokens<'_>,
    name: &str,
    value: &str,
    detail: Option<String>,
    first: usize,
    last: usize,
) -> Found {
    let (start, end) = tokens.span(first, last);
    let (polarity, certainty) = match value {
        "negative" => ("negated", "certain"),
        "equivocal" | "unknown" => ("affirmed", "uncertain"),
        _ => ("affirmed", "certain"),
    };
    Found {
        kind: "biomarker",
        name: name.to_string(),
        value: value.to_string(),
        polarity,
        certainty,
        detail,
        start,
        end,
        derived: false,
        key: None,
    }
}

/// A status written onto the marker: `HER2+`, `ER-`, `ER-neg`, `MSI-H`,
/// `EGFR-mutant`.
fn attached(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    after: usize,
    clause_end: usize,
    marker: &str,
) -> Option<Status> {
    if after >= clause_end {
        return None;
    }
    let sign = tokens.lower(after);
    let token = tokens.tokens[after];
    match sign {
        "+" => Some(Status {
            value: "positive".into(),
            detail: None,
            first: after,
            end: after + 1,
        }),
        "-" if !token.space_before => {
            let next = after + 1;
            let glued = tokens
                .tokens
                .get(next)
                .is_some_and(|next| !next.space_before && next.word);
            if glued && next < clause_end {
                let (value, length) = status_at(lexicon, tokens, next, marker)?;
                Some(Status {
                    value: value.into(),
                    detail: None,
                    first: after,
                    end: next + length,
                })
            } else {
                Some(Status {
                    value: "negative".into(),
                    detail: None,
                    first: after,
                    end: after + 1,
                })
            }
        }
        _ => None,
    }
}

/// `no EGFR mutation`, `no actionable EGFR/ALK alterations`.
fn negated_before(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    first: usize,
    clause_start: usize,
    group_end: usize,
    limit: usize,
) -> Option<Status> {
    let mut index = first;
    let mut skipped = 0;
    while index > clause_start && skipped <= 3 {
        index -= 1;
        let word = tokens.lower(index);
        if word == "no" || word == "without" {
            // Take the noun after the marker into the span (`mutation`).
            let mut end = group_end;
            while end < limit && end < group_end + 2 && lexicon.markers.negated_nouns.starts(tokens, end) {
                end += 1;
            }
            return Some(Status {
                value: "negative".into(),
                detail: None,
                first: index,
                end,
            });
        }
        // `no ALK or ROS1 fusion`: the negation reaches past an `or` list.
        let listed = matches!(word, "or" | "nor" | "/") || lexicon.markers.markers.starts(tokens, index);
        if !lexicon.markers.negation_fillers.starts(tokens, index) && !listed {
            return None;
        }
        skipped += usize::from(!listed);
    }
    None
}

/// `positive for ER and PR`, `negative for HER2`.
fn status_for_before(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    first: usize,
    clause_start: usize,
    marker: &str,
) -> Option<Status> {
    if first < clause_start + 2 || tokens.lower(first - 1) != "for" {
        return None;
    }
    let status_end = first - 1;
    // Try one- and two-word statuses ending right before `for`.
    for length in [1usize, 2, 3] {
        if status_end < clause_start + length {
            break;
        }
        let status_first = status_end - length;
        if let Some((value, matched)) = status_at(lexicon, tokens, status_first, marker)
            && matched == length
        {
            let adverb = status_first > clause_start
                && matches!(
                    tokens.lower(status_first - 1),
                    "strongly" | "weakly" | "diffusely"
                );
            return Some(Status {
                value: value.into(),
                detail: None,
                first: if adverb { status_first - 1 } else { status_first },
                end: first,
            });
        }
    }
    None
}

/// The status after the marker: `HER2 3+`, `ER positive (90%)`, `EGFR exon
/// 19 deletion`, `PD-L1 high (TPS 80%)`, `HER2 IHC 2+, FISH non-amplified`.
fn forward(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    from: usize,
    limit: usize,
    clause_end: usize,
    marker: &str,
) -> Option<Status> {
    let stop = limit.min(clause_end).min(from + 9);
    let mut word_status: Option<(&str, usize, usize)> = None;
    let mut number: Option<(f64, bool, usize, usize, bool)> = None; // value, below, first, end, percent
    let mut cps = false;
    let mut ihc_score: Option<(u32, usize, usize)> = None;
    let mut saw_mutation = None;
    // A `no` or `not` before the status (`BRAF: no V600 mutation detected`).
    let mut negation = None;
    let mut index = from;
    while index < stop {
        let word = tokens.lower(index);
        if word == "cps" || tokens.matches(index, &["combined", "positive", "score"]) {
            cps = true;
        }
        if matches!(word, "mutation" | "mutations") {
            saw_mutation.get_or_insert(index);
        }
        let written = number_at(tokens, index);
        if let Some((value, end)) = written
            && let Some(&threshold) = lexicon.markers.counts.get(marker)
        {
            // `TMB 3 mut/Mb`, `TMB 14`: a count against its threshold.
            let value_name = if value >= threshold {
                "positive"
            } else {
                "negative"
            };
            return Some(Status {
                value: value_name.into(),
                detail: Some(format!("{value} mut/Mb")),
                first: index,
                end: end.min(clause_end),
            });
        }
        if let Some((value, _)) = written
            && matches!(marker, "PD-L1" | "ER" | "PR" | "HER2")
        {
            let below = index > 0
                && (tokens.lower(index - 1) == "<"
                    || (index > 1 && tokens.lower(index - 1) == "than" && tokens.lower(index - 2) == "less"));
            let mut end = index + 1;
            // A decimal (`1.5`) is read on; a full stop ending the
            // sentence (`CPS 15.`) is not part of the number.
            if tokens.lower(end) == "."
                && end + 1 < tokens.len()
                && tokens
                    .lower(end + 1)
                    .chars()
                    .all(|character| character.is_ascii_digit())
            {
                end += 2;
            }
            if marker == "HER2" && tokens.lower(end) == "+" && value <= 3.0 {
                ihc_score.get_or_insert((value as u32, index, end + 1));
                index = end + 1;
                if word_status.is_none() {
                    break;
                }
                continue;
            }
            let percent = tokens.lower(end) == "%";
            if percent {
                end += 1;
            }
            let first = if !below {
                index
            } else if tokens.lower(index - 1) == "<" {
                index - 1
            } else {
                index - 2
            };
            if number.is_none() && !(marker == "HER2" && !percent && value != 0.0) {
                number = Some((value, below, first, end, percent));
            }
            if word_status.is_some() || marker != "PD-L1" {
                break;
            }
            index = end;
            continue;
        }
        if matches!(word, "no" | "not") {
            negation.get_or_insert(index);
        }
        if let Some((value, length)) = status_at(lexicon, tokens, index, marker) {
            if word_status.is_none() {
                word_status = Some(restated(
                    lexicon,
                    tokens,
                    value,
                    index,
                    index + length,
                    stop,
                    negation,
                ));
            }
            if marker != "PD-L1" || number.is_some() {
                break;
            }
            index += length;
            continue;
        }
        index += 1;
    }
    if let Some((score, first, end)) = ihc_score {
        return Some(her2_ihc(
            lexicon,
            tokens,
            score,
            first,
            end,
            limit.min(clause_end),
        ));
    }
    if let Some((value, below, first, end, percent)) = number
        && matches!(marker, "PD-L1" | "ER" | "PR")
    {
        let shown = if below {
            format!("<{value}")
        } else {
            format!("{value}")
        };
        let detail = match (marker, cps || !percent) {
            ("PD-L1", true) => format!("CPS {shown}"),
            ("PD-L1", false) => format!("TPS {shown}%"),
            _ => format!("{shown}%"),
        };
        let positive = if below { value > 1.0 } else { value >= 1.0 };
        let value = if positive { "positive" } else { "negative" };
        let first = word_status.map_or(first, |(_, status_first, _)| status_first.min(first));
        let end = word_status.map_or(end, |(_, _, status_end)| status_end.max(end));
        return Some(Status {
            value: value.into(),
            detail: Some(detail),
            first,
            end,
        });
    }
    if let Some((value, first, end)) = word_status {
        let detail = if marker == "PD-L1" {
            let word = tokens.lower(first);
            matches!(word, "high" | "low").then(|| word.to_string())
        } else {
            is_variant(tokens.raw(first)).then(|| tokens.raw(first).to_string())
        };
        return Some(Status {
            value: value.into(),
            detail,
            first,
            end,
        });
    }
    if marker == "HER2"
        && let Some((_, _, first, end, _)) = number
    {
        // `HER2 0`.
        return Some(Status {
            value: "negative".into(),
            detail: Some("IHC 0".into()),
            first,
            end,
        });
    }
    saw_mutation.map(|index| Status {
        value: "positive".into(),
        detail: None,
        first: index,
        end: index + 1,
    })
}

/// The status a forward scan found at `first..end`, read on: a variant
/// or an alteration noun (`V600E`, `fusion`) with a status right after it
/// takes that status (`BRAF V600E not detected`, `NTRK fusion negative`: what
/// was tested for, then its result), and a positive one after a `no` or
/// `not` at most three words before it is negative (`no V600 mutation
/// detected`).
fn restated<'l>(
    lexicon: &'l Lexicon,
    tokens: &Tokens<'_>,
    value: &'l str,
    first: usize,
    end: usize,
    stop: usize,
    negation: Option<usize>,
) -> (&'l str, usize, usize) {
    let noun = end == first + 1
        && (is_variant(tokens.raw(first)) || lexicon.markers.negated_nouns.len_at(tokens, first) == Some(1));
    if value == "positive" && noun {
        let mut next = end;
        if next < stop && lexicon.markers.negated_nouns.len_at(tokens, next) == Some(1) {
            next += 1;
        }
        if next < stop
            && let Some((length, after)) = lexicon.markers.statuses.at(tokens, next)
        {
            return (after.as_str(), first, next + length);
        }
    }
    if value == "positive" && negation.is_some_and(|at| at < first && first - at <= 3) {
        return ("negative", first, end);
    }
    (value, first, end)
}

/// HER2 by IHC score, with an ISH result settling 2+.
fn her2_ihc(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    score: u32,
    first: usize,
    end: usize,
    limit: usize,
) -> Status {
    let detail = Some(format!("IHC {score}+"));
    let value = match score {
        3 => "positive",
        0 | 1 => "negative",
        _ => "equivocal",
    };
    if score == 2 {
        let stop = limit.min(end + 10);
        let mut index = end;
        while index < stop {
            if lexicon.markers.ish_words.starts(tokens, index) {
                let mut look = index + 1;
                while look < stop {
                    if let Some((value, length)) = status_at(lexicon, tokens, look, "HER2") {
                        let value = if value == "unknown" { "equivocal" } else { value };
                        return Status {
                            value: value.into(),
                            detail,
                            first,
                            end: look + length,
                        };
                    }
                    look += 1;
                }
            }
            index += 1;
        }
    }
    Status {
        value: value.into(),
        detail,
        first,
        end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(text: &str) -> Vec<(String, String)> {
        let tokens = Tokens::new(text);
        let mut out = Vec::new();
        let lexicon = Lexicon::builtin().unwrap();
        for clause in tokens.clauses() {
            extract(lexicon, &tokens, clause, &mut out);
        }
        for fact in &out {
            assert!(text.get(fact.start..fact.end).is_some());
        }
        out.into_iter().map(|fact| (fact.name, fact.value)).collect()
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect()
    }

    #[test]
    fn a_result_under_a_condition_is_none() {
        assert_eq!(statuses("Plan: adjuvant olaparib if gBRCA+."), pairs(&[]));
        assert_eq!(
            statuses("Niraparib is reasonable even if the tumour proves HRD-negative."),
            pairs(&[])
        );
        // A result before the condition stands.
        assert_eq!(
            statuses("gBRCA2 positive, so olaparib if she tolerates it."),
            pairs(&[("BRCA", "positive")])
        );
    }

    #[test]
    fn attached_and_listed_statuses() {
        assert_eq!(
            statuses("Receptors: ER+/PR-/HER2 3+."),
            pairs(&[("ER", "positive"), ("PR", "negative"), ("HER2", "positive")])
        );
        assert_eq!(statuses("She is ER-neg."), pairs(&[("ER", "negative")]));
        assert_eq!(
            statuses("ER and PR strongly positive"),
            pairs(&[("ER", "positive"), ("PR", "positive")])
        );
        assert_eq!(
            statuses("tumour was positive for ER, negative for HER2"),
            pairs(&[("ER", "positive"), ("HER2", "negative")])
        );
        assert_eq!(
            statuses("triple negative disease"),
            pairs(&[("ER", "negative"), ("PR", "negative"), ("HER2", "negative")])
        );
    }

    #[test]
    fn her2_ihc_and_ish() {
        assert_eq!(
            statuses("HER2 by IHC 2+; FISH pending"),
            pairs(&[("HER2", "equivocal")])
        );
        assert_eq!(
            statuses("HER2 IHC score 2+ and ISH ratio not amplified"),
            pairs(&[("HER2", "negative")])
        );
        assert_eq!(
            statuses("HER2 (2+) with SISH amplification"),
            pairs(&[("HER2", "positive")])
        );
        assert_eq!(statuses("HER2 1+"), pairs(&[("HER2", "negative")]));
        assert_eq!(
            statuses("HER2 status: equivocal"),
            pairs(&[("HER2", "equivocal")])
        );
    }

    #[test]
    fn drivers_and_negations() {
        assert_eq!(
            statuses("NGS found no EGFR mutation"),
            pairs(&[("EGFR", "negative")])
        );
        assert_eq!(
            statuses("no targetable EGFR/ALK alterations"),
            pairs(&[("EGFR", "negative"), ("ALK", "negative")])
        );
        assert_eq!(
            statuses("KRAS p.G12C was identified"),
            pairs(&[("KRAS", "positive")])
        );
        assert_eq!(statuses("BRAF wildtype"), pairs(&[("BRAF", "negative")]));
        assert_eq!(
            statuses("NGS – no EGFR mutation, no ALK or ROS1 fusion; KRAS G12C detected"),
            pairs(&[
                ("EGFR", "negative"),
                ("ALK", "negative"),
                ("ROS1", "negative"),
                ("KRAS", "positive")
            ])
        );
        assert_eq!(
            statuses("no EGFR mutation, ALK rearranged"),
            pairs(&[("EGFR", "negative"), ("ALK", "positive")])
        );
        assert_eq!(statuses("EML4-ALK fusion"), pairs(&[("ALK", "positive")]));
        assert_eq!(statuses("ROS1 testing failed"), pairs(&[("ROS1", "unknown")]));
    }

    /// What was tested for, then its result: a variant or an alteration noun
    /// takes the status written right after it; a `no` before it negates.
    #[test]
    fn a_tested_variant_takes_the_result_after_it() {
        assert_eq!(
            statuses("BRAF V600E not detected."),
            pairs(&[("BRAF", "negative")])
        );
        assert_eq!(
            statuses("NTRK fusion not detected"),
            pairs(&[("NTRK", "negative")])
        );
        assert_eq!(statuses("EGFR L858R pending"), pairs(&[("EGFR", "unknown")]));
        assert_eq!(
            statuses("BRAF: no V600 mutation detected (wild-type)."),
            pairs(&[("BRAF", "negative")])
        );
        assert_eq!(
            statuses("KRAS G12D; MSS"),
            pairs(&[("KRAS", "positive"), ("MSI", "negative")])
        );
        assert_eq!(
            statuses("ALK fusion, on alectinib"),
            pairs(&[("ALK", "positive")])
        );
    }

    #[test]
    fn pathogenic_variants_and_ras_wild_type() {
        assert_eq!(
            statuses("Germline testing showed a BRCA2 pathogenic variant c.7007G>A."),
            pairs(&[("BRCA", "positive")])
        );
        assert_eq!(
            statuses("BRCA1/2: no pathogenic variant in germline or tumour."),
            pairs(&[("BRCA", "negative")])
        );
        assert_eq!(
            statuses("RAS wt, MSS."),
            pairs(&[("KRAS", "negative"), ("NRAS", "negative"), ("MSI", "negative")])
        );
    }

    #[test]
    fn markers_of_head_and_neck_glioma_breast_gist_and_biliary_cancers() {
        assert_eq!(
            statuses("HPV-associated oropharyngeal SCC, p16 strongly positive"),
            pairs(&[("HPV", "positive"), ("HPV", "positive")])
        );
        assert_eq!(statuses("p16-negative"), pairs(&[("HPV", "negative")]));
        assert_eq!(
            statuses("glioblastoma, IDH-wildtype, MGMT promoter unmethylated"),
            pairs(&[("IDH", "negative"), ("MGMT", "negative")])
        );
        assert_eq!(
            statuses("astrocytoma IDH1 R132H mutant; MGMT methylated (35%)"),
            pairs(&[("IDH", "positive"), ("MGMT", "positive")])
        );
        assert_eq!(
            statuses("ctDNA: PIK3CA H1047R detected, ESR1 not detected"),
            pairs(&[("PIK3CA", "positive"), ("ESR1", "negative")])
        );
        assert_eq!(
            statuses("GIST, CD117 positive, KIT exon 11 deletion; PDGFRA wild type"),
            pairs(&[("KIT", "positive"), ("KIT", "positive"), ("PDGFRA", "negative")])
        );
        assert_eq!(
            statuses("FGFR2 fusion on NGS; no FGFR3 alteration"),
            pairs(&[("FGFR2", "positive"), ("FGFR3", "negative")])
        );
        assert_eq!(
            statuses("FGFR3 testing: no alteration"),
            pairs(&[("FGFR3", "negative")])
        );
        // `kit` in lower case is a word, not the gene.
        assert!(statuses("sample kit positive control").is_empty());
    }

    #[test]
    fn every_marker_of_the_lexicon_is_a_vocabulary_name() {
        let vocabulary = cfeval_schema::vocab::Vocabulary::builtin();
        let biomarker = vocabulary.kind("biomarker").expect("biomarker kind");
        let lexicon = Lexicon::builtin().unwrap();
        for name in lexicon.markers.markers.labels() {
            assert!(
                biomarker.allows_name(&name.name),
                "{} is not in the vocabulary",
                name.name
            );
        }
    }

    #[test]
    fn pr_alone_is_the_receptor_only_with_its_status_beside_it() {
        assert!(
            statuses("1L FOLFOX + nivo 07/2023 → PR → PD 03/2024 (ascites, new nodules), HER2 neg")
                .iter()
                .all(|(name, _)| name != "PR")
        );
        assert!(
            statuses("1st restaging CT: PR primary (5.1→3.2 cm), bone lesions positive on scan")
                .iter()
                .all(|(name, _)| name != "PR")
        );
        assert_eq!(statuses("PR: negative"), pairs(&[("PR", "negative")]));
        assert_eq!(statuses("PR 20%"), pairs(&[("PR", "positive")]));
        assert_eq!(
            statuses("ER 8/8, PR 6/8"),
            pairs(&[("ER", "positive"), ("PR", "positive")])
        );
        assert_eq!(
            statuses("ER 90, PR 0, HER2 1+"),
            pairs(&[("ER", "positive"), ("PR", "negative"), ("HER2", "negative")])
        );
        assert_eq!(
            statuses("ER and PR positive, HER2 negative"),
            pairs(&[("ER", "positive"), ("PR", "positive"), ("HER2", "negative")])
        );
        assert_eq!(statuses("PgR weakly positive (5%)"), pairs(&[("PR", "positive")]));
    }

    #[test]
    fn msi_forms() {
        assert_eq!(statuses("tumour is MSI-high"), pairs(&[("MSI", "positive")]));
        assert_eq!(statuses("MMR proteins retained"), pairs(&[("MSI", "negative")]));
        assert_eq!(statuses("microsatellite-stable"), pairs(&[("MSI", "negative")]));
        assert_eq!(statuses("dMMR by IHC"), pairs(&[("MSI", "positive")]));
    }

    /// TMB by its count against the threshold in `extract.yaml` (10
    /// mut/Mb), or by name.
    #[test]
    fn tmb_counts_and_names() {
        assert_eq!(statuses("TMB 3 mut/Mb"), pairs(&[("TMB", "negative")]));
        assert_eq!(statuses("TMB: 14.2 mut/Mb"), pairs(&[("TMB", "positive")]));
        assert_eq!(
            statuses("MSI-stable, TMB 1."),
            pairs(&[("MSI", "negative"), ("TMB", "negative")])
        );
        assert_eq!(statuses("TMB-high"), pairs(&[("TMB", "positive")]));
        assert_eq!(statuses("TMB pending"), pairs(&[("TMB", "unknown")]));
    }

    #[test]
    fn pdl1_levels() {
        let tokens = Tokens::new("PD-L1 (22C3) tumor cells 45%; PD-L1 CPS of 3; PD-L1 less than 1%");
        let mut out = Vec::new();
        let lexicon = Lexicon::builtin().unwrap();
        for clause in tokens.clauses() {
            extract(lexicon, &tokens, clause, &mut out);
        }
        let details: Vec<(&str, Option<&str>)> = out
            .iter()
            .map(|fact| (fact.value.as_str(), fact.detail.as_deref()))
            .collect();
        assert_eq!(
            details,
            vec![
                ("positive", Some("TPS 45%")),
                ("positive", Some("CPS 3")),
                ("negative", Some("TPS <1%"))
            ]
        );
    }

    #[test]
    fn a_number_that_ends_a_sentence_or_the_text_is_read_without_a_panic() {
        for text in [
            "PD-L1 CPS 15.",
            "Plan: chemoradiation. PD-L1 CPS 15.",
            "ER 90.",
            "PD-L1 TPS 1.5% and CPS 15.",
        ] {
            let facts = crate::extract::extract_facts(text, &crate::extract::sections::split(text));
            assert!(
                facts
                    .iter()
                    .any(|fact| fact.kind == "biomarker" && fact.value == "positive"),
                "{text}: {facts:?}"
            );
        }
    }
}
