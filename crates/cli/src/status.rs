//! `cfeval status RUN`: per table and unit of work, what is done, partial,
//! stale or damaged, from the manifests and a check of every shard
//! ([`cfeval_schema::verify`]); nothing is recomputed and nothing is
//! written, so a read-only run can be inspected.
//!
//! - **complete**: the unit's completion record is there, names exactly its
//!   shards, and the tables it was computed from are what they were.
//! - **partial**: shards of the unit are committed but it never completed
//!   (a run was stopped; the next `cfeval run` resumes it).
//! - **stale**: the unit completed, but a table it is computed from changed
//!   (or is gone) since ([`cfeval_schema::lineage`]; for records older than
//!   lineage, a shard of that table committed after the record), or — for a
//!   run made by `cfeval run`, whose pipeline file is kept as
//!   `RUN/pipeline.toml` — the pipeline's settings for it changed. The next
//!   `cfeval run` redoes it.
//! - **damaged**: a shard of the unit fails its check (size, BLAKE3,
//!   footer, rows) or its record names a shard with no manifest entry;
//!   `cfeval verify RUN` says what exactly.
//! - **not started**: a unit the kept pipeline names that has no shard yet.
//! - **incomplete (N errors)**: a `responses` unit, complete or partial,
//!   holding N rows that are not `ok` (with the count per status); the next
//!   `cfeval run` tries them again, up to `max-tries`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use cfeval_schema::lineage::UnitState as Lineage;
use cfeval_schema::verify::{Problem, TableCheck, check_run};
use cfeval_schema::{ResponseStatus, ShardStore, TableName};

use crate::args::StatusArgs;
use crate::pipeline::Pipeline;

/// The state of one unit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum UnitState {
    Complete,
    Partial,
    Stale(String),
    Damaged(String),
    NotStarted,
    /// Rows that are not `ok`: their number and the count per status.
    Incomplete(u64, String),
}

impl std::fmt::Display for UnitState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitState::Complete => formatter.write_str("complete"),
            UnitState::Partial => formatter.write_str("partial (resumes on the next run)"),
            UnitState::Stale(why) => write!(formatter, "stale: {why}"),
            UnitState::Damaged(what) => write!(formatter, "damaged ({what})"),
            UnitState::NotStarted => formatter.write_str("not started"),
            UnitState::Incomplete(errors, breakdown) => write!(
                formatter,
                "incomplete ({errors} error{}: {breakdown}; the next run retries them)",
                if *errors == 1 { "" } else { "s" }
            ),
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
    // A damaged variants table gives no fingerprint (its damage is shown).
    let variants = ShardStore::open_existing(
        &run.join(TableName::Variants.dir_name()),
        TableName::Variants.dir_name(),
        TableName::Variants.schema(),
    )
    .ok()
    .flatten();
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

/// The state of every unit of one checked table.
fn table_units(
    run: &Path,
    check: &TableCheck,
    checks: &[TableCheck],
    problems: &[&Problem],
) -> BTreeMap<String, UnitState> {
    // For records older than lineage: the newest commit to an input table.
    let mut newest_input = None;
    for input in check.table.inputs() {
        let time = checks
            .iter()
            .find(|other| other.table == *input)
            .and_then(TableCheck::last_commit_at);
        if let Some(time) = time
            && newest_input.is_none_or(|(_, newest)| time > newest)
        {
            newest_input = Some((*input, time));
        }
    }
    // Per unit: damaged shards, and other damaged files (records, entries).
    let mut damage: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for problem in problems {
        if let Some(unit) = &problem.unit {
            let counts = damage.entry(unit.clone()).or_default();
            if problem
                .path
                .extension()
                .is_some_and(|extension| extension == "parquet")
            {
                counts.0 += 1;
            } else {
                counts.1 += 1;
            }
        }
    }
    let mut units = BTreeMap::new();
    for (unit, state) in check.unit_states(run) {
        let record = check.records.iter().find(|record| record.unit == unit);
        let state = match state {
            _ if damage.contains_key(&unit) => UnitState::Damaged(damage_label(damage[&unit])),
            Lineage::Damaged(why) => UnitState::Damaged(why),
            Lineage::Partial => UnitState::Partial,
            Lineage::Stale(why) => UnitState::Stale(why),
            Lineage::Complete => match (record, newest_input, check.completed_at(&unit)) {
                (Some(record), Some((input, newest)), Some(completed))
                    if record.inputs.is_empty() && newest > completed =>
                {
                    UnitState::Stale(format!("`{input}` changed after it completed"))
                }
                _ => UnitState::Complete,
            },
        };
        units.insert(unit, state);
    }
    for (unit, counts) in damage {
        units
            .entry(unit)
            .or_insert_with(|| UnitState::Damaged(damage_label(counts)));
    }
    units
}

/// `2 shards`, `1 manifest file`, `1 shard, 1 manifest file`.
fn damage_label((shards, files): (usize, usize)) -> String {
    let plural = |count: usize, what: &str| format!("{count} {what}{}", if count == 1 { "" } else { "s" });
    match (shards, files) {
        (0, files) => plural(files, "manifest file"),
        (shards, 0) => plural(shards, "shard"),
        (shards, files) => format!("{}, {}", plural(shards, "shard"), plural(files, "manifest file")),
    }
}

/// Per `responses` unit, its rows that are not `ok`, by status (a table
/// that cannot be read counts nothing: its damage is shown anyway).
pub fn not_ok_by_unit(run: &Path) -> BTreeMap<String, BTreeMap<String, u64>> {
    #[derive(serde::Deserialize)]
    struct Status {
        status: String,
    }
    let mut units: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let table = TableName::Responses;
    let Ok(Some(store)) =
        ShardStore::open_existing(&run.join(table.dir_name()), table.dir_name(), table.schema())
    else {
        return units;
    };
    for entry in store.entries() {
        let Ok(batches) =
            store.read_columns_where::<Status, _>(&["status"], |other| other.file == entry.file)
        else {
            continue;
        };
        for row in batches.flatten().flatten() {
            if row.status != ResponseStatus::Ok.as_str() {
                *units
                    .entry(entry.unit.clone())
                    .or_default()
                    .entry(row.status)
                    .or_default() += 1;
            }
        }
    }
    units
}

/// `3 error, 1 empty`.
pub fn breakdown(statuses: &BTreeMap<String, u64>) -> String {
    statuses
        .iter()
        .map(|(status, count)| format!("{count} {status}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Prints, per table of a run, its shards and rows, what is damaged, and
/// the state of every unit of work.
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
    let run_check = check_run(run, true);
    let checks = &run_check.tables;
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for check in checks {
        let table = check.table;
        let mut units = BTreeMap::new();
        // The table's own problems, and those across tables found in it.
        let problems: Vec<&Problem> = check
            .problems
            .iter()
            .chain(
                run_check
                    .problems
                    .iter()
                    .filter(|problem| problem.path.starts_with(&check.dir)),
            )
            .collect();
        if check.present {
            writeln!(
                out,
                "  {:<18} {} shards, {} rows{}",
                table.dir_name(),
                check.entries.len(),
                check.entries.iter().map(|entry| entry.rows).sum::<u64>(),
                if problems.is_empty() {
                    String::new()
                } else {
                    format!(", {} problem(s)", problems.len())
                }
            )?;
            for problem in problems.iter().filter(|problem| problem.unit.is_none()) {
                writeln!(out, "    damaged: {problem}")?;
            }
            units = table_units(run, check, checks, &problems);
            if table == TableName::Responses {
                for (unit, statuses) in not_ok_by_unit(run) {
                    if let Some(state) = units.get_mut(&unit)
                        && matches!(state, UnitState::Complete | UnitState::Partial)
                    {
                        *state = UnitState::Incomplete(statuses.values().sum(), breakdown(&statuses));
                    }
                }
            }
        } else {
            writeln!(out, "  {:<18} not started", table.dir_name())?;
        }
        for problem in problems
            .iter()
            .filter(|problem| !check.present && problem.unit.is_none())
        {
            writeln!(out, "    damaged: {problem}")?;
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
                let Some(fingerprint) = fingerprint else {
                    continue;
                };
                for unit in matching {
                    if let Some(record) = check.records.iter().find(|record| record.unit == unit)
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
                UnitState::Damaged(_) => "damaged",
                UnitState::NotStarted => "not started",
                UnitState::Incomplete(..) => "incomplete",
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
    if !run_check.is_intact() {
        writeln!(
            out,
            "the run is damaged: `cfeval verify {}` lists every problem",
            run.display()
        )?;
    }
    Ok(())
}
