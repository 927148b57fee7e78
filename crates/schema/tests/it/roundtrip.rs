//! Every table round-trips Rust → Parquet shard → Rust unchanged.

use cfeval_schema::*;
use proptest::prelude::*;

use crate::support::*;

fn roundtrip<T: Table + PartialEq + std::fmt::Debug>(rows: Vec<T>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let store = ShardStore::open_table::<T>(dir.path()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut writer = store.writer(Provenance {
        run: "r".into(),
        unit: "u".into(),
        ..Default::default()
    });
    writer
        .write_rows(&rows)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    writer.finish().map_err(|e| TestCaseError::fail(e.to_string()))?;
    let store = ShardStore::open_table::<T>(dir.path()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut back = Vec::new();
    for batch in store
        .read_rows::<T>()
        .map_err(|e| TestCaseError::fail(e.to_string()))?
    {
        back.extend(batch.map_err(|e| TestCaseError::fail(e.to_string()))?);
    }
    prop_assert_eq!(back, rows);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn cases_roundtrip(rows in proptest::collection::vec(case_row(), 1..6)) {
        roundtrip(rows)?;
    }

    #[test]
    fn variants_roundtrip(rows in proptest::collection::vec(variant_row(), 1..6)) {
        roundtrip(rows)?;
    }

    #[test]
    fn responses_roundtrip(rows in proptest::collection::vec(response_row(), 1..6)) {
        roundtrip(rows)?;
    }

    #[test]
    fn judgments_roundtrip(rows in proptest::collection::vec(judgment_row(), 1..6)) {
        roundtrip(rows)?;
    }

    #[test]
    fn scores_roundtrip(rows in proptest::collection::vec(score_row(), 1..6)) {
        roundtrip(rows)?;
    }
}

#[test]
fn table_schemas_are_stable() {
    let mut text = String::new();
    for table in TableName::ALL {
        text.push_str(&format!("# {table}\n"));
        for field in table.schema().fields() {
            text.push_str(&format!(
                "{}: {}{}\n",
                field.name(),
                field.data_type(),
                if field.is_nullable() { " (nullable)" } else { "" }
            ));
        }
    }
    // `cfeval compare`'s table, written outside runs.
    text.push_str("# comparison\n");
    for field in ComparisonRow::fields() {
        text.push_str(&format!(
            "{}: {}{}\n",
            field.name(),
            field.data_type(),
            if field.is_nullable() { " (nullable)" } else { "" }
        ));
    }
    insta::assert_snapshot!(text);
}
