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
    /// Which extractor reads the cases: the rules (the default), a model
    /// ([`extract::llm`]), or both, merged.
    #[serde(default, skip_serializing_if = "ExtractorMode::is_rule")]
    pub extractor: ExtractorMode,
    /// Cases whose notes the model extractor reads at once.
    #[serde(skip)]
    pub llm_concurrency: usize,
    /// The pack the cases belong to (none: oncology, built in). A diagnosis
    /// pack's cases are read by its own chart reader
    /// ([`cfeval_diagnosis::findings`]) and get their decisive items.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pack: Option<PathBuf>,
    /// Convert only the first this many cases of the inputs, in input order
    /// (a small demo or a pilot of a large file); the rest are counted in
    /// [`Report::beyond_limit`], not read into `cases`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// What reads a diagnosis pack's cases: its chart lexicon and ontology.
pub struct DiagnosticReading {
    pub lexicon: cfeval_diagnosis::findings::Lexicon,
    pub ontology: cfeval_diagnosis::ontology::Ontology,
}

impl DiagnosticReading {
    /// The reading of `pack`, when its task is diagnosis.
    pub fn of(pack: &cfeval_schema::pack::Pack) -> Result<Option<Self>> {
        if pack.task != cfeval_schema::vocab::TaskKind::Diagnosis {
            return Ok(None);
        }
        let config = |error: cfeval_diagnosis::Error| Error::Config(error.to_string());
        Ok(Some(Self {
            lexicon: cfeval_diagnosis::findings::Lexicon::load(&pack.dir).map_err(config)?,
            ontology: cfeval_diagnosis::ontology::Ontology::load(&pack.dir).map_err(config)?,
        }))
    }
}

/// Which extractor reads the cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExtractorMode {
    /// The rule extractor alone.
    #[default]
    Rule,
    /// The model extractor alone: only facts whose quote verifies are kept.
    Llm,
    /// Both: where they state the same fact with different values, the
    /// rule's value is kept and the disagreement recorded on the case
    /// (`extra`, key `extractor_disagreement`); a fact only the model states
    /// is added.
    Both,
}

impl ExtractorMode {
    fn is_rule(&self) -> bool {
        *self == ExtractorMode::Rule
    }

    /// `rule`, `llm` or `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExtractorMode::Rule => "rule",
            ExtractorMode::Llm => "llm",
            ExtractorMode::Both => "both",
        }
    }

    /// Parses `rule`, `llm` or `both`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "rule" => Some(ExtractorMode::Rule),
            "llm" => Some(ExtractorMode::Llm),
            "both" => Some(ExtractorMode::Both),
            _ => None,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            run: "run".to_string(),
            format: InputFormat::Auto,
            max_case_bytes: 1024 * 1024,
            batch_rows: 512,
            follow_symlinks: false,
            extractor: ExtractorMode::Rule,
            llm_concurrency: 8,
            pack: None,
            limit: None,
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
    /// Cases left out by [`Config::limit`] (read, not converted).
    pub beyond_limit: u64,
    pub facts: u64,
    /// Facts dropped because their span did not verify (0 for the rules).
    pub span_failures: u64,
    /// Model extractor claims refused (quote not in the note, or not in the
    /// vocabulary); each is a `cases_quarantine` row.
    pub unverified_facts: u64,
    /// Model claims whose quote verified and that are in the vocabulary
    /// (with `both`, those the rules also state count here too).
    pub llm_verified: u64,
    /// Model facts kept: with `llm` every verified one, with `both` those
    /// the rules do not state.
    pub llm_facts: u64,
    /// Cases whose model extraction failed (the call, or an invalid answer
    /// after one repair); each is a `cases_quarantine` row, and the case
    /// keeps its rule facts (`both`) or has none (`llm`).
    pub llm_errors: u64,
    /// `both`: facts the two extractors gave different values.
    pub disagreements: u64,
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
    run_with(config, inputs, run_dir, extra_sources, None)
}

/// [`run`] with a model extractor (needed when `config.extractor` is `llm`
/// or `both`).
pub fn run_with_extractor(
    config: &Config,
    inputs: &[PathBuf],
    run_dir: &Path,
    llm: Option<&extract::llm::LlmExtractor>,
) -> Result<Report> {
    run_with(config, inputs, run_dir, &[], llm)
}

fn run_with(
    config: &Config,
    inputs: &[PathBuf],
    run_dir: &Path,
    extra_sources: &[&dyn FactSource],
    llm: Option<&extract::llm::LlmExtractor>,
) -> Result<Report> {
    let llm = match (config.extractor, llm) {
        (ExtractorMode::Rule, _) => None,
        (_, Some(llm)) => Some(llm),
        (mode, None) => {
            return Err(Error::Config(format!(
                "extractor `{}` needs a model (--extractor-model, or `extractor-model` in [cases])",
                mode.as_str()
            )));
        }
    };
    if config.batch_rows == 0 {
        return Err(Error::Config("batch_rows must be at least 1".into()));
    }
    if config.max_case_bytes == 0 {
        return Err(Error::Config("max_case_bytes must be at least 1".into()));
    }
    extract::lexicon::Lexicon::builtin()?;
    let pack = match &config.pack {
        Some(dir) => Some(cfeval_schema::pack::Pack::load(dir).map_err(Error::Config)?),
        None => None,
    };
    let diagnostic = match &pack {
        Some(pack) => {
            pack.record(run_dir).map_err(Error::Config)?;
            DiagnosticReading::of(pack)?
        }
        None => None,
    };
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
    let mut sources: Vec<String> = extra_sources
        .iter()
        .map(|source| source.origin().to_string())
        .collect();
    if let Some(llm) = llm {
        sources.push(llm.fingerprint());
    }
    if let Some(pack) = &pack {
        sources.push(format!("pack {} {}", pack.name, pack.hash()));
    }
    let fingerprint = ids::fingerprint(&(
        config,
        &hashes,
        &sources,
        cfeval_schema::CFEVAL_VERSION,
        extraction_data_hash(),
    ));
    let shards = shards_error("cases");
    let mut store = ShardStore::open_table::<CaseRow>(run_dir).map_err(shards)?;
    let quarantine_shards = shards_error("cases_quarantine");
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
    let mut sink = Sink {
        config,
        extra_sources,
        llm,
        diagnostic: diagnostic.as_ref(),
        runtime: match llm {
            Some(_) => Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .map_err(|source| Error::Read {
                        path: run_dir.to_path_buf(),
                        source,
                    })?,
            ),
            None => None,
        },
        writer: store.writer(provenance.clone()),
        quarantine_writer: quarantine_store.writer(provenance),
        report: Report::default(),
        batch: Vec::with_capacity(config.batch_rows),
        quarantined: Vec::new(),
        duplicates: input::Duplicates::default(),
    };
    // First pass: where each case is, so that every copy of a duplicate is
    // quarantined (not just the later ones).
    for file in files {
        read_source(file, config, &mut |item| {
            if let input::Item::Case(raw) = item {
                let text = source_text(&raw.body);
                sink.duplicates
                    .note(&raw, &ids::case_id(raw.source_format, &raw.source_id, &text));
            }
            Ok(())
        })?;
    }
    for rejected in expanded.skipped {
        sink.quarantine(rejected)?;
    }
    // Cases are converted in chunks (a model extractor reads a chunk's
    // notes concurrently); rejected inputs are recorded as they come.
    let chunk = config.batch_rows.max(1);
    let mut pending: Vec<input::RawCase> = Vec::new();
    let mut read = 0usize;
    let mut beyond_limit = 0u64;
    for file in files {
        read_source(file, config, &mut |item| {
            match item {
                input::Item::Rejected(rejected) => sink.quarantine(rejected)?,
                input::Item::Case(_) if config.limit.is_some_and(|limit| read >= limit) => {
                    beyond_limit += 1;
                }
                input::Item::Case(raw) => {
                    read += 1;
                    pending.push(raw);
                    if pending.len() >= chunk {
                        sink.convert(std::mem::take(&mut pending))?;
                    }
                }
            }
            Ok(())
        })?;
    }
    sink.convert(pending)?;
    sink.report.beyond_limit = beyond_limit;
    let Sink {
        writer,
        mut quarantine_writer,
        report,
        batch,
        quarantined,
        ..
    } = sink;
    let mut writer = writer;
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

fn shards_error(table: &str) -> impl Fn(cfeval_schema::Error) -> Error + Copy + '_ {
    move |source| Error::Shards {
        table: table.to_string(),
        source,
    }
}

/// Writes `rows` out (and empties it) once it holds `limit` rows.
fn write_if_full<T: Table>(
    writer: &mut cfeval_schema::ShardWriter,
    rows: &mut Vec<T>,
    limit: usize,
    table: &str,
) -> Result<()> {
    if rows.len() >= limit {
        writer.write_rows(rows).map_err(shards_error(table))?;
        rows.clear();
    }
    Ok(())
}

/// Where converted cases and quarantined inputs go.
struct Sink<'a> {
    config: &'a Config,
    extra_sources: &'a [&'a dyn FactSource],
    llm: Option<&'a extract::llm::LlmExtractor>,
    diagnostic: Option<&'a DiagnosticReading>,
    runtime: Option<tokio::runtime::Runtime>,
    writer: cfeval_schema::ShardWriter,
    quarantine_writer: cfeval_schema::ShardWriter,
    report: Report,
    batch: Vec<CaseRow>,
    quarantined: Vec<QuarantineRow>,
    duplicates: input::Duplicates,
}

impl Sink<'_> {
    /// An input left out: counted, named in the report, listed.
    fn quarantine(&mut self, rejected: input::Rejected) -> Result<()> {
        let report = &mut self.report;
        report.quarantined += 1;
        if report.quarantine_reasons.len() < 20 {
            report.quarantine_reasons.push(match rejected.source_line {
                Some(line) => format!("{}:{line}: {}", rejected.source_path, rejected.reason),
                None => format!("{}: {}", rejected.source_path, rejected.reason),
            });
        }
        self.list(rejected)
    }

    /// A row of `cases_quarantine` (for a model fact not kept, the case
    /// itself is converted: only the row, no input counted).
    fn list(&mut self, rejected: input::Rejected) -> Result<()> {
        self.quarantined.push(QuarantineRow {
            run: self.config.run.clone(),
            stage: "synthesize".into(),
            source_path: rejected.source_path,
            source_line: rejected.source_line,
            source_id: rejected.source_id,
            reason: rejected.reason,
            excerpt: rejected.excerpt,
        });
        write_if_full(
            &mut self.quarantine_writer,
            &mut self.quarantined,
            self.config.batch_rows,
            "cases_quarantine",
        )
    }

    /// Converts a chunk of cases (their notes read by the model extractor
    /// first, concurrently, when there is one).
    fn convert(&mut self, cases: Vec<input::RawCase>) -> Result<()> {
        let mut kept = Vec::with_capacity(cases.len());
        for raw in cases {
            let text = source_text(&raw.body);
            let case_id = ids::case_id(raw.source_format, &raw.source_id, &text);
            match self.duplicates.check(&raw, &case_id, &text) {
                Some(rejected) => self.quarantine(rejected)?,
                None if self.diagnostic.is_some() && raw.reference.diagnosis.is_none() => {
                    self.quarantine(input::Rejected {
                        source_path: raw.source_path.clone(),
                        source_line: raw.source_line,
                        source_id: Some(raw.source_id.clone()),
                        reason: "a diagnosis pack's case needs its reference diagnosis (`Correct_Diagnosis`), and this one has none".into(),
                        excerpt: None,
                    })?
                }
                None => kept.push(raw),
            }
        }
        if let Some(reading) = self.diagnostic {
            for raw in kept {
                match synthesize_diagnostic_case(&raw, &self.config.run, reading) {
                    Ok(converted) => self.record(&raw, converted)?,
                    Err(reason) => self.quarantine(input::Rejected {
                        source_path: raw.source_path.clone(),
                        source_line: raw.source_line,
                        source_id: Some(raw.source_id.clone()),
                        reason,
                        excerpt: None,
                    })?,
                }
            }
            return Ok(());
        }
        let claims = match (self.llm, &self.runtime) {
            (Some(llm), Some(runtime)) => {
                let notes: Vec<String> = kept
                    .iter()
                    .map(|raw| source_text(&raw.body).into_owned())
                    .collect();
                Some(read_notes(llm, runtime, &notes, self.config.llm_concurrency))
            }
            _ => None,
        };
        let mut claims = claims.map(Vec::into_iter);
        for raw in kept {
            let model = claims.as_mut().and_then(Iterator::next);
            let converted = synthesize_case_with(
                &raw,
                &self.config.run,
                self.extra_sources,
                self.config.extractor,
                model,
            );
            self.record(&raw, converted)?;
        }
        Ok(())
    }

    fn record(&mut self, raw: &input::RawCase, converted: Converted) -> Result<()> {
        let Converted {
            row,
            failures,
            refused,
            llm_error,
            llm_verified,
            llm_facts,
            disagreements,
        } = converted;
        self.report.span_failures += failures.len() as u64;
        for failure in failures {
            tracing::warn!(case = %row.source_id, %failure, "fact dropped: span did not verify");
        }
        self.report.llm_verified += llm_verified;
        self.report.llm_facts += llm_facts;
        self.report.disagreements += disagreements;
        let place = |reason: String, excerpt: Option<String>| input::Rejected {
            source_path: raw.source_path.clone(),
            source_line: raw.source_line,
            source_id: Some(raw.source_id.clone()),
            reason,
            excerpt,
        };
        if let Some(error) = llm_error {
            self.report.llm_errors += 1;
            self.list(place(
                format!("model extraction failed, no model facts kept: {error}"),
                None,
            ))?;
        }
        for refusal in refused {
            self.report.unverified_facts += 1;
            let claim = &refusal.claim;
            self.list(place(
                format!(
                    "model fact not kept ({} {} = {}): {}",
                    claim.kind, claim.name, claim.value, refusal.reason
                ),
                Some(claim.quote.chars().take(200).collect()),
            ))?;
        }
        let report = &mut self.report;
        report.cases += 1;
        report.facts += row.facts.len() as u64;
        *report.by_format.entry(row.source_format.clone()).or_default() += 1;
        for fact in &row.facts {
            *report.facts_by_kind.entry(fact.kind.clone()).or_default() += 1;
        }
        self.batch.push(row);
        write_if_full(&mut self.writer, &mut self.batch, self.config.batch_rows, "cases")
    }
}

/// The model extractor's claims for each note, read `concurrency` at a time
/// (in note order).
fn read_notes(
    llm: &extract::llm::LlmExtractor,
    runtime: &tokio::runtime::Runtime,
    notes: &[String],
    concurrency: usize,
) -> Vec<std::result::Result<Vec<extract::llm::Claim>, String>> {
    runtime.block_on(async {
        let semaphore = tokio::sync::Semaphore::new(concurrency.max(1));
        let calls = notes.iter().map(|note| {
            let semaphore = &semaphore;
            async move {
                let _permit = semaphore.acquire().await.map_err(|error| error.to_string())?;
                llm.claims(note).await
            }
        });
        cfeval_model::join_all(calls).await
    })
}

/// A hash of the data the extraction reads (the extractor's word lists, the
/// drug ontology, the AJCC tables, the guideline table the cohort's
/// references come from, the pack vocabulary): part of the stage's
/// fingerprint, so that a run made before any of them changed is converted
/// again rather than kept with the old facts.
fn extraction_data_hash() -> String {
    ids::content_id(
        "extraction-data",
        &[
            extract::lexicon::BUILTIN_EXTRACT_YAML,
            extract::lexicon::BUILTIN_ONTOLOGY_YAML,
            cfeval_guidelines::staging::BUILTIN_AJCC8_YAML,
            cfeval_guidelines::BUILTIN_ONCOLOGY_YAML,
            cfeval_schema::pack::oncology::VOCABULARY,
        ],
    )
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
    let converted = synthesize_case_with(raw, run, extra_sources, ExtractorMode::Rule, None);
    (converted.row, converted.failures)
}

/// One converted case and what its extraction left out.
pub struct Converted {
    pub row: CaseRow,
    /// Facts whose span did not verify (dropped).
    pub failures: Vec<extract::SpanError>,
    /// Model claims not kept, and why.
    pub refused: Vec<extract::llm::Refused>,
    /// Why the model extraction of this case failed, if it did.
    pub llm_error: Option<String>,
    /// Model claims verified (quote found, in the vocabulary).
    pub llm_verified: u64,
    /// Model facts kept.
    pub llm_facts: u64,
    /// `both`: facts the extractors gave different values.
    pub disagreements: u64,
}

/// Converts one case of a diagnosis pack: the chart read by the pack's
/// chart reader (every span verified), and the decisive items the
/// documented rule chooses added to the reference (the rule that decided is
/// recorded in `extra`, key `decisive_rule`), with the case's reference
/// evidence ([`cfeval_diagnosis::evidence`]: the input's curated spans,
/// located in the text, or the rule's). A curated span that is not an exact
/// substring of the case's text is the error (the case is quarantined).
pub fn synthesize_diagnostic_case(
    raw: &input::RawCase,
    run: &str,
    reading: &DiagnosticReading,
) -> std::result::Result<Converted, String> {
    use cfeval_diagnosis::evidence;
    let (source_text, sections) = chart(&raw.body);
    let mut facts = cfeval_diagnosis::findings::read(&reading.lexicon, &source_text, &sections);
    let failures = keep_verified(&source_text, &mut facts);
    let mut reference = raw.reference.clone();
    let mut extra = raw.extra.clone();
    // Curated evidence arrives as bare spans; each is located in the text.
    let (curated, others): (Vec<_>, Vec<_>) = std::mem::take(&mut reference.facts)
        .into_iter()
        .partition(|fact| fact.kind == evidence::KIND);
    reference.facts = others;
    for (index, span) in curated.iter().enumerate() {
        let located = evidence::curated(&source_text, &sections, &span.span_text)
            .map_err(|why| format!("reference evidence {}: {why}", index + 1))?;
        reference.facts.push(located);
    }
    if let Some(diagnosis) = &reference.diagnosis {
        let (decisive, rule) =
            cfeval_diagnosis::findings::decisive(&reading.lexicon, &reading.ontology, &facts, diagnosis);
        if curated.is_empty() {
            let derived = evidence::derive(&reading.lexicon, &reading.ontology, &facts, diagnosis, &decisive);
            reference.facts.extend(derived);
        }
        reference.facts.extend(decisive);
        let said = match rule {
            "none" => {
                "none: no test result names the diagnosis or holds one of its confirming phrases (ontology), and neither one study result alone, nor one definitive study (biopsy, culture…) alone, reads abnormal"
            }
            "several_definitive_studies" => {
                "none: a result names or confirms the diagnosis, but several definitive studies (biopsy, culture…) read abnormal, so no one result decides"
            }
            "reference_not_in_ontology" => {
                "none: the diagnosis is not in the pack's ontology, no test result names it, and neither one study result alone, nor one definitive study alone, reads abnormal"
            }
            chosen => chosen,
        };
        extra.push(cfeval_schema::KeyValue {
            key: "decisive_rule".into(),
            value: serde_json::Value::String(said.to_string()).to_string(),
        });
    }
    let row = case_row(raw, run, source_text, sections, facts, reference, extra);
    Ok(Converted {
        row,
        failures,
        refused: Vec::new(),
        llm_error: None,
        llm_verified: 0,
        llm_facts: 0,
        disagreements: 0,
    })
}

/// Keeps the facts whose span verifies against the source; the others'
/// failures.
fn keep_verified(source_text: &str, facts: &mut Vec<cfeval_schema::Fact>) -> Vec<extract::SpanError> {
    let mut failures = Vec::new();
    facts.retain(|fact| match extract::verify_fact(source_text, fact) {
        Ok(()) => true,
        Err(error) => {
            failures.push(error);
            false
        }
    });
    failures
}

/// A case's row; its cancer type is the facts' (oncology), if any.
fn case_row(
    raw: &input::RawCase,
    run: &str,
    source_text: String,
    sections: Vec<Section>,
    facts: Vec<cfeval_schema::Fact>,
    reference: cfeval_schema::Reference,
    extra: Vec<cfeval_schema::KeyValue>,
) -> CaseRow {
    let cancer_type = facts
        .iter()
        .find(|fact| fact.kind == "cancer_type")
        .map(|fact| fact.value.clone());
    CaseRow {
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
        reference,
        extra,
    }
}

fn fact_key(fact: &cfeval_schema::Fact) -> (String, String) {
    (fact.kind.clone(), fact.name.to_lowercase())
}

/// Converts one raw case with the extractor `mode`: `model` is the model
/// extractor's answer for the case's note (`llm` and `both`).
pub fn synthesize_case_with(
    raw: &input::RawCase,
    run: &str,
    extra_sources: &[&dyn FactSource],
    mode: ExtractorMode,
    model: Option<std::result::Result<Vec<extract::llm::Claim>, String>>,
) -> Converted {
    let (source_text, sections) = chart(&raw.body);
    let mut facts = match mode {
        ExtractorMode::Llm => Vec::new(),
        ExtractorMode::Rule | ExtractorMode::Both => extract::extract_facts(&source_text, &sections),
    };
    let mut extra = raw.extra.clone();
    let (mut refused, mut llm_error) = (Vec::new(), None);
    let (mut llm_verified, mut llm_facts, mut disagreements) = (0, 0, 0);
    match (mode, model) {
        (ExtractorMode::Rule, _) => {}
        (_, None) => llm_error = Some("the model extractor gave no answer for this case".to_string()),
        (_, Some(Err(error))) => llm_error = Some(error),
        (_, Some(Ok(claims))) => {
            let vocabulary = extract::llm::Vocabulary::builtin();
            let (model_facts, not_kept) = extract::llm::facts_from_claims(&source_text, claims, &vocabulary);
            refused = not_kept;
            llm_verified = model_facts.len() as u64;
            let mut seen: std::collections::HashSet<(String, String)> = std::collections::HashSet::new();
            for mut fact in model_facts {
                let key = fact_key(&fact);
                // One model fact per key: its first statement.
                if !seen.insert(key.clone()) {
                    continue;
                }
                fact.section = extract::sections::section_at(&sections, fact.span_start as usize).to_string();
                match facts.iter().find(|rule| fact_key(rule) == key) {
                    Some(rule) if rule.value == fact.value => {}
                    Some(rule) => {
                        disagreements += 1;
                        extra.push(cfeval_schema::KeyValue {
                            key: "extractor_disagreement".into(),
                            value: format!(
                                "{} {}: rule `{}` ({:?}), llm `{}` ({:?})",
                                key.0, rule.name, rule.value, rule.span_text, fact.value, fact.span_text
                            ),
                        });
                    }
                    None => {
                        llm_facts += 1;
                        facts.push(fact);
                    }
                }
            }
        }
    }
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
    failures.extend(keep_verified(&source_text, &mut facts));
    let row = case_row(
        raw,
        run,
        source_text,
        sections,
        facts,
        raw.reference.clone(),
        extra,
    );
    Converted {
        row,
        failures,
        refused,
        llm_error,
        llm_verified,
        llm_facts,
        disagreements,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn reading() -> DiagnosticReading {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/general-medicine");
        DiagnosticReading {
            lexicon: cfeval_diagnosis::findings::Lexicon::load(&dir).unwrap(),
            ontology: cfeval_diagnosis::ontology::Ontology::load(&dir).unwrap(),
        }
    }

    fn osce(evidence: &str) -> input::RawCase {
        let line = format!(
            r#"{{"OSCE_Examination":{{"Patient_Actor":{{"Demographics":"30-year-old woman","Symptoms":{{"Primary_Symptom":"cough"}}}},"Test_Results":{{"Imaging":{{"Chest_X-Ray":"Upper lobe cavity"}},"Sputum":{{"Acid_Fast_Stain":"Positive for acid-fast bacilli"}}}}{evidence},"Correct_Diagnosis":"Tuberculosis"}}}}"#
        );
        input::agentclinic::case_from_line(&line, Path::new("cases.jsonl"), 4).unwrap()
    }

    fn evidence(row: &CaseRow) -> Vec<(&str, &str)> {
        row.reference
            .facts
            .iter()
            .filter(|fact| fact.kind == cfeval_diagnosis::evidence::KIND)
            .map(|fact| (fact.span_text.as_str(), fact.detail.as_deref().unwrap_or("")))
            .collect()
    }

    #[test]
    fn curated_evidence_replaces_the_rule_and_is_located_in_the_text() {
        let reading = reading();
        let ruled = synthesize_diagnostic_case(&osce(""), "r", &reading).unwrap().row;
        assert!(!evidence(&ruled).is_empty(), "the rule finds evidence");
        let curated = synthesize_diagnostic_case(
            &osce(r#","Reference_Evidence":["Upper lobe cavity"]"#),
            "r",
            &reading,
        )
        .unwrap()
        .row;
        assert_eq!(evidence(&curated), [("Upper lobe cavity", "curated")]);
        let fact = &curated.reference.facts[0];
        assert_eq!(
            &curated.source_text[fact.span_start as usize..fact.span_end as usize],
            "Upper lobe cavity"
        );
        assert_eq!(fact.section, "imaging");
    }

    #[test]
    fn a_curated_span_the_text_lacks_is_the_cases_error() {
        let error = synthesize_diagnostic_case(
            &osce(r#","Evidence":["cavity", "lower lobe mass"]"#),
            "r",
            &reading(),
        )
        .err()
        .unwrap_or_default();
        assert!(
            error.starts_with(
                "reference evidence 2: the evidence span `lower lobe mass` is not an exact substring"
            ),
            "{error}"
        );
    }
}
