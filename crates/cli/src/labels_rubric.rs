//! `cfeval labels rubric-sample|rubric-import`: human rubric scores as a
//! workflow, so that a rubric judge is measured against raters before its
//! numbers are trusted (seed 002).
//!
//! `rubric-sample` draws the same number of responses per family (the
//! baseline a family of its own), seeded, from the subjects under test, and
//! writes them *blinded* — an opaque item id, the chart and the answer,
//! never the subject or mode — with a scoring sheet: one row per item and
//! applicable sub-dimension, its anchors at 1, 3 and 5 and the N/A rules a
//! rater may apply (the ones cfeval decides from the case are left off, as
//! they are for the judge). The key (`rubric-key.csv`) stays with whoever
//! runs the study.
//!
//! `rubric-import` checks the raters' filled sheets (CSV or JSONL:
//! `item_id`, `metric`, `score` 1–5 or `na`, optional `rater`, defaulting
//! to the file's name) against the key — every problem named by file and
//! row, nothing written while one remains — and writes the CSV
//! `cfeval aggregate --rubric-labels` reads.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;

use anyhow::{Context, bail};
use cfeval_judge::rubric::Rubric;
use cfeval_judge::rubric::pack::CaseContext;
use cfeval_schema::vocab::SubjectName;
use cfeval_schema::{ResponseRow, VariantRow};
use serde::{Deserialize, Serialize};

use crate::args::{LabelsImportArgs, LabelsSampleArgs};
use crate::labels_cmd::{KeyRow, default_rater, import_writer, open_table, rater_rows, read_key};

/// One response for raters.
#[derive(Debug, Serialize)]
struct Item {
    item_id: String,
    family: String,
    chart: String,
    answer: String,
}

/// One row of the scoring sheet.
#[derive(Debug, Serialize)]
struct SheetRow<'a> {
    item_id: &'a str,
    metric: String,
    domain: &'a str,
    name: &'a str,
    anchor_1: &'a str,
    anchor_3: &'a str,
    anchor_5: &'a str,
    /// The N/A rules a rater may apply (`id: when`), else empty.
    na_rules: String,
    /// For the rater: 1–5, or `na` with a listed rule.
    score: &'a str,
    rater: &'a str,
    notes: &'a str,
}

/// One sub-dimension of an item's sheet: its metric, domain,
/// sub-dimension and the N/A rules a rater may apply.
type SheetItem<'a> = (
    String,
    &'a cfeval_judge::rubric::Domain,
    &'a cfeval_judge::rubric::Subdimension,
    String,
);

fn rubric() -> anyhow::Result<Rubric> {
    Rubric::builtin().map_err(|problems| {
        anyhow::anyhow!(
            "the built-in rubric is invalid: {}",
            problems
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

/// Writes the blinded sample, its scoring sheet and its key.
pub fn sample(args: &LabelsSampleArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if args.per_family == 0 {
        bail!("--per-family must be at least 1");
    }
    let files = [
        "rubric-items.csv",
        "rubric-items.jsonl",
        "rubric-sheet.csv",
        "rubric-key.csv",
    ]
    .map(|name| args.out.join(name));
    if let Some(existing) = files.iter().find(|file| file.exists()) {
        bail!(
            "{} exists: a sample and its key are written once (choose another --out)",
            existing.display()
        );
    }
    let rubric = rubric()?;
    let pack = cfeval_schema::pack::Pack::of_run(&args.run).map_err(|error| anyhow::anyhow!(error))?;
    let settings = cfeval_judge::rubric::stage::pack_rubric(pack.as_ref(), &rubric)?;
    let responses = open_table::<ResponseRow>(&args.run)?;
    let variants = open_table::<VariantRow>(&args.run)?;
    #[derive(Deserialize)]
    struct Answer {
        subject: String,
        is_control: bool,
        mode: String,
        case_id: String,
        variant_id: String,
        intervention: String,
        family: String,
        sample: u32,
        status: String,
    }
    let mut strata: BTreeMap<String, Vec<KeyRow>> = BTreeMap::new();
    for batch in responses.read_columns::<Answer>(&[
        "subject",
        "is_control",
        "mode",
        "case_id",
        "variant_id",
        "intervention",
        "family",
        "sample",
        "status",
    ])? {
        for answer in batch? {
            if answer.is_control || answer.status != "ok" || answer.sample != 0 {
                continue;
            }
            let item_id = format!(
                "R{}",
                &cfeval_schema::ids::content_id(
                    "rubric-item",
                    &[
                        &args.seed.to_string(),
                        &answer.subject,
                        &answer.mode,
                        &answer.variant_id
                    ]
                )[..12]
            );
            strata.entry(answer.family.clone()).or_default().push(KeyRow {
                item_id,
                subject: answer.subject,
                mode: answer.mode,
                case_id: answer.case_id,
                variant_id: answer.variant_id,
                intervention: answer.intervention,
                family: answer.family,
            });
        }
    }
    if strata.is_empty() {
        bail!(
            "{} has no answered response of a subject under test to sample",
            args.run.display()
        );
    }
    let mut chosen: Vec<KeyRow> = Vec::new();
    for items in strata.values_mut() {
        items.sort_by(|a, b| a.item_id.cmp(&b.item_id));
        chosen.extend(items.drain(..).take(args.per_family));
    }
    chosen.sort_by(|a, b| a.item_id.cmp(&b.item_id));
    let wanted: BTreeSet<&str> = chosen.iter().map(|key| key.variant_id.as_str()).collect();
    let mut charts: HashMap<String, VariantRow> = HashMap::new();
    for batch in variants.read_rows::<VariantRow>()? {
        for variant in batch? {
            if wanted.contains(variant.variant_id.as_str()) {
                charts.insert(variant.variant_id.clone(), variant);
            }
        }
    }
    let keyed: BTreeSet<(&str, &str, &str)> = chosen
        .iter()
        .map(|key| (key.subject.as_str(), key.mode.as_str(), key.variant_id.as_str()))
        .collect();
    let mut texts: HashMap<(String, String, String), String> = HashMap::new();
    for batch in responses.read_rows::<ResponseRow>()? {
        for response in batch? {
            if response.sample == 0
                && keyed.contains(&(
                    response.subject.as_str(),
                    response.mode.as_str(),
                    response.variant_id.as_str(),
                ))
            {
                texts.insert(
                    (response.subject, response.mode, response.variant_id),
                    response.text.unwrap_or_default(),
                );
            }
        }
    }
    let mut items = Vec::new();
    let mut sheet: Vec<(String, Vec<SheetItem<'_>>)> = Vec::new();
    for key in &chosen {
        let variant = charts
            .get(&key.variant_id)
            .with_context(|| format!("variant {} is not in the variants table", key.variant_id))?;
        let bias = SubjectName::parse(&key.subject)
            .ok()
            .and_then(|name| name.bias().map(str::to_string));
        let conditions = settings.conditions(&CaseContext {
            facts: &variant.facts,
            mode: &key.mode,
            bias: bias.as_deref(),
        });
        let (asks, _) = rubric.plan(&conditions, &settings.not_called_for);
        items.push(Item {
            item_id: key.item_id.clone(),
            family: key.family.clone(),
            chart: cfeval_schema::render_chart(&variant.sections),
            answer: texts
                .get(&(key.subject.clone(), key.mode.clone(), key.variant_id.clone()))
                .cloned()
                .unwrap_or_default(),
        });
        sheet.push((
            key.item_id.clone(),
            asks.iter()
                .map(|ask| {
                    let rules = ask
                        .citable
                        .iter()
                        .map(|rule| format!("{}: {}", rule.id, rule.text))
                        .collect::<Vec<_>>()
                        .join(" | ");
                    (
                        cfeval_judge::rubric::judge::metric(&ask.domain.id, Some(&ask.sub.id)),
                        ask.domain,
                        ask.sub,
                        rules,
                    )
                })
                .collect(),
        ));
    }
    fs_err::create_dir_all(&args.out)?;
    crate::labels_cmd::write_items(&items, &files[0], &files[1])?;
    let mut sheet_file = csv::Writer::from_path(&files[2])?;
    let mut rows = 0usize;
    for (item_id, asks) in &sheet {
        for (metric, domain, sub, rules) in asks {
            let anchor = |score: u8| sub.anchors.get(&score).map_or("", String::as_str);
            sheet_file.serialize(SheetRow {
                item_id,
                metric: metric.clone(),
                domain: &domain.name,
                name: &sub.name,
                anchor_1: anchor(1),
                anchor_3: anchor(3),
                anchor_5: anchor(5),
                na_rules: rules.clone(),
                score: "",
                rater: "",
                notes: "",
            })?;
            rows += 1;
        }
    }
    sheet_file.flush()?;
    let mut key_file = csv::Writer::from_path(&files[3])?;
    for key in &chosen {
        key_file.serialize(key)?;
    }
    key_file.flush()?;
    writeln!(
        out,
        "sampled {} responses ({} sheet rows) for raters: {}, {} and the sheet {}; the key (subjects, kept from raters): {}",
        items.len(),
        rows,
        files[0].display(),
        files[1].display(),
        files[2].display(),
        files[3].display()
    )?;
    Ok(())
}

/// One row of a rater's filled sheet.
#[derive(Debug, Deserialize)]
struct RaterScore {
    item_id: Option<String>,
    metric: Option<String>,
    score: Option<serde_json::Value>,
    rater: Option<String>,
}

/// A row of the rubric-score CSV `aggregate --rubric-labels` reads.
#[derive(Debug, Serialize)]
struct RubricLabelRow<'a> {
    subject: &'a str,
    mode: &'a str,
    case_id: &'a str,
    intervention: &'a str,
    metric: &'a str,
    score: &'a str,
    rater: &'a str,
}

/// Checks the raters' sheets against the key and writes the rubric scores.
pub fn import(args: &LabelsImportArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let rubric = rubric()?;
    let mut metrics: BTreeSet<String> = BTreeSet::new();
    for domain in &rubric.domains {
        metrics.insert(cfeval_judge::rubric::judge::metric(&domain.id, None));
        for sub in &domain.subdimensions {
            metrics.insert(cfeval_judge::rubric::judge::metric(&domain.id, Some(&sub.id)));
        }
    }
    let keys = read_key(&args.key)?;
    let mut problems = Vec::new();
    let mut imported: Vec<(String, String, String, String)> = Vec::new();
    let mut seen = BTreeSet::new();
    for file in &args.files {
        let default_rater = default_rater(file);
        for (row, parsed) in rater_rows::<RaterScore>(file)? {
            let at = format!("{}:{row}", file.display());
            let record = match parsed {
                Ok(record) => record,
                Err(error) => {
                    problems.push(format!("{at}: {error}"));
                    continue;
                }
            };
            let score = match &record.score {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(text)) => text.trim().to_lowercase(),
                Some(other) => other.to_string(),
            };
            if score.is_empty() {
                // A row the rater left unscored is not a score.
                continue;
            }
            let Some(item_id) = record
                .item_id
                .as_deref()
                .map(str::trim)
                .filter(|id| !id.is_empty())
            else {
                problems.push(format!("{at}: no item_id"));
                continue;
            };
            let Some(key) = keys.get(item_id) else {
                problems.push(format!(
                    "{at}: item `{item_id}` is not in the key {}",
                    args.key.display()
                ));
                continue;
            };
            let metric = record.metric.as_deref().map(str::trim).unwrap_or_default();
            if !metrics.contains(metric) {
                problems.push(format!(
                    "{at}: metric `{metric}` is not a domain or sub-dimension of the rubric (`rubric.<d>` or `rubric.<d>.<sub>`)"
                ));
                continue;
            }
            if score != "na" && !matches!(score.as_str(), "1" | "2" | "3" | "4" | "5") {
                problems.push(format!(
                    "{at}: score `{score}` is not an integer from 1 to 5 or `na`"
                ));
                continue;
            }
            let rater = record
                .rater
                .filter(|rater| !rater.trim().is_empty())
                .unwrap_or_else(|| default_rater.clone());
            if !seen.insert((rater.clone(), item_id.to_string(), metric.to_string())) {
                problems.push(format!(
                    "{at}: rater `{rater}` scores {metric} of item `{item_id}` twice"
                ));
                continue;
            }
            imported.push((rater, key.item_id.clone(), metric.to_string(), score));
        }
    }
    let mut writer = import_writer(&problems, imported.len(), &args.out, "rubric scores", out)?;
    for (rater, item_id, metric, score) in &imported {
        let key = &keys[item_id];
        writer.serialize(RubricLabelRow {
            subject: &key.subject,
            mode: &key.mode,
            case_id: &key.case_id,
            intervention: &key.intervention,
            metric,
            score,
            rater,
        })?;
    }
    writer.flush()?;
    let raters: BTreeSet<&str> = imported.iter().map(|(rater, ..)| rater.as_str()).collect();
    writeln!(
        out,
        "imported {} rubric scores from {} raters ({}) into {}; use it with `cfeval aggregate --rubric-labels {}`",
        imported.len(),
        raters.len(),
        raters.iter().copied().collect::<Vec<_>>().join(", "),
        args.out.display(),
        args.out.display()
    )?;
    Ok(())
}
