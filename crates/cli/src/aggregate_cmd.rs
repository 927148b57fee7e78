//! `cfeval aggregate --run RUN [--human-labels FILE]`: scores with bootstrap
//! CIs, comparisons and agreement into the run's `scores` table, then the
//! report (`RUN/report.html`, `RUN/report.md`); prints the stage's summary
//! and the report's paths as JSON on stdout.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

use crate::args::AggregateArgs;

/// What `cfeval aggregate` prints.
#[derive(Debug, Serialize)]
struct Summary<'a> {
    #[serde(flatten)]
    aggregate: &'a cfeval_aggregate::Report,
    report_html: PathBuf,
    report_md: PathBuf,
}

pub fn aggregate(args: &AggregateArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let config = cfeval_aggregate::Config {
        human_labels: args.human_labels.clone(),
        rubric_labels: args.rubric_labels.clone(),
        ..cfeval_aggregate::Config::default()
    };
    let report = cfeval_aggregate::run(&config, &args.run)
        .with_context(|| format!("failed to aggregate run {}", args.run.display()))?;
    let paths = cfeval_report::write_with(&args.run, &cfeval_report::Settings::from(&config))
        .with_context(|| format!("failed to write the report of run {}", args.run.display()))?;
    let summary = Summary {
        aggregate: &report,
        report_html: paths.html,
        report_md: paths.markdown,
    };
    serde_json::to_writer_pretty(&mut *out, &summary)?;
    writeln!(out)?;
    Ok(())
}
