//! `cfeval judge`: judge a run's responses with the rule judge or a model
//! judge, adding that judge's judgments; subjects are never called.

use std::io::Write;
use std::sync::Arc;

use anyhow::Context;
use cfeval_judge::{Config, Judge, LlmJudge, RubricJudge, RubricRun, RuleJudge};

use crate::args::JudgeArgs;
use crate::infer_cmd::run_name;
use crate::subjects::{ModelSettings, model_client};

/// Names the fallback judge for subjects of the judge's own model family
/// (e.g. `anthropic/claude-opus-4-7` when judging with `openai/gpt-5.4`).
pub const FALLBACK_ENV: &str = "CFEVAL_JUDGE_FALLBACK";

/// What only the rubric judge takes: how many cases it scores, and the
/// weighting profile (default: the pack's).
#[derive(Debug, Clone, Default)]
pub struct RubricOptions {
    pub cases: Option<usize>,
    pub profile: Option<String>,
}

/// The model part of a judge name: a cascade's or a rubric judge's model,
/// else the name itself.
pub fn judge_model(name: &str) -> &str {
    if let Some(model) = name.strip_prefix(cfeval_judge::rubric::judge::PREFIX) {
        return model.trim();
    }
    name.strip_prefix("cascade:")
        .and_then(|chain| chain.split_once(','))
        .map_or(name, |(_, model)| model.trim())
}

/// The judge named `name` (`rule`, a model, `cascade:rule,<model>` or
/// `rubric:<model>`), with `fallback` for subjects of its own model family;
/// `settings` reach the judge's endpoint (the fallback uses its provider's
/// defaults), `max_tokens` caps each verdict.
pub fn build_judge(
    name: &str,
    fallback: Option<&str>,
    run: &std::path::Path,
    settings: &ModelSettings,
    max_tokens: Option<u32>,
    rubric: &RubricOptions,
) -> anyhow::Result<Judge> {
    if name == RuleJudge::NAME {
        return Ok(Judge::Rule(Box::new(RuleJudge::builtin()?)));
    }
    // `rubric:<model>`: the clinical-reasoning rubric, scored by the model.
    if let Some(model) = name.strip_prefix(cfeval_judge::rubric::judge::PREFIX) {
        let model = model.trim();
        if model.is_empty()
            || model == RuleJudge::NAME
            || model.starts_with("cascade:")
            || cfeval_schema::vocab::SubjectKind::is_control(model)
        {
            anyhow::bail!("judge `{name}`: a rubric judge is `rubric:<model>` (a model scores the rubric)");
        }
        let rubric_judge = |model: &str, settings: &ModelSettings| -> anyhow::Result<RubricJudge> {
            let client = model_client(model, run, settings)
                .with_context(|| format!("building the client of rubric judge {model}"))?;
            Ok(RubricJudge::new(model, Arc::new(client))?.with_max_tokens(max_tokens))
        };
        let fallback = match fallback {
            Some(fallback) => Some(rubric_judge(judge_model(fallback), &ModelSettings::default())?),
            None => None,
        };
        return Ok(Judge::Rubric(Box::new(RubricRun {
            judge: rubric_judge(model, settings)?,
            fallback,
            cases: rubric.cases,
            profile: rubric.profile.clone(),
        })));
    }
    if rubric.cases.is_some() || rubric.profile.is_some() {
        anyhow::bail!(
            "judge `{name}`: --cases and --profile are options of a rubric judge (`rubric:<model>`)"
        );
    }
    // `cascade:rule,<model>`: the rule judge, and the model for what it is
    // uncertain about.
    if let Some(chain) = name.strip_prefix("cascade:") {
        let (first, model) = chain
            .split_once(',')
            .ok_or_else(|| anyhow::anyhow!("judge `{name}`: a cascade is `cascade:rule,<model>`"))?;
        if first.trim() != RuleJudge::NAME || model.trim().is_empty() || model.contains(',') {
            anyhow::bail!(
                "judge `{name}`: a cascade is `cascade:rule,<model>` (the rule judge first, then one model)"
            );
        }
        let Judge::Llm { judge, fallback } = build_judge(
            model.trim(),
            fallback,
            run,
            settings,
            max_tokens,
            &RubricOptions::default(),
        )?
        else {
            anyhow::bail!("judge `{name}`: the second judge of a cascade must be a model");
        };
        return Ok(Judge::cascade(
            RuleJudge::builtin()?,
            *judge,
            fallback.map(|fallback| *fallback),
        ));
    }
    if cfeval_schema::vocab::SubjectKind::is_control(name) {
        anyhow::bail!("{name} is a control subject, not a judge (use `rule` or a model name)");
    }
    let llm = |name: &str, settings: &ModelSettings| -> anyhow::Result<Box<LlmJudge>> {
        let client = model_client(name, run, settings)
            .with_context(|| format!("building the client of judge {name}"))?;
        let judge = LlmJudge::new(name, Arc::new(client))?;
        Ok(Box::new(match max_tokens {
            Some(max_tokens) => judge.with_max_tokens(max_tokens),
            None => judge,
        }))
    };
    let fallback = match fallback {
        Some(fallback) => Some(llm(fallback, &ModelSettings::default())?),
        None => None,
    };
    Ok(Judge::Llm {
        judge: llm(name, settings)?,
        fallback,
    })
}

/// Runs one judge over a run's responses and prints the report as JSON.
pub fn judge(args: &JudgeArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let fallback = args
        .fallback
        .clone()
        .or_else(|| std::env::var(FALLBACK_ENV).ok())
        .filter(|name| !name.trim().is_empty());
    let settings = ModelSettings {
        base_url: args.base_url.clone(),
        ..ModelSettings::default()
    }
    .with_concurrency(
        &args.judge,
        usize::try_from(args.concurrency).unwrap_or(usize::MAX),
    );
    let judge = build_judge(
        &args.judge,
        fallback.as_deref().map(str::trim),
        &args.run,
        &settings,
        None,
        &RubricOptions {
            cases: args
                .cases
                .map(|cases| usize::try_from(cases).unwrap_or(usize::MAX)),
            profile: args.profile.clone(),
        },
    )?;
    let mut config = Config::new(run_name(&args.run))?;
    config.allow_mixed_catalogs = args.allow_mixed_catalogs;
    config.concurrency = usize::try_from(args.concurrency).unwrap_or(usize::MAX);
    let report = cfeval_judge::run(&config, &judge, &args.run)
        .with_context(|| format!("judge {} failed for run {}", args.judge, args.run.display()))?;
    tracing::info!(?report, "judge finished");
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}

/// `cfeval rubric check FILE`: every problem with its line, or the rubric's
/// size and hash.
pub fn rubric(args: &crate::args::RubricArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    match &args.command {
        crate::args::RubricCommand::Check { file } => {
            let text = fs_err::read_to_string(file)?;
            match cfeval_judge::rubric::Rubric::parse(&text) {
                Ok(rubric) => {
                    writeln!(
                        out,
                        "ok {} ({} domains, {} sub-dimensions, {} N/A rules, profiles {}) blake3={}",
                        file.display(),
                        rubric.domains.len(),
                        rubric.subdimension_count(),
                        rubric.na_rules.len(),
                        rubric.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                        rubric.hash
                    )?;
                    Ok(())
                }
                Err(problems) => {
                    for problem in &problems {
                        writeln!(out, "{}:{problem}", file.display())?;
                    }
                    anyhow::bail!("rubric {} has {} problem(s)", file.display(), problems.len())
                }
            }
        }
    }
}
