//! Checking a whole run (`cfeval verify`, `cfeval status`): every check a
//! read makes, on every shard of every table, plus what only the whole run
//! shows — orphan and missing files, unit records that disagree with their
//! shards, input tables that are gone, shards made under another catalog.
//! Nothing here stops at the first problem, and nothing is written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::Error;
use crate::lineage::{UnitState, digest_entries, unit_states};
use crate::shard::{
    MANIFEST_DIR, ShardEntry, ShardRef, UnitRecord, check_entry, check_record, check_shard, entry_name,
    is_shard_name, list_names, read_json, unit_record_name,
};
use crate::table::TableName;

/// One thing wrong with a run, in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file (or folder) that is wrong.
    pub path: PathBuf,
    /// The unit of work it belongs to, when known.
    pub unit: Option<String>,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}: {}", self.path.display(), self.message)
    }
}

/// What checking one table found.
#[derive(Debug, Clone)]
pub struct TableCheck {
    pub table: TableName,
    /// The table folder.
    pub dir: PathBuf,
    /// Whether the folder exists.
    pub present: bool,
    /// The manifest entries that could be read (their shards may be damaged).
    pub entries: Vec<ShardEntry>,
    /// The unit records that could be read.
    pub records: Vec<UnitRecord>,
    /// Damage: what makes the table unfit to read.
    pub problems: Vec<Problem>,
    /// Not damage, worth saying: orphan shards, leftover temp files,
    /// partial and stale units.
    pub notes: Vec<Problem>,
    /// Bytes hashed.
    pub bytes: u64,
}

impl TableCheck {
    /// The state of each unit (lineage), before damage to shards is counted.
    pub fn unit_states(&self, run_dir: &Path) -> BTreeMap<String, UnitState> {
        unit_states(run_dir, &self.entries, &self.records)
    }

    /// When `unit` last completed (its completion record's modification
    /// time), if it did.
    pub fn completed_at(&self, unit: &str) -> Option<SystemTime> {
        modified(&self.dir.join(MANIFEST_DIR).join(unit_record_name(unit)))
    }

    /// When the newest readable entry was committed (its manifest entry's
    /// modification time).
    pub fn last_commit_at(&self) -> Option<SystemTime> {
        self.entries
            .iter()
            .filter_map(|entry| modified(&self.dir.join(MANIFEST_DIR).join(entry_name(&entry.file))))
            .max()
    }

    /// Damaged shards and records per unit.
    pub fn damage_by_unit(&self) -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for problem in &self.problems {
            if let Some(unit) = &problem.unit {
                *counts.entry(unit.clone()).or_default() += 1;
            }
        }
        counts
    }
}

/// What checking a run found.
#[derive(Debug, Clone)]
pub struct RunCheck {
    pub run: PathBuf,
    pub tables: Vec<TableCheck>,
    /// Problems across tables (a missing input, another catalog).
    pub problems: Vec<Problem>,
}

impl RunCheck {
    /// Every problem, table by table, then those across tables.
    pub fn problems(&self) -> impl Iterator<Item = &Problem> {
        self.tables
            .iter()
            .flat_map(|table| table.problems.iter())
            .chain(self.problems.iter())
    }

    /// Every note.
    pub fn notes(&self) -> impl Iterator<Item = &Problem> {
        self.tables.iter().flat_map(|table| table.notes.iter())
    }

    /// Whether nothing is damaged.
    pub fn is_intact(&self) -> bool {
        self.problems().next().is_none()
    }

    /// The check of `table`.
    pub fn table(&self, table: TableName) -> Option<&TableCheck> {
        self.tables.iter().find(|check| check.table == table)
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path)
        .and_then(|metadata| metadata.modified())
        .ok()
}

/// What a problem says about a shard, without the "run `cfeval verify`"
/// hint of the read path (this is that command).
fn describe(error: &Error) -> String {
    match error {
        Error::DamagedShard { detail, .. } | Error::BadManifest { detail, .. } => detail.clone(),
        Error::MissingShard { manifest, .. } => format!(
            "missing (its manifest entry {} names it)",
            manifest
                .file_name()
                .map(|name| format!("{MANIFEST_DIR}/{}", name.to_string_lossy()))
                .unwrap_or_default()
        ),
        Error::WrongSchema { table, detail, .. } => format!("wrong schema for table `{table}`: {detail}"),
        Error::ReadShard { source, .. } => format!("not readable as Parquet: {source}"),
        Error::Manifest { source, .. } => format!("not a valid manifest file: {source}"),
        other => {
            let mut text = other.to_string();
            let mut source = std::error::Error::source(other);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}

/// Checks every shard, entry and record of one table (`hash`: also every
/// shard's BLAKE3).
pub fn check_table(run_dir: &Path, table: TableName, hash: bool) -> TableCheck {
    let dir = run_dir.join(table.dir_name());
    let mut check = TableCheck {
        table,
        dir: dir.clone(),
        present: false,
        entries: Vec::new(),
        records: Vec::new(),
        problems: Vec::new(),
        notes: Vec::new(),
        bytes: 0,
    };
    let problem = |path: &Path, unit: Option<&str>, message: String| Problem {
        path: path.to_path_buf(),
        unit: unit.map(str::to_string),
        message,
    };
    match std::fs::symlink_metadata(&dir) {
        Err(_) => return check,
        Ok(metadata) if metadata.file_type().is_symlink() || !metadata.is_dir() => {
            check.present = true;
            check.problems.push(problem(
                &dir,
                None,
                "is a symbolic link or not a folder; a table is a plain folder of the run".into(),
            ));
            return check;
        }
        Ok(_) => check.present = true,
    }
    let manifest_dir = dir.join(MANIFEST_DIR);
    let names = list_names(&dir).unwrap_or_default();
    let part_files: Vec<&String> = names.iter().filter(|name| is_shard_name(name)).collect();
    if !manifest_dir.is_dir() {
        check.problems.push(problem(
            &dir,
            None,
            format!(
                "no manifest folder ({MANIFEST_DIR}/ is missing): none of its {} shard file(s) can be trusted",
                part_files.len()
            ),
        ));
        return check;
    }
    let manifest_names = match list_names(&manifest_dir) {
        Ok(names) => names,
        Err(error) => {
            check
                .problems
                .push(problem(&manifest_dir, None, describe(&error)));
            return check;
        }
    };
    let schema = table.schema();
    for name in &manifest_names {
        let path = manifest_dir.join(name);
        if name.starts_with("part-") && name.ends_with(".json") {
            let entry: ShardEntry = match read_json(&path) {
                Ok(entry) => entry,
                Err(error) => {
                    check.problems.push(problem(&path, None, describe(&error)));
                    continue;
                }
            };
            if let Err(error) = check_entry(table.dir_name(), name, &path, &entry) {
                check
                    .problems
                    .push(problem(&path, Some(&entry.unit), describe(&error)));
                continue;
            }
            let shard = ShardRef::new(&dir, &entry);
            match check_shard(table.dir_name(), &schema, &shard, hash) {
                Ok(bytes) => check.bytes += bytes,
                Err(error) => check
                    .problems
                    .push(problem(&shard.path, Some(&entry.unit), describe(&error))),
            }
            check.entries.push(entry);
        } else if name.starts_with("unit-") && name.ends_with(".json") {
            let record: UnitRecord = match read_json(&path) {
                Ok(record) => record,
                Err(error) => {
                    check.problems.push(problem(&path, None, describe(&error)));
                    continue;
                }
            };
            if let Err(error) = check_record(name, &path, &record) {
                check
                    .problems
                    .push(problem(&path, Some(&record.unit), describe(&error)));
                continue;
            }
            check.records.push(record);
        } else if name.ends_with(".tmp") {
            check.notes.push(problem(
                &path,
                None,
                "leftover temp file of an interrupted write (removed when a writer next opens the table)"
                    .into(),
            ));
        }
    }
    for replaced in crate::shard::drop_replaced(&mut check.entries) {
        check.notes.push(problem(
            &dir.join(&replaced.file),
            Some(&replaced.unit),
            "shard replaced by a rewrite of its unit, not retired yet (readers skip it; removed when a \
             writer next opens the table)"
                .into(),
        ));
    }
    let named: BTreeSet<&str> = check.entries.iter().map(|entry| entry.file.as_str()).collect();
    for name in part_files {
        if !named.contains(name.as_str()) {
            check.notes.push(problem(
                &dir.join(name),
                None,
                "orphan shard: no manifest entry names it (an interrupted write, or a deleted entry); \
                 removed when a writer next opens the table"
                    .into(),
            ));
        }
    }
    for (unit, state) in check.unit_states(run_dir) {
        let record_path = manifest_dir.join(unit_record_name(&unit));
        match state {
            UnitState::Complete => {}
            UnitState::Damaged(why) => check.problems.push(problem(
                &record_path,
                Some(&unit),
                format!("unit `{unit}` is damaged: {why}"),
            )),
            UnitState::Partial => check.notes.push(problem(
                &dir,
                Some(&unit),
                format!(
                    "unit `{unit}` is partial (shards committed, never completed; it resumes on the next run)"
                ),
            )),
            UnitState::Stale(why) => check.notes.push(problem(
                &record_path,
                Some(&unit),
                format!("unit `{unit}` is stale: {why}"),
            )),
        }
    }
    check
}

/// Checks every table of the run at `run_dir`, and across tables: an input
/// table a unit was computed from must still be there, and every shard must
/// be made under the catalog of the run's variants.
pub fn check_run(run_dir: &Path, hash: bool) -> RunCheck {
    let tables: Vec<TableCheck> = TableName::ALL
        .into_iter()
        .map(|table| check_table(run_dir, table, hash))
        .collect();
    let mut problems = Vec::new();
    let find = |table: TableName| tables.iter().find(|check| check.table == table);
    for check in &tables {
        for input in check.table.inputs() {
            let Some(record) = check
                .records
                .iter()
                .find(|record| record.inputs.contains_key(input.dir_name()))
            else {
                continue;
            };
            let gone = find(*input).is_none_or(|input| !input.present);
            if gone {
                problems.push(Problem {
                    path: run_dir.join(input.dir_name()),
                    unit: None,
                    message: format!(
                        "table `{input}` is missing, but `{}` was computed from it (unit `{}`)",
                        check.table, record.unit
                    ),
                });
            }
        }
    }
    // A partial unit is a stopped run, unless a later table was computed
    // from this table as it is now: then its record was deleted.
    for check in &tables {
        let digest = digest_entries(&check.entries);
        for (unit, state) in check.unit_states(run_dir) {
            if state != UnitState::Partial {
                continue;
            }
            let consumer = tables.iter().find_map(|other| {
                other
                    .records
                    .iter()
                    .find(|record| record.inputs.get(check.table.dir_name()) == Some(&digest))
                    .map(|record| (other.table, record.unit.clone()))
            });
            if let Some((table, consumer)) = consumer {
                problems.push(Problem {
                    path: check.dir.join(MANIFEST_DIR),
                    unit: Some(unit.clone()),
                    message: format!(
                        "unit `{unit}` has no completion record, but `{table}` unit `{consumer}` was computed \
                         from this table as it is (a deleted unit record?)"
                    ),
                });
            }
        }
    }
    if let Some(variants) = find(TableName::Variants) {
        let catalogs: BTreeSet<&str> = variants
            .entries
            .iter()
            .filter_map(|entry| entry.catalog_hash.as_deref())
            .collect();
        if catalogs.len() > 1 {
            problems.push(Problem {
                path: variants.dir.clone(),
                unit: None,
                message: format!(
                    "shards made under {} different catalogs ({})",
                    catalogs.len(),
                    catalogs.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            });
        } else if let Some(catalog) = catalogs.first() {
            for table in TableName::Variants.downstream() {
                let Some(check) = find(table) else { continue };
                let other: Vec<&ShardEntry> = check
                    .entries
                    .iter()
                    .filter(|entry| entry.catalog_hash.as_deref().is_some_and(|hash| hash != *catalog))
                    .collect();
                if let Some(first) = other.first() {
                    problems.push(Problem {
                        path: check.dir.join(&first.file),
                        unit: Some(first.unit.clone()),
                        message: format!(
                            "made under catalog {}, but the run's variants are under catalog {catalog}{}",
                            first.catalog_hash.as_deref().unwrap_or_default(),
                            match other.len() {
                                1 => String::new(),
                                n => format!(" ({} more shards of `{table}` too)", n - 1),
                            }
                        ),
                    });
                }
            }
        }
    }
    RunCheck {
        run: run_dir.to_path_buf(),
        tables,
        problems,
    }
}
