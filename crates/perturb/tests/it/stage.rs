//! The stage over a run directory, and the catalog lock.

use cfeval_perturb::{Config, Error, check_catalog_lock, check_store_catalog_lock, run};
use cfeval_schema::{CaseRow, Provenance, ShardStore, VariantRow};

use crate::fixtures;

fn write_cases(run_dir: &std::path::Path) {
    let store = ShardStore::open_table::<CaseRow>(run_dir).unwrap_or_else(|error| panic!("{error}"));
    let mut writer = store.writer(Provenance {
        run: "r".into(),
        unit: "cases".into(),
        ..Provenance::default()
    });
    writer
        .write_rows(&fixtures::all())
        .unwrap_or_else(|error| panic!("{error}"));
    writer.finish().unwrap_or_else(|error| panic!("{error}"));
}

fn shipped() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/oncology/catalog.yaml")
}

#[test]
fn run_writes_every_row_stamped_with_the_catalog_and_resumes() {
    let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    write_cases(dir.path());
    let config = Config {
        catalog: shipped(),
        threads: Some(2),
        retire_downstream: false,
    };
    let report = run(&config, dir.path()).unwrap_or_else(|error| panic!("{error}"));
    let interventions = 14;
    assert_eq!(report.cases, 6);
    assert_eq!(report.variants, 6 * (interventions + 1));
    assert_eq!(report.applicable + report.not_applicable, 6 * interventions);
    assert_eq!(report.interventions["N1"].applicable, 6);
    let store = ShardStore::open_table::<VariantRow>(dir.path()).unwrap_or_else(|error| panic!("{error}"));
    let hash = check_store_catalog_lock(&store, "variants", false).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(hash.as_deref(), Some(report.catalog_hash.as_str()));
    let mut rows = 0;
    for batch in store
        .read_rows::<VariantRow>()
        .unwrap_or_else(|error| panic!("{error}"))
    {
        for row in batch.unwrap_or_else(|error| panic!("{error}")) {
            assert_eq!(row.catalog_hash, report.catalog_hash);
            rows += 1;
        }
    }
    assert_eq!(rows, report.variants);
    let again = run(&config, dir.path()).unwrap_or_else(|error| panic!("{error}"));
    assert!(again.skipped);

    // A changed catalog retires the old variants instead of mixing them.
    let edited = dir.path().join("edited.yaml");
    let text = std::fs::read_to_string(shipped()).unwrap_or_default() + "\n# revised\n";
    std::fs::write(&edited, text).unwrap_or_else(|error| panic!("{error}"));
    let report2 = run(
        &Config {
            catalog: edited,
            threads: Some(1),
            retire_downstream: false,
        },
        dir.path(),
    )
    .unwrap_or_else(|error| panic!("{error}"));
    assert_ne!(report2.catalog_hash, report.catalog_hash);
    let store = ShardStore::open_table::<VariantRow>(dir.path()).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(store.rows(), report2.variants);
    assert_eq!(
        check_store_catalog_lock(&store, "variants", false).unwrap_or_else(|error| panic!("{error}")),
        Some(report2.catalog_hash)
    );
}

#[test]
fn a_run_without_cases_is_an_error() {
    let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    let config = Config {
        catalog: shipped(),
        threads: None,
        retire_downstream: false,
    };
    assert!(matches!(run(&config, dir.path()), Err(Error::NoCases { .. })));
}

#[test]
fn mixed_catalogs_are_refused_unless_allowed() {
    let shards = [
        ("part-00000.parquet", Some("aaa")),
        ("part-00001.parquet", Some("bbb")),
    ];
    let error = check_catalog_lock("responses", shards, false)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        error.contains("2 different intervention catalogs (aaa, bbb)"),
        "{error}"
    );
    assert!(error.contains("--allow-mixed-catalogs"));
    assert!(check_catalog_lock("responses", shards, true).is_ok());
    let same = [
        ("part-00000.parquet", Some("aaa")),
        ("part-00001.parquet", Some("aaa")),
    ];
    assert_eq!(
        check_catalog_lock("responses", same, false)
            .ok()
            .flatten()
            .as_deref(),
        Some("aaa")
    );
    let missing = [("part-00000.parquet", None)];
    assert!(matches!(
        check_catalog_lock("responses", missing, false),
        Err(cfeval_schema::Error::MissingCatalogHash { .. })
    ));
}

/// The lock the other way round: perturbing a run whose later tables were
/// made under another catalog is refused, or retires them when asked.
#[test]
fn another_catalog_after_infer_is_refused_or_retires_later_tables() {
    let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
    write_cases(dir.path());
    let config = |catalog: std::path::PathBuf, retire_downstream| Config {
        catalog,
        threads: Some(1),
        retire_downstream,
    };
    let first = run(&config(shipped(), false), dir.path()).unwrap_or_else(|error| panic!("{error}"));
    // Responses made from those variants.
    let responses = ShardStore::open_table::<cfeval_schema::ResponseRow>(dir.path())
        .unwrap_or_else(|error| panic!("{error}"));
    let mut writer = responses.writer(Provenance {
        run: "r".into(),
        unit: "subject=control/reference/mode=single_shot/slice=1-of-1".into(),
        fingerprint: "f".into(),
        catalog_hash: Some(first.catalog_hash.clone()),
    });
    writer
        .write_rows(&[cfeval_schema::sample::response(0)])
        .unwrap_or_else(|error| panic!("{error}"));
    writer.finish().unwrap_or_else(|error| panic!("{error}"));
    // The same catalog again is fine (and skips).
    assert!(
        run(&config(shipped(), false), dir.path())
            .unwrap_or_else(|error| panic!("{error}"))
            .skipped
    );
    let edited = dir.path().join("edited.yaml");
    let text = std::fs::read_to_string(shipped()).unwrap_or_default() + "\n# revised\n";
    std::fs::write(&edited, text).unwrap_or_else(|error| panic!("{error}"));
    let error = run(&config(edited.clone(), false), dir.path()).expect_err("refused");
    assert!(matches!(error, Error::CatalogLocked { .. }), "{error}");
    let message = error.to_string();
    assert!(message.contains("`responses`"), "{message}");
    assert!(message.contains("--retire-downstream"), "{message}");
    // Nothing changed.
    let variants = ShardStore::open_table::<VariantRow>(dir.path()).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(variants.catalog_hash(), Some(first.catalog_hash.as_str()));
    // Asked to, it retires the later tables and perturbs.
    let second = run(&config(edited, true), dir.path()).unwrap_or_else(|error| panic!("{error}"));
    assert_ne!(second.catalog_hash, first.catalog_hash);
    let responses = ShardStore::open_table::<cfeval_schema::ResponseRow>(dir.path())
        .unwrap_or_else(|error| panic!("{error}"));
    assert!(responses.entries().is_empty());
}
