//! Integration tests of E-Synthesis and the cohort generator.

// Helpers shared by the tests panic on failure like the tests do.
#![allow(clippy::unwrap_used)]

mod agentclinic;
mod bad_input;
mod cohort_quality;
mod determinism;
mod intake;
mod llm_extractor;
mod notes_gold;
mod user_cohorts;

use std::path::Path;

use cfeval_schema::{CaseRow, QuarantineRow, ShardStore, StoreOptions, Table};

/// Every `cases` row of a run.
pub fn case_rows(run: &Path) -> Vec<CaseRow> {
    let store = ShardStore::open_table::<CaseRow>(run).unwrap();
    store
        .read_rows::<CaseRow>()
        .unwrap()
        .flat_map(|batch| batch.unwrap())
        .collect()
}

/// Every `cases_quarantine` row of a run.
pub fn quarantine_rows(run: &Path) -> Vec<QuarantineRow> {
    let store = ShardStore::open(
        &run.join("cases_quarantine"),
        "cases_quarantine",
        QuarantineRow::schema(),
        StoreOptions::default(),
    )
    .unwrap();
    store
        .read_rows::<QuarantineRow>()
        .unwrap()
        .flat_map(|batch| batch.unwrap())
        .collect()
}
