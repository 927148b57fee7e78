//! The stage over a run directory: `cases` in, `variants` out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cfeval_schema::{CaseRow, Provenance, ShardStore, TableName, VariantRow, ids, units};
use rayon::prelude::*;
use serde::Serialize;

use crate::catalog::Catalog;
use crate::engine;
use crate::error::{Error, Result};

/// Settings of the perturb stage.
#[derive(Debug, Clone)]
pub struct Config {
    /// The catalog file.
    pub catalog: PathBuf,
    /// Worker threads (`None`: rayon's default).
    pub threads: Option<usize>,
    /// When the run's later tables (`responses`, `judgments`, `scores`) were
    /// made under another catalog: retire them (true) or refuse (false, the
    /// default: the catalog is pre-registered, a run never mixes two).
    pub retire_downstream: bool,
}

/// Applicable and not-applicable counts of one intervention.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct InterventionCount {
    pub family: String,
    pub applicable: u64,
    pub not_applicable: u64,
}

/// What a perturb run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub catalog: String,
    pub catalog_hash: String,
    pub cases: u64,
    /// Rows written, baselines included.
    pub variants: u64,
    pub applicable: u64,
    pub not_applicable: u64,
    /// Per intervention id (the baseline excluded).
    pub interventions: BTreeMap<String, InterventionCount>,
    /// True when the run was already complete under the same fingerprint.
    pub skipped: bool,
}

const UNIT: &str = units::PERTURB;

/// Applies the catalog to every committed case of `run_dir` and writes
/// `variants`. A rerun with the same cases and catalog does nothing; a
/// changed catalog or changed cases retire the old variants first.
pub fn run(config: &Config, run_dir: &Path) -> Result<Report> {
    let catalog = Catalog::load(&config.catalog)?;
    let run_pack = cfeval_schema::pack::Pack::of_run(run_dir).map_err(Error::Pack)?;
    match (catalog.pack(), &run_pack) {
        (Some(pack), _) => pack.record(run_dir).map_err(Error::Pack)?,
        // A catalog outside any pack is of the compiled oncology pack.
        (None, Some(pack)) if pack.hash() == cfeval_schema::pack::oncology::hash() => {}
        (None, Some(pack)) => {
            return Err(Error::Pack(format!(
                "the run's cases were read with pack `{}`; its catalog is {}, not {}",
                pack.name,
                pack.catalog_path().display(),
                config.catalog.display()
            )));
        }
        (None, None) => {}
    }
    let schema = |source| Error::Schema {
        run: run_dir.to_path_buf(),
        source,
    };
    let cases = ShardStore::open_existing(
        &run_dir.join("cases"),
        "cases",
        <CaseRow as cfeval_schema::Table>::schema(),
    )
    .map_err(schema)?
    .ok_or_else(|| Error::NoCases {
        run: run_dir.to_path_buf(),
    })?
    .with_read_batch_rows(CASES_PER_CHUNK);
    if cases.entries().is_empty() {
        return Err(Error::NoCases {
            run: run_dir.to_path_buf(),
        });
    }
    let inputs: Vec<&str> = cases
        .entries()
        .iter()
        .map(|entry| entry.blake3.as_str())
        .collect();
    let fingerprint = ids::fingerprint(&("perturb", env!("CARGO_PKG_VERSION"), catalog.hash(), &inputs));
    let mut variants = ShardStore::open_table::<VariantRow>(run_dir).map_err(schema)?;
    let mut report = Report {
        catalog: catalog.name().to_string(),
        catalog_hash: catalog.hash().to_string(),
        ..Report::default()
    };
    if variants.is_complete(UNIT, &fingerprint) {
        report.skipped = true;
        return Ok(report);
    }
    lock_downstream(config, run_dir, &variants, catalog.hash())?;
    let stale = variants.entries().iter().any(|entry| entry.unit == UNIT);
    if stale {
        let removed = variants.retire_unit(UNIT).map_err(schema)?;
        tracing::info!(
            removed,
            "retired variants made under other inputs or another catalog"
        );
    }
    let pool = {
        let mut builder = rayon::ThreadPoolBuilder::new();
        if let Some(threads) = config.threads {
            builder = builder.num_threads(threads);
        }
        builder.build().map_err(|error| Error::Pool(error.to_string()))?
    };
    let run_name = run_dir
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut writer = variants.writer(Provenance {
        run: run_name,
        unit: UNIT.to_string(),
        fingerprint: fingerprint.clone(),
        catalog_hash: Some(catalog.hash().to_string()),
    });
    for batch in cases.read_rows::<CaseRow>().map_err(schema)? {
        let batch = batch.map_err(schema)?;
        // A few hundred cases at a time: a case's variants each carry the
        // whole edited chart, so a read batch's worth (thousands of cases)
        // would hold hundreds of MiB at once.
        for cases in batch.chunks(CASES_PER_CHUNK) {
            let rows: Vec<VariantRow> = pool.install(|| {
                cases
                    .par_iter()
                    .flat_map_iter(|case| engine::apply(&catalog, case))
                    .collect()
            });
            report.cases += cases.len() as u64;
            count(&mut report, &rows);
            writer.write_rows(&rows).map_err(schema)?;
        }
    }
    let shards = writer.finish().map_err(schema)?;
    variants
        .mark_complete(UNIT, &fingerprint, &shards)
        .map_err(schema)?;
    Ok(report)
}

/// Cases whose variants are made and written together.
const CASES_PER_CHUNK: usize = 256;

/// Adds `rows` to the report's counts.
fn count(report: &mut Report, rows: &[VariantRow]) {
    for row in rows {
        report.variants += 1;
        if row.intervention == cfeval_schema::vocab::BASELINE {
            continue;
        }
        let count = report
            .interventions
            .entry(row.intervention.clone())
            .or_insert_with(|| InterventionCount {
                family: row.family.clone(),
                ..InterventionCount::default()
            });
        if row.applicable {
            count.applicable += 1;
            report.applicable += 1;
        } else {
            count.not_applicable += 1;
            report.not_applicable += 1;
        }
    }
}

/// The catalog lock, whatever order the stages run in: the run's later
/// tables made under another catalog than `catalog` (their shards' catalog
/// hash, or the current variants' for shards that carry none) are retired
/// when the config says so, and refused otherwise.
fn lock_downstream(config: &Config, run_dir: &Path, variants: &ShardStore, catalog: &str) -> Result<()> {
    let schema = |source| Error::Schema {
        run: run_dir.to_path_buf(),
        source,
    };
    let current = variants.catalog_hash();
    for table in TableName::Variants.downstream() {
        let dir = run_dir.join(table.dir_name());
        let Some(store) =
            ShardStore::open_existing(&dir, table.dir_name(), table.schema()).map_err(schema)?
        else {
            continue;
        };
        let other = store.entries().iter().find_map(|entry| {
            let made_under = entry.catalog_hash.as_deref().or(current)?;
            (made_under != catalog).then(|| made_under.to_string())
        });
        let Some(other) = other else { continue };
        if !config.retire_downstream {
            return Err(Error::CatalogLocked {
                run: run_dir.to_path_buf(),
                table: table.dir_name().to_string(),
                found: other,
                catalog: catalog.to_string(),
                file: config.catalog.clone(),
            });
        }
        let mut store = ShardStore::open(
            &dir,
            table.dir_name(),
            table.schema(),
            cfeval_schema::StoreOptions::default(),
        )
        .map_err(schema)?;
        let removed = store.retire_all().map_err(schema)?;
        tracing::warn!(%table, removed, "retired rows made under another catalog");
    }
    Ok(())
}

pub use cfeval_schema::lineage::{check_catalog_lock, check_store_catalog_lock};
