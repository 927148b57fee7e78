//! `cfeval aggregate --run RUN [--human-labels FILE]`: scores with bootstrap
//! CIs, comparisons and agreement into the run's `scores` table, plus the
//! report; prints the stage's summary as JSON on stdout.

use std::io::Write;

use anyhow::Context;

use crate::args::AggregateArgs;

pub fn aggregate(args: &AggregateArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let config = cfeval_aggregate::Config {
        human_labels: args.human_labels.clone(),
        ..cfeval_aggregate::Config::default()
    };
    let report = cfeval_aggregate::run(&config, &args.run)
        .with_context(|| format!("failed to aggregate run {}", args.run.display()))?;
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)?;
    Ok(())
}
