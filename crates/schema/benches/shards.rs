//! Shard throughput: write and read N `judgments` rows (default 1,000,000).
//!
//! Prints one JSON line with seconds per phase, rows/s and peak RSS. Compared
//! with pyarrow doing the same work by `benches/shards.sh` (see BENCHMARKS.md).
//!
//! Phases: `write` = rows in memory → committed ZSTD Parquet shards (Arrow
//! conversion, encoding, fsync, manifest); `read` = committed shards → Arrow
//! record batches; `decode` = record batches → row structs.

use std::time::Instant;

use cfeval_schema::{JudgmentRow, Provenance, ShardStore, Table, sample};

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows: u64 = std::env::var("CFEVAL_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = std::env::var_os("CFEVAL_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("cfeval-bench-shards-{}", std::process::id()));
    let data: Vec<JudgmentRow> = (0..rows).map(sample::judgment).collect();

    let start = Instant::now();
    let store = ShardStore::open_table::<JudgmentRow>(&dir)?;
    let mut writer = store.writer(Provenance {
        run: "bench".into(),
        unit: "all".into(),
        ..Default::default()
    });
    writer.write_rows(&data)?;
    let entries = writer.finish()?;
    let write = start.elapsed().as_secs_f64();
    drop(data);
    let bytes: u64 = entries.iter().map(|entry| entry.bytes).sum();

    let store = ShardStore::open_table::<JudgmentRow>(&dir)?;
    let start = Instant::now();
    let mut batches = Vec::new();
    for batch in store.scan(None)? {
        batches.push(batch?);
    }
    let read = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut decoded = 0usize;
    for batch in &batches {
        decoded += JudgmentRow::from_batch(batch)?.len();
    }
    let decode = start.elapsed().as_secs_f64();
    assert_eq!(decoded as u64, rows);
    std::fs::remove_dir_all(&dir)?;
    println!(
        "{{\"impl\":\"cfeval\",\"rows\":{rows},\"bytes\":{bytes},\"write_s\":{write:.4},\"read_s\":{read:.4},\"decode_s\":{decode:.4},\"write_rows_per_s\":{:.0},\"read_rows_per_s\":{:.0},\"peak_rss_mib\":{:.1}}}",
        rows as f64 / write,
        rows as f64 / read,
        peak_rss_mib()
    );
    Ok(())
}
