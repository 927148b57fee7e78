//! `cfeval labels sample|import`: human labels as a workflow.
//!
//! `sample` draws a stratified sample of a run's (baseline, variant) answer
//! pairs — the same number per family, seeded — and writes it for raters as
//! CSV and JSONL, *blinded*: no subject, mode or judge, only an opaque item
//! id, the charts, the edit, the catalog's expected direction and the two
//! answers. Which subject answered each item is in a separate key file the
//! raters never see.
//!
//! `import` takes any number of raters' files (CSV or JSONL with `item_id`,
//! `label`, optionally `direction_wrong` and `rater`), checks every row
//! against the key (each error names the file and row) and writes the one
//! human-label CSV `cfeval aggregate --human-labels` reads: judge–human and
//! human–human agreement per family, and per intervention how often a rater
//! found the expected direction clinically wrong.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use anyhow::{Context, bail};
use cfeval_schema::{ResponseRow, ShardStore, Table, VariantRow};
use serde::{Deserialize, Serialize};

use crate::args::{LabelsCommand, LabelsImportArgs, LabelsSampleArgs};

/// The label names a rater may use, with the CSS score each carries.
const LABELS: &[(&str, f64)] = &[
    ("updated", 1.0),
    ("noticed", 0.5),
    ("ignored", 0.0),
    ("wrong_direction", 0.0),
    ("held", 1.0),
    ("shifted", 0.0),
];

/// The judge's name for a rater's label (what `aggregate` keeps apart in κ).
fn judge_label(label: &str) -> &'static str {
    match label {
        "updated" => "updated_correct",
        "noticed" => "acknowledged_unchanged",
        "ignored" => "ignored",
        "wrong_direction" => "updated_wrong_direction",
        "held" => "held_correctly",
        _ => "shifted_spuriously",
    }
}

/// Runs `cfeval labels …`.
pub fn labels(command: &LabelsCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    match command {
        LabelsCommand::Sample(args) => sample(args, out),
        LabelsCommand::Import(args) => import(args, out),
        LabelsCommand::RubricSample(args) => crate::labels_rubric::sample(args, out),
        LabelsCommand::RubricImport(args) => crate::labels_rubric::import(args, out),
    }
}

/// One item for raters (the blinded file's row).
#[derive(Debug, Serialize)]
struct Item {
    item_id: String,
    family: String,
    intervention: String,
    /// The edit, as `kind name: before → after` per changed fact.
    edit: String,
    /// The catalog's expected direction.
    expected: String,
    baseline_chart: String,
    variant_chart: String,
    baseline_answer: String,
    variant_answer: String,
    /// For the rater: updated, noticed, ignored, wrong_direction (held or
    /// shifted for family N).
    label: String,
    /// For the rater: `true` when the expected direction itself is clinically wrong.
    direction_wrong: String,
    notes: String,
}

/// Where an item came from (the key file's row).
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct KeyRow {
    pub(crate) item_id: String,
    pub(crate) subject: String,
    pub(crate) mode: String,
    pub(crate) case_id: String,
    pub(crate) variant_id: String,
    pub(crate) intervention: String,
    pub(crate) family: String,
}

/// Writes the items for raters, as CSV and as JSONL.
pub(crate) fn write_items<T: Serialize>(
    items: &[T],
    csv_path: &Path,
    jsonl_path: &Path,
) -> anyhow::Result<()> {
    let mut csv = csv::Writer::from_path(csv_path)?;
    for item in items {
        csv.serialize(item)?;
    }
    csv.flush()?;
    let mut jsonl = std::io::BufWriter::new(fs_err::File::create(jsonl_path)?);
    for item in items {
        serde_json::to_writer(&mut jsonl, item)?;
        writeln!(jsonl)?;
    }
    jsonl.flush()?;
    Ok(())
}

pub(crate) fn open_table<T: Table>(run: &Path) -> anyhow::Result<ShardStore> {
    ShardStore::open_existing(&run.join(T::NAME), T::NAME, T::schema())?
        .with_context(|| format!("{} has no `{}` table", run.display(), T::NAME))
}

fn sample(args: &LabelsSampleArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    if args.per_family == 0 {
        bail!("--per-family must be at least 1");
    }
    let files = ["sample.csv", "sample.jsonl", "key.csv"].map(|name| args.out.join(name));
    if let Some(existing) = files.iter().find(|file| file.exists()) {
        bail!(
            "{} exists: a sample and its key are written once (choose another --out)",
            existing.display()
        );
    }
    let variants = open_table::<VariantRow>(&args.run)?;
    let responses = open_table::<ResponseRow>(&args.run)?;
    // Variants that change a fact, by id; each case's baseline. Only these
    // columns: the charts are read below for the sampled items alone.
    #[derive(Deserialize)]
    struct Entry {
        case_id: String,
        variant_id: String,
        intervention: String,
        family: String,
        applicable: bool,
    }
    let mut changed: HashMap<String, (String, String, String)> = HashMap::new();
    let mut baselines: HashMap<String, String> = HashMap::new();
    for batch in
        variants.read_columns::<Entry>(&["case_id", "variant_id", "intervention", "family", "applicable"])?
    {
        for variant in batch? {
            if variant.family == cfeval_schema::vocab::BASELINE {
                baselines.insert(variant.case_id.clone(), variant.variant_id.clone());
            } else if variant.applicable {
                changed.insert(
                    variant.variant_id.clone(),
                    (variant.case_id, variant.intervention, variant.family),
                );
            }
        }
    }
    // Answered pairs of the subjects under test: a usable answer to the
    // variant and to its case's baseline.
    #[derive(Deserialize)]
    struct Answer {
        subject: String,
        is_control: bool,
        mode: String,
        variant_id: String,
        sample: u32,
        status: String,
    }
    // Raters see each tuple's first sample (repeated samples are the same
    // question asked again).
    let mut answered: HashSet<(String, String, String)> = HashSet::new();
    for batch in responses.read_columns::<Answer>(&[
        "subject",
        "is_control",
        "mode",
        "variant_id",
        "sample",
        "status",
    ])? {
        for answer in batch? {
            if !answer.is_control && answer.status == "ok" && answer.sample == 0 {
                answered.insert((answer.subject, answer.mode, answer.variant_id));
            }
        }
    }
    let mut strata: BTreeMap<String, Vec<(String, KeyRow)>> = BTreeMap::new();
    for (subject, mode, variant_id) in &answered {
        let Some((case_id, intervention, family)) = changed.get(variant_id) else {
            continue;
        };
        let Some(baseline) = baselines.get(case_id) else {
            continue;
        };
        if !answered.contains(&(subject.clone(), mode.clone(), baseline.clone())) {
            continue;
        }
        let item_id = format!(
            "L{}",
            &cfeval_schema::ids::content_id(
                "label-item",
                &[&args.seed.to_string(), subject, mode, variant_id]
            )[..12]
        );
        strata.entry(family.clone()).or_default().push((
            item_id.clone(),
            KeyRow {
                item_id,
                subject: subject.clone(),
                mode: mode.clone(),
                case_id: case_id.clone(),
                variant_id: variant_id.clone(),
                intervention: intervention.clone(),
                family: family.clone(),
            },
        ));
    }
    if strata.is_empty() {
        bail!(
            "{} has no answered (baseline, variant) pair of a subject under test to sample",
            args.run.display()
        );
    }
    // The same number per family, chosen by the seeded item id (an order
    // no subject, mode or case decides).
    let mut chosen: Vec<KeyRow> = Vec::new();
    for items in strata.values_mut() {
        items.sort_by(|a, b| a.0.cmp(&b.0));
        chosen.extend(items.drain(..).take(args.per_family).map(|(_, key)| key));
    }
    chosen.sort_by(|a, b| a.item_id.cmp(&b.item_id));
    // The texts the raters read.
    let wanted_variants: HashSet<String> = chosen
        .iter()
        .flat_map(|key| [key.variant_id.clone(), baselines[&key.case_id].clone()])
        .collect();
    let mut charts: HashMap<String, VariantRow> = HashMap::new();
    for batch in variants.read_rows::<VariantRow>()? {
        for variant in batch? {
            if wanted_variants.contains(&variant.variant_id) {
                charts.insert(variant.variant_id.clone(), variant);
            }
        }
    }
    let wanted_answers: HashSet<(String, String, String)> = chosen
        .iter()
        .flat_map(|key| {
            [key.variant_id.clone(), baselines[&key.case_id].clone()]
                .map(|variant| (key.subject.clone(), key.mode.clone(), variant))
        })
        .collect();
    let mut texts: HashMap<(String, String, String), String> = HashMap::new();
    for batch in responses.read_rows::<ResponseRow>()? {
        for response in batch? {
            let key = (response.subject, response.mode, response.variant_id);
            if response.status == "ok" && response.sample == 0 && wanted_answers.contains(&key) {
                texts.insert(key, response.text.unwrap_or_default());
            }
        }
    }
    let chart_text = |variant_id: &str| {
        charts.get(variant_id).map_or_else(String::new, |variant| {
            variant
                .sections
                .iter()
                .map(|section| format!("{}:\n{}", section.name, section.text))
                .collect::<Vec<_>>()
                .join("\n\n")
        })
    };
    let answer = |key: &KeyRow, variant_id: &str| {
        texts
            .get(&(key.subject.clone(), key.mode.clone(), variant_id.to_string()))
            .cloned()
            .unwrap_or_default()
    };
    let items: Vec<Item> = chosen
        .iter()
        .map(|key| {
            let baseline = &baselines[&key.case_id];
            let variant = charts.get(&key.variant_id);
            Item {
                item_id: key.item_id.clone(),
                family: key.family.clone(),
                intervention: key.intervention.clone(),
                edit: variant.map_or_else(String::new, |variant| {
                    variant
                        .diff
                        .iter()
                        .filter(|entry| entry.fact_kind.is_some())
                        .map(|entry| {
                            format!(
                                "{} {}: {} → {}",
                                entry.fact_kind.as_deref().unwrap_or_default(),
                                entry.fact_name.as_deref().unwrap_or_default(),
                                entry.before.as_deref().unwrap_or("(none)"),
                                entry.after.as_deref().unwrap_or("(none)")
                            )
                        })
                        .collect::<Vec<_>>()
                        .join("; ")
                }),
                expected: variant
                    .and_then(|variant| variant.expected_text.clone())
                    .unwrap_or_default(),
                baseline_chart: chart_text(baseline),
                variant_chart: chart_text(&key.variant_id),
                baseline_answer: answer(key, baseline),
                variant_answer: answer(key, &key.variant_id),
                label: String::new(),
                direction_wrong: String::new(),
                notes: String::new(),
            }
        })
        .collect();
    fs_err::create_dir_all(&args.out)?;
    write_items(&items, &files[0], &files[1])?;
    let mut key_file = csv::Writer::from_path(&files[2])?;
    for key in &chosen {
        key_file.serialize(key)?;
    }
    key_file.flush()?;
    let mut per_family: BTreeMap<&str, usize> = BTreeMap::new();
    for key in &chosen {
        *per_family.entry(&key.family).or_default() += 1;
    }
    writeln!(
        out,
        "sampled {} items ({}) for raters: {} and {}; the key (subjects, kept from raters): {}",
        items.len(),
        per_family
            .iter()
            .map(|(family, count)| format!("{family} {count}"))
            .collect::<Vec<_>>()
            .join(", "),
        files[0].display(),
        files[1].display(),
        files[2].display()
    )?;
    Ok(())
}

/// One rater's row, from CSV or JSONL.
#[derive(Debug, Deserialize)]
struct RaterRow {
    item_id: Option<String>,
    label: Option<String>,
    #[serde(default, deserialize_with = "flag")]
    direction_wrong: Option<bool>,
    rater: Option<String>,
}

/// `true`/`false`/`yes`/`no`/`1`/`0`/empty, from CSV text or JSON.
fn flag<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<bool>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bool(bool),
        Text(String),
    }
    match Option::<Raw>::deserialize(deserializer)? {
        None => Ok(None),
        Some(Raw::Bool(value)) => Ok(Some(value)),
        Some(Raw::Text(text)) => match text.trim().to_lowercase().as_str() {
            "" => Ok(None),
            "true" | "yes" | "y" | "1" => Ok(Some(true)),
            "false" | "no" | "n" | "0" => Ok(Some(false)),
            other => Err(serde::de::Error::custom(format!(
                "direction_wrong `{other}` is not true or false"
            ))),
        },
    }
}

/// A row of the human-label CSV `aggregate` reads.
#[derive(Debug, Serialize)]
struct HumanRow<'a> {
    rater: &'a str,
    subject: &'a str,
    mode: &'a str,
    case_id: &'a str,
    intervention: &'a str,
    score: f64,
    label: &'static str,
    direction_wrong: bool,
}

/// A rater file's rows with their row numbers (1-based lines for JSONL,
/// CSV records counted from the header's line 1).
pub(crate) fn rater_rows<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> anyhow::Result<Vec<(u64, Result<T, String>)>> {
    let jsonl = path.extension().is_some_and(|extension| {
        extension.eq_ignore_ascii_case("jsonl") || extension.eq_ignore_ascii_case("json")
    });
    let mut rows = Vec::new();
    if jsonl {
        let text = fs_err::read_to_string(path)?;
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            rows.push((
                index as u64 + 1,
                serde_json::from_str::<T>(line).map_err(|error| error.to_string()),
            ));
        }
    } else {
        let mut reader =
            csv::Reader::from_path(path).with_context(|| format!("reading {}", path.display()))?;
        for (index, record) in reader.deserialize::<T>().enumerate() {
            rows.push((index as u64 + 2, record.map_err(|error| error.to_string())));
        }
    }
    Ok(rows)
}

/// A sample's key, by item id.
pub(crate) fn read_key(path: &Path) -> anyhow::Result<HashMap<String, KeyRow>> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("reading the key {}", path.display()))?;
    let mut keys = HashMap::new();
    for (index, row) in reader.deserialize::<KeyRow>().enumerate() {
        let row: KeyRow = row.with_context(|| format!("{}:{}", path.display(), index + 2))?;
        keys.insert(row.item_id.clone(), row);
    }
    Ok(keys)
}

/// The rater of a file's rows that name none: the file's name.
pub(crate) fn default_rater(file: &Path) -> String {
    file.file_stem()
        .map_or_else(|| "rater".to_string(), |stem| stem.to_string_lossy().into_owned())
}

/// The writer of an import's output, once every row of the raters' files
/// was good (each problem printed, nothing written otherwise) and at least
/// one holds a `what` (labels, rubric scores).
pub(crate) fn import_writer(
    problems: &[String],
    imported: usize,
    path: &Path,
    what: &str,
    out: &mut dyn Write,
) -> anyhow::Result<csv::Writer<std::fs::File>> {
    if !problems.is_empty() {
        for problem in problems {
            writeln!(out, "{problem}")?;
        }
        bail!(
            "{} rows of the raters' files are not {what}; nothing was written",
            problems.len()
        );
    }
    if imported == 0 {
        bail!("the raters' files hold no {what}");
    }
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        fs_err::create_dir_all(parent)?;
    }
    Ok(csv::Writer::from_path(path)?)
}

fn import(args: &LabelsImportArgs, out: &mut dyn Write) -> anyhow::Result<()> {
    let keys = read_key(&args.key)?;
    let mut problems: Vec<String> = Vec::new();
    let mut imported: Vec<(String, String, &'static str, bool)> = Vec::new();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for file in &args.files {
        let default_rater = default_rater(file);
        for (row, parsed) in rater_rows::<RaterRow>(file)? {
            let at = format!("{}:{row}", file.display());
            let record = match parsed {
                Ok(record) => record,
                Err(error) => {
                    problems.push(format!("{at}: {error}"));
                    continue;
                }
            };
            let Some(item_id) = record.item_id.filter(|id| !id.trim().is_empty()) else {
                problems.push(format!("{at}: no item_id"));
                continue;
            };
            let Some(key) = keys.get(item_id.trim()) else {
                problems.push(format!(
                    "{at}: item `{item_id}` is not in the key {}",
                    args.key.display()
                ));
                continue;
            };
            let label = record.label.unwrap_or_default().trim().to_lowercase();
            if label.is_empty() {
                // An item the rater left unlabelled is not a label.
                continue;
            }
            let Some(&(name, _)) = LABELS.iter().find(|(name, _)| *name == label) else {
                problems.push(format!(
                    "{at}: label `{label}` is not one of {}",
                    LABELS
                        .iter()
                        .map(|(name, _)| *name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
                continue;
            };
            let control_label = matches!(name, "held" | "shifted");
            if control_label != (key.family == "N") {
                problems.push(format!(
                    "{at}: label `{label}` does not fit family {} (held or shifted are for family N only)",
                    key.family
                ));
                continue;
            }
            let rater = record
                .rater
                .filter(|rater| !rater.trim().is_empty())
                .unwrap_or_else(|| default_rater.clone());
            if !seen.insert((rater.clone(), key.item_id.clone())) {
                problems.push(format!("{at}: rater `{rater}` labels item `{item_id}` twice"));
                continue;
            }
            imported.push((
                rater,
                key.item_id.clone(),
                name,
                record.direction_wrong.unwrap_or(false),
            ));
        }
    }
    let mut writer = import_writer(&problems, imported.len(), &args.out, "labels", out)?;
    for (rater, item_id, label, direction_wrong) in &imported {
        let key = &keys[item_id];
        let score = LABELS
            .iter()
            .find(|(name, _)| name == label)
            .map_or(0.0, |(_, score)| *score);
        writer.serialize(HumanRow {
            rater,
            subject: &key.subject,
            mode: &key.mode,
            case_id: &key.case_id,
            intervention: &key.intervention,
            score,
            label: judge_label(label),
            direction_wrong: *direction_wrong,
        })?;
    }
    writer.flush()?;
    let raters: BTreeSet<&str> = imported.iter().map(|(rater, ..)| rater.as_str()).collect();
    writeln!(
        out,
        "imported {} labels from {} raters ({}) into {}; use it with `cfeval aggregate --human-labels {}`",
        imported.len(),
        raters.len(),
        raters.iter().copied().collect::<Vec<_>>().join(", "),
        args.out.display(),
        args.out.display()
    )?;
    Ok(())
}
