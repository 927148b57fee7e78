//! `cfeval judge`: judge a run's responses with the rule judge or a model
//! judge, adding that judge's judgments; subjects are never called.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use cfeval_judge::{Config, Judge, LlmJudge, RuleJudge};

use crate::args::JudgeArgs;
use crate::infer_cmd::run_name;
use crate::subjects::{ModelSettings, model_client};

/// Names the fallback judge for subjects of the judge's own model family
/// (e.g. `anthropic/claude-opus-4-7` when judging with `openai/gpt-5.4`).
pub const FALLBACK_ENV: &str = "CFEVAL_JUDGE_FALLBACK";

fn llm_judge(name: &str, run: &std::path::Path, base_url: Option<String>) -> anyhow::Result<Box<LlmJudge>> {
    let settings = ModelSettings {
        base_url,
        ..ModelSettings::default()
    };
    let client =
        model_client(name, run, &settings).with_context(|| format!("building the client of judge {name}"))?;
    Ok(Box::new(LlmJudge::new(name, Arc::new(client))?))
}

/// Runs one judge over a run's responses and prints the report as JSON.
pub fn judge(args: &JudgeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let judge = if args.judge == RuleJudge::NAME {
        Judge::Rule(Box::new(RuleJudge::builtin()?))
    } else {
        if args.judge.starts_with("control/") {
            anyhow::bail!(
                "{} is a control subject, not a judge (use `rule` or a model name)",
                args.judge
            );
        }
        let fallback = args
            .fallback
            .clone()
            .or_else(|| std::env::var(FALLBACK_ENV).ok())
            .filter(|name| !name.trim().is_empty());
        let fallback = match fallback {
            Some(name) => Some(llm_judge(name.trim(), &args.run, None)?),
            None => None,
        };
        Judge::Llm {
            judge: llm_judge(&args.judge, &args.run, args.base_url.clone())?,
            fallback,
        }
    };
    let mut config = Config::new(run_name(&args.run))?;
    config.allow_mixed_catalogs = args.allow_mixed_catalogs;
    let report = cfeval_judge::run(&config, &judge, &args.run)
        .with_context(|| format!("judge {} failed for run {}", args.judge, args.run.display()))?;
    tracing::info!(?report, "judge finished");
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}
