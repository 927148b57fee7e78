//! `cfeval cohort` and `cfeval synthesize` (E-Synthesis).

use std::io::Write;

use anyhow::Context;
use cfeval_synthesize::cohort::{self, CohortConfig};
use cfeval_synthesize::extract::llm::LlmExtractor;
use cfeval_synthesize::{Config, ExtractorMode, InputFormat};

use crate::args::{CohortArgs, InputFormat as FormatArg, SynthesizeArgs};

/// Writes the seeded synthetic cohort into `--out` and prints a summary
/// (one JSON line) on stdout.
pub fn cohort(args: &CohortArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let config = CohortConfig {
        cases: usize::try_from(args.cases).unwrap_or(usize::MAX),
        seed: args.seed,
    };
    let cases = cohort::generate(&config).context("failed to generate the cohort")?;
    let files = cohort::write(&cases, &args.out)
        .with_context(|| format!("failed to write the cohort into {}", args.out.display()))?;
    let summary = serde_json::json!({
        "cases": files.cases,
        "seed": args.seed,
        "jsonl": files.jsonl,
        "text_dir": files.text_dir,
    });
    writeln!(out, "{summary}")?;
    Ok(())
}

/// Converts the inputs into `--out/cases` and prints the report (one JSON
/// line) on stdout; quarantined inputs are named on stderr.
pub fn synthesize(args: &SynthesizeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let format = match args.format {
        FormatArg::Auto => InputFormat::Auto,
        FormatArg::Text => InputFormat::Text,
        FormatArg::Jsonl => InputFormat::Jsonl,
        FormatArg::Agentclinic => InputFormat::Agentclinic,
        FormatArg::Csv => InputFormat::Csv,
    };
    let run = args
        .out
        .file_name()
        .map_or_else(|| "run".to_string(), |name| name.to_string_lossy().into_owned());
    let extractor = ExtractorMode::parse(&args.extractor)
        .ok_or_else(|| anyhow::anyhow!("unknown extractor `{}` (rule, llm or both)", args.extractor))?;
    let llm = match (extractor, &args.extractor_model) {
        (ExtractorMode::Rule, Some(_)) => {
            anyhow::bail!("--extractor-model is for --extractor llm or both")
        }
        (ExtractorMode::Rule, None) => None,
        (_, None) => anyhow::bail!("--extractor {} needs --extractor-model", extractor.as_str()),
        (_, Some(model)) => Some(llm_extractor(
            model,
            &args.out,
            &crate::subjects::ModelSettings {
                base_url: args.base_url.clone(),
                cache_dir: args.cache_dir.clone(),
                ..crate::subjects::ModelSettings::default()
            }
            .with_concurrency(model, args.concurrency),
        )?),
    };
    let config = Config {
        run,
        format,
        max_case_bytes: usize::try_from(args.max_case_bytes).unwrap_or(usize::MAX),
        follow_symlinks: args.follow_symlinks,
        extractor,
        llm_concurrency: args.concurrency,
        pack: args.pack.clone(),
        limit: args
            .limit
            .map(|limit| usize::try_from(limit).unwrap_or(usize::MAX)),
        ..Config::default()
    };
    let report = cfeval_synthesize::run_with_extractor(&config, &args.input, &args.out, llm.as_ref())
        .with_context(|| format!("E-Synthesis into {} failed", args.out.display()))?;
    for reason in &report.quarantine_reasons {
        tracing::warn!("quarantined: {reason}");
    }
    if report.quarantined > 0 {
        tracing::warn!(
            "{} input(s) quarantined; see `cfeval show cases_quarantine --run {}`",
            report.quarantined,
            args.out.display()
        );
    }
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}

/// The model extractor over `model`, with the run's response cache and
/// call journal (a rerun is free).
pub fn llm_extractor(
    model: &str,
    run_dir: &std::path::Path,
    settings: &crate::subjects::ModelSettings,
) -> anyhow::Result<LlmExtractor> {
    let client = crate::subjects::model_client(model, run_dir, settings)
        .with_context(|| format!("the extractor model `{model}`"))?;
    Ok(LlmExtractor::new(model, client, LlmExtractor::DEFAULT_MAX_TOKENS))
}
