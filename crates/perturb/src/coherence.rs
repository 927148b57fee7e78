//! The chart coherence check: a chart (text and facts) must not contradict
//! itself. Run on every case (the baseline row) and every variant; its
//! findings are the `coherence` column of `variants`, one `rule: detail`
//! string each, quoting the spans that disagree.
//!
//! Rules (the wording lists are data, `data/packs/oncology/coherence.yaml`; the
//! stage-group tables are `data/packs/oncology/staging.yaml`, read through
//! `cfeval_guidelines::staging`):
//! - `stage-m1`: a TNM with M1 beside a stated group other than IV.
//! - `stage-tnm`: a stated group the TNM's T, N and M cannot have under the
//!   cancer type's AJCC table (or a combination the table does not have).
//! - `stage-substage`: a sub-stage the cancer type's table does not have
//!   (`stage IVB` breast cancer), when no TNM is stated.
//! - `stage-nodes`: node-negative wording beside N1–N3, or beside a group
//!   that node-negative disease cannot have (stage III colorectal cancer).
//! - `stage-imaging`: stage IV (or M1) beside "no distant disease"-type
//!   statements; stage I–III beside distant-disease mentions (liver
//!   lesions, metastases).
//! - `surgery-wording`: a surgery status (the chart's surgery facts) beside
//!   wording that presupposes the other (pathologic staging, margins, R0
//!   after no resection; "awaiting surgery", "unresectable" after one).
//! - `regimen-histology`, `regimen-biomarker`: a drug the histology or a
//!   stated biomarker status rules out (pemetrexed in squamous NSCLC,
//!   trastuzumab in HER2-negative disease).

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use cfeval_guidelines::staging::{Basis, CancerTable, Staging, split_group};
use cfeval_schema::Fact;
use regex::Regex;
use serde::Deserialize;

use crate::ops::stage;

/// The lexicons shipped with cfeval, compiled in.
pub const BUILTIN_LEXICON_YAML: &str = cfeval_schema::pack::oncology::COHERENCE;

/// One contradiction in a chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id (`stage-tnm`, `surgery-wording`, …).
    pub rule: &'static str,
    /// What contradicts what, quoting the spans.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.rule, self.detail)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLexicon {
    #[allow(dead_code)]
    version: u32,
    no_distant_disease: Vec<RawPhrase>,
    distant_disease: Vec<RawPhrase>,
    node_negative: Vec<String>,
    resection_presupposed: Vec<String>,
    resection_absent: Vec<String>,
    histologies: std::collections::BTreeMap<String, Vec<String>>,
    regimen_conflicts: Vec<RawConflict>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPhrase {
    pattern: String,
    #[serde(default)]
    metastatic: Option<String>,
    #[serde(default)]
    not_metastatic: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConflict {
    id: String,
    drugs: Vec<String>,
    #[serde(default)]
    cancers: Vec<String>,
    #[serde(default)]
    histology: Option<String>,
    #[serde(default)]
    biomarker: Option<String>,
    #[serde(default)]
    statuses: Vec<String>,
    why: String,
}

/// A phrase pattern and what an edit writes instead of it, when the
/// lexicon says.
pub(crate) struct Phrase {
    pub regex: Regex,
    pub rewrite: Option<String>,
}

struct Conflict {
    id: String,
    drugs: Regex,
    cancers: Vec<String>,
    histology: Option<Regex>,
    biomarker: Option<String>,
    statuses: Vec<String>,
    why: String,
}

/// The compiled lexicons.
pub(crate) struct Lexicon {
    pub no_distant_disease: Vec<Phrase>,
    pub distant_disease: Vec<Phrase>,
    node_negative: Vec<Regex>,
    resection_presupposed: Vec<Regex>,
    resection_absent: Vec<Regex>,
    conflicts: Vec<Conflict>,
}

fn word_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(&format!(r"(?i)\b(?:{pattern})\b")).map_err(|error| format!("pattern `{pattern}`: {error}"))
}

fn any_regex(patterns: &[String]) -> Result<Regex, String> {
    word_regex(&patterns.join("|"))
}

impl Lexicon {
    fn parse(text: &str) -> Result<Lexicon, String> {
        let raw: RawLexicon = serde_norway::from_str(text).map_err(|error| error.to_string())?;
        let phrases = |items: Vec<RawPhrase>, down: bool| -> Result<Vec<Phrase>, String> {
            items
                .into_iter()
                .map(|item| {
                    Ok(Phrase {
                        regex: word_regex(&item.pattern)?,
                        rewrite: if down {
                            item.not_metastatic
                        } else {
                            item.metastatic
                        },
                    })
                })
                .collect()
        };
        let regexes = |items: Vec<String>| -> Result<Vec<Regex>, String> {
            items.iter().map(|item| word_regex(item)).collect()
        };
        let mut conflicts = Vec::new();
        for conflict in raw.regimen_conflicts {
            let histology = match &conflict.histology {
                Some(name) => Some(any_regex(raw.histologies.get(name).ok_or_else(|| {
                    format!("conflict {}: unknown histology `{name}`", conflict.id)
                })?)?),
                None => None,
            };
            if histology.is_none() == conflict.biomarker.is_none() {
                return Err(format!(
                    "conflict {}: name a histology or a biomarker",
                    conflict.id
                ));
            }
            conflicts.push(Conflict {
                drugs: any_regex(&conflict.drugs)?,
                id: conflict.id,
                cancers: conflict.cancers,
                histology,
                biomarker: conflict.biomarker,
                statuses: conflict.statuses,
                why: conflict.why,
            });
        }
        Ok(Lexicon {
            no_distant_disease: phrases(raw.no_distant_disease, false)?,
            distant_disease: phrases(raw.distant_disease, true)?,
            node_negative: regexes(raw.node_negative)?,
            resection_presupposed: regexes(raw.resection_presupposed)?,
            resection_absent: regexes(raw.resection_absent)?,
            conflicts,
        })
    }

    /// Statements of no distant disease in `text` (non-overlapping).
    pub fn no_distant_matches(&self, text: &str) -> Vec<(Range<usize>, Option<&str>)> {
        phrase_matches(&self.no_distant_disease, text, &[])
    }

    /// Statements that the regional nodes are not involved.
    pub fn node_negative_matches(&self, text: &str) -> Vec<Range<usize>> {
        matches_of(&self.node_negative, text).collect()
    }

    /// Mentions of distant disease in `text` that are not part of a
    /// statement of its absence.
    pub fn distant_matches(&self, text: &str) -> Vec<(Range<usize>, Option<&str>)> {
        let negatives: Vec<Range<usize>> = self
            .no_distant_matches(text)
            .into_iter()
            .map(|(range, _)| range)
            .collect();
        phrase_matches(&self.distant_disease, text, &negatives)
    }
}

/// Matches of `phrases` in `text`, earliest and longest first, none
/// overlapping another or `excluded`.
fn phrase_matches<'a>(
    phrases: &'a [Phrase],
    text: &str,
    excluded: &[Range<usize>],
) -> Vec<(Range<usize>, Option<&'a str>)> {
    let mut found: Vec<(Range<usize>, Option<&str>)> = phrases
        .iter()
        .flat_map(|phrase| {
            phrase
                .regex
                .find_iter(text)
                .map(move |found| (found.range(), phrase.rewrite.as_deref()))
        })
        .collect();
    found.sort_by_key(|(range, _)| (range.start, std::cmp::Reverse(range.end)));
    let mut out: Vec<(Range<usize>, Option<&str>)> = Vec::new();
    for (range, rewrite) in found {
        let overlaps = |other: &Range<usize>| other.start < range.end && range.start < other.end;
        if excluded.iter().any(overlaps) || out.iter().any(|(other, _)| overlaps(other)) {
            continue;
        }
        out.push((range, rewrite));
    }
    out
}

fn matches_of<'r>(regexes: &'r [Regex], text: &'r str) -> impl Iterator<Item = Range<usize>> + 'r {
    regexes
        .iter()
        .flat_map(move |regex| regex.find_iter(text).map(|found| found.range()))
}

/// The built-in lexicon. It is compiled into the crate and covered by its
/// tests, so a failure is a bug here, not bad input.
pub(crate) fn lexicon() -> &'static Lexicon {
    static CELL: OnceLock<Lexicon> = OnceLock::new();
    CELL.get_or_init(|| match Lexicon::parse(BUILTIN_LEXICON_YAML) {
        Ok(lexicon) => lexicon,
        Err(error) => {
            panic!("invalid built-in coherence lexicon data/packs/oncology/coherence.yaml: {error}")
        }
    })
}

fn staging() -> Option<&'static Staging> {
    Staging::builtin().ok()
}

/// A `stage …` mention.
struct GroupMention {
    range: Range<usize>,
    /// `IIIA`, `IV`.
    group: String,
}

/// A TNM mention with its numbers (`None` for `x`/`is`).
struct TnmMention {
    range: Range<usize>,
    basis: Basis,
    t: Option<u8>,
    n: Option<u8>,
    m: Option<u8>,
}

fn group_mentions(text: &str) -> Vec<GroupMention> {
    stage::group_regex()
        .captures_iter(text)
        .filter_map(|captures| {
            let whole = captures.get(0)?;
            let group = stage::roman(&captures.name("group")?.as_str().to_ascii_uppercase()).to_string();
            let sub = captures
                .name("sub")
                .map(|sub| sub.as_str().to_ascii_uppercase())
                .unwrap_or_default();
            Some(GroupMention {
                range: whole.range(),
                group: format!("{group}{}", sub.trim_end_matches(|c: char| c.is_ascii_digit())),
            })
        })
        .collect()
}

fn tnm_mentions(text: &str) -> Vec<TnmMention> {
    let digit = |found: Option<regex::Match<'_>>| {
        found.and_then(|found| {
            found
                .as_str()
                .trim_start_matches('M')
                .chars()
                .next()
                .and_then(|c| c.to_digit(10))
                .map(|d| d as u8)
        })
    };
    stage::tnm_regex()
        .captures_iter(text)
        .filter_map(|captures| {
            Some(TnmMention {
                range: captures.get(0)?.range(),
                basis: Basis::from_prefix(captures.name("pre").map_or("", |pre| pre.as_str())),
                t: digit(captures.name("t")),
                n: digit(captures.name("n")),
                m: digit(captures.name("m")),
            })
        })
        .collect()
}

/// Checks a chart; `cancer_type` falls back to the chart's `cancer_type`
/// fact.
pub fn check(text: &str, facts: &[Fact], cancer_type: Option<&str>) -> Vec<Finding> {
    let lexicon = lexicon();
    let cancer = cancer_type.map(str::to_ascii_lowercase).or_else(|| {
        facts
            .iter()
            .find(|fact| fact.kind == "cancer_type")
            .map(|fact| fact.value.to_ascii_lowercase())
    });
    let table = cancer
        .as_deref()
        .and_then(|cancer| staging().and_then(|staging| staging.table(cancer)));
    let mut out = Vec::new();
    let groups = group_mentions(text);
    let tnms = tnm_mentions(text);
    let say = |range: &Range<usize>| format!("\"{}\"", text[range.clone()].replace('\n', " "));
    stage_rules(&groups, &tnms, table, cancer.as_deref(), &mut out, &say);
    nodes_rule(
        text,
        lexicon,
        &groups,
        &tnms,
        table,
        cancer.as_deref(),
        &mut out,
        &say,
    );
    imaging_rule(text, lexicon, &groups, &tnms, facts, &mut out, &say);
    surgery_rule(text, lexicon, facts, &mut out, &say);
    regimen_rules(text, lexicon, facts, cancer.as_deref(), &mut out, &say);
    out
}

fn edition() -> &'static str {
    staging().map_or("AJCC", Staging::edition)
}

fn stage_rules(
    groups: &[GroupMention],
    tnms: &[TnmMention],
    table: Option<&CancerTable>,
    cancer: Option<&str>,
    out: &mut Vec<Finding>,
    say: &dyn Fn(&Range<usize>) -> String,
) {
    for tnm in tnms {
        for group in groups {
            let main = split_group(&group.group).0;
            if tnm.m == Some(1) && main != "IV" {
                out.push(Finding {
                    rule: "stage-m1",
                    detail: format!(
                        "{} is M1 but {} is not stage IV",
                        say(&tnm.range),
                        say(&group.range)
                    ),
                });
                continue;
            }
            let (Some(table), Some(t), Some(n), Some(m)) = (table, tnm.t, tnm.n, tnm.m) else {
                continue;
            };
            let allowed = table.groups(tnm.basis, t, n, m);
            if allowed.is_empty() {
                out.push(Finding {
                    rule: "stage-tnm",
                    detail: format!(
                        "{} is not a combination of the {} table for {} (beside {})",
                        say(&tnm.range),
                        edition(),
                        cancer.unwrap_or_default(),
                        say(&group.range)
                    ),
                });
            } else if !CancerTable::matches(&group.group, &allowed) {
                out.push(Finding {
                    rule: "stage-tnm",
                    detail: format!(
                        "{} is stage {} for {} ({}), not {}",
                        say(&tnm.range),
                        allowed.join(" or "),
                        cancer.unwrap_or_default(),
                        edition(),
                        say(&group.range)
                    ),
                });
            }
        }
    }
    if let Some(table) = table
        && tnms.is_empty()
    {
        for group in groups {
            if !table.knows(&group.group) {
                out.push(Finding {
                    rule: "stage-substage",
                    detail: format!(
                        "{} is not a stage group of {} ({})",
                        say(&group.range),
                        cancer.unwrap_or_default(),
                        edition()
                    ),
                });
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn nodes_rule(
    text: &str,
    lexicon: &Lexicon,
    groups: &[GroupMention],
    tnms: &[TnmMention],
    table: Option<&CancerTable>,
    cancer: Option<&str>,
    out: &mut Vec<Finding>,
    say: &dyn Fn(&Range<usize>) -> String,
) {
    for negative in matches_of(&lexicon.node_negative, text) {
        for tnm in tnms.iter().filter(|tnm| tnm.n.is_some_and(|n| n > 0)) {
            out.push(Finding {
                rule: "stage-nodes",
                detail: format!("{} beside node-positive {}", say(&negative), say(&tnm.range)),
            });
        }
        let Some(table) = table else { continue };
        for group in groups {
            let main = split_group(&group.group).0;
            if main != "IV" && !table.node_negative_can_be(main) {
                out.push(Finding {
                    rule: "stage-nodes",
                    detail: format!(
                        "{} beside {}: node-negative {} is never stage {main} ({})",
                        say(&negative),
                        say(&group.range),
                        cancer.unwrap_or_default(),
                        edition()
                    ),
                });
            }
        }
    }
}

fn imaging_rule(
    text: &str,
    lexicon: &Lexicon,
    groups: &[GroupMention],
    tnms: &[TnmMention],
    facts: &[Fact],
    out: &mut Vec<Finding>,
    say: &dyn Fn(&Range<usize>) -> String,
) {
    let stage_four = groups.iter().find(|group| split_group(&group.group).0 == "IV");
    let m1 = tnms.iter().find(|tnm| tnm.m == Some(1));
    let metastatic_fact = facts
        .iter()
        .find(|fact| fact.kind == "metastatic" && fact.value == "true" && fact.polarity != "negated");
    let distant: Option<String> = stage_four
        .map(|group| say(&group.range))
        .or_else(|| m1.map(|tnm| say(&tnm.range)))
        .or_else(|| metastatic_fact.map(|fact| format!("\"{}\"", fact.span_text)));
    if let Some(distant) = distant {
        for (range, _) in lexicon.no_distant_matches(text) {
            out.push(Finding {
                rule: "stage-imaging",
                detail: format!("{distant} beside {}", say(&range)),
            });
        }
        return;
    }
    let Some(local) = groups.first() else { return };
    for (range, _) in lexicon.distant_matches(text) {
        out.push(Finding {
            rule: "stage-imaging",
            detail: format!("{} beside distant disease {}", say(&local.range), say(&range)),
        });
    }
}

fn surgery_rule(
    text: &str,
    lexicon: &Lexicon,
    facts: &[Fact],
    out: &mut Vec<Finding>,
    say: &dyn Fn(&Range<usize>) -> String,
) {
    let surgery: Vec<&Fact> = facts.iter().filter(|fact| fact.kind == "surgery").collect();
    let resected = surgery.iter().find(|fact| fact.value == "resected");
    let unresected = surgery
        .iter()
        .find(|fact| matches!(fact.value.as_str(), "unresected" | "not_done"));
    let (status, wording) = match (resected, unresected) {
        (Some(resected), Some(unresected)) => {
            out.push(Finding {
                rule: "surgery-wording",
                detail: format!(
                    "\"{}\" (resected) beside \"{}\" ({})",
                    resected.span_text, unresected.span_text, unresected.value
                ),
            });
            return;
        }
        (Some(fact), None) => (fact, &lexicon.resection_absent),
        (None, Some(fact)) => (fact, &lexicon.resection_presupposed),
        (None, None) => return,
    };
    let status_span = status.span_start as usize..status.span_end as usize;
    for range in matches_of(wording, text) {
        if range.start < status_span.end && status_span.start < range.end {
            continue;
        }
        out.push(Finding {
            rule: "surgery-wording",
            detail: format!(
                "\"{}\" ({}) beside {}",
                status.span_text,
                status.value,
                say(&range)
            ),
        });
    }
}

fn regimen_rules(
    text: &str,
    lexicon: &Lexicon,
    facts: &[Fact],
    cancer: Option<&str>,
    out: &mut Vec<Finding>,
    say: &dyn Fn(&Range<usize>) -> String,
) {
    for conflict in &lexicon.conflicts {
        if !conflict.cancers.is_empty()
            && !cancer.is_some_and(|cancer| conflict.cancers.iter().any(|wanted| wanted == cancer))
        {
            continue;
        }
        let Some(drug) = conflict.drugs.find(text) else {
            continue;
        };
        if let Some(histology) = &conflict.histology
            && let Some(found) = histology.find(text)
        {
            out.push(Finding {
                rule: "regimen-histology",
                detail: format!(
                    "{} beside {}: {} ({})",
                    say(&drug.range()),
                    say(&found.range()),
                    conflict.why,
                    conflict.id
                ),
            });
        }
        if let Some(name) = &conflict.biomarker
            && let Some(fact) = facts.iter().find(|fact| {
                fact.kind == "biomarker"
                    && fact.name.eq_ignore_ascii_case(name)
                    && conflict.statuses.contains(&fact.value)
            })
        {
            out.push(Finding {
                rule: "regimen-biomarker",
                detail: format!(
                    "{} beside \"{}\" ({name} {}): {} ({})",
                    say(&drug.range()),
                    fact.span_text,
                    fact.value,
                    conflict.why,
                    conflict.id
                ),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(kind: &str, name: &str, value: &str, text: &str, needle: &str) -> Fact {
        let start = text.find(needle).unwrap_or(0);
        Fact {
            kind: kind.into(),
            name: name.into(),
            value: value.into(),
            polarity: if value == "negative" {
                "negated"
            } else {
                "affirmed"
            }
            .into(),
            certainty: "certain".into(),
            detail: None,
            section: "history".into(),
            span_start: start as u64,
            span_end: (start + needle.len()) as u64,
            span_text: needle.into(),
            origin: "reference".into(),
        }
    }

    fn rules(text: &str, facts: &[Fact], cancer: &str) -> Vec<&'static str> {
        check(text, facts, Some(cancer))
            .into_iter()
            .map(|finding| finding.rule)
            .collect()
    }

    #[test]
    fn the_builtin_lexicon_compiles() {
        let lexicon = lexicon();
        assert!(!lexicon.no_distant_disease.is_empty() && !lexicon.conflicts.is_empty());
    }

    #[test]
    fn m1_must_be_stage_four() {
        assert_eq!(
            rules("Staging: stage IIIA (cT2N2M1).", &[], "nsclc"),
            ["stage-m1"]
        );
        assert!(rules("Staging: stage IVA (cT2N2M1).", &[], "nsclc").is_empty());
        // Any cancer type, with a table or without.
        assert_eq!(rules("stage II (T2N0M1)", &[], "sarcoma"), ["stage-m1"]);
    }

    #[test]
    fn the_group_follows_the_ajcc_table() {
        // T1N2M0 NSCLC is IIIA, never IIIB; N0 colorectal is never III.
        let finding = check("stage IIIB (cT1N2M0)", &[], Some("nsclc"));
        assert_eq!(finding.len(), 1);
        assert!(
            finding[0].detail.contains("IIIA") && finding[0].detail.contains("8th"),
            "{}",
            finding[0]
        );
        assert!(rules("stage IIIA (cT1N2M0)", &[], "nsclc").is_empty());
        assert!(rules("stage III (pT1N2M0)", &[], "nsclc").is_empty());
        assert_eq!(rules("stage III (T3N0M0)", &[], "colorectal"), ["stage-tnm"]);
        assert_eq!(rules("stage III (T1N3M0)", &[], "colorectal"), ["stage-tnm"]);
        // Gastric cancer has a clinical and a pathologic table.
        assert!(rules("stage IIA (cT1N1M0)", &[], "gastric").is_empty());
        assert_eq!(rules("stage IIA (pT1N1M0)", &[], "gastric"), ["stage-tnm"]);
        assert!(rules("stage IV (cT4N0M0)", &[], "gastric").is_empty());
        assert_eq!(rules("stage IV (T4N0M0)", &[], "nsclc"), ["stage-tnm"]);
    }

    #[test]
    fn sub_stages_must_exist_for_the_cancer() {
        assert_eq!(
            rules("breast cancer, stage IVB", &[], "breast"),
            ["stage-substage"]
        );
        assert!(rules("lung cancer, stage IVB", &[], "nsclc").is_empty());
    }

    #[test]
    fn node_negative_wording_must_fit_n_and_the_group() {
        assert_eq!(
            rules("stage IIIA (T1N2M0), no nodal involvement", &[], "nsclc"),
            ["stage-nodes"]
        );
        assert_eq!(
            rules("stage III, no nodal involvement", &[], "colorectal"),
            ["stage-nodes"]
        );
        assert!(rules("stage IIIA, no nodal involvement", &[], "nsclc").is_empty());
    }

    #[test]
    fn imaging_must_fit_the_stage() {
        assert_eq!(
            rules(
                "stage IV. CT chest/abdomen/pelvis: no distant disease.",
                &[],
                "nsclc"
            ),
            ["stage-imaging"]
        );
        assert_eq!(
            rules("stage IV (T2N1M1). PET/CT: FDG-avid primary only.", &[], "nsclc"),
            ["stage-imaging"]
        );
        assert_eq!(
            rules(
                "stage III. CT chest/abdomen/pelvis: liver lesions, largest 2.1 cm.",
                &[],
                "nsclc"
            ),
            ["stage-imaging"]
        );
        assert_eq!(
            rules("stage II, with bone metastases", &[], "breast"),
            ["stage-imaging"]
        );
        // Statements of absence are not mentions of distant disease.
        assert!(
            rules(
                "stage II, no evidence of distant metastatic disease",
                &[],
                "breast"
            )
            .is_empty()
        );
        assert!(rules("stage II, w/o distant metastasis", &[], "breast").is_empty());
        assert!(
            rules(
                "stage IV, metastatic to the liver. CT: liver lesions.",
                &[],
                "breast"
            )
            .is_empty()
        );
    }

    #[test]
    fn surgery_wording_must_fit_the_status() {
        let text = "Pathologic stage IIA (pT2N0M0). Surgery: unresectable disease.";
        let facts = [fact(
            "surgery",
            "surgery",
            "unresected",
            text,
            "unresectable disease",
        )];
        assert_eq!(
            rules(text, &facts, "nsclc"),
            ["surgery-wording", "surgery-wording"]
        );
        let text = "Clinical stage IIA (cT2N0M0). Surgery: no surgery to date.";
        let facts = [fact("surgery", "surgery", "not_done", text, "no surgery to date")];
        assert!(rules(text, &facts, "nsclc").is_empty());
        let text = "She underwent a lobectomy with negative margins. Awaiting surgery.";
        let facts = [fact(
            "surgery",
            "lobectomy",
            "resected",
            text,
            "underwent a lobectomy",
        )];
        assert_eq!(rules(text, &facts, "nsclc"), ["surgery-wording"]);
        let text = "pathologic stage IIA; s/p lobectomy, R0";
        let facts = [fact(
            "surgery",
            "lobectomy",
            "resected",
            text,
            "s/p lobectomy, R0",
        )];
        assert!(rules(text, &facts, "nsclc").is_empty());
    }

    #[test]
    fn regimens_must_fit_histology_and_biomarkers() {
        let text =
            "squamous cell carcinoma of the lung. Prior therapy: carboplatin/pemetrexed/pembrolizumab.";
        assert_eq!(rules(text, &[], "nsclc"), ["regimen-histology"]);
        assert!(rules("lung adenocarcinoma; cisplatin/pemetrexed", &[], "nsclc").is_empty());
        let text = "HER2 1+. Adjuvant TCHP with trastuzumab.";
        let facts = [fact("biomarker", "HER2", "negative", text, "HER2 1+")];
        assert_eq!(rules(text, &facts, "breast"), ["regimen-biomarker"]);
        let text = "KRAS G12D. FOLFIRI + cetuximab.";
        let facts = [fact("biomarker", "KRAS", "positive", text, "KRAS G12D")];
        assert_eq!(rules(text, &facts, "colorectal"), ["regimen-biomarker"]);
        // The pair names the cancers it holds for.
        assert!(rules(text, &facts, "nsclc").is_empty());
    }

    #[test]
    fn malformed_lexicons_are_refused() {
        assert!(Lexicon::parse("version: 1\n").is_err());
        let bad = BUILTIN_LEXICON_YAML.replace("histology: squamous", "histology: sarcomatoid");
        assert!(
            Lexicon::parse(&bad)
                .err()
                .is_some_and(|error| error.contains("sarcomatoid"))
        );
    }
}
