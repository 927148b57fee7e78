//! `cfeval show`: looking inside a run without Python.

use std::io::Write;

use anyhow::Context;
use arrow_array::RecordBatch;
use cfeval_schema::{ShardStore, TableName};

use crate::args::{ShowArgs, ShowFormat};

/// Prints a table's rows as JSON lines or an aligned text table.
pub fn show(args: &ShowArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let table: TableName = args.table.parse()?;
    let dir = args.run.join(table.dir_name());
    let Some(store) = ShardStore::open_existing(&dir, table.dir_name(), table.schema())? else {
        anyhow::bail!(
            "run {} has no table `{table}` (no folder {})",
            args.run.display(),
            dir.display()
        );
    };
    let columns: Vec<&str> = args.columns.iter().map(String::as_str).collect();
    let projection = (!columns.is_empty()).then_some(columns.as_slice());
    let mut remaining = args.limit.unwrap_or(usize::MAX);
    let mut batches = Vec::new();
    for batch in store.scan(projection)? {
        if remaining == 0 {
            break;
        }
        let batch = batch?;
        let batch = batch.slice(0, batch.num_rows().min(remaining));
        remaining -= batch.num_rows();
        match args.format {
            ShowFormat::Jsonl => write_jsonl(&batch, out)?,
            ShowFormat::Table => batches.push(batch),
        }
    }
    if let ShowFormat::Table = args.format {
        let text = arrow_cast::pretty::pretty_format_batches(&batches)?;
        writeln!(out, "{text}")?;
    }
    Ok(())
}

fn write_jsonl(batch: &RecordBatch, out: &mut dyn Write) -> anyhow::Result<()> {
    let mut writer = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow_json::writer::LineDelimited>(out);
    writer.write(batch).context("failed to write rows as JSON")?;
    writer.finish()?;
    Ok(())
}
