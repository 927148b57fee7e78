//! The run report: `report.html` and `report.md` from a run's `scores` table.
//!
//! [`write()`] reads the run's scores (percentile-interval rows), and for
//! provenance the judges' prompt hashes (`judgments`) and the subjects'
//! settings (`responses`), and writes two files into the run folder, each
//! atomically (temp file, fsync, rename):
//!
//! - `report.html`: one self-contained page (inline CSS and SVG; no scripts,
//!   fonts or any other network resource). Per mode: a rank slope chart
//!   CMS → CSS, a family × subject CSS heatmap with the spurious-shift rate
//!   on family N beside it, a forest plot of CSS intervals (overall and per
//!   family), CSS against the spurious-shift rate (responsive and stable is
//!   the top-left corner), Spearman ρ, the rank-swap table with the
//!   probabilities of a rank swap and of ranking first (from the paired
//!   resamples) and the pairwise swap probabilities, tuple-weighted and
//!   family-balanced CSS, and the pairs left out (judge uncertain, answer
//!   truncated or refused) per family; then the blind spots (with how many
//!   judges agree), agreement (cross-judge ρ, Cohen's κ, humans against
//!   judges), agent − single-shot deltas and provenance. Controls are marked
//!   as controls wherever a subject is listed, and take no part in ranks or
//!   blind spots.
//! - `report.md`: the same tables as Markdown pipe tables, the blind spots
//!   and the provenance.
//!
//! Plots are drawn with plotters' SVG backend ([`plots`]); every plot is an
//! `<svg class="plot plot-KIND" id="KIND-MODE">` whose marks (one per subject
//! line, heatmap cell, interval or point) are `<g class="mark">` elements with
//! a hover tooltip. Page layout lives in minijinja templates under
//! `templates/`. Missing data (no agent mode, one subject, no family N, no
//! judgments, no scores at all) shows as a "Not available" note with its
//! reason. The same run gives byte-identical files: nothing in them depends
//! on the clock.
//!
//! [`comparison`] writes the report of `cfeval compare` (`comparison.md`,
//! `comparison.html` with a forest plot of the differences B − A).

pub mod comparison;
pub mod error;
pub mod plots;

mod data;
mod render;
mod view;

use std::path::{Path, PathBuf};

use serde::Serialize;

pub use error::{Error, Result};

/// File name of the HTML report inside a run folder.
pub const HTML_FILE: &str = "report.html";
/// File name of the Markdown report inside a run folder.
pub const MARKDOWN_FILE: &str = "report.md";

/// Where [`write()`] put the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReportPaths {
    /// `RUN/report.html`.
    pub html: PathBuf,
    /// `RUN/report.md`.
    pub markdown: PathBuf,
}

/// What the report can say beyond the run's tables.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The aggregate stage's settings, when the caller knows them (the
    /// scores table records only their fingerprint).
    pub aggregate: Option<AggregateSettings>,
}

/// The aggregate settings the report shows in its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateSettings {
    pub resamples: usize,
    pub seed: u64,
    /// Confidence level of the intervals (0.95).
    pub level: f64,
    /// A family is a blind spot when every subject under test's upper
    /// interval bound of its CSS is below this.
    pub blind_spot_threshold: f64,
    /// What a bootstrap replicate resamples.
    pub resampling: cfeval_aggregate::stats::Resampling,
}

impl From<&cfeval_aggregate::Config> for AggregateSettings {
    fn from(config: &cfeval_aggregate::Config) -> Self {
        Self {
            resamples: config.resamples,
            seed: config.seed,
            level: config.level,
            blind_spot_threshold: config.blind_spot_threshold,
            resampling: config.resampling,
        }
    }
}

impl From<&cfeval_aggregate::Config> for Settings {
    fn from(config: &cfeval_aggregate::Config) -> Self {
        Self {
            aggregate: Some(config.into()),
        }
    }
}

/// The report's two documents, rendered but not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub html: String,
    pub markdown: String,
}

/// Writes `report.html` and `report.md` for the run in `run_dir` (which
/// must exist) and returns their paths.
pub fn write(run_dir: &Path) -> Result<ReportPaths> {
    write_with(run_dir, &Settings::default())
}

/// [`write()`], with settings the run's tables do not record (after an
/// aggregate: `write_with(run_dir, &Settings::from(&config))`).
#[tracing::instrument(skip_all, fields(stage = "report"))]
pub fn write_with(run_dir: &Path, settings: &Settings) -> Result<ReportPaths> {
    let rendered = render(run_dir, settings)?;
    let paths = ReportPaths {
        html: run_dir.join(HTML_FILE),
        markdown: run_dir.join(MARKDOWN_FILE),
    };
    write_atomic(&paths.html, rendered.html.as_bytes())?;
    write_atomic(&paths.markdown, rendered.markdown.as_bytes())?;
    tracing::info!(html = %paths.html.display(), markdown = %paths.markdown.display(), "report written");
    Ok(paths)
}

/// Renders the report of the run in `run_dir` without writing it.
pub fn render(run_dir: &Path, settings: &Settings) -> Result<Rendered> {
    let data = data::read(run_dir)?;
    let page = view::page(&data, settings)?;
    render::render(&page)
}

/// Writes `bytes` to `path` atomically (see [`cfeval_schema::write_atomic`]).
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    cfeval_schema::write_atomic(path, bytes).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Escapes text for HTML and SVG, in text and in attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}
