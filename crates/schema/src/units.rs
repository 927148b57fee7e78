//! Units of work: how each stage names the unit its shards are committed
//! under, spelled once here so that any stage (and `status`, `verify`) can
//! read a unit name back, and the command that redoes a unit.
//!
//! | table       | unit                                   | written by        |
//! |-------------|----------------------------------------|-------------------|
//! | `variants`  | `perturb`                              | `cfeval perturb`  |
//! | `responses` | `subject=S/mode=M/slice=I-of-N`        | `cfeval infer`    |
//! | `judgments` | `judge=J`                              | `cfeval judge`    |
//! | `scores`    | `aggregate`                            | `cfeval aggregate`|

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::table::TableName;

/// The perturb stage's one unit.
pub const PERTURB: &str = "perturb";

/// The aggregate stage's one unit.
pub const AGGREGATE: &str = "aggregate";

/// An infer unit: one subject × mode × slice `index` of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ResponseUnit<'a> {
    pub subject: &'a str,
    pub mode: &'a str,
    /// 1-based.
    pub index: u32,
    pub count: u32,
}

impl std::fmt::Display for ResponseUnit<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "subject={}/mode={}/slice={}-of-{}",
            self.subject, self.mode, self.index, self.count
        )
    }
}

impl<'a> ResponseUnit<'a> {
    /// Reads an infer unit name back (subject names contain `/`, modes and
    /// slices do not).
    pub fn parse(unit: &'a str) -> Option<Self> {
        let rest = unit.strip_prefix("subject=")?;
        let at = rest.rfind("/mode=")?;
        let subject = &rest[..at];
        let (mode, slice) = rest[at + "/mode=".len()..].split_once("/slice=")?;
        let (index, count) = slice.split_once("-of-")?;
        let (index, count) = (index.parse().ok()?, count.parse().ok()?);
        (!subject.is_empty() && !mode.is_empty() && index >= 1 && index <= count).then_some(Self {
            subject,
            mode,
            index,
            count,
        })
    }
}

/// The unit a judge's judgments are committed under.
pub fn judge(name: &str) -> String {
    format!("judge={name}")
}

/// The judge of a judgments unit.
pub fn parse_judge(unit: &str) -> Option<&str> {
    unit.strip_prefix("judge=").filter(|name| !name.is_empty())
}

/// The slices of sliced infer units that have not completed while other
/// slices of the same subject × mode × count have, as unit names.
pub fn missing_slices<'a>(completed: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen: BTreeMap<(&str, &str, u32), BTreeSet<u32>> = BTreeMap::new();
    for unit in completed {
        if let Some(parsed) = ResponseUnit::parse(unit) {
            seen.entry((parsed.subject, parsed.mode, parsed.count))
                .or_default()
                .insert(parsed.index);
        }
    }
    let mut missing = Vec::new();
    for ((subject, mode, count), indices) in seen {
        for index in (1..=count).filter(|index| !indices.contains(index)) {
            missing.push(
                ResponseUnit {
                    subject,
                    mode,
                    index,
                    count,
                }
                .to_string(),
            );
        }
    }
    missing
}

/// The command that (re)makes `unit` of `table` in the run at `run_dir`
/// (any unit of it when `unit` is unknown).
pub fn fix_command(run_dir: &Path, table: TableName, unit: Option<&str>) -> String {
    let run = run_dir.display();
    let command = match table {
        TableName::Cases | TableName::CasesQuarantine => {
            format!("cfeval synthesize --input FILES --out {run}")
        }
        TableName::Variants => format!("cfeval perturb --run {run} --catalog CATALOG"),
        TableName::Responses => match unit.and_then(ResponseUnit::parse) {
            Some(unit) if unit.count > 1 => format!(
                "cfeval infer --run {run} --subject {} --mode {} --shard {}/{}",
                unit.subject, unit.mode, unit.index, unit.count
            ),
            Some(unit) => format!(
                "cfeval infer --run {run} --subject {} --mode {}",
                unit.subject, unit.mode
            ),
            None => format!("cfeval infer --run {run} --subject SUBJECT"),
        },
        TableName::Judgments => format!(
            "cfeval judge --run {run} --judge {}",
            unit.and_then(parse_judge).unwrap_or("JUDGE")
        ),
        TableName::Scores => format!("cfeval aggregate --run {run}"),
    };
    format!("run `{command}` (or `cfeval run PIPELINE`, which redoes what is missing or stale)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_units_read_back() {
        let unit = ResponseUnit {
            subject: "control/reference",
            mode: "single_shot",
            index: 2,
            count: 3,
        };
        let name = unit.to_string();
        assert_eq!(name, "subject=control/reference/mode=single_shot/slice=2-of-3");
        assert_eq!(ResponseUnit::parse(&name), Some(unit));
        for bad in [
            "all",
            "subject=/mode=a/slice=1-of-1",
            "subject=x/mode=a/slice=0-of-1",
            "subject=x/mode=a/slice=2-of-1",
            "subject=x/mode=a",
        ] {
            assert_eq!(ResponseUnit::parse(bad), None, "{bad}");
        }
        assert_eq!(parse_judge(&judge("openai/gpt-5")), Some("openai/gpt-5"));
    }

    #[test]
    fn missing_slices_are_named() {
        let missing = missing_slices([
            "subject=a/mode=agent/slice=1-of-3",
            "subject=a/mode=agent/slice=3-of-3",
            "subject=b/mode=agent/slice=1-of-1",
        ]);
        assert_eq!(missing, vec!["subject=a/mode=agent/slice=2-of-3".to_string()]);
    }
}
