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
            ModeArg::Dialogue => Mode::Dialogue,
            ModeArg::Harness => Mode::Harness,
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
        commit_every: std::time::Duration::from_secs_f64(args.commit_secs),
        prompts: cfeval_infer::Prompts::named(&args.prompt_set)
            .ok_or_else(|| anyhow::anyhow!("unknown prompt set `{}`", args.prompt_set))?,
        dialogue: matches!(args.mode, ModeArg::Dialogue)
            .then(|| dialogue_setup(args, &subject))
            .transpose()?,
        harness: matches!(args.mode, ModeArg::Harness).then(|| cfeval_infer::HarnessSetup {
            thresholds: cfeval_infer::harness::Thresholds {
                max_steps: args.harness_steps,
                ..Default::default()
            },
            protocol: if args.harness_json {
                cfeval_infer::harness::Protocol::Json
            } else {
                cfeval_infer::harness::Protocol::Auto
            },
            corpus: args.corpus.clone(),
        }),
        batch: args.batch.then(|| cfeval_infer::BatchMode {
            poll: std::time::Duration::from_secs_f64(args.batch_poll_secs),
            ..cfeval_infer::BatchMode::default()
        }),
        ..Config::default()
    };
    let report = cfeval_infer::run(&config, subject, &args.run)?;
    tracing::info!(?report, "infer finished");
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}

/// Mode dialogue's patient agent and limit, from the flags and the
/// subject's options.
fn dialogue_setup(
    args: &InferArgs,
    doctor: &Arc<cfeval_infer::Subject>,
) -> anyhow::Result<cfeval_infer::DialogueSetup> {
    let model = cfeval_schema::vocab::SubjectName::model_of(&args.subject);
    let patient = args.patient.clone().unwrap_or_else(|| model.to_string());
    let patient_subject = if patient == model && args.patient_base_url == args.base_url {
        Arc::clone(doctor)
    } else {
        let settings = ModelSettings {
            base_url: args.patient_base_url.clone(),
            cache_dir: args.cache_dir.clone(),
            ..ModelSettings::default()
        };
        Arc::new(subject(&patient, &args.run, &settings)?)
    };
    let fallback_subject = match &args.measurement_fallback {
        Some(name) => Some(Arc::new(subject(
            name,
            &args.run,
            &ModelSettings {
                base_url: args.measurement_fallback_base_url.clone(),
                cache_dir: args.cache_dir.clone(),
                ..ModelSettings::default()
            },
        )?)),
        None => None,
    };
    Ok(cfeval_infer::DialogueSetup {
        patient,
        patient_settings: CallSettings {
            temperature: args.temperature,
            seed: Some(args.seed),
            max_tokens: args.patient_max_tokens,
            ..CallSettings::default()
        },
        max_turns: args.max_turns,
        patient_subject: Some(patient_subject),
        bias: None,
        reflect: false,
        notebook: false,
        fallback: args.measurement_fallback.clone(),
        fallback_subject,
    }
    .with_options_of(&args.subject))
}
