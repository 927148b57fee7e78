//! `cfeval perturb` and `cfeval catalog check`.

use std::io::Write;

use anyhow::Context;

use crate::args::{CatalogArgs, CatalogCommand, PerturbArgs};

/// Applies the catalog to every case of the run and prints the report (JSON).
pub fn perturb(args: &PerturbArgs, out: &mut impl Write) -> anyhow::Result<()> {
    let config = cfeval_perturb::Config {
        catalog: args.catalog.clone(),
        threads: None,
        retire_downstream: args.retire_downstream,
    };
    let report = cfeval_perturb::run(&config, &args.run)
        .with_context(|| format!("perturb failed for run {}", args.run.display()))?;
    serde_json::to_writer_pretty(&mut *out, &report)?;
    writeln!(out)?;
    Ok(())
}

/// Validates a catalog: prints `ok <hash>` or every diagnostic and fails.
pub fn catalog(args: &CatalogArgs, out: &mut impl Write) -> anyhow::Result<()> {
    match &args.command {
        CatalogCommand::Check { file } => {
            let diagnostics = crate::pipeline::check_catalog(file)?;
            if diagnostics.is_empty() {
                let catalog = cfeval_perturb::Catalog::load(file)?;
                writeln!(
                    out,
                    "ok {} ({} interventions) blake3={}",
                    file.display(),
                    catalog.interventions().len(),
                    catalog.hash()
                )?;
                return Ok(());
            }
            // One write per diagnostic would be one system call per line
            // on a line-buffered terminal: a large catalog's report is
            // written buffered.
            let mut buffered = std::io::BufWriter::new(out);
            for diagnostic in &diagnostics {
                writeln!(buffered, "{}:{diagnostic}", file.display())?;
            }
            buffered.flush()?;
            anyhow::bail!("catalog {} has {} error(s)", file.display(), diagnostics.len())
        }
    }
}
