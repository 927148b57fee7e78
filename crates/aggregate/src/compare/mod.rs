//! `cfeval compare RUN_A RUN_B`: run B against run A (a model before and
//! after a fine-tune, a prompt change), tuple by tuple.
//!
//! 1. **Comparable runs only.** Both runs must have been made with the same
//!    pack (`pack.json`; none is the built-in oncology) and every judgment
//!    of both under one and the same catalog; otherwise [`compute`] refuses
//!    with the reason and computes nothing.
//! 2. **Matching** ([`matching`]): the chosen judge's `css` and `cms`
//!    verdicts are matched by (subject, mode, case, intervention, sample).
//!    A (subject, mode) judged in one run only, a tuple judged in one run
//!    only, and a tuple one run did not decide are counted and listed as
//!    rows of their own, never dropped silently.
//! 3. **Per tuple**: `fixed` (the score rose), `regressed` (it fell), `same`.
//! 4. **Per (subject, mode)**, overall and per family: the paired difference
//!    B − A of CSS, of CMS (per case) and of the spurious-shift rate (the
//!    negative-control family), each over the tuples both runs decided, with
//!    the percentile interval of the paired case bootstrap
//!    ([`crate::stats::bootstrap()`]: one stratum of cases, so a replicate
//!    draws a case's tuples of both runs, every family and every subject
//!    together), and the exact McNemar p-value of the "updated correctly"
//!    indicator (score 1; [`crate::stats::mcnemar_exact`]).
//!
//! The rows ([`ComparisonRow`]) go to a `comparison` table of their own
//! (`--out`, by default `RUN_B/compare-<name of A>/comparison/`), written
//! through the schema crate's shard writer and committed as one unit.

pub mod matching;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use cfeval_schema::pack::Pack;
use cfeval_schema::{
    CFEVAL_VERSION, ComparisonRow, JudgmentRow, Provenance, ShardStore, StoreOptions, Table, TableName, ids,
};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::stats;
use matching::{Metric, Pair, RunVerdicts};

/// The unit the comparison table is committed under.
pub const UNIT: &str = "compare";

/// Settings of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// The judge whose verdicts are compared (default `rule`).
    pub judge: String,
    /// Compare only these subjects (all when empty).
    pub subjects: Vec<String>,
    /// Bootstrap resamples (default 10,000).
    pub resamples: usize,
    /// Bootstrap seed.
    pub seed: u64,
    /// Confidence level of every interval (default 0.95).
    pub level: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            judge: "rule".into(),
            subjects: Vec::new(),
            resamples: 10_000,
            seed: 0,
            level: 0.95,
        }
    }
}

/// A (subject, mode) of one run only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OneSided {
    pub subject: String,
    pub mode: String,
    pub run: String,
    /// Its verdicts (decided or not) of the judge.
    pub tuples: u64,
}

/// What a comparison found, in sum.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    pub run_a: String,
    pub run_b: String,
    pub dir_a: PathBuf,
    pub dir_b: PathBuf,
    pub judge: String,
    pub catalog_hash: String,
    /// The pack both runs were made with.
    pub pack: String,
    /// Tuples both runs decided (CSS pairs, negative controls and CMS).
    pub matched: u64,
    /// Of the matched CSS and negative-control tuples.
    pub fixed: u64,
    pub regressed: u64,
    pub same: u64,
    /// Tuples judged in run A only, in run B only, and judged in both but
    /// decided in at most one.
    pub only_a: u64,
    pub only_b: u64,
    pub undecided: u64,
    /// (subject, mode) judged in one run only.
    pub one_sided: Vec<OneSided>,
    /// Verdicts of samples only one run has (not compared).
    pub samples_left_out: u64,
    pub resamples: usize,
    pub level: f64,
    /// Rows of the comparison table.
    pub rows: usize,
    /// Where the table was written (empty before [`write()`]).
    pub table_dir: PathBuf,
}

/// A computed comparison.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub rows: Vec<ComparisonRow>,
    pub report: Report,
}

/// The families a comparison sorts tuples into.
struct Families {
    css: Vec<String>,
    control: String,
}

/// The pack a run was made with, as `name (hash)`: a run with no pack of
/// record is the oncology pack compiled in, the same pack as a run that
/// records an unchanged `data/packs/oncology`.
fn pack_of(run: &Path) -> Result<((String, String), Families)> {
    let pack = Pack::of_run(run).map_err(Error::Config)?;
    Ok(match pack {
        Some(pack) => (
            (pack.name.clone(), pack.hash().to_string()),
            Families {
                css: pack.vocabulary.css_families.clone(),
                control: pack.vocabulary.control_family.clone(),
            },
        ),
        None => {
            let builtin = cfeval_schema::vocab::Vocabulary::builtin();
            (
                (
                    builtin.pack.clone(),
                    cfeval_schema::pack::oncology::hash().to_string(),
                ),
                Families {
                    css: builtin.css_families.clone(),
                    control: builtin.control_family.clone(),
                },
            )
        }
    })
}

fn pack_name((name, hash): &(String, String)) -> String {
    format!("`{name}` ({})", &hash[..hash.len().min(12)])
}

/// Reads the complete, current judgments of `run`.
fn read_run(run: &Path, judge: &str) -> Result<RunVerdicts> {
    let store = cfeval_schema::lineage::require_input(run, TableName::Judgments, StoreOptions::default())?;
    let mut verdicts = RunVerdicts::default();
    for batch in store.read_columns::<matching::Judged>(matching::COLUMNS)? {
        verdicts.add(batch?, judge);
    }
    if verdicts.run.is_empty() {
        verdicts.run = run
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
    }
    Ok(verdicts)
}

/// Refuses two runs made with different packs; returns the pack's name and
/// its families.
fn check_packs(run_a: &Path, run_b: &Path) -> Result<(String, Families)> {
    let (pack_a, families) = pack_of(run_a)?;
    let (pack_b, _) = pack_of(run_b)?;
    if pack_a != pack_b {
        return Err(Error::Incomparable {
            a: run_a.to_path_buf(),
            b: run_b.to_path_buf(),
            reason: format!(
                "run A was made with {}, run B with {}",
                pack_name(&pack_a),
                pack_name(&pack_b)
            ),
        });
    }
    Ok((pack_name(&pack_a), families))
}

/// Refuses two runs whose judgments were made under different catalogs (or
/// one run under several), or where the judge did not judge; returns the
/// catalog hash.
fn check_judgments(
    run_a: &Path,
    run_b: &Path,
    a: &RunVerdicts,
    b: &RunVerdicts,
    judge: &str,
) -> Result<String> {
    let incomparable = |reason: String| Error::Incomparable {
        a: run_a.to_path_buf(),
        b: run_b.to_path_buf(),
        reason,
    };
    for (name, run) in [("A", a), ("B", b)] {
        if run.catalogs.len() > 1 {
            let hashes: Vec<&str> = run.catalogs.iter().map(String::as_str).collect();
            return Err(incomparable(format!(
                "run {name}'s judgments were made under several catalogs ({})",
                hashes.join(", ")
            )));
        }
    }
    if a.catalogs != b.catalogs {
        let first = |run: &RunVerdicts| {
            run.catalogs
                .iter()
                .next()
                .cloned()
                .unwrap_or_else(|| "none".into())
        };
        return Err(incomparable(format!(
            "the runs were judged under different catalogs (A: {}, B: {})",
            first(a),
            first(b)
        )));
    }
    for (run_dir, run) in [(run_a, a), (run_b, b)] {
        if !run.judges.contains(judge) {
            return Err(Error::NoJudge {
                judge: judge.to_string(),
                run: run_dir.to_path_buf(),
                found: run.judges.iter().cloned().collect::<Vec<_>>().join(", "),
            });
        }
    }
    Ok(a.catalogs.iter().next().cloned().unwrap_or_default())
}

/// Refuses a subject asked for that neither run's judge judged.
fn check_subjects(subjects: &[String], a: &RunVerdicts, b: &RunVerdicts) -> Result<()> {
    let known: BTreeSet<&str> = a
        .verdicts
        .keys()
        .chain(b.verdicts.keys())
        .map(|key| key.subject.as_str())
        .collect();
    match subjects.iter().find(|subject| !known.contains(subject.as_str())) {
        Some(missing) => Err(Error::Config(format!(
            "subject `{missing}` has no judgments in either run (their subjects: {})",
            known.into_iter().collect::<Vec<_>>().join(", ")
        ))),
        None => Ok(()),
    }
}

/// One estimate's cell: which pairs it is over and what it measures.
struct Cell {
    subject: String,
    mode: String,
    level: &'static str,
    group: String,
    metric: &'static str,
    pairs: Vec<usize>,
}

/// The value a pair contributes to its metric, in run A and run B.
fn values(metric: &str, pair: &Pair) -> (f64, f64) {
    if metric == "spurious_shift" {
        (
            f64::from(u8::from(pair.a_shifted)),
            f64::from(u8::from(pair.b_shifted)),
        )
    } else {
        (pair.a, pair.b)
    }
}

/// Compares run B with run A without writing anything.
#[tracing::instrument(skip_all, fields(stage = "compare"))]
pub fn compute(config: &Config, run_a: &Path, run_b: &Path) -> Result<Comparison> {
    if config.resamples == 0 {
        return Err(Error::Config("resamples must be at least 1".into()));
    }
    let (pack, families) = check_packs(run_a, run_b)?;
    let mut a = read_run(run_a, &config.judge)?;
    let mut b = read_run(run_b, &config.judge)?;
    let catalog_hash = check_judgments(run_a, run_b, &a, &b, &config.judge)?;
    if !config.subjects.is_empty() {
        check_subjects(&config.subjects, &a, &b)?;
        for run in [&mut a, &mut b] {
            run.verdicts
                .retain(|key, _| config.subjects.contains(&key.subject));
        }
    }
    let matching = matching::match_tuples(&a, &b);

    // The cells: per (subject, mode), CSS overall and per family, the
    // spurious-shift rate of the control family, CMS overall.
    // Keyed for the table's order: per (subject, mode), overall rows first.
    type CellKey = (String, String, bool, &'static str, String, &'static str);
    let mut by_cell: BTreeMap<CellKey, Vec<usize>> = BTreeMap::new();
    for (index, pair) in matching.pairs.iter().enumerate() {
        let (subject, mode) = pair.key.cell();
        let mut add = |level: &'static str, group: &str, metric: &'static str| {
            by_cell
                .entry((
                    subject.clone(),
                    mode.clone(),
                    level != "overall",
                    level,
                    group.to_string(),
                    metric,
                ))
                .or_default()
                .push(index);
        };
        match pair.key.metric {
            Metric::Cms => add("overall", "all", "cms"),
            Metric::Css if families.css.contains(&pair.family) => {
                add("overall", "all", "css");
                add("family", &pair.family, "css");
            }
            Metric::Css if pair.family == families.control => {
                add("family", &pair.family, "spurious_shift");
            }
            Metric::Css => {}
        }
    }
    let cells: Vec<Cell> = by_cell
        .into_iter()
        .map(|((subject, mode, _, level, group, metric), pairs)| Cell {
            subject,
            mode,
            level,
            group,
            metric,
            pairs,
        })
        .collect();

    // One stratum of every matched case; two series (A, B) per cell.
    let mut cases: BTreeMap<&str, usize> = BTreeMap::new();
    for pair in &matching.pairs {
        let next = cases.len();
        cases.entry(pair.key.case_id.as_str()).or_insert(next);
    }
    let mut series = Vec::with_capacity(2 * cells.len());
    let mut statistics = Vec::with_capacity(cells.len());
    for cell in &cells {
        let mut num_a = vec![0.0; cases.len()];
        let mut num_b = vec![0.0; cases.len()];
        let mut den = vec![0.0; cases.len()];
        for &index in &cell.pairs {
            let pair = &matching.pairs[index];
            let case = cases[pair.key.case_id.as_str()];
            let (value_a, value_b) = values(cell.metric, pair);
            num_a[case] += value_a;
            num_b[case] += value_b;
            den[case] += 1.0;
        }
        let first = series.len();
        series.push(stats::Series {
            stratum: 0,
            num: num_a,
            den: den.clone(),
        });
        series.push(stats::Series {
            stratum: 0,
            num: num_b,
            den,
        });
        statistics.push(stats::Statistic::difference(
            &stats::Statistic::ratio(vec![first + 1]),
            &stats::Statistic::ratio(vec![first]),
        ));
    }
    let estimates = if statistics.is_empty() {
        Vec::new()
    } else {
        let design = stats::Design::new(&[cases.len()], &series)?;
        stats::bootstrap(
            &design,
            &statistics,
            &stats::Options {
                resamples: config.resamples,
                seed: config.seed,
                level: config.level,
            },
        )?
        .estimates
    };

    let row = |subject: &str, mode: &str, level: &str, group: &str, metric: &str| ComparisonRow {
        run_a: a.run.clone(),
        run_b: b.run.clone(),
        judge: config.judge.clone(),
        subject: subject.to_string(),
        mode: mode.to_string(),
        level: level.to_string(),
        group: group.to_string(),
        metric: metric.to_string(),
        case_id: None,
        intervention: None,
        sample: None,
        a_value: None,
        b_value: None,
        difference: None,
        ci_low: None,
        ci_high: None,
        n_cases: 0,
        n_tuples: 0,
        fixed: 0,
        regressed: 0,
        same: 0,
        mcnemar_p: None,
    };
    let mut rows = Vec::new();
    for (cell, estimate) in cells.iter().zip(&estimates) {
        let pairs: Vec<&Pair> = cell.pairs.iter().map(|&index| &matching.pairs[index]).collect();
        let n = pairs.len() as f64;
        let (sum_a, sum_b) = pairs.iter().fold((0.0, 0.0), |(sum_a, sum_b), pair| {
            let (value_a, value_b) = values(cell.metric, pair);
            (sum_a + value_a, sum_b + value_b)
        });
        let outcomes = Outcomes::of(&pairs);
        let n_cases = pairs
            .iter()
            .map(|pair| pair.key.case_id.as_str())
            .collect::<BTreeSet<_>>()
            .len();
        let interval = estimate.percentile;
        rows.push(ComparisonRow {
            a_value: Some(sum_a / n),
            b_value: Some(sum_b / n),
            difference: Some(estimate.value),
            ci_low: interval.map(|(low, _)| low),
            ci_high: interval.map(|(_, high)| high),
            n_cases: n_cases as u64,
            n_tuples: pairs.len() as u64,
            fixed: outcomes.fixed,
            regressed: outcomes.regressed,
            same: outcomes.same,
            mcnemar_p: (cell.metric != "cms").then(|| stats::mcnemar_exact(outcomes.lost, outcomes.gained)),
            ..row(&cell.subject, &cell.mode, cell.level, &cell.group, cell.metric)
        });
    }

    // The tuples: every regressed CSS or negative-control tuple, every
    // tuple that could not be paired.
    let tuple_row =
        |key: &matching::TupleKey, family: &str, metric: &str, value_a: Option<f64>, value_b: Option<f64>| {
            ComparisonRow {
                case_id: Some(key.case_id.clone()),
                intervention: Some(key.intervention.clone()),
                sample: Some(key.sample),
                a_value: value_a,
                b_value: value_b,
                difference: value_a.zip(value_b).map(|(value_a, value_b)| value_b - value_a),
                n_cases: 1,
                n_tuples: 1,
                ..row(&key.subject, &key.mode, "tuple", family, metric)
            }
        };
    let mut report_outcomes = Outcomes::default();
    let css_pairs: Vec<&Pair> = matching
        .pairs
        .iter()
        .filter(|pair| pair.key.metric == Metric::Css)
        .collect();
    report_outcomes.add(&css_pairs);
    for pair in &css_pairs {
        if pair.b < pair.a {
            rows.push(tuple_row(
                &pair.key,
                &pair.family,
                "regressed",
                Some(pair.a),
                Some(pair.b),
            ));
        }
    }
    let mut unpaired = BTreeMap::<&str, u64>::new();
    for tuple in &matching.unpaired {
        *unpaired.entry(tuple.why).or_default() += 1;
        rows.push(tuple_row(&tuple.key, &tuple.family, tuple.why, tuple.a, tuple.b));
    }
    let mut one_sided = Vec::new();
    for (cells, metric, run) in [
        (&matching.only_a, "only_a", &a.run),
        (&matching.only_b, "only_b", &b.run),
    ] {
        for ((subject, mode), &tuples) in cells {
            rows.push(ComparisonRow {
                n_tuples: tuples,
                ..row(subject, mode, "subject", "all", metric)
            });
            one_sided.push(OneSided {
                subject: subject.clone(),
                mode: mode.clone(),
                run: run.clone(),
                tuples,
            });
        }
    }

    let report = Report {
        run_a: a.run.clone(),
        run_b: b.run.clone(),
        dir_a: run_a.to_path_buf(),
        dir_b: run_b.to_path_buf(),
        judge: config.judge.clone(),
        catalog_hash,
        pack,
        matched: matching.pairs.len() as u64,
        fixed: report_outcomes.fixed,
        regressed: report_outcomes.regressed,
        same: report_outcomes.same,
        only_a: unpaired.get("only_a").copied().unwrap_or_default(),
        only_b: unpaired.get("only_b").copied().unwrap_or_default(),
        undecided: unpaired.get("undecided").copied().unwrap_or_default(),
        one_sided,
        samples_left_out: matching.samples_left_out,
        resamples: config.resamples,
        level: config.level,
        rows: rows.len(),
        table_dir: PathBuf::new(),
    };
    Ok(Comparison { rows, report })
}

/// Tuple outcomes of matched pairs, and the discordant pairs of the
/// "updated correctly" indicator (score 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Outcomes {
    fixed: u64,
    regressed: u64,
    same: u64,
    /// Score 1 in A, not in B.
    lost: u64,
    /// Score 1 in B, not in A.
    gained: u64,
}

impl Outcomes {
    fn of(pairs: &[&Pair]) -> Self {
        let mut outcomes = Self::default();
        outcomes.add(pairs);
        outcomes
    }

    fn add(&mut self, pairs: &[&Pair]) {
        for pair in pairs {
            if pair.b > pair.a {
                self.fixed += 1;
            } else if pair.b < pair.a {
                self.regressed += 1;
            } else {
                self.same += 1;
            }
            match (pair.a == 1.0, pair.b == 1.0) {
                (true, false) => self.lost += 1,
                (false, true) => self.gained += 1,
                _ => {}
            }
        }
    }
}

/// The folder a comparison goes to by default: `RUN_B/compare-<name of A>`.
pub fn default_out(run_a: &Path, run_b: &Path) -> PathBuf {
    let name = run_a
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| "a".into());
    run_b.join(format!("compare-{name}"))
}

/// The fingerprint of a comparison: the settings and both runs' judgments.
fn fingerprint(config: &Config, run_a: &Path, run_b: &Path) -> Result<String> {
    let mut shards = Vec::new();
    for run in [run_a, run_b] {
        let store = ShardStore::open_existing(
            &run.join(JudgmentRow::NAME),
            JudgmentRow::NAME,
            JudgmentRow::schema(),
        )?;
        shards.push(
            store
                .map(|store| store.entries().iter().map(|entry| entry.blake3.clone()).collect())
                .unwrap_or_else(Vec::new),
        );
    }
    Ok(ids::fingerprint(&("compare", CFEVAL_VERSION, config, shards)))
}

/// Writes the rows as the `comparison` table in `out` (replacing an earlier
/// comparison there).
pub fn write(comparison: &mut Comparison, fingerprint: &str, out: &Path) -> Result<()> {
    let dir = out.join(ComparisonRow::NAME);
    let mut store = ShardStore::open(
        &dir,
        ComparisonRow::NAME,
        ComparisonRow::schema(),
        StoreOptions::default(),
    )?;
    if store.unit(UNIT).is_some() || store.entries().iter().any(|entry| entry.unit == UNIT) {
        store.retire_unit(UNIT)?;
    }
    let mut writer = store.writer(Provenance {
        run: comparison.report.run_b.clone(),
        unit: UNIT.into(),
        fingerprint: fingerprint.to_string(),
        catalog_hash: Some(comparison.report.catalog_hash.clone()),
    });
    writer.write_rows(&comparison.rows)?;
    let shards = writer.finish()?;
    store.mark_complete(UNIT, fingerprint, &shards)?;
    comparison.report.table_dir = dir;
    Ok(())
}

/// Compares run B with run A and writes the `comparison` table into `out`.
pub fn run(config: &Config, run_a: &Path, run_b: &Path, out: &Path) -> Result<Comparison> {
    let mut comparison = compute(config, run_a, run_b)?;
    let fingerprint = fingerprint(config, run_a, run_b)?;
    write(&mut comparison, &fingerprint, out)?;
    Ok(comparison)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdicts(catalog: &str, judge: &str) -> RunVerdicts {
        RunVerdicts {
            run: "r".into(),
            catalogs: BTreeSet::from([catalog.to_string()]),
            judges: BTreeSet::from([judge.to_string()]),
            verdicts: BTreeMap::new(),
        }
    }

    #[test]
    fn runs_of_different_catalogs_or_judges_are_refused_with_the_reason() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let same = check_judgments(&a, &b, &verdicts("c1", "rule"), &verdicts("c1", "rule"), "rule");
        assert!(same.is_ok());
        let error = check_judgments(&a, &b, &verdicts("c1", "rule"), &verdicts("c2", "rule"), "rule")
            .expect_err("refused")
            .to_string();
        assert!(error.contains("different catalogs (A: c1, B: c2)"), "{error}");
        let mut mixed = verdicts("c1", "rule");
        mixed.catalogs.insert("c3".into());
        let error = check_judgments(&a, &b, &mixed, &verdicts("c1", "rule"), "rule")
            .expect_err("refused")
            .to_string();
        assert!(error.contains("several catalogs"), "{error}");
        let error = check_judgments(&a, &b, &verdicts("c1", "rule"), &verdicts("c1", "x/y"), "rule")
            .expect_err("refused")
            .to_string();
        assert!(error.contains("judge `rule` has no judgments"), "{error}");
    }

    #[test]
    fn a_subject_in_neither_run_is_refused() {
        let mut a = verdicts("c1", "rule");
        a.add(
            vec![matching::tests::judged("s", "c1", "A1", 0, Some(1.0))],
            "rule",
        );
        let b = verdicts("c1", "rule");
        assert!(check_subjects(&["s".into()], &a, &b).is_ok());
        let error = check_subjects(&["t".into()], &a, &b)
            .expect_err("refused")
            .to_string();
        assert!(
            error.contains("subject `t` has no judgments in either run (their subjects: s)"),
            "{error}"
        );
    }

    #[test]
    fn runs_of_different_packs_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let pack =
            Pack::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/packs/general-medicine"))
                .expect("pack");
        pack.record(&b).expect("record");
        let error = check_packs(&a, &b).err().expect("refused").to_string();
        assert!(
            error.contains("run A was made with `oncology` (")
                && error.contains("run B with `general-medicine`"),
            "{error}"
        );
    }
}
