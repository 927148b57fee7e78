//! What is read is verified: hashes, footers, row counts, safe names,
//! read-only opens, lineage and the whole-run check.

use std::path::{Path, PathBuf};

use cfeval_schema::lineage::{UnitState, require_input};
use cfeval_schema::verify::check_run;
use cfeval_schema::*;

use crate::support::numbered_judgment;

/// A run folder whose `judgments` hold one completed unit of `shards`
/// shards of 200 rows each.
fn run_with_judgments(run: &Path, shards: u64) -> Vec<ShardEntry> {
    let mut store = ShardStore::open(
        &run.join("judgments"),
        "judgments",
        JudgmentRow::schema(),
        StoreOptions {
            target_shard_bytes: 1,
            ..StoreOptions::default()
        },
    )
    .expect("open");
    let mut writer = store.writer(Provenance {
        run: "r".into(),
        unit: "judge=rule".into(),
        fingerprint: "fp".into(),
        catalog_hash: Some("cat".into()),
    });
    for shard in 0..shards {
        let rows: Vec<JudgmentRow> = (shard * 200..(shard + 1) * 200).map(numbered_judgment).collect();
        writer.write_rows(&rows).expect("write");
        writer.flush().expect("flush");
    }
    let entries = writer.finish().expect("finish");
    store.mark_complete("judge=rule", "fp", &entries).expect("mark");
    entries
}

fn scan_error(run: &Path) -> String {
    let store = ShardStore::open_existing(&run.join("judgments"), "judgments", JudgmentRow::schema())
        .expect("open")
        .expect("present");
    store
        .scan(Some(&["subject"]))
        .expect("scan")
        .find_map(Result::err)
        .map(|error| error.to_string())
        .expect("a read error")
}

fn edit_entry(run: &Path, part: &str, edit: impl FnOnce(&mut serde_json::Value)) -> PathBuf {
    let path = run.join("judgments/_manifest").join(format!("{part}.json"));
    let mut value: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    edit(&mut value);
    std::fs::write(&path, serde_json::to_vec(&value).expect("json")).expect("write");
    path
}

#[test]
fn a_flipped_byte_is_found_before_the_first_batch_and_names_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    run_with_judgments(&run, 3);
    let shard = run.join("judgments/part-00001.parquet");
    let mut bytes = std::fs::read(&shard).expect("read");
    bytes[100] ^= 0x01;
    std::fs::write(&shard, &bytes).expect("write");
    // A projection that never touches the flipped page is refused all the same.
    let message = scan_error(&run);
    assert!(message.contains(&shard.display().to_string()), "{message}");
    assert!(
        message.contains("BLAKE3 differs from its manifest entry _manifest/part-00001.json"),
        "{message}"
    );
    assert!(
        message.contains(&format!("run `cfeval verify {}`", run.display())),
        "{message}"
    );
    // With verification off, the size, footer and row checks still hold,
    // but the content is trusted.
    let store = ShardStore::open_read_only(
        &run.join("judgments"),
        "judgments",
        JudgmentRow::schema(),
        StoreOptions {
            verify: false,
            ..StoreOptions::default()
        },
    )
    .expect("open")
    .expect("present");
    assert!(store.scan(Some(&["subject"])).expect("scan").count() > 0);
}

#[test]
fn a_shard_verified_once_is_not_hashed_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let entries = run_with_judgments(&run, 2);
    let store = ShardStore::open_table::<JudgmentRow>(&run).expect("open");
    let total: u64 = entries.iter().map(|entry| entry.bytes).sum();
    assert_eq!(store.verify().expect("intact"), total);
    assert_eq!(store.verify().expect("intact"), 0, "already verified");
    // A rewrite (new modification time) is hashed again, and caught.
    let shard = run.join("judgments").join(&entries[0].file);
    let mut bytes = std::fs::read(&shard).expect("read");
    let last = bytes.len() - 20;
    bytes[last] ^= 0x40;
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&shard, &bytes).expect("write");
    let error = store.verify().expect_err("footer flip").to_string();
    assert!(error.contains("BLAKE3 differs"), "{error}");
}

#[test]
fn footer_and_row_count_must_match_the_entry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    run_with_judgments(&run, 1);
    edit_entry(&run, "part-00000", |entry| entry["fingerprint"] = "forged".into());
    // The unit record disagrees now as well; the read path names the footer.
    let message = scan_error(&run);
    assert!(
        message.contains(
            "its footer says fingerprint \"fp\", its manifest entry _manifest/part-00000.json says \"forged\""
        ),
        "{message}"
    );
    edit_entry(&run, "part-00000", |entry| {
        entry["fingerprint"] = "fp".into();
        entry["rows"] = 150.into();
    });
    let message = scan_error(&run);
    assert!(message.contains("its footer says 200 rows"), "{message}");
    edit_entry(&run, "part-00000", |entry| {
        entry["rows"] = 200.into();
        entry["run"] = "another-run".into();
    });
    let message = scan_error(&run);
    assert!(message.contains("its footer says run \"r\""), "{message}");
}

#[test]
fn entries_may_only_name_plain_shards_of_their_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    let other = dir.path().join("OTHER");
    run_with_judgments(&run, 1);
    run_with_judgments(&other, 1);
    let open = || {
        ShardStore::open_existing(&run.join("judgments"), "judgments", JudgmentRow::schema())
            .expect_err("refused")
            .to_string()
    };
    let outside = other.join("judgments/part-00000.parquet");
    for file in [
        "../../OTHER/judgments/part-00000.parquet".to_string(),
        outside.display().to_string(),
        "sub/part-00000.parquet".to_string(),
        "part-00001.parquet".to_string(),
    ] {
        edit_entry(&run, "part-00000", |entry| entry["file"] = file.clone().into());
        let message = open();
        assert!(message.contains("_manifest/part-00000.json"), "{file}: {message}");
        assert!(
            message.contains(&format!("{file:?}")) || message.contains(&file),
            "{message}"
        );
    }
    // A symbolic link in place of the shard is refused too.
    edit_entry(&run, "part-00000", |entry| {
        entry["file"] = "part-00000.parquet".into();
    });
    let shard = run.join("judgments/part-00000.parquet");
    std::fs::remove_file(&shard).expect("remove");
    std::os::unix::fs::symlink(&outside, &shard).expect("symlink");
    let message = open();
    assert!(message.contains("symbolic link"), "{message}");
}

/// Every file under `root` with its length and modification time.
fn snapshot(root: &Path) -> Vec<(PathBuf, u64, std::time::SystemTime)> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for item in std::fs::read_dir(&dir).expect("read_dir") {
            let path = item.expect("item").path();
            let metadata = std::fs::symlink_metadata(&path).expect("metadata");
            if metadata.is_dir() {
                stack.push(path.clone());
            }
            files.push((path, metadata.len(), metadata.modified().expect("mtime")));
        }
    }
    files.sort();
    files
}

#[test]
fn reading_and_checking_write_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    run_with_judgments(&run, 2);
    // What a writer leaves that a reader must not touch: no lock or temp
    // folder (a reader must not create them), an orphan (a reader must not
    // remove it).
    std::fs::remove_file(run.join("judgments/.lock")).expect("lock");
    std::fs::remove_dir(run.join("judgments/.tmp")).expect("tmp");
    std::fs::write(run.join("judgments/part-00007.parquet"), b"orphan").expect("orphan");
    let before = snapshot(&run);
    let store = ShardStore::open_existing(&run.join("judgments"), "judgments", JudgmentRow::schema())
        .expect("open")
        .expect("present");
    let rows: usize = store
        .read_rows::<JudgmentRow>()
        .expect("scan")
        .map(|batch| batch.expect("batch").len())
        .sum();
    assert_eq!(rows, 400);
    assert!(matches!(
        store
            .writer(Provenance::default())
            .write_rows(&[numbered_judgment(1)]),
        Err(Error::ReadOnly { .. })
    ));
    let check = check_run(&run, true);
    assert!(check.is_intact(), "{:?}", check.problems().collect::<Vec<_>>());
    assert_eq!(check.notes().count(), 1, "the orphan is a note");
    assert_eq!(snapshot(&run), before);
    // Without `_manifest/`, the folder is not an empty table.
    std::fs::rename(run.join("judgments/_manifest"), dir.path().join("kept")).expect("move");
    let error = ShardStore::open_existing(&run.join("judgments"), "judgments", JudgmentRow::schema())
        .expect_err("no manifest")
        .to_string();
    assert!(
        error.contains("has no manifest folder (_manifest/ is missing)"),
        "{error}"
    );
}

fn write_table<T: Table>(run: &Path, unit: &str, rows: &[T]) {
    let mut store = ShardStore::open_table::<T>(run).expect("open");
    let mut writer = store.writer(Provenance {
        run: "r".into(),
        unit: unit.into(),
        fingerprint: unit.into(),
        catalog_hash: Some("cat".into()),
    });
    writer.write_rows(rows).expect("write");
    let entries = writer.finish().expect("finish");
    store.mark_complete(unit, unit, &entries).expect("mark");
}

#[test]
fn units_are_stale_once_an_input_changes_and_inputs_must_be_ready() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    write_table(&run, "perturb", &[sample::variant(0), sample::variant(1)]);
    let subject = "subject=control/reference/mode=single_shot/slice=1-of-2";
    write_table(&run, subject, &[sample::response(0)]);
    let states = |run: &Path| {
        let store = ShardStore::open_table::<ResponseRow>(run).expect("open");
        lineage::unit_states(run, store.entries(), store.units())
    };
    assert_eq!(states(&run)[subject], UnitState::Complete);
    let error = require_input(&run, TableName::Responses, StoreOptions::default())
        .expect_err("slice 2 missing")
        .to_string();
    assert!(
        error.contains("unit `subject=control/reference/mode=single_shot/slice=2-of-2` has not run"),
        "{error}"
    );
    assert!(
        error.contains("cfeval infer --run") && error.contains("--shard 2/2"),
        "{error}"
    );
    write_table(
        &run,
        "subject=control/reference/mode=single_shot/slice=2-of-2",
        &[sample::response(1)],
    );
    require_input(&run, TableName::Responses, StoreOptions::default()).expect("ready");
    // New variants: the responses were made from others.
    write_table(&run, "perturb", &[sample::variant(2)]);
    assert_eq!(
        states(&run)[subject],
        UnitState::Stale("`variants` changed after it completed".into())
    );
    let error = require_input(&run, TableName::Responses, StoreOptions::default())
        .expect_err("stale")
        .to_string();
    assert!(error.contains("table `responses` of run"), "{error}");
    assert!(
        error.contains("is stale (`variants` changed after it completed)"),
        "{error}"
    );
    assert!(
        error.contains("cfeval infer --run")
            && error.contains("--subject control/reference --mode single_shot"),
        "{error}"
    );
    // Variants gone altogether.
    std::fs::remove_dir_all(run.join("variants")).expect("remove");
    assert_eq!(
        states(&run)[subject],
        UnitState::Stale("`variants` is gone".into())
    );
    let check = check_run(&run, true);
    assert!(
        check
            .problems()
            .any(|problem| problem.message.contains("table `variants` is missing")),
        "{:?}",
        check.problems().collect::<Vec<_>>()
    );
}

#[test]
fn a_record_naming_a_shard_without_entry_is_damage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("run");
    run_with_judgments(&run, 3);
    std::fs::remove_file(run.join("judgments/_manifest/part-00001.json")).expect("remove");
    let error = require_input(&run, TableName::Judgments, StoreOptions::default())
        .expect_err("damaged")
        .to_string();
    assert!(
        error.contains("unit `judge=rule` is damaged (its completion record names part-00001.parquet, which has no manifest entry)"),
        "{error}"
    );
    assert!(
        error.contains("cfeval judge --run") && error.contains("--judge rule"),
        "{error}"
    );
    let check = check_run(&run, true);
    let lines: Vec<String> = check.problems().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].contains("unit-"), "{lines:?}");
    assert!(
        check
            .notes()
            .any(|note| note.to_string().contains("part-00001.parquet: orphan shard")),
        "the shard left without entry is an orphan"
    );
}
