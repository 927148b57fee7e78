//! The shards cfeval writes are read by pyarrow, polars and duckdb with the
//! expected column names and types (`tests/python/check_tables.py`).

use std::process::Command;

use arrow_schema::DataType;
use cfeval_schema::TableName;

use crate::support::*;

fn kind(data_type: &DataType) -> &'static str {
    match data_type {
        DataType::Utf8 => "string",
        DataType::UInt32 => "uint32",
        DataType::UInt64 => "uint64",
        DataType::Float64 => "float64",
        DataType::Boolean => "bool",
        DataType::List(_) => "list",
        DataType::Struct(_) => "struct",
        other => panic!("no reader check for Arrow type {other}"),
    }
}

/// The Python with the readers: `CFEVAL_PYTHON`, else the project's `.venv`
/// made by `scripts/install.sh`.
fn python() -> std::path::PathBuf {
    if let Some(python) = std::env::var_os("CFEVAL_PYTHON") {
        return python.into();
    }
    workspace_root().join(".venv/bin/python")
}

#[test]
fn pyarrow_polars_and_duckdb_read_every_table() {
    let python = python();
    assert!(
        python.exists(),
        "{} not found: run `bash scripts/install.sh` first (it installs pyarrow, polars and duckdb)",
        python.display()
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    write_sample_run(&run);
    let mut expected = serde_json::Map::new();
    for table in TableName::ALL {
        let columns: Vec<serde_json::Value> = table
            .schema()
            .fields()
            .iter()
            .map(|field| serde_json::json!([field.name(), kind(field.data_type())]))
            .collect();
        expected.insert(
            table.dir_name().into(),
            serde_json::json!({"columns": columns, "rows": SAMPLE_ROWS}),
        );
    }
    let expected_path = dir.path().join("expected.json");
    std::fs::write(&expected_path, serde_json::to_vec(&expected).expect("json")).expect("write");
    let output = Command::new(&python)
        .arg(workspace_root().join("tests/python/check_tables.py"))
        .arg(&run)
        .arg(&expected_path)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "python readers failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stdout.lines().filter(|line| line.contains("agree")).count(),
        TableName::ALL.len(),
        "{stdout}"
    );
}
