//! ConText-style classification of what a reply says about a treatment or a
//! test: planned, negated, historical, conditional or hypothetical.
//!
//! A trigger phrase (`no role for`, `is not indicated`, `s/p`, `on
//! progression`, `would have`) opens a scope forward, backward or both. A
//! scope ends at the clause's edge (the caller splits clauses at `.`, `;`,
//! line ends and bullets), at a terminator word (`but`, `so`, `recommend`,
//! `now`), at a colon or parenthesis, at another trigger, and at a comma or
//! `and`/`or` — except that a negation runs on through a list of treatments
//! (`no trastuzumab, pertuzumab or T-DM1`) and a condition runs on to the end
//! of its clause (`if HER2 is positive, add trastuzumab`). A backward trigger
//! right after a colon reaches the label before it (`HER2-targeted therapy:
//! not recommended`). Pseudo-triggers (`no change`, `with or without`, `not
//! only`) contain trigger words but open no scope. The nearest trigger whose
//! scope covers a mention decides its status; a mention no scope covers is
//! planned.
//!
//! Every phrase is data (the ontology file's `context` block); tokens are
//! the words of [`super::words`] plus `,` `:` `(` `)` as tokens of their own.

use std::collections::HashMap;

/// What a reply says about one mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Part of the plan.
    Planned,
    /// Ruled out (`no role for X`, `X is not indicated`).
    Negated,
    /// Already done or under way (`s/p X`, `after her X`, `progressed on X`).
    Historical,
    /// Only if something happens (`on progression X`, `if …, X`).
    Conditional,
    /// Imagined, not proposed (`would have been X`).
    Hypothetical,
}

impl Status {
    pub fn parse(text: &str) -> Option<Self> {
        Some(match text {
            "negated" => Status::Negated,
            "historical" => Status::Historical,
            "conditional" => Status::Conditional,
            "hypothetical" => Status::Hypothetical,
            _ => return None,
        })
    }
}

/// How far a trigger reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Forward,
    Backward,
    Both,
}

/// A trigger phrase's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trigger {
    pub status: Status,
    pub direction: Direction,
}

/// The token an arrow (`→`, `->`, `=>`) becomes: a step of a sequence.
pub const ARROW: &str = "→";

/// Splits text into tokens: lower-case words, `,` `:` `(` `)` alone, and
/// arrows (`→`, `->`, `=>`) as [`ARROW`].
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous = ' ';
    for character in text.chars() {
        let before = std::mem::replace(&mut previous, character);
        if character.is_alphanumeric() {
            word.extend(character.to_lowercase());
            continue;
        }
        if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        if matches!(character, ',' | ':' | '(' | ')') {
            out.push(character.to_string());
        }
        if character == '→' || (character == '>' && matches!(before, '-' | '=')) {
            out.push(ARROW.to_string());
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

fn is_boundary(token: &str) -> bool {
    matches!(token, ":" | "(" | ")")
}

/// An arrow steps from one part of a sequence to the next (`d/c nivo → 2L
/// cabozantinib`): it ends a negation or a history, not a condition.
fn is_arrow(token: &str) -> bool {
    token == ARROW
}

/// A list's joining word: `plus` joins treatments like `and`
/// (`prostatectomy plus node dissection is an alternative`).
fn is_connector(token: &str) -> bool {
    matches!(token, "," | "and" | "or" | "nor" | "plus")
}

/// Phrases matched leftmost-longest on tokens.
#[derive(Debug, Clone)]
pub struct Phrases<T> {
    by_first: HashMap<String, Vec<(Vec<String>, T)>>,
}

impl<T> Default for Phrases<T> {
    fn default() -> Self {
        Self {
            by_first: HashMap::new(),
        }
    }
}

impl<T: Clone> Phrases<T> {
    pub fn insert(&mut self, phrase: &str, value: T) {
        let phrase = tokens(phrase);
        let Some(first) = phrase.first().cloned() else {
            return;
        };
        let list = self.by_first.entry(first).or_default();
        list.push((phrase, value));
        list.sort_by_key(|(phrase, _)| std::cmp::Reverse(phrase.len()));
    }

    /// Every match as (start, end, value), leftmost-longest, not overlapping.
    pub fn find(&self, tokens: &[String]) -> Vec<(usize, usize, T)> {
        let mut found = Vec::new();
        let mut index = 0;
        while index < tokens.len() {
            match self.longest_at(tokens, index) {
                Some((length, value)) => {
                    found.push((index, index + length, value.clone()));
                    index += length;
                }
                None => index += 1,
            }
        }
        found
    }

    /// The longest phrase starting at `index`, as (length, value).
    pub fn longest_at(&self, tokens: &[String], index: usize) -> Option<(usize, &T)> {
        self.by_first.get(tokens.get(index)?).and_then(|candidates| {
            candidates
                .iter()
                .find(|(phrase, _)| {
                    tokens.len() - index >= phrase.len() && tokens[index..index + phrase.len()] == phrase[..]
                })
                .map(|(phrase, value)| (phrase.len(), value))
        })
    }

    pub fn contains(&self, tokens: &[String]) -> bool {
        (0..tokens.len()).any(|index| self.longest_at(tokens, index).is_some())
    }

    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.by_first.values().flatten().map(|(_, value)| value)
    }
}

/// The trigger, pseudo-trigger and terminator phrases.
#[derive(Debug, Clone, Default)]
pub struct ContextRules {
    pub triggers: Phrases<Trigger>,
    pub pseudo: Phrases<()>,
    pub terminators: Phrases<()>,
    /// Triggers that name a length of time (`weeks of`): they open a scope
    /// only after an anchor (`within 8 weeks of surgery`, `after 6 months
    /// of FOLFOX`); alone they give a plan its length (`five weeks of
    /// radiotherapy`).
    pub durations: Phrases<()>,
    /// Words that make a following duration a point in time (`within`, `after`).
    pub duration_anchors: Phrases<()>,
}

impl ContextRules {
    /// The status of each `target` span of `tokens`; `items` are the spans
    /// of treatment mentions (what a negated list runs through).
    pub fn classify(
        &self,
        tokens: &[String],
        targets: &[(usize, usize)],
        items: &[(usize, usize)],
    ) -> Vec<Status> {
        let triggers = self.triggers_in(tokens);
        let terminator_at: Vec<Option<usize>> = (0..tokens.len())
            .map(|index| {
                self.terminators
                    .longest_at(tokens, index)
                    .map(|(length, ())| length)
            })
            .collect();
        let starts_item = |index: usize| items.iter().any(|(start, _)| *start == index);
        let ends_item = |index: usize| items.iter().any(|(_, end)| *end == index);
        let in_item = |index: usize| items.iter().any(|(start, end)| (*start..*end).contains(&index));
        let trigger_starts: Vec<usize> = triggers.iter().map(|(start, _, _)| *start).collect();
        let trigger_ends: Vec<usize> = triggers.iter().map(|(_, end, _)| *end).collect();
        targets
            .iter()
            .map(|&(target_start, target_end)| {
                let mut best: Option<(usize, Status)> = None;
                for &(start, end, trigger) in &triggers {
                    let forward = matches!(trigger.direction, Direction::Forward | Direction::Both);
                    let backward = matches!(trigger.direction, Direction::Backward | Direction::Both);
                    let distance = if forward && target_start >= end {
                        let scope_end = forward_end(
                            tokens,
                            end,
                            trigger.status,
                            &terminator_at,
                            &trigger_starts,
                            &starts_item,
                        );
                        (target_start < scope_end).then(|| target_start - end)
                    } else if backward && target_end <= start {
                        let scope_start = backward_start(
                            tokens,
                            start,
                            trigger.status,
                            &terminator_at,
                            &trigger_ends,
                            &ends_item,
                            &in_item,
                        );
                        (target_start >= scope_start).then(|| start - target_end)
                    } else {
                        None
                    };
                    if let Some(distance) = distance
                        && best.is_none_or(|(nearest, _)| distance < nearest)
                    {
                        best = Some((distance, trigger.status));
                    }
                }
                best.map_or(Status::Planned, |(_, status)| status)
            })
            .collect()
    }

    /// Trigger matches not covered by a pseudo-trigger; a duration counts
    /// only when an anchor stands within three words before it.
    fn triggers_in(&self, tokens: &[String]) -> Vec<(usize, usize, Trigger)> {
        let pseudo = self.pseudo.find(tokens);
        let anchors = self.duration_anchors.find(tokens);
        self.triggers
            .find(tokens)
            .into_iter()
            .filter(|(start, end, _)| {
                !pseudo
                    .iter()
                    .any(|(pseudo_start, pseudo_end, ())| start < pseudo_end && pseudo_start < end)
            })
            .filter(|(start, end, _)| {
                self.durations
                    .longest_at(tokens, *start)
                    .map(|(length, ())| length)
                    != Some(end - start)
                    || anchors
                        .iter()
                        .any(|(_, anchor_end, ())| anchor_end <= start && start - anchor_end <= 3)
            })
            .collect()
    }
}

/// Where a forward scope starting at `from` ends (exclusive).
fn forward_end(
    tokens: &[String],
    from: usize,
    status: Status,
    terminator_at: &[Option<usize>],
    trigger_starts: &[usize],
    starts_item: &dyn Fn(usize) -> bool,
) -> usize {
    let mut index = from;
    let mut seen_item = false;
    // `At progression: X`, `Avoid: X` — a trigger right before a colon
    // reaches the text after it.
    if tokens.get(from).is_some_and(|token| token == ":") {
        index += 1;
    }
    while index < tokens.len() {
        let token = tokens[index].as_str();
        // An aside in parentheses does not end the scope around it.
        if token == "(" {
            match (index..tokens.len()).find(|&close| tokens[close] == ")") {
                Some(close) => {
                    index = close + 1;
                    continue;
                }
                None => return index,
            }
        }
        // A condition runs past the colon that closes it (`If oligoprogression: SBRT`).
        if token == ":" && matches!(status, Status::Conditional | Status::Hypothetical) {
            index += 1;
            continue;
        }
        // A negated verb is one phrase with its negation (`do not plan to
        // continue X`, `not recommend X`): the terminator right after the
        // trigger is inside the scope.
        if index == from
            && status == Status::Negated
            && let Some(length) = terminator_at[index]
        {
            index += length;
            continue;
        }
        if is_arrow(token) && matches!(status, Status::Negated | Status::Historical) {
            return index;
        }
        if terminator_at[index].is_some()
            || is_boundary(token)
            || (index > from && trigger_starts.contains(&index))
        {
            return index;
        }
        if is_connector(token) {
            let continues = match status {
                Status::Conditional | Status::Hypothetical => true,
                // Before its first treatment a negation runs through the
                // verbs it governs (`not be continued or replaced by
                // another checkpoint inhibitor`).
                Status::Negated if !seen_item => {
                    matches!(token, "or" | "nor")
                        && item_ahead(tokens, index, terminator_at, trigger_starts, starts_item)
                }
                Status::Negated => seen_item && item_follows(tokens, index, starts_item),
                Status::Historical => token != "," && seen_item && item_follows(tokens, index, starts_item),
                Status::Planned => false,
            };
            if !continues {
                return index;
            }
        }
        seen_item |= starts_item(index);
        index += 1;
    }
    index
}

/// The next word after a run of connectors.
fn next_word(tokens: &[String], index: usize) -> Option<usize> {
    (index + 1..tokens.len()).find(|&next| !is_connector(&tokens[next]))
}

/// How many words may stand between a list's connector and its next item
/// (`or any curative resection`).
const LIST_GAP: usize = 2;

/// Whether a treatment starts within [`LIST_GAP`] words after the connectors at `index`.
fn item_follows(tokens: &[String], index: usize, starts_item: &dyn Fn(usize) -> bool) -> bool {
    next_word(tokens, index).is_some_and(|next| {
        (next..tokens.len().min(next + LIST_GAP + 1))
            .take_while(|&position| !is_boundary(&tokens[position]) && !is_connector(&tokens[position]))
            .any(starts_item)
    })
}

/// How far past a connector a negation that has reached no treatment yet
/// looks for the one its verbs govern.
const VERB_GAP: usize = 6;

/// Whether a treatment starts within [`VERB_GAP`] words after the connector
/// at `index`, before any boundary, terminator or other trigger.
fn item_ahead(
    tokens: &[String],
    index: usize,
    terminator_at: &[Option<usize>],
    trigger_starts: &[usize],
    starts_item: &dyn Fn(usize) -> bool,
) -> bool {
    (index + 1..tokens.len().min(index + 1 + VERB_GAP))
        .take_while(|&position| {
            !is_boundary(&tokens[position])
                && !is_arrow(&tokens[position])
                && tokens[position] != ","
                && terminator_at[position].is_none()
                && !trigger_starts.contains(&position)
        })
        .any(starts_item)
}

/// Where a backward scope ending at `before` starts (inclusive).
fn backward_start(
    tokens: &[String],
    before: usize,
    status: Status,
    terminator_at: &[Option<usize>],
    trigger_ends: &[usize],
    ends_item: &dyn Fn(usize) -> bool,
    in_item: &dyn Fn(usize) -> bool,
) -> usize {
    let mut index = before;
    let mut seen_item = false;
    while index > 0 {
        let previous = index - 1;
        let token = tokens[previous].as_str();
        // An aside in parentheses does not end the scope around it
        // (`Adjuvant osimertinib (ADAURA) does not apply`).
        if token == ")" {
            match (0..previous).rev().find(|&open| tokens[open] == "(") {
                Some(open) => {
                    index = open;
                    continue;
                }
                None => return index,
            }
        }
        if token == ":" && previous + 1 == before {
            // `X: not recommended` — the verdict on the label before the colon.
            index = previous;
            continue;
        }
        if token == ":" && status == Status::Negated && label_before(tokens, previous) {
            // `Immunotherapy: atezolizumab not indicated` rules out the
            // category its line is labelled with.
            return 0;
        }
        // `FOLFOX + pmab → nivo maint → PD`: the history behind an arrow
        // reaches every step before it; a negation stops at the arrow.
        if is_arrow(token) {
            if status == Status::Historical {
                index = previous;
                continue;
            }
            return index;
        }
        if is_boundary(token)
            || ends_terminator(terminator_at, previous)
            || (index < before && trigger_ends.contains(&index))
        {
            return index;
        }
        if is_connector(token) {
            // A list of treatments before the trigger shares its scope
            // (`T-DXd or ramucirumab + paclitaxel at progression`).
            let continues = status != Status::Historical
                && seen_item
                && (0..previous)
                    .rev()
                    .find(|&back| !is_connector(&tokens[back]))
                    .is_some_and(|back| ends_item(back + 1));
            if !continues {
                return index;
            }
        }
        // Once past a treatment, the scope is the list it belongs to: the
        // first other word ends it (`FOLFIRI + bev now, with regorafenib on
        // progression` leaves FOLFIRI and bev planned).
        // One word may join two treatments of one phrase (`adjuvant-only CAPOX`).
        let joins_two = previous > 0 && in_item(previous - 1);
        if seen_item && !is_connector(token) && !in_item(previous) && !joins_two {
            return index;
        }
        seen_item |= ends_item(index);
        index = previous;
    }
    0
}

/// Whether the colon at `colon` closes a short label at the clause's start.
fn label_before(tokens: &[String], colon: usize) -> bool {
    colon <= 3
        && tokens[..colon]
            .iter()
            .all(|token| !is_boundary(token) && token != ",")
}

fn ends_terminator(terminator_at: &[Option<usize>], index: usize) -> bool {
    terminator_at
        .iter()
        .enumerate()
        .take(index + 1)
        .any(|(start, length)| length.is_some_and(|length| start + length == index + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> ContextRules {
        let mut rules = ContextRules::default();
        let trigger = |status, direction| Trigger { status, direction };
        for phrase in ["no", "not", "no role for", "rather than", "without", "avoid"] {
            rules
                .triggers
                .insert(phrase, trigger(Status::Negated, Direction::Forward));
        }
        for phrase in ["is not indicated", "not recommended", "is contraindicated"] {
            rules
                .triggers
                .insert(phrase, trigger(Status::Negated, Direction::Backward));
        }
        for phrase in ["s p", "following the", "after her", "progressed on", "had"] {
            rules
                .triggers
                .insert(phrase, trigger(Status::Historical, Direction::Forward));
        }
        for phrase in ["if", "should she"] {
            rules
                .triggers
                .insert(phrase, trigger(Status::Conditional, Direction::Forward));
        }
        rules
            .triggers
            .insert("on progression", trigger(Status::Conditional, Direction::Both));
        rules
            .triggers
            .insert("would have", trigger(Status::Hypothetical, Direction::Forward));
        rules
            .triggers
            .insert("→ pd", trigger(Status::Historical, Direction::Backward));
        rules
            .triggers
            .insert("weeks of", trigger(Status::Historical, Direction::Forward));
        rules.durations.insert("weeks of", ());
        for anchor in ["within", "after"] {
            rules.duration_anchors.insert(anchor, ());
        }
        for phrase in ["no change", "with or without", "not only"] {
            rules.pseudo.insert(phrase, ());
        }
        for phrase in ["but", "so", "otherwise", "recommend", "now"] {
            rules.terminators.insert(phrase, ());
        }
        rules
    }

    /// The status of every treatment word (from a fixed list) in `text`.
    fn statuses(text: &str) -> Vec<(String, Status)> {
        let treatments = [
            "trastuzumab",
            "pertuzumab",
            "tdm1",
            "surgery",
            "crt",
            "folfox",
            "folfiri",
            "mastectomy",
            "lobectomy",
            "cisplatin",
            "braf",
            "mek",
            "rt",
            "pembrolizumab",
            "chemotherapy",
            "docetaxel",
            "ramucirumab",
        ];
        let tokens = tokens(text);
        let items: Vec<(usize, usize)> = tokens
            .iter()
            .enumerate()
            .filter(|(_, token)| treatments.contains(&token.as_str()))
            .map(|(index, _)| (index, index + 1))
            .collect();
        let found = rules().classify(&tokens, &items, &items);
        items
            .iter()
            .zip(found)
            .map(|((start, _), status)| (tokens[*start].clone(), status))
            .collect()
    }

    fn status_of(text: &str, word: &str) -> Status {
        statuses(text)
            .into_iter()
            .find(|(token, _)| token == word)
            .map(|(_, status)| status)
            .unwrap_or_else(|| panic!("{word} not in {text}"))
    }

    #[test]
    fn tokens_keep_list_and_label_punctuation() {
        assert_eq!(
            tokens("T-DM1, (s/p): x"),
            ["t", "dm1", ",", "(", "s", "p", ")", ":", "x"]
        );
    }

    #[test]
    fn negation_reaches_forward_through_a_list_of_treatments() {
        let text = "no trastuzumab, pertuzumab or tdm1";
        assert!(
            statuses(text)
                .iter()
                .all(|(_, status)| *status == Status::Negated)
        );
    }

    #[test]
    fn negation_stops_at_a_comma_that_does_not_continue_a_list() {
        assert_eq!(status_of("not a surgical candidate, crt", "crt"), Status::Planned);
        assert_eq!(
            status_of("not a surgical candidate and crt is best", "crt"),
            Status::Planned
        );
        assert_eq!(
            status_of("not a surgical candidate so crt", "crt"),
            Status::Planned
        );
        assert_eq!(status_of("no surgery or any further rt", "rt"), Status::Negated);
    }

    #[test]
    fn negation_reaches_backward_and_across_a_label_colon() {
        assert_eq!(
            status_of("trastuzumab is not indicated", "trastuzumab"),
            Status::Negated
        );
        assert_eq!(
            status_of("trastuzumab: not recommended", "trastuzumab"),
            Status::Negated
        );
        assert_eq!(
            status_of("trastuzumab and pertuzumab are not recommended", "trastuzumab"),
            Status::Negated
        );
        assert_eq!(
            status_of("folfox now, trastuzumab is not indicated", "folfox"),
            Status::Planned
        );
        assert_eq!(
            status_of("plan: folfox: trastuzumab is not indicated", "folfox"),
            Status::Planned
        );
    }

    #[test]
    fn rather_than_negates_what_follows_only() {
        let found = statuses("crt rather than surgery");
        assert_eq!(
            found,
            [
                ("crt".into(), Status::Planned),
                ("surgery".into(), Status::Negated)
            ]
        );
    }

    #[test]
    fn history_is_not_the_plan_and_ends_at_a_comma() {
        assert_eq!(status_of("s/p mastectomy", "mastectomy"), Status::Historical);
        assert_eq!(
            status_of("following the R0 lobectomy, cisplatin", "lobectomy"),
            Status::Historical
        );
        assert_eq!(
            status_of("following the R0 lobectomy, cisplatin", "cisplatin"),
            Status::Planned
        );
        assert_eq!(
            status_of("progressed on folfox now folfiri", "folfiri"),
            Status::Planned
        );
        assert_eq!(
            status_of("had lobectomy and cisplatin", "cisplatin"),
            Status::Historical
        );
    }

    #[test]
    fn conditions_cover_their_consequence_to_the_clause_end() {
        assert_eq!(
            status_of("if HER2 is positive, add trastuzumab", "trastuzumab"),
            Status::Conditional
        );
        assert_eq!(
            status_of("folfiri, otherwise if needed crt", "folfiri"),
            Status::Planned
        );
        assert_eq!(
            status_of("switch to braf and mek on progression", "braf"),
            Status::Conditional
        );
        assert_eq!(
            status_of("on progression, folfiri", "folfiri"),
            Status::Conditional
        );
        assert_eq!(
            status_of("should she progress, docetaxel", "docetaxel"),
            Status::Conditional
        );
        assert_eq!(
            status_of("if margins are involved rt but folfox now", "folfox"),
            Status::Planned
        );
    }

    #[test]
    fn a_trigger_before_a_colon_reaches_past_it() {
        assert_eq!(
            status_of("on progression: folfiri", "folfiri"),
            Status::Conditional
        );
        assert_eq!(
            status_of("avoid: pembrolizumab", "pembrolizumab"),
            Status::Negated
        );
    }

    #[test]
    fn parenthetical_asides_do_not_end_a_scope() {
        assert_eq!(
            status_of("adjuvant folfox (per IDEA) is not indicated", "folfox"),
            Status::Negated
        );
        assert_eq!(status_of("no (as discussed) surgery", "surgery"), Status::Negated);
        assert_eq!(status_of("folfox (not rt)", "folfox"), Status::Planned);
        assert_eq!(
            status_of("if she progresses: docetaxel", "docetaxel"),
            Status::Conditional
        );
    }

    #[test]
    fn a_list_before_a_backward_condition_shares_it() {
        assert_eq!(
            status_of("folfiri or docetaxel on progression", "folfiri"),
            Status::Conditional
        );
        assert_eq!(
            status_of("crt now, folfiri on progression", "crt"),
            Status::Planned
        );
        assert_eq!(
            status_of("folfox now with docetaxel on progression", "folfox"),
            Status::Planned
        );
    }

    #[test]
    fn a_negation_in_a_labelled_line_rules_out_the_label() {
        assert_eq!(
            status_of("chemotherapy: pembrolizumab is not indicated", "chemotherapy"),
            Status::Negated
        );
        assert_eq!(
            status_of("plan now is crt: pembrolizumab is not indicated", "crt"),
            Status::Planned
        );
    }

    #[test]
    fn plus_joins_a_list_like_and() {
        assert_eq!(
            status_of("mastectomy plus surgery is contraindicated", "mastectomy"),
            Status::Negated
        );
        assert_eq!(
            status_of("no folfox plus cisplatin", "cisplatin"),
            Status::Negated
        );
    }

    #[test]
    fn pseudo_triggers_open_no_scope() {
        assert_eq!(
            status_of("no change to the plan, continue folfox", "folfox"),
            Status::Planned
        );
        assert_eq!(
            status_of("docetaxel with or without ramucirumab", "ramucirumab"),
            Status::Planned
        );
        assert_eq!(
            status_of("not only pembrolizumab", "pembrolizumab"),
            Status::Planned
        );
    }

    #[test]
    fn an_arrow_ends_a_negation_and_history_reaches_back_across_arrows() {
        assert_eq!(tokens("a -> b => c → d"), ["a", "→", "b", "→", "c", "→", "d"]);
        assert_eq!(status_of("no folfox → folfiri", "folfox"), Status::Negated);
        assert_eq!(status_of("no folfox → folfiri", "folfiri"), Status::Planned);
        let text = "1L folfox + cisplatin → docetaxel maint → PD; rt";
        for word in ["folfox", "cisplatin", "docetaxel"] {
            assert_eq!(status_of(text, word), Status::Historical, "{word}");
        }
        // A condition runs on past an arrow.
        assert_eq!(status_of("if PD → folfiri", "folfiri"), Status::Conditional);
    }

    #[test]
    fn a_duration_is_a_point_in_time_only_after_an_anchor() {
        assert_eq!(status_of("five weeks of rt", "rt"), Status::Planned);
        assert_eq!(
            status_of("folfox within six weeks of surgery", "surgery"),
            Status::Historical
        );
        assert_eq!(
            status_of("docetaxel after 12 weeks of folfox", "folfox"),
            Status::Historical
        );
    }

    #[test]
    fn a_negation_takes_its_verbs_with_it() {
        // The terminator right after a negation is its verb.
        assert_eq!(
            status_of("we do not recommend surgery", "surgery"),
            Status::Negated
        );
        // Before its first treatment a negation runs through coordinated verbs.
        assert_eq!(
            status_of(
                "not be continued or swapped for another pembrolizumab",
                "pembrolizumab"
            ),
            Status::Negated
        );
        assert_eq!(
            status_of("not continued and folfox started", "folfox"),
            Status::Planned
        );
        assert_eq!(
            status_of("not tolerated or, later, folfox", "folfox"),
            Status::Planned
        );
    }

    #[test]
    fn hypotheticals_and_the_nearest_trigger() {
        assert_eq!(
            status_of("would have been surgery", "surgery"),
            Status::Hypothetical
        );
        // The nearest trigger decides: `avoid` is nearer than `s/p`.
        assert_eq!(
            status_of("s/p surgery avoid chemotherapy", "chemotherapy"),
            Status::Negated
        );
        assert_eq!(status_of("(not rt) folfox", "folfox"), Status::Planned);
    }
}
