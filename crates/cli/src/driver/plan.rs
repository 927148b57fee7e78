//! `cfeval run --dry-run`: what a run would do, without calling any model:
//! tuples and calls per subject × mode and per judge, how many calls the
//! response cache already holds, estimated tokens and cost; and with a
//! `[power]` section, the cases needed to detect its difference beside the
//! power of the run's own number of cases.

use anyhow::Context as _;
use std::collections::BTreeMap;
use std::io::Write;

use cfeval_schema::vocab::{SubjectName, covers_family};
use std::path::{Path, PathBuf};

use cfeval_infer::{CallSettings, Mode, Prompts, Slice};
use cfeval_model::{BackendIdentity, CacheKey, Price, PriceTable, ResponseCache, SubjectSpec};
use cfeval_schema::{ResponseRow, ShardStore, VariantRow};

use crate::pipeline::{Cases, Pipeline, SubjectPlan};

/// Tuples per (subject, mode name) in `slice` of the run's variants.
pub fn tuple_counts(
    run_dir: &Path,
    pipeline: &Pipeline,
    slice: Slice,
) -> anyhow::Result<BTreeMap<(String, String), u64>> {
    let variants = ShardStore::open_table::<VariantRow>(run_dir)?;
    count_tuples(&variants, pipeline, slice)
}

fn count_tuples(
    variants: &ShardStore,
    pipeline: &Pipeline,
    slice: Slice,
) -> anyhow::Result<BTreeMap<(String, String), u64>> {
    let per_family = family_counts(variants, slice)?;
    let mut counts = BTreeMap::new();
    for subject in &pipeline.subjects {
        for run in &subject.runs {
            let tuples = per_family
                .iter()
                .filter(|(family, _)| covers_family(&run.families, family))
                .map(|(_, count)| count)
                .sum::<u64>()
                * u64::from(subject.samples.max(1));
            counts.insert((subject.name.clone(), run.mode.as_str().to_string()), tuples);
        }
    }
    Ok(counts)
}

/// Applicable variants in `slice` per family (`baseline` included).
fn family_counts(variants: &ShardStore, slice: Slice) -> anyhow::Result<BTreeMap<String, u64>> {
    #[derive(serde::Deserialize)]
    struct Variant {
        variant_id: String,
        family: String,
        applicable: bool,
    }
    let mut per_family: BTreeMap<String, u64> = BTreeMap::new();
    for batch in variants.read_columns::<Variant>(&["variant_id", "family", "applicable"])? {
        for variant in batch? {
            // Every family of the slice (each unit filters its own after).
            if cfeval_infer::answers_variant(
                slice,
                &[],
                &variant.variant_id,
                &variant.family,
                variant.applicable,
            ) {
                *per_family.entry(variant.family).or_default() += 1;
            }
        }
    }
    Ok(per_family)
}

/// The backend identity a subject's calls are cached under, when it can be
/// known without a key.
fn identity(subject: &SubjectPlan) -> Option<BackendIdentity> {
    if let cfeval_schema::vocab::SubjectKind::Embedded(model) =
        cfeval_schema::vocab::SubjectKind::of(&subject.name)
    {
        return Some(cfeval_embedded::EmbeddedBackend::identity_of(
            model,
            &cfeval_embedded::default_model_path(),
            cfeval_embedded::Options::default().batch_tokens,
        ));
    }
    let mut spec = SubjectSpec::new(SubjectName::model_of(&subject.name));
    spec.base_url = subject.base_url.clone();
    spec.api_key_env = subject.api_key_env.clone();
    // The key is not part of the identity: a placeholder stands in for a
    // missing one so that the plan still says what is cached.
    let key_env = subject.api_key_env.clone();
    let env = move |name: &str| {
        std::env::var(name).ok().or_else(|| {
            let is_key = key_env.as_deref() == Some(name) || name.ends_with("_API_KEY");
            is_key.then(|| "placeholder".to_string())
        })
    };
    spec.resolve_with(&env)
        .ok()
        .map(|config| BackendIdentity::from_config(&config))
}

/// Tokens a rubric judge reads beyond its template and the answer: the
/// rubric's items with their anchors and the chart (about 4,000 + 600).
const RUBRIC_ITEMS_TOKENS: u64 = 4_600;

/// The most a rubric judge's answer holds: every item's score, quote and
/// sentence at their longest (about 21 × 240 tokens).
const RUBRIC_ANSWER_TOKENS: u64 = 5_000;

/// Tokens of the expected direction a model judge reads with each pair (its
/// text is a few sentences of the catalog).
const JUDGE_EXPECTATION_TOKENS: u64 = 256;

#[derive(Default)]
struct UnitPlan {
    tuples: u64,
    done: u64,
    calls: u64,
    cached: Option<u64>,
    input_tokens: u64,
    output_tokens: u64,
    cost: Option<f64>,
}

/// The tuples answered per (subject, mode): (variant id, sample).
type Answered = BTreeMap<(String, String), std::collections::HashSet<(String, u32)>>;

fn answered(run_dir: &Path) -> anyhow::Result<Answered> {
    #[derive(serde::Deserialize)]
    struct Answer {
        subject: String,
        mode: String,
        variant_id: String,
        sample: u32,
    }
    let mut done = Answered::new();
    let Some(responses) = ShardStore::open_existing(
        &run_dir.join("responses"),
        "responses",
        <ResponseRow as cfeval_schema::Table>::schema(),
    )?
    else {
        return Ok(done);
    };
    for batch in responses.read_columns::<Answer>(&["subject", "mode", "variant_id", "sample"])? {
        for answer in batch? {
            done.entry((answer.subject, answer.mode))
                .or_default()
                .insert((answer.variant_id, answer.sample));
        }
    }
    Ok(done)
}

/// Builds the variants a fresh run would have in a scratch folder (cases and
/// perturb are cheap and offline), unless the run already has them.
fn variants_for_plan(pipeline: &Pipeline, run_dir: &Path) -> anyhow::Result<(ShardStore, Option<PathBuf>)> {
    if let Some(store) = ShardStore::open_existing(
        &run_dir.join("variants"),
        "variants",
        <VariantRow as cfeval_schema::Table>::schema(),
    )? && !store.entries().is_empty()
    {
        return Ok((store, None));
    }
    let scratch = std::env::temp_dir().join(format!("cfeval-plan-{}", std::process::id()));
    let _ = fs_err::remove_dir_all(&scratch);
    fs_err::create_dir_all(&scratch)?;
    super::synthesize_cases(pipeline, &scratch)?;
    super::perturb_cases(pipeline, &scratch, false)?;
    Ok((ShardStore::open_table::<VariantRow>(&scratch)?, Some(scratch)))
}

/// Prints the plan of `pipeline` on `run_dir` for `slice`.
pub fn dry_run(pipeline: &Pipeline, run_dir: &Path, slice: Slice, out: &mut dyn Write) -> anyhow::Result<()> {
    let (variants, scratch) = variants_for_plan(pipeline, run_dir)?;
    let result = print_plan(pipeline, run_dir, slice, &variants, out);
    if let Some(scratch) = scratch {
        let _ = fs_err::remove_dir_all(&scratch);
    }
    result
}

fn print_plan(
    pipeline: &Pipeline,
    run_dir: &Path,
    slice: Slice,
    variants: &ShardStore,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    writeln!(
        out,
        "plan of {} (run `{}` in {}{})",
        pipeline.file.display(),
        pipeline.name,
        run_dir.display(),
        if slice.count > 1 {
            format!(", infer slice {}/{}", slice.index, slice.count)
        } else {
            String::new()
        }
    )?;
    match &pipeline.cases {
        Cases::Cohort { cases, seed } => {
            writeln!(out, "cases: synthetic cohort, {cases} cases, seed {seed}")?
        }
        Cases::Inputs { paths, format, .. } => writeln!(
            out,
            "cases: {} input path(s), format {}",
            paths.len(),
            format.as_str()
        )?,
    }
    writeln!(out, "catalog: {}", pipeline.catalog.display())?;
    let counts = count_tuples(variants, pipeline, slice)?;
    let done = answered(run_dir)?;
    let cache = {
        let dir = run_dir.join("cache");
        if dir.is_dir() {
            Some(ResponseCache::open(&dir, false)?)
        } else {
            None
        }
    };
    let prices = PriceTable::bundled()?;
    writeln!(
        out,
        "\ninfer: {:<32} {:<12} {:>8} {:>8} {:>10} {:>8} {:>12} {:>12} {:>10} {:>9}",
        "subject",
        "mode",
        "tuples",
        "done",
        "new calls",
        "cached",
        "in tokens~",
        "out tokens≤",
        "cost≤ USD",
        "in flight"
    )?;
    let mut total_calls = 0u64;
    let mut total_cost = 0.0;
    for subject in &pipeline.subjects {
        let prompts = Prompts::named(&subject.prompt_set).unwrap_or_default();
        for run in &subject.runs {
            let key = (subject.name.clone(), run.mode.as_str().to_string());
            let mut unit = plan_unit(
                subject,
                run.mode,
                &run.families,
                slice,
                variants,
                done.get(&key),
                cache.as_ref(),
                &prompts,
                pipeline.seed,
                counts.get(&key).copied().unwrap_or(0),
                subject
                    .price
                    .or_else(|| prices.lookup(SubjectName::model_of(&subject.name))),
                match run.mode {
                    Mode::Harness => u64::from(pipeline.harness.thresholds.max_steps),
                    _ => dialogue_calls(pipeline, &subject.name),
                },
            )?;
            if subject.batch.is_some() {
                // The providers' batch endpoints charge half.
                unit.cost = unit.cost.map(|cost| cost / 2.0);
            }
            total_calls += unit.calls;
            total_cost += unit.cost.unwrap_or(0.0);
            // The calls in flight the unit will keep (the client's limit; the
            // embedded model answers one at a time; a batch sends them all).
            let in_flight = if subject.is_control() {
                "-".to_string()
            } else if subject.batch.is_some() {
                "batch".to_string()
            } else if cfeval_schema::vocab::SubjectKind::is_embedded(&subject.name) {
                "1".to_string()
            } else {
                subject.concurrency(pipeline.concurrency).to_string()
            };
            writeln!(
                out,
                "       {:<32} {:<12} {:>8} {:>8} {:>10} {:>8} {:>12} {:>12} {:>10} {:>9}",
                subject.name,
                run.mode.as_str(),
                unit.tuples,
                unit.done,
                unit.calls,
                unit.cached
                    .map_or_else(|| "?".to_string(), |cached| cached.to_string()),
                unit.input_tokens,
                unit.output_tokens,
                unit.cost
                    .map_or_else(|| "-".to_string(), |cost| format!("{cost:.4}")),
                in_flight,
            )?;
        }
    }
    let per_family = family_counts(variants, slice)?;
    writeln!(out, "\njudge:")?;
    let mut unpriced: Vec<String> = Vec::new();
    for judge in &pipeline.judges {
        // Responses this judge scores, the pair verdicts among them, and
        // the most input a model judge reads: its template and the two
        // answers of each pair, each at most its subject's max tokens.
        let (mut responses, mut pairs, mut pair_answer_tokens) = (0u64, 0u64, 0u64);
        let mut answer_tokens = 0u64;
        for subject in &pipeline.subjects {
            if !judge.subjects.is_empty() && !judge.subjects.contains(&subject.name) {
                continue;
            }
            for run in &subject.runs {
                for (family, count) in &per_family {
                    if !covers_family(&run.families, family) || !covers_family(&judge.families, family) {
                        continue;
                    }
                    // Every sample is a response; a baseline re-sample is
                    // also judged against the first baseline answer.
                    let samples = u64::from(subject.samples.max(1));
                    responses += count * samples;
                    answer_tokens += count * samples * u64::from(subject.max_tokens);
                    let judged = if family == cfeval_schema::vocab::BASELINE {
                        count * (samples - 1)
                    } else {
                        count * samples
                    };
                    pairs += judged;
                    pair_answer_tokens += judged * 2 * u64::from(subject.max_tokens);
                }
            }
        }
        // A cascade calls its model for the pairs the rule judge leaves
        // uncertain: at most all of them.
        let model = judge.model().unwrap_or(cfeval_judge::RuleJudge::NAME);
        // A rubric judge scores responses, one call each (of `cases` cases
        // when it names how many), reading the rubric's items and the
        // chart; its answer holds every item's score, quote and sentence.
        let rubric = judge.name.starts_with(cfeval_judge::rubric::judge::PREFIX);
        let share = match (rubric, judge.cases) {
            (true, Some(cases)) => {
                let all = per_family
                    .get(cfeval_schema::vocab::BASELINE)
                    .copied()
                    .unwrap_or(0)
                    .max(1);
                (cases as f64 / all as f64).min(1.0)
            }
            _ => 1.0,
        };
        let calls = match (rubric, judge.model()) {
            (true, _) => (responses as f64 * share).ceil() as u64,
            (false, Some(_)) => pairs,
            (false, None) => 0,
        };
        let cost = if calls == 0 {
            Some(0.0)
        } else {
            let (input, output) = if rubric {
                (
                    calls
                        * (cfeval_judge::rubric::judge::RUBRIC_PROMPT.len() as u64 / 4 + RUBRIC_ITEMS_TOKENS)
                        + (answer_tokens as f64 * share) as u64,
                    calls * RUBRIC_ANSWER_TOKENS,
                )
            } else {
                (
                    calls * (cfeval_judge::JUDGE_PAIR_TEMPLATE.len() as u64 / 4 + JUDGE_EXPECTATION_TOKENS)
                        + pair_answer_tokens,
                    calls
                        * u64::from(
                            judge
                                .max_tokens
                                .unwrap_or(cfeval_judge::LlmJudge::DEFAULT_MAX_TOKENS),
                        ),
                )
            };
            prices
                .lookup(model)
                .map(|price| (input as f64 * price.input + output as f64 * price.output) / 1_000_000.0)
        };
        match cost {
            Some(cost) => total_cost += cost,
            None if !unpriced.iter().any(|known| known == model) => unpriced.push(model.to_string()),
            None => {}
        }
        let what = if rubric {
            format!(
                "{responses} responses, {calls} scored on the rubric ({}), {calls} model calls (at most)",
                judge.cases.map_or_else(
                    || "every case".to_string(),
                    |cases| match cases {
                        1 => "1 case".to_string(),
                        cases => format!("{cases} cases"),
                    }
                )
            )
        } else {
            format!("{responses} responses, {pairs} pair verdicts, {calls} model calls (at most)")
        };
        writeln!(
            out,
            "       {:<32} {what}, cost ≤ {}{}",
            judge.name,
            cost.map_or_else(
                || format!("unknown (no price for {model})"),
                |cost| format!("${cost:.4}")
            ),
            judge
                .fallback
                .as_ref()
                .map_or_else(String::new, |fallback| format!(
                    " (fallback {fallback} for its own family)"
                ))
        )?;
    }
    writeln!(
        out,
        "\naggregate: {} paired bootstrap resamples of cases (jointly across families), level {}, seed {}",
        pipeline.aggregate.resamples, pipeline.aggregate.level, pipeline.seed
    )?;
    if unpriced.is_empty() {
        writeln!(
            out,
            "\ntotal: {total_calls} new subject calls, cost ≤ ${total_cost:.4} with the judges (an upper bound: every call at max tokens)"
        )?;
    } else {
        writeln!(
            out,
            "\ntotal: {total_calls} new subject calls, cost ≤ ${total_cost:.4} plus the unpriced judge calls of {} (an upper bound: every call at max tokens)",
            unpriced.join(", ")
        )?;
    }
    if let Some(section) = &pipeline.power {
        print_power(pipeline, section, case_count(variants)?, out)?;
    }
    let problems = pipeline.check_environment(&|name: &str| std::env::var(name).ok());
    for problem in &problems {
        writeln!(out, "missing: {problem}")?;
    }
    Ok(())
}

/// The run's cases: those with a variant.
fn case_count(variants: &ShardStore) -> anyhow::Result<u64> {
    #[derive(serde::Deserialize)]
    struct Variant {
        case_id: String,
    }
    let mut cases = std::collections::BTreeSet::new();
    for batch in variants.read_columns::<Variant>(&["case_id"])? {
        for variant in batch? {
            cases.insert(variant.case_id);
        }
    }
    Ok(cases.len() as u64)
}

/// `[power]`: per scope, the cases needed for the difference and the power
/// with the run's `cases`.
fn print_power(
    pipeline: &Pipeline,
    section: &crate::pipeline::PowerPlan,
    cases: u64,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    use crate::power_cmd;
    let args = power_cmd::pipeline_args(section, pipeline.seed, cases);
    let plan = power_cmd::plan(&args).with_context(|| {
        format!(
            "the [power] section of {} cannot be planned",
            pipeline.file.display()
        )
    })?;
    let design = match (&plan.run, plan.pilot_cases) {
        (Some(run), Some(pilot)) => format!(
            "{} design, {}, pilot run {run} ({pilot} cases, judge {}, mode {})",
            plan.design,
            power_cmd::compared(&plan),
            plan.judge.as_deref().unwrap_or_default(),
            plan.mode.as_deref().unwrap_or_default()
        ),
        _ => format!(
            "stated effect (difference {:+}, sd {})",
            section.difference.unwrap_or_default(),
            section.sd.unwrap_or_default()
        ),
    };
    writeln!(
        out,
        "\npower: {design}; target power {:.2}, two-sided α {}, {} simulated studies per n",
        plan.settings.power, plan.settings.alpha, plan.settings.simulations,
    )?;
    writeln!(
        out,
        "       {:<12} {:>8} {:>8} {:>14}  power with {cases} cases",
        "scope", "detect", "sd", "cases needed",
    )?;
    let mut short = Vec::new();
    for row in &plan.rows {
        let needed = power_cmd::cases_needed(row);
        let scope = power_cmd::scope_name(row);
        if row.difference.is_some() && row.cases.is_none_or(|needed| needed > cases) {
            short.push(format!("{scope} ({needed})"));
        }
        writeln!(
            out,
            "       {:<12} {:>8} {:>8} {:>14}  {}",
            scope,
            row.difference
                .map_or_else(|| "–".into(), |difference| format!("{difference:+.3}")),
            if row.sd.is_finite() {
                format!("{:.3}", row.sd)
            } else {
                "–".into()
            },
            needed,
            power_cmd::planned_power(&plan, row),
        )?;
    }
    if short.is_empty() {
        writeln!(
            out,
            "       this run's {cases} cases reach the target power in every scope"
        )?;
    } else {
        writeln!(
            out,
            "       this run's {cases} cases fall short of the target power in: {} (`cfeval power` prints the whole plan and its curve)",
            short.join(", ")
        )?;
    }
    Ok(())
}

/// A dialogue's calls at most: the doctor's N turns and the patient's
/// replies, the patient's ratings, the `+reflect` review and the
/// `+notebook` rewrite (counted on every dialogue: an upper bound) and the
/// measurement fallback once per turn when the run names one; N is the
/// subject's `+turns=`, else the run's, else the pack's.
fn dialogue_calls(pipeline: &Pipeline, subject: &str) -> u64 {
    let name = SubjectName::parse(subject).ok();
    let turns = name
        .as_ref()
        .and_then(SubjectName::turns)
        .unwrap_or_else(|| dialogue_turns(pipeline));
    let tools = name.map_or(0, |name| {
        u64::from(name.reflects()) + u64::from(name.keeps_notebook())
    });
    // The measurement fallback may be asked once per doctor turn.
    let per_turn = 2 + u64::from(
        pipeline
            .dialogue
            .as_ref()
            .is_some_and(|plan| plan.measurement_fallback.is_some()),
    );
    per_turn * u64::from(turns.max(1)) + 1 + tools
}

/// The interaction limit N of the pipeline's dialogues: `[dialogue]
/// max-turns`, else the pack's `max_turns`, else AgentClinic's 20.
fn dialogue_turns(pipeline: &Pipeline) -> u32 {
    pipeline
        .dialogue
        .as_ref()
        .and_then(|plan| plan.max_turns)
        .or_else(|| {
            let dir = pipeline.pack.as_ref()?;
            cfeval_diagnosis::dialogue::Settings::load(dir)
                .ok()
                .map(|settings| settings.max_turns)
        })
        .unwrap_or(20)
}

#[allow(clippy::too_many_arguments)]
fn plan_unit(
    subject: &SubjectPlan,
    mode: Mode,
    families: &[String],
    slice: Slice,
    variants: &ShardStore,
    done: Option<&std::collections::HashSet<(String, u32)>>,
    cache: Option<&ResponseCache>,
    prompts: &Prompts,
    seed: u64,
    tuples: u64,
    price: Option<Price>,
    // A dialogue's calls at most, or a harness episode's steps.
    episode_calls: u64,
) -> anyhow::Result<UnitPlan> {
    let mut unit = UnitPlan {
        tuples,
        ..UnitPlan::default()
    };
    if subject.is_control() {
        unit.done = done.map_or(0, |done| done.len() as u64).min(tuples);
        unit.cached = Some(0);
        unit.cost = Some(0.0);
        return Ok(unit);
    }
    let identity = identity(subject);
    let settings = CallSettings {
        temperature: subject.temperature,
        seed: Some(seed),
        max_tokens: subject.max_tokens,
        max_steps: subject.max_steps,
        sample: 0,
    };
    let calls_per_tuple = match mode {
        Mode::SingleShot => 1,
        Mode::Agent => u64::from(subject.max_steps.max(1)),
        // At most N doctor turns, N patient replies (its opening statement
        // included), the closing ratings and the tools' calls.
        Mode::Dialogue | Mode::Harness => episode_calls,
    };
    let mut cached = 0u64;
    let mut input_chars = 0u64;
    // Two variants with the same chart (two interventions making the same
    // edit) are one request: the second is served from the cache the
    // first fills.
    let mut requests: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut repeated = 0u64;
    for batch in variants.read_rows::<VariantRow>()? {
        for variant in batch? {
            if !cfeval_infer::answers(slice, families, &variant) {
                continue;
            }
            for sample in 0..subject.samples.max(1) {
                if done.is_some_and(|done| done.contains(&(variant.variant_id.clone(), sample))) {
                    unit.done += 1;
                    continue;
                }
                let request =
                    cfeval_infer::single_shot_request(&variant, prompts, &settings.for_sample(sample));
                if mode == Mode::SingleShot
                    && let (Some(identity), Some(cache)) = (&identity, cache)
                    && cache.contains(&CacheKey::new(identity, &request)?)
                {
                    cached += 1;
                    continue;
                }
                if mode == Mode::SingleShot && !requests.insert(serde_json::to_string(&request)?) {
                    repeated += 1;
                    continue;
                }
                input_chars += request_chars(&request);
            }
        }
    }
    let new = unit.tuples.saturating_sub(unit.done);
    unit.cached = (mode == Mode::SingleShot && identity.is_some()).then_some(cached);
    unit.calls = new.saturating_sub(cached + repeated) * calls_per_tuple;
    // About four characters per token; an agent re-sends its context each step.
    unit.input_tokens = (input_chars / 4) * calls_per_tuple;
    unit.output_tokens = unit.calls * u64::from(subject.max_tokens);
    unit.cost = price.map(|price| {
        (unit.input_tokens as f64 * price.input + unit.output_tokens as f64 * price.output) / 1_000_000.0
    });
    Ok(unit)
}

/// Characters of a request's text (prompt size, for the token estimate).
fn request_chars(request: &cfeval_model::ChatRequest) -> u64 {
    request
        .messages
        .iter()
        .map(|message| match message {
            cfeval_model::Message::System { content } | cfeval_model::Message::User { content } => {
                content.len() as u64
            }
            _ => 0,
        })
        .sum()
}
