//! `cfeval compare RUN_A RUN_B [--subject S]... [--judge J] [--out DIR]`:
//! run B against run A, tuple by tuple (`cfeval_aggregate::compare`), into
//! the `comparison` table and `comparison.md` / `comparison.html` in the
//! output folder; prints the summary and the files' paths as JSON on stdout.
//! Runs of different packs or catalogs are refused with the reason.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

use crate::args::CompareArgs;

/// What `cfeval compare` prints.
#[derive(Debug, Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    comparison: &'a cfeval_aggregate::compare::Report,
    report_html: PathBuf,
    report_md: PathBuf,
}

pub fn compare(args: &CompareArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let config = cfeval_aggregate::compare::Config {
        judge: args.judge.clone(),
        subjects: args.subjects.clone(),
        resamples: usize::try_from(args.resamples).context("--resamples is too large")?,
        seed: args.seed,
        ..cfeval_aggregate::compare::Config::default()
    };
    let folder = args
        .out
        .clone()
        .unwrap_or_else(|| cfeval_aggregate::compare::default_out(&args.run_a, &args.run_b));
    let comparison = cfeval_aggregate::compare::run(&config, &args.run_a, &args.run_b, &folder)
        .with_context(|| {
            format!(
                "failed to compare run {} with run {}",
                args.run_b.display(),
                args.run_a.display()
            )
        })?;
    let paths = cfeval_report::comparison::write(&folder, &comparison.report, &comparison.rows)
        .with_context(|| format!("failed to write the comparison report into {}", folder.display()))?;
    let summary = Summary {
        comparison: &comparison.report,
        report_html: paths.html,
        report_md: paths.markdown,
    };
    serde_json::to_writer_pretty(&mut *out, &summary)?;
    writeln!(out)?;
    Ok(())
}
