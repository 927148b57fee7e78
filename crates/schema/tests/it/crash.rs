//! Crash safety: SIGKILL a child process while it writes shards, 20 times at
//! random moments, then reopen the store each time.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use cfeval_schema::*;

use crate::support::numbered_judgment;

const CHILD_ENV: &str = "CFEVAL_TEST_CRASH_CHILD_DIR";

fn shard_rows(seq: u64) -> Vec<JudgmentRow> {
    (0..(300 + seq % 200))
        .map(|i| numbered_judgment(seq * 10_000 + i))
        .collect()
}

/// Runs only as the child of `sigkill_while_writing_never_exposes_a_partial_shard`:
/// writes shard after shard until it is killed.
#[test]
fn crash_child_writer() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let store = ShardStore::open(
        Path::new(&dir),
        "judgments",
        JudgmentRow::schema(),
        StoreOptions::default(),
    )
    .expect("child open");
    let mut seq = store.entries().len() as u64 + 1_000 * std::process::id() as u64;
    loop {
        let mut writer = store.writer(Provenance {
            unit: format!("seq-{seq}"),
            ..Default::default()
        });
        writer.write_rows(&shard_rows(seq)).expect("child write");
        writer.finish().expect("child finish");
        seq += 1;
    }
}

fn check_store(dir: &Path) -> usize {
    let store = ShardStore::open(dir, "judgments", JudgmentRow::schema(), StoreOptions::default())
        .expect("reopen after kill");
    store.verify().expect("every committed shard is intact");
    for entry in store.entries() {
        let seq: u64 = entry.unit.trim_start_matches("seq-").parse().expect("unit");
        let path = dir.join(&entry.file);
        let file = std::fs::File::open(&path).expect("shard");
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
            .expect("readable")
            .build()
            .expect("reader");
        let mut rows = Vec::new();
        for batch in reader {
            rows.extend(JudgmentRow::from_batch(&batch.expect("batch")).expect("rows"));
        }
        assert_eq!(
            rows,
            shard_rows(seq),
            "shard {} holds exactly what was written",
            entry.file
        );
        assert_eq!(rows.len() as u64, entry.rows);
    }
    let tmp: Vec<_> = std::fs::read_dir(dir.join(".tmp")).expect("tmp").collect();
    assert!(tmp.is_empty(), "temp files removed on open");
    for item in std::fs::read_dir(dir).expect("dir") {
        let name = item.expect("entry").file_name().to_string_lossy().to_string();
        if name.starts_with("part-") {
            let manifest = dir.join("_manifest").join(name.replace(".parquet", ".json"));
            assert!(manifest.exists(), "orphan {name} was not removed");
        }
    }
    store.entries().len()
}

#[test]
fn sigkill_while_writing_never_exposes_a_partial_shard() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store_dir = dir.path().join("judgments");
    let exe = std::env::current_exe().expect("test binary");
    // A fixed LCG keeps the kill moments reproducible run to run.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut committed = 0;
    for trial in 0..20 {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let delay = Duration::from_millis(20 + (state >> 33) % 400);
        let mut child = Command::new(&exe)
            .args([
                "crash::crash_child_writer",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &store_dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn child");
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL");
        child.wait().expect("reap");
        let now = check_store(&store_dir);
        assert!(
            now >= committed,
            "trial {trial}: committed shards never disappear"
        );
        committed = now;
    }
    assert!(committed > 0, "the children committed something");
}
