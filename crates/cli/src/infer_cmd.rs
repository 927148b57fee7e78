//! `cfeval infer`.

use std::io::Write;
use std::sync::Arc;

use cfeval_infer::{CallSettings, Config, Mode, Slice};

use crate::args::{InferArgs, Mode as ModeArg};
use crate::subjects::{ModelSettings, subject};

/// The run's name: its folder's name.
pub fn run_name(run: &std::path::Path) -> String {
    run.file_name()
        .map_or_else(|| "run".to_string(), |name| name.to_string_lossy().into_owned())
}

/// Runs one subject over a run's variants and prints the report as JSON.
pub fn infer(args: &InferArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let settings = ModelSettings {
        base_url: args.base_url.clone(),
        cache_dir: args.cache_dir.clone(),
        ..ModelSettings::default()
    }
    .with_concurrency(&args.subject, args.concurrency);
    let subject = Arc::new(subject(&args.subject, &args.run, &settings)?);
    let config = Config {
        run: run_name(&args.run),
        mode: match args.mode {
            ModeArg::SingleShot => Mode::SingleShot,
            ModeArg::Agent => Mode::Agent,
        },
        settings: CallSettings {
            temperature: args.temperature,
            seed: Some(args.seed),
            max_tokens: args.max_tokens,
            max_steps: args.max_steps,
            sample: 0,
        },
        samples: args.samples,
        concurrency: args.concurrency,
        slice: match &args.shard {
            Some(text) => Slice::parse(text)?,
            None => Slice::ALL,
        },
        families: args.families.clone(),
        allow_mixed_catalogs: args.allow_mixed_catalogs,
        max_tries: args.max_tries,
        prompts: cfeval_infer::Prompts::named(&args.prompt_set)
            .ok_or_else(|| anyhow::anyhow!("unknown prompt set `{}`", args.prompt_set))?,
        ..Config::default()
    };
    let report = cfeval_infer::run(&config, subject, &args.run)?;
    tracing::info!(?report, "infer finished");
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}
