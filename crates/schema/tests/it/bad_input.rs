//! Bad files give clear errors that name the path; nothing panics.

use std::io::Write;

use cfeval_schema::*;

use crate::support::numbered_judgment;

fn committed_store(dir: &std::path::Path) -> ShardEntry {
    let store = ShardStore::open_table::<JudgmentRow>(dir).expect("open");
    let mut writer = store.writer(Provenance::default());
    writer
        .write_rows(&(0..100).map(numbered_judgment).collect::<Vec<_>>())
        .expect("write");
    writer.finish().expect("finish").remove(0)
}

#[test]
fn truncated_parquet_names_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = committed_store(dir.path());
    let shard = dir.path().join("judgments").join(&entry.file);
    let bytes = std::fs::read(&shard).expect("read");
    std::fs::write(&shard, &bytes[..bytes.len() / 2]).expect("truncate");
    // The size check on open catches it first.
    let error = ShardStore::open_table::<JudgmentRow>(dir.path()).expect_err("truncated");
    assert!(
        error.to_string().contains(&shard.display().to_string()),
        "{error}"
    );
    // And a shard truncated behind the manifest's back still fails on read, naming the path.
    let manifest = dir.path().join("judgments/_manifest/part-00000.json");
    let mut fixed = entry.clone();
    fixed.bytes = (bytes.len() / 2) as u64;
    std::fs::write(&manifest, serde_json::to_vec(&fixed).expect("json")).expect("manifest");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let error = store
        .scan(None)
        .expect("scan")
        .find_map(Result::err)
        .expect("a read error");
    assert!(
        error.to_string().contains(&shard.display().to_string()),
        "{error}"
    );
    let error = store.verify().expect_err("hash mismatch");
    assert!(error.to_string().contains("BLAKE3"), "{error}");
}

#[test]
fn wrong_schema_shard_names_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A scores shard placed (with a forged manifest entry) into the judgments folder.
    let other = tempfile::tempdir().expect("tempdir");
    let store = ShardStore::open_table::<ScoreRow>(other.path()).expect("open");
    let mut writer = store.writer(Provenance::default());
    writer
        .write_rows(&[ScoreRow {
            run: "r".into(),
            subject: "s".into(),
            is_control: false,
            mode: "single_shot".into(),
            judge: "rule".into(),
            metric: "css".into(),
            level: "overall".into(),
            group: "all".into(),
            value: 0.5,
            ci_low: None,
            ci_high: None,
            ci_method: None,
            n_tuples: 1,
            n_cases: 1,
            prompt_set: None,
        }])
        .expect("write");
    let entry = writer.finish().expect("finish").remove(0);
    let target = dir.path().join("judgments");
    std::fs::create_dir_all(target.join("_manifest")).expect("mkdir");
    std::fs::copy(
        other.path().join("scores").join(&entry.file),
        target.join(&entry.file),
    )
    .expect("copy");
    std::fs::write(
        target.join("_manifest/part-00000.json"),
        serde_json::to_vec(&entry).expect("json"),
    )
    .expect("manifest");
    // The entry says it belongs to `scores`: refused when the manifest is read.
    let error = ShardStore::open_table::<JudgmentRow>(dir.path()).expect_err("another table's entry");
    let message = error.to_string();
    assert!(message.contains("part-00000.json"), "{message}");
    assert!(message.contains("is an entry of table `scores`"), "{message}");
    // Forged to say `judgments`: the footer still says `scores`.
    let mut forged = entry.clone();
    forged.table = "judgments".into();
    std::fs::write(
        target.join("_manifest/part-00000.json"),
        serde_json::to_vec(&forged).expect("json"),
    )
    .expect("manifest");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let error = store
        .scan(None)
        .expect("scan")
        .find_map(Result::err)
        .expect("wrong schema");
    let message = error.to_string();
    assert!(
        message.contains(&target.join(&entry.file).display().to_string()),
        "{message}"
    );
    assert!(message.contains("wrong schema"), "{message}");
}

#[test]
fn foreign_parquet_with_wrong_columns_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = committed_store(dir.path());
    // Replace the shard by a parquet file that says it is `judgments` but has other columns.
    let target = dir.path().join("judgments");
    let store = ShardStore::open(
        &dir.path().join("fake"),
        "judgments",
        ScoreRow::schema(),
        StoreOptions::default(),
    )
    .expect("open");
    let mut writer = store.writer(Provenance::default());
    writer
        .write_batch(&ScoreRow::to_batch(&[]).expect("batch"))
        .expect("empty batch");
    drop(writer);
    let mut writer = store.writer(Provenance::default());
    let row = ScoreRow {
        run: "r".into(),
        subject: "s".into(),
        is_control: true,
        mode: "m".into(),
        judge: "j".into(),
        metric: "css".into(),
        level: "overall".into(),
        group: "all".into(),
        value: 1.0,
        ci_low: None,
        ci_high: None,
        ci_method: None,
        n_tuples: 1,
        n_cases: 1,
        prompt_set: None,
    };
    writer.write_rows(&[row]).expect("write");
    let fake = writer.finish().expect("finish").remove(0);
    std::fs::copy(dir.path().join("fake").join(&fake.file), target.join(&entry.file)).expect("copy");
    let mut forged = entry.clone();
    forged.bytes = fake.bytes;
    forged.blake3 = fake.blake3.clone();
    forged.rows = fake.rows;
    std::fs::write(
        target.join("_manifest/part-00000.json"),
        serde_json::to_vec(&forged).expect("json"),
    )
    .expect("manifest");
    let store = ShardStore::open_table::<JudgmentRow>(dir.path()).expect("open");
    let error = store
        .scan(None)
        .expect("scan")
        .find_map(Result::err)
        .expect("wrong columns");
    assert!(error.to_string().contains("columns"), "{error}");
}

#[test]
fn manifest_naming_a_missing_file_names_both_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = committed_store(dir.path());
    let shard = dir.path().join("judgments").join(&entry.file);
    std::fs::remove_file(&shard).expect("remove");
    let error = ShardStore::open_table::<JudgmentRow>(dir.path()).expect_err("missing");
    let message = error.to_string();
    assert!(message.contains(&shard.display().to_string()), "{message}");
    assert!(message.contains("part-00000.json"), "{message}");
    assert!(message.contains("missing"), "{message}");
}

#[test]
fn garbage_manifest_entry_names_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    committed_store(dir.path());
    let manifest = dir.path().join("judgments/_manifest/part-00000.json");
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&manifest)
        .expect("open");
    file.write_all(b"}}garbage").expect("write");
    let error = ShardStore::open_table::<JudgmentRow>(dir.path()).expect_err("garbage");
    assert!(
        error.to_string().contains(&manifest.display().to_string()),
        "{error}"
    );
}

#[test]
fn unknown_table_name_is_a_clear_error() {
    let error = "judgements".parse::<TableName>().expect_err("typo");
    assert!(
        error.to_string().contains("unknown table `judgements`"),
        "{error}"
    );
}
