//! What the report reads from a run folder: the `scores` table (without the
//! BCa rows) and, for provenance, the judges' prompt hashes from `judgments`
//! and the subjects' settings from `responses`. Only `scores` is loaded whole
//! (it holds one row per estimate, not per tuple); the other tables are
//! streamed through a few projected columns into sets.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cfeval_schema::{JudgmentRow, ResponseRow, ResponseStatus, ScoreRow, ShardStore, Table};
use serde::Deserialize;

use crate::error::{Error, Result};

/// How the shards of one table were made.
#[derive(Debug, Clone, Default)]
pub struct TableProvenance {
    pub shards: usize,
    pub rows: u64,
    pub cfeval_versions: BTreeSet<String>,
    pub fingerprints: BTreeSet<String>,
    pub catalog_hashes: BTreeSet<String>,
}

/// One judge as seen in the `judgments` table.
#[derive(Debug, Clone, Default)]
pub struct JudgeInfo {
    pub prompt_hashes: BTreeSet<String>,
    pub catalog_hashes: BTreeSet<String>,
    pub judgments: u64,
    pub errors: u64,
}

/// One subject as seen in the `responses` table.
#[derive(Debug, Clone, Default)]
pub struct SubjectInfo {
    pub is_control: bool,
    pub modes: BTreeSet<String>,
    /// `backend/model` pairs.
    pub backends: BTreeSet<String>,
    pub prompt_hashes: BTreeSet<String>,
    /// Temperatures as written in the table (formatted, so they sort).
    pub temperatures: BTreeSet<String>,
    pub seeds: BTreeSet<u64>,
    pub responses: u64,
    /// Response rows that are not `ok`, by status.
    pub not_ok: BTreeMap<String, u64>,
}

/// Everything the report is made from.
#[derive(Debug, Clone, Default)]
pub struct RunData {
    /// The run's name (from the scores, else the folder's name).
    pub run: String,
    /// Score rows, BCa rows left out (the report shows percentile intervals).
    pub scores: Vec<ScoreRow>,
    pub scores_provenance: Option<TableProvenance>,
    /// Judge → what it judged with; `None` when the run has no judgments.
    pub judges: Option<BTreeMap<String, JudgeInfo>>,
    /// Subject → its settings; `None` when the run has no responses.
    pub subjects: Option<BTreeMap<String, SubjectInfo>>,
    /// The pack the run was made with (`pack.json`): its name and task;
    /// `None`: oncology, built in.
    pub pack: Option<(String, String)>,
}

#[derive(Deserialize)]
struct PackRecord {
    pack: String,
    task: String,
}

fn open<T: Table>(run_dir: &Path) -> Result<Option<ShardStore>> {
    ShardStore::open_existing(&run_dir.join(T::NAME), T::NAME, T::schema()).map_err(|source| Error::Table {
        table: T::NAME,
        run: run_dir.to_path_buf(),
        source,
    })
}

fn table_error<'a>(table: &'static str, run_dir: &'a Path) -> impl Fn(cfeval_schema::Error) -> Error + 'a {
    move |source| Error::Table {
        table,
        run: run_dir.to_path_buf(),
        source,
    }
}

/// Streams `columns` of table `T`, deserialized as `Row`, into `each`.
fn stream<T: Table, Row: for<'de> Deserialize<'de>>(
    store: &ShardStore,
    run_dir: &Path,
    columns: &'static [&'static str],
    mut each: impl FnMut(Row),
) -> Result<()> {
    let scan = store.scan(Some(columns)).map_err(table_error(T::NAME, run_dir))?;
    for batch in scan {
        let batch = batch.map_err(table_error(T::NAME, run_dir))?;
        let rows: Vec<Row> = serde_arrow::from_record_batch(&batch).map_err(|error| Error::Columns {
            table: T::NAME,
            run: run_dir.to_path_buf(),
            detail: format!("{} ({error})", columns.join(", ")),
        })?;
        rows.into_iter().for_each(&mut each);
    }
    Ok(())
}

#[derive(Deserialize)]
struct JudgeColumns {
    judge: String,
    prompt_hash: String,
    catalog_hash: String,
    status: String,
}

#[derive(Deserialize)]
struct SubjectColumns {
    subject: String,
    is_control: bool,
    mode: String,
    backend: String,
    model: String,
    prompt_hash: String,
    temperature: f64,
    seed: Option<u64>,
    status: String,
}

/// Reads what the report needs from `run_dir`. Missing tables read as absent.
pub fn read(run_dir: &Path) -> Result<RunData> {
    let mut data = RunData::default();
    let record = run_dir.join(cfeval_schema::pack::RUN_RECORD);
    if let Ok(text) = std::fs::read_to_string(&record) {
        let parsed: PackRecord = serde_json::from_str(&text).map_err(|error| Error::Columns {
            table: "pack.json",
            run: run_dir.to_path_buf(),
            detail: error.to_string(),
        })?;
        data.pack = Some((parsed.pack, parsed.task));
    }
    if let Some(store) = open::<ScoreRow>(run_dir)? {
        let mut provenance = TableProvenance {
            shards: store.entries().len(),
            rows: store.rows(),
            ..TableProvenance::default()
        };
        for entry in store.entries() {
            provenance.cfeval_versions.insert(entry.cfeval_version.clone());
            provenance.fingerprints.insert(entry.fingerprint.clone());
            provenance.catalog_hashes.extend(entry.catalog_hash.clone());
        }
        for batch in store
            .read_rows::<ScoreRow>()
            .map_err(table_error(ScoreRow::NAME, run_dir))?
        {
            let batch = batch.map_err(table_error(ScoreRow::NAME, run_dir))?;
            data.scores.extend(
                batch
                    .into_iter()
                    .filter(|row| row.ci_method.as_deref() != Some("bca")),
            );
        }
        data.scores_provenance = Some(provenance);
    }
    if let Some(store) = open::<JudgmentRow>(run_dir)? {
        let mut judges: BTreeMap<String, JudgeInfo> = BTreeMap::new();
        stream::<JudgmentRow, JudgeColumns>(
            &store,
            run_dir,
            &["judge", "prompt_hash", "catalog_hash", "status"],
            |row| {
                let info = judges.entry(row.judge).or_default();
                info.judgments += 1;
                // A truncated or refused answer is not the judge's error.
                info.errors += u64::from(row.status == "error");
                if !info.prompt_hashes.contains(&row.prompt_hash) {
                    info.prompt_hashes.insert(row.prompt_hash);
                }
                if !info.catalog_hashes.contains(&row.catalog_hash) {
                    info.catalog_hashes.insert(row.catalog_hash);
                }
            },
        )?;
        data.judges = Some(judges);
    }
    if let Some(store) = open::<ResponseRow>(run_dir)? {
        let mut subjects: BTreeMap<String, SubjectInfo> = BTreeMap::new();
        stream::<ResponseRow, SubjectColumns>(
            &store,
            run_dir,
            &[
                "subject",
                "is_control",
                "mode",
                "backend",
                "model",
                "prompt_hash",
                "temperature",
                "seed",
                "status",
            ],
            |row| {
                let info = subjects.entry(row.subject).or_default();
                info.responses += 1;
                if row.status != ResponseStatus::Ok.as_str() {
                    *info.not_ok.entry(row.status).or_default() += 1;
                }
                info.is_control |= row.is_control;
                if !info.modes.contains(&row.mode) {
                    info.modes.insert(row.mode);
                }
                info.backends.insert(format!("{}/{}", row.backend, row.model));
                if !info.prompt_hashes.contains(&row.prompt_hash) {
                    info.prompt_hashes.insert(row.prompt_hash);
                }
                info.temperatures.insert(format!("{}", row.temperature));
                info.seeds.extend(row.seed);
            },
        )?;
        data.subjects = Some(subjects);
    }
    data.run = data
        .scores
        .first()
        .map(|row| row.run.clone())
        .filter(|run| !run.is_empty())
        .or_else(|| {
            run_dir
                .file_name()
                .map(|name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    Ok(data)
}
