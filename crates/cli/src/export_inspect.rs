//! `cfeval export inspect RUN --out DIR`: every subject × mode of a run as
//! an Inspect AI log, so that transcripts, agent traces, dialogues and judge
//! verdicts open in Inspect View (`inspect view --log-dir DIR`) next to a
//! team's other evaluations.
//!
//! The log is Inspect's own `.eval` format: a zip of `header.json` (the
//! `EvalLog` without its samples), `_journal/start.json`, one
//! `samples/<id>_epoch_<n>.json` per response and `summaries.json`.
//!
//! - **Samples.** One per response: `id` is the variant id, `epoch` the
//!   response's sample + 1; `input` is the chart the subject was served
//!   (rendered as the prompt renders it), `target` the variant's
//!   pre-registered expectation; `messages` the conversation (a single-shot
//!   answer, the agent's tool calls with the sections they returned, or the
//!   dialogue's turns); `output` the final answer with its stop reason and
//!   tokens; `metadata` the tuple (case, intervention, family, mode, status).
//!   A response that failed carries its error as the sample's `error`.
//! - **Scores.** Each judgment is a score named `<judge>/<metric>` (`rule/css`,
//!   `rule/cms`, `rubric:…/rubric.composite`): `value` the score (0, 0.5, 1
//!   for CSS), `answer` the label, `explanation` the judge's rationale. A
//!   verdict without a score (uncertain, failed) has its status as the value
//!   (`"uncertain"`, `"error"`), so it is seen and never counted as a 0.
//! - **Results.** One `EvalScore` per scorer with `scored_samples` (the
//!   numeric verdicts) and, as metrics, the run's `scores` rows of that
//!   subject, mode and judge (`css`, `css[family=A]`, …), each with its
//!   interval in the metric's metadata; rows of no single metric go under a
//!   scorer named after the judge.
//!
//! Only complete response units are exported; an incomplete one is named in
//! the summary (and the log says how many samples it holds). The same run
//! gives byte-identical logs: the times are the units' commit times and the
//! zip entries carry a fixed timestamp.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context;
use cfeval_schema::units::ResponseUnit;
use cfeval_schema::{JudgmentRow, ResponseRow, ScoreRow, Section, ShardStore, Table, TraceStep, VariantRow};
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::args::ExportInspectArgs;

/// What one exported log holds.
#[derive(Debug, Serialize)]
struct LogSummary {
    file: PathBuf,
    subject: String,
    mode: String,
    samples: usize,
    /// Per scorer, the samples with a numeric score.
    scored: BTreeMap<String, u64>,
}

/// What `cfeval export inspect` prints.
#[derive(Debug, Serialize)]
struct Summary {
    run: String,
    out: PathBuf,
    logs: Vec<LogSummary>,
    /// Response units left out because they are not complete.
    incomplete_units: Vec<String>,
}

/// What the export needs of a variant.
struct Variant {
    input: String,
    target: String,
    sections: Vec<Section>,
}

#[derive(serde::Deserialize)]
struct VariantColumns {
    variant_id: String,
    expected_text: Option<String>,
    sections: Vec<Section>,
}

pub fn export(args: &ExportInspectArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let run = crate::infer_cmd::run_name(&args.run);
    let responses = ShardStore::open_existing(
        &args.run.join(ResponseRow::NAME),
        ResponseRow::NAME,
        ResponseRow::schema(),
    )?
    .with_context(|| format!("run {} has no responses to export", args.run.display()))?;
    // (subject, mode) → its complete units; units not complete are named.
    let mut units: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut incomplete = BTreeSet::new();
    for entry in responses.entries() {
        let Some(parsed) = ResponseUnit::parse(&entry.unit) else {
            anyhow::bail!(
                "run {}: a responses shard ({}) has the unit `{}`, which is not a response unit",
                args.run.display(),
                entry.file,
                entry.unit
            );
        };
        if !args.subjects.is_empty() && !args.subjects.iter().any(|subject| subject == parsed.subject) {
            continue;
        }
        if responses.unit(&entry.unit).is_none() {
            incomplete.insert(entry.unit.clone());
            continue;
        }
        units
            .entry((parsed.subject.to_string(), parsed.mode.to_string()))
            .or_default()
            .insert(entry.unit.clone());
    }
    for subject in &args.subjects {
        if !units.keys().any(|(name, _)| name == subject) {
            anyhow::bail!(
                "run {} has no complete responses of subject `{subject}`",
                args.run.display()
            );
        }
    }
    if units.is_empty() {
        anyhow::bail!(
            "run {} has no complete response unit to export",
            args.run.display()
        );
    }
    let variants = read_variants(&args.run)?;
    let mut judgments = read_judgments(&args.run)?;
    let mut scores = read_scores(&args.run)?;
    let pack = cfeval_schema::pack::Pack::of_run(&args.run)
        .map_err(|error| anyhow::anyhow!("run {}: {error}", args.run.display()))?
        .map_or_else(|| "oncology".to_string(), |pack| pack.name.clone());
    fs_err::create_dir_all(&args.out)?;
    let mut logs = Vec::new();
    for ((subject, mode), unit_names) in &units {
        let mut rows: Vec<ResponseRow> = Vec::new();
        for batch in responses.read_rows_where::<ResponseRow, _>(|entry| unit_names.contains(&entry.unit))? {
            rows.extend(batch?);
        }
        rows.sort_by(|a, b| (&a.variant_id, a.sample).cmp(&(&b.variant_id, b.sample)));
        let created = unit_names
            .iter()
            .filter_map(|unit| responses.completed_at(unit))
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH);
        let key = (subject.clone(), mode.clone());
        let log = Log {
            run: &run,
            pack: &pack,
            subject,
            mode,
            created: rfc3339(created),
            rows: &rows,
            variants: &variants,
            judgments: judgments.remove(&key).unwrap_or_default(),
            scores: scores.remove(&key).unwrap_or_default(),
        };
        let file = args.out.join(format!(
            "cfeval_{}_{}_{}.eval",
            file_safe(&run),
            file_safe(subject),
            file_safe(mode)
        ));
        let scored = log
            .write(&file)
            .with_context(|| format!("failed to write {}", file.display()))?;
        logs.push(LogSummary {
            file,
            subject: subject.clone(),
            mode: mode.clone(),
            samples: rows.len(),
            scored,
        });
    }
    for unit in &incomplete {
        tracing::warn!("left out: response unit {unit} is not complete");
    }
    let summary = Summary {
        run,
        out: args.out.clone(),
        logs,
        incomplete_units: incomplete.into_iter().collect(),
    };
    serde_json::to_writer_pretty(&mut *out, &summary)?;
    writeln!(out)?;
    Ok(())
}

fn read_variants(run_dir: &Path) -> anyhow::Result<HashMap<String, Variant>> {
    let store = ShardStore::open_table::<VariantRow>(run_dir)?;
    let mut variants = HashMap::new();
    for batch in store.read_columns::<VariantColumns>(&["variant_id", "expected_text", "sections"])? {
        for variant in batch? {
            variants.insert(
                variant.variant_id,
                Variant {
                    input: cfeval_schema::render_chart(&variant.sections),
                    target: variant.expected_text.unwrap_or_default(),
                    sections: variant.sections,
                },
            );
        }
    }
    Ok(variants)
}

type ByTuple = HashMap<(String, u32), Vec<JudgmentRow>>;

/// Calls `visit` with every committed row of the run's table `T` (none when
/// the run has no such table).
fn each_row<T: Table>(run_dir: &Path, mut visit: impl FnMut(T)) -> anyhow::Result<()> {
    let Some(store) = ShardStore::open_existing(&run_dir.join(T::NAME), T::NAME, T::schema())? else {
        return Ok(());
    };
    for batch in store.read_rows::<T>()? {
        batch?.into_iter().for_each(&mut visit);
    }
    Ok(())
}

/// The run's judgments by (subject, mode), then by (variant, sample).
fn read_judgments(run_dir: &Path) -> anyhow::Result<HashMap<(String, String), ByTuple>> {
    let mut grouped: HashMap<(String, String), ByTuple> = HashMap::new();
    each_row(run_dir, |row: JudgmentRow| {
        grouped
            .entry((row.subject.clone(), row.mode.clone()))
            .or_default()
            .entry((row.variant_id.clone(), row.sample))
            .or_default()
            .push(row);
    })?;
    Ok(grouped)
}

/// The run's score rows by (subject, mode).
fn read_scores(run_dir: &Path) -> anyhow::Result<HashMap<(String, String), Vec<ScoreRow>>> {
    let mut grouped: HashMap<(String, String), Vec<ScoreRow>> = HashMap::new();
    each_row(run_dir, |row: ScoreRow| {
        grouped
            .entry((row.subject.clone(), row.mode.clone()))
            .or_default()
            .push(row);
    })?;
    Ok(grouped)
}

/// One subject × mode, to be written as one log.
struct Log<'a> {
    run: &'a str,
    pack: &'a str,
    subject: &'a str,
    mode: &'a str,
    created: String,
    rows: &'a [ResponseRow],
    variants: &'a HashMap<String, Variant>,
    judgments: ByTuple,
    scores: Vec<ScoreRow>,
}

impl Log<'_> {
    /// Writes the log to `file` (through a temporary file, so a reader never
    /// sees half a log); returns the numeric scores per scorer.
    fn write(&self, file: &Path) -> anyhow::Result<BTreeMap<String, u64>> {
        use zip::write::SimpleFileOptions;
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .last_modified_time(zip::DateTime::default());
        let partial = file.with_extension("eval.partial");
        let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(fs_err::File::create(&partial)?));
        let eval = self.eval_spec();
        let plan = json!({"name": "plan", "steps": [{"solver": "cfeval", "params": {"mode": self.mode}}]});
        zip.start_file("_journal/start.json", options)?;
        serde_json::to_writer(&mut zip, &json!({"version": 2, "eval": eval, "plan": plan}))?;
        // Scorer → (numeric, other) counts, in name order.
        let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let mut summaries = Vec::with_capacity(self.rows.len());
        let (mut input_tokens, mut output_tokens) = (0_u64, 0_u64);
        for row in self.rows {
            let sample = self.sample(row, &mut counts)?;
            input_tokens += row.input_tokens;
            output_tokens += row.output_tokens;
            zip.start_file(
                format!("samples/{}_epoch_{}.json", row.variant_id, row.sample + 1),
                options,
            )?;
            serde_json::to_writer(&mut zip, &sample)?;
            summaries.push(summary_of(sample));
        }
        zip.start_file("summaries.json", options)?;
        serde_json::to_writer(&mut zip, &summaries)?;
        let header = json!({
            "version": 2,
            "status": "success",
            "eval": eval,
            "plan": plan,
            "results": self.results(&counts),
            "stats": {
                "started_at": self.created,
                "completed_at": self.created,
                "model_usage": {self.subject: usage(input_tokens, output_tokens)},
            },
        });
        zip.start_file("header.json", options)?;
        serde_json::to_writer(&mut zip, &header)?;
        let mut inner = zip.finish()?;
        inner.flush()?;
        drop(inner);
        fs_err::rename(&partial, file)?;
        Ok(counts
            .into_iter()
            .map(|(name, (numeric, _))| (name, numeric))
            .collect())
    }

    fn eval_spec(&self) -> Value {
        let ids: Vec<String> = {
            let unique: BTreeSet<&str> = self.rows.iter().map(|row| row.variant_id.as_str()).collect();
            unique.into_iter().map(str::to_string).collect()
        };
        let digest = cfeval_schema::ids::content_id("inspect", &[self.run, self.subject, self.mode]);
        let prompt_sets: BTreeSet<&str> = self.rows.iter().map(|row| row.prompt_set.as_str()).collect();
        let catalogs: BTreeSet<&str> = self.rows.iter().map(|row| row.catalog_hash.as_str()).collect();
        json!({
            "eval_id": digest,
            "run_id": self.run,
            "created": self.created,
            "task": format!("cfeval/{}", self.pack),
            "task_id": cfeval_schema::ids::content_id("inspect-task", &[self.run, self.pack]),
            "task_version": 0,
            "task_args": {"pack": self.pack, "mode": self.mode},
            "solver": format!("cfeval/{}", self.mode),
            "dataset": {"name": self.run, "samples": ids.len(), "sample_ids": ids},
            "model": self.subject,
            "config": {"epochs": self.rows.iter().map(|row| row.sample + 1).max().unwrap_or(1)},
            "packages": {"cfeval": cfeval_schema::CFEVAL_VERSION},
            "metadata": {
                "cfeval_run": self.run,
                "mode": self.mode,
                "prompt_sets": prompt_sets,
                "catalog_hashes": catalogs,
            },
        })
    }

    /// The `EvalSample` of one response; counts its scores.
    fn sample(&self, row: &ResponseRow, counts: &mut BTreeMap<String, (u64, u64)>) -> anyhow::Result<Value> {
        let variant = self.variants.get(&row.variant_id).with_context(|| {
            format!(
                "response of {} to variant `{}` names a variant the run does not have",
                row.subject, row.variant_id
            )
        })?;
        let mut scores = Map::new();
        for judgment in self
            .judgments
            .get(&(row.variant_id.clone(), row.sample))
            .map_or(&[][..], Vec::as_slice)
        {
            let name = format!("{}/{}", judgment.judge, judgment.metric);
            let count = counts.entry(name.clone()).or_default();
            let value = match judgment.score {
                Some(score) if score.is_finite() => {
                    count.0 += 1;
                    json!(score)
                }
                _ => {
                    count.1 += 1;
                    json!(judgment.status)
                }
            };
            scores.insert(
                name,
                json!({
                    "value": value,
                    "answer": judgment.label,
                    "explanation": judgment.rationale,
                    "metadata": {
                        "status": judgment.status,
                        "error": judgment.error,
                        "decided_by": judgment.decided_by,
                        "changed": judgment.changed,
                        "plan_source": judgment.plan_source,
                        "baseline_plan_source": judgment.baseline_plan_source,
                        "decisive_section_read": judgment.decisive_section_read,
                    },
                }),
            );
        }
        let text = row.text.clone().unwrap_or_default();
        let messages = messages(row, variant);
        let message_count = messages.len();
        let mut sample = json!({
            "id": row.variant_id,
            "epoch": row.sample + 1,
            "input": variant.input,
            "target": variant.target,
            "messages": messages,
            "output": {
                "model": row.model,
                "choices": [{
                    "message": {"role": "assistant", "content": text, "source": "generate"},
                    "stop_reason": stop_reason(row.finish_reason.as_deref()),
                }],
                "completion": text,
                "usage": usage(row.input_tokens, row.output_tokens),
                "time": row.latency_ms as f64 / 1000.0,
            },
            "scores": scores,
            "metadata": {
                "case_id": row.case_id,
                "variant_id": row.variant_id,
                "intervention": row.intervention,
                "family": row.family,
                "mode": row.mode,
                "sample": row.sample,
                "status": row.status,
                "finish_reason": row.finish_reason,
                "prompt_set": row.prompt_set,
                "recommendation": row.recommendation,
                "cached": row.cached,
                "cost_usd": row.cost_usd,
                "sections_read": row.sections_read,
                "tool_errors": row.tool_errors,
                "dialogue": row.dialogue,
            },
            "model_usage": {row.subject.as_str(): usage(row.input_tokens, row.output_tokens)},
            "total_time": row.latency_ms as f64 / 1000.0,
            "working_time": row.latency_ms as f64 / 1000.0,
            "uuid": row.request_hash,
            "message_count": message_count,
        });
        if let Some(error) = &row.error
            && row.status != "ok"
        {
            sample["error"] = json!({
                "message": format!("{}: {error}", row.status),
                "traceback": "",
                "traceback_ansi": "",
            });
        }
        Ok(sample)
    }

    fn results(&self, counts: &BTreeMap<String, (u64, u64)>) -> Value {
        let total = self.rows.len();
        let completed = self.rows.iter().filter(|row| row.status == "ok").count();
        // Each score row under the scorer of its judge whose metric is the
        // longest prefix of the row's metric; the rest under the judge.
        let mut metrics: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
        for row in &self.scores {
            let scorer = counts
                .keys()
                .filter_map(|name| {
                    let (judge, metric) = name.rsplit_once('/')?;
                    (judge == row.judge && row.metric.starts_with(metric)).then_some((metric.len(), name))
                })
                .max()
                .map_or_else(|| row.judge.clone(), |(_, name)| name.clone());
            let name = if row.level == "overall" && row.group == "all" {
                row.metric.clone()
            } else {
                format!("{}[{}={}]", row.metric, row.level, row.group)
            };
            metrics.entry(scorer).or_default().insert(
                name.clone(),
                json!({
                    "name": name,
                    "value": if row.value.is_finite() { json!(row.value) } else { json!(0) },
                    "metadata": {
                        "value_is_finite": row.value.is_finite(),
                        "ci_low": row.ci_low,
                        "ci_high": row.ci_high,
                        "ci_method": row.ci_method,
                        "n_tuples": row.n_tuples,
                        "n_cases": row.n_cases,
                        "prompt_set": row.prompt_set,
                    },
                }),
            );
        }
        let mut scorers: BTreeSet<String> = counts.keys().cloned().collect();
        scorers.extend(metrics.keys().cloned());
        let scores: Vec<Value> = scorers
            .iter()
            .map(|scorer| {
                let (numeric, other) = counts.get(scorer).copied().unwrap_or_default();
                json!({
                    "name": scorer,
                    "scorer": scorer,
                    "scored_samples": numeric,
                    "unscored_samples": other,
                    "metrics": metrics.get(scorer).cloned().unwrap_or_default(),
                })
            })
            .collect();
        json!({"total_samples": total, "completed_samples": completed, "scores": scores})
    }
}

/// The conversation of a response, as Inspect messages.
fn messages(row: &ResponseRow, variant: &Variant) -> Vec<Value> {
    let mut messages = vec![json!({"role": "user", "content": variant.input, "source": "input"})];
    let text = row.text.clone().unwrap_or_default();
    if row.trace.is_empty() {
        messages.push(json!({"role": "assistant", "content": text, "model": row.model}));
        return messages;
    }
    let mut ended_with_text = false;
    for step in &row.trace {
        ended_with_text = false;
        match step {
            TraceStep {
                speaker: Some(speaker),
                text: Some(said),
                ..
            } => {
                let role = if speaker == "doctor" { "assistant" } else { "user" };
                messages.push(json!({"role": role, "content": format!("{speaker}: {said}")}));
                ended_with_text = role == "assistant" && Some(said) == row.text.as_ref();
            }
            TraceStep { tool: Some(tool), .. } => {
                let id = format!("call_{}", step.step);
                let arguments = step
                    .arguments
                    .as_deref()
                    .and_then(|text| serde_json::from_str::<Value>(text).ok())
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({"raw": step.arguments}));
                messages.push(json!({
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": id, "function": tool, "arguments": arguments, "type": "function"}],
                }));
                let served = step.section.as_deref().and_then(|name| {
                    variant
                        .sections
                        .iter()
                        .find(|section| section.name == name)
                        .map(|section| section.text.clone())
                });
                let content = match (&step.error, served) {
                    (Some(error), _) => format!("error: {error}"),
                    (None, Some(text)) => text,
                    (None, None) => step.text.clone().unwrap_or_default(),
                };
                messages
                    .push(json!({"role": "tool", "content": content, "tool_call_id": id, "function": tool}));
            }
            TraceStep { text: Some(said), .. } => {
                messages.push(json!({"role": "assistant", "content": said}));
                ended_with_text = Some(said) == row.text.as_ref();
            }
            _ => {}
        }
    }
    if !ended_with_text && !text.is_empty() {
        messages.push(json!({"role": "assistant", "content": text, "model": row.model}));
    }
    messages
}

/// The `EvalSampleSummary` of a sample: everything but the conversation.
fn summary_of(mut sample: Value) -> Value {
    let Some(fields) = sample.as_object_mut() else {
        return sample;
    };
    for heavy in ["messages", "output", "events", "uuid"] {
        fields.remove(heavy);
    }
    fields.insert("completed".into(), json!(true));
    if let Some(error) = fields
        .get("error")
        .and_then(|error| error.get("message"))
        .cloned()
    {
        fields.insert("error".into(), error);
    }
    sample
}

fn usage(input: u64, output: u64) -> Value {
    json!({"input_tokens": input, "output_tokens": output, "total_tokens": input + output})
}

/// cfeval's finish reason as one of Inspect's stop reasons.
fn stop_reason(finish_reason: Option<&str>) -> &'static str {
    match finish_reason {
        Some("stop") => "stop",
        Some("length") => "max_tokens",
        Some("tool_calls") => "tool_calls",
        Some("content_filter") => "content_filter",
        _ => "unknown",
    }
}

/// A name as a file-name part: letters, digits, `.`, `_` and `-` kept,
/// everything else `-`.
fn file_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A time as RFC 3339 in UTC, to the second (`2026-12-02T09:45:33+00:00`).
fn rfc3339(time: SystemTime) -> String {
    let seconds = time
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |duration| duration.as_secs());
    let days = i64::try_from(seconds / 86_400).unwrap_or(0);
    let rest = seconds % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}+00:00",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn rfc3339_matches_known_dates() {
        let at = |seconds: u64| rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(seconds));
        assert_eq!(at(0), "1970-01-01T00:00:00+00:00");
        // `date -u -d @951782400` (a leap day) and @1796204733.
        assert_eq!(at(951_782_400), "2000-02-29T00:00:00+00:00");
        assert_eq!(at(1_796_204_733), "2026-12-02T09:45:33+00:00");
        assert_eq!(at(4_107_542_399), "2100-02-28T23:59:59+00:00");
    }

    #[test]
    fn stop_reasons_map_onto_inspect_s() {
        assert_eq!(stop_reason(Some("length")), "max_tokens");
        assert_eq!(stop_reason(Some("stop")), "stop");
        assert_eq!(stop_reason(None), "unknown");
        assert_eq!(stop_reason(Some("something new")), "unknown");
    }

    #[test]
    fn file_names_keep_only_safe_characters() {
        assert_eq!(file_safe("openai/gpt-5+turns=10"), "openai-gpt-5-turns-10");
        assert_eq!(file_safe("single_shot"), "single_shot");
    }
}
