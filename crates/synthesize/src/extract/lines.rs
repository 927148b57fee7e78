//! Prior lines of therapy with their outcome, read over the whole note:
//! `progressed on FOLFOX`, `1L FOLFOX/bev x 8 mo → PD`, `TCHP (docetaxel,
//! carboplatin, trastuzumab, pertuzumab) with good response`, an adjuvant
//! course and then `relapse 14 months later` in another sentence.
//!
//! Drug and regimen names (brands and abbreviations too) come from the
//! ontology. Drugs joined by `/`, `+`, `,`, `and`, `with`, and a list in
//! brackets right after a regimen, are one regimen (two named regimens,
//! `FOLFOX and FOLFIRI`, stay two). The part of a clause from a plan word on
//! (`plan`, `will`, `consider`) names no line given.
//!
//! Mentions make lines in the order the note tells them: a mention of a
//! line already named (its drugs, through a regimen's components) is that
//! line again, unless the line progressed and the mention is a re-challenge;
//! a mention whose drugs are part of the line last named (or, failing
//! that, of an earlier line), before that line progressed, continues it
//! (`carbo/etop/durva x4 → durva maintenance`, a dose list naming `bev`).
//!
//! How an outcome is attached: an outcome word after a regimen in its
//! clause belongs to it (up to the next regimen); one before it belongs to
//! it when tied by a link word (`progressed on`, `response to`) or close
//! by; any other outcome word — in a clause, bullet or sentence naming no
//! regimen, or before a clause's first regimen and not tied to it — belongs
//! to the nearest preceding line, the one last named (a line named in
//! passing after `after progression on` does not become it). A line's
//! outcome is its worst: progression, else response, else unknown (stopped,
//! for toxicity or another reason, with no assessment), else ongoing. A line
//! with no outcome written is a response when given with curative intent
//! (adjuvant, neoadjuvant, with radiotherapy: completed without relapse), and
//! ongoing when it is the last line of the note.
//!
//! Not outcomes: a disease a line treats (`for recurrent cervical cancer`),
//! a laboratory symbol (`Cr 1.2`). A history block opening a later line
//! (`History:`) tells the past from its start: while it names no line, its
//! events belong to none named above it.

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

/// An outcome word: its value, its token and the tokens it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cue {
    value: Outcome,
    index: usize,
    length: usize,
    /// A negated progression word (`no recurrence`): for a line still
    /// being given with curative intent, no response but the absence of a
    /// relapse.
    negated: bool,
}

/// A line's outcome, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Ongoing,
    /// Stopped (for toxicity or another reason) with no assessment.
    Unknown,
    Response,
    Progression,
}

impl Outcome {
    fn as_str(self) -> &'static str {
        match self {
            Outcome::Ongoing => "ongoing",
            Outcome::Unknown => "unknown",
            Outcome::Response => "response",
            Outcome::Progression => "progression",
        }
    }
}

/// One line of therapy: its first mention, its drugs (components of named
/// regimens expanded) and the worst outcome read for it.
struct Line {
    first: usize,
    end: usize,
    clause: usize,
    drugs: Vec<String>,
    outcome: Option<(Outcome, usize, usize)>,
    curative: bool,
    /// Written as completed (`finished`, `completed`).
    completed: bool,
    /// Written as still given (an ongoing word or a cycle label close by).
    given_now: bool,
}

impl Line {
    /// Takes an outcome word's verdict: a negated progression word says
    /// nothing of a line given with curative intent (`adjuvant nivolumab,
    /// C7 today; no recurrence` is ongoing, and completed it is a response
    /// anyway).
    fn take_cue(&mut self, cue: &Cue, clause: usize) {
        if !(cue.negated && self.curative) {
            self.take(cue.value, cue.index, clause);
        }
    }

    fn take(&mut self, value: Outcome, index: usize, clause: usize) {
        if self.outcome.is_none_or(|(known, _, _)| value > known) {
            self.outcome = Some((value, index, clause));
        }
    }
}

/// Finds every prior line in the note (its clauses, in order).
pub fn prior_lines(lexicon: &Lexicon, tokens: &Tokens<'_>, clauses: &[(usize, usize)], out: &mut Vec<Found>) {
    let words = &lexicon.lines;
    let mut lines: Vec<Line> = Vec::new();
    let mut active: Option<usize> = None;
    let mut suspended: Option<Option<usize>> = None;
    let blocks = plan_blocks(lexicon, tokens);
    // The first token of the line the clause opens in (read once, in order).
    let (mut line_start, mut scanned) = (0, 0);
    for (clause_index, &clause) in clauses.iter().enumerate() {
        // A history line tells the past from its start: while it names no
        // line, its events belong to none named above it, and after it the
        // line named last before it is the current one again.
        if tokens.opens_line(clause.0)
            && let Some(before) = suspended.take()
        {
            active = active.or(before);
        }
        if opens_history(lexicon, tokens, clause) {
            suspended = Some(active.take());
        }
        if tokens.is_question(clause) || lexicon.family_words.find(tokens, clause.0, clause.1).is_some() {
            continue;
        }
        let (start, end) = clause;
        // From a plan word to the next arrow (or the clause end) no line is
        // given; a regimen written as not given (`X not an option`) is none.
        let plans = plans(lexicon, tokens, start, end);
        let planned = |index: usize| {
            plans
                .iter()
                .chain(&blocks)
                .any(|(from, to)| (*from..*to).contains(&index))
        };
        // A regimen listed right after a refused one is refused with it
        // (`do not rechallenge capecitabine or infusional 5-FU`).
        let mut refused_end: Option<usize> = None;
        let regimens: Vec<Regimen> = regimens(lexicon, tokens, start, end)
            .into_iter()
            .filter(|regimen| {
                let refused = refused_before(lexicon, tokens, start, regimen.first)
                    || refused_end.is_some_and(|previous| {
                        (previous..regimen.first).all(|index| {
                            matches!(tokens.lower(index), "and" | "," | "or" | "&" | "nor")
                                || words.qualifiers.starts(tokens, index)
                        })
                    });
                refused_end = refused.then_some(regimen.end);
                !refused && !planned(regimen.first) && !not_given(lexicon, tokens, regimen.end, end)
            })
            .collect();
        while scanned <= start {
            if tokens.opens_line(scanned) {
                line_start = scanned;
            }
            scanned += 1;
        }
        let aside = aside(lexicon, tokens, line_start);
        let cues: Vec<Cue> = cues(lexicon, tokens, start, end)
            .into_iter()
            .filter(|cue| !planned(cue.index))
            .collect();
        if regimens.is_empty() {
            if let Some(line) = active.filter(|_| !aside) {
                for cue in cues.iter().filter(|cue| carried(lexicon, tokens, cue)) {
                    lines[line].take_cue(cue, clause_index);
                }
                let curative = lines[line].curative;
                if let Some(index) = metastasis_event(lexicon, tokens, start, end, curative)
                    && !planned(index)
                {
                    lines[line].take(Outcome::Progression, index, clause_index);
                }
            }
            continue;
        }
        // Outcome words before the clause's first regimen and not tied to
        // it belong to the line before, and are read before this clause's
        // mentions join any line (`relapse: carboplatin + PLD` after a
        // carboplatin doublet is a new line).
        let first_regimen = regimens[0].first;
        let (early, cues): (Vec<Cue>, Vec<Cue>) = cues.into_iter().partition(|cue| {
            let cue_end = cue.index + cue.length;
            active.is_some()
                && cue_end <= first_regimen
                && !tied(lexicon, tokens, cue_end, first_regimen)
                && !close(tokens, cue_end, first_regimen)
        });
        if let Some(line) = active.filter(|_| !aside) {
            for cue in early.iter().filter(|cue| carried(lexicon, tokens, cue)) {
                lines[line].take_cue(cue, clause_index);
            }
        }
        // Each mention's line.
        let mut ids = Vec::with_capacity(regimens.len());
        let mut current = active;
        for (position, regimen) in regimens.iter().enumerate() {
            let before = if position == 0 {
                start
            } else {
                regimens[position - 1].end
            };
            let after = regimens.get(position + 1).map_or(end, |next| next.first);
            let drugs = expand(lexicon, &regimen.drugs);
            let retreat = words
                .retreatment
                .find(tokens, regimen.first.saturating_sub(3).max(before), after)
                .is_some();
            let known = lines.iter().position(|line| line.drugs == drugs);
            // A drug written as stopped (`Abiraterone stopped 11/20`, `after
            // pembro stopped`) is a part of a line already told, even one
            // that progressed: the stop ends it, it starts nothing.
            let stopped = cues.iter().any(|cue| {
                cue.value == Outcome::Unknown && (regimen.end..=regimen.end + 1).contains(&cue.index)
            });
            let id = match known {
                Some(id) if !(retreat && lines[id].progressed()) => id,
                _ => match current
                    .filter(|_| known.is_none())
                    .into_iter()
                    .chain((0..lines.len()).rev().filter(|_| known.is_none() && !retreat))
                    .find(|&id| {
                        (stopped || !lines[id].progressed())
                            && drugs.iter().all(|drug| lines[id].drugs.contains(drug))
                    }) {
                    Some(id) => id,
                    _ => {
                        lines.push(Line {
                            first: regimen.first,
                            end: regimen.end,
                            clause: clause_index,
                            drugs,
                            outcome: None,
                            curative: false,
                            completed: false,
                            given_now: false,
                        });
                        lines.len() - 1
                    }
                },
            };
            let setting_from = regimen.first.saturating_sub(6).max(before);
            if words.curative.find(tokens, setting_from, after).is_some() {
                lines[id].curative = true;
            }
            if words.completed.find(tokens, setting_from, after).is_some() {
                lines[id].completed = true;
            }
            // A line named again takes an ongoing word only close by (`now on
            // CAPOX`), not one about something else in its clause
            // (`Ongoing toxicity: neuropathy (oxaliplatin)`).
            let named_again = lines[id].first != regimen.first;
            let (from, to) = if named_again {
                (
                    regimen.first.saturating_sub(3).max(before),
                    (regimen.end + 3).min(after),
                )
            } else {
                (before, after)
            };
            if let Some(index) = words.ongoing.find(tokens, from, to).or_else(|| {
                (from..to).find(|&index| cycle_label(tokens.lower(index)) || cycle_number(tokens, index))
            }) {
                lines[id].take(Outcome::Ongoing, index, clause_index);
                lines[id].given_now = true;
            }
            ids.push(id);
            current = Some(id);
        }
        // Each outcome word's line.
        let mut past = vec![false; regimens.len()];
        for cue in &cues {
            let cue_end = cue.index + cue.length;
            let next = regimens.iter().position(|regimen| regimen.first >= cue_end);
            let previous = regimens.iter().rposition(|regimen| regimen.end <= cue.index);
            if let Some(next) = next
                && tied(lexicon, tokens, cue_end, regimens[next].first)
            {
                // `progression on A and B`: every regimen of the list.
                let mut last = next;
                while last + 1 < regimens.len()
                    && listed(tokens, regimens[last].end, regimens[last + 1].first)
                {
                    last += 1;
                }
                let passing = words
                    .past
                    .find(tokens, cue.index.saturating_sub(2).max(start), cue.index)
                    .is_some();
                for position in next..=last {
                    lines[ids[position]].take_cue(cue, clause_index);
                    past[position] |= passing;
                }
                continue;
            }
            // After a regimen: that one; before the first, close by (or
            // with no line before): the first.
            if let Some(position) = previous.or(next) {
                lines[ids[position]].take_cue(cue, clause_index);
            }
        }
        if let Some(position) = (0..regimens.len()).rev().find(|&position| !past[position]) {
            active = Some(ids[position]);
        }
    }
    let count = lines.len();
    for (position, line) in lines.iter().enumerate() {
        let outcome = match line.outcome {
            // The line still given (the last one, written as current) with an
            // interim response or stable disease is ongoing: a line's outcome
            // is its response only once it has ended.
            Some((Outcome::Response, _, _)) if line.given_now && !line.completed && position + 1 == count => {
                Some((Outcome::Ongoing, None))
            }
            Some((value, cue, clause)) => Some((value, Some(cue).filter(|_| clause == line.clause))),
            None if line.curative || line.completed => Some((Outcome::Response, None)),
            None if position + 1 == count => Some((Outcome::Ongoing, None)),
            None => None,
        };
        let Some((value, cue)) = outcome else {
            continue;
        };
        let name = &tokens.text[tokens.tokens[line.first].start..tokens.tokens[line.end - 1].end];
        let (first, last) = match cue {
            Some(cue) => (line.first.min(cue), (line.end - 1).max(cue)),
            None => (line.first, line.end - 1),
        };
        push(
            out,
            tokens,
            "prior_line",
            name,
            value.as_str(),
            "affirmed",
            "certain",
            None,
            first,
            last,
        );
        if let Some(fact) = out.last_mut() {
            fact.key = Some(format!("{}#{position}", line.drugs.join("+")));
        }
    }
}

impl Line {
    fn progressed(&self) -> bool {
        self.outcome
            .is_some_and(|(value, _, _)| value == Outcome::Progression)
    }
}

/// A mention's drugs with each named regimen replaced by its components,
/// sorted.
fn expand(lexicon: &Lexicon, drugs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = drugs
        .iter()
        .flat_map(|drug| match lexicon.lines.regimens.get(drug) {
            Some(components) if !components.is_empty() => components.clone(),
            _ => vec![drug.clone()],
        })
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether an outcome word written before a regimen is tied to it: a link
/// word right after the cue, then only link and setting words.
fn tied(lexicon: &Lexicon, tokens: &Tokens<'_>, cue_end: usize, regimen: usize) -> bool {
    let words = &lexicon.lines;
    if regimen <= cue_end || regimen - cue_end > 6 || !words.links.starts(tokens, cue_end) {
        return false;
    }
    let mut index = cue_end;
    while index < regimen {
        match words
            .links
            .len_at(tokens, index)
            .or_else(|| words.settings.len_at(tokens, index))
        {
            Some(length) => index += length,
            None => return false,
        }
    }
    true
}

/// Whether an outcome word before a regimen stands close to it: within six
/// words, with no `:`, arrow, bracket or full stop between.
fn close(tokens: &Tokens<'_>, cue_end: usize, regimen: usize) -> bool {
    regimen >= cue_end
        && regimen - cue_end <= 6
        && !(cue_end..regimen).any(|index| matches!(tokens.lower(index), ":" | "→" | ">" | "." | "("))
}

/// The stretches of a clause that tell a plan: from each plan word to the
/// next arrow (`→`, `->`), or the clause end; a clause opening with `for`
/// is a plan to its end.
fn plans(lexicon: &Lexicon, tokens: &Tokens<'_>, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    // `For total neoadjuvant therapy (…)`, `– for definitive
    // chemoradiotherapy`: `for` opening a clause, after any label or dash,
    // tells what the patient is for.
    let opener = (start..(start + 4).min(end))
        .find(|&index| tokens.tokens[index].word)
        .filter(|&index| {
            (start..index).all(|before| matches!(tokens.lower(before), ":" | "-" | "–" | "—" | "•" | "*"))
                || tokens.lower(index.saturating_sub(1)) == ":"
        });
    let after_dash = (start + 1..end).find(|&index| {
        tokens.lower(index) == "for"
            && matches!(tokens.lower(index - 1), "-" | "–" | "—")
            && tokens.tokens[index - 1].space_before
    });
    if let Some(index) = opener
        .filter(|&index| tokens.lower(index) == "for")
        .or(after_dash)
    {
        out.push((index, end));
        return out;
    }
    let mut index = start;
    while let Some(plan) = lexicon.lines.future.find(tokens, index, end) {
        let stop = (plan..end)
            .find(|&next| matches!(tokens.lower(next), "→" | ">"))
            .unwrap_or(end);
        out.push((plan, stop));
        index = stop.max(plan + 1);
    }
    out
}

/// The stretches a plan label heads (`Plan:`, `Recommendation:`, `MDT:`)
/// opening a line or a sentence: the rest of its line, whatever its clauses
/// and arrows; a label ending its line
/// heads the lines below it up to the next label (`Plan:` over bullets).
fn plan_blocks(lexicon: &Lexicon, tokens: &Tokens<'_>) -> Vec<(usize, usize)> {
    let count = tokens.tokens.len();
    let line_end = |from: usize| {
        (from..count)
            .find(|&index| tokens.opens_line(index))
            .unwrap_or(count)
    };
    // A line headed by a label of its own (`Histology:`, `CT 03/2024:`).
    let labelled = |line: usize| {
        let first = tokens.past_bullet(line);
        (first + 1..(first + 4).min(count))
            .any(|index| tokens.lower(index) == ":" && !tokens.opens_line(index))
    };
    let label_at = |index: usize| {
        let words = &lexicon.lines;
        words
            .future
            .len_at(tokens, index)
            .or_else(|| words.plan_labels.len_at(tokens, index))
            .filter(|length| tokens.lower(index + length) == ":")
    };
    let mut out = Vec::new();
    let mut line = 0;
    while line < count {
        let next = line_end(line + 1);
        // A label opening the line or a sentence in it (`… as above. Plan:`).
        let first = tokens.past_bullet(line);
        // `Thoracic MDT:`: one word may stand before a line's label.
        let label = [first, first + 1]
            .into_iter()
            .filter(|&index| index < next)
            .chain(
                (first + 1..next)
                    .filter(|&index| tokens.lower(index - 1) == "." && tokens.tokens[index].space_before),
            )
            .find_map(|index| label_at(index).map(|length| (index, length)));
        if let Some((index, length)) = label {
            let mut stop = next;
            if index + length + 1 == next {
                while stop < count && !labelled(stop) {
                    stop = line_end(stop + 1);
                }
            }
            out.push((index, stop));
            line = stop;
            continue;
        }
        line = next;
    }
    out
}

/// Whether a regimen is written as not given: a `not_given` word within
/// two words after it (`T-DXd not an option`, `bevacizumab not given`,
/// `adjuvant doxorubicin/ifosfamide discussed`) or past fillers
/// (`carboplatin-based NAC is not supported`, `osimertinib to be
/// considered`), or a word of the patient right after it
/// (`cisplatin-ineligible`).
fn not_given(lexicon: &Lexicon, tokens: &Tokens<'_>, regimen_end: usize, end: usize) -> bool {
    let words = &lexicon.lines;
    if (regimen_end..(regimen_end + 2).min(end)).any(|index| words.not_given.starts(tokens, index)) {
        return true;
    }
    let mut index = regimen_end;
    while index < end && index < regimen_end + 8 {
        if words.not_given.starts(tokens, index) {
            return true;
        }
        match words.not_given_fillers.len_at(tokens, index) {
            Some(length) => index += length,
            None => break,
        }
    }
    let at = if tokens.lower(regimen_end) == "-" {
        regimen_end + 1
    } else {
        regimen_end
    };
    at < end && words.patient_words.starts(tokens, at)
}

/// Whether a regimen is written as not given by a refusal before it, then
/// only setting, retreatment, link and qualifier words (`No adjuvant
/// nivolumab`, `advise against cisplatin`, `do not rechallenge with
/// capecitabine`).
fn refused_before(lexicon: &Lexicon, tokens: &Tokens<'_>, start: usize, regimen: usize) -> bool {
    let words = &lexicon.lines;
    (regimen.saturating_sub(6).max(start)..regimen).any(|at| {
        words.refusals.len_at(tokens, at).is_some_and(|length| {
            let mut index = at + length;
            while index < regimen
                && let Some(length) = words
                    .settings
                    .len_at(tokens, index)
                    .or_else(|| words.retreatment.len_at(tokens, index))
                    .or_else(|| words.links.len_at(tokens, index))
                    .or_else(|| words.qualifiers.len_at(tokens, index))
            {
                index += length;
            }
            index == regimen
        })
    })
}

/// Whether a word labels a cycle under way (`C9`, `C4D1`, `c12d8`): `c`,
/// one or two digits, then optionally `d` and one or two digits.
fn cycle_label(word: &str) -> bool {
    let Some(rest) = word.strip_prefix('c') else {
        return false;
    };
    match rest.split_once('d') {
        Some((cycle, day)) => cycle_digits(cycle) && cycle_digits(day),
        None => cycle_digits(rest),
    }
}

/// A cycle's or day's number as cycle labels write it: one or two digits.
fn cycle_digits(part: &str) -> bool {
    (1..=2).contains(&part.len()) && part.bytes().all(|byte| byte.is_ascii_digit())
}

/// Whether `cycle` and a number are written at token `index` (`here for
/// cycle 5`, `due cycle 6`, `day 9 after cycle 2`): one cycle named, as a
/// cycle label does (`C5`); a count of cycles (`6 cycles`) names none.
fn cycle_number(tokens: &Tokens<'_>, index: usize) -> bool {
    tokens.lower(index) == "cycle" && cycle_digits(tokens.lower(index + 1))
}

/// Whether the line opening at token `line` is headed by an aside label
/// (`Meds:`, `Allergies:`, `FHx:`).
fn aside(lexicon: &Lexicon, tokens: &Tokens<'_>, line: usize) -> bool {
    let first = tokens.past_bullet(line);
    lexicon
        .lines
        .aside_labels
        .len_at(tokens, first)
        .is_some_and(|length| tokens.lower(first + length) == ":")
}

/// Whether a short capitalised name is a score, not a drug: three letters
/// or fewer right before a bare number (`IPI 3`, the prognostic index; not
/// `ipi 3 mg/kg`).
fn score_not_drug(tokens: &Tokens<'_>, index: usize, length: usize) -> bool {
    let raw = tokens.raw(index);
    length == 1
        && raw.len() <= 3
        && raw.bytes().all(|byte| byte.is_ascii_uppercase())
        && tokens.lower(index + 1).bytes().all(|byte| byte.is_ascii_digit())
        && !tokens.lower(index + 1).is_empty()
        && !matches!(tokens.lower(index + 2), "mg" | "x" | "cycles" | "cycle")
}

/// Whether two regimens are items of one list (`FOLFOX and FOLFIRI`).
fn listed(tokens: &Tokens<'_>, end: usize, next: usize) -> bool {
    (end..next).all(|index| matches!(tokens.lower(index), "and" | "," | "or" | "&"))
}

/// Whether an outcome word may travel to a line named in another clause:
/// one of `not_carried` (`smaller`, `improved`) only when an assessment
/// reports it (`CT 01/2025: lung nodules smaller`).
fn carried(lexicon: &Lexicon, tokens: &Tokens<'_>, cue: &Cue) -> bool {
    cue.value != Outcome::Ongoing
        && (!lexicon.lines.not_carried.starts(tokens, cue.index)
            || reported_by(&lexicon.lines.assessments, tokens, cue.index)
            || reported_by(&lexicon.lines.measures, tokens, cue.index))
}

/// Whether a word of `words` (an assessment, `CT`, `restaging`; a tumour
/// marker, `CEA rising`) stands within eight words before `index` in its
/// clause.
fn reported_by(words: &super::lexicon::Words, tokens: &Tokens<'_>, index: usize) -> bool {
    let mut from = index;
    while from > 0 && index - from < 8 && !tokens.clause_break_before(from) {
        from -= 1;
    }
    words.find(tokens, from, index).is_some()
}

/// A metastasis word, not negated, with a word that says it appeared
/// (`bone metastases developed`) or, after a line given with curative
/// intent, alone (`2022: bone metastases`): where it stands.
fn metastasis_event(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    start: usize,
    end: usize,
    curative: bool,
) -> Option<usize> {
    let metastatic = &lexicon.metastatic;
    if !curative {
        lexicon.lines.metastasis_events.find(tokens, start, end)?;
    }
    let near = |set: &super::lexicon::Words, index: usize| {
        set.find(tokens, index.saturating_sub(3).max(start), (index + 8).min(end))
            .is_some()
    };
    (start..end).find(|&index| {
        let word = tokens.lower(index);
        let mention = metastatic
            .stems
            .iter()
            .any(|stem| word.starts_with(stem.as_str()))
            || metastatic.words.starts(tokens, index)
            || (metastatic.sites.starts(tokens, index)
                && metastatic
                    .lesion_words
                    .find(tokens, index + 1, (index + 3).min(end))
                    .is_some());
        // Spread to regional nodes is no relapse beyond them.
        let regional = near(&metastatic.regional, index)
            && !near(&metastatic.distant, index)
            && !near(&metastatic.sites, index);
        mention
            && !regional
            && metastatic
                .negations
                .find(tokens, index.saturating_sub(5).max(start), index)
                .is_none()
    })
}

/// The regimens in `start..end`: runs of drugs joined by glue words, each
/// with any bracketed list of drugs right after it.
fn regimens(lexicon: &Lexicon, tokens: &Tokens<'_>, start: usize, end: usize) -> Vec<Regimen> {
    let words = &lexicon.lines;
    // A drug name, after any qualifiers (`pegylated liposomal doxorubicin`):
    // the tokens from `index` and the canonical name.
    let drug_at = |index: usize| {
        let mut at = index;
        while at < end
            && let Some(length) = words.qualifiers.len_at(tokens, at)
        {
            at += length;
        }
        if at >= end {
            return None;
        }
        words
            .drugs
            .at(tokens, at)
            .map(|(length, drug)| (at - index + length, drug))
    };
    let mut regimens = Vec::new();
    let mut index = start;
    while index < end {
        let Some((length, drug)) = drug_at(index) else {
            index += 1;
            continue;
        };
        if score_not_drug(tokens, index, length) {
            index += length;
            continue;
        }
        let first = index;
        let mut drugs = vec![drug.clone()];
        let mut after = index + length;
        loop {
            let named = |drug: &String| words.regimens.contains_key(drug);
            // A dose between two drugs (`carboplatin AUC2 + paclitaxel`,
            // `cisplatin 75 mg/m² and pemetrexed`) does not part them.
            let mut joint = dose_end(tokens, after, end);
            // `ADT (leuprolide) + apalutamide`: a bracket closed after a drug.
            if joint == after && tokens.lower(after) == ")" && matches!(tokens.lower(after + 1), "+" | "plus")
            {
                joint = after + 1;
            }
            if let Some(glue) = words.glue.len_at(tokens, joint)
                && let Some((next, drug)) = drug_at(joint + glue)
                && !(named(drug) && drugs.iter().any(named))
            {
                drugs.push(drug.clone());
                after = joint + glue + next;
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

/// Where a dose written from `index` ends (`AUC2`, `75 mg/m²`, `400 mg
/// daily`): numbers, units and schedule words; `index` itself when none.
fn dose_end(tokens: &Tokens<'_>, index: usize, end: usize) -> usize {
    let unit = |word: &str| {
        matches!(
            word,
            "mg" | "mcg"
                | "g"
                | "kg"
                | "m"
                | "m2"
                | "²"
                | "auc"
                | "iv"
                | "po"
                | "sc"
                | "weekly"
                | "daily"
                | "bid"
                | "q2w"
                | "q3w"
                | "q4w"
                | "qw"
        ) || (word.starts_with("auc") && word[3..].bytes().all(|byte| byte.is_ascii_digit()))
    };
    let mut at = index;
    while at < end && at < index + 10 {
        let word = tokens.lower(at);
        // A year (`FOLFOX 2019, bevacizumab 2021`) is no dose.
        let year = word.len() == 4 && (word.starts_with("19") || word.starts_with("20"));
        let number = word.starts_with(|character: char| character.is_ascii_digit()) && !year;
        let glued = tokens.tokens.get(at + 1).is_some_and(|token| !token.space_before);
        let decimal = word == "."
            && at > index
            && glued
            && tokens.lower(at + 1).starts_with(|c: char| c.is_ascii_digit());
        let per = word == "/" && glued && unit(tokens.lower(at + 1));
        if number || unit(word) || decimal || per {
            at += 1;
        } else {
            break;
        }
    }
    at
}

/// The outcome words in `from..to`, in order: progression and response
/// words (a negated progression word, `no progression`, is a response; a
/// negated response word says nothing), stable disease on an assessment
/// (`CT: SD`, `MRI liver 01/2026: lesions stable`, the assessment within
/// ten words before) as a response, and ongoing words.
fn cues(lexicon: &Lexicon, tokens: &Tokens<'_>, from: usize, to: usize) -> Vec<Cue> {
    let words = &lexicon.lines;
    let negated = |index: usize| {
        words
            .negations
            .find(tokens, index.saturating_sub(3).max(from), index)
            .is_some()
    };
    let mut out = Vec::new();
    let mut index = from;
    while index < to {
        if let Some(length) = words.stable.len_at(tokens, index)
            && words
                .assessments
                .find(tokens, index.saturating_sub(10).max(from), index)
                .is_some()
        {
            out.push(Cue {
                value: Outcome::Response,
                index,
                length,
                negated: false,
            });
            index += length;
            continue;
        }
        // `new` and a lesion word (`3 new rib lesions`, `new hepatic
        // deposits`): progression, a response when negated.
        if tokens.lower(index) == "new"
            && let Some(lesion) = lexicon
                .metastatic
                .lesion_words
                .find(tokens, index + 1, (index + 4).min(to))
        {
            let negated = negated(index);
            out.push(Cue {
                value: if negated {
                    Outcome::Response
                } else {
                    Outcome::Progression
                },
                index,
                length: lesion + 1 - index,
                negated,
            });
            index = lesion + 1;
            continue;
        }
        if let Some((value, end)) = measured_change(lexicon, tokens, from, index, to) {
            out.push(Cue {
                value,
                index,
                length: end - index,
                negated: false,
            });
            index = end;
            continue;
        }
        let Some((length, value)) = words.outcomes.at(tokens, index) else {
            index += 1;
            continue;
        };
        if abbreviation_of_something_else(lexicon, tokens, index, length)
            || indication(lexicon, tokens, from, index)
            || words
                .hypothetical
                .find(tokens, index.saturating_sub(3).max(from), index)
                .is_some()
        {
            index += length;
            continue;
        }
        let negated = negated(index);
        let value = match (value.as_str(), negated) {
            ("progression", false) => Some(Outcome::Progression),
            ("progression", true) | ("response", false) => Some(Outcome::Response),
            ("unknown", false) => Some(Outcome::Unknown),
            _ => None,
        };
        if let Some(value) = value {
            out.push(Cue {
                value,
                index,
                length,
                negated: negated && value == Outcome::Response,
            });
        }
        index += length;
    }
    out
}

/// A number written at token `index` (`48`, `3.1`, `2.6cm`): its value and
/// the token after it. A decimal point must touch both its digits.
fn number_at(tokens: &Tokens<'_>, index: usize, to: usize) -> Option<(f64, usize)> {
    let leading = |raw: &str| {
        let digits = raw.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0).then(|| (raw[..digits].to_string(), digits == raw.len()))
    };
    if index >= to {
        return None;
    }
    let (mut text, whole) = leading(tokens.raw(index))?;
    let mut end = index + 1;
    if whole
        && end + 1 < to
        && tokens.raw(end) == "."
        && !tokens.tokens[end].space_before
        && !tokens.tokens[end + 1].space_before
        && let Some((fraction, _)) = leading(tokens.raw(end + 1))
    {
        text = format!("{text}.{fraction}");
        end += 2;
    }
    text.parse().ok().map(|value| (value, end))
}

/// `A -> B` (or `A → B`) starting at token `index`, for a tumour marker
/// named just before `A` or a size unit right after either number: a
/// response when `B` is at most nine tenths of `A`, a progression when at
/// least six fifths, with the token after `B`.
fn measured_change(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    from: usize,
    index: usize,
    to: usize,
) -> Option<(Outcome, usize)> {
    let words = &lexicon.lines;
    // `PSA ↓ 55%`, `CEA ↑`: an arrow of its own after a marker.
    if let arrow @ ("↓" | "↑") = tokens.lower(index)
        && words
            .measures
            .find(tokens, index.saturating_sub(5).max(from), index)
            .is_some()
    {
        let value = if arrow == "↓" {
            Outcome::Response
        } else {
            Outcome::Progression
        };
        return Some((value, index + 1));
    }
    // Only from a number's first token (`3` of `3.1`, not its `1`).
    if index > from && tokens.raw(index - 1) == "." && !tokens.tokens[index].space_before {
        return None;
    }
    let (before, after_before) = number_at(tokens, index, to)?;
    let arrow_end = match tokens.lower(after_before) {
        "→" => after_before + 1,
        "-" if tokens.lower(after_before + 1) == ">" => after_before + 2,
        _ => return None,
    };
    let (after, end) = number_at(tokens, arrow_end, to)?;
    let unit = |at: usize| {
        let raw = tokens.lower(at.saturating_sub(1));
        let suffix = raw.trim_start_matches(|c: char| c.is_ascii_digit());
        let written = Tokens::new(suffix);
        (!suffix.is_empty() && words.size_units.len_at(&written, 0) == Some(written.len()))
            || words.size_units.starts(tokens, at)
    };
    let marker = words
        .measures
        .find(tokens, index.saturating_sub(5).max(from), index)
        .is_some();
    if !(marker || unit(after_before) || unit(end)) || before <= 0.0 {
        return None;
    }
    if after <= 0.9 * before {
        Some((Outcome::Response, end))
    } else if after >= 1.2 * before {
        Some((Outcome::Progression, end))
    } else {
        None
    }
}

/// Whether the word at `index` names the disease a line treats: one of the
/// `indications` right after `for`, an article or a possessive between
/// (`for her recurrent cervical cancer`).
fn indication(lexicon: &Lexicon, tokens: &Tokens<'_>, from: usize, index: usize) -> bool {
    if !lexicon.lines.indications.starts(tokens, index) {
        return false;
    }
    let mut at = index;
    // `relapsed/refractory`: the words of one indication.
    while at >= from + 2 && tokens.lower(at - 1) == "/" && lexicon.lines.indications.starts(tokens, at - 2) {
        at -= 2;
    }
    while at > from
        && matches!(
            tokens.lower(at - 1),
            "a" | "an" | "the" | "his" | "her" | "their" | "this"
        )
    {
        at -= 1;
    }
    at > from && tokens.lower(at - 1) == "for"
}

/// Whether a clause opens a line with a history label and a colon within
/// its first fifteen words (`History:`, `Background (from our records):`,
/// `History as he recalls it, …:`): the history told from its start.
fn opens_history(lexicon: &Lexicon, tokens: &Tokens<'_>, (start, end): (usize, usize)) -> bool {
    if !tokens.opens_line(start) {
        return false;
    }
    let first = tokens.past_bullet(start);
    lexicon.lines.history_labels.starts(tokens, first)
        && (first + 1..(first + 16).min(end)).any(|index| tokens.lower(index) == ":")
}

/// `PD-L1`, `PR 40%`, `ER/PR+`: a capitalised outcome abbreviation that is
/// part of a marker name or carries a marker's status. A short one written
/// with a capital and small letters (`Cr 1.2`, `for Cr`) is a laboratory
/// symbol, and one in small letters before a value (`cr 0.7`) too: an
/// outcome is abbreviated in capitals (`CR`) or in small letters alone.
fn abbreviation_of_something_else(
    lexicon: &Lexicon,
    tokens: &Tokens<'_>,
    index: usize,
    length: usize,
) -> bool {
    if length != 1 {
        return false;
    }
    let raw = tokens.raw(index);
    let short = raw.len() <= 3;
    let mut letters = raw.chars();
    let title = short
        && raw.len() >= 2
        && letters.next().is_some_and(|first| first.is_ascii_uppercase())
        && letters.all(|rest| rest.is_ascii_lowercase());
    if title {
        return true;
    }
    let next = index + 1;
    // `PR 40%` is a receptor, `Cr 0.7` a laboratory value; `PD 03/2024` a
    // progression with its date.
    let value_after = tokens
        .lower(next)
        .starts_with(|character: char| character.is_ascii_digit())
        && tokens.lower(next + 1) != "/";
    if !raw.bytes().all(|byte| byte.is_ascii_uppercase()) {
        return short && value_after;
    }
    let glued = tokens.tokens.get(next).is_some_and(|token| !token.space_before);
    let next_word = tokens.lower(next);
    (glued && matches!(next_word, "-" | "+" | "/"))
        || value_after
        || lexicon.markers.statuses.starts(tokens, next)
        || (index > 0 && tokens.lower(index - 1) == "/")
        || listed_after_marker(lexicon, tokens, index)
}

/// `negative for ER and PR`, `ER, PR`: the abbreviation is the next item of
/// a list of markers (a marker name just before it, across `and`, `or`, `&`
/// or a comma).
fn listed_after_marker(lexicon: &Lexicon, tokens: &Tokens<'_>, index: usize) -> bool {
    let mut at = index;
    let mut joined = false;
    while at > 0 && matches!(tokens.lower(at - 1), "and" | "or" | "&" | ",") {
        at -= 1;
        joined = true;
    }
    joined
        && (at.saturating_sub(3)..at).any(|start| {
            lexicon
                .markers
                .markers
                .len_at(tokens, start)
                .is_some_and(|length| start + length == at)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (regimen as written, outcome) of every line of a note, spans checked.
    fn outcomes(text: &str) -> Vec<(String, String)> {
        let lexicon = Lexicon::builtin().unwrap();
        let tokens = Tokens::new(text);
        let mut out = Vec::new();
        prior_lines(lexicon, &tokens, &tokens.clauses(), &mut out);
        out.into_iter()
            .map(|fact| {
                assert!(text.get(fact.start..fact.end).is_some());
                (fact.name, fact.value)
            })
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
            outcomes("Keytruda from March with no progression on imaging"),
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

    /// A line's outcome written in another clause, bullet or sentence goes
    /// to the line named last before it.
    #[test]
    fn an_outcome_in_a_later_sentence_belongs_to_the_line_before() {
        assert_eq!(
            outcomes(
                "Adjuvant oxaliplatin/capecitabine for 6 months. Relapse 14 months later in the peritoneum."
            ),
            pairs(&[("oxaliplatin/capecitabine", "progression")])
        );
        assert_eq!(
            outcomes(
                "- 1L gemcitabine + cisplatin from 05/2022\n- CT 09/2022: PD (new liver lesions)\n- 2L FOLFOX started 10/2022"
            ),
            pairs(&[("gemcitabine + cisplatin", "progression"), ("FOLFOX", "ongoing")])
        );
        // A word that stays in its clause travels when a scan reports it.
        assert_eq!(
            outcomes("Pembrolizumab from 10/2024; CT 01/2025: lung nodules smaller, mass unchanged."),
            pairs(&[("Pembrolizumab", "response")])
        );
        assert_eq!(
            outcomes("Pembrolizumab since 10/2024; renal function improved."),
            pairs(&[("Pembrolizumab", "ongoing")])
        );
        // `after progression on` names a past line; the current one takes
        // the later verdict.
        assert_eq!(
            outcomes(
                "Now on docetaxel since May after progression on osimertinib. Impression: progressive disease."
            ),
            pairs(&[("docetaxel", "progression"), ("osimertinib", "progression")])
        );
    }

    /// An assessment dated and sited before its finding still reports it.
    #[test]
    fn stable_lesions_on_a_dated_scan_are_a_response() {
        assert_eq!(
            outcomes("Tebentafusp from 09/2025.\nMRI liver 01/2026: liver lesions stable in size."),
            pairs(&[("Tebentafusp", "response")])
        );
        assert_eq!(
            outcomes("On tebentafusp since 09/2025, clinically stable."),
            pairs(&[("tebentafusp", "ongoing")])
        );
    }

    /// Stable disease on an assessment is disease control (a response);
    /// written without one it is an ongoing line.
    #[test]
    fn stable_disease_on_a_scan_is_a_response() {
        assert_eq!(
            outcomes("Olaparib from 2023; restaging MRI 04/2024: stable disease."),
            pairs(&[("Olaparib", "response")])
        );
        assert_eq!(
            outcomes("Olaparib, now cycle 5, stable disease"),
            pairs(&[("Olaparib", "ongoing")])
        );
    }

    /// A regimen made of part of the line before it, before that line
    /// progressed, continues it; the same drugs after progression with a
    /// re-challenge word are a new line.
    #[test]
    fn maintenance_continues_a_line_and_a_rechallenge_starts_one() {
        assert_eq!(
            outcomes(
                "cisplatin/pemetrexed/pembrolizumab x 4 → pemetrexed/pembrolizumab maintenance → PD 11/2023"
            ),
            pairs(&[("cisplatin/pemetrexed/pembrolizumab", "progression")])
        );
        assert_eq!(
            outcomes(
                "Erlotinib 2019-2021, progressed. Docetaxel, progressed. Erlotinib rechallenge with partial response."
            ),
            pairs(&[
                ("Erlotinib", "progression"),
                ("Docetaxel", "progression"),
                ("Erlotinib", "response")
            ])
        );
    }

    /// A course given with curative intent and no outcome written was
    /// completed without relapse; metastases appearing after it are its
    /// relapse.
    #[test]
    fn curative_courses_respond_unless_metastases_follow() {
        assert_eq!(
            outcomes(
                "Neoadjuvant docetaxel/carboplatin/trastuzumab, then mastectomy. On letrozole since 2022."
            ),
            pairs(&[
                ("docetaxel/carboplatin/trastuzumab", "response"),
                ("letrozole", "ongoing")
            ])
        );
        assert_eq!(
            outcomes(
                "Chemoradiation with weekly cisplatin, completed 2021.\n2023: lung metastases, biopsy-proven."
            ),
            pairs(&[("weekly cisplatin", "progression")])
        );
    }

    #[test]
    fn named_regimens_in_a_list_are_separate_lines() {
        assert_eq!(
            outcomes("refractory to FOLFOX and FOLFIRI"),
            pairs(&[("FOLFOX", "progression"), ("FOLFIRI", "progression")])
        );
        assert_eq!(
            outcomes("carboplatin + pegylated liposomal doxorubicin x 6 → partial response"),
            pairs(&[("carboplatin + pegylated liposomal doxorubicin", "response")])
        );
    }

    /// Drugs and regimens added to the ontology for lines it missed.
    #[test]
    fn lymphoma_melanoma_and_bladder_regimens_are_lines() {
        assert_eq!(
            outcomes("bendamustine + rituximab x 6 → CR, then rituximab maintenance; 2024: POD, progression"),
            pairs(&[("bendamustine + rituximab", "progression")])
        );
        assert_eq!(
            outcomes("Tebentafusp weekly from 08/2023 → CT 11/2023: PD"),
            pairs(&[("Tebentafusp", "progression")])
        );
        assert_eq!(
            outcomes("neoadjuvant dd MVAC x 4, then cystectomy"),
            pairs(&[("dd MVAC", "response")])
        );
    }

    /// A dose written between two drugs does not part the regimen; a year
    /// does.
    #[test]
    fn a_dose_between_drugs_keeps_one_regimen() {
        assert_eq!(
            outcomes("Started carboplatin AUC2 + paclitaxel 50 mg/m² weekly with 50.4 Gy"),
            pairs(&[("carboplatin AUC2 + paclitaxel", "ongoing")])
        );
        assert_eq!(
            outcomes("cisplatin 75 mg/m2 and pemetrexed 500 mg/m2 x 4 → PD"),
            pairs(&[("cisplatin 75 mg/m2 and pemetrexed", "progression")])
        );
        assert_eq!(
            outcomes("FOLFOX 2019, PD. bevacizumab 2021 ongoing"),
            pairs(&[("FOLFOX", "progression"), ("bevacizumab", "ongoing")])
        );
    }

    /// A plan label heads the rest of its line, across clauses and arrows,
    /// and a label alone on its line the lines below it; a regimen with a
    /// plan word right after it was not given.
    #[test]
    fn a_plan_label_heads_its_line_or_block() {
        assert_eq!(
            outcomes(
                "FOLFOX x 6 → PD\nPlan: surveillance CT; adjuvant irinotecan → then FOLFIRI\nCT: stable"
            ),
            pairs(&[("FOLFOX", "progression")])
        );
        assert_eq!(
            outcomes(
                "- capecitabine 2022 → PD\n- Recommendation:\n- start FOLFIRI\n- bevacizumab to add\nHistology: adenocarcinoma"
            ),
            pairs(&[("capecitabine", "progression")])
        );
        assert!(
            outcomes("Surgery done; adjuvant doxorubicin/ifosfamide discussed and not recommended.")
                .is_empty()
        );
        assert!(outcomes("He is keen to hear about adjuvant pembrolizumab.").is_empty());
        // A label opening a sentence, and a tumour board's decision.
        assert_eq!(
            outcomes(
                "FOLFOX → SD → hepatectomy as above. Plan: if mets confirmed → irinotecan; else observe"
            ),
            pairs(&[("FOLFOX", "ongoing")])
        );
        assert!(
            outcomes("Thoracic MDT: resectable; neoadjuvant nivolumab + carboplatin/paclitaxel x3")
                .is_empty()
        );
        assert!(outcomes("Addendum: CT clear. MDT: for gemcitabine + nab-paclitaxel").is_empty());
        // `for` opening a clause: what the patient is for.
        assert!(
            outcomes("For total neoadjuvant therapy (short-course RT then CAPOX x 6), then TME.").is_empty()
        );
        assert!(outcomes("Not fit for surgery – for definitive chemoradiotherapy with cisplatin").is_empty());
        assert_eq!(
            outcomes("On FOLFOX for 6 months, PD"),
            pairs(&[("FOLFOX", "progression")])
        );
    }

    /// `no`/`without` before a regimen (setting words between) and an
    /// eligibility word after a drug say no line was given.
    #[test]
    fn regimens_refused_or_describing_the_patient_are_no_lines() {
        assert_eq!(
            outcomes("pCR after FOLFOX. No adjuvant pembrolizumab (not indicated)."),
            pairs(&[("FOLFOX", "response")])
        );
        assert!(outcomes("Staged without bevacizumab given the bleeding risk").is_empty());
        assert!(outcomes("72M, cisplatin-eligible, CrCl 70").is_empty());
        // A drug a teaching note compares with is none either.
        assert_eq!(
            outcomes("2L: encorafenib + binimetinib started today.\n- Pyrexia less common than dabrafenib."),
            pairs(&[("encorafenib + binimetinib", "ongoing")])
        );
        assert_eq!(
            outcomes("no progression on FOLFOX"),
            pairs(&[("FOLFOX", "response")])
        );
    }

    /// A drug of a line already told written as stopped is that line, even
    /// after it progressed.
    #[test]
    fn a_stopped_drug_of_a_line_told_is_that_line() {
        assert_eq!(
            outcomes(
                "2024: restarted leuprolide + abiraterone. 10/2026: castration resistant progression. Abiraterone stopped 11/20."
            ),
            pairs(&[("leuprolide + abiraterone", "progression")])
        );
        assert_eq!(
            outcomes(
                "FOLFOX + bevacizumab 4/2025-10/2026 -> CT 11/2026 progression in liver. Oxaliplatin stopped; residual neuropathy."
            ),
            pairs(&[("FOLFOX + bevacizumab", "progression")])
        );
    }

    /// A bracketed drug closed before `+` keeps its regimen going.
    #[test]
    fn a_closed_bracket_before_a_plus_joins_the_regimen() {
        assert_eq!(
            outcomes("On ADT (degarelix) + enzalutamide since 2023"),
            pairs(&[("degarelix) + enzalutamide", "ongoing")])
        );
    }

    /// Creatinine written `Cr` (a capital and a small letter, or small
    /// letters before a value) in a later line of labs is no complete
    /// response; `CR` and `cr` alone still are.
    #[test]
    fn a_laboratory_symbol_is_no_outcome() {
        assert_eq!(
            outcomes(
                "On FOLFOX since 03/2025.\nLabs: Hb 9.8, Cr 0.7, K 4.1.\nZoledronic acid dose-adjusted for Cr."
            ),
            pairs(&[("FOLFOX", "ongoing")])
        );
        assert_eq!(
            outcomes("On FOLFOX since 03/2025.\nlabs: hb 9.8, cr 1.2"),
            pairs(&[("FOLFOX", "ongoing")])
        );
        assert_eq!(outcomes("FOLFOX x6 → CR"), pairs(&[("FOLFOX", "response")]));
        assert_eq!(outcomes("FOLFOX x6, cr"), pairs(&[("FOLFOX", "response")]));
    }

    /// `for recurrent …` names the disease a line treats, not its outcome.
    #[test]
    fn a_disease_treated_for_is_no_outcome() {
        assert_eq!(
            outcomes("On lenvatinib + pembrolizumab for recurrent endometrial cancer."),
            pairs(&[("lenvatinib + pembrolizumab", "ongoing")])
        );
        assert_eq!(
            outcomes("Day +90 after axicabtagene ciloleucel for her relapsed/refractory DLBCL."),
            pairs(&[("axicabtagene ciloleucel", "ongoing")])
        );
        assert_eq!(
            outcomes("FOLFOX 2019, relapsed 2021."),
            pairs(&[("FOLFOX", "progression")])
        );
    }

    /// A history block opening a later line tells the past from its start:
    /// its events, before it names a line, belong to none named above it.
    #[test]
    fn a_history_block_starts_the_story_again() {
        assert_eq!(
            outcomes(
                "Seen on tebentafusp weekly.\nHistory: enucleation 2021; liver metastases found on MRI 07/2025.\nMRI 01/2026: stable disease."
            ),
            pairs(&[("tebentafusp", "response")])
        );
        assert_eq!(
            outcomes(
                "Seen on tebentafusp weekly.\nHistory: enucleation 2021; liver metastases found on MRI 07/2025."
            ),
            pairs(&[("tebentafusp", "ongoing")])
        );
        assert_eq!(
            outcomes("On olaparib.\nCT today: new liver metastases."),
            pairs(&[("olaparib", "progression")])
        );
    }

    /// A cycle under way (`C2`, `C3/4 today`) is an ongoing line, even one
    /// given with curative intent.
    #[test]
    fn a_cycle_under_way_is_ongoing() {
        assert_eq!(
            outcomes("Adj CAPOX x 6 mo (high-risk stage III), C2 today."),
            pairs(&[("CAPOX", "ongoing")])
        );
        assert_eq!(
            outcomes("adjuvant carboplatin/etoposide C3/4 today"),
            pairs(&[("carboplatin/etoposide", "ongoing")])
        );
    }

    #[test]
    fn plans_scores_and_regimens_not_given_are_no_lines() {
        assert!(outcomes("Recommendation: carboplatin/etoposide with radiotherapy").is_empty());
        assert!(outcomes("Hodgkin lymphoma, IPI 3").is_empty());
        assert_eq!(
            outcomes("T-DXd not an option → eribulin started 01/2024"),
            pairs(&[("eribulin", "ongoing")])
        );
    }

    #[test]
    fn plans_and_marker_abbreviations_are_not_lines() {
        assert!(outcomes("Plan: start FOLFIRI, response assessment after 4 cycles").is_empty());
        assert_eq!(
            outcomes("letrozole since 2021, ER 90% PR 20%"),
            pairs(&[("letrozole", "ongoing")])
        );
        assert_eq!(
            outcomes("olaparib since May, PD-L1 negative"),
            pairs(&[("olaparib", "ongoing")])
        );
        // The second item of a list of markers is a marker, not a response.
        assert_eq!(
            outcomes("Currently on tamoxifen. Pathology: negative for ER and PR; HER2 0."),
            pairs(&[("tamoxifen", "ongoing")])
        );
        assert_eq!(
            outcomes("On anastrozole. Repeat biopsy: ER, PR unchanged."),
            pairs(&[("anastrozole", "ongoing")])
        );
        // A partial response after a line is still one.
        assert_eq!(
            outcomes("FOLFOX x 6 cycles, restaging CT: PR."),
            pairs(&[("FOLFOX", "response")])
        );
    }

    /// A line stopped with no assessment has an unknown outcome; one
    /// stopped at progression progressed.
    #[test]
    fn a_line_stopped_without_assessment_is_unknown() {
        assert_eq!(
            outcomes("Ipilimumab/nivolumab from 03/2025, discontinued after dose 2 for hepatitis."),
            pairs(&[("Ipilimumab/nivolumab", "unknown")])
        );
        assert_eq!(
            outcomes("2L docetaxel 01/2024, stopped 04/2024 at progression. 3L irinotecan ongoing."),
            pairs(&[("docetaxel", "progression"), ("irinotecan", "ongoing")])
        );
    }

    /// `new` with a lesion word a few words on is progression (`two new
    /// adrenal nodules`); negated it is a response.
    #[test]
    fn new_lesions_of_any_site_are_progression() {
        assert_eq!(
            outcomes("Cabozantinib since 2024; CT 05/2025 shows two new adrenal nodules."),
            pairs(&[("Cabozantinib", "progression")])
        );
        assert_eq!(
            outcomes("Cabozantinib from 2024; CT 05/2025: no new hepatic lesions."),
            pairs(&[("Cabozantinib", "response")])
        );
    }

    /// For a line given with curative intent and still given, `no
    /// recurrence` is no response: the line is ongoing.
    #[test]
    fn no_relapse_on_a_curative_line_still_given_is_ongoing() {
        assert_eq!(
            outcomes(
                "Adjuvant pembrolizumab since 02/2025, cycle 9 today. Surveillance CT without recurrence."
            ),
            pairs(&[("pembrolizumab", "ongoing")])
        );
        assert_eq!(
            outcomes("Olaparib from 2024. MRI 03/2025: no progression."),
            pairs(&[("Olaparib", "response")])
        );
    }

    /// A later mention of some drugs of an earlier line (a dose list) is
    /// that line, not a new one.
    #[test]
    fn drugs_of_an_earlier_line_named_again_are_that_line() {
        assert_eq!(
            outcomes(
                "Now on FOLFIRI + bevacizumab, C3.\nPrior FOLFOX not resumed.\nDose check: irinotecan 180 mg/m2, bevacizumab 5 mg/kg."
            ),
            pairs(&[("FOLFIRI + bevacizumab", "ongoing")])
        );
    }

    /// Words after a regimen, past fillers, that say it was not given
    /// (`carboplatin-based NAC is not supported`, `osimertinib to be
    /// considered`), and refusals before it (`advise against cisplatin`,
    /// `do not rechallenge capecitabine or infusional 5-FU`).
    #[test]
    fn regimens_advised_against_or_only_considered_are_no_lines() {
        assert!(outcomes("Per Dr. Choi, carboplatin-based NAC is not supported.").is_empty());
        assert!(outcomes("EGFR+ -> adjuvant osimertinib to be considered post-resection").is_empty());
        assert!(
            outcomes("From a cardiac standpoint we advise AGAINST cisplatin-based chemotherapy.").is_empty()
        );
        assert!(
            outcomes("Do NOT rechallenge capecitabine or infusional 5-FU; events can be fatal.").is_empty()
        );
        assert_eq!(
            outcomes("CAPOX started 10/2026, no rechallenge with capecitabine after the event"),
            pairs(&[("CAPOX", "ongoing")])
        );
    }

    /// An outcome word on a line headed `Meds:`, `Allergies:` or `FHx:`
    /// (`aspirin stopped`) says nothing of the line named before it.
    #[test]
    fn outcome_words_in_medication_and_history_lists_stay_there() {
        assert_eq!(
            outcomes("Neoadjuvant: mFOLFIRINOX x 8 (05/2026-09/2026).\nMeds: ASA 81 stopped 7 d ago."),
            pairs(&[("mFOLFIRINOX", "response")])
        );
        assert_eq!(
            outcomes("FOLFOX since 03/2026.\nFHx: father colon ca, recurrence at 70."),
            pairs(&[("FOLFOX", "ongoing")])
        );
        assert_eq!(
            outcomes("FOLFOX since 03/2026.\nCT 06/2026: progression."),
            pairs(&[("FOLFOX", "progression")])
        );
    }

    /// A line named again takes an ongoing word only close to the name
    /// (`Ongoing toxicity: neuropathy (oxaliplatin)` after a completed
    /// adjuvant course is no ongoing line).
    #[test]
    fn an_ongoing_word_far_from_a_line_named_again_is_not_its_own() {
        assert_eq!(
            outcomes(
                "Chemotherapy: adjuvant CAPOX x 4 cycles, 05/2024-07/2024.\nOngoing toxicity: G1 sensory neuropathy fingertips (oxaliplatin), improving."
            ),
            pairs(&[("CAPOX", "response")])
        );
        assert_eq!(
            outcomes("Adjuvant CAPOX 05/2024.\nOxaliplatin now dropped, capecitabine ongoing."),
            pairs(&[("CAPOX", "ongoing")])
        );
    }

    /// A cycle label of any number (`C9 of 12`, `C4D1`) is a cycle under
    /// way.
    #[test]
    fn cycle_labels_of_any_number_are_under_way() {
        assert_eq!(
            outcomes("mFOLFIRINOX C9 of 12 (adjuvant)"),
            pairs(&[("mFOLFIRINOX", "ongoing")])
        );
        assert_eq!(
            outcomes("Adjuvant pembrolizumab, C12D1 today."),
            pairs(&[("pembrolizumab", "ongoing")])
        );
        assert!(cycle_label("c4d1") && cycle_label("c12") && !cycle_label("cd") && !cycle_label("c123"));
        // `cycle` and its number, as a cycle label.
        assert_eq!(
            outcomes("Adjuvant pembrolizumab, PR on CT 08/2025 - here for cycle 5 (of 9)."),
            pairs(&[("pembrolizumab", "ongoing")])
        );
        // A count of cycles names no cycle given now.
        assert_eq!(
            outcomes("FOLFOX from 01/2024 to 06/2024, 12 cycles, partial response on CT."),
            pairs(&[("FOLFOX", "response")])
        );
    }

    /// `mCRPC` after a hormone line is its progression, and the drugs of
    /// later lines the ontology names (cabazitaxel, lutetium PSMA) are
    /// lines.
    #[test]
    fn castration_resistance_is_progression_and_late_prostate_lines_are_lines() {
        assert_eq!(
            outcomes("ADT + docetaxel x6 (2021) -> mCRPC 02/2023 -> cabazitaxel since 08/2026"),
            pairs(&[("docetaxel", "progression"), ("cabazitaxel", "ongoing")])
        );
    }

    /// A tumour marker or a size written falling or rising with an arrow
    /// is the line's response or progression; other values (`Hgb 12 ->
    /// 9`) and small changes are none.
    #[test]
    fn a_marker_or_size_falling_or_rising_is_an_outcome() {
        assert_eq!(
            outcomes("olaparib 300 mg bid from 09/2024 (PSA 48 -> 3.1)"),
            pairs(&[("olaparib", "response")])
        );
        assert_eq!(
            outcomes("belzutifan daily from 03/2025 - largest lesion 3.1 -> 2.6 cm"),
            pairs(&[("belzutifan", "response")])
        );
        assert_eq!(
            outcomes("niraparib maintenance 2022-2025, CA-125 12 -> 164"),
            pairs(&[("niraparib", "progression")])
        );
        assert_eq!(
            outcomes("Adjuvant CAPOX x 8, Hgb 12.1 -> 9.0, completed"),
            pairs(&[("CAPOX", "response")])
        );
        assert_eq!(
            outcomes("3L 177Lu-PSMA-617 x6, PSA ↓ 55%."),
            pairs(&[("177Lu-PSMA", "response")])
        );
        assert_eq!(
            outcomes("FOLFOX from 03/2026, CEA 5.0 -> 4.7"),
            pairs(&[("FOLFOX", "ongoing")])
        );
    }

    /// The line still given (written as current: `since`, `continues`, a
    /// cycle label) takes no interim response or stable disease as its
    /// outcome: it is ongoing until it ends. An earlier line, a line
    /// written without a current word, or one written as completed keeps
    /// its response; a progression always wins.
    #[test]
    fn an_interim_response_on_the_line_still_given_is_ongoing() {
        assert_eq!(
            outcomes("Osimertinib since 06/2024; CT 01/2025: partial response."),
            pairs(&[("Osimertinib", "ongoing")])
        );
        assert_eq!(
            outcomes("Pembrolizumab C6 today. Restaging CT: stable disease."),
            pairs(&[("Pembrolizumab", "ongoing")])
        );
        assert_eq!(
            outcomes("Osimertinib 06/2024; CT 01/2025: partial response."),
            pairs(&[("Osimertinib", "response")])
        );
        assert_eq!(
            outcomes(
                "FOLFOX x12 completed 2023, CT: complete response. Capecitabine maintenance since 2024, CT stable."
            ),
            pairs(&[("FOLFOX", "response"), ("Capecitabine", "ongoing")])
        );
        assert_eq!(
            outcomes("Olaparib since 2023; MRI 04/2025: progression."),
            pairs(&[("Olaparib", "progression")])
        );
    }

    /// A course written as completed (`finished`, `completed`) with no
    /// outcome is a response, as a completed curative course is; a purpose
    /// (`to complete 6 cycles`) is not a completion.
    #[test]
    fn a_course_written_as_completed_is_a_response() {
        assert_eq!(
            outcomes("I finished my TC chemo in July. Now on letrozole since 08/2026."),
            pairs(&[("TC", "response"), ("letrozole", "ongoing")])
        );
        assert_eq!(
            outcomes("ABVD from 01/2026, to complete 6 cycles; C3D1 given today."),
            pairs(&[("ABVD", "ongoing")])
        );
    }

    /// An outcome word after a risk, a hope or a watch (`lowers the chance
    /// of recurrence`, `watch for progression`) is no event, and a rising
    /// value travels to a line only when a tumour marker or an assessment
    /// reports it (`TSH 6.8 (rising)` is none, `CEA rising` is).
    #[test]
    fn risks_watches_and_other_rising_values_are_no_outcome() {
        assert_eq!(
            outcomes("Ribociclib + letrozole since 10/2026, which lowers the chance of recurrence."),
            pairs(&[("Ribociclib + letrozole", "ongoing")])
        );
        assert_eq!(
            outcomes("Adjuvant cisplatin with RT, completed 09/2025.\nTSH 6.8 (rising), recheck."),
            pairs(&[("cisplatin", "response")])
        );
        assert_eq!(
            outcomes("FOLFOX since 03/2026.\nCEA rising, 12 -> 48."),
            pairs(&[("FOLFOX", "progression")])
        );
    }
}
