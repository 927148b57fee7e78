//! Families A and C: flip a biomarker's status, or strip every mention of it.
//!
//! Mentions are found by alias (`HER2`, `HER-2/neu`, `ERBB2`; `ER`,
//! `estrogen receptor`; `PR`, `PgR`; `hormone receptor`/`HR` for ER with PR;
//! `PD-L1`), grouped when joined (`ER/PR`, `ER and PR`), and read with the
//! status that follows (`-positive`, `+`, `3+`, `IHC 0`, `2+, FISH
//! amplified`, `90%`, `TPS 60%`, `Allred 8`) or precedes them (`positive
//! for ER`). A mention whose status cannot be read, and any wording that
//! presupposes the status (a HER2-targeted drug, `triple-negative`,
//! endocrine therapy), makes the case not applicable.

use std::ops::Range;
use std::sync::OnceLock;

use regex::Regex;

use super::{Chart, FactChange, NotApplicable, Outcome, re};
use crate::text;

/// The markers this module edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Her2,
    Er,
    Pr,
    PdL1,
    /// Hormone receptor: ER and PR together.
    Hr,
}

impl Marker {
    fn parse(name: &str) -> Option<Marker> {
        match name.to_ascii_uppercase().as_str() {
            "HER2" => Some(Marker::Her2),
            "ER" => Some(Marker::Er),
            "PR" => Some(Marker::Pr),
            "PD-L1" => Some(Marker::PdL1),
            _ => None,
        }
    }

    fn fact_name(self) -> &'static str {
        match self {
            Marker::Her2 => "HER2",
            Marker::Er | Marker::Hr => "ER",
            Marker::Pr => "PR",
            Marker::PdL1 => "PD-L1",
        }
    }

    fn covered_by(self, targets: &[Marker]) -> bool {
        match self {
            Marker::Hr => targets.contains(&Marker::Er) && targets.contains(&Marker::Pr),
            other => targets.contains(&other),
        }
    }
}

/// Words that presuppose a marker's status, so it cannot be flipped or
/// stripped without contradicting the chart.
fn presupposing(marker: Marker) -> &'static [&'static str] {
    match marker {
        Marker::Her2 => &[
            "trastuzumab",
            "pertuzumab",
            "herceptin",
            "t-dm1",
            "t-dxd",
            "lapatinib",
            "neratinib",
            "tucatinib",
            "margetuximab",
            "anti-her2",
            "triple-negative",
            "triple negative",
            "tnbc",
            "her2-enriched",
            "her2-low",
        ],
        Marker::Er | Marker::Pr | Marker::Hr => &[
            "tamoxifen",
            "letrozole",
            "anastrozole",
            "exemestane",
            "fulvestrant",
            "aromatase inhibitor",
            "endocrine therapy",
            "hormonal therapy",
            "hormone therapy",
            "palbociclib",
            "ribociclib",
            "abemaciclib",
            "elacestrant",
            "ovarian suppression",
            "luminal",
            "triple-negative",
            "triple negative",
            "tnbc",
        ],
        Marker::PdL1 => &[
            "pembrolizumab",
            "nivolumab",
            "atezolizumab",
            "durvalumab",
            "cemiplimab",
            "ipilimumab",
            "tislelizumab",
            "immunotherapy",
            "checkpoint inhibitor",
            "keytruda",
            "opdivo",
        ],
    }
}

fn alias_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"(?x)
        (?P<her2>\b(?i:HER[-\ ]?2(?:/neu)?|ERBB2|c-erbB-2)(?:\b|$))
        |(?P<pdl1>\b(?i:PD-?L1)\b)
        |(?P<er>\b(?:ER|ERα|[Ee]strogen[-\ ][Rr]eceptors?|[Oo]estrogen[-\ ][Rr]eceptors?)\b)
        |(?P<pr>\b(?:PR|PgR|[Pp]rogesterone[-\ ][Rr]eceptors?)\b)
        |(?P<hr>\b(?:HR|[Hh]ormone[-\ ][Rr]eceptors?)\b)",
    )
}

/// One alias occurrence.
#[derive(Debug, Clone)]
struct Alias {
    marker: Marker,
    range: Range<usize>,
}

fn aliases(text: &str) -> Vec<Alias> {
    let mut out = Vec::new();
    for captures in alias_regex().captures_iter(text) {
        let (marker, found) = if let Some(found) = captures.name("her2") {
            (Marker::Her2, found)
        } else if let Some(found) = captures.name("pdl1") {
            (Marker::PdL1, found)
        } else if let Some(found) = captures.name("er") {
            (Marker::Er, found)
        } else if let Some(found) = captures.name("pr") {
            (Marker::Pr, found)
        } else if let Some(found) = captures.name("hr") {
            (Marker::Hr, found)
        } else {
            continue;
        };
        let range = found.range();
        let before = &text[..range.start];
        let after = &text[range.end..];
        // Not a marker: "a PR" / "partial response (PR)", "HR 88", "the ER".
        let skip = match marker {
            Marker::Pr => {
                before.ends_with("a ") || before.to_ascii_lowercase().ends_with("partial response (")
            }
            Marker::Hr => {
                after.trim_start().starts_with(|c: char| c.is_ascii_digit()) || before.ends_with("the ")
            }
            Marker::Er => before.ends_with("the ") || before.ends_with("The ") || before.ends_with("in "),
            _ => false,
        };
        if !skip {
            out.push(Alias { marker, range });
        }
    }
    out
}

/// A group of aliases joined by `/`, `,`, `and` or `&`, and the status read
/// around it.
#[derive(Debug, Clone)]
struct Mention {
    markers: Vec<Marker>,
    /// From the first alias (or a preceding `positive for`) to the last
    /// status token.
    range: Range<usize>,
    tokens: Vec<Token>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Positive,
    Negative,
    Equivocal,
    /// PD-L1 1–49%, or "low" where it is ambiguous.
    Intermediate,
}

#[derive(Debug, Clone, PartialEq)]
enum TokenKind {
    /// positive / negative words (`pos`, `neg` included).
    Word(Status),
    /// `+` or `-` right after the alias.
    Sign(Status),
    Amplified(bool),
    Amplification(bool),
    Overexpressed(bool),
    Ihc(u8),
    Percent(f64),
    Allred(u8),
    High,
    Low,
    Equivocal,
    Modifier,
    Ish,
}

#[derive(Debug, Clone)]
struct Token {
    kind: TokenKind,
    range: Range<usize>,
}

fn status_regex() -> &'static Regex {
    static CELL: OnceLock<Regex> = OnceLock::new();
    re(
        &CELL,
        r"(?xi)^(?:
          (?P<neg_amp>non-?amplified|not\ amplified|no\ amplification|without\ amplification)
         |(?P<amp>amplified)
         |(?P<ampn>amplification)
         |(?P<notover>not\ overexpressed|no\ overexpression)
         |(?P<over>overexpressed|overexpression)
         |(?P<pos>positive|pos)\b
         |(?P<neg>negative|neg)\b
         |(?P<equiv>equivocal|indeterminate|borderline)\b
         |(?P<high>high)\b
         |(?P<low>low)\b
         |(?P<pct>[<>≥≤]?\ ?\d{1,3}(?:\.\d+)?\ ?%)
         |(?P<ihc>[0-3]\+|0\b)
         |(?P<number>\d{1,3}\b)
         |(?P<notexp>not\ expressed|no\ expression)
         |(?P<clone>\((?:22C3|SP263|SP142|28-8|clone\ [^)]*)\))
         |allred(?:\ score)?(?:\ of)?\ (?P<allred>[0-8])\b
         |(?P<mod>strongly|weakly|focally|diffusely|moderately)\b
         |(?P<ish>fish|sish|cish|ish|dual-probe\ ish)\b
         |(?P<filler>status|is|was|were|are|by|ihc|immunohistochemistry|expression|expressing|
             tumou?r\ proportion\ score|tps|cps|combined\ positive\ score|of|score|fish|testing|tested|
             test|showed|shows|demonstrated|revealed|with|receptors?|on|the|both|also|at|results?|
             staining|stain|:|\(|\)|\u{2013}|in|and|cells|tumou?r\ cells)\b?
        )",
    )
}

/// Reads the status tokens after `end` (and a `positive for` before `start`).
fn read_status(text: &str, start: usize, end: usize) -> (Range<usize>, Vec<Token>) {
    let mut tokens = Vec::new();
    let mut cursor = end;
    let mut last_end = end;
    // A sign glued to the alias: HER2+, ER-, HER2–.
    let after = &text[end..];
    if let Some(sign) = after.chars().next() {
        let next = after[sign.len_utf8()..].chars().next();
        let glued_word = next.is_some_and(|c| c.is_alphanumeric());
        match sign {
            '+' if !glued_word => {
                tokens.push(Token {
                    kind: TokenKind::Sign(Status::Positive),
                    range: end..end + 1,
                });
                cursor = end + 1;
                last_end = cursor;
            }
            '-' | '−' | '–' if !glued_word => {
                tokens.push(Token {
                    kind: TokenKind::Sign(Status::Negative),
                    range: end..end + sign.len_utf8(),
                });
                cursor = end + sign.len_utf8();
                last_end = cursor;
            }
            _ => {}
        }
    }
    if tokens.is_empty() {
        loop {
            let rest = &text[cursor..];
            let trimmed = rest.trim_start_matches([' ', '\t', '-']);
            // A comma continues the mention only before an ISH result.
            let trimmed = match trimmed.strip_prefix(',') {
                Some(after_comma)
                    if {
                        let lower = after_comma.trim_start().to_ascii_lowercase();
                        [
                            "fish",
                            "ish",
                            "sish",
                            "cish",
                            "by ",
                            "tps",
                            "cps",
                            "tumor proportion",
                            "tumour proportion",
                            "combined positive",
                        ]
                        .iter()
                        .any(|word| lower.starts_with(word))
                    } =>
                {
                    after_comma
                }
                _ => trimmed,
            };
            let trimmed = trimmed.trim_start();
            let offset = cursor + (rest.len() - trimmed.len());
            let Some(captures) = status_regex().captures(trimmed) else {
                break;
            };
            let Some(whole) = captures.get(0) else { break };
            if whole.as_str().is_empty() {
                break;
            }
            let range = offset..offset + whole.end();
            let kind = if captures.name("neg_amp").is_some() {
                let word = whole.as_str().to_ascii_lowercase();
                if word.contains("amplification") {
                    Some(TokenKind::Amplification(false))
                } else {
                    Some(TokenKind::Amplified(false))
                }
            } else if captures.name("amp").is_some() {
                Some(TokenKind::Amplified(true))
            } else if captures.name("ampn").is_some() {
                Some(TokenKind::Amplification(true))
            } else if captures.name("notover").is_some() {
                Some(TokenKind::Overexpressed(false))
            } else if captures.name("over").is_some() {
                Some(TokenKind::Overexpressed(true))
            } else if captures.name("pos").is_some() {
                Some(TokenKind::Word(Status::Positive))
            } else if captures.name("neg").is_some() {
                Some(TokenKind::Word(Status::Negative))
            } else if captures.name("equiv").is_some() {
                Some(TokenKind::Equivocal)
            } else if captures.name("high").is_some() {
                Some(TokenKind::High)
            } else if captures.name("low").is_some() {
                Some(TokenKind::Low)
            } else if let Some(score) = captures.name("ihc") {
                Some(TokenKind::Ihc(score.as_str().as_bytes()[0] - b'0'))
            } else if let Some(percent) = captures.name("pct").or_else(|| captures.name("number")) {
                let digits: String = percent
                    .as_str()
                    .chars()
                    .filter(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let value = digits.parse::<f64>().unwrap_or(0.0);
                let value = if percent.as_str().starts_with('<') || percent.as_str().starts_with('≤') {
                    (value - 0.5).max(0.0)
                } else {
                    value
                };
                Some(TokenKind::Percent(value))
            } else if let Some(score) = captures.name("allred") {
                Some(TokenKind::Allred(score.as_str().as_bytes()[0] - b'0'))
            } else if captures.name("notexp").is_some() {
                Some(TokenKind::Word(Status::Negative))
            } else if captures.name("clone").is_some() {
                None
            } else if captures.name("mod").is_some() {
                Some(TokenKind::Modifier)
            } else if captures.name("ish").is_some() {
                Some(TokenKind::Ish)
            } else {
                None
            };
            if let Some(kind) = kind {
                let range = match &kind {
                    TokenKind::Allred(_) => captures
                        .name("allred")
                        .map_or(range.clone(), |m| offset + m.start()..offset + m.end()),
                    _ => range.clone(),
                };
                tokens.push(Token {
                    kind,
                    range: range.clone(),
                });
                last_end = range.end;
            }
            cursor = offset + whole.end();
        }
    }
    // "positive for ER", "strongly positive for HER2".
    let mut start = start;
    static BEFORE: OnceLock<Regex> = OnceLock::new();
    let before = re(
        &BEFORE,
        r"(?i)(?:\b(?P<mod>strongly|weakly|focally|diffusely|moderately)\s+)?\b(?P<word>positive|negative)\s+for\s+(?:the\s+)?$",
    );
    let window_start = floor_boundary(text, start.saturating_sub(48));
    if let Some(captures) = before.captures(&text[window_start..start])
        && let (Some(whole), Some(word)) = (captures.get(0), captures.name("word"))
    {
        let status = if word.as_str().eq_ignore_ascii_case("positive") {
            Status::Positive
        } else {
            Status::Negative
        };
        if let Some(modifier) = captures.name("mod") {
            tokens.push(Token {
                kind: TokenKind::Modifier,
                range: window_start + modifier.start()..window_start + modifier.end(),
            });
        }
        tokens.push(Token {
            kind: TokenKind::Word(status),
            range: window_start + word.start()..window_start + word.end(),
        });
        start = window_start + whole.start();
    }
    // Trailing fillers are not part of the mention.
    (start..last_end.max(end), tokens)
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn mentions(text: &str) -> Vec<Mention> {
    let all = aliases(text);
    let mut out: Vec<Mention> = Vec::new();
    let mut index = 0;
    while index < all.len() {
        let mut markers = vec![all[index].marker];
        let start = all[index].range.start;
        let mut end = all[index].range.end;
        while let Some(next) = all.get(index + 1) {
            let gap = &text[end..next.range.start];
            let joined = matches!(gap.trim(), "/" | "," | "and" | "&");
            if !joined || gap.len() > 6 {
                break;
            }
            markers.push(next.marker);
            end = next.range.end;
            index += 1;
        }
        let (range, tokens) = read_status(text, start, end);
        out.push(Mention {
            markers,
            range,
            tokens,
        });
        index += 1;
    }
    out
}

fn status_of(marker: Marker, tokens: &[Token]) -> Option<Status> {
    let has_ish = tokens.iter().any(|token| token.kind == TokenKind::Ish);
    let mut status = None;
    let mut ihc = None;
    let mut ish = None;
    for token in tokens {
        match &token.kind {
            TokenKind::Word(found) | TokenKind::Sign(found) => status = Some(*found),
            TokenKind::Amplified(amplified) | TokenKind::Amplification(amplified) => ish = Some(*amplified),
            TokenKind::Overexpressed(true) => status = Some(Status::Positive),
            TokenKind::Overexpressed(false) => status = Some(Status::Negative),
            TokenKind::Ihc(score) => ihc = Some(*score),
            TokenKind::Percent(value) => {
                status = Some(match marker {
                    Marker::PdL1 if *value >= 50.0 => Status::Positive,
                    Marker::PdL1 if *value < 1.0 => Status::Negative,
                    Marker::PdL1 => Status::Intermediate,
                    _ if *value >= 1.0 => Status::Positive,
                    _ => Status::Negative,
                });
            }
            TokenKind::Allred(score) => {
                status = Some(if *score >= 3 {
                    Status::Positive
                } else {
                    Status::Negative
                })
            }
            TokenKind::High => status = Some(Status::Positive),
            TokenKind::Low => status = Some(Status::Intermediate),
            TokenKind::Equivocal => {
                if status.is_none() {
                    status = Some(Status::Equivocal);
                }
            }
            TokenKind::Modifier | TokenKind::Ish => {}
        }
    }
    if let Some(amplified) = ish {
        return Some(if amplified {
            Status::Positive
        } else {
            Status::Negative
        });
    }
    if let Some(score) = ihc
        && marker == Marker::Her2
    {
        return Some(match score {
            3 => Status::Positive,
            2 if !has_ish => Status::Equivocal,
            2 => status.unwrap_or(Status::Equivocal),
            _ => Status::Negative,
        });
    }
    status
}

/// The markers an op edits, and which of them must be stated.
pub(crate) struct Targets {
    markers: Vec<Marker>,
}

impl Targets {
    pub fn new(name: &str, also: &[String]) -> Option<Targets> {
        let mut markers = vec![Marker::parse(name)?];
        for other in also {
            markers.push(Marker::parse(other)?);
        }
        Some(Targets { markers })
    }

    fn primary(&self) -> Marker {
        self.markers[0]
    }
}

/// Whether `text` mentions any of the op's markers.
pub(crate) fn touches(text: &str, targets: &Targets) -> bool {
    aliases(text)
        .iter()
        .any(|alias| alias.marker.covered_by(&targets.markers) || targets.markers.contains(&alias.marker))
}

fn check_presupposing(chart: &Chart<'_>, targets: &Targets) -> Result<(), NotApplicable> {
    for marker in &targets.markers {
        for word in presupposing(*marker) {
            if let Some(at) = super::mentions_any(chart.text, &[word]) {
                return Err(format!(
                    "the chart mentions `{word}` ({}), which presupposes the {} status",
                    chart.quote(&(at..at + word.len())),
                    marker.fact_name()
                ));
            }
        }
    }
    Ok(())
}

/// The mentions of the target markers, each with its status; errors when a
/// mention cannot be read or mixes in a marker the op does not edit.
fn target_mentions(chart: &Chart<'_>, targets: &Targets) -> Result<Vec<(Mention, Status)>, NotApplicable> {
    let mut out = Vec::new();
    for mention in mentions(chart.text) {
        let relevant = mention
            .markers
            .iter()
            .any(|marker| marker.covered_by(&targets.markers) || targets.markers.contains(marker));
        let relevant = relevant
            || (mention.markers.contains(&Marker::Hr)
                && targets
                    .markers
                    .iter()
                    .any(|m| matches!(m, Marker::Er | Marker::Pr)));
        if !relevant {
            continue;
        }
        if let Some(other) = mention
            .markers
            .iter()
            .find(|marker| !marker.covered_by(&targets.markers))
        {
            return Err(format!(
                "{} states {} together with {}, which this intervention does not edit",
                chart.quote(&mention.range),
                targets.primary().fact_name(),
                other.fact_name()
            ));
        }
        let Some(status) = status_of(mention.markers[0], &mention.tokens) else {
            return Err(format!(
                "cannot read the {} status in {}",
                mention.markers[0].fact_name(),
                chart.quote(&mention.range)
            ));
        };
        out.push((mention, status));
    }
    Ok(out)
}

/// Flips the markers (positive ⇄ negative; PD-L1 TPS ≥ 50% ⇄ < 1%).
pub(crate) fn flip(chart: &Chart<'_>, targets: &Targets) -> Result<Outcome, NotApplicable> {
    check_presupposing(chart, targets)?;
    let primary = targets.primary();
    let facts: Vec<(usize, &cfeval_schema::Fact)> = chart
        .facts()
        .filter(|(_, fact)| {
            fact.kind == "biomarker"
                && targets
                    .markers
                    .iter()
                    .any(|marker| fact.name.eq_ignore_ascii_case(marker.fact_name()))
        })
        .collect();
    let Some((_, primary_fact)) = facts
        .iter()
        .find(|(_, fact)| fact.name.eq_ignore_ascii_case(primary.fact_name()))
    else {
        return Err(format!("no {} fact to flip", primary.fact_name()));
    };
    let from = match primary_fact.value.as_str() {
        "positive" => Status::Positive,
        "negative" => Status::Negative,
        other => {
            return Err(format!(
                "{} is {other}, neither positive nor negative",
                primary.fact_name()
            ));
        }
    };
    let found = target_mentions(chart, targets)?;
    if found.is_empty() {
        return Err(format!(
            "no readable mention of {} in the chart",
            primary.fact_name()
        ));
    }
    let mut outcome = Outcome::default();
    for (mention, status) in &found {
        if *status != from {
            return Err(format!(
                "{} does not agree with the {} fact ({})",
                chart.quote(&mention.range),
                primary.fact_name(),
                primary_fact.value
            ));
        }
        for token in &mention.tokens {
            let replacement = flipped(mention.markers[0], &token.kind, from, chart.text, &token.range)
                .map_err(|why| format!("{why} in {}", chart.quote(&mention.range)))?;
            if let Some(replacement) = replacement {
                let mut range = token.range.clone();
                if token.kind == TokenKind::Modifier && chart.text[range.end..].starts_with(' ') {
                    range.end += 1;
                }
                outcome.plan.push(range, replacement)?;
            }
        }
    }
    // Every fact of the flipped markers must lie inside a rewritten mention.
    let to = if from == Status::Positive {
        "negative"
    } else {
        "positive"
    };
    for (index, fact) in &facts {
        let span = Chart::span(fact);
        if fact.value != "positive" && fact.value != "negative" {
            return Err(format!(
                "{} is {}, which a flip cannot carry",
                fact.name, fact.value
            ));
        }
        if fact.value != primary_fact.value {
            return Err(format!(
                "{} is {} but {} is {}; they cannot flip together",
                fact.name, fact.value, primary_fact.name, primary_fact.value
            ));
        }
        if !found
            .iter()
            .any(|(mention, _)| mention.range.start < span.end && span.start < mention.range.end)
        {
            return Err(format!(
                "the {} fact's span {} is not a mention this edit can rewrite",
                fact.name,
                chart.quote(&span)
            ));
        }
        let detail = flipped_detail(
            fact.detail.as_deref(),
            to,
            Marker::parse(&fact.name).unwrap_or(primary),
        );
        super::set_status(&mut outcome, fact, *index, to, detail, None);
    }
    Ok(outcome)
}

fn flipped(
    marker: Marker,
    kind: &TokenKind,
    from: Status,
    text: &str,
    range: &Range<usize>,
) -> Result<Option<String>, String> {
    let to_positive = from == Status::Negative;
    let original = &text[range.clone()];
    let keep_case = |word: &str| {
        if original.starts_with(|c: char| c.is_ascii_uppercase()) {
            if original.chars().all(|c| !c.is_ascii_lowercase()) {
                word.to_ascii_uppercase()
            } else {
                text::capitalize(word)
            }
        } else {
            word.to_string()
        }
    };
    Ok(match kind {
        TokenKind::Word(_) => {
            let short = original.len() <= 3;
            let word = match (to_positive, short, marker) {
                (true, true, _) => "pos",
                (false, true, _) => "neg",
                (true, false, Marker::PdL1) if original.eq_ignore_ascii_case("negative") => "high",
                (true, false, _) => "positive",
                (false, false, _) => "negative",
            };
            Some(keep_case(word))
        }
        TokenKind::Sign(_) => Some(if to_positive { "+".into() } else { "-".into() }),
        TokenKind::Amplified(_) => Some(keep_case(if to_positive { "amplified" } else { "non-amplified" })),
        TokenKind::Amplification(_) => Some(keep_case(if to_positive {
            "amplification"
        } else {
            "non-amplified"
        })),
        TokenKind::Overexpressed(_) => Some(keep_case(if to_positive {
            "overexpressed"
        } else {
            "not overexpressed"
        })),
        TokenKind::Ihc(2) => None,
        TokenKind::Ihc(_) => Some(if to_positive { "3+".into() } else { "0".into() }),
        TokenKind::Percent(_) => Some(match (marker, to_positive) {
            (Marker::PdL1, true) => "80%".into(),
            (Marker::PdL1, false) => "<1%".into(),
            (_, true) => "90%".into(),
            (_, false) => "0%".into(),
        }),
        TokenKind::Allred(_) => Some(if to_positive { "8".into() } else { "0".into() }),
        TokenKind::High => Some(keep_case(if to_positive { "high" } else { "negative" })),
        TokenKind::Low => return Err("`low` is ambiguous".into()),
        TokenKind::Equivocal => return Err("an equivocal result cannot be flipped".into()),
        // Dropped (with the space after it, see `flip`).
        TokenKind::Modifier => Some(String::new()),
        TokenKind::Ish => None,
    })
}

fn flipped_detail(detail: Option<&str>, to: &str, marker: Marker) -> Option<String> {
    let detail = detail?;
    Some(match (marker, to) {
        (Marker::PdL1, "negative") => "TPS <1%".to_string(),
        (Marker::PdL1, _) => "TPS 80%".to_string(),
        (Marker::Her2, "negative") => "IHC 0".to_string(),
        (Marker::Her2, _) => "IHC 3+".to_string(),
        (_, "negative") => "0%".to_string(),
        _ => {
            let _ = detail;
            "90%".to_string()
        }
    })
}

/// Deletes every mention of the markers.
pub(crate) fn strip(chart: &Chart<'_>, targets: &Targets) -> Result<Outcome, NotApplicable> {
    check_presupposing(chart, targets)?;
    let primary = targets.primary();
    let found = target_mentions(chart, targets)?;
    if found.is_empty() {
        return Err(format!(
            "no readable mention of {} in the chart",
            primary.fact_name()
        ));
    }
    let mut outcome = Outcome::default();
    let is_target = |fact: &cfeval_schema::Fact| {
        fact.kind == "biomarker"
            && targets
                .markers
                .iter()
                .any(|marker| fact.name.eq_ignore_ascii_case(marker.fact_name()))
    };
    let mut deleted: Vec<Range<usize>> = Vec::new();
    for (mention, _) in &found {
        let range = deletion_for(chart, &mention.range, &is_target)?;
        outcome.plan.push(range.clone(), "")?;
        deleted.push(range);
    }
    for (index, fact) in chart.facts() {
        if !is_target(fact) {
            continue;
        }
        let span = Chart::span(fact);
        if !deleted
            .iter()
            .any(|range| range.start <= span.start && span.end <= range.end)
        {
            return Err(format!(
                "the {} fact's span {} is not a mention this edit can delete",
                fact.name,
                chart.quote(&span)
            ));
        }
        outcome.changes.push(FactChange::Remove { index });
    }
    Ok(outcome)
}

/// The range that removes a mention: with its list separator when it is
/// one item of a list (`ER+, PR+, HER2-`), else its whole sentence when the
/// sentence carries no other fact.
fn deletion_for(
    chart: &Chart<'_>,
    mention: &Range<usize>,
    is_target: &dyn Fn(&cfeval_schema::Fact) -> bool,
) -> Result<Range<usize>, NotApplicable> {
    let text = chart.text;
    let opening = text[mention.clone()].matches('(').count();
    let closing = text[mention.clone()].matches(')').count();
    let mut mention = mention.clone();
    if opening > closing {
        let rest = &text[mention.end..];
        let trimmed = rest.trim_start();
        if trimmed.starts_with(')') && opening == closing + 1 {
            mention.end += rest.len() - trimmed.len() + 1;
        } else {
            return Err(format!("unbalanced parentheses around {}", chart.quote(&mention)));
        }
    }
    let after = &text[mention.end..];
    static AFTER_SEP: OnceLock<Regex> = OnceLock::new();
    static BEFORE_SEP: OnceLock<Regex> = OnceLock::new();
    let after_sep = re(&AFTER_SEP, r"^(?:\s*(?:,|;|/)\s*(?:and\s+)?|\s+and\s+)");
    let before_sep = re(&BEFORE_SEP, r"(?:\s*(?:,|;|/)|,?\s+and)\s*$");
    let sentence = chart
        .sentence_at(mention.start)
        .ok_or_else(|| format!("{} is in no sentence", chart.quote(&mention)))?;
    // Another marker mention or clause in the same list after it?
    if let Some(found) = after_sep.find(after)
        && mention.end + found.end() < sentence.end
    {
        let next_start = mention.end + found.end();
        let next = &text[next_start..sentence.end];
        let fact_next = chart.case.facts.iter().any(|fact| {
            fact.kind == "biomarker" && !is_target(fact) && (fact.span_start as usize) == next_start
        });
        if next.starts_with(|c: char| c.is_alphanumeric())
            && (fact_next || aliases(next).first().is_some_and(|alias| alias.range.start == 0))
        {
            return Ok(mention.start..mention.end + found.end());
        }
    }
    let before = &text[sentence.start..mention.start];
    if let Some(found) = before_sep.find(before) {
        let prior = &text[sentence.start..sentence.start + found.start()];
        let ends_with_marker = aliases(prior).last().is_some_and(|alias| {
            let tail = &prior[alias.range.end..];
            tail.len() < 40 && !tail.contains(',')
        });
        let separator = sentence.start + found.start();
        let fact_before = chart.case.facts.iter().any(|fact| {
            let end = fact.span_end as usize;
            fact.kind == "biomarker" && !is_target(fact) && end <= separator && separator - end <= 24
        });
        if ends_with_marker || fact_before {
            return Ok(separator..mention.end);
        }
    }
    // The whole sentence, when it says nothing else.
    if let Some(other) = chart.other_facts_in(&sentence, is_target) {
        return Err(format!(
            "the sentence {} also states {} {}; the mention cannot be removed cleanly",
            chart.quote(&mention),
            other.kind,
            other.name
        ));
    }
    let rest: String = {
        let mut rest = String::new();
        rest.push_str(&text[sentence.start..mention.start]);
        rest.push_str(&text[mention.end..sentence.end]);
        rest
    };
    if rest.split_whitespace().count() > 8 {
        return Err(format!(
            "the sentence {} says more than the marker; the mention cannot be removed cleanly",
            chart.quote(&sentence)
        ));
    }
    Ok(text::deletion_range(text, &sentence))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(text: &str) -> Vec<(Vec<Marker>, Option<Status>)> {
        mentions(text)
            .into_iter()
            .map(|mention| {
                let status = status_of(mention.markers[0], &mention.tokens);
                (mention.markers, status)
            })
            .collect()
    }

    #[test]
    fn reads_common_phrasings() {
        use Marker::*;
        use Status::*;
        assert_eq!(statuses("HER2-positive"), vec![(vec![Her2], Some(Positive))]);
        assert_eq!(statuses("HER2 3+ by IHC"), vec![(vec![Her2], Some(Positive))]);
        assert_eq!(
            statuses("HER2 IHC 2+, FISH non-amplified"),
            vec![(vec![Her2], Some(Negative))]
        );
        assert_eq!(statuses("HER2/neu amplified"), vec![(vec![Her2], Some(Positive))]);
        assert_eq!(
            statuses("ER+/PR+/HER2-"),
            vec![
                (vec![Er], Some(Positive)),
                (vec![Pr], Some(Positive)),
                (vec![Her2], Some(Negative))
            ]
        );
        assert_eq!(statuses("ER/PR positive"), vec![(vec![Er, Pr], Some(Positive))]);
        assert_eq!(
            statuses("strongly positive for estrogen receptor (95%)"),
            vec![(vec![Er], Some(Positive))]
        );
        assert_eq!(statuses("PD-L1 TPS 60%"), vec![(vec![PdL1], Some(Positive))]);
        assert_eq!(
            statuses("PD-L1 tumor proportion score of 20%"),
            vec![(vec![PdL1], Some(Intermediate))]
        );
        assert_eq!(statuses("PD-L1 <1%"), vec![(vec![PdL1], Some(Negative))]);
        assert_eq!(statuses("HER2-directed therapy"), vec![(vec![Her2], None)]);
    }

    #[test]
    fn heart_rate_and_partial_response_are_not_markers() {
        assert!(aliases("HR 88, BP 120/80").is_empty());
        assert!(aliases("achieved a PR after 3 cycles").is_empty());
    }
}
