//! Helpers: run the binary, write a sample run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cfeval_schema::{Provenance, ShardStore, StoreOptions, Table, TableName, sample};

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// Runs `cfeval` with `args`.
pub fn cfeval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cfeval"))
        .args(args)
        .output()
        .expect("run cfeval")
}

/// Runs `cfeval` with `args` in `cwd`, as a user's shell would (plain
/// progress, no log filter, no model keys or URLs from the environment).
pub fn cfeval_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cfeval"))
        .current_dir(cwd)
        .args(args)
        .env("CFEVAL_PROGRESS", "plain")
        .env_remove("RUST_LOG")
        .env_remove("VLLM_API_KEY")
        .env_remove("VLLM_BASE_URL")
        .output()
        .expect("run cfeval")
}

/// The stdout of a command that must have succeeded (else both streams).
pub fn succeeded(output: Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every row of a run's table.
pub fn rows<T: Table + serde::de::DeserializeOwned>(run: &Path) -> Vec<T> {
    let store = ShardStore::open_table::<T>(run).expect("table");
    let mut rows = Vec::new();
    for batch in store.read_rows::<T>().expect("read") {
        rows.extend(batch.expect("batch"));
    }
    rows
}

fn write<T: Table>(run: &Path, table: TableName, rows: Vec<T>) {
    let store = ShardStore::open(
        &run.join(table.dir_name()),
        table.dir_name(),
        T::schema(),
        StoreOptions {
            target_shard_bytes: 16 * 1024,
            ..StoreOptions::default()
        },
    )
    .expect("open store");
    let mut writer = store.writer(Provenance {
        run: "sample".into(),
        unit: "all".into(),
        fingerprint: "sample".into(),
        catalog_hash: Some("catalog".into()),
    });
    for chunk in rows.chunks(100) {
        writer.write_rows(chunk).expect("write");
    }
    writer.finish().expect("finish");
}

/// Number of sample rows per table.
pub const SAMPLE_ROWS: u64 = 600;

/// Writes `SAMPLE_ROWS` rows of every table into `run`.
pub fn write_sample_run(run: &Path) {
    write(
        run,
        TableName::Cases,
        (0..SAMPLE_ROWS).map(sample::case).collect(),
    );
    write(
        run,
        TableName::CasesQuarantine,
        (0..SAMPLE_ROWS).map(sample::quarantine).collect(),
    );
    write(
        run,
        TableName::Variants,
        (0..SAMPLE_ROWS).map(sample::variant).collect(),
    );
    write(
        run,
        TableName::Responses,
        (0..SAMPLE_ROWS).map(sample::response).collect(),
    );
    write(
        run,
        TableName::Judgments,
        (0..SAMPLE_ROWS).map(sample::judgment).collect(),
    );
    write(
        run,
        TableName::Scores,
        (0..SAMPLE_ROWS).map(sample::score).collect(),
    );
}

/// The bundled intervention catalog's absolute path.
pub fn catalog() -> String {
    workspace_root()
        .join("data/packs/oncology/catalog.yaml")
        .display()
        .to_string()
}

/// The 107 AgentClinic MedQA OSCE cases of the shared data folder, or
/// `None` (with a message: the test is skipped) where that folder is absent.
pub fn osce_cases() -> Option<PathBuf> {
    let cases = workspace_root().join("../shared/data/external/agentclinic_medqa.jsonl");
    if cases.is_file() {
        Some(cases)
    } else {
        eprintln!("skipped: {} is absent (the shared data folder)", cases.display());
        None
    }
}
