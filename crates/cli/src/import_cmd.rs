//! `cfeval import responses`: answers made elsewhere (another harness, an
//! agent framework, a provider's batch output) as ordinary `responses`
//! shards of a run, so that judge, aggregate and labels work on them.
//!
//! Every row is checked against the run's variants: it names a variant
//! (`variant_id`, or `case_id` + `intervention`), a subject (a column or
//! `--subject`) and the answer's `text`; optional `mode` (`single_shot`,
//! default, or `agent`), `sample` (0), `input_tokens`, `output_tokens`,
//! `latency_ms`, `finish_reason`, `error` (an answer that failed: an error
//! row). Inspect AI logs are read by [`crate::import_inspect`], one row per
//! sample. A row that does not fit — unknown
//! variant, a not-applicable one, a missing text or subject, a field of the
//! wrong type, a tuple given twice — is a `cases_quarantine` row (stage
//! `import`) with its file, line and reason; nothing is dropped silently.
//! Each (subject, mode) becomes one complete unit; a run that already has
//! that unit (from `infer` or an earlier import) is refused unless
//! `--replace`.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use cfeval_schema::{
    Provenance, QuarantineRow, ResponseRow, ResponseStatus, ShardStore, StoreOptions, Table, VariantRow, ids,
    normalize_finish_reason,
};
use serde::Serialize;
use serde_json::Value;

use crate::args::ImportResponsesArgs;

/// What the import did.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub rows: u64,
    pub imported: u64,
    pub quarantined: u64,
    /// Rows per unit (`subject=…/mode=…/slice=1-of-1`).
    pub units: BTreeMap<String, u64>,
    /// Up to 20 reasons, `file:line: reason`.
    pub quarantine_reasons: Vec<String>,
}

/// What the import knows of a variant.
struct Known {
    case_id: String,
    intervention: String,
    family: String,
    catalog_hash: String,
    applicable: bool,
}

/// A file's rows as read: a row, or a problem at a line (or sample).
pub(crate) type ReadRows = Vec<Result<Row, (u64, String)>>;

/// One row of the file, as read.
pub(crate) struct Row {
    /// The line (of a JSONL or CSV file), or the sample's position (of an
    /// Inspect log).
    pub line: u64,
    pub fields: serde_json::Map<String, Value>,
    /// Where in the file the row came from, when a line does not say it
    /// (an Inspect log's sample entry).
    pub origin: Option<String>,
}

fn text_field<'a>(row: &'a Row, name: &str) -> Result<Option<&'a str>, String> {
    match row.fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(format!("`{name}` is {other}, not text")),
    }
}

fn number_field(row: &Row, name: &str) -> Result<Option<u64>, String> {
    match row.fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(number)) => number
            .as_u64()
            .map(Some)
            .ok_or_else(|| format!("`{name}` is {number}, not a whole number ≥ 0")),
        // CSV cells are text.
        Some(Value::String(text)) if text.trim().is_empty() => Ok(None),
        Some(Value::String(text)) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| format!("`{name}` is `{text}`, not a whole number ≥ 0")),
        Some(other) => Err(format!("`{name}` is {other}, not a number")),
    }
}

/// Reads the file's rows (JSONL, or CSV with a header), each with its line;
/// a line that cannot be read is returned as a problem instead.
fn read_rows(path: &Path, subject_given: bool) -> anyhow::Result<ReadRows> {
    if let Some(rows) = crate::import_inspect::read_rows(path, subject_given)? {
        return Ok(rows);
    }
    let is_csv = path
        .extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("csv"));
    let mut rows = Vec::new();
    if is_csv {
        let mut reader = csv::ReaderBuilder::new()
            .flexible(false)
            .from_path(path)
            .with_context(|| format!("reading {}", path.display()))?;
        let header: Vec<String> = reader.headers()?.iter().map(str::to_string).collect();
        for record in reader.records() {
            match record {
                Ok(record) => {
                    let line = record.position().map_or(0, csv::Position::line);
                    let fields = header
                        .iter()
                        .zip(record.iter())
                        .map(|(name, value)| (name.clone(), Value::String(value.to_string())))
                        .collect();
                    rows.push(Ok(Row {
                        line,
                        fields,
                        origin: None,
                    }));
                }
                Err(error) => {
                    let line = error.position().map_or(0, csv::Position::line);
                    rows.push(Err((line, format!("not a CSV record: {error}"))));
                }
            }
        }
    } else {
        let text = fs_err::read_to_string(path)?;
        for (index, line) in text.lines().enumerate() {
            let number = index as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Value>(line) {
                Ok(Value::Object(fields)) => rows.push(Ok(Row {
                    line: number,
                    fields,
                    origin: None,
                })),
                Ok(_) => rows.push(Err((number, "not a JSON object".to_string()))),
                Err(error) => rows.push(Err((number, format!("not JSON: {error}")))),
            }
        }
    }
    Ok(rows)
}

/// Imports the file's responses into the run.
pub fn import_responses(args: &ImportResponsesArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let run = crate::infer_cmd::run_name(&args.run);
    let variants = ShardStore::open_table::<VariantRow>(&args.run)?;
    if variants.entries().is_empty() {
        anyhow::bail!(
            "run {} has no variants: run `cfeval perturb` first",
            args.run.display()
        );
    }
    #[derive(serde::Deserialize)]
    struct Variant {
        case_id: String,
        variant_id: String,
        intervention: String,
        family: String,
        catalog_hash: String,
        applicable: bool,
    }
    let mut known: HashMap<String, Known> = HashMap::new();
    let mut by_case: HashMap<(String, String), String> = HashMap::new();
    for batch in variants.read_columns::<Variant>(&[
        "case_id",
        "variant_id",
        "intervention",
        "family",
        "catalog_hash",
        "applicable",
    ])? {
        for variant in batch? {
            by_case.insert(
                (variant.case_id.clone(), variant.intervention.clone()),
                variant.variant_id.clone(),
            );
            known.insert(
                variant.variant_id,
                Known {
                    case_id: variant.case_id,
                    intervention: variant.intervention,
                    family: variant.family,
                    catalog_hash: variant.catalog_hash,
                    applicable: variant.applicable,
                },
            );
        }
    }
    let file_hash = ids::hash_reader(fs_err::File::open(&args.file)?)?;
    let source = args.file.display().to_string();
    let mut report = Report::default();
    let mut quarantined: Vec<QuarantineRow> = Vec::new();
    let mut quarantine = |report: &mut Report, line: u64, reason: String, excerpt: Option<String>| {
        report.quarantined += 1;
        if report.quarantine_reasons.len() < 20 {
            report
                .quarantine_reasons
                .push(format!("{source}:{line}: {reason}"));
        }
        quarantined.push(QuarantineRow {
            run: run.clone(),
            stage: "import".into(),
            source_path: source.clone(),
            source_line: Some(line),
            source_id: None,
            reason,
            excerpt,
        });
    };
    // (subject, mode) → rows, in file order; a tuple's first line.
    let mut units: BTreeMap<(String, String), Vec<ResponseRow>> = BTreeMap::new();
    let mut seen: HashMap<(String, String, String, u32), u64> = HashMap::new();
    for item in read_rows(&args.file, args.subject.is_some())? {
        report.rows += 1;
        let row = match item {
            Ok(row) => row,
            Err((line, reason)) => {
                quarantine(&mut report, line, reason, None);
                continue;
            }
        };
        match build_row(&row, args, &run, &known, &by_case, &file_hash) {
            Ok(response) => {
                let key = (
                    response.subject.clone(),
                    response.mode.clone(),
                    response.variant_id.clone(),
                    response.sample,
                );
                if let Some(first) = seen.get(&key) {
                    quarantine(
                        &mut report,
                        row.line,
                        format!(
                            "the tuple ({}, {}, {}, sample {}) was given on line {first} already",
                            key.0, key.1, key.2, key.3
                        ),
                        None,
                    );
                    continue;
                }
                seen.insert(key, row.line);
                units
                    .entry((response.subject.clone(), response.mode.clone()))
                    .or_default()
                    .push(response);
            }
            Err(reason) => {
                let reason = match &row.origin {
                    Some(origin) => format!("{origin}: {reason}"),
                    None => reason,
                };
                let excerpt = serde_json::to_string(&row.fields)
                    .ok()
                    .map(|text| text.chars().take(200).collect());
                quarantine(&mut report, row.line, reason, excerpt);
            }
        }
    }
    let mut responses = ShardStore::open_table::<ResponseRow>(&args.run)?;
    for (subject, mode) in units.keys() {
        let unit = cfeval_infer::unit(subject, parse_mode(mode)?, cfeval_infer::Slice::ALL);
        let taken =
            responses.unit(&unit).is_some() || responses.entries().iter().any(|entry| entry.unit == unit);
        if taken && !args.replace {
            anyhow::bail!(
                "run {} already has responses of {subject} ({mode}); pass --replace to replace them with the imported ones",
                args.run.display()
            );
        }
    }
    let catalog = variants.catalog_hash().map(str::to_string);
    for ((subject, mode), rows) in units {
        let unit = cfeval_infer::unit(&subject, parse_mode(&mode)?, cfeval_infer::Slice::ALL);
        responses.retire_unit(&unit)?;
        let fingerprint = ids::fingerprint(&("import", &file_hash, &subject, &mode));
        let mut writer = responses.writer(Provenance {
            run: run.clone(),
            unit: unit.clone(),
            fingerprint: fingerprint.clone(),
            catalog_hash: catalog.clone(),
        });
        writer.write_rows(&rows)?;
        let entries = writer.finish()?;
        responses.refresh()?;
        responses.mark_complete(&unit, &fingerprint, &entries)?;
        report.imported += rows.len() as u64;
        report.units.insert(unit, rows.len() as u64);
    }
    if !quarantined.is_empty() {
        let mut store = ShardStore::open(
            &args.run.join("cases_quarantine"),
            "cases_quarantine",
            QuarantineRow::schema(),
            StoreOptions::default(),
        )?;
        let unit = format!("import={}", &file_hash[..file_hash.len().min(16)]);
        store.retire_unit(&unit)?;
        let fingerprint = ids::fingerprint(&("import", &file_hash));
        let mut writer = store.writer(Provenance {
            run: run.clone(),
            unit: unit.clone(),
            fingerprint: fingerprint.clone(),
            catalog_hash: None,
        });
        writer.write_rows(&quarantined)?;
        let entries = writer.finish()?;
        store.refresh()?;
        store.mark_complete(&unit, &fingerprint, &entries)?;
    }
    for reason in &report.quarantine_reasons {
        tracing::warn!("quarantined: {reason}");
    }
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    Ok(())
}

fn parse_mode(mode: &str) -> anyhow::Result<cfeval_infer::Mode> {
    cfeval_infer::Mode::parse(mode).ok_or_else(|| anyhow::anyhow!("unknown mode `{mode}`"))
}

/// One imported row as a `responses` row, or why it cannot be one.
fn build_row(
    row: &Row,
    args: &ImportResponsesArgs,
    run: &str,
    known: &HashMap<String, Known>,
    by_case: &HashMap<(String, String), String>,
    file_hash: &str,
) -> Result<ResponseRow, String> {
    let subject = match (text_field(row, "subject")?, &args.subject) {
        (Some(subject), _) => subject.to_string(),
        (None, Some(subject)) => subject.clone(),
        (None, None) => return Err("no `subject` (a column, or --subject)".into()),
    };
    if cfeval_schema::vocab::SubjectKind::is_control(&subject) {
        return Err(format!(
            "`{subject}` is a control's name; imported answers need a model's"
        ));
    }
    let variant_id = match (
        text_field(row, "variant_id")?,
        text_field(row, "case_id")?,
        text_field(row, "intervention")?,
    ) {
        (Some(id), _, _) => id.to_string(),
        (None, Some(case), Some(intervention)) => by_case
            .get(&(case.to_string(), intervention.to_string()))
            .cloned()
            .ok_or_else(|| {
                format!("no variant of case `{case}` for intervention `{intervention}` in the run")
            })?,
        _ => return Err("no `variant_id`, nor `case_id` and `intervention`".into()),
    };
    let variant = known
        .get(&variant_id)
        .ok_or_else(|| format!("variant `{variant_id}` is not in the run's variants"))?;
    if !variant.applicable {
        return Err(format!(
            "variant `{variant_id}` is not applicable: there is nothing to answer"
        ));
    }
    let mode = text_field(row, "mode")?.unwrap_or("single_shot").to_string();
    parse_mode(&mode).map_err(|error| error.to_string())?;
    let sample = number_field(row, "sample")?.unwrap_or(0);
    let sample = u32::try_from(sample).map_err(|_| format!("`sample` {sample} is too large"))?;
    let text = text_field(row, "text")?;
    let finish_reason = text_field(row, "finish_reason")?.map(normalize_finish_reason);
    let failure = text_field(row, "error")?;
    let (status, error) = match (&text, finish_reason.as_deref()) {
        _ if failure.is_some() => (
            ResponseStatus::Error,
            failure.map(|failure| format!("the imported answer failed: {failure}")),
        ),
        (None, _) => (
            ResponseStatus::Empty,
            Some("the imported answer has no text".to_string()),
        ),
        (Some(_), Some("length")) => (
            ResponseStatus::Truncated,
            Some("the imported answer was cut off (finish_reason length)".to_string()),
        ),
        (Some(_), Some("content_filter")) => (
            ResponseStatus::Refused,
            Some("the imported answer was filtered (finish_reason content_filter)".to_string()),
        ),
        _ => (ResponseStatus::Ok, None),
    };
    let (provider, model) = subject.split_once('/').unwrap_or(("import", subject.as_str()));
    let text = text.map(str::to_string);
    Ok(ResponseRow {
        run: run.to_string(),
        subject: subject.clone(),
        is_control: false,
        mode,
        case_id: variant.case_id.clone(),
        variant_id: variant_id.clone(),
        sample,
        intervention: variant.intervention.clone(),
        family: variant.family.clone(),
        catalog_hash: variant.catalog_hash.clone(),
        backend: format!("import:{provider}"),
        model: model.to_string(),
        prompt_hash: format!("import:{}", &file_hash[..file_hash.len().min(16)]),
        prompt_set: "imported".into(),
        request_hash: ids::content_id("import", &[&subject, &variant_id, &sample.to_string()]),
        temperature: 0.0,
        seed: None,
        status: status.as_str().into(),
        error,
        recommendation: (status == ResponseStatus::Ok)
            .then(|| text.as_deref().map(cfeval_infer::extract_recommendation))
            .flatten(),
        text,
        finish_reason,
        attempts: 0,
        tries: 1,
        cached: false,
        input_tokens: number_field(row, "input_tokens")?.unwrap_or(0),
        output_tokens: number_field(row, "output_tokens")?.unwrap_or(0),
        cost_usd: 0.0,
        latency_ms: number_field(row, "latency_ms")?.unwrap_or(0),
        trace: Vec::new(),
        sections_read: Vec::new(),
        tool_errors: 0,
        dialogue: None,
        harness: None,
    })
}
