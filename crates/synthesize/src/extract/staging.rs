//! Stage group, TNM and metastatic status, read clause by clause and then
//! settled for the whole note.
//!
//! Reading: `stage IIIA`, `FIGO IB2`, `T3 N3 M0 → IIIC` are written groups;
//! `cT2b N2 M0`, `pT2 pN3a`, `ypT1cN0` are TNMs (any c/p/yp/r/mr prefix, the
//! parts in one word or apart); `M1c` or `cM0` alone states metastasis or
//! its absence; `metastatic`, `liver mets`, `malignant pleural effusion`
//! state metastasis, `no distant metastases` its absence (a negation of one
//! organ, `no brain metastases`, or of new lesions, `no new metastases`,
//! says nothing of the whole; metastasis to lymph nodes is regional).
//!
//! Settling: a group the note writes as a correction of the record (`the
//! correct stage is …, stage III`, `revised to stage IIIC`; `revisions` in
//! `extract.yaml`) is the current group and decides the metastatic status,
//! whatever spread the record claimed; so does a group written as the stage
//! at a relapse (`stage IIA at relapse`; `restagings`), the first other
//! group then being the stage at diagnosis. Otherwise the note is metastatic when
//! it states distant spread anywhere
//! (a recurrence or progression with distant spread included) or an M1; else
//! not when it states so, or M0 (a stage IV written with M0 is regional
//! disease: head and neck IVA/IVB, prostate IVA), or a group below IV. The current stage
//! group is IV for a metastatic note (a lower group written at diagnosis
//! is kept as `group_at_diagnosis`), else the first written group, else the
//! group the AJCC tables (`cfeval_guidelines::staging`) give the first TNM
//! that has one. A fact computed rather than read (a group from a TNM, IV
//! from metastasis, `metastatic` from a group) has `origin = derived`.

use cfeval_guidelines::staging::{Basis, Staging, split_group};

use super::Found;
use super::clinical::push;
use super::lexicon::Lexicon;
use super::text::Tokens;

/// A written stage group.
#[derive(Debug, Clone)]
struct Group {
    main: &'static str,
    detail: Option<String>,
    first: usize,
    last: usize,
    /// Written as a correction of the record (`revised to stage III`).
    revised: bool,
    /// Written as the stage at a relapse (`stage IIA at relapse`,
    /// `restaged as IIIB`): the current stage, the first other group the
    /// one at diagnosis.
    restaged: bool,
}

/// A TNM: categories (`None` for x, is or 0 where a table has no row),
/// whether M was written, and its tokens.
#[derive(Debug, Clone)]
struct Tnm {
    basis: Basis,
    /// Staged after neoadjuvant therapy (`ypT1 ypN0`).
    post_therapy: bool,
    /// The T sub-category (`a` of `T2a`).
    t_sub: Option<char>,
    t: Option<u8>,
    n: Option<u8>,
    /// `N+`: some node category above N0.
    n_positive: bool,
    m: Option<u8>,
    first: usize,
    last: usize,
}

/// A statement of metastasis (`true`) or its absence.
#[derive(Debug, Clone, Copy)]
struct Spread {
    value: bool,
    first: usize,
    last: usize,
}

/// What a note says of its stage, gathered clause by clause.
#[derive(Debug, Default)]
pub struct StageNotes {
    groups: Vec<Group>,
    tnms: Vec<Tnm>,
    spreads: Vec<Spread>,
    /// Standalone `M1`/`M0` tokens.
    m_tokens: Vec<Spread>,
}

/// Reads one clause's stage groups, TNMs and metastasis statements.
pub fn read_clause(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), notes: &mut StageNotes) {
    let tnm_count = notes.tnms.len();
    read_tnms(lexicon, tokens, clause, notes);
    let clause_has_tnm = notes.tnms.len() > tnm_count;
    read_groups(lexicon, tokens, clause, clause_has_tnm, notes);
    read_spread(lexicon, tokens, clause, notes);
}

fn roman_group(word: &str) -> Option<(&'static str, Option<String>)> {
    // FIGO sub-stages carry a digit (`IIIC1`, `IB2`): the letter decides.
    let word = word.trim_end_matches(|character: char| character.is_ascii_digit() && word.len() > 2);
    let (base, letter) = match word.as_bytes().last() {
        Some(last @ (b'a' | b'b' | b'c' | b'd')) if word.len() > 1 => {
            (&word[..word.len() - 1], Some(last.to_ascii_uppercase() as char))
        }
        _ => (word, None),
    };
    let group = match base {
        "0" => "0",
        "i" | "1" => "I",
        "ii" | "2" => "II",
        "iii" | "3" => "III",
        "iv" | "4" => "IV",
        _ => return None,
    };
    if group == "0" && letter.is_some() {
        return None;
    }
    Some((group, letter.map(|letter| format!("{group}{letter}"))))
}

/// `stage IIIA`, `Stage 3A`, `AJCC stage: IIB`, `FIGO IIIC1`, and a group
/// after an arrow or `=` in a clause that holds a TNM (`T3 N3 M0 → IIIC`).
fn read_groups(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    clause: (usize, usize),
    clause_has_tnm: bool,
    notes: &mut StageNotes,
) {
    let words = &lexicon.staging;
    let mut index = clause.0;
    while index < clause.1 {
        let lead = words.words.len_at(tokens, index).or_else(|| {
            clause_has_tnm
                .then(|| words.arrows.len_at(tokens, index))
                .flatten()
        });
        let Some(length) = lead else {
            index += 1;
            continue;
        };
        let mut next = index + length;
        while next < clause.1
            && let Some(filler) = words.fillers.len_at(tokens, next)
        {
            next += filler;
        }
        if next < clause.1
            && let Some((main, detail)) = roman_group(tokens.lower(next))
            // A bare `1`-`4` after `stage` is a group; after an arrow only a
            // Roman numeral is.
            && (words.words.starts(tokens, index) || tokens.raw(next).starts_with(['I', 'V']))
        {
            let revised = words
                .revisions
                .find(tokens, index.saturating_sub(8).max(clause.0), index)
                .is_some();
            let restaged = words
                .restagings
                .find(tokens, index.saturating_sub(4).max(clause.0), index)
                .is_some()
                || words.restagings.starts(tokens, next + 1);
            notes.groups.push(Group {
                main,
                detail,
                first: index,
                last: next,
                revised,
                restaged,
            });
            index = next + 1;
            continue;
        }
        index += length;
    }
}

/// A TNM category at the start of `raw` with `letter` (`T`, `N`, `M`), after
/// an optional prefix: the prefix, the category (`None` for x, is, or a
/// number the tables do not have) and the bytes read.
fn category<'r>(raw: &'r str, letter: u8, prefixes: &[String]) -> Option<(&'r str, Option<u8>, usize)> {
    let bytes = raw.as_bytes();
    let prefix_length = prefixes
        .iter()
        .map(String::as_str)
        .chain([""])
        .find(|prefix| raw.starts_with(prefix) && bytes.get(prefix.len()) == Some(&letter))?
        .len();
    let mut at = prefix_length + 1;
    let value = match bytes.get(at) {
        Some(digit @ b'0'..=b'4') => {
            at += 1;
            Some(digit - b'0')
        }
        Some(b'x' | b'X') => {
            at += 1;
            None
        }
        Some(b'i') if letter == b'T' && raw[at..].starts_with("is") => {
            at += 2;
            None
        }
        _ => return None,
    };
    // Sub-categories (`T2b`, `N2a`, `M1c`, `N1mi`, `T1c1`).
    while let Some(byte) = bytes.get(at) {
        if matches!(byte, b'a'..=b'd') || (byte.is_ascii_digit() && at > prefix_length + 2) {
            at += 1;
        } else if raw[at..].starts_with("mi") {
            at += 2;
        } else {
            break;
        }
    }
    Some((&raw[..prefix_length], value, at))
}

fn read_tnms(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), notes: &mut StageNotes) {
    let prefixes = &lexicon.staging.tnm_prefixes;
    let whole = |index: usize, letter: u8| {
        let raw = tokens.raw(index);
        category(raw, letter, prefixes).filter(|(_, _, length)| *length == raw.len())
    };
    // `N+` (`cT3 N+ M0`): the category letter, then a plus.
    let node_positive = |index: usize| {
        let raw = tokens.raw(index);
        raw.ends_with('N')
            && prefixes
                .iter()
                .map(String::as_str)
                .chain([""])
                .any(|prefix| raw.len() == prefix.len() + 1 && raw.starts_with(prefix))
            && index + 1 < clause.1
            && tokens.raw(index + 1) == "+"
            && !tokens.tokens[index + 1].space_before
    };
    let mut index = clause.0;
    while index < clause.1 {
        let raw = tokens.raw(index);
        let Some((prefix, t, length)) = category(raw, b'T', prefixes) else {
            // `M1c` alone states metastasis — not as a question (`to r/o
            // M1`, `staging CT to exclude M1`).
            let uncertain = lexicon
                .uncertain_cues
                .find(tokens, index.saturating_sub(4).max(clause.0), index)
                .is_some();
            if let Some((_, m, _)) = whole(index, b'M')
                && let Some(m) = m.filter(|m| *m <= 1)
                && !uncertain
            {
                notes.m_tokens.push(Spread {
                    value: m == 1,
                    first: index,
                    last: index,
                });
            }
            index += 1;
            continue;
        };
        let basis = Basis::from_prefix(prefix);
        // `T2a`: the letter right after the number.
        let t_sub = raw[prefix.len()..length]
            .chars()
            .nth(2)
            .filter(|letter| matches!(letter, 'a'..='d'));
        let rest = &raw[length..];
        let (n, n_positive, m, last) = if rest.is_empty() {
            // The parts apart: `cT2b N2 M0`, `pT2 (2.6 cm) pN3a (11/18) M0`.
            let window = clause.1.min(index + 12);
            let Some(n_index) =
                (index + 1..window).find(|&next| whole(next, b'N').is_some() || node_positive(next))
            else {
                index += 1;
                continue;
            };
            if (index + 1..n_index).any(|between| category(tokens.raw(between), b'T', prefixes).is_some()) {
                index += 1;
                continue;
            }
            let n_positive = node_positive(n_index);
            let n = whole(n_index, b'N').and_then(|(_, n, _)| n);
            let n_index = n_index + usize::from(n_positive);
            let m_window = clause.1.min(n_index + 8);
            let m_index = (n_index + 1..m_window).find(|&next| whole(next, b'M').is_some());
            match m_index {
                Some(m_index) => (
                    n,
                    n_positive,
                    whole(m_index, b'M').and_then(|(_, m, _)| m),
                    m_index,
                ),
                None => (n, n_positive, None, n_index),
            }
        } else {
            // One word: `T2N1M0`, `pT3pN2aM0`, `ypT1bN0`.
            let Some((_, n, n_length)) = category(rest, b'N', prefixes) else {
                index += 1;
                continue;
            };
            let rest = &rest[n_length..];
            if rest.is_empty() {
                (n, false, None, index)
            } else {
                match category(rest, b'M', prefixes) {
                    Some((_, m, m_length)) if m_length == rest.len() => (n, false, m, index),
                    _ => {
                        index += 1;
                        continue;
                    }
                }
            }
        };
        let m_written = last != index || raw.contains('M');
        notes.tnms.push(Tnm {
            basis,
            post_therapy: prefix.starts_with('y'),
            t_sub,
            // ypT0: no tumour left after neoadjuvant therapy.
            t: t.filter(|t| *t >= 1 || basis == Basis::PostTherapy),
            n,
            n_positive,
            m: if m_written { m } else { None },
            first: index,
            last,
        });
        if let Some(m) = m.filter(|m| m_written && *m <= 1) {
            notes.m_tokens.push(Spread {
                value: m == 1,
                first: index,
                last,
            });
        }
        index = last + 1;
    }
}

/// Statements of metastasis or its absence in one clause.
fn read_spread(lexicon: &Lexicon, tokens: &Tokens<'_>, clause: (usize, usize), notes: &mut StageNotes) {
    let words = &lexicon.metastatic;
    let (start, end) = clause;
    let negation_before = |index: usize| {
        words
            .negations
            .find(tokens, index.saturating_sub(5).max(start), index)
    };
    let uncertain = |index: usize| {
        lexicon
            .uncertain_cues
            .find(tokens, index.saturating_sub(4).max(start), index)
            .is_some()
    };
    let near = |set: &super::lexicon::Words, index: usize| {
        set.find(tokens, index.saturating_sub(3).max(start), (index + 8).min(end))
            .is_some()
    };
    // A clause labelled with a regional site (`Axillary FNA: … metastatic
    // carcinoma`) speaks of regional spread.
    let label_regional = (start..(start + 12).min(end))
        .find(|&index| tokens.lower(index) == ":")
        .is_some_and(|colon| words.regional.find(tokens, start, colon).is_some());
    let mut index = start;
    while index < end {
        if let Some(site) = site_after_recurrence(words, tokens, (index, end))
            && negation_before(index).is_none()
            && !uncertain(index)
        {
            notes.spreads.push(Spread {
                value: true,
                first: index,
                last: site,
            });
        }
        if let Some(length) = words.negative_phrases.len_at(tokens, index) {
            notes.spreads.push(Spread {
                value: false,
                first: index,
                last: index + length - 1,
            });
            index += length;
            continue;
        }
        if let Some(length) = words.phrases.len_at(tokens, index) {
            if negation_before(index).is_none() && !uncertain(index) {
                notes.spreads.push(Spread {
                    value: true,
                    first: index,
                    last: index + length - 1,
                });
            }
            index += length;
            continue;
        }
        if let Some(length) = words.sites.len_at(tokens, index) {
            let after = index + length;
            // `peritoneal recurrence`, `liver relapse`: a distant site
            // before a recurrence word is spread.
            if after < end
                && tokens.lower(after) != "new"
                && let Some(recurrence) = words.recurrence.len_at(tokens, after)
                && !words.recurrence_qualifiers.starts(tokens, after + recurrence)
                && !words.regional.starts(tokens, index)
            {
                if negation_before(index).is_none() && !uncertain(index) {
                    notes.spreads.push(Spread {
                        value: true,
                        first: index,
                        last: after + recurrence - 1,
                    });
                }
                index = after + recurrence;
                continue;
            }
            let lesion = (after..(after + 2).min(end)).find(|&next| words.lesion_words.starts(tokens, next));
            if let Some(lesion) = lesion {
                if negation_before(index).is_none() && !uncertain(index) {
                    notes.spreads.push(Spread {
                        value: true,
                        first: index,
                        last: lesion,
                    });
                }
                index = lesion + 1;
                continue;
            }
        }
        // `new lesions in the liver`: a lesion word, a link and a site.
        if let Some(length) = words.lesion_words.len_at(tokens, index)
            && let Some(link) = words.lesion_site_links.len_at(tokens, index + length)
            && let Some(site) = words.sites.len_at(tokens, index + length + link)
            && index + length + link + site <= end
        {
            if negation_before(index).is_none() && !uncertain(index) {
                notes.spreads.push(Spread {
                    value: true,
                    first: index,
                    last: index + length + link + site - 1,
                });
            }
            index += length + link + site;
            continue;
        }
        let word = tokens.lower(index);
        let is_mention = words.stems.iter().any(|stem| word.starts_with(stem.as_str()))
            || words.words.starts(tokens, index);
        if !is_mention {
            index += 1;
            continue;
        }
        match negation_before(index) {
            Some(negation) => {
                let organ = index > start && words.organs.starts(tokens, index - 1);
                let partial = words.partial.find(tokens, negation + 1, index).is_some();
                if !organ && !partial {
                    let last = if index + 1 < end && tokens.lower(index + 1) == "disease" {
                        index + 1
                    } else {
                        index
                    };
                    notes.spreads.push(Spread {
                        value: false,
                        first: negation,
                        last,
                    });
                }
            }
            None => {
                let regional = (label_regional || near(&words.regional, index))
                    && !near(&words.distant, index)
                    && !near(&words.sites, index);
                if !regional && !uncertain(index) {
                    notes.spreads.push(Spread {
                        value: true,
                        first: index,
                        last: index,
                    });
                }
            }
        }
        index += 1;
    }
}

/// The distant site a recurrence word at `at` names after it, within ten
/// words (right after `new`) and before `end`, with no negation and no
/// other recurrence word between: `relapse: liver x4 + lung`. A site
/// followed by a regional word (`lung nodes`) is passed over; a qualifier
/// right after the word (`relapse-free`, `Recurrence Score`) makes it none.
/// For a cancer that stays in its organ (`local_cancers`: a glioma) and a
/// note that states no spread: not metastatic, derived, on the cancer's
/// own mention.
fn local_cancer(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    cancer: Option<&str>,
    out: &[Found],
) -> Option<(bool, bool, (usize, usize))> {
    let cancer = cancer?;
    if !lexicon
        .metastatic
        .local_cancers
        .iter()
        .any(|local| local == cancer)
    {
        return None;
    }
    let fact = out.iter().find(|fact| fact.kind == "cancer_type")?;
    let first = tokens.tokens.iter().position(|token| token.start >= fact.start)?;
    let last = tokens
        .tokens
        .iter()
        .rposition(|token| token.end <= fact.end)?
        .max(first);
    Some((false, true, (first, last)))
}

fn site_after_recurrence(
    words: &super::lexicon::MetastaticWords,
    tokens: &Tokens<'_>,
    (at, end): (usize, usize),
) -> Option<usize> {
    let length = words.recurrence.len_at(tokens, at)?;
    let after = at + length;
    let qualifier = if tokens.lower(after) == "-" {
        after + 1
    } else {
        after
    };
    if words.recurrence_qualifiers.starts(tokens, qualifier) {
        return None;
    }
    let reach = if tokens.lower(at) == "new" { 2 } else { 10 };
    (after..(after + reach).min(end))
        .take_while(|&index| {
            !words.negations.starts(tokens, index) && !words.recurrence.starts(tokens, index)
        })
        .find(|&index| words.sites.starts(tokens, index) && !words.regional.starts(tokens, index + 1))
}

/// A stage group the tables give a TNM: the main group when every group
/// its categories reach shares it, with the sub-stage when there is one.
fn table_group(staging: &Staging, cancer: &str, tnm: &Tnm, m: u8) -> Option<(String, Option<String>)> {
    let table = staging.table(cancer)?;
    let t = tnm.t?;
    let groups = if tnm.n_positive {
        let mut groups: Vec<&str> = Vec::new();
        for group in (1..=3).flat_map(|n| table.groups_of(tnm.basis, t, tnm.t_sub, n, m)) {
            if !groups.contains(&group) {
                groups.push(group);
            }
        }
        groups
    } else {
        table.groups_of(tnm.basis, t, tnm.t_sub, tnm.n?, m)
    };
    let main = split_group(groups.first()?).0;
    if groups.iter().any(|group| split_group(group).0 != main) {
        return None;
    }
    let detail = (groups.len() == 1 && groups[0] != main).then(|| groups[0].to_string());
    Some((main.to_string(), detail))
}

/// The staging table a note's cancer is read with: the cancer's own, or
/// the one a marker chooses (`marker_tables`: p16-positive oropharynx).
pub fn table_for<'a>(lexicon: &'a Lexicon, cancer: Option<&'a str>, found: &[Found]) -> Option<&'a str> {
    let cancer = cancer?;
    let chosen = lexicon.staging.marker_tables.iter().find(|choice| {
        choice.cancer == cancer
            && found
                .iter()
                .find(|fact| fact.kind == "biomarker" && fact.name == choice.marker)
                .is_some_and(|fact| fact.value == choice.value)
    });
    Some(chosen.map_or(cancer, |choice| choice.table.as_str()))
}

/// Settles the note's metastatic status and stage group and writes their
/// facts (and the first TNM's); `table` names the staging table
/// ([`table_for`]).
pub fn resolve(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    cancer: Option<&str>,
    table: Option<&str>,
    notes: &StageNotes,
    out: &mut Vec<Found>,
) {
    let staging = Staging::builtin().ok();
    let metastatic_group = lexicon.staging.metastatic_group.as_str();
    let m0_written = notes.tnms.iter().any(|tnm| tnm.m == Some(0));
    let written_iv = notes.groups.iter().find(|group| group.main == metastatic_group);
    // Spread that is regional for this cancer (ovarian peritoneal disease)
    // states no metastasis.
    let regional = cancer.and_then(|cancer| lexicon.metastatic.not_distant_for.get(cancer));
    let affirmed = notes.spreads.iter().find(|spread| {
        spread.value
            && !regional
                .is_some_and(|words| words.starts(tokens, spread.first) || words.starts(tokens, spread.last))
    });
    let m1 = notes.m_tokens.iter().find(|spread| spread.value);
    let negated = notes.spreads.iter().find(|spread| !spread.value);
    let m0 = notes.m_tokens.iter().find(|spread| !spread.value);
    let below_iv = notes.groups.iter().find(|group| group.main != metastatic_group);
    // A group from a TNM: the pre-treatment one first (`cT3 N0 M0` over a
    // later `ypT1c ypN0`: staging after neoadjuvant therapy does not
    // restage), a TNM after therapy only when no other gives a group.
    let derived_group = || {
        let staging = staging?;
        let table = table?;
        notes
            .tnms
            .iter()
            .filter(|tnm| !tnm.post_therapy)
            .chain(notes.tnms.iter().filter(|tnm| tnm.post_therapy))
            .find_map(|tnm| {
                table_group(staging, table, tnm, tnm.m.unwrap_or(0)).map(|(main, detail)| (main, detail, tnm))
            })
    };
    // A corrected stage (else a stage at relapse) decides the stage and the
    // metastatic status: the spread the record claimed is what the
    // correction overrules.
    let stated = notes
        .groups
        .iter()
        .rev()
        .find(|group| group.revised)
        .or_else(|| notes.groups.iter().rev().find(|group| group.restaged));
    // (value, polarity, derived, span)
    let metastatic: Option<(bool, bool, (usize, usize))> = if let Some(group) = stated {
        Some((group.main == metastatic_group, true, (group.first, group.last)))
    } else if let Some(spread) = affirmed.or(m1) {
        Some((true, false, (spread.first, spread.last)))
    } else if let Some(group) = written_iv.filter(|_| !m0_written && m0.is_none()) {
        Some((true, true, (group.first, group.last)))
    } else if let Some(spread) = negated.or(m0) {
        Some((false, false, (spread.first, spread.last)))
    } else if let Some(group) = below_iv {
        Some((false, true, (group.first, group.last)))
    } else {
        derived_group()
            .filter(|(main, _, _)| main != metastatic_group)
            .map(|(_, _, tnm)| (false, true, (tnm.first, tnm.last)))
            .or_else(|| local_cancer(lexicon, tokens, cancer, out))
    };
    if let Some((value, derived, (first, last))) = metastatic {
        let (text, polarity) = if value {
            ("true", "affirmed")
        } else {
            ("false", "negated")
        };
        push(
            out,
            tokens,
            "metastatic",
            "metastatic",
            text,
            polarity,
            "certain",
            None,
            first,
            last,
        );
        mark_derived(out, derived);
    }
    let is_metastatic = metastatic.is_some_and(|(value, _, _)| value);
    let written = |group: &Group, name: &str, out: &mut Vec<Found>| {
        push(
            out,
            tokens,
            "stage",
            name,
            group.main,
            "affirmed",
            "certain",
            group.detail.clone(),
            group.first,
            group.last,
        );
    };
    if let Some(group) = stated {
        written(group, "group", out);
        if group.restaged
            && !group.revised
            && let Some(first) = notes.groups.iter().find(|first| first.main != group.main)
        {
            written(first, "group_at_diagnosis", out);
        }
    } else if is_metastatic && written_iv.is_none() {
        let (_, _, (first, last)) = metastatic.unwrap_or((true, true, (0, 0)));
        push(
            out,
            tokens,
            "stage",
            "group",
            metastatic_group,
            "affirmed",
            "certain",
            None,
            first,
            last,
        );
        mark_derived(out, true);
        if let Some(group) = below_iv {
            written(group, "group_at_diagnosis", out);
        }
    } else if let Some(group) = written_iv.filter(|_| is_metastatic).or(notes.groups.first()) {
        // A metastatic note's current group is the IV it writes, wherever
        // it stands (`stage IIC` at diagnosis, `stage IV` at relapse).
        written(group, "group", out);
        if is_metastatic && let Some(group) = below_iv {
            written(group, "group_at_diagnosis", out);
        }
    } else if let Some((main, detail, tnm)) = derived_group() {
        push(
            out, tokens, "stage", "group", &main, "affirmed", "certain", detail, tnm.first, tnm.last,
        );
        mark_derived(out, true);
    } else if !is_metastatic
        && let Some(group) = cancer.and_then(|cancer| lexicon.staging.locally_advanced_groups.get(cancer))
        && let Some(first) = lexicon.staging.locally_advanced.find(tokens, 0, tokens.len())
    {
        let length = lexicon
            .staging
            .locally_advanced
            .len_at(tokens, first)
            .unwrap_or(1);
        push(
            out,
            tokens,
            "stage",
            "group",
            group,
            "affirmed",
            "certain",
            None,
            first,
            first + length - 1,
        );
        mark_derived(out, true);
    }
    if let Some(tnm) = notes.tnms.first() {
        let (start, end) = tokens.span(tnm.first, tnm.last);
        let value = tokens.text[start..end].to_string();
        push(
            out, tokens, "stage", "tnm", &value, "affirmed", "certain", None, tnm.first, tnm.last,
        );
    }
}

fn mark_derived(out: &mut [Found], derived: bool) {
    if let Some(fact) = out.last_mut() {
        fact.derived = derived;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::extract::Found;

    /// The stage facts of a note whose cancer is `cancer`: (name, value,
    /// derived, span text).
    fn stage(text: &str, cancer: Option<&str>) -> Vec<(String, String, bool, String)> {
        let lexicon = Lexicon::builtin().unwrap();
        let tokens = Tokens::new(text);
        let mut notes = StageNotes::default();
        for clause in tokens.clauses() {
            read_clause(lexicon, &tokens, clause, &mut notes);
        }
        let mut out: Vec<Found> = Vec::new();
        crate::extract::markers::extract(lexicon, &tokens, (0, tokens.len()), &mut out);
        let table = table_for(lexicon, cancer, &out);
        out.clear();
        // The cancer's own mention, as the extractor would have found it: the
        // first token.
        if let (Some(cancer), Some(token)) = (cancer, tokens.tokens.first()) {
            out.push(Found {
                kind: "cancer_type",
                name: "primary".into(),
                value: cancer.into(),
                polarity: "affirmed",
                certainty: "certain",
                detail: None,
                start: token.start,
                end: token.end,
                derived: false,
                key: None,
            });
        }
        resolve(lexicon, &tokens, cancer, table, &notes, &mut out);
        out.retain(|fact| fact.kind != "cancer_type");
        out.into_iter()
            .map(|fact| {
                let span = text[fact.start..fact.end].to_string();
                (fact.name, fact.value, fact.derived, span)
            })
            .collect()
    }

    fn value(facts: &[(String, String, bool, String)], name: &str) -> Option<String> {
        facts
            .iter()
            .find(|fact| fact.0 == name)
            .map(|fact| fact.1.clone())
    }

    #[test]
    fn written_groups() {
        assert_eq!(
            value(&stage("AJCC stage: 3B disease", None), "group").as_deref(),
            Some("III")
        );
        assert_eq!(
            value(&stage("clinical Stage iv", None), "group").as_deref(),
            Some("IV")
        );
        assert_eq!(
            value(&stage("FIGO stage IIIC1 after staging surgery", None), "group").as_deref(),
            Some("III")
        );
        assert_eq!(
            value(&stage("Stage 0 (DCIS only)", None), "group").as_deref(),
            Some("0")
        );
        assert_eq!(
            value(&stage("cT4 N1 M0 → IIIB by imaging", None), "group").as_deref(),
            Some("III")
        );
    }

    #[test]
    fn a_group_from_the_tnm_is_derived_from_the_tables() {
        let facts = stage("Resection: pT3 pN1a, margins clear.", Some("colorectal"));
        assert_eq!(value(&facts, "group").as_deref(), Some("III"));
        assert!(
            facts
                .iter()
                .any(|fact| fact.0 == "group" && fact.2 && fact.3 == "pT3 pN1a")
        );
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        assert_eq!(value(&facts, "tnm").as_deref(), Some("pT3 pN1a"));
        // One word, with prefixes on every part.
        assert_eq!(
            value(&stage("staged ypT2N1aM0", Some("breast")), "group").as_deref(),
            Some("II")
        );
        // A combination whose sub-stages span two groups gives none; its
        // sub-category settles it.
        assert_eq!(value(&stage("cT2 N0 M0", Some("nsclc")), "group"), None);
        assert_eq!(
            value(&stage("cT2a N0 M0", Some("nsclc")), "group").as_deref(),
            Some("I")
        );
        assert_eq!(
            value(&stage("pT2b pN0", Some("nsclc")), "group").as_deref(),
            Some("II")
        );
        assert_eq!(
            value(
                &stage("Impression: T4b N1 M0 (airway invasion)", Some("esophageal")),
                "group"
            )
            .as_deref(),
            Some("IV")
        );
        // No table: no group, but M0 still says not metastatic.
        let facts = stage("cT2 N1 M0", Some("glioma"));
        assert_eq!(
            (value(&facts, "group"), value(&facts, "metastatic").as_deref()),
            (None, Some("false"))
        );
    }

    #[test]
    fn every_tnm_staged_cancer_has_its_table() {
        for (text, cancer, group) in [
            ("Impression: T3 N0 M0 glottic tumour", "head_and_neck", "III"),
            ("oral tongue pT2 pN1", "head_and_neck", "III"),
            ("clinical T3b N0 M0, Gleason 4+4", "prostate", "III"),
            ("cT2 N0 M0 on CT urogram", "bladder", "II"),
            ("clinical T1a N0 M0 renal mass", "renal", "I"),
            ("MRI: T2 N0 M0", "cervical", "II"),
            ("pT1 pN2 after hysterectomy", "endometrial", "III"),
            ("EUS: cT3 N1 M0", "esophageal", "III"),
            ("pT2 N0 after resection", "cholangiocarcinoma", "II"),
            ("T3 N0 M0 on MRI", "hepatocellular", "III"),
            ("cT2a N2 M0", "sclc", "III"),
        ] {
            let facts = stage(text, Some(cancer));
            assert_eq!(value(&facts, "group").as_deref(), Some(group), "{cancer}: {text}");
        }
        // Prostate T1-2 needs PSA and grade: no group from T and N alone.
        assert_eq!(value(&stage("pT2 pN0", Some("prostate")), "group"), None);
    }

    #[test]
    fn p16_positive_oropharynx_has_its_own_table() {
        // cT2 N2: stage II with HPV, IVA without.
        let facts = stage("p16-positive tonsil SCC, cT2 N2 M0", Some("head_and_neck"));
        assert_eq!(value(&facts, "group").as_deref(), Some("II"));
        let facts = stage("p16-negative tonsil SCC, cT2 N2 M0", Some("head_and_neck"));
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
    }

    #[test]
    fn node_positive_and_post_therapy_stages() {
        // `N+`: every node category above N0 gives III.
        assert_eq!(
            value(&stage("Stage clinical: cT3 N+ M0.", Some("gastric")), "group").as_deref(),
            Some("III")
        );
        // ypT0 ypN0 of an oesophageal cancer is stage I (its own table),
        // when no pre-treatment staging is written.
        let facts = stage("Oesophagectomy after CROSS: ypT0 ypN0.", Some("esophageal"));
        assert_eq!(value(&facts, "group").as_deref(), Some("I"));
        // Staging after neoadjuvant therapy does not restage: the
        // pre-treatment group, written or from its TNM, stays the stage.
        let facts = stage(
            "pre-treatment cT3 N1 M0 on EUS. Oesophagectomy after CROSS: ypT0 ypN0.",
            Some("esophageal"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("III"));
        let facts = stage(
            "Initial cT3 N0 M0, stage IIA, treated with FOLFIRINOX. Whipple: ypT1c ypN0, R0.",
            Some("pancreatic"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("II"));
        assert_eq!(value(&facts, "group_at_diagnosis"), None);
    }

    /// Metastases named as a condition (`aborted if unexpected mets`, `CT to
    /// rule out mets`) or as a suspicion are not stated: the written stage
    /// holds.
    #[test]
    fn metastases_named_as_a_condition_are_not_stated() {
        for text in [
            "cT2 N0 M0, stage IB. Consent incl. possible aborted procedure if unexpected mets.",
            "cT2 N0 M0, stage IB. CT chest to rule out mets.",
        ] {
            let facts = stage(text, Some("pancreatic"));
            assert_eq!(value(&facts, "group").as_deref(), Some("I"), "{text}");
            assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"), "{text}");
        }
        let facts = stage("cT2 N0 M0 in 2024; now liver mets.", Some("pancreatic"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"));
    }

    #[test]
    fn locally_advanced_and_small_cell_stages() {
        let facts = stage(
            "head of pancreas mass, locally advanced (SMA encasement)",
            Some("pancreatic"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("III"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        // Not a group for cancers whose locally advanced disease spans two.
        assert_eq!(
            value(
                &stage("locally advanced rectal cancer", Some("colorectal")),
                "group"
            ),
            None
        );
        let facts = stage("58F ES-SCLC since 09/2023", Some("sclc"));
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"));
        let facts = stage("limited-stage small cell carcinoma", Some("sclc"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
    }

    #[test]
    fn peritoneal_disease_of_an_ovarian_cancer_is_regional() {
        let text = "CT: omental cake, ascites. FIGO stage IIIC.";
        let facts = stage(text, Some("ovarian"));
        assert_eq!(value(&facts, "group").as_deref(), Some("III"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        assert_eq!(
            value(&stage(text, Some("gastric")), "group").as_deref(),
            Some("IV")
        );
    }

    #[test]
    fn lesions_in_an_organ_are_distant_unless_the_cancer_began_there() {
        for text in [
            "progressed 03/2024 with new lung nodules",
            "control CT shows new lesions in the liver",
        ] {
            let facts = stage(text, Some("breast"));
            assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"), "{text}");
        }
        assert_eq!(
            value(
                &stage("two new lesions in the liver", Some("hepatocellular")),
                "metastatic"
            ),
            None
        );
        assert_eq!(
            value(&stage("CT: RUL lung nodules", Some("nsclc")), "metastatic"),
            None
        );
    }

    #[test]
    fn a_clause_labelled_with_a_regional_site_is_regional() {
        let facts = stage(
            "- Axillary FNA: malignant cells, consistent with metastatic carcinoma\nClinical stage cT2 N1 M0, anatomic stage IIB.",
            Some("breast"),
        );
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        assert_eq!(value(&facts, "group").as_deref(), Some("II"));
        let facts = stage("Liver biopsy: metastatic carcinoma", Some("breast"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"));
        // A longer label, with its date.
        let facts = stage(
            "FNA R level II node 11/3: metastatic SCC, p16 positive. No distant mets. cT2 cN2 M0.",
            Some("head_and_neck"),
        );
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
    }

    /// A stage IV written with `cM0` apart from its T and N (`cT3a cN1
    /// (PSMA: two iliac nodes) cM0 - stage IVA`) is regional disease, not
    /// metastatic; the group stays IV.
    #[test]
    fn stage_iv_with_m0_written_apart_is_not_metastatic() {
        for (text, cancer) in [
            ("cT3a cN1 (PET: two iliac nodes) cM0 - AJCC stage IVA", "prostate"),
            ("pT2 pN3b (3/41, ENE+) cM0, G3 - stage IVB", "head_and_neck"),
        ] {
            let facts = stage(text, Some(cancer));
            assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"), "{text}");
            assert_eq!(value(&facts, "group").as_deref(), Some("IV"), "{text}");
        }
        let facts = stage("Stage IVA, liver metastases", Some("breast"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"));
    }

    /// A second opinion's corrected stage is the current one, and decides
    /// the metastatic status over the spread the record claimed.
    #[test]
    fn a_corrected_stage_is_the_current_one() {
        let facts = stage(
            "The outside team took the adrenal nodule to be a metastasis and labelled him stage IV. It is an adenoma; the correct stage is pT3a pN0 M0, stage III.",
            Some("renal"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("III"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        assert_eq!(value(&facts, "group_at_diagnosis"), None);
        let facts = stage(
            "Reported as stage IIIC; on review of the liver biopsy we would regard her as stage IVB.",
            Some("ovarian"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"));
        let facts = stage("Stage IV at diagnosis, liver metastases", Some("breast"));
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"));
    }

    /// The stage at a relapse is the current one; the stage at diagnosis
    /// is kept as such.
    #[test]
    fn a_stage_at_relapse_is_the_current_one() {
        let facts = stage(
            "DLBCL dx 2024: stage IVB (marrow involved). Relapse 2025: nodal disease above the diaphragm only -> stage IIA at relapse",
            Some("lymphoma"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("II"));
        assert_eq!(value(&facts, "group_at_diagnosis").as_deref(), Some("IV"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        let facts = stage(
            "Stage IIB in 2019; restaged as stage IV with liver metastases",
            Some("breast"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"));
        assert_eq!(value(&facts, "group_at_diagnosis").as_deref(), Some("II"));
    }

    #[test]
    fn spread_said_absent_in_shorthand() {
        for text in [
            "CT CAP neg for mets. pT4a pN2b",
            "CT and bone scan not showing any distant metastasis; pT2 pN3a",
        ] {
            let facts = stage(text, Some("breast"));
            assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"), "{text}");
            assert_eq!(value(&facts, "group").as_deref(), Some("III"), "{text}");
        }
    }

    #[test]
    fn m1_and_named_sites_make_stage_iv() {
        let facts = stage("cT3 N2 M1c (adrenal)", Some("nsclc"));
        assert_eq!(
            (
                value(&facts, "group").as_deref(),
                value(&facts, "metastatic").as_deref()
            ),
            (Some("IV"), Some("true"))
        );
        for text in [
            "CT: two liver lesions consistent with metastases",
            "cytology of the effusion: malignant pleural effusion",
            "new lytic bone lesions on the scan",
            "peritoneal carcinomatosis at laparoscopy",
        ] {
            assert_metastatic_iv(text, "gastric");
        }
    }

    /// `text`, of a `cancer`, is metastatic and stage IV.
    fn assert_metastatic_iv(text: &str, cancer: &str) {
        let facts = stage(text, Some(cancer));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"), "{text}");
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"), "{text}");
    }

    #[test]
    fn a_distant_recurrence_makes_the_current_stage_iv() {
        let facts = stage(
            "Stage IIA at diagnosis in 2019, lumpectomy. 2023: recurrence with liver metastases.",
            Some("breast"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"));
        assert_eq!(value(&facts, "group_at_diagnosis").as_deref(), Some("II"));
    }

    /// A stage IV written after an earlier, lower group is the current
    /// stage, with no restaging word: the lower one is at diagnosis.
    #[test]
    fn a_later_written_stage_iv_is_the_current_one() {
        let facts = stage(
            "Wide local excision 2024, stage IIC. 2026: lung nodules, biopsy confirmed metastatic melanoma. Assessment: stage IV melanoma.",
            Some("melanoma"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("IV"));
        assert_eq!(value(&facts, "group_at_diagnosis").as_deref(), Some("II"));
    }

    #[test]
    fn a_glioma_that_states_no_spread_is_not_metastatic() {
        let facts = stage(
            "R temporal GBM, IDH-wildtype; GTR 08/2025, then Stupp.",
            Some("glioma"),
        );
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        assert_eq!(value(&facts, "group"), None);
        // Spread outside the brain still counts.
        let facts = stage("GBM; CT chest: new lung metastases.", Some("glioma"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"));
    }

    #[test]
    fn no_spread_beyond_the_organ_is_no_metastasis() {
        let facts = stage(
            "6.5 cm mass with portal vein thrombus; no extrahepatic dz on CT.",
            Some("hepatocellular"),
        );
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
    }

    #[test]
    fn an_m1_to_rule_out_states_nothing() {
        let facts = stage(
            "Clinical stage IIB (cT2 cN1). Staging CT and bone scan ordered to r/o M1.",
            Some("breast"),
        );
        assert_eq!(value(&facts, "group").as_deref(), Some("II"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
        let facts = stage("Bone biopsy positive: M1b.", Some("breast"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("true"));
    }

    #[test]
    fn a_site_named_before_a_recurrence_word_is_distant_spread() {
        for text in [
            "Stage III at diagnosis, no distant disease. 2026: peritoneal recurrence.",
            "Impression: liver relapse 9 months after adjuvant chemotherapy.",
        ] {
            assert_metastatic_iv(text, "gastric");
        }
        let facts = stage(
            "Stage III, no distant disease; liver recurrence risk discussed.",
            Some("gastric"),
        );
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
    }

    #[test]
    fn a_site_named_after_a_recurrence_word_is_distant_spread() {
        for text in [
            "pT2a N1a 2022, adjuvant nivolumab. 6/23 relapse: liver x4 + lung, LDH 2x ULN.",
            "Cystectomy 2022 (pT3a pN1). Recurrence 2024 in retroperitoneal nodes and lung.",
            "Excised 2022 (pT2a N1a). 11/2024: new lung, liver and subcutaneous nodules.",
            "pT1c pN1a M0 2017. 3/22 relapse on AI (yr 5): bone-only (spine/pelvis).",
        ] {
            assert_metastatic_iv(text, "melanoma");
        }
        for text in [
            // Not an event, negated, nodal only, or the primary's own organ.
            "pT2 N1 M0, stage IIIA. Relapse-free survival in the lung cohort was longer.",
            "Stage IIIA. Oncotype Recurrence Score 18; bone density normal.",
            "Stage IIIA. No recurrence; liver and lung clear.",
            "Stage IIIA. Recurrence in the axillary nodes only.",
            "Stage IIIA. New diagnosis of lung adenocarcinoma, staged.",
            "Stage IIIA. Suspected recurrence in the liver, for biopsy.",
        ] {
            let facts = stage(text, Some("breast"));
            assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"), "{text}");
        }
        let facts = stage("Stage IIIA. 2024: progression in the right lung.", Some("nsclc"));
        assert_eq!(value(&facts, "metastatic").as_deref(), Some("false"));
    }

    #[test]
    fn negations_of_one_organ_or_of_new_lesions_say_nothing() {
        assert_eq!(
            value(
                &stage("CT: no evidence of distant metastatic disease", None),
                "metastatic"
            )
            .as_deref(),
            Some("false")
        );
        assert_eq!(
            value(&stage("MRI: no brain metastases", None), "metastatic"),
            None
        );
        assert_eq!(
            value(&stage("Restaging: no new metastases", None), "metastatic"),
            None
        );
        assert_eq!(
            value(&stage("multiple hepatic metastases", None), "metastatic").as_deref(),
            Some("true")
        );
        // Spread to regional nodes is stage III, not metastatic.
        assert_eq!(
            value(
                &stage("metastatic carcinoma in 3 of 14 lymph nodes", None),
                "metastatic"
            ),
            None
        );
        // A group below IV says not metastatic (derived).
        let facts = stage("Stage IIB, for surgery", None);
        assert!(
            facts
                .iter()
                .any(|fact| fact.0 == "metastatic" && fact.1 == "false" && fact.2)
        );
    }
}
