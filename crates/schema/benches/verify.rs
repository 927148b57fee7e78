//! The cost of verifying what is read, per table of a run: the tables of
//! `CFEVAL_BENCH_RUN` (a real run folder), or N sample rows (default
//! 100,000) of `cases`, `variants`, `responses` and `judgments` written
//! here. For each table: a read of every column and of the columns the judge
//! reads with the BLAKE3 check off, then `ShardStore::verify` (every shard
//! hashed and its footer checked: what the first verified read of a process
//! adds; later reads find the shard verified).
//!
//! Prints one JSON line per table. The files are read from the page cache
//! (warmed first, as when a stage reads what the previous one wrote); on a
//! cold cache the hash reads each file once more from disk.

use std::time::Instant;

use cfeval_schema::{
    CaseRow, JudgmentRow, Provenance, ResponseRow, ShardStore, StoreOptions, Table, VariantRow, sample,
};

fn write<T: Table>(
    dir: &std::path::Path,
    rows: u64,
    make: fn(u64) -> T,
) -> Result<(), Box<dyn std::error::Error>> {
    let store = ShardStore::open(&dir.join(T::NAME), T::NAME, T::schema(), StoreOptions::default())?;
    let mut writer = store.writer(Provenance {
        run: "bench".into(),
        unit: "all".into(),
        ..Default::default()
    });
    let mut start = 0;
    while start < rows {
        let end = (start + 10_000).min(rows);
        let batch: Vec<T> = (start..end).map(make).collect();
        writer.write_rows(&batch)?;
        start = end;
    }
    writer.finish()?;
    Ok(())
}

/// Seconds to scan every shard of the table (`columns`: a projection).
fn read(
    dir: &std::path::Path,
    table: &str,
    schema: arrow_schema::SchemaRef,
    verify: bool,
    columns: Option<&[&str]>,
) -> Result<(f64, u64), Box<dyn std::error::Error>> {
    let store = ShardStore::open_read_only(
        &dir.join(table),
        table,
        schema,
        StoreOptions {
            verify,
            ..StoreOptions::default()
        },
    )?
    .ok_or("no table")?;
    let start = Instant::now();
    let mut rows = 0u64;
    for batch in store.scan(columns)? {
        rows += batch?.num_rows() as u64;
    }
    Ok((start.elapsed().as_secs_f64(), rows))
}

fn measure(
    dir: &std::path::Path,
    table: &str,
    schema: arrow_schema::SchemaRef,
    columns: &[&str],
) -> Result<String, Box<dyn std::error::Error>> {
    // Warm the page cache first, so that every read below finds the files
    // there alike.
    read(dir, table, schema.clone(), false, None)?;
    let (all_off, rows) = read(dir, table, schema.clone(), false, None)?;
    let (some_off, _) = read(dir, table, schema.clone(), false, Some(columns))?;
    // What verification adds: every shard hashed (and its footer checked)
    // once in the process; later reads find it verified.
    let store = ShardStore::open_read_only(&dir.join(table), table, schema.clone(), StoreOptions::default())?
        .ok_or("no table")?;
    let start = Instant::now();
    let hashed = store.verify()?;
    let verify_s = start.elapsed().as_secs_f64();
    let (some_on, _) = read(dir, table, schema, true, Some(columns))?;
    let mib = hashed as f64 / (1024.0 * 1024.0);
    Ok(format!(
        "{{\"table\":\"{table}\",\"rows\":{rows},\"shards\":{},\"mib\":{mib:.1},\"columns_read\":{},\"read_all_s\":{all_off:.4},\"read_columns_s\":{some_off:.4},\"verify_s\":{verify_s:.4},\"hash_mib_per_s\":{:.0},\"read_columns_after_verify_s\":{some_on:.4},\"overhead_vs_read_columns_pct\":{:.1},\"overhead_vs_read_all_pct\":{:.1}}}",
        store.entries().len(),
        columns.len(),
        mib / verify_s.max(1e-9),
        100.0 * verify_s / some_off,
        100.0 * verify_s / all_off,
    ))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows: u64 = std::env::var("CFEVAL_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    // A real run's tables (`CFEVAL_BENCH_RUN`), or sample rows written here.
    let (dir, scratch) = match std::env::var_os("CFEVAL_BENCH_RUN") {
        Some(run) => (std::path::PathBuf::from(run), false),
        None => {
            let dir = std::env::var_os("CFEVAL_BENCH_DIR")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(std::env::temp_dir)
                .join(format!("cfeval-bench-verify-{}", std::process::id()));
            write(&dir, rows, sample::case)?;
            write(&dir, rows, sample::variant)?;
            write(&dir, rows, sample::response)?;
            write(&dir, rows, sample::judgment)?;
            (dir, true)
        }
    };
    // The columns the judge (and aggregate) read of each table.
    let tables: [(&str, arrow_schema::SchemaRef, &[&str]); 4] = [
        (CaseRow::NAME, CaseRow::schema(), &["case_id", "reference"]),
        (
            VariantRow::NAME,
            VariantRow::schema(),
            &[
                "case_id",
                "variant_id",
                "family",
                "applicable",
                "expected_text",
                "expected",
                "diff",
            ],
        ),
        (
            ResponseRow::NAME,
            ResponseRow::schema(),
            &[
                "subject",
                "mode",
                "case_id",
                "variant_id",
                "family",
                "catalog_hash",
                "status",
                "error",
                "text",
                "recommendation",
                "sections_read",
            ],
        ),
        (
            JudgmentRow::NAME,
            JudgmentRow::schema(),
            &[
                "judge",
                "subject",
                "mode",
                "case_id",
                "variant_id",
                "intervention",
                "family",
                "metric",
                "score",
                "label",
            ],
        ),
    ];
    for (table, schema, columns) in tables {
        println!("{}", measure(&dir, table, schema, columns)?);
    }
    if scratch {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}
