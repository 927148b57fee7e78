//! The shard store: rolling, projection, units, concurrent writers, footers.

use std::fs::File;

use cfeval_schema::*;
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::support::numbered_judgment;

fn judgments(n: u64) -> Vec<JudgmentRow> {
    (0..n).map(numbered_judgment).collect()
}

fn read_all(store: &ShardStore) -> Vec<JudgmentRow> {
    let mut rows = Vec::new();
    for batch in store.read_rows::<JudgmentRow>().expect("scan") {
        rows.extend(batch.expect("batch"));
    }
    rows
}

#[test]
fn rolls_shards_by_size_and_reads_them_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = StoreOptions {
        row_group_rows: 1000,
        row_group_bytes: 8 * 1024,
        target_shard_bytes: 20_000,
        read_batch_rows: 777,
        ..StoreOptions::default()
    };
    let store = ShardStore::open(
        &dir.path().join("judgments"),
        "judgments",
        JudgmentRow::schema(),
        options,
    )
    .expect("open");
    let mut writer = store.writer(Provenance {
        run: "r".into(),
        unit: "all".into(),
        fingerprint: "f1".into(),
        catalog_hash: Some("cat".into()),
    });
    let rows = judgments(20_000);
    for chunk in rows.chunks(1000) {
        writer.write_rows(chunk).expect("write");
    }
    let entries = writer.finish().expect("finish");
    assert!(
        entries.len() > 3,
        "expected the writer to roll, got {} shards",
        entries.len()
    );
    let names: Vec<&str> = entries.iter().map(|entry| entry.file.as_str()).collect();
    assert_eq!(names[0], "part-00000.parquet");
    assert_eq!(names[1], "part-00001.parquet");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("reopen");
    assert_eq!(store.rows(), 20_000);
    assert_eq!(read_all(&store), rows);
    store.verify().expect("hashes match");
}

#[test]
fn footer_carries_provenance_and_zstd() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let mut writer = store.writer(Provenance {
        run: "night-1".into(),
        unit: "u1".into(),
        fingerprint: "fp".into(),
        catalog_hash: Some("abc".into()),
    });
    writer.write_rows(&judgments(10)).expect("write");
    let entries = writer.finish().expect("finish");
    let file = File::open(dir.path().join("judgments").join(&entries[0].file)).expect("open shard");
    let reader = SerializedFileReader::new(file).expect("parquet");
    let metadata = reader.metadata();
    let pairs = metadata
        .file_metadata()
        .key_value_metadata()
        .expect("kv metadata");
    let get = |key: &str| {
        pairs
            .iter()
            .find(|pair| pair.key == key)
            .and_then(|pair| pair.value.clone())
    };
    assert_eq!(get("cfeval.table").as_deref(), Some("judgments"));
    assert_eq!(
        get("cfeval.schema_version").as_deref(),
        Some(SCHEMA_VERSION.to_string().as_str())
    );
    assert_eq!(get("cfeval.run").as_deref(), Some("night-1"));
    assert_eq!(get("cfeval.fingerprint").as_deref(), Some("fp"));
    assert_eq!(get("cfeval.catalog_hash").as_deref(), Some("abc"));
    assert_eq!(get("cfeval.version").as_deref(), Some(CFEVAL_VERSION));
    let column = metadata.row_group(0).column(0);
    assert!(
        column.compression().to_string().starts_with("ZSTD"),
        "{}",
        column.compression()
    );
}

#[test]
fn projection_reads_only_named_columns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let mut writer = store.writer(Provenance::default());
    writer.write_rows(&judgments(100)).expect("write");
    writer.finish().expect("finish");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("reopen");
    let batches: Vec<_> = store
        .scan(Some(&["subject", "score"]))
        .expect("scan")
        .collect::<Result<_, _>>()
        .expect("read");
    assert_eq!(batches[0].num_columns(), 2);
    assert_eq!(batches[0].schema().field(0).name(), "subject");
    assert_eq!(batches.iter().map(|batch| batch.num_rows()).sum::<usize>(), 100);
    assert!(store.scan(Some(&["no_such_column"])).is_err());
}

#[test]
fn rejects_a_batch_of_another_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let mut writer = store.writer(Provenance::default());
    let batch = ScoreRow::to_batch(&[]).expect("batch");
    let error = writer.write_batch(&batch).expect_err("schema mismatch");
    assert!(error.to_string().contains("judgments"), "{error}");
}

#[test]
fn units_complete_stale_and_retire() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let mut writer = store.writer(Provenance {
        unit: "judge=rule".into(),
        fingerprint: "f1".into(),
        ..Default::default()
    });
    writer.write_rows(&judgments(50)).expect("write");
    let entries = writer.finish().expect("finish");
    store.mark_complete("judge=rule", "f1", &entries).expect("mark");
    let mut writer = store.writer(Provenance {
        unit: "judge=other".into(),
        fingerprint: "f1".into(),
        ..Default::default()
    });
    writer.write_rows(&judgments(5)).expect("write");
    writer.finish().expect("finish");

    let mut store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("reopen");
    assert!(store.is_complete("judge=rule", "f1"));
    assert!(
        !store.is_complete("judge=rule", "f2"),
        "another fingerprint is stale"
    );
    assert!(!store.is_complete("judge=other", "f1"), "never marked complete");
    assert_eq!(store.unit("judge=rule").expect("record").rows, 50);
    assert_eq!(store.retire_unit("judge=rule").expect("retire"), 50);
    assert_eq!(store.rows(), 5);
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("reopen");
    assert!(store.unit("judge=rule").is_none());
    assert_eq!(read_all(&store).len(), 5);
}

#[test]
fn concurrent_writers_never_share_a_shard_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_path_buf();
    let handles: Vec<_> = (0..4u64)
        .map(|slice| {
            let path = path.clone();
            std::thread::spawn(move || {
                let store = ShardStore::open_table::<JudgmentRow>(&path).expect("open");
                for round in 0..10u64 {
                    let mut writer = store.writer(Provenance {
                        unit: format!("slice-{slice}"),
                        ..Default::default()
                    });
                    let rows: Vec<_> = (0..10)
                        .map(|i| numbered_judgment(slice * 1000 + round * 10 + i))
                        .collect();
                    writer.write_rows(&rows).expect("write");
                    writer.finish().expect("finish");
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().expect("writer thread");
    }
    let store = ShardStore::open_table::<JudgmentRow>(&path).expect("reopen");
    assert_eq!(store.entries().len(), 40);
    let mut ids: Vec<String> = read_all(&store).into_iter().map(|row| row.variant_id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 400, "every row exactly once");
}

/// A rewrite of a shard: the new shard's entry is the switch. Before it
/// readers see the old rows, from it on the new ones, never both; the old
/// shard is retired by the writer or, after a crash, by the next writer.
#[test]
fn a_rewritten_shard_replaces_the_old_one_at_its_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let provenance = Provenance {
        run: "r".into(),
        unit: "u".into(),
        fingerprint: "f".into(),
        catalog_hash: None,
    };
    let mut store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let mut writer = store.writer(provenance.clone());
    writer.write_rows(&judgments(5)).expect("write");
    let old = writer.finish().expect("finish").remove(0);
    store.refresh().expect("refresh");
    let mut rewritten = judgments(5);
    rewritten[2].status = "rewritten".into();
    // Written but not committed: readers still see the old rows only.
    let mut writer = store.replacing_writer(provenance.clone(), std::slice::from_ref(&old));
    writer.write_rows(&rewritten).expect("write");
    assert_eq!(read_all(&store), judgments(5));
    let new = writer.finish().expect("finish");
    assert_eq!(new.len(), 1);
    assert_eq!(new[0].replaces, vec![old.file.clone()]);
    // Committed, old not retired yet (as after a kill here): one copy.
    let reader = ShardStore::open_existing(&dir.path().join("judgments"), "judgments", JudgmentRow::schema())
        .expect("open")
        .expect("present");
    assert_eq!(reader.entries().len(), 1);
    assert_eq!(read_all(&reader), rewritten);
    let check = verify::check_table(dir.path(), TableName::Judgments, true);
    assert!(check.problems.is_empty(), "{:?}", check.problems);
    assert_eq!(check.entries.len(), 1);
    drop(store);
    // The next writer alone retires the replaced shard, entry then file.
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("reopen");
    assert!(!dir.path().join("judgments").join(&old.file).exists());
    assert_eq!(read_all(&store), rewritten);
}
