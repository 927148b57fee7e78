//! `cfeval status RUN`: per table and unit of work, what is done, partial or
//! stale, read from the manifests alone (nothing is recomputed).
//!
//! - **complete**: the unit's completion record is there and its shards too.
//! - **partial**: shards of the unit are committed but it never completed
//!   (a run was stopped; the next `cfeval run` resumes it).
//! - **stale**: the unit completed, but a table it is computed from changed
//!   afterwards (a shard committed after its completion record), or — for a
//!   run made by `cfeval run`, whose pipeline file is kept as
//!   `RUN/pipeline.toml` — the pipeline's settings for it changed. The next
//!   `cfeval run` redoes it.
//! - **not started**: a unit the kept pipeline names that has no shard yet.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::Path;

use cfeval_schema::{ShardStore, TableName};

use crate::args::StatusArgs;
use crate::pipeline::Pipeline;

/// The tables each table is computed from.
fn upstream(table: TableName) -> &'static [TableName] {
    match table {
        TableName::Cases | TableName::CasesQuarantine => &[],
        TableName::Variants => &[TableName::Cases],
        TableName::Responses => &[TableName::Variants],
        TableName::Judgments => &[TableName::Responses, TableName::Variants, TableName::Cases],
        TableName::Scores => &[TableName::Judgments],
    }
}

/// The state of one unit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnitState {
    Complete,
    Partial,
    Stale(String),
    NotStarted,
}

impl std::fmt::Display for UnitState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitState::Complete => formatter.write_str("complete"),
            UnitState::Partial => formatter.write_str("partial (resumes on the next run)"),
            UnitState::Stale(why) => write!(formatter, "stale: {why}"),
            UnitState::NotStarted => formatter.write_str("not started"),
        }
    }
}

/// A unit (or unit prefix) the kept pipeline expects in a table, with the
/// fingerprint it must carry when that can be known.
type Expected = (TableName, String, Option<String>);

/// Units the kept pipeline expects per table, with the fingerprint each
/// must carry where it can be computed without running anything.
fn expected_units(run: &Path) -> anyhow::Result<Option<Vec<Expected>>> {
    let path = run.join("pipeline.toml");
    if !path.is_file() {
        return Ok(None);
    }
    // The kept copy's relative paths were relative to the original file;
    // only names and settings are needed here, so a parse error in paths is
    // not fatal: fall back to the manifests alone.
    let text = fs_err::read_to_string(&path)?;
    let Ok(pipeline) = Pipeline::parse_settings(&path, &text) else {
        return Ok(None);
    };
    let mut expected = Vec::new();
    let variants = ShardStore::open_existing(
        &run.join(TableName::Variants.dir_name()),
        TableName::Variants.dir_name(),
        TableName::Variants.schema(),
    )?;
    for subject in &pipeline.subjects {
        for mode_run in &subject.runs {
            let config = crate::driver::infer_config(&pipeline, subject, mode_run, cfeval_infer::Slice::ALL);
            let fingerprint = variants
                .as_ref()
                .map(|variants| cfeval_infer::fingerprint(&config, &subject.name, variants));
            let prefix = format!("subject={}/mode={}/", subject.name, mode_run.mode.as_str());
            expected.push((TableName::Responses, prefix, fingerprint));
        }
    }
    for judge in &pipeline.judges {
        expected.push((TableName::Judgments, cfeval_judge::unit(&judge.name), None));
    }
    let config = crate::driver::aggregate_config(&pipeline);
    expected.push((
        TableName::Scores,
        cfeval_aggregate::UNIT.to_string(),
        cfeval_aggregate::fingerprint(&config, run).ok(),
    ));
    Ok(Some(expected))
}

/// Prints, per table of a run, its shards and rows and the state of every
/// unit of work.
pub fn status(args: &StatusArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let run = &args.run;
    if !run.is_dir() {
        anyhow::bail!("no run directory at {}", run.display());
    }
    let expected = expected_units(run)?;
    writeln!(
        out,
        "run {}{}",
        run.display(),
        if expected.is_some() {
            " (pipeline: pipeline.toml)"
        } else {
            ""
        }
    )?;
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for table in TableName::ALL {
        let dir = run.join(table.dir_name());
        let store = ShardStore::open_existing(&dir, table.dir_name(), table.schema())?;
        let mut units: BTreeMap<String, UnitState> = BTreeMap::new();
        match &store {
            None => writeln!(out, "  {:<18} not started", table.dir_name())?,
            Some(store) => {
                writeln!(
                    out,
                    "  {:<18} {} shards, {} rows",
                    table.dir_name(),
                    store.entries().len(),
                    store.rows()
                )?;
                let committed: BTreeSet<&str> =
                    store.entries().iter().map(|entry| entry.file.as_str()).collect();
                let mut newest_input = None;
                for input in upstream(table) {
                    let inputs = ShardStore::open_existing(
                        &run.join(input.dir_name()),
                        input.dir_name(),
                        input.schema(),
                    )?;
                    if let Some(time) = inputs.and_then(|inputs| inputs.last_commit_at())
                        && newest_input.is_none_or(|(_, newest)| time > newest)
                    {
                        newest_input = Some((input, time));
                    }
                }
                for record in store.units() {
                    let state = if record
                        .shards
                        .iter()
                        .any(|file| !committed.contains(file.as_str()))
                    {
                        UnitState::Stale("a shard it completed with is gone".into())
                    } else {
                        match (newest_input, store.completed_at(&record.unit)) {
                            (Some((input, newest)), Some(completed)) if newest > completed => {
                                UnitState::Stale(format!("`{input}` changed after it completed"))
                            }
                            _ => UnitState::Complete,
                        }
                    };
                    units.insert(record.unit.clone(), state);
                }
                for entry in store.entries() {
                    units.entry(entry.unit.clone()).or_insert(UnitState::Partial);
                }
            }
        }
        if let Some(expected) = &expected {
            for (expected_table, key, fingerprint) in expected {
                if *expected_table != table {
                    continue;
                }
                let matching: Vec<String> = units
                    .keys()
                    .filter(|unit| *unit == key || unit.starts_with(key.as_str()))
                    .cloned()
                    .collect();
                if matching.is_empty() {
                    units.insert(key.trim_end_matches('/').to_string(), UnitState::NotStarted);
                    continue;
                }
                let (Some(fingerprint), Some(store)) = (fingerprint, &store) else {
                    continue;
                };
                for unit in matching {
                    if let Some(record) = store.unit(&unit)
                        && record.fingerprint != *fingerprint
                        && units.get(&unit) == Some(&UnitState::Complete)
                    {
                        units.insert(
                            unit,
                            UnitState::Stale("the pipeline's settings or inputs changed".into()),
                        );
                    }
                }
            }
        }
        for (unit, state) in &units {
            let label = match state {
                UnitState::Complete => "complete",
                UnitState::Partial => "partial",
                UnitState::Stale(_) => "stale",
                UnitState::NotStarted => "not started",
            };
            *counts.entry(label).or_default() += 1;
            writeln!(out, "    {unit:<56} {state}")?;
        }
    }
    let summary: Vec<String> = counts
        .iter()
        .map(|(label, count)| format!("{count} {label}"))
        .collect();
    writeln!(
        out,
        "units: {}",
        if summary.is_empty() {
            "none".into()
        } else {
            summary.join(", ")
        }
    )?;
    Ok(())
}
