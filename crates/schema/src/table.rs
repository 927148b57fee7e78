//! The [`Table`] trait that ties a row type to its Arrow schema and name.

use std::sync::{Arc, OnceLock};

use arrow_array::RecordBatch;
use arrow_schema::{FieldRef, Schema, SchemaRef};
use serde::{Serialize, de::DeserializeOwned};
use serde_arrow::schema::{SchemaLike, TracingOptions};

use crate::error::{Error, Result};
use crate::tables::{CaseRow, ComparisonRow, JudgmentRow, QuarantineRow, ResponseRow, ScoreRow, VariantRow};

/// A cfeval table: a row type with a fixed Arrow schema.
pub trait Table: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The table's name, which is also its folder inside a run.
    const NAME: &'static str;

    /// The Arrow fields, derived once from the row type.
    fn fields() -> &'static [FieldRef];

    /// The Arrow schema (no metadata; provenance lives in the file footer).
    fn schema() -> SchemaRef {
        Arc::new(Schema::new(Self::fields().to_vec()))
    }

    /// Converts rows to one record batch.
    fn to_batch(rows: &[Self]) -> Result<RecordBatch> {
        serde_arrow::to_record_batch(Self::fields(), &rows).map_err(|source| Error::Convert {
            table: Self::NAME.to_string(),
            source,
        })
    }

    /// Converts a record batch back to rows.
    fn from_batch(batch: &RecordBatch) -> Result<Vec<Self>> {
        serde_arrow::from_record_batch(batch).map_err(|source| Error::Convert {
            table: Self::NAME.to_string(),
            source,
        })
    }
}

/// How row types are traced into Arrow types: plain `Utf8` and `List`
/// (what pandas, polars and duckdb read most naturally).
pub(crate) fn tracing_options() -> TracingOptions {
    TracingOptions::default()
        .strings_as_large_utf8(false)
        .sequence_as_large_list(false)
        .allow_null_fields(true)
}

pub(crate) fn trace_fields<T: DeserializeOwned>(
    cell: &'static OnceLock<Vec<FieldRef>>,
) -> &'static [FieldRef] {
    cell.get_or_init(|| match Vec::<FieldRef>::from_type::<T>(tracing_options()) {
        Ok(fields) => fields,
        // The row types are fixed at compile time; the snapshot test traces each one.
        Err(error) => panic!("cannot trace the Arrow schema of a row type: {error}"),
    })
}

macro_rules! impl_table {
    ($row:ty, $name:literal) => {
        impl Table for $row {
            const NAME: &'static str = $name;
            fn fields() -> &'static [FieldRef] {
                static FIELDS: OnceLock<Vec<FieldRef>> = OnceLock::new();
                trace_fields::<$row>(&FIELDS)
            }
        }
    };
}

impl_table!(CaseRow, "cases");
impl_table!(VariantRow, "variants");
impl_table!(ResponseRow, "responses");
impl_table!(JudgmentRow, "judgments");
impl_table!(ScoreRow, "scores");
impl_table!(QuarantineRow, "quarantine");
impl_table!(ComparisonRow, "comparison");

/// The tables a run holds, by folder name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableName {
    Cases,
    CasesQuarantine,
    Variants,
    Responses,
    Judgments,
    Scores,
}

impl TableName {
    /// Every table, in pipeline order.
    pub const ALL: [TableName; 6] = [
        TableName::Cases,
        TableName::CasesQuarantine,
        TableName::Variants,
        TableName::Responses,
        TableName::Judgments,
        TableName::Scores,
    ];

    /// The table's folder name inside a run directory.
    pub fn dir_name(self) -> &'static str {
        match self {
            TableName::Cases => "cases",
            TableName::CasesQuarantine => "cases_quarantine",
            TableName::Variants => "variants",
            TableName::Responses => "responses",
            TableName::Judgments => "judgments",
            TableName::Scores => "scores",
        }
    }

    /// The tables this table is computed from (their digests are recorded
    /// in each completed unit: see [`crate::lineage`]).
    pub fn inputs(self) -> &'static [TableName] {
        match self {
            TableName::Cases | TableName::CasesQuarantine => &[],
            TableName::Variants => &[TableName::Cases],
            TableName::Responses => &[TableName::Variants],
            TableName::Judgments => &[TableName::Responses, TableName::Variants, TableName::Cases],
            TableName::Scores => &[TableName::Judgments],
        }
    }

    /// The tables computed from this one, directly or not, in pipeline order.
    pub fn downstream(self) -> Vec<TableName> {
        let mut found = vec![self];
        for table in TableName::ALL {
            if table.inputs().iter().any(|input| found.contains(input)) && !found.contains(&table) {
                found.push(table);
            }
        }
        found.remove(0);
        found
    }

    /// The table's Arrow schema.
    pub fn schema(self) -> SchemaRef {
        match self {
            TableName::Cases => CaseRow::schema(),
            TableName::CasesQuarantine => QuarantineRow::schema(),
            TableName::Variants => VariantRow::schema(),
            TableName::Responses => ResponseRow::schema(),
            TableName::Judgments => JudgmentRow::schema(),
            TableName::Scores => ScoreRow::schema(),
        }
    }
}

impl std::str::FromStr for TableName {
    type Err = Error;
    fn from_str(name: &str) -> Result<Self> {
        TableName::ALL
            .into_iter()
            .find(|table| table.dir_name() == name)
            .ok_or_else(|| Error::UnknownTable(name.to_string()))
    }
}

impl std::fmt::Display for TableName {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.dir_name())
    }
}
