//! Lineage: which tables a unit was computed from, whether they are still
//! what it was computed from, and what a stage may take as input.
//!
//! Each completed unit records the digest of every input table
//! ([`TableName::inputs`]) when it completed ([`UnitRecord::inputs`]). A
//! unit is
//!
//! - **complete** when its completion record names exactly its committed
//!   shards and every input still has the recorded digest;
//! - **partial** when shards are committed but it never completed;
//! - **stale** when an input changed (or is gone) since it completed;
//! - **damaged** when its record names a shard with no manifest entry, or a
//!   shard of the unit is missing from the record or disagrees with it.
//!
//! [`require_input`] is what a stage calls on each table it reads: the table
//! is there, every unit complete and current, every slice of a sliced infer
//! unit complete, and every shard intact (BLAKE3, footer, schema). The
//! catalog lock ([`check_catalog_lock`]) lives here too, so that every stage
//! applies the same rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::error::{Error, Result};
use crate::shard::{MANIFEST_DIR, ShardEntry, ShardStore, StoreOptions, UnitRecord, list_names, read_json};
use crate::table::TableName;
use crate::units;

/// The digest of a table's committed shards: BLAKE3 over every manifest
/// entry's file name and hash, in file order. `None` when the table folder
/// does not exist.
pub fn table_digest(run_dir: &Path, table: TableName) -> Result<Option<String>> {
    let dir = run_dir.join(table.dir_name());
    if !dir.is_dir() {
        return Ok(None);
    }
    let manifest_dir = dir.join(MANIFEST_DIR);
    if !manifest_dir.is_dir() {
        return Err(Error::NoManifest {
            run: run_dir.to_path_buf(),
            dir,
        });
    }
    let mut entries: Vec<ShardEntry> = Vec::new();
    for name in list_names(&manifest_dir)? {
        if name.starts_with("part-") && name.ends_with(".json") {
            entries.push(read_json(&manifest_dir.join(name))?);
        }
    }
    crate::shard::drop_replaced(&mut entries);
    Ok(Some(digest_entries(&entries)))
}

/// [`table_digest`] of entries already read.
pub fn digest_entries(entries: &[ShardEntry]) -> String {
    let mut sorted: Vec<(&str, &str)> = entries
        .iter()
        .map(|entry| (entry.file.as_str(), entry.blake3.as_str()))
        .collect();
    sorted.sort_unstable();
    let mut hasher = blake3::Hasher::new();
    for (file, hash) in sorted {
        hasher.update(file.as_bytes());
        hasher.update(b"\t");
        hasher.update(hash.as_bytes());
        hasher.update(b"\n");
    }
    hasher.finalize().to_hex().to_string()
}

/// The digests of the input tables of `table` (a folder of the run at
/// `table_dir`'s parent), by folder name; inputs that do not exist are left
/// out. Empty for a table that is not one of the run's.
pub(crate) fn input_digests(table_dir: &Path, table: &str) -> Result<BTreeMap<String, String>> {
    let mut digests = BTreeMap::new();
    let (Ok(table), Some(run_dir)) = (table.parse::<TableName>(), table_dir.parent()) else {
        return Ok(digests);
    };
    for input in table.inputs() {
        if let Some(digest) = table_digest(run_dir, *input)? {
            digests.insert(input.dir_name().to_string(), digest);
        }
    }
    Ok(digests)
}

/// The state of one unit of work of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnitState {
    /// Completed with exactly its shards, from inputs that are still current.
    Complete,
    /// Shards committed, never completed (a stopped run; it resumes).
    Partial,
    /// Completed, but an input changed or is gone since: why.
    Stale(String),
    /// Its record and its shards disagree: what is wrong.
    Damaged(String),
}

impl std::fmt::Display for UnitState {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnitState::Complete => formatter.write_str("complete"),
            UnitState::Partial => formatter.write_str("partial (shards committed, never completed)"),
            UnitState::Stale(why) => write!(formatter, "stale ({why})"),
            UnitState::Damaged(why) => write!(formatter, "damaged ({why})"),
        }
    }
}

/// The state of every unit of the table at `run_dir/table` with these
/// committed entries and completion records.
pub fn unit_states<'a>(
    run_dir: &Path,
    entries: &[ShardEntry],
    records: impl IntoIterator<Item = &'a UnitRecord>,
) -> BTreeMap<String, UnitState> {
    let by_file: BTreeMap<&str, &ShardEntry> =
        entries.iter().map(|entry| (entry.file.as_str(), entry)).collect();
    let mut digests: BTreeMap<String, std::result::Result<Option<String>, String>> = BTreeMap::new();
    let mut states = BTreeMap::new();
    for record in records {
        let state = record_state(run_dir, record, entries, &by_file, &mut digests);
        states.insert(record.unit.clone(), state);
    }
    for entry in entries {
        states.entry(entry.unit.clone()).or_insert(UnitState::Partial);
    }
    states
}

fn record_state(
    run_dir: &Path,
    record: &UnitRecord,
    entries: &[ShardEntry],
    by_file: &BTreeMap<&str, &ShardEntry>,
    digests: &mut BTreeMap<String, std::result::Result<Option<String>, String>>,
) -> UnitState {
    let listed: BTreeSet<&str> = record.shards.iter().map(String::as_str).collect();
    let mut rows = 0;
    for file in &record.shards {
        match by_file.get(file.as_str()) {
            None => {
                return UnitState::Damaged(format!(
                    "its completion record names {file}, which has no manifest entry"
                ));
            }
            Some(entry) if entry.unit != record.unit => {
                return UnitState::Damaged(format!(
                    "its completion record names {file}, a shard of unit `{}`",
                    entry.unit
                ));
            }
            Some(entry) if entry.fingerprint != record.fingerprint => {
                return UnitState::Damaged(format!(
                    "{file} was made under another fingerprint than the unit completed with"
                ));
            }
            Some(entry) => rows += entry.rows,
        }
    }
    if let Some(extra) = entries
        .iter()
        .find(|entry| entry.unit == record.unit && !listed.contains(entry.file.as_str()))
    {
        return UnitState::Damaged(format!(
            "{} belongs to it, but its completion record does not list it",
            extra.file
        ));
    }
    if rows != record.rows {
        return UnitState::Damaged(format!(
            "its completion record says {} rows, its shards hold {rows}",
            record.rows
        ));
    }
    for (input, recorded) in &record.inputs {
        let Ok(table) = input.parse::<TableName>() else {
            continue;
        };
        let current = digests
            .entry(input.clone())
            .or_insert_with(|| table_digest(run_dir, table).map_err(|error| error.to_string()));
        match current {
            Ok(Some(digest)) if digest == recorded => {}
            Ok(Some(_)) => return UnitState::Stale(format!("`{input}` changed after it completed")),
            Ok(None) => return UnitState::Stale(format!("`{input}` is gone")),
            Err(error) => return UnitState::Stale(format!("`{input}` cannot be read: {error}")),
        }
    }
    UnitState::Complete
}

/// Opens table `table` of the run at `run_dir` as a stage's input and
/// checks that it is ready: there, with committed shards, every unit
/// complete and current (see the module docs), every slice of a sliced infer
/// unit complete, and (with `options.verify`) every shard intact. The
/// refusal names the table, what is wrong and the command that fixes it.
pub fn require_input(run_dir: &Path, table: TableName, options: StoreOptions) -> Result<ShardStore> {
    let not_ready = |detail: String, unit: Option<&str>| Error::InputNotReady {
        table: table.dir_name().to_string(),
        run: run_dir.to_path_buf(),
        detail: format!("{detail}; {}", units::fix_command(run_dir, table, unit)),
    };
    let dir = run_dir.join(table.dir_name());
    let verify = options.verify;
    let Some(store) = ShardStore::open_read_only(&dir, table.dir_name(), table.schema(), options)? else {
        return Err(not_ready(
            format!("the table is missing (no folder {})", dir.display()),
            None,
        ));
    };
    if store.entries().is_empty() {
        return Err(not_ready("it has no committed shards".into(), None));
    }
    let states = unit_states(run_dir, store.entries(), store.units());
    let unready: Vec<(&String, &UnitState)> = states
        .iter()
        .filter(|(_, state)| **state != UnitState::Complete)
        .collect();
    if let Some((unit, state)) = unready.first() {
        let more = match unready.len() {
            1 => String::new(),
            n => format!(" (and {} more unit{})", n - 1, if n == 2 { "" } else { "s" }),
        };
        return Err(not_ready(format!("unit `{unit}` is {state}{more}"), Some(unit)));
    }
    if table == TableName::Responses
        && let Some(missing) = units::missing_slices(states.keys().map(String::as_str)).first()
    {
        return Err(not_ready(
            format!("unit `{missing}` has not run, while other slices of it have"),
            Some(missing),
        ));
    }
    if verify {
        store.verify()?;
    }
    Ok(store)
}

/// The pre-registration lock for later stages: given the catalog hashes of
/// the shards a stage reads, returns the one catalog hash they share, or
/// refuses when they come from different catalogs (unless `allow_mixed`) or
/// when a shard has no catalog hash at all.
pub fn check_catalog_lock<'a>(
    table: &str,
    shards: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    allow_mixed: bool,
) -> Result<Option<String>> {
    let mut hashes: Vec<String> = Vec::new();
    for (file, hash) in shards {
        let Some(hash) = hash else {
            return Err(Error::MissingCatalogHash {
                table: table.to_string(),
                file: file.to_string(),
            });
        };
        if !hashes.iter().any(|known| known == hash) {
            hashes.push(hash.to_string());
        }
    }
    hashes.sort();
    match hashes.len() {
        0 => Ok(None),
        1 => Ok(hashes.pop()),
        _ if allow_mixed => {
            tracing::warn!(
                table,
                catalogs = hashes.len(),
                "combining shards made under different catalogs"
            );
            Ok(None)
        }
        _ => Err(Error::MixedCatalogs {
            table: table.to_string(),
            hashes,
        }),
    }
}

/// The catalog lock applied row by row, for a stage that streams rows of
/// several catalogs' shards: every row must carry `expected` (when the stage
/// was told which catalog the run is locked to) and the catalog of the
/// first row, unless mixed catalogs are allowed. One home for the rule:
/// infer, judge and aggregate all ask it.
#[derive(Debug, Clone, Default)]
pub struct RowCatalogLock {
    expected: Option<String>,
    first: Option<String>,
    allow_mixed: bool,
}

/// A row the [`RowCatalogLock`] refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CatalogConflict {
    /// The row's catalog is not the one the run is locked to.
    Lock { expected: String, found: String },
    /// The row's catalog differs from an earlier row's.
    Mixed { first: String, second: String },
}

impl RowCatalogLock {
    pub fn new(expected: Option<String>, allow_mixed: bool) -> Self {
        Self {
            expected,
            first: None,
            allow_mixed,
        }
    }

    /// Checks one row's catalog hash.
    pub fn check(&mut self, found: &str) -> std::result::Result<(), CatalogConflict> {
        if self.allow_mixed {
            if self.first.is_none() {
                self.first = Some(found.to_string());
            }
            return Ok(());
        }
        if let Some(expected) = &self.expected
            && expected != found
        {
            return Err(CatalogConflict::Lock {
                expected: expected.clone(),
                found: found.to_string(),
            });
        }
        match &self.first {
            None => self.first = Some(found.to_string()),
            Some(first) if first != found => {
                return Err(CatalogConflict::Mixed {
                    first: first.clone(),
                    second: found.to_string(),
                });
            }
            Some(_) => {}
        }
        Ok(())
    }

    /// The catalog of the first row checked.
    pub fn catalog(&self) -> Option<&str> {
        self.first.as_deref()
    }
}

/// [`check_catalog_lock`] over the committed shards of a store.
pub fn check_store_catalog_lock(
    store: &ShardStore,
    table: &str,
    allow_mixed: bool,
) -> Result<Option<String>> {
    check_catalog_lock(
        table,
        store
            .entries()
            .iter()
            .map(|entry| (entry.file.as_str(), entry.catalog_hash.as_deref())),
        allow_mixed,
    )
}

#[cfg(test)]
mod row_lock_tests {
    use super::*;

    #[test]
    fn rows_must_share_one_catalog_and_the_locked_one() {
        let mut lock = RowCatalogLock::new(None, false);
        assert_eq!(lock.check("a"), Ok(()));
        assert_eq!(lock.check("a"), Ok(()));
        assert_eq!(
            lock.check("b"),
            Err(CatalogConflict::Mixed {
                first: "a".into(),
                second: "b".into()
            })
        );
        assert_eq!(lock.catalog(), Some("a"));
        let mut locked = RowCatalogLock::new(Some("a".into()), false);
        assert_eq!(
            locked.check("b"),
            Err(CatalogConflict::Lock {
                expected: "a".into(),
                found: "b".into()
            })
        );
        let mut mixed = RowCatalogLock::new(Some("a".into()), true);
        assert!(mixed.check("b").is_ok() && mixed.check("c").is_ok());
        assert_eq!(mixed.catalog(), Some("b"));
    }
}
