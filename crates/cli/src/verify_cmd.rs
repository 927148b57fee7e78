//! `cfeval verify RUN`: every shard, manifest entry and unit record of a run
//! checked — sizes, BLAKE3, footers, row counts, orphan and missing files,
//! records naming shards with no entry, input tables that are gone, shards
//! made under another catalog. One line per problem on stdout (`note:` lines
//! are not damage), then a summary; fails when anything is damaged. It only
//! reads: a read-only run can be verified.

use std::io::Write;

use crate::args::VerifyArgs;

/// Checks the run and prints what is damaged.
pub fn verify(args: &VerifyArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let run = &args.run;
    if !run.is_dir() {
        anyhow::bail!("no run directory at {}", run.display());
    }
    let check = cfeval_schema::verify::check_run(run, true);
    for problem in check.problems() {
        writeln!(out, "{problem}")?;
    }
    for note in check.notes() {
        writeln!(out, "note: {note}")?;
    }
    let present: Vec<String> = check
        .tables
        .iter()
        .filter(|table| table.present)
        .map(|table| table.table.to_string())
        .collect();
    let shards: usize = check.tables.iter().map(|table| table.entries.len()).sum();
    let bytes: u64 = check.tables.iter().map(|table| table.bytes).sum();
    let problems = check.problems().count();
    writeln!(
        out,
        "verified {} tables ({}), {shards} shards, {:.1} MiB hashed: {}",
        present.len(),
        present.join(", "),
        bytes as f64 / (1024.0 * 1024.0),
        if problems == 0 {
            "intact".to_string()
        } else {
            format!("{problems} problem(s)")
        }
    )?;
    if problems > 0 {
        anyhow::bail!(
            "run {} is damaged: {problems} problem(s), listed above",
            run.display()
        );
    }
    Ok(())
}
