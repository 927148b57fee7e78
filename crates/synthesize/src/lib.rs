//! E-Synthesis: raw clinical cases to structured charts (table `cases`).
//!
//! - [`input`]: reads free text, JSON lines (a text field and/or per-field
//!   columns, with an optional reference: consensus items, facts,
//!   diagnosis, rules), AgentClinic OSCE JSON lines and CSV; detects the
//!   format; rejects bad inputs with a reason naming file and line.
//! - [`extract`]: ordered named sections and typed facts in the SPEC fact
//!   vocabulary, each with the exact byte span it came from; the
//!   [`extract::FactSource`] hook lets further sources (an LLM-assisted
//!   pass) add facts, which go through the same span verification.
//! - [`cohort`]: the seeded synthetic oncology tumor-board cohort, whose
//!   reference comes from the guideline rule table (`cfeval-guidelines`).
//!
//! [`run`] is the stage's entry: inputs in, `cases` and `cases_quarantine`
//! shards out, a [`Report`] back. A bad case never stops the others.

pub mod cohort;
pub mod error;
pub mod extract;
pub mod input;
mod rng;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cfeval_schema::{CaseRow, Provenance, QuarantineRow, Section, ShardStore, StoreOptions, Table, ids};
use serde::{Deserialize, Serialize};

pub use error::{Error, Result};
pub use extract::{FactSource, RuleExtractor};
pub use input::InputFormat;

/// The unit of work the stage records in the `cases` manifest.
pub const UNIT: &str = "synthesize";

/// Settings of one E-Synthesis run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// The run name stamped on every row.
    pub run: String,
    pub format: InputFormat,
    /// Cases larger than this are quarantined, not converted.
    pub max_case_bytes: usize,
    /// Rows per write batch.
    pub batch_rows: usize,
    /// Read symbolic links found inside input folders (by default they are
    /// skipped with a warning row).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub follow_symlinks: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            run: "run".to_string(),
            format: InputFormat::Auto,
            max_case_bytes: 1024 * 1024,
            batch_rows: 512,
            follow_symlinks: false,
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Cases written to `cases`.
    pub cases: u64,
    /// Inputs written to `cases_quarantine`.
    pub quarantined: u64,
    pub facts: u64,
    /// Facts dropped because their span did not verify (0 for the rules).
    pub span_failures: u64,
    /// Cases per source format.
    pub by_format: BTreeMap<String, u64>,
    /// Facts per kind.
    pub facts_by_kind: BTreeMap<String, u64>,
    /// Up to 20 quarantine reasons, `path:line: reason`.
    pub quarantine_reasons: Vec<String>,
    /// The run was already complete under the same fingerprint.
    pub skipped: bool,
}

/// Converts `inputs` (files or folders) into `run_dir/cases`.
pub fn run(config: &Config, inputs: &[PathBuf], run_dir: &Path) -> Result<Report> {
    run_with_sources(config, inputs, run_dir, &[])
}

/// [`run`] with extra fact sources after the rule-based one.
pub fn run_with_sources(
    config: &Config,
    inputs: &[PathBuf],
    run_dir: &Path,
    extra_sources: &[&dyn FactSource],
) -> Result<Report> {
    if config.batch_rows == 0 {
        return Err(Error::Config("batch_rows must be at least 1".into()));
    }
    if config.max_case_bytes == 0 {
        return Err(Error::Config("max_case_bytes must be at least 1".into()));
    }
    extract::lexicon::Lexicon::builtin()?;
    let expanded = input::expand(inputs, config.follow_symlinks, &[run_dir.to_path_buf()])?;
    let files = &expanded.files;
    let mut hashes = Vec::new();
    for file in files {
        let read_error = |source| Error::Read {
            path: file.path.clone(),
            source,
        };
        let hash =
            ids::hash_reader(fs_err::File::open(&file.path).map_err(read_error)?).map_err(read_error)?;
        hashes.push((file.path.display().to_string(), hash));
    }
    let sources: Vec<&str> = extra_sources.iter().map(|source| source.origin()).collect();
    let fingerprint = ids::fingerprint(&(config, &hashes, &sources, cfeval_schema::CFEVAL_VERSION));
    let shards = |source| Error::Shards {
        table: "cases".into(),
        source,
    };
    let mut store = ShardStore::open_table::<CaseRow>(run_dir).map_err(shards)?;
    let quarantine_shards = |source| Error::Shards {
        table: "cases_quarantine".into(),
        source,
    };
    let mut quarantine_store = ShardStore::open(
        &run_dir.join("cases_quarantine"),
        "cases_quarantine",
        QuarantineRow::schema(),
        StoreOptions::default(),
    )
    .map_err(quarantine_shards)?;
    if store.is_complete(UNIT, &fingerprint) && quarantine_store.is_complete(UNIT, &fingerprint) {
        tracing::info!(run_dir = %run_dir.display(), "cases already complete; skipping");
        return Ok(Report {
            skipped: true,
            cases: store.rows(),
            quarantined: quarantine_store.rows(),
            ..Report::default()
        });
    }
    store.retire_unit(UNIT).map_err(shards)?;
    quarantine_store.retire_unit(UNIT).map_err(quarantine_shards)?;
    let provenance = Provenance {
        run: config.run.clone(),
        unit: UNIT.to_string(),
        fingerprint: fingerprint.clone(),
        catalog_hash: None,
    };
    let mut writer = store.writer(provenance.clone());
    let mut quarantine_writer = quarantine_store.writer(provenance);
    let mut report = Report::default();
    let mut batch: Vec<CaseRow> = Vec::with_capacity(config.batch_rows);
    let mut quarantined: Vec<QuarantineRow> = Vec::new();
    // First pass: where each case is, so that every copy of a duplicate is
    // quarantined (not just the later ones).
    let mut duplicates = input::Duplicates::default();
    for file in files {
        read_source(file, config, &mut |item| {
            if let input::Item::Case(raw) = item {
                let text = source_text(&raw.body);
                duplicates.note(&raw, &ids::case_id(raw.source_format, &raw.source_id, &text));
            }
            Ok(())
        })?;
    }
    let mut quarantine = |rejected: input::Rejected,
                          report: &mut Report,
                          quarantined: &mut Vec<QuarantineRow>|
     -> Result<()> {
        report.quarantined += 1;
        if report.quarantine_reasons.len() < 20 {
            report.quarantine_reasons.push(match rejected.source_line {
                Some(line) => format!("{}:{line}: {}", rejected.source_path, rejected.reason),
                None => format!("{}: {}", rejected.source_path, rejected.reason),
            });
        }
        quarantined.push(QuarantineRow {
            run: config.run.clone(),
            stage: "synthesize".into(),
            source_path: rejected.source_path,
            source_line: rejected.source_line,
            source_id: rejected.source_id,
            reason: rejected.reason,
            excerpt: rejected.excerpt,
        });
        if quarantined.len() >= config.batch_rows {
            quarantine_writer
                .write_rows(quarantined)
                .map_err(quarantine_shards)?;
            quarantined.clear();
        }
        Ok(())
    };
    for rejected in expanded.skipped {
        quarantine(rejected, &mut report, &mut quarantined)?;
    }
    for file in files {
        read_source(file, config, &mut |item| {
            match item {
                input::Item::Rejected(rejected) => {
                    quarantine(rejected, &mut report, &mut quarantined)?;
                }
                input::Item::Case(raw) => {
                    let text = source_text(&raw.body);
                    let case_id = ids::case_id(raw.source_format, &raw.source_id, &text);
                    if let Some(rejected) = duplicates.check(&raw, &case_id, &text) {
                        return quarantine(rejected, &mut report, &mut quarantined);
                    }
                    let (row, failures) = synthesize_case(&raw, &config.run, extra_sources);
                    report.span_failures += failures.len() as u64;
                    for failure in failures {
                        tracing::warn!(case = %row.source_id, %failure, "fact dropped: span did not verify");
                    }
                    report.cases += 1;
                    report.facts += row.facts.len() as u64;
                    *report.by_format.entry(row.source_format.clone()).or_default() += 1;
                    for fact in &row.facts {
                        *report.facts_by_kind.entry(fact.kind.clone()).or_default() += 1;
                    }
                    batch.push(row);
                    if batch.len() >= config.batch_rows {
                        writer.write_rows(&batch).map_err(shards)?;
                        batch.clear();
                    }
                }
            }
            Ok(())
        })?;
    }
    writer.write_rows(&batch).map_err(shards)?;
    quarantine_writer
        .write_rows(&quarantined)
        .map_err(quarantine_shards)?;
    let entries = writer.finish().map_err(shards)?;
    let quarantine_entries = quarantine_writer.finish().map_err(quarantine_shards)?;
    quarantine_store
        .mark_complete(UNIT, &fingerprint, &quarantine_entries)
        .map_err(quarantine_shards)?;
    store
        .mark_complete(UNIT, &fingerprint, &entries)
        .map_err(shards)?;
    Ok(report)
}

/// Reads one input file; in a folder, a file whose format cannot be told is
/// skipped with a warning row instead of stopping the run.
fn read_source(
    file: &input::Source,
    config: &Config,
    sink: &mut dyn FnMut(input::Item) -> Result<()>,
) -> Result<()> {
    match input::read(&file.path, config.format, config.max_case_bytes, sink) {
        Err(Error::UnknownFormat { path, why }) if file.in_folder => {
            sink(input::Item::Rejected(input::Rejected {
                source_path: path.display().to_string(),
                source_line: None,
                source_id: None,
                reason: format!(
                    "skipped: cannot tell the format: {why} (pass --format, or `format` in [cases], to read every file in one format)"
                ),
                excerpt: None,
            }))
        }
        other => other,
    }
}

/// A case's source text (what [`chart`] builds, without the sections).
pub fn source_text(body: &input::Body) -> std::borrow::Cow<'_, str> {
    match body {
        input::Body::Text(text) => std::borrow::Cow::Borrowed(text),
        input::Body::Sections(_) => std::borrow::Cow::Owned(chart(body).0),
    }
}

/// Builds a case's source text and sections from its body.
pub fn chart(body: &input::Body) -> (String, Vec<Section>) {
    match body {
        input::Body::Text(text) => (text.clone(), extract::sections::split(text)),
        input::Body::Sections(named) => {
            let mut text = String::new();
            let mut sections = Vec::with_capacity(named.len());
            for (name, label, content) in named {
                let start = text.len();
                text.push_str(label);
                text.push_str(": ");
                text.push_str(content);
                let end = text.len();
                text.push('\n');
                sections.push(Section {
                    name: name.clone(),
                    text: text[start..end].to_string(),
                    span_start: Some(start as u64),
                    span_end: Some(end as u64),
                });
            }
            (text, sections)
        }
    }
}

/// Converts one raw case: sections, rule facts, extra sources' facts (each
/// span-verified; failures are dropped and returned).
pub fn synthesize_case(
    raw: &input::RawCase,
    run: &str,
    extra_sources: &[&dyn FactSource],
) -> (CaseRow, Vec<extract::SpanError>) {
    let (source_text, sections) = chart(&raw.body);
    let mut facts = extract::extract_facts(&source_text, &sections);
    let mut failures = Vec::new();
    for source in extra_sources {
        match source.facts(&source_text, &sections) {
            Ok(found) => {
                for mut fact in found {
                    fact.origin = source.origin().to_string();
                    match extract::verify_fact(&source_text, &fact) {
                        Ok(()) => {
                            fact.section = extract::sections::section_at(&sections, fact.span_start as usize)
                                .to_string();
                            facts.push(fact);
                        }
                        Err(error) => failures.push(error),
                    }
                }
            }
            Err(reason) => failures.push(extract::SpanError {
                kind: "source".into(),
                name: source.origin().to_string(),
                reason,
            }),
        }
    }
    // The rules' own spans are checked too: a failure is a bug, never kept.
    facts.retain(|fact| match extract::verify_fact(&source_text, fact) {
        Ok(()) => true,
        Err(error) => {
            failures.push(error);
            false
        }
    });
    let cancer_type = facts
        .iter()
        .find(|fact| fact.kind == "cancer_type")
        .map(|fact| fact.value.clone());
    let row = CaseRow {
        run: run.to_string(),
        case_id: ids::case_id(raw.source_format, &raw.source_id, &source_text),
        source_id: raw.source_id.clone(),
        source_format: raw.source_format.to_string(),
        source_path: raw.source_path.clone(),
        source_line: raw.source_line,
        source_text,
        cancer_type,
        sections,
        facts,
        reference: raw.reference.clone(),
        extra: raw.extra.clone(),
    };
    (row, failures)
}
